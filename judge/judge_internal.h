/* judge/judge_internal.h — pure pieces of the judge that the driver composes
 * and the unit tests check one by one. Not for other modules.
 */
#pragma once

#include "judge/judge.h"
#include "supervisor/sandbox.h"

/* Check one stream against one matcher. Writes a reason ("stdout equals
 * expected", "stdout differs at line 3: ...") into @reason. Uses the raw
 * bytes (text/kept, and tail when the stream was cut), never sanitized text. */
enum judge_verdict judge_match_stream(const struct judge_matcher *m, const char *stream_name,
                                      const struct run_stream *s, char *reason, size_t reason_len);

/* Limit fields the command line gave explicitly (cli->set), even a flag
 * that repeats the default. */
unsigned judge_cli_explicit(const struct nsb_config *cli);

/* *ret = *cli (a shallow copy: do not cfg_free it), then each limit the spec
 * sets and @cli_explicit does not; the spec's profile unless cli->profile. */
void judge_config_merge(const struct nsb_config *cli, unsigned cli_explicit,
                        const struct judge_spec *spec, struct nsb_config *ret);

/* The request for one case: python3 -I -B /program/NAME ARGS..., the
 * program bytes, the case's stdin; nothing else. *ret_argv (NULL-terminated,
 * strings borrowed from @prog and @st) is the caller's to free(). */
int judge_request_build(const struct nsb_config *cfg, const struct judge_program *prog,
                        const char *program_data, size_t program_len,
                        const struct judge_stimulus *st, int cancel_fd,
                        char ***ret_argv, struct sbx_request *ret, struct nsb_error *e);

/* After case @c: stop the remaining cases? (a cancel, or a failure under
 * --fail-fast) */
bool judge_should_stop(const struct judge_case_report *c, bool fail_fast);

/* Mark cases[from..n) not_run with @reason. */
void judge_mark_not_run(struct judge_case_report *cases, size_t from, size_t n, const char *reason);

/* The human summary: one line per case, then the suite verdict. malloc'd. */
char *judge_summary_text(const struct judge_report *rep);

/* Append @len bytes of @s to @buf (size @size, NUL-terminated), escaped
 * (\n \t \r \\ \' \xNN; invalid UTF-8 as \xNN, so the result is always
 * valid UTF-8) and clipped to @max_chars output bytes, "..." marking a cut. */
void judge_escape_append(char *buf, size_t size, const char *s, size_t len, size_t max_chars);
