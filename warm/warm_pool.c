/* warm/warm_pool.c — see warm_pool.h. Syscall layer. */
#include "warm/warm_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "landlock/landlock.h"
#include "program/program.h"
#include "supervisor/sandbox.h"
#include "supervisor/wire.h"
#include "util/cleanup.h"
#include "util/portable.h"
#include "util/readfile.h"
#include "util/selfexe.h"
#include "util/sys.h"

#include "nsbox-config.h"

#define WARM_LIB_FILE "libnsbox_warm.so"
#define WARM_ZYGOTE_FILE "zygote.py"
#define HELLO_TIMEOUT_MS 20000
#define KEEPER_REPORT_MS 5000   /* for the keeper's line once its zygote ended unready */
#define WARM_START_TRIES 3      /* failed starts in a row before jobs run cold for a while */
/* The zygote's own sandbox: limits for a process that lives the whole batch
 * and runs nothing of a job's (each job has its own). */
#define ZYGOTE_TIME_MS (24ull * 3600 * 1000)
#define ZYGOTE_MEMORY (1ull << 40)      /* the top of the memory range: under the rlimit backend a job
                                           can only lower the RLIMIT_AS it inherits, so the zygote's
                                           must be above every job's own (it runs none of their code) */
#define ZYGOTE_PIDS 4096         /* the zygote's own, above its jobs' (zygote_pids) */
#define ZYGOTE_OUTPUT (64u << 10)
#define ZYGOTE_FILE_SIZE (1ull << 40)   /* the top of the file-size range: a job's own limit is lower */

/* Under the rlimit backend a job's tasks are counted at two levels of
 * RLIMIT_NPROC's per-user counter: its own namespace's (its --pids), and the
 * zygote's, whose maximum is the zygote's RLIMIT_NPROC when it made the
 * job's namespace (kernel/ucount.c, get_userns_rlimit_max) — one counter
 * for every job of the generation at once. So the zygote's limit is every
 * slot's --pids and its own on top: that level never refuses a job's fork
 * because of another job (ns/ucount.h, docs/security.md). A job line with a
 * --pids above the batch's is the residual. */
static uint64_t zygote_pids(const struct warm_pool *p)
{
        uint64_t n = ZYGOTE_PIDS + (uint64_t) (p->slots ? p->slots : 1) * p->cfg->pids_max;

        return n > (1u << 22) ? (1u << 22) : n;
}

/* Landlock ABI 6 scopes abstract unix sockets and signals to the domain:
 * what keeps jobs apart in their shared network namespace. */
#define WARM_LANDLOCK_ABI 6

/* The Landlock ABI warm starts require; a build with test hooks may lower
 * it (NSBOX_TEST_WARM_LANDLOCK_ABI) to test the rest of a warm start on a
 * kernel without the scopes (the VM suite's 6.1): the result still says
 * which Landlock was applied, and nothing else is loosened. */
static int warm_landlock_min(void)
{
#if NSBOX_TEST_HOOKS
        const char *v = getenv("NSBOX_TEST_WARM_LANDLOCK_ABI");
        if (v && v[0] >= '1' && v[0] <= '9' && !v[1])
                return v[0] - '0';
#endif
        return WARM_LANDLOCK_ABI;
}

/* Why a job with this configuration cannot start warm at all, or NULL. */
static const char *warm_cold_reason(const struct nsb_config *cfg, bool python)
{
        if (!python)
                return "not a python job";
        if (cfg->isolation == NSB_ISOLATION_REDUCED)
                return "isolation reduced";
        if (cfg->network != NSB_NETWORK_NONE)
                return "network loopback (jobs would share it)";
        if (ll_abi_version() < warm_landlock_min())
                return "Landlock ABI < 6 (no abstract-socket and signal scoping between jobs)";
        return NULL;
}

static bool has_file(const char *dir, const char *name)
{
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        return access(p, R_OK) == 0;
}

int warm_find_dir(char *ret, size_t size, struct nsb_error *e)
{
        const char *env = getenv("NSBOX_WARM_DIR");
        const char *dir = NULL;

        (void) size;
        if (env && env[0])
                dir = env;
        else if (nsb_running_from_build_tree() && has_file(NSBOX_BUILD_ROOT "/warm", WARM_LIB_FILE))
                dir = NSBOX_BUILD_ROOT "/warm";
        else
                dir = NSBOX_WARM_DIR;
        if (!has_file(dir, WARM_LIB_FILE) || !has_file(dir, WARM_ZYGOTE_FILE) || !realpath(dir, ret))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOENT, "no %s and %s in %s%s", WARM_LIB_FILE, WARM_ZYGOTE_FILE,
                                dir, env && env[0] ? " (NSBOX_WARM_DIR)" : "");
        return 0;
}

void warm_pool_init(struct warm_pool *p, const struct nsb_config *cfg, const struct host_set *python_host,
                    int cancel_fd)
{
        memset(p, 0, sizeof *p);
        p->cfg = cfg;
        p->python_host = python_host;
        p->cancel_fd = cancel_fd;
        p->rotate = cfg->warm_rotate ? cfg->warm_rotate : NSB_WARM_ROTATE_DEFAULT;
        p->ctl = -1;
        p->slots = cfg->jobs ? cfg->jobs : 1;
}

/* The zygote's exit status when a [python] preload failed to import or left
 * a thread running (warm/zygote.py's _PRELOAD_FAILED): its last stderr line
 * says which and why. */
#define ZYGOTE_EXIT_PRELOAD 4
/* ... when a directory of its sys.path is on a writable mount (a read-write
 * --bind): a job could write code there that a zygote's start-up would run
 * without seccomp or Landlock. */
#define ZYGOTE_EXIT_PATH 5
/* The first byte of the keeper's report: a start that may work when tried
 * again, one that will fail the same way (a preload), or one that must not
 * be tried again in this batch (a zygote would run what the jobs wrote). */
#define REPORT_AGAIN 'A'
#define REPORT_SAME 'S'
#define REPORT_NEVER 'N'

/* The harness's second line: _NSBOX_PRELOAD = ("numpy", ...). The names are
 * dotted ASCII identifiers (opt_preload checked every source of them), so
 * each is a string literal as it stands. NULL when out of memory. */
static char *preload_line(const struct nsb_config *cfg)
{
        size_t size = 32;
        char *s;

        for (size_t i = 0; i < cfg->n_preload; i++)
                size += strlen(cfg->preload[i]) + 4;
        if (!(s = malloc(size)))
                return NULL;
        snprintf(s, size, "_NSBOX_PRELOAD = (");
        for (size_t i = 0; i < cfg->n_preload; i++)
                nsb_appendf(s, size, "\"%s\", ", cfg->preload[i]);
        nsb_appendf(s, size, ")\n");
        return s;
}

/* The keeper: runs the zygote's sandbox until the zygote ends, then writes
 * one line (why it ended) on @report, after its kind (REPORT_*). */
static __attribute__((noreturn)) void keeper_main(const struct warm_pool *p, int ctl, int report, pid_t parent)
{
        struct nsb_config cfg = *p->cfg;
        char dir[PATH_MAX], lib[PATH_MAX + 32], zyg[PATH_MAX + 32];
        AUTOFREE char *text = NULL, *prog_text = NULL, *preload = preload_line(p->cfg);
        size_t len = 0;
        struct prog_source src = { .kind = PROG_FILE, .name = "main.py", .stdin_mode = PROG_STDIN_PER_RUN,
                                   .stdin_data = "", .stdin_len = 0 };
        struct prog prog = { 0 };
        struct run_result r;
        struct nsb_error e;
        char report_line[NSB_ERROR_MSG_MAX + 257], *line = report_line + 1;   /* after its kind */
        const size_t size = sizeof report_line - 1;
        int n;

        nsb_error_clear(&e);
        report_line[0] = REPORT_AGAIN;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(1);
        if (warm_find_dir(dir, sizeof dir, &e) < 0)
                goto fail;
        snprintf(lib, sizeof lib, "%s/%s", dir, WARM_LIB_FILE);
        /* (the harness loads it from WARM_ZYGOTE_CODE_DIR, where its directory is mounted) */
        snprintf(zyg, sizeof zyg, "%s/%s", dir, WARM_ZYGOTE_FILE);
        if (read_file(zyg, 1u << 20, &text, &len, &e) < 0)
                goto fail;
        /* The harness learns where the library is mounted from its first
         * line, what to preload from its second. */
        n = preload ? asprintf(&prog_text, "_NSBOX_WARM_LIB = %c%s/%s%c\n%s%.*s", '"', WARM_ZYGOTE_CODE_DIR,
                               WARM_LIB_FILE, '"', preload, (int) len, text) : -1;
        if (n < 0) {
                nsb_fail(&e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                goto fail;
        }
        cfg.wall_time_ms = ZYGOTE_TIME_MS;
        cfg.cpu_time_ms = ZYGOTE_TIME_MS;
        cfg.memory_bytes = ZYGOTE_MEMORY;
        cfg.pids_max = zygote_pids(p);
        cfg.output_limit_bytes = ZYGOTE_OUTPUT;
        cfg.file_size_bytes = ZYGOTE_FILE_SIZE;
        src.data = prog_text;
        src.len = (size_t) n;
        if (prog_build(&cfg, &src, &prog, &e) < 0)
                goto fail;
        prog.req.python_host = p->python_host && p->python_host->n ? p->python_host : NULL;
        prog.req.channel_fd = ctl;
        prog.req.give_channel = true;   /* the zygote's end alone: its death hangs up the pool's */
        prog.req.start = SBX_ZYGOTE;
        prog.req.warm_lib = lib;
        prog.req.runner_dir = dir;
        prog.req.cancel_fd = p->cancel_fd;
        prog.req.serial = 1000000u + p->generations;
        sbx_run(&prog.req, &r);
        if (r.status == RUN_ERROR)
                snprintf(line, size, "%s", r.error.msg);
        else {
                /* the end of its stderr: a traceback's last line says why */
                size_t k = r.err.kept, from = k > 240 ? k - 240 : 0;
                while (k > 0 && (r.err.text[k - 1] == '\n'))
                        k--;
                for (size_t i = k; i > from; i--)
                        if (r.err.text[i - 1] == '\n') {
                                from = i;
                                break;
                        }
                if (r.status == RUN_EXITED && (r.exit_code == ZYGOTE_EXIT_PRELOAD || r.exit_code == ZYGOTE_EXIT_PATH) &&
                    k > from) {
                        /* "preload numpy: ModuleNotFoundError: ...": every
                         * zygote of this batch would end the same way */
                        report_line[0] = r.exit_code == ZYGOTE_EXIT_PATH ? REPORT_NEVER : REPORT_SAME;
                        snprintf(line, size, "%.*s", (int) (k - from), r.err.text + from);
                } else
                        snprintf(line, size, "the zygote ended (%s %d)%s%.*s",
                                 r.status == RUN_SIGNALED ? "signal" : "exit",
                                 r.status == RUN_SIGNALED ? r.signal : r.exit_code, k > from ? ": " : "",
                                 (int) (k - from), k > from ? r.err.text + from : "");
        }
        /* one write: the pool may read it as soon as it is there */
        (void) !write(report, report_line, 1 + strlen(line));
        _exit(0);
fail:
        snprintf(line, size, "%s", e.msg);
        (void) !write(report, report_line, 1 + strlen(line));
        _exit(0);
}

/* A zygote that did not become ready: p->reason from its keeper's report
 * on @report (or the timeout, or nothing said); -1, or -2 when the next
 * start would fail the same way (a preload), -3 when none may be started
 * again in this batch (a writable sys.path). */
static int unready(struct warm_pool *p, int report, bool timed_out)
{
        char why[300] = "", names[200] = "";
        ssize_t k = read(report, why, sizeof why - 1);

        why[k > 0 ? k : 0] = '\0';
        for (size_t i = 0; i < p->cfg->n_preload; i++)
                nsb_appendf(names, sizeof names, "%s%s", i ? ", " : "", p->cfg->preload[i]);
        if (why[0] && why[1])
                snprintf(p->reason, sizeof p->reason, "zygote unavailable: %s", why + 1);
        else if (timed_out)
                snprintf(p->reason, sizeof p->reason, "zygote unavailable: it did not start within 20 s%s%s%s",
                         names[0] ? " (it preloads " : "", names, names[0] ? ")" : "");
        else
                snprintf(p->reason, sizeof p->reason, "zygote unavailable: it ended before it was ready");
        if (why[0] == REPORT_NEVER)
                return -3;
        /* a start that timed out while it preloaded: most likely a preload
         * that hangs, and would again */
        return why[0] == REPORT_SAME || (!why[0] && timed_out && names[0]) ? -2 : -1;
}

/* Start a generation and wait for its HELLO. 0, or unready()'s -1, -2, -3. */
static int start_generation(struct warm_pool *p)
{
        int sv[2], rp[2];
        pid_t keeper, parent = getpid();
        struct pollfd pf[2];
        int r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                snprintf(p->reason, sizeof p->reason, "zygote unavailable: socketpair: %s", strerror(errno));
                return -1;
        }
        if (pipe2(rp, O_CLOEXEC) < 0) {
                snprintf(p->reason, sizeof p->reason, "zygote unavailable: pipe: %s", strerror(errno));
                close(sv[0]);
                close(sv[1]);
                return -1;
        }
        keeper = fork();
        if (keeper < 0) {
                snprintf(p->reason, sizeof p->reason, "zygote unavailable: fork: %s", strerror(errno));
                close(sv[0]);
                close(sv[1]);
                close(rp[0]);
                close(rp[1]);
                return -1;
        }
        if (keeper == 0) {
                close(sv[0]);
                close(rp[0]);
                if (p->ctl >= 0)
                        close(p->ctl);
                keeper_main(p, sv[1], rp[1], parent);
        }
        close(sv[1]);
        close(rp[1]);
        /* The keeper's sandbox names its run cgroup after its own pid and
         * the serial keeper_main gave it: on cgroup v2 its jobs' cgroups go
         * inside it (cg_spec.in_run; checked there, never assumed). */
        if (cg_format_run_name(keeper, 1000000u + p->generations, p->cgroup, sizeof p->cgroup) < 0)
                p->cgroup[0] = '\0';
        p->generations++;
        pf[0] = (struct pollfd){ sv[0], POLLIN, 0 };
        pf[1] = (struct pollfd){ rp[0], POLLIN, 0 };
        do
                r = poll(pf, 2, HELLO_TIMEOUT_MS);
        while (r < 0 && errno == EINTR);
        if (r > 0 && (pf[0].revents & POLLIN)) {
                struct wire_msg m;
                ssize_t k = recv(sv[0], &m, sizeof m, MSG_DONTWAIT);
                if (k == (ssize_t) sizeof m && m.version == WIRE_VERSION && m.kind == WIRE_HELLO) {
                        close(rp[0]);
                        p->ctl = sv[0];
                        p->keeper = keeper;
                        p->jobs = 0;
                        return 0;
                }
        }
        /* No zygote: say why (the keeper's line), and leave nothing. A
         * zygote that ended hangs up its socket before its keeper has
         * reported why (sbx_run still ends the sandbox): the line is waited
         * for, a little. */
        if (r > 0 && !(pf[1].revents & (POLLIN | POLLHUP))) {
                pf[1].revents = 0;
                while (poll(&pf[1], 1, KEEPER_REPORT_MS) < 0 && errno == EINTR)
                        ;
        }
        kill(keeper, SIGKILL);
        while (waitpid(keeper, NULL, 0) < 0 && errno == EINTR)
                ;
        r = unready(p, rp[0], r == 0);
        close(rp[0]);
        close(sv[0]);
        return r;
}

static void retire(struct warm_pool *p)
{
        close_fd(&p->ctl);
        if (p->keeper > 0) {
                if (p->n_retired < WARM_MAX_RETIRED)
                        p->retired[p->n_retired++] = p->keeper;
                else
                        while (waitpid(p->keeper, NULL, 0) < 0 && errno == EINTR)
                                ;
        }
        p->keeper = 0;
}

/* The zygote's end of the control socket is gone (it died; its keeper may
 * not have ended yet). */
static bool zygote_gone(int ctl)
{
        struct pollfd pf = { ctl, 0, 0 };

        return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLHUP | POLLERR));
}

/* Reaped now, or no longer ours to reap. */
static bool keeper_ended(pid_t keeper)
{
        pid_t r;

        while ((r = waitpid(keeper, NULL, WNOHANG)) < 0 && errno == EINTR)
                ;
        return r > 0 || (r < 0 && errno == ECHILD);
}

void warm_pool_poll(struct warm_pool *p)
{
        for (size_t i = 0; i < p->n_retired;) {
                if (keeper_ended(p->retired[i])) {
                        p->retired[i] = p->retired[--p->n_retired];
                        continue;
                }
                i++;
        }
}

int warm_pool_take(struct warm_pool *p, bool python, const char **ret_reason)
{
        if ((*ret_reason = warm_cold_reason(p->cfg, python)))
                return -1;
        *ret_reason = p->reason;   /* when no zygote can be had, below */
        warm_pool_poll(p);
        if (p->keeper > 0 && keeper_ended(p->keeper)) {
                /* The zygote's sandbox died: its jobs ended with an error; a
                 * new generation takes the next ones. */
                p->keeper = 0;
                close_fd(&p->ctl);
        } else if (p->keeper > 0 && zygote_gone(p->ctl)) {
                retire(p);   /* the zygote died: its keeper ends soon, warm_pool_poll reaps it */
        }
        if (p->keeper > 0 && p->jobs >= p->rotate)
                retire(p);
        if (p->keeper == 0) {
                /* A zygote killed while it started is replaced at once; a
                 * start that keeps failing (a missing library, say) is not
                 * retried for every job: after WARM_START_TRIES failures in
                 * a row the reason stands for a rotation's worth of jobs;
                 * a writable sys.path, for the rest of the batch (UINT_MAX). */
                if (p->cold_left > 0) {
                        if (p->cold_left != UINT_MAX)
                                p->cold_left--;
                        return -1;
                }
                for (;;) {
                        int r;

                        p->reason[0] = '\0';
                        if ((r = start_generation(p)) == 0) {
                                p->failed_starts = 0;
                                break;
                        }
                        if (++p->failed_starts >= WARM_START_TRIES || r <= -2) {
                                p->failed_starts = 0;
                                p->cold_left = r == -3 ? UINT_MAX : p->rotate - 1;
                                return -1;
                        }
                }
        }
        p->jobs++;
        return p->ctl;
}

const char *warm_pool_cgroup(const struct warm_pool *p)
{
        return p->keeper > 0 && p->cgroup[0] ? p->cgroup : NULL;
}

void warm_pool_stop(struct warm_pool *p)
{
        retire(p);
        for (size_t i = 0; i < p->n_retired; i++)
                while (waitpid(p->retired[i], NULL, 0) < 0 && errno == EINTR)
                        ;
        p->n_retired = 0;
}
