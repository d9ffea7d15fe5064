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
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "warm/warm_pool.h"
#include "util/json_cleanup.h"
#include "util/readfile.h"
#include "report/junit.h"
#include "util/resultfile.h"
#include "util/sha256.h"
#include "util/textsafe.h"
#include "nsbox-config.h"

/* Larger inputs are refused rather than read into memory. */
#define SPEC_MAX_BYTES (64u << 20)
#define PROGRAM_MAX_BYTES (64u << 20)
#define STDIN_MAX_BYTES (64u << 20)
#define OBS_MAX_BYTES (1024u << 20)

static void spec_cleanup(struct judge_spec *s)
{
        judge_spec_free(s);
}

static void report_cleanup(struct judge_report *rep)
{
        for (size_t i = 0; i < rep->n_cases; i++) {
                if (rep->cases[i].ran)
                        run_result_free(&rep->cases[i].result);
                json_decref(rep->cases[i].result_json);
        }
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
        if (e->errnum == EFBIG) {
                /* "'F' is larger than N bytes" already says what is wrong */
                snprintf(why, sizeof why, "%s", e->msg);
                return nsb_fail(e, NSB_STAGE_CONFIG, 0, "%s", why);
        }
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

/* --observe: one line per case, each run identified by its own run_id. */
struct observe {
        char run_id[33];
        json_t *lines;
};

/* A case's stdin under --observe: the exact bytes, hashed and recorded, are
 * what the program is given (read here once, never reopened by the sandbox).
 * *in stays unknown when --stdin FILE cannot be read (@e says why). */
static int observed_stdin(const struct nsb_config *cfg, struct judge_stimulus *st, char **owned,
                          struct judge_obs_stdin *in, struct nsb_error *e)
{
        size_t len;

        if (st->stdin_data || !cfg->stdin_path) {
                /* the case's own, else empty: what prog_build gives */
                *in = (struct judge_obs_stdin) { st->stdin_data ? st->stdin_data : "", st->stdin_len, true };
                return 0;
        }
        if (cfg_stdin_is_ours(cfg)) {
                /* --stdin -: nsbox's standard input, read once (judge lets
                 * only one case take it), as the sandbox would get it */
                AUTOCLOSE int fd = cfg_stdin_dash_open(e);

                if (fd < 0 || read_fd(fd, "--stdin -", STDIN_MAX_BYTES, owned, &len, e) < 0)
                        return nsb_error_prefix(e, "--stdin - (recorded under --observe, at most %u MiB)",
                                                STDIN_MAX_BYTES >> 20);
        } else if (read_file(cfg->stdin_path, STDIN_MAX_BYTES, owned, &len, e) < 0) {
                return nsb_error_prefix(e, "--stdin (recorded under --observe, at most %u MiB)", STDIN_MAX_BYTES >> 20);
        }
        st->stdin_data = *owned;
        st->stdin_len = len;
        *in = (struct judge_obs_stdin) { *owned, len, true };
        return 0;
}

/* The case's line: what ran (judge_obs_plan) and @result (NULL: not run). */
static int observe_case(struct observe *obs, const struct judge_spec *spec, size_t idx, const char *sha,
                        const struct nsb_config *cfg, char *const *argv, size_t argc, const struct judge_obs_stdin *in,
                        struct judge_case_report *c, struct nsb_error *e)
{
        AUTO(json_decref) json_t *body = judge_obs_plan(spec, idx, sha, cfg, argv, argc, in);

        if (!body || (c->ran && !c->result_json) ||
            json_array_append_new(obs->lines, judge_obs_seal(body, idx, obs->run_id, NSBOX_VERSION,
                                                             c->ran ? json_incref(c->result_json) : NULL, c->reason,
                                                             c->observation_id)) < 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--observe: out of memory");
        return 0;
}

static int run_case(const struct nsb_config *cfg, const struct judge_spec *spec, const char *program,
                    size_t program_len, const char *sha, size_t idx, int cancel_fd,
                    const struct host_set *python_host, struct warm_pool *pool, struct observe *obs,
                    struct judge_case_report *c, struct nsb_error *fatal)
{
        const struct judge_case *jc = &spec->cases[idx];
        struct judge_stimulus st = jc->stimulus;
        struct judge_obs_stdin in = { 0 };
        AUTOFREE char *file_stdin = NULL;
        struct prog prog = { 0 };
        struct nsb_error e, build_e;
        int r = 0, rs = 0;

        nsb_error_clear(&e);
        nsb_error_clear(&build_e);
        memset(&c->result, 0, sizeof c->result);
        if (obs)
                rs = observed_stdin(cfg, &st, &file_stdin, &in, &e);
        /* argv is built even when the stdin could not be read: the
         * observation records what the case was to run. */
        r = judge_request_build(cfg, &spec->program, program, program_len, &st, cancel_fd, &prog,
                                rs < 0 ? &build_e : &e);
        if (r >= 0 && rs >= 0) {
                const char *cold_reason = NULL;
                int ctl;

                prog.req.python_host = python_host;
                /* --warm: from the pool's zygote, or cold and why */
                if (pool && (ctl = warm_pool_take(pool, true, &cold_reason)) >= 0) {
                        prog.req.start = SBX_WARM;
                        prog.req.warm_ctl = ctl;
                        prog.req.warm_cgroup = warm_pool_cgroup(pool);
                        cold_reason = NULL;
                }
                r = sbx_run(&prog.req, &c->result);
                if (r >= 0 && cold_reason)
                        snprintf(c->result.start_reason, sizeof c->result.start_reason, "%s", cold_reason);
        }
        if (r < 0 || rs < 0) {
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
        /* Judged from the result object as recorded, not from c->result. */
        judge_case_settle(&jc->expect, result_to_json(&c->result, cfg->output_limit_bytes), c);
        if (obs)
                r = prog.argv ? observe_case(obs, spec, idx, sha, cfg, prog.argv, prog.req.argc, &in, c, fatal)
                              : nsb_fail(fatal, NSB_STAGE_OUTPUT, ENOMEM, "--observe: out of memory");
        prog_free(&prog);
        return obs ? r : 0;
}

/* Observation lines of the cases that did not run: what they would have
 * run, their stdin only when known without reading --stdin FILE. */
static int observe_not_run(struct observe *obs, const struct nsb_config *cfg, const struct judge_spec *spec,
                           const char *program, size_t program_len, const char *sha, struct judge_report *rep,
                           struct nsb_error *e)
{
        for (size_t i = 0; i < rep->n_cases; i++) {
                const struct judge_stimulus *st = &spec->cases[i].stimulus;
                struct judge_obs_stdin in = { st->stdin_data ? st->stdin_data : "", st->stdin_len,
                                              st->stdin_data || !cfg->stdin_path };
                struct prog prog = { 0 };
                int r;

                if (rep->cases[i].ran)
                        continue;
                r = judge_request_build(cfg, &spec->program, program, program_len, st, -1, &prog, e);
                if (r == 0)
                        r = observe_case(obs, spec, i, sha, cfg, prog.argv, prog.req.argc, &in, &rep->cases[i], e);
                prog_free(&prog);
                if (r < 0)
                        return -ENOMEM;
        }
        return 0;
}

void judge_report_free(struct judge_report *rep)
{
        report_cleanup(rep);
}

/* "spec 'X': ..." before an error of the spec's; one about --program's
 * file (load_program and place_program say "--program: ...") is the
 * flag's, not the spec's, and is said as it is. */
static int spec_error_context(const struct nsb_config *cli, struct nsb_error *e)
{
        if (cli->program_path && strncmp(e->msg, "--program:", strlen("--program:")) == 0)
                return -(e->errnum ? e->errnum : EINVAL);
        return nsb_error_prefix(e, "spec '%s'", cli->input_path);
}

/* The program's bytes and their hash: the file is read once, so the hash is
 * of what every case runs. */
static int load_program(const struct judge_spec *spec, char **owned, const char **ret, size_t *ret_len,
                        char sha[65], struct nsb_error *e)
{
        if (spec->program.path) {
                if (read_all(spec->program.path, PROGRAM_MAX_BYTES, owned, ret_len, e) < 0)
                        return nsb_error_prefix(e, "%s", spec->program.origin);
                *ret = *owned;
        } else {
                *ret = spec->program.source;
                *ret_len = spec->program.source_len;
        }
        sha256_hex(*ret, *ret_len, sha);
        return 0;
}

/* A program.path in the workspace runs from there (program/program.h):
 * @ret is @spec with the program's place, and @cfg runs its interpreter as
 * `python FILE` does. @place owns the strings @ret points to. */
static int place_program(struct nsb_config *cfg, const struct judge_spec *spec, struct judge_spec *ret,
                         struct prog_place *place, struct nsb_error *e)
{
        *ret = *spec;
        memset(place, 0, sizeof *place);
        if (!spec->program.path)
                return 0;
        if (prog_locate(cfg, spec->program.path, place, e) < 0)
                return nsb_error_prefix(e, "%s", spec->program.origin);
        ret->program.script = place->script;
        ret->program.workdir = place->workdir;
        cfg->script_dir_first = place->script != NULL;
        return 0;
}

static int alloc_cases(const struct judge_spec *spec, struct judge_report *rep, struct nsb_error *e)
{
        rep->cases = calloc(spec->n_cases, sizeof *rep->cases);
        if (!rep->cases)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        rep->n_cases = spec->n_cases;
        for (size_t i = 0; i < spec->n_cases; i++) {
                rep->cases[i].name = spec->cases[i].name;
                rep->cases[i].weight = spec->cases[i].weight;
        }
        return 0;
}

static void stop_after(struct judge_report *rep, size_t i)
{
        char why[JUDGE_REASON_MAX];

        if (rep->cases[i].ran && rep->cases[i].status == RUN_CANCELLED) {
                judge_mark_cancelled(rep->cases, i + 1, rep->n_cases);
                return;
        }
        snprintf(why, sizeof why, "not run: --fail-fast stopped after cases[%zu] failed", i);
        judge_mark_not_run(rep->cases, i + 1, rep->n_cases, why);
}

static int run_spec(const struct nsb_config *cli, unsigned cli_explicit, bool raise_in_spec,
                    const struct judge_spec *given, int cancel_fd, const struct host_set *python_host,
                    struct observe *obs, struct judge_report *rep, struct nsb_error *e)
{
        struct prog_place place __attribute__((cleanup(prog_place_free))) = { 0 };
        struct judge_spec placed;
        const struct judge_spec *spec = &placed;
        AUTOFREE char *file_program = NULL;
        const char *program;
        size_t program_len;
        struct nsb_config cfg;
        struct warm_pool warm, *pool = NULL;
        int r = 0;

        memset(rep, 0, sizeof *rep);
        judge_config_merge(cli, cli_explicit, given, &cfg);
        if (place_program(&cfg, given, &placed, &place, e) < 0 ||
            load_program(given, &file_program, &program, &program_len, rep->program_sha256, e) < 0)
                return -EINVAL;
        rep->output_limit = cfg.output_limit_bytes;
        if (alloc_cases(spec, rep, e) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < rep->n_cases; i++)
                rep->cases[i].raise_in_spec = raise_in_spec;
        if (cfg.warm) {
                warm_pool_init(&warm, &cfg, python_host, cancel_fd);
                pool = &warm;
        }

        for (size_t i = 0; i < spec->n_cases; i++) {
                struct judge_case_report *c = &rep->cases[i];

                if (cancel_pending(cancel_fd)) {
                        judge_mark_cancelled(rep->cases, i, spec->n_cases);
                        break;
                }
                if (run_case(&cfg, spec, program, program_len, rep->program_sha256, i, cancel_fd, python_host, pool,
                             obs, c, e) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (judge_should_stop(c, cli->fail_fast)) {
                        stop_after(rep, i);
                        break;
                }
        }
        if (pool) {
                warm_pool_stop(pool);   /* the zygote ends: every case has */
                /* the first cold case's reason is the verdict's */
                for (size_t i = 0; i < rep->n_cases && !rep->start_reason[0]; i++)
                        if (rep->cases[i].ran && !rep->cases[i].result.warm && rep->cases[i].result.start_reason[0])
                                snprintf(rep->start_reason, sizeof rep->start_reason, "%s",
                                         rep->cases[i].result.start_reason);
        }
        if (r < 0)
                return r;
        if (obs && observe_not_run(obs, &cfg, spec, program, program_len, rep->program_sha256, rep, e) < 0)
                return -ENOMEM;
        rep->verdict = judge_suite_verdict(rep->cases, rep->n_cases);
        return 0;
}

int judge_run_spec(const struct nsb_config *cli, unsigned cli_explicit, const struct judge_spec *spec,
                   int cancel_fd, const struct host_set *python_host, struct judge_report *rep, struct nsb_error *e)
{
        /* batch and serve: the spec's limits win, so a limit's reason names them */
        return run_spec(cli, cli_explicit, true, spec, cancel_fd, python_host, NULL, rep, e);
}

/* ---- --replay: no sandbox, no process, no cgroup ---------------------------- */

/* Case @i of the spec as it would run now, compared with its stored line. */
static int replay_check_case(const struct nsb_config *cfg, const struct judge_spec *spec, size_t i,
                             const char *program, size_t program_len, const char *sha, const json_t *line,
                             struct nsb_error *e)
{
        const struct judge_stimulus *st = &spec->cases[i].stimulus;
        const json_t *was_stdin = json_object_get(json_object_get(line, "invocation"), "stdin");
        struct judge_stimulus now = *st;
        struct judge_obs_stdin in = { 0 };
        AUTOFREE char *file_stdin = NULL;
        AUTO(json_decref) json_t *planned = NULL;
        struct prog prog = { 0 };
        char diff[NSB_ERROR_MSG_MAX - 80];
        bool built;

        /* The stdin a live run would record: a --stdin FILE is read (a file
         * read, no sandbox) only when the observation recorded one. */
        if (!json_is_null(was_stdin) && observed_stdin(cfg, &now, &file_stdin, &in, e) < 0)
                return -EINVAL;
        built = judge_request_build(cfg, &spec->program, program, program_len, &now, -1, &prog, e) == 0;
        if (built)
                planned = judge_obs_plan(spec, i, sha, cfg, prog.argv, prog.req.argc, &in);
        prog_free(&prog);
        if (!planned)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        if (judge_obs_difference(line, planned, diff, sizeof diff))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "cases[%zu] '%.60s': %s", i, spec->cases[i].name, diff);
        return 0;
}

static int replay_spec(const struct nsb_config *cli, const struct judge_spec *given, struct judge_report *rep,
                       struct nsb_error *e)
{
        struct prog_place place __attribute__((cleanup(prog_place_free))) = { 0 };
        struct judge_spec placed;
        const struct judge_spec *spec = &placed;
        AUTOFREE char *file_program = NULL, *text = NULL;
        AUTO(json_decref) json_t *lines = NULL;
        const char *program;
        size_t program_len, text_len, n_obs;
        struct nsb_config cfg;

        memset(rep, 0, sizeof *rep);
        rep->replayed = true;
        if (read_all(cli->replay_path, OBS_MAX_BYTES, &text, &text_len, e) < 0)
                return nsb_error_prefix(e, "--replay");
        if (judge_obs_parse(text, text_len, cli->replay_path, &lines, e) < 0)
                return nsb_error_prefix(e, "--replay");
        judge_config_merge(cli, judge_cli_explicit(cli), given, &cfg);
        if (place_program(&cfg, given, &placed, &place, e) < 0 ||
            load_program(given, &file_program, &program, &program_len, rep->program_sha256, e) < 0)
                return spec_error_context(cli, e);
        rep->output_limit = cfg.output_limit_bytes;

        /* Everything is compared before anything is judged. */
        n_obs = json_array_size(lines);
        for (size_t i = 0; i < spec->n_cases || i < n_obs; i++) {
                const json_t *line = json_array_get(lines, i);

                if (i >= n_obs)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "--replay: cases[%zu] '%.60s' was not observed ('%s' holds %zu observations, the spec has %zu cases)",
                                        i, spec->cases[i].name, cli->replay_path, n_obs, spec->n_cases);
                if (i >= spec->n_cases)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "--replay: '%s' line %zu observes case '%.60s', which the spec does not have (it has %zu cases)",
                                        cli->replay_path, i + 1,
                                        json_string_value(json_object_get(line, "case")), spec->n_cases);
                if (replay_check_case(&cfg, spec, i, program, program_len, rep->program_sha256, line, e) < 0)
                        return nsb_error_prefix(e, "--replay: '%s' line %zu does not observe what the spec runs now",
                                                cli->replay_path, i + 1);
        }

        if (alloc_cases(spec, rep, e) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < spec->n_cases; i++)
                snprintf(rep->cases[i].observation_id, sizeof rep->cases[i].observation_id, "%s",
                         json_string_value(json_object_get(json_array_get(lines, i), "observation_id")));
        for (size_t i = 0; i < spec->n_cases; i++) {
                const json_t *line = json_array_get(lines, i), *result = json_object_get(line, "result");
                struct judge_case_report *c = &rep->cases[i];

                if (json_is_null(result)) {
                        const json_t *why = json_object_get(line, "not_run");

                        c->verdict = JUDGE_NOT_RUN;
                        c->reason[0] = '\0';
                        judge_excerpt_append(c->reason, sizeof c->reason, json_string_value(why),
                                            json_string_length(why), 300);
                        /* as recorded: a cancel's cases leave the score null */
                        if (strcmp(c->reason, JUDGE_NOT_RUN_CANCELLED) == 0)
                                c->status = RUN_CANCELLED;
                        continue;
                }
                judge_case_settle(&spec->cases[i].expect, json_incref((json_t *) result), c);
                if (judge_should_stop(c, cli->fail_fast)) {
                        stop_after(rep, i);
                        break;
                }
        }
        rep->verdict = judge_suite_verdict(rep->cases, rep->n_cases);
        return 0;
}

static int write_verdict(const struct nsb_config *cli, const struct judge_report *rep, FILE *out, json_t **ret_root,
                         struct nsb_error *e)
{
        json_t *root = judge_report_to_json(rep, result_to_json);

        *ret_root = root;
        if (!root)
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "cannot render the verdict");
        if (cli->json) {
                if (textsafe_json_dumpf(root, out, JSON_INDENT(2)) < 0 || fputc('\n', out) == EOF)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, EIO, "cannot write the verdict");
        } else {
                AUTOFREE char *summary = judge_summary_text(rep);

                if (!summary || fputs(summary, out) == EOF)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, summary ? EIO : ENOMEM, "cannot write the verdict");
        }
        if (fflush(out) != 0)
                return nsb_fail(e, NSB_STAGE_OUTPUT, errno, "cannot write the verdict");
        return 0;
}

/* A run id for --observe: 128 random bits, so no two attempts share one. */
static int new_run_id(char out[33], struct nsb_error *e)
{
        unsigned char b[16];

        if (getrandom(b, sizeof b, 0) != (ssize_t) sizeof b)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "--observe: getrandom");
        for (size_t i = 0; i < sizeof b; i++)
                snprintf(out + 2 * i, 3, "%02x", b[i]);
        return 0;
}

/* --junit FILE: one testcase per case; undetermined is an <error> (nsbox
 * could not decide), not a <failure>; a case not run is <skipped>. The time,
 * the captured streams and the reason come from each case's recorded result
 * object, as its verdict does: a replay writes the live run's file. The
 * reason quotes no expected value unless --junit-expected: a CI page may be
 * the learner's, and a judge's expectations are hidden from learners. */
static int write_junit(const struct nsb_config *cli, const struct judge_spec *spec, const struct judge_report *rep,
                       struct nsb_error *e)
{
        AUTOFREE struct junit_case *jc = calloc(rep->n_cases ? rep->n_cases : 1, sizeof *jc);
        AUTOFREE struct judge_evidence *ev = calloc(rep->n_cases ? rep->n_cases : 1, sizeof *ev);
        AUTOFREE char (*reason)[JUDGE_REASON_MAX] = calloc(rep->n_cases ? rep->n_cases : 1, sizeof *reason);
        AUTOFREE char *classname = junit_classname("judge", cli->input_path, NULL);
        static const enum junit_kind kind[] = {
                [JUDGE_PASS] = JUNIT_PASS, [JUDGE_FAIL] = JUNIT_FAILURE,
                [JUDGE_UNDETERMINED] = JUNIT_ERROR, [JUDGE_NOT_RUN] = JUNIT_SKIPPED,
        };
        double total = 0;
        int r;

        if (!jc || !ev || !reason || !classname)
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--junit: out of memory");
        for (size_t i = 0; i < rep->n_cases; i++) {
                const struct judge_case_report *c = &rep->cases[i];
                const json_t *wall = json_object_get(c->result_json, "wall_ms");
                struct nsb_error ignored;
                bool parsed = c->result_json && judge_evidence_parse(c->result_json, &ev[i], &ignored) == 0;

                jc[i].name = c->name ? c->name : "";
                jc[i].classname = classname;
                jc[i].time_s = json_is_number(wall) && json_number_value(wall) >= 0 ? json_number_value(wall) / 1000.0 : -1;
                jc[i].kind = kind[c->verdict];
                jc[i].message = c->verdict == JUDGE_PASS ? NULL : c->reason;
                if (!parsed)
                        continue;       /* not run, or a result the judge could not read: no streams */
                /* the same verdict, its reason without the expected values */
                if (c->verdict != JUDGE_PASS && !cli->junit_expected && i < spec->n_cases) {
                        judge_case_public_reason(&spec->cases[i].expect, &ev[i], reason[i], sizeof reason[i]);
                        jc[i].message = reason[i];
                }
                jc[i].out = ev[i].out.text;
                jc[i].out_len = ev[i].out.kept;
                jc[i].err = ev[i].err.text;
                jc[i].err_len = ev[i].err.kept;
                if (jc[i].time_s >= 0)
                        total += jc[i].time_s;
        }
        {
                /* the suite: the spec's file name, not its host path (a CI
                 * page may be the learner's; nsbox test names it by the
                 * harness folder's name) */
                AUTOFREE char *suite = junit_suite_name(cli->input_path);

                r = suite ? junit_write(cli->junit_path, suite, jc, rep->n_cases, total, NULL, e)
                          : nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--junit: out of memory");
        }
        for (size_t i = 0; i < rep->n_cases; i++)
                judge_evidence_free(&ev[i]);    /* a no-op on one never parsed */
        return r;
}

int judge_main(const struct frame_run *run, struct nsb_error *e)
{
        struct nsb_config *cli = run->cfg;
        int cancel_fd = run->cancel_fd;
        FILE *out = run->out;
        __attribute__((cleanup(spec_cleanup))) struct judge_spec spec = { 0 };
        __attribute__((cleanup(report_cleanup))) struct judge_report rep = { 0 };
        AUTO(json_decref) json_t *root = NULL, *obs_lines = NULL;
        AUTOFREE char *text = NULL, *obs_path = NULL;
        struct observe obs = { 0 };
        size_t text_len;
        int r;

        if (!cli->input_path) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "expected SPEC.json");
                return JUDGE_EXIT_BAD_SPEC;
        }
        if (cli->observe_path && cli->replay_path) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                         "--observe and --replay exclude each other (a replay runs nothing to observe)");
                return JUDGE_EXIT_BAD_SPEC;
        }
        if (cli->junit_expected && !cli->junit_path) {
                /* it changes only what the --junit file quotes: alone, it
                 * would do nothing, silently */
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                         "--junit-expected needs --junit FILE (the JSON verdict and the text summary quote expected "
                         "values anyway)");
                return JUDGE_EXIT_BAD_SPEC;
        }
        if (cli->warm_rotate && !cli->warm) {
                nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--warm-rotate needs --warm");
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
        if (cli->program_path && judge_spec_set_program(&spec, cli->program_path, e) < 0)
                return JUDGE_EXIT_BAD_SPEC;
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
         * (--profile, else the spec's "profile", else python) > defaults.
         * A replay resolves the policy the same way, to compare it. */
        r = cfg_profile_resolve(cli, cli->profile ? cli->profile : spec.profile, e);
        if (r < 0 && !cli->profile)   /* the spec's "profile": say which spec named it */
                nsb_error_prefix(e, "spec '%s'", cli->input_path);
        if (r == 0 && !cli->image && spec.image && !(cli->image = strdup(spec.image)))
                r = nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        /* the image verified, pinned and unpacked before any case runs */
        if (r == 0)
                r = frame_open_image(cli, true, e);
        if (r < 0)
                return JUDGE_EXIT_BAD_SPEC;
        /* The expected values must never enter the sandbox: not even as the
         * spec file inside a directory the program is given. */
        {
                struct stat spec_st;
                bool known = stat(cli->input_path, &spec_st) == 0;

                /* nor as the verdict (its reasons quote them), nor the
                 * observations a later replay judges: frame.h's rule, now
                 * that the mounts are known */
                if (frame_check_files(run, e) < 0 ||
                    cfg_check_shared_stdin(cli, known ? &spec_st : NULL, "spec", e) < 0)
                        return JUDGE_EXIT_BAD_SPEC;
        }
        /* Nothing written may be something read or written too: a verdict
         * written over the spec, a JUnit file over the observations a replay
         * judged, --observe over the --stdin file it records. */
        {
                const struct result_file_role outs[] = {
                        { "--observe", cli->observe_path }, { "--junit", cli->junit_path },
                        { "--result", cli->result_path },
                };
                const struct result_file_role ins[] = {
                        { "--replay", cli->replay_path }, { "the spec", cli->input_path },
                        { spec.program.origin ? spec.program.origin : "program.path", spec.program.path },
                        { "--stdin", cli->stdin_path },
                };

                if (result_files_check(outs, ARRAY_SIZE(outs), ins, ARRAY_SIZE(ins), e) < 0)
                        return JUDGE_EXIT_BAD_SPEC;
        }
        if (cli->replay_path) {
                r = replay_spec(cli, &spec, &rep, e);
        } else {
                if (cli->observe_path) {
                        /* Pinned before the program runs: see util/resultfile.h. */
                        if (!(obs_path = result_path_pin(cli->observe_path)) || !(obs_lines = json_array())) {
                                nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                                return JUDGE_EXIT_BAD_SPEC;
                        }
                        if (new_run_id(obs.run_id, e) < 0)
                                return JUDGE_EXIT_BAD_SPEC;
                        obs.lines = obs_lines;
                }
                r = run_spec(cli, judge_cli_explicit(cli), false, &spec, cancel_fd, NULL, obs_path ? &obs : NULL, &rep, e);
                if (r < 0)
                        spec_error_context(cli, e);
        }
        if (r < 0)
                return JUDGE_EXIT_BAD_SPEC;
        /* The evidence first: a verdict is never shown whose observations
         * were asked for and could not be kept. */
        if (obs_path && result_file_write_lines(obs_path, "--observe", obs_lines, e) < 0)
                return JUDGE_EXIT_BAD_SPEC;
        if (write_verdict(cli, &rep, out, &root, e) < 0)
                return JUDGE_EXIT_BAD_SPEC;
        /* --warm asked and the cases ran cold: said on stderr too, so the
         * text verdict does not hide it */
        if (cli->warm && rep.start_reason[0] && run->summary) {
                fputs("nsbox: judge: --warm: the cases ran cold: ", run->summary);
                textsafe_term(run->summary, rep.start_reason, strlen(rep.start_reason), TEXTSAFE_ONE_LINE);
                fputc('\n', run->summary);
        }
        if (cli->result_path && result_file_write(cli->result_path, root, JSON_INDENT(2), e) < 0)
                return JUDGE_EXIT_BAD_SPEC;
        if (cli->junit_path && write_junit(cli, &spec, &rep, e) < 0)
                return JUDGE_EXIT_BAD_SPEC;
        return judge_exit_code(rep.verdict);
}
