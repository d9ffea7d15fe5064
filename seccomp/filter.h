/* seccomp/filter.h — the syscall deny list: compiled in the parent, loaded in the child.
 *
 * Owns: the seccomp policy (the rule table in filter_plan.c), its compilation
 * to a classic BPF program, and the one syscall that installs it.
 *
 * Ordering rules:
 *   - filter_compile() runs in the supervisor *before* clone(): libseccomp
 *     allocates and may consult the kernel, none of which the child should do
 *     (and none of which the filter would need to allow).
 *   - filter_load() runs in the child as the *last* step before execve():
 *     every setup syscall (mount, unshare, setns, socket(AF_NETLINK), ...) has
 *     already happened, so the deny list need not leave any of them open.
 *   - filter_load() needs PR_SET_NO_NEW_PRIVS already set: without it an
 *     unprivileged seccomp() fails with EACCES, and in a user namespace where
 *     we hold CAP_SYS_ADMIN it would *succeed* without NNP, hiding an ordering
 *     bug. filter_load() therefore checks NNP itself and fails closed.
 *
 * Policy shape: default allow (a deny list). Only the native architecture is
 * in the filter; syscalls of any other ABI (i386 via int 0x80, x32 via
 * __X32_SYSCALL_BIT) kill the process. Syscall numbers newer than the policy
 * was reviewed against return ENOSYS. See docs/seccomp.md.
 */
#pragma once

#include <stdbool.h>
#include <linux/filter.h>

#include "util/error.h"
#include "util/ledger.h"

struct filter_spec {
        bool allow_inet;        /* --network loopback: AF_INET/AF_INET6 sockets allowed */
        bool reduced;           /* --isolation reduced: no namespaces, so also no socket() at all,
                                   no leaving the process group, no host IPC objects */
        bool rlimit_memory;     /* memory held by RLIMIT_AS alone (the rlimit backend): no memory
                                   that outlives every mapping (memfd, System V shm) */
        char *const *extra_deny;        /* profile's seccomp_deny: more syscalls, each EPERM */
        size_t n_extra_deny;
};

struct filter_prog {
        struct sock_filter *insns;      /* malloc'd; owned by the struct */
        unsigned short len;             /* instructions, <= BPF_MAXINSNS */
};

/* In the parent, before clone. Uses libseccomp; an unknown syscall name in the
 * rule table is an error (never skipped). On success *ret owns a program that
 * filter_prog_free() releases. */
int filter_compile(const struct filter_spec *spec, struct filter_prog *ret, struct nsb_error *e);

/* In the child: one seccomp(SECCOMP_SET_MODE_FILTER) syscall, the last step
 * before execve. Requires no_new_privs. Sets PROT_SECCOMP "seccomp" only after
 * the kernel accepted the filter. */
int filter_load(const struct filter_prog *prog, struct nsb_ledger *ledger, struct nsb_error *e);

/* Accepts a zeroed or already-freed struct. */
void filter_prog_free(struct filter_prog *p);
