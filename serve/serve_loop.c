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

static void kill_engines(struct serve *s)
{
        for (unsigned i = 0; i < SERVE_ENGINES; i++)
                if (s->eng[i].pid > 0)
                        kill(s->eng[i].pid, SIGTERM);
}

static void on_signal(struct serve *s, int sfd)
{
        struct signalfd_siginfo si;

        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si) {
                if (s->drain == RUNNING) {
                        start_drain(s);
                } else if (s->drain == DRAINING) {
                        /* A second signal: what is left is cancelled, each
                         * answered as cancelled when its engine has stopped
                         * (SIGTERM is batch's cancel). */
                        s->drain = CANCELLING;
                        s->cancelled_some = s->n_inflight > 0 || s->n_todo > 0;
                        fprintf(stderr, "nsbox serve: cancelling the %u job(s) left\n", s->n_inflight);
                        kill_engines(s);
                        serve_jobs_fail(s, -1, "cancelled: the service was stopped before this job ended");
                }
        }
}

/* A new engine for @profile in @slot, which then takes its new jobs. */
static int start_engine(struct serve *s, unsigned slot, unsigned profile, struct nsb_error *e)
{
        if (serve_engine_start(&s->eng[slot], s->o, profile, e) < 0)
                return -EIO;
        s->eng[slot].gen = s->next_gen++;
        s->eng[slot].started_ms = serve_now_ms();
        s->cur[profile] = slot;
        return 0;
}

void serve_loop_maybe_rotate(struct serve *s, unsigned profile)
{
        struct serve_engine *old = &s->eng[s->cur[profile]];
        struct nsb_error e;
        unsigned slot = s->cur[profile], ending = 0;

        if (!s->o->engine_rotate || old->sent < s->o->engine_rotate || s->drain != RUNNING)
                return;
        /* The engine remembers every id it ran (batch refuses a duplicate),
         * a few bytes a job: a service that runs for months hands its new
         * jobs to a new engine; the old one ends when its last jobs have. */
        for (unsigned i = 0; i < SERVE_ENGINES; i++)
                ending += s->eng[i].pid > 0 && s->eng[i].profile == profile && i != s->cur[profile];
        for (unsigned i = 0; i < SERVE_ENGINES && slot == s->cur[profile]; i++)
                if (s->eng[i].pid <= 0 && s->eng[i].out_fd < 0)
                        slot = i;
        if (slot == s->cur[profile] || ending >= SERVE_ENGINES_PER_PROFILE - 1)
                return;   /* three still ending: later */
        nsb_error_clear(&e);
        if (start_engine(s, slot, profile, &e) < 0) {
                s->cur[profile] = (unsigned) (old - s->eng);
                fprintf(stderr, "nsbox serve: a new engine could not start (%s); the current one goes on\n", e.msg);
                old->sent = 0;
                return;
        }
        if (old->olen == 0)
                serve_engine_close_input(old);
}

/* Engine @i has ended (its stdout closed). 1: the current engine ended on
 * its own and a new one must start; -1: it ended at once (its options, the
 * host): the service stops; 0: nothing to do. */
static int engine_ended(struct serve *s, unsigned i)
{
        struct serve_engine *eng = &s->eng[i];
        unsigned gen = eng->gen;
        bool current = i == s->cur[eng->profile], at_once = serve_now_ms() - eng->started_ms < 1000.0;
        int status = serve_engine_reap(eng);

        serve_jobs_fail(s, (int) gen, s->drain == CANCELLING ? "cancelled: the service was stopped before this job ended"
                                                            : "the job engine ended before this job did");
        if (!current)
                return 0;
        s->engine_status = status;
        if (s->drain != RUNNING)
                return 0;
        if (at_once) {
                s->engine_failed = true;
                return -1;
        }
        fprintf(stderr, "nsbox serve: the job engine ended (wait status %d); starting a new one\n", status);
        return 1;
}

static bool engines_running(const struct serve *s)
{
        for (unsigned i = 0; i < SERVE_ENGINES; i++)
                if (s->eng[i].pid > 0)
                        return true;
        return false;
}

static int drain_done(struct serve *s)
{
        if (s->drain == RUNNING || s->n_inflight || s->n_todo)
                return 0;
        for (unsigned i = 0; i < SERVE_ENGINES; i++)
                if (s->eng[i].in_fd >= 0 && s->eng[i].olen == 0)
                        serve_engine_close_input(&s->eng[i]);   /* no job left: the engine ends */
        if (engines_running(s))
                return 0;
        if (s->drained_at_ms == 0)
                s->drained_at_ms = serve_now_ms();
        return connections(s) == 0 || serve_now_ms() - s->drained_at_ms > DRAIN_GRACE_MS;
}

/* One turn's engine I/O: write what waits, read what came, and what an
 * ended engine means. */
static int engine_io(struct serve *s, const struct pollfd *p, const int *i_in, const int *i_out, struct nsb_error *e)
{
        for (unsigned i = 0; i < SERVE_ENGINES; i++) {
                struct serve_engine *eng = &s->eng[i];
                int k;

                if (i_in[i] >= 0 && p[i_in[i]].revents) {
                        (void) serve_engine_flush(eng);   /* a closed pipe shows as EOF on its stdout */
                        if (i != s->cur[eng->profile] && eng->olen == 0)
                                serve_engine_close_input(eng);   /* rotated out, all its lines sent */
                }
                if (i_out[i] < 0 || !p[i_out[i]].revents || serve_engine_read(eng, serve_jobs_on_line, s) != 0)
                        continue;
                k = engine_ended(s, i);
                if (k > 0 && start_engine(s, i, eng->profile, e) < 0)
                        return -EIO;
                if (k > 0)
                        serve_jobs_pump(s);   /* batch lines wait for it */
                if (k < 0)
                        start_drain(s);
        }
        return 0;
}

static int loop(struct serve *s, int sfd, int mhd_fd, struct nsb_error *e)
{
        for (;;) {
                struct pollfd p[2 + 2 * SERVE_ENGINES];
                int i_out[SERVE_ENGINES], i_in[SERVE_ENGINES], timeout = -1;
                nfds_t n = 0;
                MHD_UNSIGNED_LONG_LONG to;

                p[n++] = (struct pollfd){ sfd, POLLIN, 0 };
                p[n++] = (struct pollfd){ mhd_fd, POLLIN, 0 };
                for (unsigned i = 0; i < SERVE_ENGINES; i++) {
                        i_out[i] = i_in[i] = -1;
                        if (s->eng[i].out_fd >= 0)
                                p[i_out[i] = (int) n++] = (struct pollfd){ s->eng[i].out_fd, POLLIN, 0 };
                        if (s->eng[i].in_fd >= 0 && s->eng[i].olen)
                                p[i_in[i] = (int) n++] = (struct pollfd){ s->eng[i].in_fd, POLLOUT, 0 };
                }
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
                if (engine_io(s, p, i_in, i_out, e) < 0)
                        return -EIO;
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
        /* each engine (one per --profile) starts up to -j jobs from its zygotes */
        s.metrics.warm_slots = o->warm ? (s.capacity - o->queue) * (o->n_profiles ? o->n_profiles : 1) : 0;
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
        for (unsigned i = 0; i < SERVE_ENGINES; i++)
                s.eng[i] = (struct serve_engine){ .in_fd = -1, .out_fd = -1 };
        s.n_profiles = o->n_profiles ? o->n_profiles : 1;
        for (unsigned p = 0; p < s.n_profiles; p++)
                if (start_engine(&s, p, p, e) < 0) {
                        close(listen_fd);
                        kill_engines(&s);
                        for (unsigned i = 0; i < p; i++)
                                serve_engine_reap(&s.eng[i]);
                        return -EIO;
                }
        s.d = serve_http_start(&s, listen_fd);
        if (!s.d || !(info = MHD_get_daemon_info(s.d, MHD_DAEMON_INFO_EPOLL_FD))) {
                close(listen_fd);
                for (unsigned p = 0; p < s.n_profiles; p++) {
                        serve_engine_close_input(&s.eng[p]);
                        serve_engine_reap(&s.eng[p]);
                }
                return nsb_fail(e, NSB_STAGE_PREPARE, EIO, "libmicrohttpd could not start on %s", where);
        }
        fprintf(stderr, "nsbox serve: listening on %s (-j %u, queue %u, %s)\n", where, o->jobs, o->queue,
                o->warm ? "warm" : "cold");
        r = loop(&s, sfd, info->epoll_fd, e);
        kill_engines(&s);
        for (unsigned i = 0; i < SERVE_ENGINES; i++)
                if (s.eng[i].pid > 0 || s.eng[i].out_fd >= 0)
                        serve_engine_reap(&s.eng[i]);
        serve_jobs_fail(&s, -1, "the service stopped");
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

