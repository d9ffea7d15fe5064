/* warm/warm_pool.h — a batch's (or a judge's) zygote generations.
 *
 * Owns: starting a zygote (a keeper process that runs the zygote's sandbox
 * through sbx_run with SBX_ZYGOTE and lives as long as it), the control
 * socket the jobs are sent on, counting jobs for --warm-rotate, retiring a
 * generation (its zygote ends when its last job has), noticing a dead one,
 * and the reason a warm start cannot be had, for the results of the jobs
 * that then run cold. One process (the batch parent) owns a pool; its
 * workers inherit the current generation's control socket and send on it.
 *
 * Invariants: never a weaker sandbox in silence — a job runs warm only when
 * warm_pool_take() gave it a control socket, else cold with the reason;
 * nothing outlives warm_pool_stop() (every keeper reaped; the zygotes and
 * every job die with their keepers' sandboxes).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"
#include "profile/profile.h"
#include "util/error.h"

#define WARM_MAX_RETIRED 64

struct warm_pool {
        const struct nsb_config *cfg;   /* the batch's (borrowed) */
        const struct host_set *python_host;
        int cancel_fd;
        unsigned rotate;                /* jobs per generation */
        unsigned slots;                 /* jobs that run at once (cfg->jobs, or 1; a batch sets its -j):
                                           the zygote's RLIMIT_NPROC holds them all (warm_pool.c) */
        int ctl;                        /* the current generation's control socket; -1 = none */
        char cgroup[40];                /* its zygote's run cgroup's name ("nsbox-<keeper>-<serial>",
                                           in the base beside the workers' own): on cgroup v2 the
                                           parent of its jobs' cgroups when the zygote's sandbox
                                           made it one (sbx_request.warm_cgroup); "" = none */
        pid_t keeper;                   /* its keeper; 0 = none */
        unsigned jobs;                  /* jobs sent to the current generation */
        unsigned generations;           /* started so far */
        pid_t retired[WARM_MAX_RETIRED];   /* keepers of retired generations, not yet reaped */
        size_t n_retired;
        unsigned cold_left;             /* jobs that still run cold after failed starts */
        unsigned failed_starts;         /* in a row */
        char reason[400];               /* why this pool cannot start warm ("" = it can) */
};

void warm_pool_init(struct warm_pool *p, const struct nsb_config *cfg, const struct host_set *python_host,
                    int cancel_fd);

/* The control socket for the next job (a generation is started or rotated
 * when needed, and the job counted), or -1 with *ret_reason saying why the
 * job must run cold: not a python job (@python false), reduced isolation, a
 * network, a kernel without Landlock's scopes, or no zygote to be had. */
int warm_pool_take(struct warm_pool *p, bool python, const char **ret_reason);

/* The name of the current generation's cgroup, for sbx_request.warm_cgroup
 * (after a successful warm_pool_take), or NULL. */
const char *warm_pool_cgroup(const struct warm_pool *p);

/* Reap retired keepers that ended (call from the owner's loop). */
void warm_pool_poll(struct warm_pool *p);

/* Close every control socket, wait for every keeper (their zygotes end
 * when their jobs have). */
void warm_pool_stop(struct warm_pool *p);

/* Where libnsbox_warm.so and zygote.py are: $NSBOX_WARM_DIR, else the
 * build tree's warm/ for the build tree's own binary, else the installed
 * LIBDIR/nsbox. 0, or -ENOENT with the places looked at in @e. */
int warm_find_dir(char *ret, size_t size, struct nsb_error *e);
