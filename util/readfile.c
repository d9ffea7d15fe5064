/* util/readfile.c — see readfile.h. */
#include "util/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

int read_fd(int fd, const char *name, size_t max, char **ret, size_t *ret_len, struct nsb_error *e)
{
        AUTOFREE char *buf = NULL;
        size_t len = 0, cap = 0;

        for (;;) {
                ssize_t n;
                if (len == cap) {
                        char *nb;
                        cap = cap ? cap * 2 : 65536;
                        if (cap > max + 1)
                                cap = max + 1;
                        if (!(nb = realloc(buf, cap + 1)))
                                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "'%s': out of memory", name);
                        buf = nb;
                }
                n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "read '%s'", name);
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max)
                        return nsb_fail(e, NSB_STAGE_PREPARE, EFBIG, "'%s' is larger than %zu bytes", name, max);
        }
        buf[len] = '\0';
        *ret_len = len;
        *ret = move_ptr(&buf);
        return 0;
}

int read_file(const char *path, size_t max, char **ret, size_t *ret_len, struct nsb_error *e)
{
        /* O_NONBLOCK: a FIFO with no writer would block the open forever,
         * with SIGINT and SIGTERM held for the cancel fd; opened this way it
         * reads as empty, and a pipe that has a writer (`<(zcat f.gz)`) is
         * read as before once the flag is cleared. */
        AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "'%s'", path);
        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "'%s'", path);
        if (S_ISDIR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_PREPARE, EISDIR, "'%s'", path);
        if (fcntl(fd, F_SETFL, 0) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "'%s'", path);
        return read_fd(fd, path, max, ret, ret_len, e);
}

int write_all(int fd, const void *buf, size_t len)
{
        const char *p = buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}
