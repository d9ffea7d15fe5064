/* util/resultfile.c — see resultfile.h. */
#include "util/resultfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/platform.h"
#include "util/cleanup.h"
#include "util/portable.h"

char *result_path_pin(const char *path)
{
        AUTOFREE char *d = strdup(path), *b = strdup(path), *dir = NULL;
        const char *base;
        char *ret = NULL;

        if (!d || !b)
                return NULL;
        base = basename(b);
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(base, "/") == 0 ||
            !(dir = realpath(dirname(d), NULL)))
                return strdup(path);
        if (nsb_asprintf(&ret, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", base) < 0)
                return NULL;
        return ret;
}

int result_file_open(const char *path, bool append, struct nsb_error *e)
{
        /* No O_TRUNC: nothing is truncated before it is known to be a regular
         * file. No symlink in any component: the pinned path has none, so one
         * found now was planted during the run. */
        AUTOCLOSE int fd = plat_open_no_symlinks(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                                               O_NOCTTY | (append ? O_APPEND : 0),
                                                 0644);
        struct stat st;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "--result: cannot open '%s'%s", path,
                                errno == ELOOP ? " (a symlink in the path: refused, never followed)" : "");
        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "--result: cannot stat '%s'", path);
        if (!S_ISREG(st.st_mode))
                return nsb_fail(e, NSB_STAGE_OUTPUT, EINVAL, "--result: '%s' is not a regular file", path);
        if ((!append && ftruncate(fd, 0) < 0) || fcntl(fd, F_SETFL, append ? O_APPEND : 0) < 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "--result: cannot truncate '%s'", path);
        return move_fd(&fd);
}

int result_file_write(const char *path, const json_t *root, size_t flags, struct nsb_error *e)
{
        AUTO(fclose) FILE *f = NULL;
        int fd = result_file_open(path, false, e);

        if (fd < 0)
                return fd;
        f = fdopen(fd, "w");
        if (!f) {
                int err = errno;
                close(fd);
                return nsb_fail(e, NSB_STAGE_OUTPUT, err, "--result: cannot open '%s'", path);
        }
        if (json_dumpf(root, f, flags) < 0 || fputc('\n', f) == EOF)
                return nsb_fail(e, NSB_STAGE_OUTPUT, EIO, "--result: cannot write '%s'", path);
        if (fclose(move_ptr(&f)) != 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "--result: cannot write '%s'", path);
        return 0;
}
