/* platform/posix/posix.h — reduced isolation from POSIX calls alone: the
 * posix platform's sbx_run (sandbox_posix.c), its keeper and program steps
 * (keeper.c), the rlimit plan (posix_plan.c, pure) and the one step that
 * leaves POSIX (identity.c: dropping a root caller to nobody).
 *
 * A run: nsbox forks a keeper (its own session, so a terminal's Ctrl-C
 * reaches nsbox only), the keeper forks the program (its own session and
 * process group; rlimits, a private working directory, a scrubbed
 * environment, every other fd closed, exec without a shell). When the
 * program ends, when nsbox says stop (it closes the keeper's "life" pipe) or
 * when nsbox dies (the same pipe's EOF), the keeper kills the program's whole
 * group while the program's unreaped zombie still holds the group's id, then
 * reaps it and reports its status. What only a kernel sandbox can give
 * (namespaces, seccomp, Landlock, cgroups, no_new_privs) is never claimed:
 * it stays "unavailable" in the result's protections.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "doctor/doctor.h"
#include "util/error.h"
#include "util/ledger.h"

/* ---- the rlimit plan (pure) --------------------------------------------- */

#define PX_MAX_RLIMITS 8
/* Open files: lowered to this (never raised), as the kernel sandbox's
 * defaults would leave a learner's program; enough for any Python. */
#define PX_NOFILE_MAX 1024

struct px_rlimit {
        int resource;           /* RLIMIT_* */
        const char *name;       /* "RLIMIT_CPU", for errors */
        uint64_t value;         /* the soft limit */
        uint64_t hard;          /* the hard limit: the same, except for CPU time */
        int prot;               /* enum nsb_prot it enforces, or -1 (recorded nowhere) */
        bool lower_only;        /* never above the current hard limit (open files) */
};

struct px_rlimit_plan {
        struct px_rlimit v[PX_MAX_RLIMITS];
        size_t n;
};

/* @user_tasks: the tasks the host counts against the program's uid besides
 * the program's own (RLIMIT_NPROC is per user, not per run: the user's
 * other processes, and the keeper when it runs as the same user), or -1
 * when they cannot be counted: then no process limit is set and "pids"
 * stays unavailable.
 * CPU, file size, core 0, open files, memory (RLIMIT_AS, per process) and
 * processes, each where this platform defines the resource. */
void px_rlimits_plan(const struct nsb_config *cfg, long user_tasks, struct px_rlimit_plan *ret);

/* What the posix platform refuses, with the reason: strict isolation (named
 * with the system @sysname, what it lacks and the opt-in), what reduced
 * isolation refuses everywhere (reduced_check), and what cannot be enforced
 * without Landlock or seccomp (--ro-bind, packages, seccomp_deny). */
int px_check(const struct nsb_config *cfg, const char *runner_dir, const char *sysname, struct nsb_error *e);

/* The CPU seconds RLIMIT_CPU gets: the limit, rounded up. */
uint64_t px_cpu_rlimit_s(const struct nsb_config *cfg);

/* ---- the record the program and the keeper send nsbox ------------------- */

#define PX_WIRE_VERSION 1

enum px_kind { PX_READY = 1, PX_ERROR, PX_EXIT };

/* Written whole by one writer at a time (the program before its exec, then
 * the keeper after the program ended), read whole by nsbox. */
struct px_record {
        uint32_t version;
        uint32_t kind;                  /* enum px_kind */
        int32_t pid;                    /* the program (= its process group) */
        int32_t wait_status;            /* PX_EXIT */
        uint64_t cpu_us;                /* PX_EXIT: the program and the children it reaped */
        uint64_t peak_rss_bytes;        /* PX_EXIT: their largest resident set */
        struct nsb_error error;         /* PX_ERROR */
        struct nsb_ledger ledger;       /* PX_READY: what the program's steps enforced */
};

/* ---- the keeper and the program (keeper.c) ------------------------------ */

struct px_child {
        int status_fd;                  /* write end of the record pipe (close-on-exec) */
        int life_fd;                    /* read end: EOF = stop (nsbox closed it, or died) */
        int stdio[3];
        int channel_fd;                 /* becomes fd 3, or -1 */
        const char *exec_path;
        char *const *argv;
        char *const *envp;
        const char *workdir;
        bool drop_to_nobody;            /* the caller is root */
        const struct px_rlimit_plan *rlimits;
        int fail_stage;                 /* test hook: enum nsb_stage forced to fail, 0 = none */
};

__attribute__((noreturn)) void px_keeper_main(const struct px_child *c);

/* ---- nsbox doctor (doctor_posix_plan.c, pure; doctor_posix.c) ----------- */

struct px_doc_facts {
        char sysname[65], release[65];  /* uname */
        bool nproc_defined;             /* the platform has RLIMIT_NPROC */
        bool tasks_countable;           /* the user's tasks can be counted (a Linux /proc) */
        long user_tasks;                /* of the program's user: */
        bool as_nobody;                 /* nobody's (a root caller) */
        char interpreter[DOC_PATH_MAX];
        bool interpreter_ok;            /* executable */
        char interpreter_error[128];
};

/* Strict: "platform" unavailable (what it lacks, the opt-in), ready false.
 * Reduced: "platform" degraded, ready unless the interpreter is missing. */
void px_doctor_plan(const struct px_doc_facts *f, enum nsb_isolation iso, struct doc_report *ret);

/* identity.c: setgroups to nobody's one group, then gid, then uid. */
int px_become_nobody(struct nsb_error *e);
