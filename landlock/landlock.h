/* landlock/landlock.h — filesystem, TCP and scope restrictions with Landlock.
 *
 * Owns: one Landlock domain for the sandbox init and everything it starts.
 * Every filesystem right the running kernel's ABI knows is handled (denied
 * unless a rule grants it); TCP bind/connect are handled from ABI 4 unless
 * allow_tcp; abstract-unix-socket and signal scoping from ABI 6.
 *
 * Ordering rules:
 *   - runs in the child after pivot_root (rule paths are as seen in the new
 *     root) and after no_new_privs: landlock_restrict_self() requires NNP (or
 *     CAP_SYS_ADMIN, which we will have dropped), for the same reason seccomp
 *     does;
 *   - before the seccomp filter, which need not allow the landlock syscalls;
 *   - a domain only ever narrows: nothing the sandboxed program does can
 *     undo it, and its children inherit it.
 *
 * If Landlock is unavailable, ll_apply() returns an error: the caller
 * decides (strict isolation fails closed). PROT_LANDLOCK is set to
 * "landlock" only after landlock_restrict_self() succeeded.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"
#include "util/ledger.h"

struct ll_path_rule {
        const char *path;       /* absolute, as seen after pivot_root */
        bool writable;          /* false: read, list and execute only */
};

struct ll_spec {
        const struct ll_path_rule *rules;
        size_t n_rules;
        bool allow_tcp;         /* --network loopback: TCP not handled */
};

/* landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION):
 * the ABI version (>= 1), or -errno (-ENOSYS: not built, -EOPNOTSUPP: off). */
int ll_abi_version(void);

int ll_apply(const struct ll_spec *spec, struct nsb_ledger *ledger, struct nsb_error *e);
