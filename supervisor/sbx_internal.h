/* supervisor/sbx_internal.h — one run's state, and what an isolation mode
 * supplies to it. Private to the Linux supervisor (sandbox.c, sbx_modes.c).
 *
 * Owns: struct sbx (everything one sbx_run holds) and struct sbx_mode, the
 * ops table of an isolation mode. sandbox.c runs the same sequence for every
 * run — plan, cgroup, filter, fds, clone, supervise, account, clean up — and
 * asks the mode only where strict and reduced isolation differ: what the
 * file view is, how the init is cloned and started, how it is stopped.
 *
 * Invariants:
 *   - sandbox.c never tests which mode it runs: every difference is a field
 *     or a function of struct sbx_mode;
 *   - a mode's state lives in struct sbx (filled by its plan, freed by its
 *     cleanup, which runs only once every process of the run is gone);
 *   - the init runs the mode's step table (child.h: child_run_init), so a
 *     step list is data that another parent could run too.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "cgroup/cgroup.h"
#include "landlock/landlock.h"
#include "mount/mnt.h"
#include "ns/ns.h"
#include "seccomp/filter.h"
#include "supervisor/child.h"
#include "supervisor/outcome.h"
#include "supervisor/reduced.h"
#include "supervisor/sandbox.h"
#include "supervisor/stdin_pump.h"
#include "supervisor/wire.h"

struct sbx;

struct sbx_mode {
        const char *name;
        /* Refuse, before anything is resolved, what the mode cannot give
         * (NULL: nothing to refuse). */
        int (*check)(struct sbx *s, struct nsb_error *e);
        /* The command's host path must stay clear of the paths the sandbox
         * mounts its own things at (it is mounted at the same path). */
        bool command_outside_reserved;
        /* After the profile is resolved: the program's file view, the
         * Landlock rules (s->landlock), the environment (s->envp) and, if it
         * differs from the request's, the argv (s->argv). */
        int (*plan)(struct sbx *s, struct nsb_error *e);
        /* Once the cgroup backend is known (NULL: nothing to adjust). */
        void (*cg_spec_adjust)(struct sbx *s);
        bool cg_late_ok;                /* v1 cgroups may be made while the init builds its tree */
        bool no_namespaces;             /* the seccomp filter and the program's steps stand in */
        unsigned long clone_flags;      /* namespaces; CLONE_PIDFD is always added */
        const char *clone_what;         /* for a failed clone's message */
        const struct child_step *init_steps;   /* the init's ordered steps (child.h) */
        const unsigned *n_init_steps;   /* (a count defined beside the table) */
        /* In the supervisor, once the child ends of the fds are closed:
         * record the walls in the ledger and release the init. */
        int (*after_clone)(struct sbx *s, struct nsb_error *e);
        /* Start the init some other way than clone3 (NULL: clone3 with
         * clone_flags); it must set s->pidfd and s->pid, close the child's
         * ends of the fds and call after_clone, as the clone3 path does. */
        int (*spawn)(struct sbx *s, struct child_ctx *c, struct nsb_error *e);
        bool init_not_ours;             /* the init is another process's child: watched through
                                           its pidfd, never reaped; its usage comes in WIRE_USAGE */
        bool tree_is_built;             /* the file tree exists already (a warm job's zygote built it
                                           with the cold plan): the host files need not be resolved
                                           again, only the paths the program may write (Landlock) */
        bool tree_holds_other_runs;     /* the tree's processes are other runs' too (the zygote's:
                                           every warm job of its generation, each held to its own
                                           --cpu-time by its own supervisor): a watching backend
                                           sums it but does not stop it at this run's CPU limit */
        bool cg_join_by_fd;             /* every cgroup backend's join fds go to the init over
                                           the socket after it started (v2 too: cg_spec.join_by_fd) */
        int stop_signal;                /* what kill_tree sends the init */
        bool stop_waits;                /* cleanup gives the init 2 s to act on stop_signal */
        bool explain_refusal;           /* a failure may be a host's refusal of namespaces */
        void (*cleanup)(struct sbx *s); /* NULL: nothing of its own to free */
};

const struct sbx_mode *sbx_mode_for(enum nsb_isolation isolation, enum sbx_start start);

/* The warm modes (sbx_warm.c): the zygote's sandbox, and a job from it. */
extern const struct sbx_mode sbx_zygote_mode;
extern const struct sbx_mode sbx_warm_job_mode;
/* strict isolation's plan and after-clone, which the warm modes build on */
int sbx_strict_plan(struct sbx *s, struct nsb_error *e);
struct mnt_input sbx_mount_input(const struct sbx *s);
int sbx_strict_after_clone(struct sbx *s, struct nsb_error *e);
void sbx_ledger_walls(struct sbx *s, const char *how);

struct sbx {
        const struct sbx_request *req;
        const struct nsb_config *cfg;
        const struct sbx_mode *mode;
        struct run_result *res;

        struct host_set host;           /* resolved for this run (owned) */
        struct mnt_plan mounts;
        struct ns_idmap idmap;
        char **envp;
        char *exec_path;
        char *const *argv;              /* the program's argv: the request's, or the mode's */
        struct filter_prog filter;
        struct ll_path_rule *ll_rules;  /* strict: derived from the mount plan (owned) */
        struct ll_spec landlock;

        struct reduced_plan red;        /* reduced: the private directory and its rules */
        char **red_argv;                /* reduced: argv with /program/NAME at its real place */
        bool drop_to_nobody;            /* the program runs as 65534:65534 */
        const char *workdir;            /* the program's working directory, when not /workspace */

        struct cg_env cg_env;
        struct cg_facts cg_facts;
        const struct cg_ops *cg_ops;
        enum cg_backend cg_backend;     /* the one cg_choose picked */
        struct cg_run cg_run;
        struct cg_spec cg_spec;
        bool cg_created;
        bool cg_late;                   /* v1: created after clone3, fds sent to the init */
        bool cg_born;                   /* warm v2: the zygote cloned the init into its cgroup
                                           (SPAWNED's born_in_cgroup): no join fd to send */

        int *slot_fds;
        int sock[2];
        int out[2], err[2];
        int stdin_fd;
        struct stdin_pump pump;         /* --stdin - from a terminal (stdin_pump.h) */
        int pidfd;
        pid_t pid;
        int wall_tfd, cpu_tfd;

        struct mnt_plan job_mounts;     /* warm: the job init's own mounts (mnt_plan_build_warm_job) */
        bool warm_not_taken;            /* warm: the zygote ended before it took the job: nothing of
                                           it ran, and sbx_run runs it cold */

        struct observed obs;
        struct timespec start;
        uint32_t prog_cpu_prof_ms;      /* the program's PROF clock at its end (WIRE_EXIT) */
        unsigned early_looks;           /* watching backends: looks still to take at a short period
                                           after the program's start, so a short program is seen */
};

/* v1, after clone3 and "go": make the cgroups, then hand the init the fds it
 * joins through (sandbox.c). */
int sbx_create_cgroup_late(struct sbx *s, struct nsb_error *e);
/* Make the run's cgroups now (their join fds open); a late backend's
 * (v1) made this way is no longer late: only its fds remain to be sent. */
int sbx_create_cgroup(struct sbx *s, struct nsb_error *e);
/* Hand the init the join fds of cgroups made already (a warm job's). */
int sbx_send_cgroup_fds(struct sbx *s, struct nsb_error *e);
/* A record from the init (sandbox.c): the supervision loop's handler, for
 * a mode that reads records before the loop starts. */
void sbx_handle_msg(struct sbx *s, const struct wire_msg *m, ssize_t n);
/* This sandbox's share of the per-user budgets (ns/ucount.h): the zygote's
 * keeps the caller's, every other sandbox gets the static split of the
 * caller's budget over cfg->jobs slots (1 for a single run) (sbx_modes.c). */
void sbx_ucount_share(const struct sbx *s, struct ucount_share *ret);
