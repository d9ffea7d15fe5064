/* ns/ucount_plan.c — see ucount.h. Pure: no syscalls. */
#include "ns/ucount.h"

#include <string.h>

static const char *const max_names[UCOUNT_MAX_N] = {
        [UCOUNT_MAX_USER_NS] = "max_user_namespaces",
        [UCOUNT_MAX_PID_NS] = "max_pid_namespaces",
        [UCOUNT_MAX_UTS_NS] = "max_uts_namespaces",
        [UCOUNT_MAX_IPC_NS] = "max_ipc_namespaces",
        [UCOUNT_MAX_NET_NS] = "max_net_namespaces",
        [UCOUNT_MAX_MNT_NS] = "max_mnt_namespaces",
        [UCOUNT_MAX_CGROUP_NS] = "max_cgroup_namespaces",
        [UCOUNT_MAX_TIME_NS] = "max_time_namespaces",
        [UCOUNT_MAX_INOTIFY_INSTANCES] = "max_inotify_instances",
        [UCOUNT_MAX_INOTIFY_WATCHES] = "max_inotify_watches",
        [UCOUNT_MAX_FANOTIFY_GROUPS] = "max_fanotify_groups",
        [UCOUNT_MAX_FANOTIFY_MARKS] = "max_fanotify_marks",
};

static const char *const rl_names[UCOUNT_RL_N] = {
        [UCOUNT_RL_SIGPENDING] = "RLIMIT_SIGPENDING",
        [UCOUNT_RL_MSGQUEUE] = "RLIMIT_MSGQUEUE",
        [UCOUNT_RL_MEMLOCK] = "RLIMIT_MEMLOCK",
};

static const uint64_t rl_caps[UCOUNT_RL_N] = {
        [UCOUNT_RL_SIGPENDING] = UCOUNT_CAP_SIGPENDING,
        [UCOUNT_RL_MSGQUEUE] = UCOUNT_CAP_MSGQUEUE,
        [UCOUNT_RL_MEMLOCK] = UCOUNT_CAP_MEMLOCK,
};

const char *ucount_max_name(enum ucount_max m)
{
        return (unsigned) m < UCOUNT_MAX_N ? max_names[m] : "?";
}

const char *ucount_rl_name(enum ucount_rl r)
{
        return (unsigned) r < UCOUNT_RL_N ? rl_names[r] : "?";
}

/* Pending entries past the rlimit of a sandbox of @pids program tasks and
 * its init, saturating (pids is at most 2^22: no overflow in practice). */
static uint64_t sig_override(uint64_t pids)
{
        uint64_t tasks = pids + 1;

        return tasks > UINT64_MAX / UCOUNT_SIG_OVERRIDE_PER_TASK ? UINT64_MAX
                                                                 : tasks * UCOUNT_SIG_OVERRIDE_PER_TASK;
}

uint64_t ucount_sig_worst(const struct ucount_share *s, uint64_t pids)
{
        uint64_t o = sig_override(pids), r = s->rlimit[UCOUNT_RL_SIGPENDING];

        return r > UINT64_MAX - o ? UINT64_MAX : r + o;
}

void ucount_plan_sandbox(const struct ucount_budget *b, unsigned slots, uint64_t pids, struct ucount_share *ret)
{
        /* 4 * slots cannot overflow a uint64_t divisor for any unsigned slots */
        uint64_t parts = (uint64_t) UCOUNT_CALLER_SHARE * (slots ? slots : 1);
        uint64_t sig_split, over = sig_override(pids);

        memset(ret, 0, sizeof *ret);
        /* A static split: every sandbox of the invocation gets the same
         * share whatever the others hold, and together they hold at most a
         * quarter of the caller's budget. A share is its own level's
         * bound: the levels above (the caller's) only ever see the sum. */
        for (unsigned i = 0; i < UCOUNT_RL_N; i++) {
                uint64_t split = b->rlimit[i] / parts;   /* RLIM_INFINITY: a huge split, the cap wins */
                ret->rlimit[i] = split < rl_caps[i] ? split : rl_caps[i];
        }
        /* Pending signals: the rlimit is not the whole of a sandbox's use.
         * Standard signals sent with si_code >= 0 skip it and are charged at
         * every level anyway, up to UCOUNT_SIG_OVERRIDE_PER_TASK a task (the
         * reviewer's job of 41 processes held 41 x 58 past its share and left
         * another job's sigqueue 0 under a caller limit of 2048). So each
         * sandbox's worst case at a shared level is share + those entries,
         * and the share is also bounded by what stays of the caller's WHOLE
         * budget split per slot once every task has queued all of them:
         * slots x (share + override) <= budget, so the sandboxes of one
         * invocation never exhaust a shared level between them, whatever
         * they queue. (The quarter above bounds what the rlimit counts; the
         * override entries may reach past it into the caller's own three
         * quarters: docs/security.md.) When nothing stays, 0: queued signals
         * (sigqueue, real-time signals, timer_create) fail at the sandbox's
         * own level at once; only a caller budget below
         * slots x 64 x (pids + 1) leaves the standard signals' own entries
         * able to fill a shared level — docs/security.md says so. */
        sig_split = b->rlimit[UCOUNT_RL_SIGPENDING] / (slots ? slots : 1);
        sig_split = sig_split > over ? sig_split - over : 0;
        if (sig_split < ret->rlimit[UCOUNT_RL_SIGPENDING])
                ret->rlimit[UCOUNT_RL_SIGPENDING] = sig_split;
        /* 0 for every maximum: the filter denies unshare, setns, clone with
         * namespace flags, inotify_init(1) and fanotify_init; the counters
         * the sandbox could reach anyway say no at its own level too. */
        ret->set_max = 1;
}

void ucount_plan_zygote(struct ucount_share *ret)
{
        memset(ret, 0, sizeof *ret);
        for (unsigned i = 0; i < UCOUNT_RL_N; i++)
                ret->rlimit[i] = UCOUNT_KEEP;
        ret->set_max = 0;
}
