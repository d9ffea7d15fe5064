/* supervisor/child.h — what runs inside the sandbox before the program.
 *
 * Owns: the init's and the program's ordered steps, as tables. The cloned
 * child (strict: PID 1 of the new pid namespace) runs its mode's init steps:
 * in strict isolation it waits for the supervisor to write its id maps,
 * builds the file tree, forks the program, reaps everything, reports the
 * program's wait status and exits — and the kernel then kills whatever is
 * left in the namespace. The program process applies its own protections in
 * the order of child_program_steps[] and execs.
 *
 * Invariants: every failure is sent whole over the socket (wire.h) and ends
 * the process with _exit; each table's order is the order of its comments'
 * "before/after" reasons, which tests/unit/test_supervisor.c checks.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "config/config.h"
#include "mount/mnt.h"
#include "ns/ucount.h"
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
        /* The program's steps: NULL = child_program_steps (a cold program);
         * the zygote's are fewer (warm/warm-start.md, docs/security.md). */
        const struct child_step *program_steps;
        unsigned n_program_steps;
        bool warm;                     /* a warm job: its program is a fork of the zygote that
                                          returns into Python instead of execve */
        bool warm_job;                 /* set in that fork: the steps are done, return */
        /* This sandbox's share of the per-user budgets (ns/ucount.h): the
         * program's rlimits, and its user namespace's max_* the init writes;
         * the zygote's keeps the caller's (it creates every job's namespace). */
        struct ucount_share ucounts;
        int ucount_dirfd;              /* the init's private /proc/sys/user while it writes them */
};

/* RLIMIT_CPU, in whole seconds, for the configured CPU time (rounded up). */
unsigned long child_cpu_rlimit_s(const struct nsb_config *cfg);

/* One step of the init or of the program: @stage is the error's stage when
 * the step's own error names none. */
struct child_step {
        int stage;                     /* enum nsb_stage */
        int (*fn)(struct child_ctx *c, struct nsb_error *e);
        const char *name;              /* the function's name: for tests and traces */
};
#define CHILD_STEP(stage, fn) { (stage), (fn), #fn }

/* The ordered steps. Strict isolation's init (PID 1 of the new pid
 * namespace) waits for its id maps, takes the sandbox ids, builds the file
 * tree, forks the program and reaps everything; reduced isolation's (no
 * namespaces) joins the cgroup, takes the program's identity, becomes the
 * subreaper of the program's process group and kills it whole at the end.
 * The program's own steps (program_main, after fork) apply its protections,
 * in the order the table says why. The step-order test reads these. */
extern const struct child_step child_init_steps[];
extern const unsigned child_init_n_steps;
extern const struct child_step child_reduced_init_steps[];
extern const unsigned child_reduced_init_n_steps;
extern const struct child_step child_program_steps[];
extern const unsigned child_program_n_steps;

/* Warm starts (docs/warm-start.md). The warm sandbox's init runs the cold
 * init's steps, but its program is the zygote: not PID 2 (a job's python
 * is), and with the zygote's program steps (rlimits, capabilities, NNP: no
 * Landlock, which forbids the mounts every job init makes, and no seccomp,
 * whose namespace rules forbid the clone3 that is the zygote's one job).
 * A warm job's init (PID 1 of the job's fresh namespaces, cloned by the
 * zygote) maps its own ids, makes its own mounts on a copy of the zygote's
 * tree, joins the job's cgroup and forks the job, which runs
 * child_program_steps unchanged and returns into Python with c->warm_job
 * set; the init waits, reports and exits as a cold init does. */
extern const struct child_step child_zygote_init_steps[];
extern const unsigned child_zygote_init_n_steps;
extern const struct child_step child_zygote_program_steps[];
extern const unsigned child_zygote_program_n_steps;
extern const struct child_step child_warm_job_init_steps[];
extern const unsigned child_warm_job_init_n_steps;

/* A failed init step's end: the error whole over c->sock, then _exit. */
__attribute__((noreturn)) void child_fail_exit(struct child_ctx *c, struct nsb_error *e);

/* Run @steps in order in the calling process; stop at the first failure
 * (its error in @e, <0). A list is data: any parent that set up @c the way
 * the supervisor does (a forked child of a warm, pre-built sandbox, say) can
 * run the same steps as a cold init. */
int child_run_steps(struct child_ctx *c, const struct child_step *steps, unsigned n, struct nsb_error *e);

/* An init's main: run @steps, send a failure whole over c->sock, _exit. */
__attribute__((noreturn)) void child_run_init(struct child_ctx *c, const struct child_step *steps, unsigned n);
