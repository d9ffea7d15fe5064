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
 *   - RLIMIT_CPU (set with the program's other rlimits, supervisor/child.c)
 *     bounds each process alone; the tree's CPU time is summed by the same
 *     watch as its memory (proc_tree.h: tree_cpu_look), or read from a perf
 *     task-clock inherited by the whole tree where the kernel allows one
 *     (rl_attach), and the run stopped at the limit, as a cgroup's clock is
 *     read;
 *   - there is nothing to kill_all: the supervisor kills by pidfd and the pid
 *     namespace takes the rest down with its init. */
#include "cgroup/cg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/proc_tree.h"
#include "util/rlimit.h"

static int rl_create(const struct cg_env *env, const struct cg_facts *f, const struct cg_spec *spec,
                     struct cg_run *ret, struct nsb_error *e)
{
        cg_run_init(ret);
        ret->backend = CG_BACKEND_RLIMIT;
        /* What a process still running nsbox looks like (the program before
         * its execve): its memory is the supervisor's, not the job's. */
        ret->self_exe_known = env && env->proc_fd >= 0 && fstatat(env->proc_fd, "self/exe", &ret->self_exe, 0) == 0;
        return 0;
}

/* Soft and hard both, so the program cannot raise it back; never above the
 * hard limit we inherited (raising it needs CAP_SYS_RESOURCE, and a lower
 * inherited limit is stricter anyway). */
static int lower_limit(int resource, const char *name, uint64_t value, struct nsb_error *e)
{
        if (value == 0 || value == UINT64_MAX)
                return 0;
        return rlimit_lower(resource, name, value, e);
}

static int rl_child_join(struct cg_run *run, const struct cg_spec *spec, struct nsb_error *e)
{
        uint64_t as = cg_rlimit_as_bytes(spec);
        int r;

        cg_close_run_fds(run);
        /* A warm job's init, and the job it forks, start as copies of the
         * zygote and never exec: what the zygote's preloads mapped (numpy's
         * libraries: more than 2 x 16M) is not the job's, and counted it
         * left a job under --memory 16M no room to print (exit 1, nothing
         * on stderr). The job gets its room on top of it; the tree watch
         * holds its memory. (Without preloads the zygote maps what a cold
         * interpreter does at its first line: nothing is added.) */
        if (spec->as_inherited && as != 0 && as != UINT64_MAX)
                as = as > UINT64_MAX - 1 - spec->as_inherited ? UINT64_MAX - 1 : as + spec->as_inherited;
        /* memory + the thread stacks' address space (cg_rlimit_as_bytes) */
        r = lower_limit(RLIMIT_AS, "RLIMIT_AS", as, e);
        if (r < 0)
                return r;
        /* Set inside the sandbox's user namespace, so only the sandbox's own
         * tasks are counted against it (not the user's host processes). */
        return lower_limit(RLIMIT_NPROC, "RLIMIT_NPROC", spec->pids_max, e);
}

static uint64_t ticks_to_usec(uint64_t ticks)
{
        long hz = sysconf(_SC_CLK_TCK);

        return ticks * 1000000u / (uint64_t) (hz > 0 ? hz : 100);
}

/* The tree's CPU time: the looks' sum, or the kernel's inherited
 * task-clock when it could be opened (exact: it holds every process that
 * ended, waited for or not, and reads the live ones), whichever says more. */
static uint64_t tree_usec(const struct cg_run *run)
{
        uint64_t usec = run->tree_cpu.looks ? ticks_to_usec(run->tree_cpu.total) : 0, ns;

        /* (a perf counter is read with read(), which has no offset) */
        if (run->tree_clock_fd >= 0 && read(run->tree_clock_fd, &ns, sizeof ns) == (ssize_t) sizeof ns &&
            ns / 1000 > usec)
                usec = ns / 1000;
        return usec;
}

static int rl_read_usage(struct cg_run *run, struct cg_usage *ret, struct nsb_error *e)
{
        /* No group counter: CPU comes from wait4() rusage and the tree's
         * looks, whichever says more; limits are seen as failed calls. The
         * peak is the looks' (the job's own: rusage's ru_maxrss counts the
         * copy of the supervisor every process starts as before its execve). */
        memset(ret, 0, sizeof *ret);
        ret->tree_cpu_usec = tree_usec(run);
        ret->tree_peak_bytes = run->tree_pss_peak > run->tree_hwm_peak ? run->tree_pss_peak : run->tree_hwm_peak;
        ret->init_hwm_bytes = run->init_hwm;
        return 0;
}

/* What of a size is the job's own: a warm job's processes are forks of
 * the zygote, and their resident sizes and shares count the zygote's
 * pages they still share (a numpy zygote's 24 MB: `print()` under
 * --memory 20M read over). A cgroup charges those to the zygote; so do
 * these sums, by leaving out what the init shared at its birth. The
 * private pages (mapped by one process only) never hold them, and are
 * held to the limit itself. */
static uint64_t own_bytes(const struct cg_run *run, uint64_t bytes)
{
        return bytes > run->shared_at_birth ? bytes - run->shared_at_birth : 0;
}

/* Which processes a look read, as one number: the same (pid, start time)
 * pairs in any order give the same value. Two looks with the same value saw
 * no process begin or end between the first's start and the second's end. */
static uint64_t proc_set_id(const struct tree_cpu_proc *procs, unsigned n)
{
        uint64_t id = n;

        for (unsigned i = 0; i < n; i++) {
                uint64_t x = ((uint64_t) (uint32_t) procs[i].pid << 32) ^ procs[i].start;
                x ^= x >> 33;
                x *= 0xff51afd7ed558ccdULL;     /* a 64-bit mix, so that sums of pids do not collide */
                x ^= x >> 33;
                id += x;
        }
        return id;
}

/* One look at the tree: its CPU time (every process, once), the memory it
 * holds and the largest resident size of one of its processes; *set_id
 * (when not NULL): which processes it read (proc_set_id). 0, or -1 when the
 * tree could not be read (the init is gone). */
static int look(struct cg_run *run, int proc_fd, pid_t init, unsigned flags, struct proc_tree_usage *u,
                uint64_t *set_id)
{
        int r;

        if (init <= 0 || proc_fd < 0 ||
            proc_tree_usage(proc_fd, init, run->self_exe_known ? &run->self_exe : NULL, flags | PROC_TREE_PROCS, u) < 0)
                return -1;
        /* A process in the middle of its exit is unmapping its memory: the
         * others' shares of it grow while the look reads them, though the
         * processes read stay the same (the parent reaps it later). Such a
         * look is unsettled: its id matches no other look's. */
        if (set_id)
                *set_id = proc_set_id(u->procs, u->n_procs) ^
                          (u->n_exiting ? 0x9e3779b97f4a7c15ULL * ++run->tree_unsettled : 0);
        /* Out of memory: this look is skipped, the next one sees the tree. */
        r = tree_cpu_look(&run->tree_cpu, u->procs, u->n_procs);
        free(u->procs);
        u->procs = NULL;
        if (own_bytes(run, u->peak_rss_bytes) > run->tree_hwm_peak)
                run->tree_hwm_peak = own_bytes(run, u->peak_rss_bytes);
        if (u->root_hwm_bytes > run->init_hwm)
                run->init_hwm = u->root_hwm_bytes;
        return r < 0 ? -1 : 0;
}

static uint64_t thread_cpu_usec(void)
{
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
        return a > b ? a : b;
}

/* A memory sum over the limit is looked at again before it is believed.
 * The sum is read one process at a time: when processes sharing pages exit
 * (or fork) during a look, the ones read after see another share of the
 * same pages than the ones read before had, and the sum says more than the
 * tree ever held (a fork pool of 60 sharing 200 MB read 256+ MB as its
 * children exited). So the tree is looked at again, after pauses that grow
 * (a loaded machine takes its time to end 60 processes), until a look is
 * under the limit (not over), or two looks in a row are over and read the
 * same processes, none of them mid-exit (nothing began or ended between
 * them, so the shares held still: over). A look while a process is still
 * unmapping its memory on its way out reads the same processes as the next
 * one (the parent has not reaped it yet), yet its shares were still moving:
 * a pool of 60 under load ~10 (uid 65534, --warm) was read over the limit
 * by two such looks, and by every look of 0.2 s. But a tree that churns
 * (950 sleepers exiting) may never give two settled looks, and waiting let
 * 4 hogs of 200 MB end unseen after 3 s: so the pages only one process maps
 * (Private_Dirty), which no exit inflates — a page is private to one
 * process at a time — decide at once when two looks in a row both exceed
 * the limit by them alone. A tree that churns through every look is over
 * only if every look was over. A tree that could not be listed whole
 * (memory ran out) twice counts as over: no silent pass. *confirmed: the
 * smallest sum seen, or the private pages two looks confirmed (what the
 * peak may take). */
#define CONFIRM_LOOKS 6                 /* pauses 3, 6, ... 96 ms: at most ~0.2 s (more let a real
                                           overshoot of 3 s end unseen under load) */
static bool memory_confirmed_over(struct cg_run *run, int proc_fd, pid_t init, uint64_t limit,
                                  const struct proc_tree_usage *first, uint64_t first_set, uint64_t *confirmed)
{
        uint64_t prev_set = first_set, prev_private = first->private_bytes;
        bool prev_incomplete = first->incomplete;
        long pause_ms = 3;

        *confirmed = own_bytes(run, first->pss_bytes);
        for (int i = 0; i < CONFIRM_LOOKS; i++, pause_ms *= 2) {
                struct timespec pause = { 0, pause_ms * 1000000L };
                struct proc_tree_usage again;
                uint64_t set;

                (void) nanosleep(&pause, NULL);
                if (look(run, proc_fd, init, PROC_TREE_PSS, &again, &set) < 0)
                        return false;   /* the init is gone: nothing left to stop */
                *confirmed = min_u64(*confirmed, own_bytes(run, again.pss_bytes));
                if (prev_incomplete && again.incomplete)
                        return true;
                /* pages only one process maps, over the limit in two looks
                 * in a row: no exit inflates that sum, churn or not */
                if (prev_private > limit && again.private_bytes > limit) {
                        *confirmed = max_u64(*confirmed, min_u64(prev_private, again.private_bytes));
                        return true;
                }
                if (!again.incomplete && own_bytes(run, again.pss_bytes) <= limit && again.private_bytes <= limit)
                        return false;
                if (!again.incomplete && set == prev_set)
                        return true;
                prev_set = set;
                prev_private = again.private_bytes;
                prev_incomplete = again.incomplete;
        }
        return true;
}

/* RLIMIT_AS bounds each process on its own, so a program that forks could
 * hold --pids times --memory; RLIMIT_CPU gives each process the whole CPU
 * time, so six children could use six times it. Sum the tree (its share of
 * anonymous and shared memory; every process's CPU time, counted once) and
 * stop it past either limit, as a cgroup's counters would.
 * The next look waits ten times what this one cost the supervisor (at
 * least watch_period_ms): a large tree is read less often, and the
 * supervisor stays under about a tenth of a CPU whatever the job does. */
static unsigned rl_watch(struct cg_run *run, int proc_fd, pid_t init, const struct cg_watch_limits *lim)
{
        bool mem = lim->memory_bytes != 0 && lim->memory_bytes != UINT64_MAX;
        uint64_t t0 = thread_cpu_usec(), cost_ms, sum, set;
        struct proc_tree_usage u;
        unsigned over = 0;

        if (look(run, proc_fd, init, mem ? PROC_TREE_PSS : 0, &u, &set) < 0)
                return 0;
        /* the peak: what two consecutive looks of the same processes both
         * saw (a look while processes began or ended may overcount) */
        sum = set == run->tree_set_last ? own_bytes(run, min_u64(u.pss_bytes, run->tree_pss_last)) : 0;
        /* ... or, churn or not, the pages only one process maps in both */
        sum = max_u64(sum, min_u64(u.private_bytes, run->tree_private_last));
        if (mem && (own_bytes(run, u.pss_bytes) > lim->memory_bytes || u.private_bytes > lim->memory_bytes ||
                    u.incomplete) &&
            memory_confirmed_over(run, proc_fd, init, lim->memory_bytes, &u, set, &sum))
                over |= CG_WATCH_MEMORY;
        if (sum > run->tree_pss_peak)
                run->tree_pss_peak = sum;
        run->tree_pss_last = u.pss_bytes;
        run->tree_private_last = u.private_bytes;
        run->tree_set_last = set;
        if (lim->cpu_usec != 0 && tree_usec(run) >= lim->cpu_usec)
                over |= CG_WATCH_CPU;
        cost_ms = (thread_cpu_usec() - t0) * 10 / 1000;
        run->watch_next_ms = cost_ms > 20 ? (unsigned) (cost_ms > 1000 ? 1000 : cost_ms) : 0;
        return over;
}

static void rl_before_kill(struct cg_run *run, int proc_fd, pid_t init)
{
        struct proc_tree_usage u;

        (void) look(run, proc_fd, init, 0, &u, NULL);
}

/* A software task-clock counter on the init with inherit: every process it
 * and its descendants fork gets a child counter, whose time the kernel adds
 * to ours when that process exits (perf_event_exit_task), however it is
 * reaped — the time a process reaped unwaited takes with it from every
 * other counter. Counting only (no sampling, no buffer); exclude_kernel
 * (which a task-clock does not apply when counting) is what
 * perf_event_paranoid 2 asks of an unprivileged opener. The owner is the
 * supervisor: the program's PR_TASK_PERF_EVENTS_DISABLE does not reach it.
 * Refused (paranoid 3 and up, Debian's and Ubuntu's default, or no perf):
 * the looks alone count. */
static void rl_attach(struct cg_run *run, pid_t init)
{
        struct perf_event_attr a;
        long fd;

        memset(&a, 0, sizeof a);
        a.type = PERF_TYPE_SOFTWARE;
        a.size = sizeof a;
        a.config = PERF_COUNT_SW_TASK_CLOCK;
        a.inherit = 1;
        a.exclude_kernel = 1;
        a.exclude_hv = 1;
        fd = syscall(SYS_perf_event_open, &a, init, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd >= 0)
                run->tree_clock_fd = (int) fd;
}

static int rl_kill_all(struct cg_run *run, struct nsb_error *e)
{
        return 0;
}

static void rl_destroy(struct cg_run *run)
{
        cg_close_run_fds(run);
        if (run->tree_clock_fd >= 0)
                close(run->tree_clock_fd);
        run->tree_clock_fd = -1;
        tree_cpu_free(&run->tree_cpu);
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
        .watch_period_ms = 20,  /* RLIMIT_AS and RLIMIT_CPU hold each process meanwhile: only the sums run ahead */
        .before_kill = rl_before_kill,
        .attach = rl_attach,
};
