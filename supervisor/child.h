/* supervisor/child.h — what runs inside the sandbox before the program.
 *
 * The cloned child is PID 1 of the new pid namespace: the init. It waits for
 * the supervisor to write its id maps, builds the file tree, forks the
 * program, reaps everything, reports the program's wait status and exits —
 * and the kernel then kills whatever is left in the namespace.
 * The program process applies its own protections, in the order of
 * program_steps[] (child.c), and execs. Every failure is sent whole over the
 * socket (wire.h) and ends the process with _exit.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "config/config.h"
#include "mount/mnt.h"
#include "util/ledger.h"

struct filter_prog;
struct ll_spec;
struct cg_run;
struct cg_spec;
struct cg_ops;

struct child_ctx {
        int sock;                      /* child end of the socketpair */
        int stdio[3];                  /* the program's stdin, stdout, stderr */
        int channel_fd;                /* becomes the program's fd 3, or -1 */
        const struct nsb_config *cfg;
        const struct mnt_plan *mounts;
        int *slot_fds;
        const char *exec_path;         /* path inside the sandbox */
        char *const *argv;
        char *const *envp;
        const struct filter_prog *filter;
        const struct ll_spec *landlock;
        const struct cg_ops *cg_ops;
        struct cg_run *cg_run;
        const struct cg_spec *cg_spec;
        bool rlimit_cpu;               /* no cgroup CPU accounting: RLIMIT_CPU per process */
        bool cg_join_late;             /* v1: the join fds arrive (WIRE_CGROUP) after the mounts,
                                          before the program is forked */
        int fail_stage;                /* test hook: force this stage to fail (0 = none) */
        bool reduced;                  /* --isolation reduced: no namespaces (reduced.h) */
        bool drop_to_nobody;           /* reduced, root caller: the program runs as 65534:65534 */
        const char *workdir;           /* reduced: the program's working directory */
        struct nsb_ledger ledger;      /* what the supervisor already enforced */
};

/* RLIMIT_CPU, in whole seconds, for the configured CPU time (rounded up). */
unsigned long child_cpu_rlimit_s(const struct nsb_config *cfg);

/* The init's main. Never returns. */
__attribute__((noreturn)) void child_init_main(struct child_ctx *c);

/* Reduced isolation: the same shape without namespaces. This child (not a
 * PID 1) joins the cgroup, takes the program's identity, becomes the
 * subreaper of the program's process group, forks the program, reports its
 * wait status, then kills and reaps the whole group. If nsbox dies first, its
 * parent-death signal makes it kill the group before it exits. Never returns. */
__attribute__((noreturn)) void child_reduced_main(struct child_ctx *c);

/* Exposed for the step-order test. */
struct child_step {
        int stage;                     /* enum nsb_stage */
        int (*fn)(struct child_ctx *c, struct nsb_error *e);
};
extern const struct child_step child_program_steps[];
extern const unsigned child_program_n_steps;
