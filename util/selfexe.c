/* util/selfexe.c — see selfexe.h. */
#include "util/selfexe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsbox-config.h"

bool nsb_running_from_build_tree(void)
{
        char exe[PATH_MAX], build[PATH_MAX], *slash;
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

        if (n <= 0 || !realpath(NSBOX_BUILD_ROOT, build))
                return false;
        exe[n] = '\0';
        slash = strrchr(exe, '/');
        if (!slash)
                return false;
        *slash = '\0';
        return strcmp(exe, build) == 0;
}
