/* judge/judge_internal.h — pure pieces of the judge that the driver composes
 * and the unit tests check one by one. Not for other modules.
 */
#pragma once

#include "judge/judge.h"
#include "program/program.h"
#include "supervisor/sandbox.h"

/* Check one stream against one matcher. Writes a reason ("stdout equals
 * expected", "stdout differs at line 3: ...") into @reason. Uses the raw
 * bytes (text/kept, and tail when the stream was cut), never sanitized text. */
enum judge_verdict judge_match_stream(const struct judge_matcher *m, const char *stream_name,
                                      const struct judge_stream_view *s, char *reason, size_t reason_len);

/* -EINVAL, stage config, "PATH: what" (spec_parse.c): an error at a JSON
 * path; NULL for the document itself (its caller names it). */
int judge_fail_at(struct nsb_error *e, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Limit fields the command line gave explicitly (cli->set), even a flag
 * that repeats the default. */
unsigned judge_cli_explicit(const struct nsb_config *cli);

/* *ret = *cli (a shallow copy: do not cfg_free it), then each limit the spec
 * sets and @cli_explicit does not; the spec's profile unless cli->profile. */
void judge_config_merge(const struct nsb_config *cli, unsigned cli_explicit,
                        const struct judge_spec *spec, struct nsb_config *ret);

/* The request for one case, through the one program builder
 * (program/program.h): the profile's interpreter and args, /program/NAME
 * ARGS..., the program bytes, the case's stdin; nothing else. The caller
 * frees *ret with prog_free. */
int judge_request_build(const struct nsb_config *cfg, const struct judge_program *prog,
                        const char *program_data, size_t program_len,
                        const struct judge_stimulus *st, int cancel_fd,
                        struct prog *ret, struct nsb_error *e);

/* After case @c: stop the remaining cases? (a cancel, or a failure under
 * --fail-fast) */
bool judge_should_stop(const struct judge_case_report *c, bool fail_fast);

/* Mark cases[from..n) not_run with @reason. */
void judge_mark_not_run(struct judge_case_report *cases, size_t from, size_t n, const char *reason);

/* Mark cases[from..n) not_run because the run was cancelled: the reason
 * JUDGE_NOT_RUN_CANCELLED, the status RUN_CANCELLED (so that the score is
 * null: nsbox did not look at them, which --fail-fast's skips are not). */
#define JUDGE_NOT_RUN_CANCELLED "not run: cancelled"
void judge_mark_cancelled(struct judge_case_report *cases, size_t from, size_t n);

/* The human summary: one line per case, then the suite verdict. malloc'd. */
char *judge_summary_text(const struct judge_report *rep);

/* Append at most @max bytes of @s to @buf (size @size, NUL-terminated) as
 * they are: valid UTF-8 (U+FFFD for a byte that is not, and for NUL), cut on
 * a character, "..." marking a cut (textsafe_exact_append). Not escaped: a
 * reason is exact in the JSON verdict; whatever shows it to a person escapes
 * it (util/textsafe.h). */
void judge_excerpt_append(char *buf, size_t size, const char *s, size_t len, size_t max);

/* ---- observations (observe_plan.c) ---------------------------------------- */

#define JUDGE_OBS_SCHEMA "nsbox.observation/1"

/* The stdin a case ran with. !known: not read (a case that did not run
 * with --stdin FILE): recorded as null, and a replay does not compare it. */
struct judge_obs_stdin {
        const char *data;
        size_t len;
        bool known;
};

/* The "what was run" part of case @idx's observation: {"case", "program":
 * {"name", "sha256"}, "invocation": {"args", "argv", "stdin", "limits"},
 * "policy", "policy_sha256"}. @argv: the case's argv (judge_request_build).
 * Never an expected value. NULL on ENOMEM. */
json_t *judge_obs_plan(const struct judge_spec *spec, size_t idx, const char *program_sha256,
                       const struct nsb_config *cfg, char *const *argv, size_t argc,
                       const struct judge_obs_stdin *in);

/* Observation line @idx: schema, its id, @run_id, @version, case_index,
 * @body (from judge_obs_plan, copied), then the result object (takes the
 * reference; NULL for a case that did not run, with @not_run its reason).
 * observation_id, also written to @id, is the SHA-256 of the rest of the
 * line, compact with sorted keys. A new line, or NULL on ENOMEM. */
json_t *judge_obs_seal(const json_t *body, size_t idx, const char *run_id, const char *version, json_t *result,
                       const char *not_run, char id[65]);

/* The observations file (@len bytes of @text; @path in messages): one line
 * per case, in order, of one run, each checked (shape, result, id). *ret: a
 * new array of the lines. -EINVAL "PATH:LINE: what is wrong" (stage config),
 * -ENOMEM. */
int judge_obs_parse(const char *text, size_t len, const char *path, json_t **ret, struct nsb_error *e);

/* Does stored line @observed differ from @planned (judge_obs_plan) in what
 * was run? Then true, and @buf names the first difference, in the plan's
 * order ("invocation.args[0] was \"2\", is now \"7\""). */
bool judge_obs_difference(const json_t *observed, const json_t *planned, char *buf, size_t size);
