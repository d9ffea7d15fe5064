/* cgroup/cg_origin.c — the names of the ways a process gets its cgroup, as
 * doctor and results print them. Pure and portable: the posix platform's
 * doctor names its origin ("none") through it too. */
#include "cgroup/cgroup.h"

const char *cg_origin_name(enum cg_origin o)
{
        switch (o) {
        case CG_ORIGIN_DELEGATED:
                return "delegated";
        case CG_ORIGIN_SCOPE:
                return "systemd-scope";
        case CG_ORIGIN_PARENT:
                return "cgroup-parent";
        case CG_ORIGIN_NONE:
        default:
                return "none";
        }
}
