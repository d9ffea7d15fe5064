/* ns/ucount.h — each sandbox's share of the budgets the kernel counts per
 * user across user-namespace levels (kernel/ucount.c).
 *
 * Owns: how much of the caller's per-user budgets one sandbox may hold, and
 * the syscalls that bound it. The kernel keeps one counter per (user
 * namespace, uid) and charges a use at every level of the chain up to the
 * init namespace:
 *   - rlimit counters (pending signals, POSIX message-queue bytes, SHM_LOCK'd
 *     memory): the bottom level is compared with the task's own rlimit, each
 *     parent level with the rlimit its child namespace's CREATOR had when it
 *     created it (get_userns_rlimit_max). So a sandbox's hard rlimit, set
 *     after its namespace exists, bounds everything it can queue or lock;
 *     and whoever creates a sandbox's namespace (the supervisor, or the warm
 *     zygote for each job) keeps its own, higher, limit — else the parent
 *     level, which every sandbox of that creator shares, is the one that
 *     says no, and one sandbox can fill it for, or measure it against, the
 *     others (issue #27);
 *   - namespace and inotify/fanotify counters: each level is compared with
 *     that level's namespace's own maximum (/proc/sys/user/max_*, INT_MAX in
 *     a new namespace, writable with CAP_SYS_RESOURCE in it). A sandbox's
 *     init sets its own namespace's maxima once it has made every namespace
 *     it needs itself (the cgroup v1 backend's second cgroup namespace).
 *
 * ucount_plan_*() are pure (ucount_plan.c); the rest make syscalls
 * (ucount_apply.c). Ordering: rlimits in the program's own steps (after its
 * namespace exists, before anything of the program runs); maxima in the
 * init, after its last unshare and before it forks the program.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

/* The rlimit-counted budgets. */
enum ucount_rl { UCOUNT_RL_SIGPENDING, UCOUNT_RL_MSGQUEUE, UCOUNT_RL_MEMLOCK, UCOUNT_RL_N };

/* The /proc/sys/user/max_* a sandbox's init writes in its own namespace. */
enum ucount_max {
        UCOUNT_MAX_USER_NS, UCOUNT_MAX_PID_NS, UCOUNT_MAX_UTS_NS, UCOUNT_MAX_IPC_NS, UCOUNT_MAX_NET_NS,
        UCOUNT_MAX_MNT_NS, UCOUNT_MAX_CGROUP_NS, UCOUNT_MAX_TIME_NS, UCOUNT_MAX_INOTIFY_INSTANCES,
        UCOUNT_MAX_INOTIFY_WATCHES, UCOUNT_MAX_FANOTIFY_GROUPS, UCOUNT_MAX_FANOTIFY_MARKS, UCOUNT_MAX_N
};

#define UCOUNT_KEEP UINT64_MAX          /* leave the inherited limit as it is */

/* The caps of one sandbox's share, whatever the budget: what a program
 * needs (a default mq_open queue is ~80 KiB; 1024 queued signals). */
#define UCOUNT_CAP_SIGPENDING 1024u
#define UCOUNT_CAP_MSGQUEUE (800u << 10)        /* the kernel's default RLIMIT_MSGQUEUE */
#define UCOUNT_CAP_MEMLOCK (8u << 20)           /* the kernel's default RLIMIT_MEMLOCK */
/* One nsbox invocation's sandboxes together take at most this fraction
 * (1/N) of the caller's budget; the rest stays the caller's own. */
#define UCOUNT_CALLER_SHARE 4u
/* Pending entries one task can hold past its RLIMIT_SIGPENDING. A
 * standard signal (below SIGRTMIN) sent with si_code >= 0 (kill() of
 * itself, tgkill, rt_tgsigqueueinfo to its own threads) skips the rlimit
 * check (kernel/signal.c: override_rlimit) but is still charged at every
 * ucount level; legacy_queue() keeps at most one pending entry per standard
 * signal per queue, and a task reaches two queues: its own and its thread
 * group's shared one. 31 standard signals x 2 queues = 62, rounded to 64. */
#define UCOUNT_SIG_OVERRIDE_PER_TASK 64u

/* A fixed-layout record: it travels in a warm job's spec (warm_spec.h). */
struct ucount_share {
        uint64_t rlimit[UCOUNT_RL_N];   /* hard = soft, never raised; UCOUNT_KEEP = leave */
        uint64_t max[UCOUNT_MAX_N];     /* the namespace's max_*; written only when set_max */
        uint8_t set_max;
        uint8_t pad[7];
};

/* The caller's budgets: its own soft rlimits (RLIM_INFINITY as UINT64_MAX). */
struct ucount_budget {
        uint64_t rlimit[UCOUNT_RL_N];
};

/* Pure: one sandbox's share when @slots sandboxes of this invocation run at
 * once (a batch's -j; 1 for a single run), each with at most @pids tasks of
 * the program (--pids; its init is one more): min(cap, budget / (4 * slots))
 * for message-queue bytes and locked memory; for pending signals
 * min(cap, budget / (4 * slots) - 64 * (pids + 1)), floored at 0, since
 * standard signals add up to 64 a task past the rlimit (0 then refuses
 * every queued signal at the sandbox's own level at once); 0 for every
 * max_* (seccomp already denies creating namespaces and inotify/fanotify
 * instances: the kernel's own counter then agrees). */
void ucount_plan_sandbox(const struct ucount_budget *b, unsigned slots, uint64_t pids, struct ucount_share *ret);

/* Pure: what one sandbox planned with these arguments can hold at a level
 * above its own, at worst: its pending-signal share plus what standard
 * signals add past it. The plan keeps slots x this within a quarter of the
 * budget whenever budget / (4 * slots) >= 64 * (pids + 1). */
uint64_t ucount_sig_worst(const struct ucount_share *s, uint64_t pids);

/* Pure: the warm zygote's own sandbox: it creates every job's namespaces,
 * so its rlimits are each job's parent-level maximum — it keeps the
 * caller's whole budget (never lowered), and its namespace's max_* stay
 * as they are (it must still create user, pid, mount, ... namespaces). */
void ucount_plan_zygote(struct ucount_share *ret);

/* Pure: "max_user_namespaces" for UCOUNT_MAX_USER_NS, ... */
const char *ucount_max_name(enum ucount_max m);
const char *ucount_rl_name(enum ucount_rl r);

/* Syscalls: the caller's own budgets (getrlimit). */
void ucount_budget_read(struct ucount_budget *ret);

/* Syscalls: lower this process's rlimits to @s (soft = hard). Never raises:
 * a lower inherited limit stays. */
int ucount_apply_rlimits(const struct ucount_share *s, struct nsb_error *e);

/* Syscalls, in a sandbox's init (CAP_SYS_RESOURCE in its own user
 * namespace, before its capabilities go). The sandbox's own /proc has no
 * /proc/sys (subset=pid), so the init makes a private proc instance, never
 * attached anywhere, and keeps its sys/user directory open: *ret_dirfd, or
 * -1 when !s->set_max. A new proc needs a fully visible one in the mount
 * namespace (mount_too_revealing): call it before the pivot. */
int ucount_open_sysctl(const struct ucount_share *s, int *ret_dirfd, struct nsb_error *e);

/* Write @s's max_* through @dirfd (from ucount_open_sysctl) into the calling
 * process's user namespace (the sysctl set is the writer's). After the
 * init's own last unshare: a max of 0 refuses the next one. */
int ucount_apply_max(int dirfd, const struct ucount_share *s, struct nsb_error *e);
