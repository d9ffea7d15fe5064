/* cgroup/proc_tree.h — CPU time and peak memory of a live process tree,
 * read from /proc.
 *
 * For the rlimit backend, which has no cgroup to ask:
 *   - when nsbox kills a sandbox, the kernel tears down its pid namespace
 *     with SIGCHLD ignored, so the program and its descendants are reaped
 *     without their times reaching the init's rusage (zap_pid_ns_processes).
 *     Read just before the kill, the tree's own counters say what it used;
 *   - RLIMIT_AS bounds each process alone: the memory the whole tree holds
 *     (its proportional share of anonymous and shared memory, from
 *     smaps_rollup) is what the supervisor polls against the limit.
 * Parsers are pure (proc_tree_parse.c); the walk reads /proc (proc_tree.c). */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct proc_tree_usage {
        uint64_t cpu_ticks;             /* utime+stime+cutime+cstime of each process, in clock ticks */
        uint64_t peak_rss_bytes;        /* the largest VmHWM of one process */
        uint64_t pss_bytes;             /* sum of Pss_Anon + Pss_Shmem (with PROC_TREE_PSS) */
        unsigned n_procs;               /* processes read */
};

/* /proc/<pid>/stat: utime+stime+cutime+cstime (fields 14-17), in clock
 * ticks. The command name (field 2) may hold spaces and ')': parsing starts
 * after its last ')'. 0 or -EINVAL. */
int proc_parse_stat_ticks(const char *buf, size_t len, uint64_t *ret);

/* /proc/<pid>/status: the value of "@key:" in kB ("VmHWM:\t 7940 kB").
 * 0, -ENOENT (no such line: a kernel thread, a zombie), -EINVAL. */
int proc_parse_status_kb(const char *buf, size_t len, const char *key, uint64_t *ret);

/* The pids listed in /proc/<pid>/task/<tid>/children ("12 13 "), up to
 * @cap; returns how many were stored, or -EINVAL. */
int proc_parse_children(const char *buf, size_t len, pid_t *pids, size_t cap);

/* Sum over @root and its descendants (through every thread's children
 * file; at most a few thousand processes). Processes that vanish while
 * read are skipped, and so is the smaps_rollup of one we may not read (the
 * init: not dumpable). @proc_fd: an open /proc. 0 or -errno when @root
 * itself cannot be read. */
#define PROC_TREE_PSS 0x1u              /* also read each process's smaps_rollup */
int proc_tree_usage(int proc_fd, pid_t root, unsigned flags, struct proc_tree_usage *ret);
