/* util/error.c — see error.h. Pure: formats into fixed buffers only. */
#include "util/error.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const stage_names[NSB_STAGE__MAX] = {
        [NSB_STAGE_NONE] = "none",         [NSB_STAGE_USAGE] = "usage",
        [NSB_STAGE_CONFIG] = "config",     [NSB_STAGE_PREPARE] = "prepare",
        [NSB_STAGE_CGROUP] = "cgroup",     [NSB_STAGE_CLONE] = "clone",
        [NSB_STAGE_USERNS] = "userns",     [NSB_STAGE_MOUNT] = "mount",
        [NSB_STAGE_NET] = "net",           [NSB_STAGE_RLIMIT] = "rlimit",
        [NSB_STAGE_CAPS] = "caps",         [NSB_STAGE_NNP] = "no_new_privs",
        [NSB_STAGE_LANDLOCK] = "landlock", [NSB_STAGE_SECCOMP] = "seccomp",
        [NSB_STAGE_EXEC] = "exec",         [NSB_STAGE_SUPERVISE] = "supervise",
        [NSB_STAGE_OUTPUT] = "output",
};

const char *nsb_stage_name(enum nsb_stage stage)
{
        if ((int) stage < 0 || stage >= NSB_STAGE__MAX || !stage_names[stage])
                return "unknown";
        return stage_names[stage];
}

void nsb_error_clear(struct nsb_error *e)
{
        if (!e)
                return;
        e->stage = NSB_STAGE_NONE;
        e->errnum = 0;
        e->msg[0] = '\0';
}

int nsb_fail(struct nsb_error *e, enum nsb_stage stage, int errnum, const char *fmt, ...)
{
        int r = errnum > 0 ? -errnum : -EINVAL;
        va_list ap;

        if (!e)
                return r;
        e->stage = stage;
        e->errnum = errnum > 0 ? errnum : 0;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        return r;
}

int nsb_error_prefix(struct nsb_error *e, const char *fmt, ...)
{
        char head[NSB_ERROR_MSG_MAX];
        size_t hlen, olen, cap = sizeof e->msg - 1;
        va_list ap;

        if (!e)
                return -EINVAL;
        va_start(ap, fmt);
        vsnprintf(head, sizeof head - 2, fmt, ap);
        va_end(ap);
        strcat(head, ": ");
        hlen = strlen(head);
        if (hlen > cap)
                hlen = cap;
        olen = strnlen(e->msg, cap);
        if (hlen + olen > cap)
                olen = cap - hlen;   /* the innermost detail is cut, never the context */
        memmove(e->msg + hlen, e->msg, olen);
        memcpy(e->msg, head, hlen);
        e->msg[hlen + olen] = '\0';
        return e->errnum > 0 ? -e->errnum : -EINVAL;
}

/* A bad value in a command line, profile, spec or job: nsbox made the error
 * up itself and its message says what is allowed; "Invalid argument" after
 * it would only blur that. */
static bool made_up(const struct nsb_error *e)
{
        return (e->stage == NSB_STAGE_USAGE || e->stage == NSB_STAGE_CONFIG) &&
               (e->errnum == EINVAL || e->errnum == ERANGE || e->errnum == EDOM);
}

const char *nsb_error_describe(const struct nsb_error *e, char *buf, size_t len)
{
        if (e->errnum > 0 && !made_up(e))
                snprintf(buf, len, "%s: %s", e->msg, strerror(e->errnum));
        else
                snprintf(buf, len, "%s", e->msg);
        return buf;
}
