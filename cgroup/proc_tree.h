/* cgroup/proc_tree.h — CPU time and peak memory of a live process tree,
 * read from /proc.
 *
 * For the rlimit backend, which has no cgroup to ask:
 *   - CPU time is a limit of the whole tree, and RLIMIT_CPU bounds each
 *     process alone: the supervisor looks at the tree every few ms and sums
 *     it (tree_cpu_look), counting each process once whether it is alive,
 *     waited for by a parent in the tree, or reaped without anyone waiting
 *     (SIGCHLD ignored: its time reaches no parent's cutime);
 *   - when nsbox kills a sandbox, the kernel tears down its pid namespace
 *     with SIGCHLD ignored, so the program and its descendants are reaped
 *     without their times reaching the init's rusage (zap_pid_ns_processes):
 *     one last look just before the kill sees them;
 *   - RLIMIT_AS bounds each process alone: the memory the whole tree holds
 *     (its proportional share of anonymous and shared memory, from
 *     smaps_rollup) is what the supervisor polls against the limit;
 *   - the peak is the job's own: the init and a process still running
 *     nsbox's own executable (the program between fork and execve) are
 *     copies of the supervisor's memory, and are left out.
 * Parsers and the CPU sum are pure (proc_tree_parse.c, proc_tree_cpu.c);
 * the walk reads /proc (proc_tree.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One process as one look saw it, for the CPU sum. */
struct tree_cpu_proc {
        pid_t pid;
        uint64_t start;                 /* starttime (stat field 22): with pid, which process */
        uint64_t own;                   /* utime+stime, in clock ticks: its threads, dead ones too */
        uint64_t kids;                  /* cutime+cstime: the children it waited for, and theirs */
};

struct proc_tree_usage {
        uint64_t cpu_ticks;             /* utime+stime+cutime+cstime of each process, in clock ticks */
        uint64_t peak_rss_bytes;        /* the largest VmHWM of one of the job's processes (not the
                                           root, not one running nsbox's executable) */
        uint64_t root_hwm_bytes;        /* the root's own VmHWM */
        uint64_t pss_bytes;             /* sum of Pss_Anon + Pss_Shmem of the job's processes (with PROC_TREE_PSS) */
        uint64_t private_bytes;         /* sum of their Private_Dirty: a lower bound of what the tree holds
                                           that sharers exiting during the look do not inflate (a process
                                           whose smaps_rollup is refused adds nothing) */
        unsigned n_procs;               /* processes read */
        unsigned n_estimated;           /* of them, whose smaps_rollup was refused (not dumpable):
                                           their statm resident size is in pss_bytes instead */
        unsigned n_exiting;             /* of them, in the middle of their exit (PF_EXITING, not
                                           yet a zombie): their memory is being unmapped, so the
                                           others' shares of it grow while the look reads them */
        bool incomplete;                /* memory ran out while the tree was listed: some of it was
                                           not read (the caller treats the look as over its limits) */
        struct tree_cpu_proc *procs;    /* with PROC_TREE_PROCS: each process read (n_procs of
                                           them), malloc'd: the caller frees it */
};

/* A file read whole (proc_tree.c), grown as needed. */
struct proc_buf {
        char *data;
        size_t cap;
};

/* /proc/<pid>/stat, the fields the sum needs. The command name (field 2)
 * may hold spaces and ')': parsing starts after its last ')'. */
struct proc_stat {
        char state;                     /* field 3: R, S, Z, ... */
        pid_t ppid;                     /* field 4 */
        uint64_t flags;                 /* field 9: the kernel's PF_* flags (PROC_PF_EXITING) */
        uint64_t utime, stime, cutime, cstime;  /* fields 14-17, clock ticks */
        uint64_t start;                 /* field 22 */
        uint64_t arg_start;             /* field 48: 0 while an execve is under way (or when
                                           hidden from us); UINT64_MAX when absent */
};
#define PROC_PF_EXITING 0x4u           /* include/linux/sched.h: getting shut down */
int proc_parse_stat(const char *buf, size_t len, struct proc_stat *ret);   /* 0 or -EINVAL */

/* utime+stime+cutime+cstime (fields 14-17), in clock ticks. 0 or -EINVAL. */
int proc_parse_stat_ticks(const char *buf, size_t len, uint64_t *ret);

/* /proc/<pid>/status: the value of "@key:" in kB ("VmHWM:\t 7940 kB").
 * 0, -ENOENT (no such line: a kernel thread, a zombie), -EINVAL. */
int proc_parse_status_kb(const char *buf, size_t len, const char *key, uint64_t *ret);

/* The pids listed in /proc/<pid>/task/<tid>/children ("12 13 "), up to
 * @cap; returns how many were stored, or -EINVAL. */
int proc_parse_children(const char *buf, size_t len, pid_t *pids, size_t cap);

/* Sum over @root and its descendants (through every thread's children
 * file, read whole: no bound on the tree's size but memory, and a look that
 * could not hold it all says so, ret->incomplete). Processes that vanish
 * while read are skipped; the init's memory is not the job's; a process
 * whose smaps_rollup we may not read (not dumpable) is counted at its statm
 * resident size. @proc_fd: an open /proc. @self_exe: the stat of
 * nsbox's own executable, or NULL: a child of @root running it has not yet
 * run execve and holds a copy of the supervisor's memory, not the job's. 0 or -errno when @root itself cannot
 * be read. */
#define PROC_TREE_PSS 0x1u              /* also read each process's smaps_rollup */
#define PROC_TREE_PROCS 0x2u            /* also return each process (ret->procs) */
struct stat;
int proc_tree_usage(int proc_fd, pid_t root, const struct stat *self_exe, unsigned flags, struct proc_tree_usage *ret);

/* ---- the tree's CPU time over looks (pure) ----
 *
 * Each look sums utime+stime+cutime+cstime of every live process. A
 * process that ends leaves the sum: if a process of the tree waited for it,
 * its time reappears in that one's cutime/cstime (an "arrival"); if it was
 * reaped without a wait (its parent ignores SIGCHLD, or SA_NOCLDWAIT), it
 * is gone from every counter, and only what the last look saw of it is
 * left. So: the time of processes that vanished is matched against the
 * growth of the survivors' cutime/cstime; what no growth matches within one
 * further look (a wait can land on either side of a look) is counted as
 * lost and kept. Growth that nothing vanished for is the time of children
 * no look saw (they began and were waited for between two looks): it is
 * counted one look late, as a vanish may still match it. */
struct tree_cpu {
        struct tree_cpu_proc *live;     /* the last look, sorted by pid */
        size_t n_live, cap;
        uint64_t lost;                  /* vanished, never matched: counted for good */
        uint64_t pending_gone;          /* vanished at the last look, not yet matched */
        uint64_t pending_growth;        /* cutime growth of the last look, not yet matched */
        uint64_t total;                 /* the estimate after the last look, in clock ticks */
        unsigned looks;
};

/* One look: @now holds the processes read (any order; sorted in place).
 * Updates t->total. 0 or -ENOMEM (then @t is as before). */
int tree_cpu_look(struct tree_cpu *t, struct tree_cpu_proc *now, size_t n);
void tree_cpu_free(struct tree_cpu *t);
