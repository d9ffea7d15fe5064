/* util/resultfile.c — see resultfile.h. */
#include "util/resultfile.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
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

int result_file_fail(FILE *f, struct nsb_error *e, const char *fmt, ...)
{
        int err = errno ? errno : EIO;
        char what[NSB_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        /* No half file that reads as the start of a whole one; and what
         * stdio still buffers goes to /dev/null when the caller's fclose
         * flushes it, not after the cut (POSIX has no fpurge). */
        if (ftruncate(fileno(f), 0) == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (null >= 0) {
                        dup2(null, fileno(f));
                        close(null);
                }
                return nsb_fail(e, NSB_STAGE_OUTPUT, err, "%s (left empty)", what);
        }
        return nsb_fail(e, NSB_STAGE_OUTPUT, err, "%s", what);
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
        errno = 0;
        for (size_t i = 0; i < n; i++)
                if (textsafe_json_dumpf(values[i], f, flags) < 0 || fputc('\n', f) == EOF)
                        return result_file_fail(f, e, "%s: cannot write '%s'", what, path);
        if (fflush(f) != 0)
                return result_file_fail(f, e, "%s: cannot write '%s'", what, path);
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

static bool same_file(const char *a, const char *b)
{
        AUTOFREE char *pa = NULL, *pb = NULL;
        struct stat sa, sb;
        bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;

        if (ea && eb)
                return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
        if (ea != eb)
                return false;
        pa = result_path_pin(a);
        pb = result_path_pin(b);
        return pa && pb && strcmp(pa, pb) == 0;
}

static int collide(const struct result_file_role *x, const struct result_file_role *y, struct nsb_error *e)
{
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                        "%s and %s name the same file '%s' (nsbox would write over one with the other; name two files)",
                        x->what, y->what, x->path);
}

int result_files_check(const struct result_file_role *outs, size_t n_out,
                       const struct result_file_role *ins, size_t n_in, struct nsb_error *e)
{
        for (size_t i = 0; i < n_out; i++) {
                if (!outs[i].path)
                        continue;
                for (size_t j = i + 1; j < n_out; j++)
                        if (outs[j].path && same_file(outs[i].path, outs[j].path))
                                return collide(&outs[i], &outs[j], e);
                for (size_t j = 0; j < n_in; j++)
                        if (ins[j].path && same_file(outs[i].path, ins[j].path))
                                return collide(&ins[j], &outs[i], e);
        }
        for (size_t i = 0; i < n_out; i++) {
                int r = result_file_precheck(outs[i].what, outs[i].path, e);

                if (r < 0)
                        return r;
        }
        return 0;
}

int result_file_precheck(const char *what, const char *path, struct nsb_error *e)
{
        AUTOFREE char *copy = NULL;
        const char *dir;
        struct stat st;

        if (!path)
                return 0;
        if (lstat(path, &st) == 0) {
                if (S_ISLNK(st.st_mode))
                        return nsb_fail(e, NSB_STAGE_USAGE, ELOOP, "%s: cannot open '%s' (a symlink in the path: refused, never followed)",
                                        what, path);
                if (!S_ISREG(st.st_mode))
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: '%s' is not a regular file", what, path);
                if (access(path, W_OK) < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, errno, "%s: cannot write '%s'", what, path);
                return 0;
        }
        if (errno != ENOENT)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "%s: '%s'", what, path);
        if (!(copy = strdup(path)))
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        dir = dirname(copy);
        if (access(dir, W_OK | X_OK) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "%s: cannot create '%s'", what, path);
        return 0;
}
