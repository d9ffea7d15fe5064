/* nsbox.c — parse the command line, hand the request to the supervisor,
 * render the result and map the exit code. Nothing else lives here. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch/batch.h"
#include "config/config.h"
#include "config/policy.h"
#include "doctor/doctor.h"
#include "judge/judge.h"
#include "report/report.h"
#include "platform/platform.h"
#include "result/result.h"
#include "program/program.h"
#include "supervisor/sandbox.h"
#include "testcmd/testcmd.h"
#include "util/cleanup.h"
#include "util/cmdline.h"
#include "util/portable.h"
#include "util/readfile.h"
#include "util/resultfile.h"
#include "util/sha256.h"

#include "nsbox-config.h"

#define EXIT_NSBOX_FAILURE 125
#define MAX_PROGRAM_BYTES (64u << 20)

/* "nsbox: [CMD: ]message", with the errno text only for a system error
 * (nsb_error_describe): "--memory: size '0' is out of range ...", never
 * "...: Invalid argument" after a message that says what is allowed. */
static void print_error(const char *cmd, const struct nsb_error *e)
{
        char buf[NSB_ERROR_MSG_MAX + 128];

        fprintf(stderr, "nsbox: %s%s%s\n", cmd ? cmd : "", cmd ? ": " : "", nsb_error_describe(e, buf, sizeof buf));
}

static int usage_error_or_die(const struct nsb_error *e)
{
        print_error(NULL, e);
        return EXIT_NSBOX_FAILURE;
}

static void explain(const struct nsb_config *cfg, const struct run_result *r)
{
        char buf[NSB_ERROR_MSG_MAX + 128];
        struct stat in;

        if (r->status == RUN_ERROR)
                fprintf(stderr, "nsbox: sandbox error (%s): %s\n", nsb_stage_name((enum nsb_stage) r->error.stage),
                        nsb_error_describe(&r->error, buf, sizeof buf));
        else if (r->status == RUN_LIMIT)
                fprintf(stderr, "nsbox: stopped by the %s limit\n", run_limit_name(r->limit));
        else if (r->status == RUN_CANCELLED)
                fprintf(stderr, "nsbox: cancelled\n");
        if (r->out.truncated || r->err.truncated)
                fprintf(stderr, "nsbox: output truncated (stdout %llu bytes, stderr %llu bytes written)\n",
                        (unsigned long long) r->out.bytes, (unsigned long long) r->err.bytes);
        if (r->isolation == NSB_ISOLATION_REDUCED)
                fprintf(stderr, "nsbox: warning: this run used REDUCED isolation\n");
        /* `echo hi | nsbox python x.py` that failed: say why input() saw EOF. */
        if (r->status == RUN_EXITED && r->exit_code != 0 && !cfg->stdin_path && fstat(STDIN_FILENO, &in) == 0 &&
            (S_ISFIFO(in.st_mode) || (S_ISREG(in.st_mode) && in.st_size > 0)))
                fprintf(stderr, "nsbox: note: the program's standard input was empty: nsbox's own is passed "
                                "only with --stdin -\n");
}

/* Before anything runs, and whatever the output format: reduced isolation is
 * never silent. */
static void warn_reduced(const struct nsb_config *cfg)
{
        if (cfg->isolation == NSB_ISOLATION_REDUCED && cfg->cmd != NSB_CMD_DOCTOR)
                fprintf(stderr, "nsbox: warning: --isolation reduced: %s\n", plat_reduced_banner);
}

static int emit(const struct nsb_config *cfg, const struct run_result *r)
{
        json_t *j = result_to_json(r, cfg->output_limit_bytes);
        struct nsb_error e;
        int flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9);

        nsb_error_clear(&e);
        if (!j) {
                fprintf(stderr, "nsbox: out of memory rendering the result\n");
                return EXIT_NSBOX_FAILURE;
        }
        if (cfg->result_path && result_file_write(cfg->result_path, j, flags, &e) < 0) {
                print_error(NULL, &e);
                json_decref(j);
                return EXIT_NSBOX_FAILURE;
        }
        if (cfg->json) {
                if (json_dumpf(j, stdout, flags) < 0 || fputc('\n', stdout) == EOF ||
                    fflush(stdout) == EOF) {
                        fprintf(stderr, "nsbox: cannot write the result to stdout: %s\n", strerror(errno));
                        json_decref(j);
                        return EXIT_NSBOX_FAILURE;
                }
        } else {
                explain(cfg, r);
                /* Output the program wrote and nsbox could not pass on (a
                 * full disk, an I/O error) is a failure of nsbox's, never
                 * the program's exit status; a reader that went away (EPIPE,
                 * `| head`) is the pipeline's choice. */
                for (int i = 0; i < 2; i++) {
                        int err = i ? r->err.relay_errno : r->out.relay_errno;

                        if (err && err != EPIPE) {
                                fprintf(stderr, "nsbox: cannot pass the program's %s on: %s\n",
                                        i ? "stderr" : "stdout", strerror(err));
                                json_decref(j);
                                return EXIT_NSBOX_FAILURE;
                        }
                }
        }
        json_decref(j);
        return result_exit_code(r);
}

/* nsbox profile show NAME|FILE: the resolved policy, as a profile. */
static int profile_show_or_die(const struct nsb_config *cfg)
{
        struct nsb_config prof;
        AUTOFREE char *text = NULL;
        struct nsb_error e;
        int r;

        nsb_error_clear(&e);
        r = cfg_profile_load(cfg->input_path, NSB_CMD_PROFILE, &prof, &e);
        if (r == 0)
                r = cfg_policy_render(&prof, &text, &e);
        cfg_free(&prof);
        if (r < 0)
                return usage_error_or_die(&e);
        printf("; nsbox profile: %s (resolved; nsbox reads this back with --profile FILE)\n%s", cfg->input_path, text);
        return 0;
}

/* nsbox python: the script (or -c CODE) through the one program builder. */
static int python_or_die(struct nsb_config *cfg, int cancel_fd)
{
        AUTOFREE char *program = NULL;
        size_t program_len = 0;
        struct prog_source src = { .kind = PROG_CODE, .data = cfg->inline_code, .stdin_mode = PROG_STDIN_CFG };
        struct prog prog;
        struct run_result r;
        struct nsb_error e;
        int code;

        nsb_error_clear(&e);
        if (cfg->inline_code) {
                src.len = strlen(cfg->inline_code);
                src.args = cfg->argv;
                src.n_args = cfg->argc;
        } else {
                /* `python -` reads its program from stdin; nsbox does not */
                if (strcmp(cfg->argv[0], "-") == 0)
                        nsb_fail(&e, NSB_STAGE_USAGE, EINVAL, "SCRIPT '-': nsbox reads no program from its "
                                 "standard input; give a script file, or -c CODE (--stdin - hands "
                                 "standard input to the program)");
                else if (read_file(cfg->argv[0], MAX_PROGRAM_BYTES, &program, &program_len, &e) < 0)
                        nsb_error_prefix(&e, "script");
                if (e.stage != NSB_STAGE_NONE) {
                        print_error("python", &e);
                        return EXIT_NSBOX_FAILURE;
                }
                src.kind = PROG_FILE;
                src.name = strrchr(cfg->argv[0], '/') ? strrchr(cfg->argv[0], '/') + 1 : cfg->argv[0];
                src.data = program;
                src.len = program_len;
                src.args = cfg->argv + 1;
                src.n_args = cfg->argc - 1;
        }
        if (prog_build(cfg, &src, &prog, &e) < 0)
                return EXIT_NSBOX_FAILURE;
        prog.req.relay = !cfg->json;
        prog.req.cancel_fd = cancel_fd;
        sbx_run(&prog.req, &r);
        prog_free(&prog);
        code = emit(cfg, &r);
        run_result_free(&r);
        return code;
}

/* nsbox run: COMMAND ARG... as given. */
static int run_or_die(struct nsb_config *cfg, int cancel_fd)
{
        AUTOFREE char **argv = calloc(cfg->argc + 1, sizeof *argv);
        struct sbx_request req = { .cfg = cfg, .relay = !cfg->json, .cancel_fd = cancel_fd, .channel_fd = -1 };
        struct run_result r;
        int code;

        if (cfg->cmd == NSB_CMD_PYTHON)
                return python_or_die(cfg, cancel_fd);
        if (!argv)
                return EXIT_NSBOX_FAILURE;
        for (size_t n = 0; n < cfg->argc; n++)
                argv[n] = cfg->argv[n];
        req.argv = argv;
        req.argc = cfg->argc;
        sbx_run(&req, &r);
        code = emit(cfg, &r);
        run_result_free(&r);
        return code;
}

/* A closed stdin/stdout/stderr would be taken by the next open() (the
 * signalfd, a cgroup file). /dev/null opened read-only holds it: a write to
 * it still fails as on a closed descriptor, and is reported. */
static void hold_std_fds(void)
{
        for (int fd = 0; fd <= 2; fd++)
                if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
                        (void) open("/dev/null", O_RDONLY);     /* the lowest free fd: this one */
}

/* What nsbox printed on stdout must have arrived: a lost result (verdict,
 * report, profile) is an nsbox failure, never the program's exit code. */
static int stdout_delivered_or_die(int code)
{
        errno = 0;
        if (code != EXIT_NSBOX_FAILURE && (fflush(stdout) == EOF || ferror(stdout))) {
                fprintf(stderr, "nsbox: cannot write to stdout: %s\n", errno ? strerror(errno) : "write error");
                return EXIT_NSBOX_FAILURE;
        }
        return code;
}

/* --result, --junit: the directory resolved before anything runs. */
static int pin_path(char **path)
{
        char *pinned;

        if (!*path)
                return 0;
        if (!(pinned = result_path_pin(*path))) {
                fprintf(stderr, "nsbox: out of memory\n");
                return -ENOMEM;
        }
        free(*path);
        *path = pinned;
        return 0;
}

int main(int argc, char **argv)
{
        struct nsb_config cfg;
        struct nsb_error e;
        char cwd[4096];
        int code, cancel_fd;

        hold_std_fds();
        cmdline_remember(argc, argv);
        nsb_error_clear(&e);
        if (cfg_parse_cli(argc, argv, &cfg, &e) < 0) {
                code = usage_error_or_die(&e);
                cfg_free(&cfg);
                return code;
        }
        if (cfg.cmd == NSB_CMD_VERSION) {
                printf("nsbox %s\n", NSBOX_VERSION);
                return stdout_delivered_or_die(0);
        }
        if (cfg.cmd == NSB_CMD_HELP || cfg.help) {
                AUTOFREE char *u = cfg_usage(cfg.cmd == NSB_CMD_HELP ? NSB_CMD_NONE : cfg.cmd);
                fputs(u ? u : "", stdout);
                cfg_free(&cfg);
                return stdout_delivered_or_die(0);
        }
        if (cfg.cmd == NSB_CMD_PROFILE) {
                code = profile_show_or_die(&cfg);
                cfg_free(&cfg);
                return stdout_delivered_or_die(code);
        }
        if (cfg.cmd == NSB_CMD_REPORT) {
                /* Reads files, runs nothing: no profile, no sandbox. */
                code = report_main(&cfg, stdout, &e);
                if (code != REPORT_EXIT_OK)
                        print_error("report", &e);
                cfg_free(&cfg);
                return stdout_delivered_or_die(code);
        }
        /* Relative bind sources from here; the judge resolves its own
         * profile: its spec may name the profile. */
        if ((getcwd(cwd, sizeof cwd) && cfg_absolute_sources(&cfg, cwd, &e) < 0) ||
            (cfg.cmd != NSB_CMD_JUDGE && cfg.cmd != NSB_CMD_DOCTOR && cfg_profile_resolve(&cfg, NULL, &e) < 0) ||
            (cfg.cmd != NSB_CMD_RUN && cfg.cmd != NSB_CMD_DOCTOR && cfg_check_python_memory(cfg.memory_bytes, &e) < 0 &&
             /* a profile's limit: say whose (no flag gave it) */
             ((cfg.set & CFG_F_MEMORY) || !cfg.profile || nsb_error_prefix(&e, "profile '%s': [limits] memory",
                                                                          cfg.profile) < 0)) ||
            cfg_check_stdin(&cfg, &e) < 0) {
                code = usage_error_or_die(&e);
                cfg_free(&cfg);
                return code;
        }
        /* Pinned before the program runs: see util/resultfile.h. */
        if (pin_path(&cfg.result_path) < 0 || pin_path(&cfg.junit_path) < 0) {
                cfg_free(&cfg);
                return EXIT_NSBOX_FAILURE;
        }
        warn_reduced(&cfg);
        /* SIGINT/SIGTERM/SIGHUP become a readable fd: the supervisor cancels the run. */
        cancel_fd = plat_cancel_fd();
        switch (cfg.cmd) {
        case NSB_CMD_RUN:
        case NSB_CMD_PYTHON:
                code = run_or_die(&cfg, cancel_fd);
                break;
        case NSB_CMD_JUDGE:
                code = judge_main(&cfg, cancel_fd, stdout, &e);
                if (code == JUDGE_EXIT_BAD_SPEC)
                        print_error("judge", &e);
                break;
        case NSB_CMD_TEST:
                code = test_main(&cfg, cancel_fd, stdout, &e);
                if (code == TESTCMD_EXIT_SETUP)
                        print_error("test", &e);
                break;
        case NSB_CMD_BATCH:
                code = batch_main(&cfg, cancel_fd, STDOUT_FILENO,
                                  !cfg.quiet && isatty(STDERR_FILENO) ? stderr : NULL, cfg.quiet ? NULL : stderr, &e);
                if (code == BATCH_EXIT_SETUP)
                        usage_error_or_die(&e);
                break;
        case NSB_CMD_DOCTOR:
                code = doctor_main(&cfg, stdout, &e);
                if (e.stage != NSB_STAGE_NONE)
                        usage_error_or_die(&e);
                break;
        default:
                nsb_fail(&e, NSB_STAGE_USAGE, ENOSYS, "this command is not available yet");
                code = usage_error_or_die(&e);
                break;
        }
        cfg_free(&cfg);
        return stdout_delivered_or_die(code);
}
