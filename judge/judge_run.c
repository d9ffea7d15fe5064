/* judge/judge_run.c — `nsbox judge SPEC.json`: the driver. Syscall layer.
 *
 * Reads the spec and the program, hashes the program, then runs each case in
 * a fresh sandbox through sbx_run() and judges it with the pure functions of
 * judge_plan.c. Each request is built from the program and the case's
 * struct judge_stimulus only; the struct judge_expect stays in this process.
 */
#include "judge/judge_internal.h"
#include "config/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/readfile.h"
#include "util/resultfile.h"
#include "util/sha256.h"

DEFINE_AUTO_CLEANUP(json_t, json_decref)

/* Larger inputs are refused rather than read into memory. */
#define SPEC_MAX_BYTES (64u << 20)
#define PROGRAM_MAX_BYTES (64u << 20)

static void spec_cleanup(struct judge_spec *s)
{
        judge_spec_free(s);
}

static void report_cleanup(struct judge_report *rep)
{
        for (size_t i = 0; i < rep->n_cases; i++)
                if (rep->cases[i].ran)
                        run_result_free(&rep->cases[i].result);
        free(rep->cases);
        rep->cases = NULL;
        rep->n_cases = 0;
}

/* util's read_file, reported as a bad spec: what the user named could not be
 * read (the reason in the text, which `nsbox judge` prints as it is). */
static int read_all(const char *path, size_t max, char **ret, size_t *ret_len, struct nsb_error *e)
{
        char why[NSB_ERROR_MSG_MAX + 128];

        if (read_file(path, max, ret, ret_len, e) == 0)
                return 0;
        nsb_error_describe(e, why, sizeof why);
        return nsb_fail(e, NSB_STAGE_CONFIG, 0, "cannot read %s", why);
}

/* Without consuming it: the caller (nsbox.c) still sees the signal. */
static bool cancel_pending(int cancel_fd)
{
        struct pollfd p = { .fd = cancel_fd, .events = POLLIN };

        if (cancel_fd < 0)
                return false;
        return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static void run_case(const struct nsb_config *cfg, const struct judge_spec *spec, const char *program,
                     size_t program_len, const char *sha, size_t idx, int cancel_fd,
                     const struct host_set *python_host, struct judge_case_report *c)
{
        const struct judge_case *jc = &spec->cases[idx];
        AUTOFREE char **argv = NULL;
        struct sbx_request req;
        struct nsb_error e;
        int r;

        nsb_error_clear(&e);
        memset(&c->result, 0, sizeof c->result);
        c->ran = true;
        /* Only the stimulus goes in: jc->expect is not an argument here. */
        r = judge_request_build(cfg, &spec->program, program, program_len, &jc->stimulus, cancel_fd, &argv,
                                &req, &e);
        if (r >= 0) {
                req.python_host = python_host;
                r = sbx_run(&req, &c->result);
        }
        if (r < 0) {
                /* Even the error result could not be produced: the case is
                 * unknown, never failed. */
                run_result_free(&c->result);
                memset(&c->result, 0, sizeof c->result);
                c->result.status = RUN_ERROR;
                if (e.msg[0])
                        c->result.error = e;
                else
                        nsb_fail(&c->result.error, NSB_STAGE_SUPERVISE, -r, "sbx_run");
        }
        if (!c->result.program_sha256[0])
                memcpy(c->result.program_sha256, sha, sizeof c->result.program_sha256);
        judge_case_verdict(&jc->expect, &c->result, c);
}

void judge_report_free(struct judge_report *rep)
{
        report_cleanup(rep);
}

int judge_run_spec(const struct nsb_config *cli, unsigned cli_explicit, const struct judge_spec *spec,
                   int cancel_fd, const struct host_set *python_host, struct judge_report *rep, struct nsb_error *e)
{
        AUTOFREE char *file_program = NULL;
        const char *program;
        size_t program_len;
        struct nsb_config cfg;
        int r;

        memset(rep, 0, sizeof *rep);
        if (spec->program.path) {
                r = read_all(spec->program.path, PROGRAM_MAX_BYTES, &file_program, &program_len, e);
                if (r < 0)
                        return nsb_error_prefix(e, "program.path");
                program = file_program;
        } else {
                program = spec->program.source;
                program_len = spec->program.source_len;
        }
        sha256_hex(program, program_len, rep->program_sha256);

        judge_config_merge(cli, cli_explicit, spec, &cfg);
        rep->output_limit = cfg.output_limit_bytes;
        rep->cases = calloc(spec->n_cases, sizeof *rep->cases);
        if (!rep->cases)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        rep->n_cases = spec->n_cases;
        for (size_t i = 0; i < spec->n_cases; i++)
                rep->cases[i].name = spec->cases[i].name;

        for (size_t i = 0; i < spec->n_cases; i++) {
                struct judge_case_report *c = &rep->cases[i];

                if (cancel_pending(cancel_fd)) {
                        judge_mark_not_run(rep->cases, i, spec->n_cases, "not run: cancelled");
                        break;
                }
                run_case(&cfg, spec, program, program_len, rep->program_sha256, i, cancel_fd, python_host, c);
                if (judge_should_stop(c, cli->fail_fast)) {
                        char why[JUDGE_REASON_MAX];

                        if (c->result.status == RUN_CANCELLED)
                                snprintf(why, sizeof why, "not run: cancelled");
                        else
                                snprintf(why, sizeof why, "not run: --fail-fast stopped after cases[%zu] failed", i);
                        judge_mark_not_run(rep->cases, i + 1, spec->n_cases, why);
                        break;
                }
        }
        rep->verdict = judge_suite_verdict(rep->cases, rep->n_cases);
        return 0;
}

int judge_main(struct nsb_config *cli, int cancel_fd, FILE *out, struct nsb_error *e)
{
        __attribute__((cleanup(spec_cleanup))) struct judge_spec spec = { 0 };
        __attribute__((cleanup(report_cleanup))) struct judge_report rep = { 0 };
        AUTO(json_decref) json_t *root = NULL;
        AUTOFREE char *text = NULL;
        size_t text_len;
        int r;

        if (!cli->input_path) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "judge: expected SPEC.json");
                return JUDGE_EXIT_BAD_SPEC;
        }
        r = read_all(cli->input_path, SPEC_MAX_BYTES, &text, &text_len, e);
        if (r < 0) {
                nsb_error_prefix(e, "spec");
                return JUDGE_EXIT_BAD_SPEC;
        }
        r = judge_spec_parse(text, text_len, cli->input_path, &spec, e);
        if (r < 0) {
                nsb_error_prefix(e, "spec '%s'", cli->input_path);
                return JUDGE_EXIT_BAD_SPEC;
        }
        /* --stdin -: nsbox's standard input can feed one case, not several. */
        if (cfg_stdin_is_ours(cli)) {
                size_t n = 0;

                for (size_t i = 0; i < spec.n_cases; i++)
                        n += !spec.cases[i].stimulus.stdin_data;
                if (n > 1) {
                        nsb_fail(e, NSB_STAGE_USAGE, 0,
                                 "--stdin -: %zu cases give no \"stdin\" of their own and nsbox's standard input can "
                                 "feed one; give each case its \"stdin\", or --stdin FILE (each case reads it anew)",
                                 n);
                        return JUDGE_EXIT_BAD_SPEC;
                }
        }
        /* Precedence: an explicit flag > the spec's limits > the profile
         * (--profile, else the spec's "profile", else python) > defaults. */
        r = cfg_profile_resolve(cli, cli->profile ? cli->profile : spec.profile, e);
        if (r < 0)
                return JUDGE_EXIT_BAD_SPEC;
        /* The expected values must never enter the sandbox: not even as the
         * spec file inside a directory the program is given. */
        {
                struct stat spec_st;
                bool known = stat(cli->input_path, &spec_st) == 0;

                if (cfg_check_unexposed(cli, cli->input_path, "SPEC", false, e) < 0 ||
                    cfg_check_shared_stdin(cli, known ? &spec_st : NULL, "spec", e) < 0)
                        return JUDGE_EXIT_BAD_SPEC;
        }
        /* Nor as the verdict (its reasons quote them) left in --result inside
         * a directory that a later run of the program is given. */
        if (cfg_check_unexposed(cli, cli->result_path, "--result", false, e) < 0 ||
            cfg_check_unexposed_fd(cli, fileno(out), "stdout", e) < 0)
                return JUDGE_EXIT_BAD_SPEC;
        r = judge_run_spec(cli, judge_cli_explicit(cli), &spec, cancel_fd, NULL, &rep, e);
        if (r < 0) {
                nsb_error_prefix(e, "spec '%s'", cli->input_path);
                return JUDGE_EXIT_BAD_SPEC;
        }

        root = judge_report_to_json(&rep, result_to_json);
        if (!root) {
                nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "cannot render the verdict");
                return JUDGE_EXIT_BAD_SPEC;
        }
        if (cli->json) {
                if (json_dumpf(root, out, JSON_INDENT(2)) < 0 || fputc('\n', out) == EOF) {
                        nsb_fail(e, NSB_STAGE_OUTPUT, EIO, "cannot write the verdict");
                        return JUDGE_EXIT_BAD_SPEC;
                }
        } else {
                AUTOFREE char *summary = judge_summary_text(&rep);

                if (!summary || fputs(summary, out) == EOF) {
                        nsb_fail(e, NSB_STAGE_OUTPUT, summary ? EIO : ENOMEM, "cannot write the verdict");
                        return JUDGE_EXIT_BAD_SPEC;
                }
        }
        if (fflush(out) != 0) {
                nsb_fail(e, NSB_STAGE_OUTPUT, errno, "cannot write the verdict");
                return JUDGE_EXIT_BAD_SPEC;
        }
        if (cli->result_path && result_file_write(cli->result_path, root, JSON_INDENT(2), e) < 0)
                return JUDGE_EXIT_BAD_SPEC;
        return judge_exit_code(rep.verdict);
}
