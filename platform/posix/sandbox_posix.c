/* platform/posix/sandbox_posix.c — sbx_run (sandbox.h) on the posix platform:
 * reduced isolation only (posix.h), in POSIX calls.
 *
 * Order: check (strict and what cannot be enforced are refused before
 * anything exists) -> the private directory, environment and rlimit plan ->
 * pipes -> fork the keeper -> supervise (poll: records, stdout, stderr,
 * cancel; the wall deadline is poll's timeout) -> stop the keeper (close its
 * life pipe) -> reap -> remove the private directory -> result.
 * Single-threaded, like the Linux supervisor.
 */
#include "supervisor/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>   /* PR_SET_DUMPABLE: Linux's, absent elsewhere */
#endif

#include "config/hints.h"
#include "config/policy.h"
#include "platform/platform.h"
#include "platform/posix/posix.h"
#include "supervisor/env_plan.h"
#include "supervisor/outcome.h"
#include "supervisor/reduced.h"
#include "supervisor/run_io.h"
#include "config/stdin_plan.h"

#include "nsbox-config.h"
#include "util/cleanup.h"
#include "util/readfile.h"

#define DRAIN_AFTER_EXIT_MS 2000

struct psbx {
        const struct sbx_request *req;
        const struct nsb_config *cfg;
        struct run_result *res;

        struct reduced_plan red;        /* the private directory (supervisor/reduced.h) */
        char **argv;                    /* with /program/NAME at its real place */
        char **envp;
        char *exec_path;
        struct px_rlimit_plan rlimits;

        int status[2], life[2], out[2], err[2];
        int stdin_fd;
        pid_t keeper;
        pid_t prog;                     /* from the READY record: the program's group */

        char rbuf[sizeof(struct px_record)];
        size_t rlen;

        struct observed obs;
        struct timespec start;
};

/* The tasks the host will count against the program's RLIMIT_NPROC besides
 * its own, or -1 when this system cannot say (no Linux-style /proc): the
 * user's, and the keeper, one more, unless the program alone drops to
 * nobody (a root caller's keeper stays root). */
static long other_tasks(const struct psbx *s)
{
        unsigned long n;

        if (reduced_count_tasks(s->red.drop_to_nobody ? REDUCED_NOBODY_UID : getuid(), &n) < 0)
                return -1;
        return (long) n + (s->red.drop_to_nobody ? 0 : 1);
}

static int plan(struct psbx *s, struct nsb_error *e)
{
        const struct sbx_request *req = s->req;
        const struct nsb_config *cfg = s->cfg;
        struct utsname u;
        int r;

        if (req->argc == 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "empty command");
        if (uname(&u) < 0)
                snprintf(u.sysname, sizeof u.sysname, "an unknown system");
        if ((r = px_check(cfg, req->runner_dir, u.sysname, e)) < 0)
                return r;
        if ((r = run_check_dir("--workspace", cfg->workspace, e)) < 0)
                return r;
        if (req->python) {
                if (!(s->exec_path = strdup(cfg_interpreter(cfg))))
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                if (access(s->exec_path, X_OK) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "interpreter '%s'", s->exec_path);
        } else {
                const char *path = getenv("PATH");
                r = profile_which(req->argv[0], path ? path : SBX_PROGRAM_PATH, &s->exec_path, e);
                if (r < 0)
                        return r;
        }
        r = reduced_prepare(&s->red, cfg, req->program_name, req->program_data, req->program_len, e);
        if (r < 0)
                return r;
        r = reduced_argv(&s->red, req->program_name, req->argv, req->argc, &s->argv, e);
        if (r < 0)
                return r;
        px_rlimits_plan(cfg, cfg->pids_max ? other_tasks(s) : -1, &s->rlimits);
        return env_build(cfg, s->red.tmpdir, &s->envp, e);
}

/* Wait until @from can be read: 0, or a refusal when the run's wall time
 * has passed since it started (the copy counts against it: an input that
 * never ends must not hold nsbox past the limit the caller set) or the run
 * was cancelled. Also the wait for a nonblocking caller's description. */
static int copy_wait(struct psbx *s, int from, const char *what, struct nsb_error *e)
{
        for (;;) {
                double left = (double) s->cfg->wall_time_ms - run_elapsed_ms(&s->start);
                struct pollfd p[2] = { { from, POLLIN, 0 }, { s->req->cancel_fd, POLLIN, 0 } };
                int r;

                if (left <= 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ETIMEDOUT,
                                        "%s: the input did not end within the wall time (%llu ms): on this "
                                        "platform a stream is read whole before the program starts",
                                        what, (unsigned long long) s->cfg->wall_time_ms);
                r = poll(p, s->req->cancel_fd >= 0 ? 2 : 1, left > 86400e3 ? 86400000 : (int) left + 1);
                if (r < 0 && errno != EINTR)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: poll", what);
                if (r > 0 && p[1].revents)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ECANCELED, "%s: cancelled while reading the input", what);
                if (r > 0 && p[0].revents)
                        return 0;
        }
}

/* @from's bytes to its end into a private, unlinked file of nsbox's: the
 * program's stdin. This platform has neither sealed memfds nor the Linux
 * supervisor's pump, so a stream (--stdin - from a pipe, a terminal) is
 * read whole before the program starts (docs/platforms.md): within the
 * run's wall time, and (@cap > 0) refused past @cap bytes — the copy is a
 * file on nsbox's $TMPDIR, bounded as a file the program writes is (by
 * --file-size), so an endless source cannot fill the disk. */
static int copy_in(struct psbx *s, int from, const char *what, uint64_t cap, struct nsb_error *e)
{
        char buf[65536];
        uint64_t total = 0;
        int r;

        s->stdin_fd = plat_anon_fd("nsbox-stdin");
        if (s->stdin_fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: a file for its copy", what);
        for (;;) {
                ssize_t n;

                if ((r = copy_wait(s, from, what, e)) < 0)
                        return r;
                n = read(from, buf, sizeof buf);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;   /* EAGAIN: the caller's description is nonblocking */
                if (n < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: read", what);
                if (n == 0)
                        break;
                total += (uint64_t) n;
                if (cap > 0 && total > cap)
                        return nsb_fail(e, NSB_STAGE_PREPARE, EFBIG,
                                        "%s: more than %llu bytes (--file-size): on this platform a stream is "
                                        "copied to disk whole before the program starts",
                                        what, (unsigned long long) cap);
                if ((r = write_all(s->stdin_fd, buf, (size_t) n)) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, -r, "%s: copy", what);
        }
        if (lseek(s->stdin_fd, 0, SEEK_SET) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "%s: rewind its copy", what);
        return 0;
}

/* Never a description the caller opened, nor one of the caller's file
 * (config/stdin_plan.h): a copy, or /dev/null opened anew. */
static int open_stdin(struct psbx *s, struct nsb_error *e)
{
        const struct sbx_request *req = s->req;
        AUTOCLOSE int path_fd = -1;
        AUTOCLOSE int file = -1;
        struct stdin_src src;
        struct stat st;
        const char *why;
        int r;

        if (req->stdin_data) {
                /* An unlinked file of its own: the program reads exactly these bytes. */
                s->stdin_fd = plat_anon_fd("nsbox-stdin");
                if (s->stdin_fd < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "a file for stdin");
                if ((r = write_all(s->stdin_fd, req->stdin_data, req->stdin_len)) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, -r, "write stdin");
                if (lseek(s->stdin_fd, 0, SEEK_SET) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "rewind stdin");
                return 0;
        }
        if ((r = cfg_stdin_describe(s->cfg, &path_fd, &src, e)) < 0)
                return r;
        switch (stdin_plan(&src, &why)) {
        case STDIN_REFUSE:
                return cfg_stdin_refused(s->cfg, why, e);
        case STDIN_EMPTY:
                s->stdin_fd = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                return s->stdin_fd < 0 ? nsb_fail(e, NSB_STAGE_PREPARE, errno, "open /dev/null for stdin") : 0;
        case STDIN_COPY:
        case STDIN_PUMP:
                break;
        }
        /* A regular file's size is known and finite; a stream's is not. */
        if (src.dash)
                return copy_in(s, STDIN_FILENO, "--stdin -", S_ISREG(src.mode) ? 0 : s->cfg->file_size_bytes, e);
        /* By name: a regular file (stdin_plan refused the rest). Opened
         * nonblocking so a FIFO swapped in since the look cannot hang. */
        file = open(s->cfg->stdin_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (file < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--stdin '%s'", s->cfg->stdin_path);
        if (fstat(file, &st) < 0 || !S_ISREG(st.st_mode))
                return nsb_fail(e, NSB_STAGE_PREPARE, EINVAL, "--stdin '%s' is no longer a regular file",
                                s->cfg->stdin_path);
        return copy_in(s, file, "--stdin", 0, e);
}

static int open_fds(struct psbx *s, struct nsb_error *e)
{
        if (plat_pipe_cloexec(s->status) < 0 || plat_pipe_cloexec(s->life) < 0 || plat_pipe_cloexec(s->out) < 0 ||
            plat_pipe_cloexec(s->err) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "pipe");
        return open_stdin(s, e);
}

static int spawn(struct psbx *s, struct nsb_error *e)
{
        struct px_child c = {
                .status_fd = s->status[1],
                .life_fd = s->life[0],
                .stdio = { s->stdin_fd, s->out[1], s->err[1] },
                .channel_fd = s->req->channel_fd > 2 ? s->req->channel_fd : -1,
                .exec_path = s->exec_path,
                .argv = s->argv,
                .envp = s->envp,
                .workdir = s->red.workdir,
                .drop_to_nobody = s->red.drop_to_nobody,
                .rlimits = &s->rlimits,
                .fail_stage = run_test_fail_stage(),
        };

        /* nsbox holds the caller's descriptions (its own 0-2, whatever the
         * caller left open): for an unprivileged caller the program is the
         * same user, who may ptrace, pidfd_getfd and open the /proc entries
         * of any dumpable process of theirs. Not dumpable where the system
         * can say so (Linux); the keeper inherits it and keeps none of
         * them (keeper.c). Elsewhere nsbox itself stays reachable:
         * docs/platforms.md. */
#ifdef PR_SET_DUMPABLE
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "PR_SET_DUMPABLE (nsbox, posix platform)");
#endif
        clock_gettime(CLOCK_MONOTONIC, &s->start);
        s->keeper = fork();
        if (s->keeper < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "fork (reduced isolation, posix platform)");
        if (s->keeper == 0) {
                /* Only nsbox may hold the life pipe's write end: its close
                 * (or nsbox's death) is how the keeper learns to stop. */
                close(s->life[1]);
                close(s->status[0]);
                close(s->out[0]);
                close(s->err[0]);
                px_keeper_main(&c);
        }
        close_fd(&s->status[1]);
        close_fd(&s->life[0]);
        close_fd(&s->out[1]);
        close_fd(&s->err[1]);
        close_fd(&s->stdin_fd);
        return 0;
}

static void stop(struct psbx *s, enum kill_reason why)
{
        if (s->obs.killed == KILL_NONE)
                s->obs.killed = why;
        close_fd(&s->life[1]);   /* the keeper kills the group */
}

static int read_stream(struct psbx *s, int *fd, struct run_stream *st, int relay_fd)
{
        int r = run_read_stream(fd, st, s->cfg->output_limit_bytes, s->req->relay ? relay_fd : -1, s->res);

        if (r > 0)
                stop(s, KILL_OUTPUT);
        return r < 0 ? r : 0;
}

static void handle_record(struct psbx *s, const struct px_record *m)
{
        if (m->version != PX_WIRE_VERSION) {
                struct nsb_error e;
                nsb_fail(&e, NSB_STAGE_SUPERVISE, EPROTO, "malformed record from the keeper");
                run_take_error(s->res, &s->obs.setup_error, &e);
                return;
        }
        switch (m->kind) {
        case PX_READY:
                s->obs.program_started = true;
                s->prog = m->pid;
                run_take_ledger(s->res, &m->ledger);
                break;
        case PX_ERROR:
                run_take_error(s->res, &s->obs.setup_error, &m->error);
                break;
        case PX_EXIT:
                s->obs.got_exit = true;
                s->obs.wait_status = m->wait_status;
                s->res->cpu_ms = (double) m->cpu_us / 1e3;
                s->res->peak_memory_bytes = m->peak_rss_bytes;
                s->res->peak_memory_known = true;
                break;
        default:
                break;
        }
}

/* Records arrive as a byte stream: whole ones are handled, a part waits. */
static void read_records(struct psbx *s)
{
        ssize_t n = read(s->status[0], s->rbuf + s->rlen, sizeof s->rbuf - s->rlen);

        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return;
        if (n <= 0) {
                close_fd(&s->status[0]);   /* the keeper (and the program before exec) are done */
                return;
        }
        s->rlen += (size_t) n;
        if (s->rlen == sizeof s->rbuf) {
                struct px_record m;
                memcpy(&m, s->rbuf, sizeof m);
                s->rlen = 0;
                handle_record(s, &m);
        }
}

static int supervise(struct psbx *s, struct nsb_error *e)
{
        const double deadline = (double) s->cfg->wall_time_ms;
        double drain_deadline = -1;

        ledger_set(&s->res->ledger, PROT_WALL_TIME, "supervisor");
        ledger_set(&s->res->ledger, PROT_OUTPUT, "supervisor");
        while (s->status[0] >= 0 || s->out[0] >= 0 || s->err[0] >= 0) {
                struct pollfd p[4];
                int n = 0, i_st = -1, i_out = -1, i_err = -1, i_cancel = -1, timeout, r;
                double now = run_elapsed_ms(&s->start);

                if (s->status[0] < 0 && drain_deadline < 0)
                        drain_deadline = now + DRAIN_AFTER_EXIT_MS;
                if (drain_deadline >= 0 && now >= drain_deadline)
                        break;   /* a writer that left the group outlived the program: stop waiting */
                if (s->status[0] >= 0 && s->obs.killed == KILL_NONE && now >= deadline) {
                        stop(s, KILL_WALL_TIME);
                        continue;
                }
                if (s->status[0] >= 0)
                        p[i_st = n++] = (struct pollfd){ s->status[0], POLLIN, 0 };
                if (s->out[0] >= 0)
                        p[i_out = n++] = (struct pollfd){ s->out[0], POLLIN, 0 };
                if (s->err[0] >= 0)
                        p[i_err = n++] = (struct pollfd){ s->err[0], POLLIN, 0 };
                if (s->req->cancel_fd >= 0 && s->obs.killed == KILL_NONE)
                        p[i_cancel = n++] = (struct pollfd){ s->req->cancel_fd, POLLIN, 0 };
                if (drain_deadline >= 0)
                        timeout = (int) (drain_deadline - now) + 1;
                else if (s->obs.killed == KILL_NONE)   /* at most a day a poll: no int overflow */
                        timeout = deadline - now > 86400e3 ? 86400000 : (int) (deadline - now) + 1;
                else
                        timeout = -1;
                r = poll(p, (nfds_t) n, timeout);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_SUPERVISE, errno, "poll");
                if (i_out >= 0 && p[i_out].revents && read_stream(s, &s->out[0], &s->res->out, STDOUT_FILENO) < 0)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "capturing stdout");
                if (i_err >= 0 && p[i_err].revents && read_stream(s, &s->err[0], &s->res->err, STDERR_FILENO) < 0)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "capturing stderr");
                if (i_cancel >= 0 && p[i_cancel].revents)
                        stop(s, KILL_CANCEL);
                if (i_st >= 0 && p[i_st].revents)
                        read_records(s);
        }
        return 0;
}

/* The keeper has reported (or died): reap it. Killed without reporting (by
 * the program, which shares the caller's uid here), it left the group
 * alive: kill it from here, by the id the READY record gave. */
static void reap_keeper(struct psbx *s)
{
        int status = 0;

        if (s->keeper <= 0)
                return;
        if (!s->obs.got_exit && s->prog > 0)
                (void) kill(-s->prog, SIGKILL);
        close_fd(&s->life[1]);
        while (waitpid(s->keeper, &status, 0) < 0 && errno == EINTR)
                ;
        s->obs.init_status = status;
        s->keeper = 0;
}

static void cleanup(struct psbx *s)
{
        if (s->keeper > 0) {
                /* Never leave a run behind, whatever happened above. */
                close_fd(&s->life[1]);
                reap_keeper(s);
        }
        close_fd(&s->status[0]);
        close_fd(&s->status[1]);
        close_fd(&s->life[0]);
        close_fd(&s->life[1]);
        close_fd(&s->out[0]);
        close_fd(&s->out[1]);
        close_fd(&s->err[0]);
        close_fd(&s->err[1]);
        close_fd(&s->stdin_fd);
        env_free(s->envp);
        free(s->exec_path);
        reduced_argv_free(s->argv);
        reduced_cleanup(&s->red);   /* every process of the run is gone by now */
}

/* No cgroups on this platform: nothing to obtain, the limits are rlimits. */
int sbx_obtain_cgroup(const struct nsb_config *cfg, struct cg_obtained *ret, struct nsb_error *e)
{
        (void) cfg;
        (void) e;
        memset(ret, 0, sizeof *ret);
        ret->backend = CG_BACKEND_RLIMIT;
        ret->origin = CG_ORIGIN_NONE;
        return 0;
}

int sbx_run(const struct sbx_request *req, struct run_result *ret)
{
        struct psbx s = {
                .req = req, .cfg = req->cfg, .res = ret,
                .status = { -1, -1 }, .life = { -1, -1 }, .out = { -1, -1 }, .err = { -1, -1 },
                .stdin_fd = -1,
        };
        struct nsb_error *e = &ret->error;
        int r;

        memset(ret, 0, sizeof *ret);
        ret->isolation = req->cfg->isolation;
        cfg_policy_sha256(req->cfg, ret->policy_sha256);
        if (req->program_sha256)
                snprintf(ret->program_sha256, sizeof ret->program_sha256, "%s", req->program_sha256);
        ledger_init(&ret->ledger);   /* every entry "unavailable" until a step enforces it */
        clock_gettime(CLOCK_MONOTONIC, &s.start);
        r = plan(&s, e);
        if (run_copy_command(ret, s.argv ? s.argv : req->argv, req->argc) < 0) {
                nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                goto fail;
        }
        if (r < 0 || (r = open_fds(&s, e)) < 0 || (r = spawn(&s, e)) < 0 || (r = supervise(&s, e)) < 0)
                goto fail;
        reap_keeper(&s);
        ret->wall_ms = run_elapsed_ms(&s.start);
        /* RLIMIT_CPU is the only judge of CPU time here, per process: a
         * SIGXCPU death is its soft limit's; a SIGKILL one (its hard limit,
         * a second later, for a program that caught SIGXCPU) is when the
         * CPU read reaches the soft limit (posix_plan.c). */
        if (ret->cpu_ms >= (double) cfg_cpu_time_ms(s.cfg))
                s.obs.cpu_over = true;
        if (s.obs.got_exit && WIFSIGNALED(s.obs.wait_status) &&
            (WTERMSIG(s.obs.wait_status) == SIGXCPU ||
             (WTERMSIG(s.obs.wait_status) == SIGKILL && ret->cpu_ms >= (double) px_cpu_rlimit_s(s.cfg) * 1000.0)))
                s.obs.cpu_over = true;
        cleanup(&s);
        outcome_decide(&s.obs, ret);
        /* the value that stopped it, for every front end's message (config/hints.h) */
        if (ret->status == RUN_LIMIT)
                (void) cfg_limit_value(s.cfg, run_limit_name(ret->limit), ret->limit_value, sizeof ret->limit_value);
        return 0;
fail:
        stop(&s, KILL_NONE);
        if (ret->wall_ms == 0)
                ret->wall_ms = run_elapsed_ms(&s.start);
        cleanup(&s);
        ret->status = RUN_ERROR;
        if (ret->error.stage == NSB_STAGE_NONE)
                ret->error.stage = NSB_STAGE_SUPERVISE;
        return 0;
}
