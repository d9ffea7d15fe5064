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
#include "config/hints.h"
#include "config/policy.h"
#include "doctor/doctor.h"
#include "frame/frame.h"
#include "judge/judge.h"
#include "report/report.h"
#include "serve/serve_exec.h"
#include "platform/platform.h"
#include "result/result.h"
#include "program/program.h"
#include "supervisor/sandbox.h"
#include "testcmd/testcmd.h"
#include "util/cleanup.h"
#include "util/cmdline.h"
#include "util/exitcode.h"
#include "util/portable.h"
#include "util/readfile.h"
#include "util/resultfile.h"
#include "util/sha256.h"
#include "util/textsafe.h"

#include "nsbox-config.h"

#define MAX_PROGRAM_BYTES (64u << 20)

/* bwrap's `--ro-bind SRC DST` typed here fails as a missing program or
 * input that nsbox's @message names: say what nsbox's form is
 * (config/hints.h). @cfg NULL: before any parse. */
static void print_hint(const struct nsb_config *cfg, const char *message)
{
        char hint[1024];

        if (cfg && cfg_bwrap_pair_hint(cfg, message, hint, sizeof hint)) {
                fputs("nsbox: hint: ", stderr);
                textsafe_term(stderr, hint, strlen(hint), TEXTSAFE_ONE_LINE);
                fputc('\n', stderr);
        }
}

/* "nsbox: [CMD: ]message", with the errno text only for a system error
 * (nsb_error_describe): "--memory: size '0' is out of range ...", never
 * "...: Invalid argument" after a message that says what is allowed. */
static void print_error(const struct nsb_config *cfg, const char *cmd, const struct nsb_error *e)
{
        char buf[NSB_ERROR_MSG_MAX + 128];

        /* A message quotes what it names (a path, a key, a spec's text):
         * one line, the unsafe characters shown (util/textsafe.h). */
        nsb_error_describe(e, buf, sizeof buf);
        fprintf(stderr, "nsbox: %s%s", cmd ? cmd : "", cmd ? ": " : "");
        textsafe_term(stderr, buf, strlen(buf), TEXTSAFE_ONE_LINE);
        fputc('\n', stderr);
        print_hint(cfg, buf);
}

/* Did the program fail reading past the end of its input? Python says so
 * on stderr (input(): "EOFError: EOF when reading a line"). */
static bool met_eof(const struct run_stream *err)
{
        static const char what[] = "EOFError";

        return (err->text && nsb_memmem(err->text, err->kept, what, sizeof what - 1)) ||
               nsb_memmem(err->tail, err->tail_len, what, sizeof what - 1);
}

/* A limit the program reached without nsbox stopping it (the cgroup
 * refused a fork: BlockingIOError): a program that then failed is told
 * which, with the value it had and the flag that raises it. */
static void note_limits_hit(const struct nsb_config *cfg, const struct run_result *r)
{
        char buf[256];

        if (!(r->status == RUN_EXITED && r->exit_code != 0) && r->status != RUN_SIGNALED)
                return;
        for (int l = LIMIT_NONE + 1; l < LIMIT__MAX; l++)
                if ((r->limits_hit & (1u << l)) && cfg_limit_hint(cfg, run_limit_name((enum run_limit) l), buf,
                                                                   sizeof buf))
                        fprintf(stderr, "nsbox: note: the program reached %s\n", buf);
}

static void explain(const struct nsb_config *cfg, const struct run_result *r)
{
        char buf[NSB_ERROR_MSG_MAX + 128];
        struct stat in;

        if (r->status == RUN_ERROR) {
                nsb_error_describe(&r->error, buf, sizeof buf);
                fprintf(stderr, "nsbox: sandbox error (%s): ", nsb_stage_name((enum nsb_stage) r->error.stage));
                textsafe_term(stderr, buf, strlen(buf), TEXTSAFE_ONE_LINE);
                fputc('\n', stderr);
                print_hint(cfg, buf);
        } else if (r->status == RUN_LIMIT) {
                /* the value it had and the flag that raises it (config/hints.h) */
                if (cfg_limit_hint(cfg, run_limit_name(r->limit), buf, sizeof buf))
                        fprintf(stderr, "nsbox: stopped by %s\n", buf);
                else
                        fprintf(stderr, "nsbox: stopped by the %s limit\n", run_limit_name(r->limit));
        }
        else if (r->status == RUN_CANCELLED)
                fprintf(stderr, "nsbox: cancelled\n");
        note_limits_hit(cfg, r);
        if (r->out.truncated || r->err.truncated)
                fprintf(stderr, "nsbox: output truncated (stdout %llu bytes, stderr %llu bytes written)\n",
                        (unsigned long long) r->out.bytes, (unsigned long long) r->err.bytes);
        if (r->isolation == NSB_ISOLATION_REDUCED)
                fprintf(stderr, "nsbox: warning: this run used REDUCED isolation\n");
        /* `echo hi | nsbox python x.py` that failed: say why input() saw EOF.
         * At a terminal too, when the program failed on that EOF (input()
         * fails at once, so the note comes at once). The terminal is not read unasked: an eager copy
         * would take lines typed ahead for the shell, and stop a background
         * nsbox (SIGTTIN) though the program never reads; and the terminal
         * itself is never handed in (stdin_pump.h). */
        if (r->status == RUN_EXITED && r->exit_code != 0 && !cfg->stdin_path && fstat(STDIN_FILENO, &in) == 0) {
                if (isatty(STDIN_FILENO) && met_eof(&r->err))
                        fprintf(stderr, "nsbox: note: the program's standard input was empty: to type its input "
                                        "here, run with --stdin - (Ctrl-D ends it); or give --stdin FILE, or "
                                        "pipe into nsbox with --stdin -\n");
                else if (S_ISFIFO(in.st_mode) || (S_ISREG(in.st_mode) && in.st_size > 0))
                        fprintf(stderr, "nsbox: note: the program's standard input was empty: nsbox's own is "
                                        "passed only with --stdin -\n");
        }
}

static int emit(const struct nsb_config *cfg, const struct run_result *r)
{
        json_t *j = result_to_json(r, cfg->output_limit_bytes);
        struct nsb_error e;
        int flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9);

        nsb_error_clear(&e);
        if (!j) {
                fprintf(stderr, "nsbox: out of memory rendering the result\n");
                return NSB_EXIT_FAILURE;
        }
        if (cfg->result_path && result_file_write(cfg->result_path, j, flags, &e) < 0) {
                print_error(cfg, NULL, &e);
                json_decref(j);
                return NSB_EXIT_FAILURE;
        }
        if (cfg->json) {
                if (r->status == RUN_ERROR) {   /* the error is in the JSON; a hint only on stderr */
                        char msg[NSB_ERROR_MSG_MAX + 128];

                        nsb_error_describe(&r->error, msg, sizeof msg);
                        print_hint(cfg, msg);
                }
                if (textsafe_json_dumpf(j, stdout, flags) < 0 || fputc('\n', stdout) == EOF ||
                    fflush(stdout) == EOF) {
                        fprintf(stderr, "nsbox: cannot write the result to stdout: %s\n", strerror(errno));
                        json_decref(j);
                        return NSB_EXIT_FAILURE;
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
                                return NSB_EXIT_FAILURE;
                        }
                }
        }
        json_decref(j);
        return result_exit_code(r);
}

/* nsbox profile show NAME|FILE: the resolved policy, as a profile. */
static int image_main(const struct frame_run *run, struct nsb_error *e)
{
        return frame_image_cmd(run->cfg->argv, run->cfg->argc, e);
}

static int profile_show_main(const struct frame_run *run, struct nsb_error *e)
{
        const struct nsb_config *cfg = run->cfg;
        struct nsb_config prof;
        AUTOFREE char *text = NULL;
        int r;

        r = cfg_profile_load(cfg->input_path, NSB_CMD_PROFILE, &prof, e);
        if (r == 0)
                r = cfg_policy_render(&prof, &text, e);
        cfg_free(&prof);
        if (r < 0)
                return NSB_EXIT_FAILURE;
        /* the path is outside text: a newline in a file name would start a
         * line of the profile when it is read back, ESC would reach a
         * terminal; one line, unsafe shown (util/textsafe.h) */
        fputs("; nsbox profile: ", stdout);
        textsafe_term(stdout, cfg->input_path, strlen(cfg->input_path), TEXTSAFE_ONE_LINE);
        printf(" (resolved; nsbox reads this back with --profile FILE)\n%s", text);
        return 0;
}

/* nsbox python: the script (or -c CODE) through the one program builder. */
static int python_main(const struct frame_run *run, struct nsb_error *e)
{
        struct nsb_config *cfg = run->cfg;
        AUTOFREE char *program = NULL;
        size_t program_len = 0;
        struct prog_source src = { .kind = PROG_CODE, .data = cfg->inline_code, .stdin_mode = PROG_STDIN_CFG };
        struct prog_place place = { 0 };
        struct prog prog;
        struct run_result r;
        int code;

        if (cfg->inline_code) {
                src.len = strlen(cfg->inline_code);
                src.args = cfg->argv;
                src.n_args = cfg->argc;
        } else {
                /* `python -` reads its program from stdin; nsbox does not */
                if (strcmp(cfg->argv[0], "-") == 0)
                        nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "SCRIPT '-': nsbox reads no program from its "
                                 "standard input; give a script file, or -c CODE (--stdin - hands "
                                 "standard input to the program)");
                /* a script in the workspace runs from its folder there */
                else if (prog_locate(cfg, cfg->argv[0], &place, e) < 0)
                        nsb_error_prefix(e, "script");
                else if (read_file(cfg->argv[0], MAX_PROGRAM_BYTES, &program, &program_len, e) < 0)
                        nsb_error_prefix(e, "script");
                else
                        cfg->script_dir_first = place.script != NULL;
                if (e->stage != NSB_STAGE_NONE)
                        return NSB_EXIT_FAILURE;
                src.kind = PROG_FILE;
                src.script = place.script;
                src.workdir = place.workdir;
                src.name = strrchr(cfg->argv[0], '/') ? strrchr(cfg->argv[0], '/') + 1 : cfg->argv[0];
                src.data = program;
                src.len = program_len;
                src.args = cfg->argv + 1;
                src.n_args = cfg->argc - 1;
        }
        if (prog_build(cfg, &src, &prog, e) < 0) {
                prog_place_free(&place);
                return NSB_EXIT_FAILURE;
        }
        prog.req.relay = !cfg->json;
        prog.req.cancel_fd = run->cancel_fd;
        sbx_run(&prog.req, &r);
        prog_free(&prog);
        prog_place_free(&place);
        code = emit(cfg, &r);
        run_result_free(&r);
        return code;
}

/* nsbox run: COMMAND ARG... as given. */
static int run_main(const struct frame_run *run, struct nsb_error *e)
{
        struct nsb_config *cfg = run->cfg;
        AUTOFREE char **argv = calloc(cfg->argc + 1, sizeof *argv);
        struct sbx_request req = { .cfg = cfg, .relay = !cfg->json, .cancel_fd = run->cancel_fd, .channel_fd = -1 };
        struct run_result r;
        int code;

        (void) e;
        if (!argv)
                return NSB_EXIT_FAILURE;
        for (size_t n = 0; n < cfg->argc; n++)
                argv[n] = cfg->argv[n];
        req.argv = argv;
        req.argc = cfg->argc;
        sbx_run(&req, &r);
        code = emit(cfg, &r);
        run_result_free(&r);
        return code;
}

static int version_main(const struct frame_run *run, struct nsb_error *e)
{
        (void) run, (void) e;
        printf("nsbox %s\n", NSBOX_VERSION);
        return NSB_EXIT_OK;
}

static int help_main(const struct frame_run *run, struct nsb_error *e)
{
        AUTOFREE char *u = cfg_usage(run->cfg->cmd == NSB_CMD_HELP ? NSB_CMD_NONE : run->cfg->cmd);

        (void) e;
        fputs(u ? u : "", stdout);
        if (run->cfg->cmd == NSB_CMD_HELP || run->cfg->cmd == NSB_CMD_NONE)
                fputs("\nThe HTTP service (docs/serve.md): nsbox serve [--listen unix:PATH|tcp:HOST:PORT] "
                      "[--token-file FILE] [-j N] [--queue N] [-- BATCH OPTIONS]\n", stdout);
        return NSB_EXIT_OK;
}

/* A closed stdin/stdout/stderr would be taken by the next open() (the
 * signalfd, a cgroup file). /dev/null holds it, opened so that the use the
 * number has still fails as on a closed descriptor: stdout and stderr
 * read-only (a write fails, and is reported), stdin write-only (a read
 * fails; --stdin - refuses a standard input not open for reading, as one
 * closed: cfg_stdin_describe — the program never gets an empty input in
 * place of a closed one). */
static void hold_std_fds(void)
{
        for (int fd = 0; fd <= 2; fd++)
                if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)   /* the lowest free fd: this one */
                        (void) open("/dev/null", fd == STDIN_FILENO ? O_WRONLY : O_RDONLY);
}

/* What nsbox printed on stdout must have arrived: a lost result (verdict,
 * report, profile) is an nsbox failure, never the program's exit code. */
static int stdout_delivered_or_die(int code)
{
        errno = 0;
        if (code != NSB_EXIT_FAILURE && (fflush(stdout) == EOF || ferror(stdout))) {
                fprintf(stderr, "nsbox: cannot write to stdout: %s\n", errno ? strerror(errno) : "write error");
                return NSB_EXIT_FAILURE;
        }
        return code;
}

#define ANY_STATUS (-1)
#define GUARD_RESULTS (FRAME_RESULT | FRAME_STDOUT)

/* The command frame (frame/frame.h): what each command supplies. run and
 * python guard nothing: their results hold no expected values. judge's spec
 * may name its profile, so it resolves it and checks its files itself. */
static const struct frame_command commands[] = {
        /* cmd               name      profile             runs   python input   guarded                              main               explained */
        { NSB_CMD_RUN,       NULL,     FRAME_PROFILE_CLI,  true,  false, NULL,   0,                                   run_main,          NSB_EXIT_FAILURE },
        { NSB_CMD_PYTHON,    "python", FRAME_PROFILE_CLI,  true,  true,  NULL,   0,                                   python_main,       NSB_EXIT_FAILURE },
        { NSB_CMD_JUDGE,     "judge",  FRAME_PROFILE_OWN,  true,  true,  "SPEC", FRAME_INPUT | GUARD_RESULTS | FRAME_OBSERVE | FRAME_JUNIT, judge_main, NSB_EXIT_FAILURE },
        { NSB_CMD_TEST,      "test",   FRAME_PROFILE_CLI,  true,  true,  NULL,   GUARD_RESULTS | FRAME_JUNIT,         test_main,         NSB_EXIT_FAILURE },
        { NSB_CMD_BATCH,     NULL,     FRAME_PROFILE_CLI,  true,  true,  "JOBS", FRAME_INPUT | GUARD_RESULTS,         batch_main,        NSB_EXIT_FAILURE },
        { NSB_CMD_DOCTOR,    NULL,     FRAME_PROFILE_NONE, true,  false, NULL,   0,                                   doctor_main,       ANY_STATUS },
        { NSB_CMD_REPORT,    "report", FRAME_PROFILE_NONE, false, false, NULL,   0,                                   report_main,       ANY_STATUS },
        { NSB_CMD_IMAGE,     "image",  FRAME_PROFILE_NONE, false, false, NULL,   0,                                   image_main,        NSB_EXIT_FAILURE },
        { NSB_CMD_PROFILE,   NULL,     FRAME_PROFILE_NONE, false, false, NULL,   0,                                   profile_show_main, NSB_EXIT_FAILURE },
        { NSB_CMD_VERSION,   NULL,     FRAME_PROFILE_NONE, false, false, NULL,   0,                                   version_main,      NSB_EXIT_FAILURE },
        { NSB_CMD_HELP,      NULL,     FRAME_PROFILE_NONE, false, false, NULL,   0,                                   help_main,         NSB_EXIT_FAILURE },
        { 0 },
};

int main(int argc, char **argv)
{
        const struct frame_command *c;
        struct frame_run run;
        struct nsb_config cfg;
        struct nsb_error e;
        int code;

        hold_std_fds();
        cmdline_remember(argc, argv);
        nsb_error_clear(&e);
        /* serve has options of its own and runs in a program of its own
         * (serve/serve_exec.h): it never reaches the shared parser. */
        if (argc > 1 && strcmp(argv[1], "serve") == 0) {
                serve_exec(argc - 1, argv + 1, &e);
                print_error(NULL, NULL, &e);
                return NSB_EXIT_FAILURE;
        }
        if (cfg_parse_cli(argc, argv, &cfg, &e) < 0) {
                code = NSB_EXIT_FAILURE;
        } else if (!(c = frame_lookup(commands, cfg.help && cfg.cmd != NSB_CMD_VERSION ? NSB_CMD_HELP : cfg.cmd))) {
                nsb_fail(&e, NSB_STAGE_USAGE, ENOSYS, "this command is not available yet");
                code = NSB_EXIT_FAILURE;
        } else if (frame_prepare(c, &cfg, &run, &e) < 0) {
                code = NSB_EXIT_FAILURE;
        } else {
                code = c->main(&run, &e);
                if (e.stage != NSB_STAGE_NONE && code != NSB_EXIT_OK &&
                    (c->explained == ANY_STATUS || code == c->explained))
                        print_error(&cfg, c->name, &e);
                nsb_error_clear(&e);
        }
        if (e.stage != NSB_STAGE_NONE)
                print_error(&cfg, NULL, &e);
        cfg_free(&cfg);
        return stdout_delivered_or_die(code);
}
