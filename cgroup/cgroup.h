/* cgroup/cgroup.h — memory and pids limits, CPU/peak/OOM accounting, and killing
 * the whole tree of one run, through cgroup v2, cgroup v1 or an rlimit fallback.
 *
 * Owns: the run cgroups `nsbox-<supervisor pid>-<serial>` (and, on v2, the
 * supervisor's own leaf `nsbox-sup-<pid>`; a warm generation's run cgroup
 * made a parent, with its own tasks in `nsbox-leaf` and its jobs' run
 * cgroups beside: make_parent, cg_spec.in_run), always created beneath the cgroup
 * this process is in (per controller on v1) — or in --cgroup-parent DIR, or in
 * the transient scope nsbox asked systemd for (`nsbox-scope-<pid>-<nonce>.scope`,
 * removed by systemd when it empties) — and always removed again.
 *
 * Ordering (the caller's side):
 *   1. cg_obtain() (cg_detect(), which changes nothing, + the obtain plan: our
 *      own cgroup, --cgroup-parent, or a delegated systemd scope asked for once
 *      per process), which also picks the backend (cg_choose()); ops =
 *      cg_ops_for(backend);
 *   2. cg_reap_stale() — removes empty run cgroups whose supervisor died;
 *   3. ops->create() in the supervisor, *before* clone: makes the cgroup(s) and
 *      writes every limit, so the child never runs unlimited;
 *   4. clone: v2 passes run.clone_fd to clone3(CLONE_INTO_CGROUP), so the child
 *      is born inside the cgroup; v1/rlimit clone normally;
 *   5. ops->child_join() in the child, first thing (v1 joins via the fds the
 *      parent opened, rlimit sets RLIMIT_AS/RLIMIT_NPROC); it closes every
 *      cgroup fd the child inherited;
 *   6. ops->read_usage() from the supervisor while it polls (cheap: pread on
 *      fds opened by create);
 *   7. ops->kill_all() then ops->destroy() (rmdir, retried briefly on EBUSY).
 * A run handle is only ever used by the process that created it (plus the
 * child's copy for child_join). Nothing here logs; there is no global state.
 * See docs/cgroups.md for delegation, the v2 no-internal-processes rule and
 * what the rlimit fallback does and does not enforce.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cgroup/proc_tree.h"
#include "util/error.h"

enum cg_backend { CG_BACKEND_NONE = 0, CG_BACKEND_V2, CG_BACKEND_V1, CG_BACKEND_RLIMIT };

/* Injected roots. Production: proc_fd = open("/proc"), sys_cgroup_fd =
 * open("/sys/fs/cgroup"), the other two NULL. */
struct cg_env {
        int proc_fd;                    /* /proc: self/cgroup, self/mountinfo, <pid> liveness */
        int sys_cgroup_fd;              /* /sys/fs/cgroup, or the root of a fake tree */
        const char *sys_cgroup_path;    /* the path sys_cgroup_fd stands for in mountinfo;
                                           NULL = "/sys/fs/cgroup". Mounts elsewhere are ignored */
        const char *const *fake_files;  /* tests only, NULL otherwise: sys_cgroup_fd is a plain
                                           directory, so after each mkdir these (empty) files are
                                           created, as cgroupfs would, and removed before rmdir */
        const char *parent_path;        /* --cgroup-parent: absolute path of a delegated v2
                                           cgroup (under sys_cgroup_path) to make run cgroups
                                           in, instead of our own; NULL = our own */
};

#define CG_PATH_MAX 1024
#define CG_REASON_MAX 400

/* Controller bits in cgroup.controllers / cgroup.subtree_control. */
#define CG_CTRL_MEMORY 0x1u
#define CG_CTRL_PIDS 0x2u
#define CG_CTRL_CPU 0x4u

enum cg_v1_ctrl { CG_V1_MEMORY = 0, CG_V1_PIDS, CG_V1_CPUACCT, CG_V1__MAX };

struct cg_v1_facts {
        bool mounted;                   /* a v1 hierarchy with this controller, under sys_cgroup_path */
        int hierarchy_id;               /* /proc/self/cgroup id; equal ids = co-mounted (cpu,cpuacct) */
        bool found;                     /* own cgroup directory exists */
        bool writable;                  /* faccessat(W_OK|X_OK, AT_EACCESS) on it */
        char own_rel[CG_PATH_MAX];      /* own cgroup dir, relative to sys_cgroup_fd */
};

/* What cg_detect found. Plain data: tests fabricate it for cg_choose. */
struct cg_facts {
        bool v2_mounted;                /* a cgroup2 mount under sys_cgroup_path */
        bool v2_member;                 /* /proc/self/cgroup has a "0::" line */
        char v2_own_path[CG_PATH_MAX];  /* the "0::" path, e.g. /user.slice/.../app.scope */
        char v2_base_rel[CG_PATH_MAX];  /* where run cgroups go, relative to sys_cgroup_fd: own
                                           cgroup, or its parent when we sit in nsbox-sup-<pid> */
        bool v2_base_found;
        bool v2_base_is_root;           /* no cgroup.type: the real root, exempt from the
                                           no-internal-processes rule */
        bool v2_in_sup_leaf;            /* own cgroup is an nsbox-sup-<pid> leaf */
        unsigned v2_controllers;        /* CG_CTRL_* in base/cgroup.controllers */
        unsigned v2_subtree;            /* CG_CTRL_* in base/cgroup.subtree_control */
        unsigned v2_other_procs;        /* processes in base/cgroup.procs other than us */
        bool v2_writable;               /* base dir, cgroup.procs, cgroup.subtree_control */
        bool v2_root_has_controllers;   /* memory and pids in the v2 root's cgroup.controllers:
                                           a cgroup elsewhere on this hierarchy (a systemd
                                           scope) could have them; false on hybrid hosts */
        /* --cgroup-parent only (parent_given): */
        bool parent_given;
        const char *parent_error;       /* static: the path itself is unusable (not absolute,
                                           "..", not on the cgroup2 hierarchy), or NULL */
        bool v2_self_outside;           /* we are neither in the parent nor in its sup leaf:
                                           runs are cloned into it from outside */
        bool v2_ancestor_writable;      /* outside: cgroup.procs of the common ancestor of our
                                           cgroup and the parent (what CLONE_INTO_CGROUP asks
                                           of a non-root caller) */
        struct cg_v1_facts v1[CG_V1__MAX];
        char reason[CG_REASON_MAX];     /* "cgroup v2: ...; cgroup v1: ..." for doctor */
};

/* Reads /proc/self/cgroup, /proc/self/mountinfo and the own cgroup's control
 * files; changes nothing. Missing or unusable hierarchies are facts, not
 * errors: fails (-errno) only when /proc cannot be read. */
int cg_detect(const struct cg_env *env, struct cg_facts *ret, struct nsb_error *e);

/* Pure: v2 with memory+pids usable > v1 with memory+pids writable > rlimit.
 * *ret_reason (optional) explains the choice; it points into @f or to a
 * static string. */
enum cg_backend cg_choose(const struct cg_facts *f, const char **ret_reason);

/* ---- how the cgroup was obtained (once per process) ----
 *
 * cg_obtain() = cg_detect() + cg_obtain_plan() (pure) + what the plan asks:
 * nothing (our own cgroup or --cgroup-parent is usable), a transient systemd
 * scope with Delegate=yes holding this process (cg_systemd.c: D-Bus
 * StartTransientUnit, wait for its job), then cg_detect() again; or the
 * rlimit fallback with the reason. Idempotent: once in our scope (or its
 * nsbox-sup-<pid> leaf) a later call finds it usable and asks nothing, so a
 * batch or any long-lived process asks systemd at most once. */
enum cg_origin {
        CG_ORIGIN_NONE = 0,             /* no usable cgroup: rlimit */
        CG_ORIGIN_DELEGATED,            /* our own cgroup was usable as it was */
        CG_ORIGIN_SCOPE,                /* a systemd scope nsbox asked for */
        CG_ORIGIN_PARENT,               /* --cgroup-parent */
};
const char *cg_origin_name(enum cg_origin o);  /* "delegated", "systemd-scope", "cgroup-parent", "none" */

/* What the plan needs besides the cgroup facts. Plain data (tests fabricate it). */
struct cg_manager_facts {
        bool root;                      /* euid 0: ask the system manager, else the user's */
        const char *session_bus;        /* $DBUS_SESSION_BUS_ADDRESS, or NULL */
        const char *runtime_dir;        /* $XDG_RUNTIME_DIR, or NULL */
        const char *system_bus;         /* $DBUS_SYSTEM_BUS_ADDRESS, or NULL */
        bool runtime_bus_exists;        /* $XDG_RUNTIME_DIR/bus is a socket */
        bool system_bus_exists;         /* /run/dbus/system_bus_socket is a socket */
        bool have_sd_bus;               /* built with libsystemd (sd-bus) */
        pid_t self;
};

enum cg_obtain_action {
        CG_OBTAIN_USE = 0,              /* the facts' backend, as they are */
        CG_OBTAIN_ASK_SYSTEMD,          /* ask for a scope, then detect again */
        CG_OBTAIN_REFUSE,               /* --cgroup-parent unusable: an error, not a fallback */
};

#define CG_BUS_MAX (CG_PATH_MAX + 32)
struct cg_obtain_plan {
        enum cg_obtain_action action;
        enum cg_origin origin;          /* USE: where the cgroup comes from */
        bool user_manager;              /* ASK: the user's manager, else the system's */
        char bus_address[CG_BUS_MAX];   /* ASK: a D-Bus address (sd_bus_set_address) */
        char reason[CG_REASON_MAX];     /* why this way; REFUSE: why not (no errno text) */
        char fix[CG_REASON_MAX];        /* origin none (or a scope that may fail): what would help here */
};

/* Pure. */
void cg_obtain_plan(const struct cg_facts *f, const struct cg_manager_facts *m, struct cg_obtain_plan *ret);

struct cg_obtained {
        enum cg_backend backend;
        enum cg_origin origin;
        char scope[128];                /* the scope's unit name ("" = none) */
        char detail[CG_REASON_MAX + 256]; /* how it was obtained, or why not (doctor's detail) */
        char fix[CG_REASON_MAX];        /* origin none: what would help on this host */
        bool asked_systemd;             /* this call asked (false: nothing, or already in it) */
};

/* Detect, plan, ask systemd when the plan says so, detect again. Fills
 * @ret_facts (the final ones) and @ret. Fails (-errno, stage cgroup) when /proc
 * cannot be read or --cgroup-parent is refused; a failed request to systemd
 * is no error: the rlimit fallback, with the reason in ret->detail. With
 * @prepare, a v2 cgroup is made ready at once (cg_v2_prepare: our leaf, memory
 * and pids enabled), so processes forked afterwards (batch workers) find it
 * ready too; doctor passes false and changes nothing it did not create. */
int cg_obtain(const struct cg_env *env, bool prepare, struct cg_facts *ret_facts, struct cg_obtained *ret,
              struct nsb_error *e);

/* A limit of 0 or UINT64_MAX means "no limit". */
struct cg_spec {
        uint64_t memory_bytes;          /* memory.max / limit_in_bytes (no swap) / RLIMIT_AS */
        uint64_t pids_max;              /* tasks (threads count) / RLIMIT_NPROC */
        unsigned serial;                /* caller's counter: names nsbox-<pid>-<serial> */
        bool join_by_fd;                /* v2: a warm job's: its init is cloned by the zygote, not
                                           by us; it joins by writing "0" to a cgroup.procs fd the
                                           parent opened (join_fds[0]) unless the zygote cloned it
                                           into the cgroup (in_run below) */
        const char *in_run;             /* v2, with join_by_fd: the name of a run cgroup in the base
                                           that make_parent made a parent (a warm generation's,
                                           "nsbox-<keeper pid>-<serial>"): the run cgroup goes inside
                                           it when it is ready (memory and pids in its
                                           subtree_control), and keeps its clone_fd too, for the
                                           zygote's CLONE_INTO_CGROUP; else in the base, as before.
                                           NULL: the base */
        uint64_t as_inherited;          /* rlimit: address space the joining process maps that
                                           is not the job's and that a cold job's would not (a
                                           warm job's init runs on without an execve: what the
                                           zygote's preloads mapped): RLIMIT_AS is raised by it */
        uid_t procs_owner;              /* in_run: when not (uid_t) -1, the run's cgroup.procs is
                                           chowned to it (a root caller's sandbox uid: the zygote
                                           that clones into it is not root) */
        gid_t procs_group;
};

/* ---- the CPUs a program sees (pure; the mount plan writes them) ----
 * multiprocessing.Pool() and ProcessPoolExecutor() with no argument start
 * os.cpu_count() workers: on a host with more CPUs than the pids limit can
 * run workers for, the default pool failed ("can't start new thread",
 * BlockingIOError). os.cpu_count() is glibc's get_nprocs(), which reads
 * /sys/devices/system/cpu/online first (then /proc/stat, then the affinity
 * mask); the sandbox's root holds that file, read-only, naming
 * cg_cpu_count() CPUs: a quarter of the program's tasks, so the pool's
 * workers, its parent's 3-4 threads and a thread or two in each worker fit,
 * never more than the host has. The affinity is left alone: narrowing it
 * pinned concurrent sandboxes onto the same CPU while others idled. So
 * os.sched_getaffinity (and Python 3.13's process_cpu_count) report every
 * CPU of the host, as bare. @host_cpus is probed by the caller
 * (sysconf(_SC_NPROCESSORS_ONLN), bare os.cpu_count()'s answer). */
unsigned cg_cpu_count(uint64_t pids_max, unsigned host_cpus);   /* >= 1; no pids limit: host_cpus */

#define CG_RUN_DIRS 4
enum cg_usage_file {
        CG_U_MEM_EVENTS = 0,            /* v2 memory.events */
        CG_U_MEM_OOMCTL,                /* v1 memory.oom_control */
        CG_U_MEM_FAILCNT,               /* v1 memory.failcnt */
        CG_U_MEM_PEAK,                  /* v2 memory.peak, v1 memory.max_usage_in_bytes */
        CG_U_MEM_CURRENT,               /* v2 memory.current, when memory.peak is missing (<5.19) */
        CG_U_PIDS_EVENTS,               /* pids.events */
        CG_U_CPU,                       /* v2 cpu.stat, v1 cpuacct.usage */
        CG_U__MAX,
};

/* One run's cgroup(s). cg_run_init() before create; destroy() is idempotent. */
struct cg_run {
        enum cg_backend backend;
        int clone_fd;                   /* v2: O_PATH|O_DIRECTORY of the run cgroup, for
                                           clone3(CLONE_INTO_CGROUP); else -1 */
        int join_fds[CG_RUN_DIRS];      /* v1: each hierarchy's "tasks" (O_WRONLY), opened by
                                           the parent; the child writes "0" to each; else -1 */
        bool in_run;                    /* v2, set by create: made inside spec->in_run (clone_fd
                                           is kept for the zygote; join_fds[0] is the fallback) */
        uint64_t shared_at_birth;       /* rlimit, set by a warm job's supervisor before "go": the
                                           init's VmRSS when it was born, all of it pages of the
                                           zygote it shares; the looks' sums and peaks leave that
                                           much out (cg_rlimit.c), and so does the job's rusage */
        /* Private to the backend: */
        int parent_fds[CG_RUN_DIRS];    /* O_PATH: the directory each run cgroup was made in */
        int dir_fds[CG_RUN_DIRS];       /* O_PATH: each run cgroup (v1: one per hierarchy) */
        int ctrl_dir[CG_V1__MAX];       /* v1: index into dir_fds per controller, -1 = none */
        int usage_fds[CG_U__MAX];       /* opened by create, read with pread */
        uint64_t peak_seen;             /* v2 < 5.19: largest memory.current read so far */
        /* rlimit: what the tree's own counters said over the looks (proc_tree.h) */
        struct tree_cpu tree_cpu;       /* the tree's CPU time */
        uint64_t tree_pss_peak;         /* the largest memory sum two looks in a row confirmed */
        uint64_t tree_pss_last;         /* the last look's sum (what confirms the next) */
        uint64_t tree_set_last;         /* which processes the last look read (cg_rlimit.c: proc_set_id) */
        uint64_t tree_private_last;     /* the last look's sum of private pages (proc_tree.h) */
        uint64_t tree_unsettled;        /* looks that saw a process mid-exit (each gets an id of its own) */
        unsigned watch_next_ms;         /* the period the last look's cost asks for (0: the
                                           backend's watch_period_ms) */
        uint64_t tree_hwm_peak;         /* the largest VmHWM of one of the job's processes */
        uint64_t init_hwm;              /* the init's own VmHWM: what every copy made before
                                           the program's execve started from */
        struct stat self_exe;           /* nsbox's executable (proc_tree_usage) */
        bool self_exe_known;
        int tree_clock_fd;              /* a perf task-clock counter on the init, inherited by
                                           every descendant (attach), or -1 */
        char name[40];                  /* nsbox-<pid>-<serial>; "" = nothing to remove */
        bool is_parent;                 /* v2: make_parent succeeded: other runs' cgroups go
                                           beneath it, its own tasks in CG_V2_RUN_LEAF */
        const char *const *fake_files;  /* copied from cg_env */
};

struct cg_usage {
        uint64_t cpu_usec;
        bool cpu_known;
        uint64_t peak_memory_bytes;     /* without memory.peak (v2 < 5.19): the largest
                                           memory.current seen by read_usage so far */
        bool peak_known;
        bool oom_killed;                /* the kernel OOM-killed a task of the run */
        bool memory_limit_hit;          /* usage reached the limit at least once */
        bool pids_limit_hit;            /* a fork/clone was refused by pids.max */
        /* Measured from the process tree by its looks (rlimit), which the
         * supervisor takes when they exceed the init's rusage: a killed
         * tree's children never reach it, nor do those reaped unwaited.
         * 0 = nothing measured. */
        uint64_t tree_cpu_usec;
        uint64_t tree_peak_bytes;       /* the job's own: its processes' memory sum or
                                           largest VmHWM, never the init's */
        uint64_t init_hwm_bytes;        /* the init's own VmHWM (0: never read) */
};

/* What a watching backend holds the tree to (0 = no limit), and what the
 * watch reports back. */
struct cg_watch_limits {
        uint64_t memory_bytes;
        uint64_t cpu_usec;
};
#define CG_WATCH_MEMORY 0x1u            /* the tree's memory sum is over the limit */
#define CG_WATCH_CPU 0x2u               /* the tree's CPU time reached the limit */

struct cg_ops {
        const char *label;              /* ledger mechanism: "cgroup2", "cgroup1", "rlimit" */
        /* parent, before clone (v1: right after it, the child joins late): make the
         * run's cgroup(s) and write limits */
        int (*create)(const struct cg_env *env, const struct cg_facts *f, const struct cg_spec *spec,
                      struct cg_run *ret, struct nsb_error *e);
        /* the cloned child, before it forks the program; closes every cgroup fd it holds */
        int (*child_join)(struct cg_run *run, const struct cg_spec *spec, struct nsb_error *e);
        /* parent, any time; cheap. Not const: on kernels without memory.peak
         * the run remembers the largest memory.current seen. */
        int (*read_usage)(struct cg_run *run, struct cg_usage *ret, struct nsb_error *e);
        /* v2: cgroup.kill; v1: pids.max=0 then SIGKILL cgroup.procs until empty; rlimit: no-op */
        int (*kill_all)(struct cg_run *run, struct nsb_error *e);
        /* rmdir (retrying briefly on EBUSY), close fds; idempotent */
        void (*destroy)(struct cg_run *run);
        /* Limits held per process (rlimits), not by a group: the memory limit
         * is RLIMIT_AS (seccomp must refuse what would lift it) and CPU is
         * RLIMIT_CPU, each process's backstop; the group's limits are the
         * supervisor's watch. */
        bool per_process;
        /* Optional, parent, every watch_period_ms while the run lives, for a
         * backend that cannot enforce a group limit itself: CG_WATCH_* of
         * each limit the tree under @init passed (stop it), else 0. */
        unsigned (*watch)(struct cg_run *run, int proc_fd, pid_t init, const struct cg_watch_limits *lim);
        unsigned watch_period_ms;
        /* Optional, parent, just before nsbox kills the run: read what must
         * be read while the tree still exists (read_usage reports it). */
        void (*before_kill)(struct cg_run *run, int proc_fd, pid_t init);
        /* Optional, parent, right after clone, before the init has forked
         * anything (it waits for "go") and while it is still dumpable: open
         * the tree's own clock, where the kernel lets us (rlimit: a perf
         * task-clock counter, inherited by every descendant, which adds each
         * one's time at its exit, waited for or not). Best effort. */
        void (*attach)(struct cg_run *run, pid_t init);
        /* Optional (v2), parent, right after clone3 put @init in the run
         * cgroup and before the init forks anything (it waits for "go"):
         * make the run cgroup a parent for other runs' cgroups (a warm
         * generation: the zygote clones each job's init straight into the
         * job's cgroup, which the kernel allows only inside the caller's
         * cgroup namespace, rooted here). Moves @init into the leaf
         * CG_V2_RUN_LEAF (once; v2's no-internal-processes rule), enables
         * memory and pids for the children, chowns cgroup.procs to
         * @procs_owner/@procs_group unless (uid_t) -1, and reads the run's
         * own usage from the leaf from then on. 0, or -errno with @e: the
         * run goes on as before (a job then joins by fd). */
        int (*make_parent)(struct cg_run *run, pid_t init, uid_t procs_owner, gid_t procs_group,
                           struct nsb_error *e);
};

/* The leaf a parent run's own tasks live in (cg_ops.make_parent). */
#define CG_V2_RUN_LEAF "nsbox-leaf"

/* NULL for CG_BACKEND_NONE or an unknown value. */
const struct cg_ops *cg_ops_for(enum cg_backend b);

/* "nsbox-<pid>-<serial>": the name of the run cgroup the process @pid makes
 * for its run @serial (a warm pool names its generation's this way:
 * cg_spec.in_run). 0 or -ENAMETOOLONG. */
int cg_format_run_name(pid_t pid, unsigned serial, char *buf, size_t size);

/* Every fd -1, nothing to remove. */
void cg_run_init(struct cg_run *run);

/* Remove every nsbox-<pid>-* / nsbox-sup-<pid> cgroup beneath our own (the
 * usable v2 base, each writable v1 hierarchy) whose <pid> has no /proc entry.
 * Never kills: one rmdir each, which the kernel refuses while a task is still
 * inside. Returns how many were removed, or -errno. */
int cg_reap_stale(const struct cg_env *env, const struct cg_facts *f);
