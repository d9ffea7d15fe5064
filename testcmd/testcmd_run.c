/* testcmd/testcmd_run.c — `nsbox test`: the driver. Syscall layer.
 *
 * Finds the runner (harness/nsbox_test_runner.py), makes the results channel
 * (a pipe; the write end becomes the runner's fd 3), runs the runner in one
 * sandbox through sbx_run() and hands the channel's bytes and the result to
 * the pure functions of testcmd_plan.c.
 *
 * The channel is drained while the sandbox runs by a forked helper process
 * that copies it into an anonymous file (platform.h: a memfd on Linux;
 * capped at CHANNEL_MAX, the rest is read and dropped), so a runner with many long messages never blocks on a full pipe
 * and so never turns into a false wall-time limit. A helper process rather
 * than a thread: sbx_run() clones, and a clone taken while another thread
 * holds the malloc lock would inherit it held.
 */
#include "testcmd/testcmd_internal.h"
#include "config/policy.h"
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nsbox-config.h"
#include "program/program.h"
#include "supervisor/sandbox.h"
#include "testcmd/testcmd-paths.h"
#include "util/cleanup.h"
#include "util/json_cleanup.h"
#include "util/portable.h"
#include "util/resultfile.h"
#include "util/selfexe.h"
#include "report/junit.h"

#define RUNNER_FILE "nsbox_test_runner.py"
#define CHANNEL_MAX (4u << 20)        /* bytes of channel kept; the runner clips its messages */
#define CHANNEL_PIPE_SIZE (1 << 20)   /* a big pipe: fewer wake-ups of the helper */

static bool has_runner(const char *dir)
{
        char path[PATH_MAX];

        if (snprintf(path, sizeof path, "%s/" RUNNER_FILE, dir) >= (int) sizeof path)
                return false;
        return access(path, R_OK) == 0;
}

/* NSBOX_RUNNER_DIR; else, for the build tree's binary only, the source
 * tree's harness/; else the data dir of the configured prefix
 * (DATADIR/nsbox/harness, where meson install puts it). */
static int find_runner_dir(char *ret, size_t size, struct nsb_error *e)
{
        const char *env = getenv("NSBOX_RUNNER_DIR");

        (void) size;
        if (env && env[0]) {
                if (!has_runner(env))
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOENT, "NSBOX_RUNNER_DIR '%s' has no readable %s",
                                        env, RUNNER_FILE);
                if (!realpath(env, ret))
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "NSBOX_RUNNER_DIR '%s'", env);
                return 0;
        }
        if (nsb_running_from_build_tree() && has_runner(NSBOX_RUNNER_SOURCE_DIR) && realpath(NSBOX_RUNNER_SOURCE_DIR, ret))
                return 0;
        if (has_runner(NSBOX_DATADIR "/harness") && realpath(NSBOX_DATADIR "/harness", ret))
                return 0;
        return nsb_fail(e, NSB_STAGE_PREPARE, ENOENT,
                        "cannot find %s: it is installed in %s (meson install, or the nsbox package); "
                        "set NSBOX_RUNNER_DIR to the directory that holds it",
                        RUNNER_FILE, NSBOX_DATADIR "/harness");
}

/* The harness must be a directory outside the workspace: the learner's code
 * sees /workspace, and hidden tests must not appear there. */
/* Nor may the tests be changed through a writable --bind. */
static int harness_unexposed(const struct nsb_config *cfg, struct nsb_error *e)
{
        return cfg_check_unexposed(cfg, cfg->harness, "--harness", true, e);
}

static int check_dirs(const struct nsb_config *cfg, struct nsb_error *e)
{
        char h[PATH_MAX], w[PATH_MAX];
        struct stat st;
        size_t wl;

        if (cfg->isolation == NSB_ISOLATION_REDUCED)
                return nsb_fail(e, NSB_STAGE_USAGE, ENOTSUP,
                                "nsbox test needs strict isolation: its runner and harness are mounted at /nsbox "
                                "and /harness, which needs a mount namespace");
        if (!cfg->harness)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--harness DIR is required");
        if (!realpath(cfg->harness, h) || stat(h, &st) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "--harness '%s'", cfg->harness);
        if (!S_ISDIR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--harness '%s' is not a directory", cfg->harness);
        /* Tests against an empty workspace fail every test, which reads as
         * the learner's failure. Binding the current folder unasked could
         * hand the code under test a home directory: the caller names it. */
        if (!cfg->workspace)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--workspace DIR is required: the folder with the code under test "
                                "(from that folder: --workspace .)");
        if (!realpath(cfg->workspace, w) || stat(w, &st) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "--workspace '%s'", cfg->workspace);
        if (!S_ISDIR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--workspace '%s' is not a directory",
                                cfg->workspace);
        wl = strlen(w);
        if (strncmp(h, w, wl) == 0 && (h[wl] == '\0' || h[wl] == '/' || wl == 1))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "the harness '%s' is inside the workspace '%s': the code under test would see it",
                                cfg->harness, cfg->workspace);
        return harness_unexposed(cfg, e);
}

/* The helper: copy @rfd into @sink until EOF, keeping at most CHANNEL_MAX
 * bytes. Runs in a forked child and _exit()s. */
static void __attribute__((noreturn)) drain_main(int rfd, int sink)
{
        static char buf[65536];
        size_t kept = 0;

        for (;;) {
                ssize_t n = read(rfd, buf, sizeof buf);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (kept < CHANNEL_MAX) {
                        size_t take = (size_t) n < CHANNEL_MAX - kept ? (size_t) n : CHANNEL_MAX - kept;
                        size_t off = 0;

                        while (off < take) {
                                ssize_t w = write(sink, buf + off, take - off);

                                if (w < 0 && errno == EINTR)
                                        continue;
                                if (w <= 0)
                                        _exit(1);
                                off += (size_t) w;
                        }
                        kept += take;
                }
        }
        _exit(0);
}

/* Wait for the helper; it ends at EOF, once the sandbox is gone. A process
 * of the sandbox that somehow kept the write end open cannot hold us: once
 * the pipe is empty (@rfd, our own read end, says how much is unread) and a
 * grace period has passed, the helper is killed and what it copied is used.
 * A helper that is only slow — unread bytes left, a loaded host that has not
 * run it yet — is waited for (up to DRAIN_SLOW_MAX_MS): killing it then
 * lost the whole channel, and every test read as never reported. */
#define DRAIN_GRACE_MS 2000
#define DRAIN_SLOW_MAX_MS 60000
static void drain_wait(pid_t pid, int rfd)
{
        for (int waited = 0; waited < DRAIN_SLOW_MAX_MS; waited += 10) {
                pid_t w = waitpid(pid, NULL, WNOHANG);
                int unread = 0;

                if (w == pid || (w < 0 && errno != EINTR))
                        return;
                if (waited >= DRAIN_GRACE_MS && (ioctl(rfd, FIONREAD, &unread) < 0 || unread == 0))
                        break;
                poll(NULL, 0, 10);
        }
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
}

static char *read_sink(int sink, size_t *ret_len)
{
        struct stat st;
        char *buf;
        size_t len, off = 0;

        *ret_len = 0;
        if (fstat(sink, &st) < 0)
                return NULL;
        len = (size_t) st.st_size > CHANNEL_MAX ? CHANNEL_MAX : (size_t) st.st_size;
        buf = malloc(len + 1);
        if (!buf)
                return NULL;
        while (off < len) {
                ssize_t n = pread(sink, buf + off, len - off, (off_t) off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                off += (size_t) n;
        }
        buf[off] = '\0';
        *ret_len = off;
        return buf;
}

/* Run @req with a results channel on fd 3; fill @res and the channel's
 * bytes. Returns 0, or -errno with @e filled when nsbox itself could not set
 * up (exit 125). */
static int run_with_channel(struct sbx_request *req, struct run_result *res, char **ret_chan, size_t *ret_chan_len,
                            struct nsb_error *e)
{
        AUTOCLOSE int rfd = -1, wfd = -1, sink = -1;
        int p[2];
        pid_t helper;
        int r;

        if (plat_pipe_cloexec(p) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "results channel: pipe");
        rfd = p[0];
        wfd = p[1];
#ifdef F_SETPIPE_SZ   /* Linux only; elsewhere the helper drains a pipe of the default size */
        (void) fcntl(wfd, F_SETPIPE_SZ, CHANNEL_PIPE_SIZE); /* best effort: pipe-max-size may be lower */
#endif
        sink = plat_anon_fd("nsbox-test-channel");
        if (sink < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "results channel: an anonymous file");
        helper = fork();
        if (helper < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "results channel: fork");
        if (helper == 0) {
                close(wfd);
                drain_main(rfd, sink);
        }
        /* rfd stays open here too: drain_wait asks it what is unread */
        req->channel_fd = wfd;
        r = sbx_run(req, res);
        /* Our write end is the last one outside the (now ended) sandbox. */
        close(move_fd(&wfd));
        drain_wait(helper, rfd);
        if (r < 0) {
                run_result_free(res);
                memset(res, 0, sizeof *res);
                res->status = RUN_ERROR;
                nsb_fail(&res->error, NSB_STAGE_SUPERVISE, -r, "sbx_run");
        }
        *ret_chan = read_sink(sink, ret_chan_len);
        if (!*ret_chan)
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "cannot read the results channel");
        return 0;
}

/* Run the runner, through the one program builder (program/program.h):
 * the profile's interpreter and its args, then /nsbox/RUNNER and its
 * arguments. */
static int run_runner(const struct nsb_config *cfg, const char *runner_dir, int cancel_fd, struct run_result *res,
                      char **ret_chan, size_t *ret_chan_len, struct nsb_error *e)
{
        double wall_s = (double) cfg->wall_time_ms / 1000.0, margin = wall_s / 10 < 1.0 ? wall_s / 10 : 1.0;
        char budget[32];
        char *args[] = { "--harness", "/harness", "--workspace", "/workspace", "--budget", budget,
                         "--channel-fd", "3" };
        const struct prog_source src = {
                .kind = PROG_PATH, .name = "/nsbox/" RUNNER_FILE, .args = args, .n_args = ARRAY_SIZE(args),
                .stdin_mode = PROG_STDIN_CFG,
        };
        struct prog prog;
        int r;

        /* The runner reports timeouts itself before nsbox's wall limit. */
        snprintf(budget, sizeof budget, "%.3f", wall_s - margin > 0.05 ? wall_s - margin : 0.05);
        if (prog_build(cfg, &src, &prog, e) < 0)
                return -ENOMEM;
        prog.req.relay = false;
        prog.req.runner_dir = runner_dir;
        prog.req.cancel_fd = cancel_fd;
        r = run_with_channel(&prog.req, res, ret_chan, ret_chan_len, e);
        prog_free(&prog);
        return r;
}

/* --junit FILE: one testcase per test. What JUnit calls an error is what
 * nsbox could not decide: a test's error is an <error> only when the verdict
 * is undetermined (the sandbox failed, the channel is untrusted); otherwise
 * it is evidence against the code (an exception in it, a limit) and a
 * <failure>. When no test carries the verdict (the harness could not be
 * collected, the sandbox failed before any test), one testcase "(harness)"
 * does, so the file never reads as a pass that was not one. */
static int write_junit(const struct nsb_config *cfg, const struct tc_report *rep, const struct run_result *res,
                       struct nsb_error *e)
{
        size_t n = 0, cap = rep->n_tests + rep->n_collect_errors + 1;
        AUTOFREE struct junit_case *jc = calloc(cap, sizeof *jc);
        AUTOFREE char **names = calloc(rep->n_collect_errors + 1, sizeof *names);
        /* per test: "test_x.TestAdd" of "test_x.py::TestAdd::test_a", not the harness path */
        AUTOFREE char **classes = calloc(rep->n_tests + 1, sizeof *classes);
        bool undetermined = rep->verdict == TC_UNDETERMINED, carried = rep->verdict == TC_PASS;
        int r;

        if (!jc || !names || !classes)
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--junit: out of memory");
        for (size_t i = 0; i < rep->n_tests; i++) {
                const struct tc_test *t = &rep->tests[i];
                struct junit_case *c = &jc[n++];

                classes[i] = junit_classname(NULL, t->name, &c->name);
                if (!classes[i]) {
                        r = nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--junit: out of memory");
                        goto out;
                }
                c->classname = classes[i];
                c->out = t->out;
                c->out_len = t->out ? strlen(t->out) : 0;
                c->err = t->err;
                c->err_len = t->err ? strlen(t->err) : 0;
                c->time_s = t->outcome == TC_NOT_RUN ? -1 : t->duration_ms / 1000.0;
                c->message = t->message ? t->message : tc_outcome_name(t->outcome);
                c->detail = t->traceback;
                c->detail_len = t->traceback ? strlen(t->traceback) : 0;
                if (t->outcome == TC_PASSED)
                        c->kind = JUNIT_PASS;
                else if (t->outcome == TC_SKIPPED)
                        c->kind = JUNIT_SKIPPED;
                else
                        c->kind = undetermined || t->outcome == TC_NOT_RUN ? JUNIT_ERROR : JUNIT_FAILURE;
                if (c->kind == JUNIT_PASS)
                        c->message = NULL;
                if ((c->kind == JUNIT_ERROR && undetermined) || (c->kind == JUNIT_FAILURE && !undetermined))
                        carried = true;
        }
        for (size_t i = 0; i < rep->n_collect_errors; i++) {
                struct junit_case *c = &jc[n++];

                if (nsb_asprintf(&names[i], "collect: %s",
                                 rep->collect_errors[i].file ? rep->collect_errors[i].file : "(harness)") < 0) {
                        names[i] = NULL;
                        r = nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--junit: out of memory");
                        goto out;
                }
                c->name = names[i];
                c->classname = "harness";
                c->time_s = -1;
                c->kind = JUNIT_ERROR;
                c->message = rep->collect_errors[i].message;
                carried = carried || undetermined;
        }
        if (!carried) {
                struct junit_case *c = &jc[n++];

                c->name = "(harness)";
                c->classname = "harness";
                c->time_s = rep->duration_ms / 1000.0;
                c->kind = undetermined ? JUNIT_ERROR : JUNIT_FAILURE;
                c->message = rep->reason;
        }
        {
                /* the suite: the harness folder's name, not its host path */
                char *suite = junit_suite_name(cfg->harness);

                /* the run's streams as the suite's own when some of them is
                 * no test's (fd 1/2 written directly: tc_unattributed) */
                struct junit_case run = { 0 };

                if (tc_unattributed(rep, &res->out, false)) {
                        run.out = res->out.text;
                        run.out_len = res->out.kept;
                }
                if (tc_unattributed(rep, &res->err, true)) {
                        run.err = res->err.text;
                        run.err_len = res->err.kept;
                }
                r = suite ? junit_write(cfg->junit_path, suite, jc, n, rep->duration_ms / 1000.0, &run, e)
                          : nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--junit: out of memory");
                free(suite);
        }
out:
        for (size_t i = 0; i < rep->n_collect_errors; i++)
                free(names[i]);
        for (size_t i = 0; i < rep->n_tests; i++)
                free(classes[i]);
        return r;
}

int test_main(const struct frame_run *run, struct nsb_error *e)
{
        const struct nsb_config *cfg = run->cfg;
        int cancel_fd = run->cancel_fd;
        FILE *out = run->out;
        __attribute__((cleanup(tc_report_free))) struct tc_report rep = { 0 };
        AUTO(json_decref) json_t *root = NULL;
        AUTOFREE char *chan = NULL;
        char runner_dir[PATH_MAX];
        struct run_result res;
        size_t chan_len = 0;
        int r;

        const struct result_file_role outs[] = { { "--junit", cfg->junit_path }, { "--result", cfg->result_path } };
        const struct result_file_role ins[] = { { "--stdin", cfg->stdin_path } };

        memset(&res, 0, sizeof res);
        /* written after the run: neither over the other, both writable */
        if (result_files_check(outs, ARRAY_SIZE(outs), ins, ARRAY_SIZE(ins), e) < 0)
                return TESTCMD_EXIT_SETUP;
        if (check_dirs(cfg, e) < 0 || find_runner_dir(runner_dir, sizeof runner_dir, e) < 0)
                return TESTCMD_EXIT_SETUP;
        r = run_runner(cfg, runner_dir, cancel_fd, &res, &chan, &chan_len, e);
        if (r < 0) {
                run_result_free(&res);
                return TESTCMD_EXIT_SETUP;
        }
        if (tc_channel_parse(chan, chan_len, &rep) < 0) {
                run_result_free(&res);
                nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "out of memory reading the results channel");
                return TESTCMD_EXIT_SETUP;
        }
        tc_decide(&rep, &res);

        root = tc_report_to_json(&rep, result_to_json(&res, cfg->output_limit_bytes));
        if (!root) {
                run_result_free(&res);
                nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "cannot render the report");
                return TESTCMD_EXIT_SETUP;
        }
        if (cfg->json) {
                if (textsafe_json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) < 0 || fputc('\n', out) == EOF)
                        r = nsb_fail(e, NSB_STAGE_OUTPUT, EIO, "cannot write the report");
        } else {
                AUTOFREE char *summary = tc_summary_text(&rep, &res);

                if (!summary || fputs(summary, out) == EOF)
                        r = nsb_fail(e, NSB_STAGE_OUTPUT, summary ? EIO : ENOMEM, "cannot write the report");
        }
        if (r < 0 || fflush(out) != 0) {
                if (r >= 0)
                        nsb_fail(e, NSB_STAGE_OUTPUT, errno, "cannot write the report");
                run_result_free(&res);
                return TESTCMD_EXIT_SETUP;
        }
        if (cfg->result_path &&
            result_file_write(cfg->result_path, root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9), e) < 0)
                r = -EIO;
        /* the JUnit file may hold the run's own streams (write_junit) */
        else if (cfg->junit_path && write_junit(cfg, &rep, &res, e) < 0)
                r = -EIO;
        run_result_free(&res);
        return r < 0 ? TESTCMD_EXIT_SETUP : tc_exit_code(rep.verdict);
}
