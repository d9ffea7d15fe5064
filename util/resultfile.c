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

int result_file_open_as(const char *path, bool append, const char *what, struct nsb_error *e)
{
        /* No O_TRUNC: nothing is truncated before it is known to be a regular
         * file. No symlink in any component: the pinned path has none, so one
         * found now was planted during the run. */
        AUTOCLOSE int fd = plat_open_no_symlinks(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                                               O_NOCTTY | (append ? O_APPEND : 0),
                                                 0644);
        struct stat st;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "%s: cannot open '%s'%s", what, path,
                                errno == ELOOP ? " (a symlink in the path: refused, never followed)" : "");
        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "%s: cannot stat '%s'", what, path);
        if (!S_ISREG(st.st_mode))
                return nsb_fail(e, NSB_STAGE_OUTPUT, EINVAL, "%s: '%s' is not a regular file", what, path);
        if ((!append && ftruncate(fd, 0) < 0) || fcntl(fd, F_SETFL, append ? O_APPEND : 0) < 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "%s: cannot truncate '%s'", what, path);
        return move_fd(&fd);
}

int result_file_open(const char *path, bool append, struct nsb_error *e)
{
        return result_file_open_as(path, append, "--result", e);
}

/* @n JSON values, each dumped with @flags and followed by a newline. */
static int write_values(const char *path, const char *what, json_t *const *values, size_t n, size_t flags,
                        struct nsb_error *e)
{
        AUTO(fclose) FILE *f = NULL;
        int fd = result_file_open_as(path, false, what, e);

        if (fd < 0)
                return fd;
        f = fdopen(fd, "w");
        if (!f) {
                int err = errno;
                close(fd);
                return nsb_fail(e, NSB_STAGE_OUTPUT, err, "%s: cannot open '%s'", what, path);
        }
        for (size_t i = 0; i < n; i++)
                if (json_dumpf(values[i], f, flags) < 0 || fputc('\n', f) == EOF)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, EIO, "%s: cannot write '%s'", what, path);
        if (fclose(move_ptr(&f)) != 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "%s: cannot write '%s'", what, path);
        return 0;
}

int result_file_write(const char *path, const json_t *root, size_t flags, struct nsb_error *e)
{
        json_t *one = (json_t *) root;

        return write_values(path, "--result", &one, 1, flags, e);
}

int result_file_write_lines(const char *path, const char *what, const json_t *lines, struct nsb_error *e)
{
        size_t n = json_array_size(lines);
        AUTOFREE json_t **v = calloc(n ? n : 1, sizeof *v);

        if (!v)
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "%s: out of memory", what);
        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(lines, i);
        return write_values(path, what, v, n, JSON_COMPACT, e);
}
