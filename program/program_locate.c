/* program/program_locate.c — where a host script runs from (program.h):
 * the real paths prog_place_plan needs, from realpath and getcwd. */
#include "program/program.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cleanup.h"

int prog_locate(const struct nsb_config *cfg, const char *host_path, struct prog_place *ret, struct nsb_error *e)
{
        char ws[PATH_MAX], dir[PATH_MAX], file[PATH_MAX], cwd[PATH_MAX];
        const char *slash = strrchr(host_path, '/'), *name = slash ? slash + 1 : host_path;
        AUTOFREE char *folder = NULL;
        bool have_cwd;

        memset(ret, 0, sizeof *ret);
        if (!cfg->workspace || cfg->isolation == NSB_ISOLATION_REDUCED)
                return 0;
        if (!(folder = strdup(host_path)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        /* the folder as named ("dir/main.py" -> "dir", "/main.py" -> "/",
         * "main.py" -> ".") */
        if (slash)
                folder[slash == host_path ? 1 : slash - host_path] = '\0';
        else
                strcpy(folder, ".");
        if (!realpath(cfg->workspace, ws) || !realpath(folder, dir) || !realpath(host_path, file))
                return 0;
        have_cwd = getcwd(cwd, sizeof cwd) != NULL;
        if (prog_place_plan(ws, dir, file, name, have_cwd ? cwd : NULL, ret) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        return 0;
}
