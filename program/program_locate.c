/* program/program_locate.c — where a host script runs from (program.h):
 * the real paths prog_place_plan needs, from realpath and getcwd. */
#include "program/program.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "util/cleanup.h"

int prog_locate(const struct nsb_config *cfg, const char *host_path, struct prog_place *ret, struct nsb_error *e)
{
        char ws[PATH_MAX], dir[PATH_MAX], file[PATH_MAX], cwd[PATH_MAX];
        const char *slash = strrchr(host_path, '/');
        AUTOFREE char *folder = NULL;
        struct stat st;
        int r;

        memset(ret, 0, sizeof *ret);
        if (!cfg->workspace)
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
        r = prog_place_plan(ws, dir, file, getcwd(cwd, sizeof cwd) ? cwd : NULL, ret);
        if (r == -EXDEV)
                return nsb_fail(e, NSB_STAGE_USAGE, EXDEV,
                                "'%s' is in the workspace but leads out of it (to '%s'): a program named in "
                                "the workspace must be one of its own files", host_path, file);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        /* The workspace's owner chose what this is: a FIFO would hold the
         * read (and the grader) before any limit runs. */
        if (ret->script && (stat(file, &st) < 0 || !S_ISREG(st.st_mode))) {
                prog_place_free(ret);
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s' is not a regular file", host_path);
        }
        /* Reduced isolation has no /workspace: the workspace is used where
         * it is, and the script runs as /program/NAME. */
        if (cfg->isolation == NSB_ISOLATION_REDUCED)
                prog_place_free(ret);
        return 0;
}
