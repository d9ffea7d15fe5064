/* util/rlimit.c — see rlimit.h. */
#include "util/rlimit.h"

#include <errno.h>
#include <sys/resource.h>

int rlimit_lower(int resource, const char *name, uint64_t value, struct nsb_error *e)
{
        struct rlimit rl;

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
