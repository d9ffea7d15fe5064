/* supervisor/stdin_pump.c — see stdin_pump.h. Syscall layer. */
#include "supervisor/stdin_pump.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

int stdin_pump_open(struct stdin_pump *p, int src, int *ret_read_fd, struct nsb_error *e)
{
        int fds[2];

        *p = (struct stdin_pump){ .src = src, .dst = -1 };
        if (pipe2(fds, O_CLOEXEC) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--stdin -: pipe for the terminal's input");
        /* Never block the supervisor on a program that does not read. */
        if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0) {
                int err = errno;
                close(fds[0]);
                close(fds[1]);
                return nsb_fail(e, NSB_STAGE_PREPARE, err, "--stdin -: nonblocking pipe");
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
                p->src = -1;
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
        p->off = p->len = 0;
}
