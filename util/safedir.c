/* util/safedir.c — the walk of util/safedir.h (syscalls). */
#include "util/safedir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

#ifndef O_PATH
#define O_PATH O_RDONLY         /* the posix build: a directory opened to read */
#endif

/* One component's fd (already open) checked; @real's first @len bytes name it. */
static int check_fd(const char *what, const char *path, const char *real, size_t len, int fd, struct nsb_error *e)
{
        struct stat st;
        enum nsb_dir_verdict v;

        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s '%s': '%.*s'", what, path, (int) len, real);
        if (!S_ISDIR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOTDIR, "%s '%s': '%.*s'", what, path, (int) len, real);
        v = nsb_dir_verdict(st.st_uid, st.st_mode, geteuid());
        if (v != NSB_DIR_OK)
                return nsb_fail(e, NSB_STAGE_CONFIG, EPERM,
                                "%s '%s': '%.*s' %s (owner %u, mode %o), who could swap the directory for their "
                                "own tree: refused (XDG_CACHE_HOME names another place)", what, path, (int) len, real,
                                nsb_dir_verdict_text(v), (unsigned) st.st_uid, (unsigned) (st.st_mode & 07777));
        return 0;
}

int nsb_dir_check_path(const char *what, const char *path, char **ret_real, int *ret_fd, struct nsb_error *e)
{
        AUTOFREE char *real = realpath(path, NULL);
        AUTOFREE char *walk = NULL;
        AUTOCLOSE int fd = -1;
        char *save = NULL;
        int r;

        if (!real)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s '%s'", what, path);
        if (!(walk = strdup(real)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if ((fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s '%s': '/'", what, path);
        if ((r = check_fd(what, path, real, 1, fd, e)) < 0)
                return r;
        /* Each step from the fd of the one checked before: no symlink (the
         * path was resolved; one now is a swap), no path re-walked by name. */
        for (char *name = strtok_r(walk, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
                int next = openat(fd, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
                if (next < 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s '%s': '%s' changed while checked", what,
                                        path, name);
                close(fd);
                fd = next;
                /* named in a message by the prefix of @real that ends at @name */
                if ((r = check_fd(what, path, real, (size_t) (name - walk) + strlen(name), fd, e)) < 0)
                        return r;
        }
        if (ret_fd)
                *ret_fd = move_fd(&fd);
        if (ret_real)
                *ret_real = move_ptr(&real);
        return 0;
}
