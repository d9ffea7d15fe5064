/* supervisor/stdin_pump.c — see stdin_pump.h. Syscall layer. */
#include "supervisor/stdin_pump.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/policy.h"
#include "config/stdin_plan.h"
#include "util/cleanup.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U   /* Linux 6.3 */
#endif

/* ---- the sealed copy ------------------------------------------------------ */

static int new_memfd(void)
{
        /* Non-executable and sealed so (F_SEAL_EXEC): the input is data. */
        int fd = memfd_create("nsbox-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);

        if (fd < 0 && errno == EINVAL)   /* before 6.3: no such flag; the mode below has no exec bits */
                fd = memfd_create("nsbox-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        /* Read-only for everyone: the seals already refuse writes, and
         * this refuses even an open of /proc/self/fd/0 for writing (which
         * would break a lease the program took on it). */
        if (fd >= 0 && fchmod(fd, 0444) < 0) {
                close(fd);
                fd = -1;
        }
        return fd;
}

static int write_all(int fd, const char *buf, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, buf, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                buf += w;
                n -= (size_t) w;
        }
        return 0;
}

/* Seal *fd's contents for good, rewind it, and replace it with a read-only
 * descriptor of it: the program can neither change its input nor try. */
static int seal_readonly(int *fd, const char *what, struct nsb_error *e)
{
        char p[64];
        int ro;

        if (fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: seal its copy", what);
        snprintf(p, sizeof p, "/proc/self/fd/%d", *fd);
        ro = open(p, O_RDONLY | O_CLOEXEC);
        if (ro < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: reopen its copy read-only", what);
        close(*fd);
        *fd = ro;
        return 0;
}

int stdin_memfd(const char *data, size_t len, int *ret_fd, struct nsb_error *e)
{
        AUTOCLOSE int fd = new_memfd();
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "memfd for stdin");
        if ((r = write_all(fd, data, len)) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, -r, "write stdin");
        if ((r = seal_readonly(&fd, "stdin", e)) < 0)
                return r;
        *ret_fd = fd;
        fd = -1;
        return 0;
}

/* @src's bytes from @at to its end (pread: @src's offset stays) into a
 * sealed memfd. -EFBIG, with @e untouched, when they are more than
 * STDIN_COPY_MAX (the file grew since its fstat): the caller streams it. */
static int copy_file(int src, off_t at, const char *what, int *ret_fd, uint64_t *ret_len, struct nsb_error *e)
{
        AUTOCLOSE int fd = new_memfd();
        char buf[65536];
        uint64_t done = 0;
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: memfd for its copy", what);
        for (;;) {
                ssize_t n = pread(src, buf, sizeof buf, at + (off_t) done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: read", what);
                if (n == 0)
                        break;
                if (done + (uint64_t) n > STDIN_COPY_MAX)
                        return -EFBIG;
                if ((r = write_all(fd, buf, (size_t) n)) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, -r, "%s: copy", what);
                done += (uint64_t) n;
        }
        if ((r = seal_readonly(&fd, what, e)) < 0)
                return r;
        *ret_fd = fd;
        *ret_len = done;
        fd = -1;
        return 0;
}

/* ---- what the caller named -------------------------------------------------- */

static int open_null(int *ret_fd, struct nsb_error *e)
{
        /* Anew: a description nobody else holds, of a node the program
         * could open itself (the sandbox's /dev/null is the host's). */
        *ret_fd = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        return *ret_fd < 0 ? nsb_fail(e, NSB_STAGE_PREPARE, errno, "open /dev/null for stdin") : 0;
}

int stdin_open(struct stdin_pump *p, const struct nsb_config *cfg, int *ret_fd, struct nsb_error *e)
{
        AUTOCLOSE int path_fd = -1;
        AUTOCLOSE int file = -1;
        struct stdin_src src;
        enum stdin_how how;
        const char *why;
        char what[PATH_MAX + 16];
        int from = STDIN_FILENO, r;
        off_t at = 0;
        uint64_t len;

        *p = (struct stdin_pump){ .src = -1, .dst = -1 };
        *ret_fd = -1;
        if ((r = cfg_stdin_describe(cfg, &path_fd, &src, e)) < 0)
                return r;
        how = stdin_plan(&src, &why);
        if (how == STDIN_REFUSE)
                return cfg_stdin_refused(cfg, why, e);
        if (how == STDIN_EMPTY)
                return open_null(ret_fd, e);
        snprintf(what, sizeof what, src.dash ? "--stdin -" : "--stdin '%s'", cfg->stdin_path);
        if (!src.dash) {
                /* The file read by nsbox, as the caller; this descriptor
                 * never leaves the supervisor. The same inode the O_PATH
                 * look found: no swap in between. */
                char proc[64];

                snprintf(proc, sizeof proc, "/proc/self/fd/%d", path_fd);
                file = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (file < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s", what);
                from = file;
        } else if (S_ISREG(src.mode) && (at = lseek(STDIN_FILENO, 0, SEEK_CUR)) < 0) {
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: its offset", what);
        }
        if (how == STDIN_COPY) {
                r = copy_file(from, at, what, ret_fd, &len, e);
                if (r == 0 && src.dash)
                        (void) lseek(STDIN_FILENO, at + (off_t) len, SEEK_SET);
                if (r != -EFBIG)
                        return r;
        }
        /* Streamed: a non-regular stdin, a file above STDIN_COPY_MAX. */
        if ((r = stdin_pump_open(p, from, ret_fd, e)) < 0)
                return r;
        if (file >= 0) {
                p->src_owned = true;
                file = -1;
        }
        return 0;
}

/* ---- the pump --------------------------------------------------------------- */

int stdin_pump_open(struct stdin_pump *p, int src, int *ret_read_fd, struct nsb_error *e)
{
        int fds[2];

        *p = (struct stdin_pump){ .src = src, .dst = -1 };
        if (pipe2(fds, O_CLOEXEC) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--stdin: a pipe for the program's input");
        /* Never block the supervisor on a program that does not read. */
        if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0) {
                int err = errno;
                close(fds[0]);
                close(fds[1]);
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "--stdin: nonblocking pipe");
        }
        p->dst = fds[1];
        *ret_read_fd = fds[0];
        return 0;
}

bool stdin_pump_want(const struct stdin_pump *p, int *ret_fd, short *ret_events)
{
        if (p->dst < 0)
                return false;
        if (p->len > p->off) {
                *ret_fd = p->dst;
                *ret_events = POLLOUT;
                return true;
        }
        if (p->src < 0)
                return false;
        *ret_fd = p->src;
        *ret_events = POLLIN;
        return true;
}

static void flush(struct stdin_pump *p)
{
        while (p->len > p->off) {
                ssize_t n = write(p->dst, p->buf + p->off, p->len - p->off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;                 /* the pipe is full: poll for POLLOUT */
                if (n < 0) {                    /* EPIPE: the program closed its stdin */
                        stdin_pump_close(p);
                        return;
                }
                p->off += (size_t) n;
        }
        p->off = p->len = 0;
}

void stdin_pump_step(struct stdin_pump *p)
{
        ssize_t n;

        if (p->dst < 0)
                return;
        if (p->len > p->off) {
                flush(p);
                return;
        }
        do
                n = read(p->src, p->buf, sizeof p->buf);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno == EAGAIN)
                return;
        if (n <= 0) {                           /* Ctrl-D, hang-up or an error: end of input */
                stdin_pump_close(p);
                return;
        }
        p->off = 0;
        p->len = (size_t) n;
        flush(p);
}

void stdin_pump_close(struct stdin_pump *p)
{
        close_fd(&p->dst);
        if (p->src_owned)
                close_fd(&p->src);
        p->src = -1;
        p->src_owned = false;
        p->off = p->len = 0;
}
