/* judge/judge_plan.c — matchers, case and suite verdicts, the request for a
 * case and the merged configuration. Pure: allocation only.
 *
 * The rule behind every branch: `fail` needs evidence (something the program
 * observably did), `undetermined` is for everything that cannot settle the
 * question (a sandbox error, a cancel, output cut before the point that
 * decides). Broken infrastructure must never look like a wrong program.
 */
#include "judge/judge_internal.h"
#include "config/hints.h"
#include "config/schema.h"
#include "config/policy.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/portable.h"
#include "util/textsafe.h"

/* Excerpts of output in a reason are clipped to this many bytes. */
#define EXCERPT_MAX 80
/* PCRE2 heap for one match, in KiB: a pathological pattern on a 1 MiB stream
 * gives up (undetermined) instead of taking the host's memory. */
#define REGEX_HEAP_LIMIT_KIB (64u * 1024u)

/* ---- text helpers -------------------------------------------------------- */

/* Excerpts, names and messages are put in a reason as they are (valid
 * UTF-8, clipped): the JSON verdict carries the exact text, and each
 * renderer shows the unsafe characters of util/textsafe.h its own way (the
 * text summary, nsbox report, JUnit). */
void judge_excerpt_append(char *buf, size_t size, const char *s, size_t len, size_t max)
{
        textsafe_exact_append(buf, size, s, len, max);
}

static void append_regex(char *buf, size_t size, const struct judge_matcher *m)
{
        nsb_appendf(buf, size, "/");
        judge_excerpt_append(buf, size, m->text, m->len, EXCERPT_MAX);
        nsb_appendf(buf, size, "/");
}

/* 'text', clipped; '...text' when it starts mid-line. */
static void append_excerpt_at(char *buf, size_t size, const char *s, size_t len, bool mid)
{
        nsb_appendf(buf, size, mid ? "'..." : "'");
        judge_excerpt_append(buf, size, s, len, EXCERPT_MAX);
        nsb_appendf(buf, size, "'");
}

static void append_excerpt(char *buf, size_t size, const char *s, size_t len)
{
        append_excerpt_at(buf, size, s, len, false);
}

/* An expected value, or only that there is one (--junit without
 * --junit-expected: a CI page may be the learner's). */
static void append_expected(char *buf, size_t size, const struct judge_matcher *m, bool hide)
{
        if (hide)
                nsb_appendf(buf, size, m->kind == JUDGE_MATCH_REGEX ? "the expected pattern" : "the expected text");
        else if (m->kind == JUDGE_MATCH_REGEX)
                append_regex(buf, size, m);
        else
                append_excerpt(buf, size, m->text, m->len);
}

static size_t count_lines(const char *s, size_t len)
{
        size_t n = 0;

        for (size_t i = 0; i < len; i++)
                if (s[i] == '\n')
                        n++;
        if (len > 0 && s[len - 1] != '\n')
                n++;
        return n;
}

/* The line of @s that starts at @start: its length without the newline. */
static size_t line_len(const char *s, size_t len, size_t start)
{
        const char *nl = memchr(s + start, '\n', len - start);
        return nl ? (size_t) (nl - (s + start)) : len - start;
}

/* "stdout differs at line 3: expected '5', got '6' (expected 3 lines, got 2)".
 * @got is the whole stream, or its kept prefix when @cut. */
static void equals_reason(char *buf, size_t size, const char *stream, const char *exp, size_t exp_len,
                          const char *got, size_t got_len, bool cut, bool hide)
{
        size_t min = exp_len < got_len ? exp_len : got_len, d = 0, ls = 0, line = 1, win;
        size_t el, gl;

        while (d < min && exp[d] == got[d])
                d++;
        for (size_t i = 0; i < d; i++)
                if (exp[i] == '\n') {
                        line++;
                        ls = i + 1;
                }
        nsb_appendf(buf, size, "%s differs at line %zu: %s", stream, line, hide ? "" : "expected ");
        el = ls < exp_len ? line_len(exp, exp_len, ls) : 0;
        gl = ls < got_len ? line_len(got, got_len, ls) : 0;
        /* Only the trailing newline differs: show it, or the two excerpts
         * would look the same. */
        if (ls < exp_len && ls < got_len && el == gl && memcmp(exp + ls, got + ls, el) == 0) {
                if (ls + el < exp_len)
                        el++;
                if (ls + gl < got_len)
                        gl++;
        }
        /* A long line: start the excerpts a little before the difference,
         * on a character boundary. */
        win = d - ls > EXCERPT_MAX / 2 ? d - EXCERPT_MAX / 4 : ls;
        while (win > ls && (((unsigned char) exp[win] & 0xc0) == 0x80))
                win--;
        if (hide) {
                /* the expected side is the judge's: not quoted */
        } else if (ls >= exp_len) {
                nsb_appendf(buf, size, "end of output");
        } else {
                append_excerpt_at(buf, size, exp + win, el - (win - ls), win > ls);
        }
        nsb_appendf(buf, size, hide ? "got " : ", got ");
        if (ls >= got_len) {
                nsb_appendf(buf, size, cut ? "end of the kept output" : "end of output");
        } else {
                append_excerpt_at(buf, size, got + win, gl - (win - ls), win > ls);
        }
        if (!cut) {
                size_t en = count_lines(exp, exp_len), gn = count_lines(got, got_len);
                if (en != gn && hide)
                        nsb_appendf(buf, size, " (got %zu line%s, not the expected count)", gn, gn == 1 ? "" : "s");
                else if (en != gn)
                        nsb_appendf(buf, size, " (expected %zu line%s, got %zu)", en, en == 1 ? "" : "s", gn);
        }
}

static void cut_note(char *buf, size_t size, const char *stream, const struct judge_stream_view *s)
{
        nsb_appendf(buf, size, "%s was cut at %zu of %llu bytes", stream, s->kept, (unsigned long long) s->bytes);
}

/* ---- matchers ------------------------------------------------------------ */

static enum judge_verdict match_equals(const struct judge_matcher *m, const char *stream, const char *text, bool hide,
                                       const struct judge_stream_view *s, bool cut, char *reason, size_t size)
{
        size_t kept = s->kept, d = 0, min = kept < m->len ? kept : m->len;

        if (!cut) {
                if (kept == m->len && memcmp(text, m->text, kept) == 0) {
                        nsb_appendf(reason, size, "%s equals expected", stream);
                        return JUDGE_PASS;
                }
                equals_reason(reason, size, stream, m->text, m->len, text, kept, false, hide);
                return JUDGE_FAIL;
        }
        while (d < min && text[d] == m->text[d])
                d++;
        if (d < kept) {
                /* The kept prefix already differs (or goes past the expected
                 * end): evidence, whatever was cut. */
                equals_reason(reason, size, stream, m->text, m->len, text, kept, true, hide);
                nsb_appendf(reason, size, " (");
                cut_note(reason, size, stream, s);
                nsb_appendf(reason, size, ")");
                return JUDGE_FAIL;
        }
        if (s->bytes != m->len) {
                if (hide)
                        nsb_appendf(reason, size, "%s differs: the program wrote %llu bytes, not the expected count (",
                                    stream, (unsigned long long) s->bytes);
                else
                        nsb_appendf(reason, size, "%s differs: expected %zu bytes, the program wrote %llu (", stream,
                                    m->len, (unsigned long long) s->bytes);
                cut_note(reason, size, stream, s);
                nsb_appendf(reason, size, ")");
                return JUDGE_FAIL;
        }
        /* Same length, same prefix: the recorded tail holds the stream's
         * last bytes (only what the result records, so anyone holding it
         * reaches this verdict too). */
        if (s->tail_len > 0 && s->tail_len <= m->len) {
                if (memcmp(s->tail, m->text + m->len - s->tail_len, s->tail_len) != 0) {
                        nsb_appendf(reason, size, "%s differs in its last %zu bytes (", stream, s->tail_len);
                        cut_note(reason, size, stream, s);
                        nsb_appendf(reason, size, ")");
                        return JUDGE_FAIL;
                }
                if (kept + s->tail_len >= s->bytes) {
                        nsb_appendf(reason, size, "%s equals expected (from the kept part and the tail)", stream);
                        return JUDGE_PASS;
                }
        }
        cut_note(reason, size, stream, s);
        nsb_appendf(reason, size, "; the kept part matches, the rest cannot be checked");
        return JUDGE_UNDETERMINED;
}

static enum judge_verdict match_contains(const struct judge_matcher *m, const char *stream, const char *text, bool hide,
                                         const struct judge_stream_view *s, bool cut, char *reason, size_t size)
{
        bool found = m->len == 0 || nsb_memmem(text, s->kept, m->text, m->len) != NULL;

        /* A cut stream can still prove a substring: what was kept is real. */
        if (!found && cut && s->tail_len > 0)
                found = nsb_memmem(s->tail, s->tail_len, m->text, m->len) != NULL;
        if (found) {
                nsb_appendf(reason, size, "%s contains ", stream);
                append_expected(reason, size, m, hide);
                return JUDGE_PASS;
        }
        if (cut) {
                cut_note(reason, size, stream, s);
                nsb_appendf(reason, size, " and neither the kept part nor the recorded tail contains ");
                append_expected(reason, size, m, hide);
                return JUDGE_UNDETERMINED;
        }
        nsb_appendf(reason, size, "%s does not contain ", stream);
        append_expected(reason, size, m, hide);
        return JUDGE_FAIL;
}

static enum judge_verdict match_regex(const struct judge_matcher *m, const char *stream, const char *text, bool hide,
                                      const struct judge_stream_view *s, bool cut, char *reason, size_t size)
{
        pcre2_match_context *mctx = NULL;
        pcre2_match_data *md = NULL;
        int rc;

        /* An anchor, a lookahead or a greedy span may depend on what was cut. */
        if (cut) {
                cut_note(reason, size, stream, s);
                nsb_appendf(reason, size, "; a regex cannot be settled on cut output");
                return JUDGE_UNDETERMINED;
        }
        md = pcre2_match_data_create_from_pattern(m->re, NULL);
        mctx = pcre2_match_context_create(NULL);
        if (!md || !mctx) {
                pcre2_match_data_free(md);
                pcre2_match_context_free(mctx);
                nsb_appendf(reason, size, "%s: out of memory while matching the regex", stream);
                return JUDGE_UNDETERMINED;
        }
        pcre2_set_heap_limit(mctx, REGEX_HEAP_LIMIT_KIB);
        rc = pcre2_match(m->re, (PCRE2_SPTR) text, s->kept, 0, 0, md, mctx);
        pcre2_match_data_free(md);
        pcre2_match_context_free(mctx);
        if (rc >= 0) {
                nsb_appendf(reason, size, "%s matches ", stream);
                append_expected(reason, size, m, hide);
                return JUDGE_PASS;
        }
        if (rc == PCRE2_ERROR_NOMATCH) {
                nsb_appendf(reason, size, "%s does not match ", stream);
                append_expected(reason, size, m, hide);
                return JUDGE_FAIL;
        }
        {
                PCRE2_UCHAR msg[200];
                if (pcre2_get_error_message(rc, msg, sizeof msg) < 0)
                        snprintf((char *) msg, sizeof msg, "error %d", rc);
                /* A limit of the matcher, not evidence about the program. */
                nsb_appendf(reason, size, "%s: the regex could not be evaluated: %s", stream, (char *) msg);
        }
        return JUDGE_UNDETERMINED;
}

static enum judge_verdict match_stream(const struct judge_matcher *m, const char *stream_name,
                                       const struct judge_stream_view *s, bool hide, char *reason, size_t reason_len)
{
        const char *text = s->text ? s->text : "";
        bool cut = s->cut || s->bytes > s->kept;

        if (reason_len)
                reason[0] = '\0';
        switch (m->kind) {
        case JUDGE_MATCH_EQUALS:
                return match_equals(m, stream_name, text, hide, s, cut, reason, reason_len);
        case JUDGE_MATCH_CONTAINS:
                return match_contains(m, stream_name, text, hide, s, cut, reason, reason_len);
        case JUDGE_MATCH_REGEX:
                return match_regex(m, stream_name, text, hide, s, cut, reason, reason_len);
        case JUDGE_MATCH_NONE:
        default:
                return JUDGE_PASS;
        }
}

enum judge_verdict judge_match_stream(const struct judge_matcher *m, const char *stream_name,
                                      const struct judge_stream_view *s, char *reason, size_t reason_len)
{
        return match_stream(m, stream_name, s, false, reason, reason_len);
}

/* ---- verdicts ------------------------------------------------------------ */

/* " (stderr: 'ZeroDivisionError: division by zero')": the last non-empty
 * line of stderr, which is where Python puts the exception. */
static void append_stderr_hint(char *buf, size_t size, const struct judge_stream_view *err)
{
        const char *s = err->text;
        size_t len = err->kept, end, start;

        if (err->cut && err->tail_len > 0) {
                s = err->tail;
                len = err->tail_len;
        }
        if (!s || len == 0)
                return;
        end = len;
        while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r' || s[end - 1] == ' '))
                end--;
        if (end == 0)
                return;
        start = end;
        while (start > 0 && s[start - 1] != '\n')
                start--;
        nsb_appendf(buf, size, " (stderr: ");
        append_excerpt(buf, size, s + start, end - start);
        nsb_appendf(buf, size, ")");
}

static void signal_text(int sig, char *buf, size_t size)
{
        const char *abbrev = sig > 0 ? nsb_signame(sig) : NULL;

        if (abbrev)
                snprintf(buf, size, "SIG%s", abbrev);
        else
                snprintf(buf, size, "signal %d", sig);
}

static void join(char *buf, size_t size, const char *part)
{
        if (!*part)
                return;
        if (*buf)
                nsb_appendf(buf, size, "; ");
        nsb_appendf(buf, size, "%s", part);
}

static int case_verdict(const struct judge_expect *x, const struct judge_evidence *r, bool hide,
                        struct judge_case_report *ret)
{
        char *reason = ret->reason;
        const size_t size = sizeof ret->reason;
        char limit_text[160];

        reason[0] = '\0';
        switch (r->status) {
        case RUN_ERROR: {
                const char *msg = r->error_message ? r->error_message : "";

                /* as recorded (clipped): the renderers show it on one line */
                nsb_appendf(reason, size, "sandbox error at stage ");
                judge_excerpt_append(reason, size, r->error_stage ? r->error_stage : "unknown",
                                    r->error_stage ? strlen(r->error_stage) : 7, 40);
                nsb_appendf(reason, size, ": ");
                judge_excerpt_append(reason, size, msg, strlen(msg), 300);
                ret->verdict = JUDGE_UNDETERMINED;
                return 0;
        }
        case RUN_CANCELLED:
                nsb_appendf(reason, size, "cancelled before the case finished");
                ret->verdict = JUDGE_UNDETERMINED;
                return 0;
        case RUN_LIMIT:
                if (r->limit && ret->raise_in_spec && cfg_limit_key(r->limit)) {
                        char key[64];

                        /* a batch's or serve's job: the spec's limits win over the flags */
                        snprintf(key, sizeof key, "the spec's limits.%s", cfg_limit_key(r->limit));
                        cfg_limit_describe_by(r->limit, r->limit_value, key, limit_text, sizeof limit_text);
                        nsb_appendf(reason, size, "stopped by %s", limit_text);
                } else if (r->limit && cfg_limit_describe(r->limit, r->limit_value, limit_text, sizeof limit_text)) {
                        /* the value and the flag, as the CLI says it (config/hints.h) */
                        nsb_appendf(reason, size, "stopped by %s", limit_text);
                } else if (r->limit) {
                        nsb_appendf(reason, size, "stopped by the ");
                        judge_excerpt_append(reason, size, r->limit, strlen(r->limit), 40);
                        nsb_appendf(reason, size, " limit");
                } else
                        nsb_appendf(reason, size, "stopped by a limit");
                append_stderr_hint(reason, size, &r->err);
                ret->verdict = JUDGE_FAIL;
                return 0;
        case RUN_SIGNALED: {
                char sig[32];

                signal_text(r->signal, sig, sizeof sig);
                nsb_appendf(reason, size, "killed by %s", sig);
                append_stderr_hint(reason, size, &r->err);
                ret->verdict = JUDGE_FAIL;
                return 0;
        }
        case RUN_EXITED:
        default:
                break;
        }

        {
                char exit_part[JUDGE_REASON_MAX] = "", out_part[JUDGE_REASON_MAX] = "",
                     err_part[JUDGE_REASON_MAX] = "";
                enum judge_verdict ev = JUDGE_PASS, ov, erv;

                if (r->exit_code != x->exit_code) {
                        ev = JUDGE_FAIL;
                        if (hide)
                                nsb_appendf(exit_part, sizeof exit_part, "exit code %d, not the expected one",
                                            r->exit_code);
                        else
                                nsb_appendf(exit_part, sizeof exit_part, "exit code %d, expected %d", r->exit_code,
                                            x->exit_code);
                        if (x->err.kind == JUDGE_MATCH_NONE)
                                append_stderr_hint(exit_part, sizeof exit_part, &r->err);
                } else {
                        nsb_appendf(exit_part, sizeof exit_part, "exit code %d", r->exit_code);
                }
                ov = match_stream(&x->out, "stdout", &r->out, hide, out_part, sizeof out_part);
                erv = match_stream(&x->err, "stderr", &r->err, hide, err_part, sizeof err_part);

                if (ev == JUDGE_FAIL || ov == JUDGE_FAIL || erv == JUDGE_FAIL) {
                        ret->verdict = JUDGE_FAIL;
                        if (ev == JUDGE_FAIL)
                                join(reason, size, exit_part);
                        if (ov == JUDGE_FAIL)
                                join(reason, size, out_part);
                        if (erv == JUDGE_FAIL)
                                join(reason, size, err_part);
                } else if (ov == JUDGE_UNDETERMINED || erv == JUDGE_UNDETERMINED) {
                        ret->verdict = JUDGE_UNDETERMINED;
                        if (ov == JUDGE_UNDETERMINED)
                                join(reason, size, out_part);
                        if (erv == JUDGE_UNDETERMINED)
                                join(reason, size, err_part);
                } else {
                        ret->verdict = JUDGE_PASS;
                        nsb_appendf(reason, size, "%s", exit_part);
                        if (*out_part)
                                nsb_appendf(reason, size, ", %s", out_part);
                        if (*err_part)
                                nsb_appendf(reason, size, ", %s", err_part);
                }
        }
        return 0;
}

int judge_case_verdict(const struct judge_expect *x, const struct judge_evidence *r,
                       struct judge_case_report *ret)
{
        return case_verdict(x, r, false, ret);
}

void judge_case_public_reason(const struct judge_expect *x, const struct judge_evidence *r, char *buf, size_t size)
{
        struct judge_case_report c;

        memset(&c, 0, sizeof c);
        case_verdict(x, r, true, &c);
        snprintf(buf, size, "%s", c.reason);
}

void judge_case_settle(const struct judge_expect *x, json_t *result, struct judge_case_report *c)
{
        struct judge_evidence ev;
        struct nsb_error e;

        c->ran = true;
        c->result_json = result;
        c->reason[0] = '\0';
        if (!result) {
                c->status = RUN_ERROR;
                c->verdict = JUDGE_UNDETERMINED;
                nsb_appendf(c->reason, sizeof c->reason, "the result could not be recorded: out of memory");
                return;
        }
        nsb_error_clear(&e);
        if (judge_evidence_parse(result, &ev, &e) < 0) {
                /* Not evidence about the program: what was recorded cannot be read. */
                c->status = RUN_ERROR;
                c->verdict = JUDGE_UNDETERMINED;
                nsb_appendf(c->reason, sizeof c->reason, "the recorded result cannot be judged: ");
                judge_excerpt_append(c->reason, sizeof c->reason, e.msg, strlen(e.msg), 300);
                return;
        }
        c->status = ev.status;
        judge_case_verdict(x, &ev, c);
        judge_evidence_free(&ev);
}

enum judge_verdict judge_suite_verdict(const struct judge_case_report *cases, size_t n)
{
        bool all_pass = n > 0;

        for (size_t i = 0; i < n; i++) {
                if (cases[i].verdict == JUDGE_FAIL)
                        return JUDGE_FAIL;   /* evidence, even if other cases did not run */
                if (cases[i].verdict != JUDGE_PASS)
                        all_pass = false;
        }
        return all_pass ? JUDGE_PASS : JUDGE_UNDETERMINED;
}

int judge_exit_code(enum judge_verdict suite)
{
        switch (suite) {
        case JUDGE_PASS:
                return NSB_EXIT_OK;
        case JUDGE_FAIL:
                return NSB_EXIT_FAIL;
        default:
                return NSB_EXIT_UNDETERMINED;
        }
}

const char *judge_verdict_name(enum judge_verdict v)
{
        switch (v) {
        case JUDGE_PASS:
                return "pass";
        case JUDGE_FAIL:
                return "fail";
        case JUDGE_NOT_RUN:
                return "not_run";
        default:
                return "undetermined";
        }
}

bool judge_should_stop(const struct judge_case_report *c, bool fail_fast)
{
        if (c->ran && c->status == RUN_CANCELLED)
                return true;
        return fail_fast && c->verdict == JUDGE_FAIL;
}

void judge_mark_not_run(struct judge_case_report *cases, size_t from, size_t n, const char *reason)
{
        for (size_t i = from; i < n; i++) {
                cases[i].verdict = JUDGE_NOT_RUN;
                cases[i].ran = false;
                snprintf(cases[i].reason, sizeof cases[i].reason, "%s", reason);
        }
}

void judge_mark_cancelled(struct judge_case_report *cases, size_t from, size_t n)
{
        judge_mark_not_run(cases, from, n, JUDGE_NOT_RUN_CANCELLED);
        for (size_t i = from; i < n; i++)
                cases[i].status = RUN_CANCELLED;
}

/* ---- configuration and request ------------------------------------------ */

unsigned judge_cli_explicit(const struct nsb_config *cli)
{
        /* The limits the command line marked, so a flag that repeats the
         * default still wins over the spec. */
        return cli->set & cfg_limit_bits();
}

void judge_config_merge(const struct nsb_config *cli, unsigned cli_explicit, const struct judge_spec *spec,
                        struct nsb_config *ret)
{
        *ret = *cli;
        /* precedence: flag > spec > default */
        cfg_limits_apply(&spec->limits, spec->limits_set & ~cli_explicit, ret);
        if (!cli->profile && spec->profile)
                ret->profile = spec->profile;
}

int judge_request_build(const struct nsb_config *cfg, const struct judge_program *prog,
                        const char *program_data, size_t program_len, const struct judge_stimulus *st,
                        int cancel_fd, struct prog *ret, struct nsb_error *e)
{
        /* Only the stimulus goes in: the case's expectations never reach the sandbox. */
        const struct prog_source src = {
                .kind = PROG_FILE, .name = prog->name, .data = program_data, .len = program_len,
                .script = prog->script, .workdir = prog->workdir,
                .args = st->args, .n_args = st->n_args,
                .stdin_mode = PROG_STDIN_PER_RUN, .stdin_data = st->stdin_data, .stdin_len = st->stdin_len,
        };

        if (prog_build(cfg, &src, ret, e) < 0)
                return -ENOMEM;
        ret->req.relay = false;
        ret->req.cancel_fd = cancel_fd;
        return 0;
}
