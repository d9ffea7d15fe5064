/* serve/serve_exec.c — see serve_exec.h. */
#include "serve/serve_exec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/selfexe.h"

#include "nsbox-config.h"

#define SERVE_PROGRAM "nsbox-serve"

int serve_exec(int argc, char **argv, struct nsb_error *e)
{
        const char *env = getenv("NSBOX_SERVE");
        char exe[PATH_MAX], prog[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        char **av;

        if (n <= 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, n < 0 ? errno : ENOENT, "serve: cannot read /proc/self/exe");
        exe[n] = '\0';
        if (env && env[0])
                snprintf(prog, sizeof prog, "%s", env);
        else if (nsb_running_from_build_tree())
                snprintf(prog, sizeof prog, "%s/%s", NSBOX_BUILD_ROOT, SERVE_PROGRAM);
        else
                snprintf(prog, sizeof prog, "%s/%s", NSBOX_WARM_DIR, SERVE_PROGRAM);
        if (!(av = calloc((size_t) argc + 3, sizeof *av)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        /* { nsbox-serve, --engine, NSBOX, serve's own arguments... } */
        av[0] = prog;
        av[1] = (char *) "--engine";
        av[2] = exe;
        for (int i = 1; i < argc; i++)
                av[i + 2] = argv[i];
        execv(prog, av);
        free(av);
        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "serve: cannot run %s%s", prog,
                        env && env[0] ? " ($NSBOX_SERVE)" : "");
}
