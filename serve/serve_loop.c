/* serve/serve_loop.c — the service's one loop. Syscall layer.
 *
 * One poll() over the signalfd, libmicrohttpd's epoll fd and the engine's
 * pipes; MHD_run() after each turn. SIGTERM drains, a second signal
 * cancels; the engine is restarted if it ends on its own. */
#include "serve/serve_loop.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "serve/serve_state.h"
#include "util/cleanup.h"

#define DRAIN_GRACE_MS 2000.0           /* idle keep-alive clients, once every answer is sent */

/* What the engine's -j defaults to: the CPUs this process may run on. */
static unsigned cpus(void)
{
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
                return (unsigned) CPU_COUNT(&set);
        return 1;
}

static unsigned connections(struct serve *s)
{
        const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        return i ? i->num_connections : 0;
}

static void start_drain(struct serve *s)
{
        MHD_socket lfd;

        s->drain = DRAINING;
        /* No new connections; those open get 503 for a new request. */
        lfd = MHD_quiesce_daemon(s->d);
        if (lfd != MHD_INVALID_SOCKET)
                close(lfd);
        if (s->unix_path)
                unlink(s->unix_path);
        fprintf(stderr, "nsbox serve: stopping: %u job(s) in flight finish, new ones are refused\n", s->n_inflight);
}

static void on_signal(struct serve *s, int sfd)
{
        struct signalfd_siginfo si;

        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si) {
                if (s->drain == RUNNING) {
                        start_drain(s);
                } else if (s->drain == DRAINING) {
                        /* A second signal: what is left is cancelled, each
                         * answered as cancelled when the engine has stopped. */
                        s->drain = CANCELLING;
                        s->cancelled_some = s->n_inflight > 0 || s->n_todo > 0;
                        fprintf(stderr, "nsbox serve: cancelling the %u job(s) left\n", s->n_inflight);
                        if (s->eng.pid > 0)
                                kill(s->eng.pid, SIGTERM);
                }
        }
}

static int engine_ended(struct serve *s)
{
        s->engine_status = serve_engine_reap(&s->eng);
        serve_jobs_fail(s, s->drain == CANCELLING ? "cancelled: the service was stopped before this job ended"
                                                : "the job engine ended before this job did");
        if (s->drain != RUNNING)
                return 0;
        if (serve_now_ms() - s->engine_started_ms < 1000.0) {
                /* it ended at once: its options (after `--`) or the host */
                s->engine_failed = true;
                return -1;
        }
        fprintf(stderr, "nsbox serve: the job engine ended (wait status %d); starting a new one\n", s->engine_status);
        return 1;
}

static int drain_done(struct serve *s)
{
        if (s->drain == RUNNING || s->n_inflight || s->n_todo)
                return 0;
        if (s->eng.in_fd >= 0 && s->eng.olen == 0)
                serve_engine_close_input(&s->eng);   /* no job left: the engine ends */
        if (s->eng.pid > 0)
                return 0;
        if (s->drained_at_ms == 0)
                s->drained_at_ms = serve_now_ms();
        return connections(s) == 0 || serve_now_ms() - s->drained_at_ms > DRAIN_GRACE_MS;
}

static int loop(struct serve *s, int sfd, int mhd_fd, struct nsb_error *e)
{
        for (;;) {
                struct pollfd p[4];
                nfds_t n = 0;
                int i_out = -1, i_in = -1, timeout = -1;
                MHD_UNSIGNED_LONG_LONG to;

                p[n++] = (struct pollfd){ sfd, POLLIN, 0 };
                p[n++] = (struct pollfd){ mhd_fd, POLLIN, 0 };
                if (s->eng.out_fd >= 0)
                        p[i_out = (int) n++] = (struct pollfd){ s->eng.out_fd, POLLIN, 0 };
                if (s->eng.in_fd >= 0 && s->eng.olen)
                        p[i_in = (int) n++] = (struct pollfd){ s->eng.in_fd, POLLOUT, 0 };
                if (MHD_get_timeout(s->d, &to) == MHD_YES)
                        timeout = to > 60000 ? 60000 : (int) to;
                if (s->drain != RUNNING && (timeout < 0 || timeout > 100))
                        timeout = 100;
                if (s->conns && (timeout < 0 || timeout > 500))
                        timeout = 500;   /* the read deadline is checked twice a second */
                if (poll(p, n, timeout) < 0 && errno != EINTR)
                        return nsb_fail(e, NSB_STAGE_SUPERVISE, errno, "poll");
                if (p[0].revents)
                        on_signal(s, sfd);
                if (i_in >= 0 && p[i_in].revents)
                        (void) serve_engine_flush(&s->eng);   /* a closed pipe shows as EOF on its stdout */
                if (i_out >= 0 && p[i_out].revents && serve_engine_read(&s->eng, serve_jobs_on_line, s) == 0) {
                        int k = engine_ended(s);
                        if (k > 0 && serve_engine_start(&s->eng, s->o, e) < 0)
                                return -EIO;
                        if (k > 0)
                                s->engine_started_ms = serve_now_ms();
                        if (k < 0)
                                start_drain(s);
                }
                MHD_run(s->d);
                serve_http_enforce_read_deadline(s);
                if (drain_done(s))
                        return 0;
        }
}

int serve_loop_run(const struct serve_opts *o, int listen_fd, const char *token, size_t token_len,
                   const char *where, struct nsb_error *e)
{
        struct serve s = { .o = o, .token = token, .token_len = token_len };
        const union MHD_DaemonInfo *info;
        sigset_t stop;
        AUTOCLOSE int sfd = -1;
        int r;

        if (o->listen_kind == SERVE_LISTEN_UNIX)
                s.unix_path = o->unix_path;
        s.capacity = (o->jobs ? o->jobs : cpus()) + o->queue;
        /* SIGTERM/SIGINT/SIGHUP drain through a signalfd read in the loop;
         * SIGPIPE is ignored (a client gone, the engine gone: both are
         * seen as errors where they happen). */
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGHUP);
        signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0 || (sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                close(listen_fd);
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "signalfd");
        }
        if (serve_engine_start(&s.eng, o, e) < 0) {
                close(listen_fd);
                return -EIO;
        }
        s.engine_started_ms = serve_now_ms();
        s.d = serve_http_start(&s, listen_fd);
        if (!s.d || !(info = MHD_get_daemon_info(s.d, MHD_DAEMON_INFO_EPOLL_FD))) {
                close(listen_fd);
                serve_engine_close_input(&s.eng);
                serve_engine_reap(&s.eng);
                return nsb_fail(e, NSB_STAGE_PREPARE, EIO, "libmicrohttpd could not start on %s", where);
        }
        fprintf(stderr, "nsbox serve: listening on %s (-j %u, queue %u, %s)\n", where, o->jobs, o->queue,
                o->warm ? "warm" : "cold");
        r = loop(&s, sfd, info->epoll_fd, e);
        if (s.eng.pid > 0) {
                kill(s.eng.pid, SIGTERM);
                s.engine_status = serve_engine_reap(&s.eng);
        }
        serve_jobs_fail(&s, "the service stopped");
        MHD_stop_daemon(s.d);
        if (s.unix_path && s.drain == RUNNING)
                unlink(s.unix_path);
        if (r < 0)
                return r;
        if (s.engine_failed)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "the job engine (nsbox batch) ended at once (wait status %d): see its message above",
                                s.engine_status);
        return s.cancelled_some ? 1 : 0;
}

