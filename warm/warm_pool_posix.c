/* warm/warm_pool_posix.c — warm_pool.h on the posix platform: there is no
 * namespace to fork a job into, so every job runs cold and says why. */
#include "warm/warm_pool.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define NO_WARM "warm starts need Linux namespaces (this is the posix build)"

void warm_pool_init(struct warm_pool *p, const struct nsb_config *cfg, const struct host_set *python_host,
                    int cancel_fd)
{
        memset(p, 0, sizeof *p);
        p->cfg = cfg;
        p->python_host = python_host;
        p->cancel_fd = cancel_fd;
        p->ctl = -1;
        snprintf(p->reason, sizeof p->reason, "%s", NO_WARM);
}

int warm_pool_take(struct warm_pool *p, bool python, const char **ret_reason)
{
        (void) p;
        *ret_reason = python ? NO_WARM : "not a python job";
        return -1;
}

const char *warm_pool_cgroup(const struct warm_pool *p)
{
        (void) p;
        return NULL;
}

void warm_pool_poll(struct warm_pool *p)
{
        (void) p;
}

void warm_pool_stop(struct warm_pool *p)
{
        (void) p;
}

int warm_find_dir(char *ret, size_t size, struct nsb_error *e)
{
        (void) ret;
        (void) size;
        return nsb_fail(e, NSB_STAGE_PREPARE, ENOENT, NO_WARM);
}
