/* supervisor/outcome.c — see outcome.h. Pure. */
#include "supervisor/outcome.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

static void hit(struct run_result *r, enum run_limit l)
{
        r->limits_hit |= 1u << l;
}

static void end_by_limit(struct run_result *r, enum run_limit l, int sig)
{
        r->status = RUN_LIMIT;
        r->limit = l;
        r->signal = sig;
        hit(r, l);
}

/* Under RLIMIT_AS a process may hold up to twice --memory (the room for
 * thread stacks, cgroup/cg_plan.c) for a burst the 20 ms poll of the tree
 * misses; the rusage peak sees it afterwards. A run whose reported peak is
 * over its limit went past the limit: it is named, never "exited". */
static bool peak_over(const struct observed *o)
{
        return o->peak_limit_bytes > 0 && o->peak_memory_bytes > o->peak_limit_bytes;
}

void outcome_decide(const struct observed *o, struct run_result *r)
{
        r->limit = LIMIT_NONE;
        r->exit_code = 0;
        r->signal = 0;
        if (o->pids_limit_hit)
                hit(r, LIMIT_PIDS);
        if (o->memory_limit_hit || o->oom_killed || peak_over(o))
                hit(r, LIMIT_MEMORY);
        /* e.g. a child that RLIMIT_CPU killed while the program ran on (which
         * the tree's time then reached too: the run ends by it below) */
        if (o->cpu_over)
                hit(r, LIMIT_CPU_TIME);

        /* A sandbox failure outranks everything: the program's behaviour is
         * unknown, never "wrong". */
        if (o->setup_error) {
                r->status = RUN_ERROR;
                return;
        }
        if (o->killed == KILL_CANCEL) {
                r->status = RUN_CANCELLED;
                return;
        }
        switch (o->killed) {
        case KILL_WALL_TIME:
                end_by_limit(r, LIMIT_WALL_TIME, SIGKILL);
                return;
        case KILL_CPU_TIME:
                end_by_limit(r, LIMIT_CPU_TIME, SIGKILL);
                return;
        case KILL_OUTPUT:
                end_by_limit(r, LIMIT_OUTPUT, SIGKILL);
                return;
        case KILL_MEMORY:
                end_by_limit(r, LIMIT_MEMORY, SIGKILL);
                return;
        default:
                break;
        }
        if (!o->got_exit) {
                if (o->oom_killed) {
                        end_by_limit(r, LIMIT_MEMORY, SIGKILL);
                        return;
                }
                r->status = RUN_ERROR;
                if (o->warm) {
                        /* killed with its zygote's generation, or from outside */
                        nsb_fail(&r->error, NSB_STAGE_SUPERVISE, 0,
                                 o->program_started ? "the warm job's init was killed before it reported the "
                                                      "program's status (its zygote ended, or it was killed)"
                                                    : "the warm job's init was killed before the program "
                                                      "started (its zygote ended, or it was killed)");
                        return;
                }
                nsb_fail(&r->error, NSB_STAGE_SUPERVISE, 0,
                         o->program_started ? "the sandbox init ended before reporting the program's status (%s %d)"
                                            : "the sandbox ended before the program started (%s %d)",
                         WIFSIGNALED(o->init_status) ? "signal" : "exit code",
                         WIFSIGNALED(o->init_status) ? WTERMSIG(o->init_status) : WEXITSTATUS(o->init_status));
                return;
        }
        if (peak_over(o)) {
                end_by_limit(r, LIMIT_MEMORY, WIFSIGNALED(o->wait_status) ? WTERMSIG(o->wait_status) : 0);
                return;
        }
        if (WIFSIGNALED(o->wait_status)) {
                int sig = WTERMSIG(o->wait_status);
                if (sig == SIGKILL && o->oom_killed) {
                        end_by_limit(r, LIMIT_MEMORY, sig);
                        return;
                }
                if (sig == SIGXFSZ) {
                        end_by_limit(r, LIMIT_FILE_SIZE, sig);
                        return;
                }
        }
        /* The tree's CPU time reached the limit (a cgroup's clock, the sum
         * of the tree's looks, or RLIMIT_CPU ended one of its processes), and
         * nothing else ended it: the limit, whatever the exit (the program
         * may end between two looks), never "exited" with cpu_time in
         * limits_hit. */
        if (o->cpu_over) {
                end_by_limit(r, LIMIT_CPU_TIME, WIFSIGNALED(o->wait_status) ? WTERMSIG(o->wait_status) : 0);
                return;
        }
        if (WIFEXITED(o->wait_status)) {
                r->status = RUN_EXITED;
                r->exit_code = WEXITSTATUS(o->wait_status);
                return;
        }
        if (WIFSIGNALED(o->wait_status)) {
                r->status = RUN_SIGNALED;
                r->signal = WTERMSIG(o->wait_status);
                return;
        }
        r->status = RUN_ERROR;
        nsb_fail(&r->error, NSB_STAGE_SUPERVISE, 0, "unexpected wait status 0x%x", (unsigned) o->wait_status);
}
