/* supervisor/outcome.h — from what the supervisor observed to a run_result.
 *
 * Pure. The supervisor collects facts (the program's wait status as the init
 * reported it, why nsbox itself killed the tree, cgroup events, a setup error)
 * and this one function decides the status. Tested exhaustively in
 * tests/unit/test_supervisor.c (test_outcomes). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "result/result.h"

enum kill_reason { KILL_NONE = 0, KILL_WALL_TIME, KILL_CPU_TIME, KILL_OUTPUT, KILL_CANCEL,
                   KILL_MEMORY /* rlimit: the tree's memory, polled, went past the limit */ };

struct observed {
        bool setup_error;          /* an ERROR record arrived (error is in the result already) */
        bool program_started;      /* a READY record arrived */
        bool got_exit;             /* the init reported the program's wait status */
        int wait_status;           /* that status */
        int init_status;           /* the init's own wait status */
        enum kill_reason killed;   /* nsbox killed the tree, and why (the first reason) */
        bool oom_killed;           /* the cgroup's OOM killer fired */
        bool memory_limit_hit;     /* the memory limit was reached (even without a kill) */
        bool pids_limit_hit;       /* a fork was refused at the pids limit */
        bool cpu_over;             /* the tree's CPU use reached the limit (also when RLIMIT_CPU
                                      killed a process): the run is a cpu_time limit */
        bool warm;                 /* the init was a warm job's (its parent the zygote, not nsbox) */
        /* Backends that hold memory per process (rlimit): the run's measured
         * peak (result's peak_memory_bytes) and the limit it is held to, 0 =
         * none. A burst shorter than the tree's poll is seen only here. */
        uint64_t peak_memory_bytes;
        uint64_t peak_limit_bytes;
};

/* Fills status, limit, limits_hit, exit_code and signal of @r. When the
 * sandbox failed without a record, sets r->error too. */
void outcome_decide(const struct observed *o, struct run_result *r);
