/* cgroup/cg_rlimit.c — the labelled fallback when no cgroup hierarchy is
 * usable: RLIMIT_AS for memory, RLIMIT_NPROC for tasks, set by the child on
 * itself. Weaker than a cgroup, and recorded as "rlimit" in the ledger so
 * nobody mistakes it for one (docs/cgroups.md has the details):
 *   - RLIMIT_AS bounds address space, not memory: reservations that are never
 *     touched count (a PROT_NONE arena, thread stacks), so it is set with
 *     room for the thread stacks (cg_rlimit_as_bytes) and the environment
 *     bounds glibc's arenas (MALLOC_ARENA_MAX, supervisor/env_plan.c);
 *     the kernel reports no peak and no OOM: a process may go past the
 *     limit (up to twice it) between two watches, so a measured peak over
 *     the limit names the run limit: memory (supervisor/outcome.c);
 *   - RLIMIT_NPROC counts the tasks (threads too) of the uid in the sandbox's
 *     user namespace (ucounts, 5.14+) and is not enforced at all when the
 *     sandbox runs as host uid 0;
 *   - there is nothing to kill_all: the supervisor kills by pidfd and the pid
 *     namespace takes the rest down with its init. */
#include "cgroup/cg_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cgroup/proc_tree.h"

static int rl_create(const struct cg_env *env, const struct cg_facts *f, const struct cg_spec *spec,
                     struct cg_run *ret, struct nsb_error *e)
{
        cg_run_init(ret);
        ret->backend = CG_BACKEND_RLIMIT;
        return 0;
}

/* Soft and hard both, so the program cannot raise it back; never above the
 * hard limit we inherited (raising it needs CAP_SYS_RESOURCE, and a lower
 * inherited limit is stricter anyway). */
static int lower_limit(int resource, const char *name, uint64_t value, struct nsb_error *e)
{
        struct rlimit rl;

        if (value == 0 || value == UINT64_MAX)
                return 0;
        if (getrlimit(resource, &rl) < 0)
                return nsb_fail(e, NSB_STAGE_RLIMIT, errno, "getrlimit(%s)", name);
        if (rl.rlim_max == RLIM_INFINITY || (uint64_t) rl.rlim_max > value)
                rl.rlim_max = (rlim_t) value;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(resource, &rl) < 0)
                return nsb_fail(e, NSB_STAGE_RLIMIT, errno, "setrlimit(%s, %llu)", name,
                                (unsigned long long) rl.rlim_max);
        return 0;
}

static int rl_child_join(struct cg_run *run, const struct cg_spec *spec, struct nsb_error *e)
{
        int r;

        cg_close_run_fds(run);
        /* memory + the thread stacks' address space (cg_rlimit_as_bytes) */
        r = lower_limit(RLIMIT_AS, "RLIMIT_AS", cg_rlimit_as_bytes(spec), e);
        if (r < 0)
                return r;
        /* Set inside the sandbox's user namespace, so only the sandbox's own
         * tasks are counted against it (not the user's host processes). */
        return lower_limit(RLIMIT_NPROC, "RLIMIT_NPROC", spec->pids_max, e);
}

static int rl_read_usage(struct cg_run *run, struct cg_usage *ret, struct nsb_error *e)
{
        long hz = sysconf(_SC_CLK_TCK);

        /* No group counter: CPU comes from wait4() rusage (ru_maxrss gives a
         * peak for the main process only), limits are seen as failed calls.
         * What the tree's counters said is a lower bound on both. */
        memset(ret, 0, sizeof *ret);
        if (run->tree_killed_known) {
                ret->tree_cpu_usec = run->tree_cpu_ticks * 1000000u / (uint64_t) (hz > 0 ? hz : 100);
                ret->tree_peak_bytes = run->tree_peak_rss;
        }
        if (run->tree_pss_peak > ret->tree_peak_bytes)
                ret->tree_peak_bytes = run->tree_pss_peak;
        return 0;
}

/* RLIMIT_AS bounds each process on its own, so a program that forks could
 * hold --pids times --memory. Sum what the tree holds (its share of
 * anonymous and shared memory) and stop it past the limit, as a cgroup
 * would. (Its CPU is left to RLIMIT_CPU, per process.) */
static int rl_watch(struct cg_run *run, int proc_fd, pid_t init, uint64_t memory_limit)
{
        struct proc_tree_usage u;

        if (memory_limit == 0 || memory_limit == UINT64_MAX || init <= 0 || proc_fd < 0 ||
            proc_tree_usage(proc_fd, init, PROC_TREE_PSS, &u) < 0)
                return 0;
        if (u.pss_bytes > run->tree_pss_peak)
                run->tree_pss_peak = u.pss_bytes;
        return u.pss_bytes > memory_limit;
}

static void rl_before_kill(struct cg_run *run, int proc_fd, pid_t init)
{
        struct proc_tree_usage u;

        if (run->tree_killed_known || init <= 0 || proc_fd < 0 || proc_tree_usage(proc_fd, init, 0, &u) < 0)
                return;
        run->tree_cpu_ticks = u.cpu_ticks;
        run->tree_peak_rss = u.peak_rss_bytes;
        run->tree_killed_known = true;
}

static int rl_kill_all(struct cg_run *run, struct nsb_error *e)
{
        return 0;
}

static void rl_destroy(struct cg_run *run)
{
        cg_close_run_fds(run);
}

const struct cg_ops cg_rlimit_ops = {
        .label = "rlimit",
        .create = rl_create,
        .child_join = rl_child_join,
        .read_usage = rl_read_usage,
        .kill_all = rl_kill_all,
        .destroy = rl_destroy,
        .per_process = true,
        .watch = rl_watch,
        .watch_period_ms = 20,  /* RLIMIT_AS holds each process meanwhile: only the sum can run ahead */
        .before_kill = rl_before_kill,
};
