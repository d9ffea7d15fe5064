/* testcmd/testcmd_plan.c — the results channel, the verdict rules of
 * harness/README.md and the `nsbox.tests/1` rendering. Pure: allocation only
 * (open_memstream writes to memory).
 */
#include "testcmd/testcmd_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/hints.h"
#include "util/cleanup.h"
#include "util/json_cleanup.h"
#include "util/portable.h"
#include "util/textsafe.h"

static const char *const outcome_names[] = { "passed", "failed", "error", "skipped", "not_run" };

const char *tc_outcome_name(enum tc_outcome o)
{
        return o <= TC_NOT_RUN ? outcome_names[o] : "error";
}

const char *tc_verdict_name(enum tc_verdict v)
{
        return v == TC_PASS ? "pass" : v == TC_FAIL ? "fail" : "undetermined";
}

int tc_exit_code(enum tc_verdict v)
{
        return v == TC_PASS ? TESTCMD_EXIT_PASS : v == TC_FAIL ? TESTCMD_EXIT_FAIL : TESTCMD_EXIT_UNDETERMINED;
}

void tc_report_free(struct tc_report *rep)
{
        for (size_t i = 0; i < rep->n_tests; i++) {
                free(rep->tests[i].name);
                free(rep->tests[i].message);
                free(rep->tests[i].traceback);
                free(rep->tests[i].out);
                free(rep->tests[i].err);
        }
        free(rep->tests);
        for (size_t i = 0; i < rep->n_collect_errors; i++) {
                free(rep->collect_errors[i].file);
                free(rep->collect_errors[i].message);
        }
        free(rep->collect_errors);
        memset(rep, 0, sizeof *rep);
}

/* The first reason wins: later ones are usually consequences. */
static void distrust(struct tc_report *rep, const char *why, size_t line)
{
        if (rep->trusted) {
                snprintf(rep->problem, sizeof rep->problem, "results channel line %zu: %s", line, why);
                rep->trusted = false;
        }
}

/* A copy of a JSON string or null member; *ok = false when it is another type. */
static int dup_opt_string(json_t *obj, const char *key, char **ret, bool *ok)
{
        json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v)) {
                *ok = false;
                return 0;
        }
        *ret = strndup(json_string_value(v), json_string_length(v));
        return *ret ? 0 : -ENOMEM;
}

static int on_start(struct tc_report *rep, json_t *ev, size_t line)
{
        json_t *tests = json_object_get(ev, "tests"), *v;
        size_t i;

        if (rep->started)
                return distrust(rep, "a second start event", line), 0;
        rep->started = true;
        if (!json_is_integer(json_object_get(ev, "protocol")) ||
            json_integer_value(json_object_get(ev, "protocol")) != 1)
                return distrust(rep, "start: unknown protocol", line), 0;
        if (!json_is_array(tests))
                return distrust(rep, "start: no test list", line), 0;
        rep->tests = calloc(json_array_size(tests) + 1, sizeof *rep->tests);
        if (!rep->tests)
                return -ENOMEM;
        json_array_foreach(tests, i, v) {
                if (!json_is_string(v))
                        return distrust(rep, "start: a test name is not a string", line), 0;
                rep->tests[i].outcome = TC_NOT_RUN;
                rep->tests[i].name = strndup(json_string_value(v), json_string_length(v));
                if (!rep->tests[i].name)
                        return -ENOMEM;
                rep->n_tests = i + 1;
        }
        return 0;
}

/* The runner's count of what a test's sys.stdout/err wrote; a runner
 * before it gives none: the captured text's length. */
static uint64_t event_bytes(json_t *ev, const char *key, const char *text)
{
        json_t *v = json_object_get(ev, key);

        return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t) json_integer_value(v)
                                                                 : text ? strlen(text) : 0;
}

static int on_test(struct tc_report *rep, json_t *ev, size_t line)
{
        json_t *name = json_object_get(ev, "name"), *outcome = json_object_get(ev, "outcome");
        json_t *dur = json_object_get(ev, "duration_ms");
        struct tc_test *t;
        enum tc_outcome o = TC_NOT_RUN;
        bool ok = true;

        if (rep->done)
                return distrust(rep, "a test event after done", line), 0;
        /* Events arrive in the announced order: the next one must be it. */
        if (rep->n_reported >= rep->n_tests || !json_is_string(name) ||
            strcmp(json_string_value(name), rep->tests[rep->n_reported].name) != 0)
                return distrust(rep, "a test event that start did not announce next", line), 0;
        for (int k = TC_PASSED; k < TC_NOT_RUN; k++)
                if (json_is_string(outcome) && strcmp(json_string_value(outcome), outcome_names[k]) == 0)
                        o = (enum tc_outcome) k;
        if (o == TC_NOT_RUN)
                return distrust(rep, "a test event with an unknown outcome", line), 0;
        t = &rep->tests[rep->n_reported];
        if (dup_opt_string(ev, "message", &t->message, &ok) < 0 ||
            dup_opt_string(ev, "traceback", &t->traceback, &ok) < 0 ||
            dup_opt_string(ev, "stdout", &t->out, &ok) < 0 || dup_opt_string(ev, "stderr", &t->err, &ok) < 0)
                return -ENOMEM;
        t->import_error = json_is_true(json_object_get(ev, "import_error"));
        t->out_bytes = event_bytes(ev, "stdout_bytes", t->out);
        t->err_bytes = event_bytes(ev, "stderr_bytes", t->err);
        if (!ok)
                return distrust(rep, "a test event with a non-string message", line), 0;
        t->outcome = o;
        t->duration_ms = json_is_number(dur) ? json_number_value(dur) : 0;
        rep->n_reported++;
        return 0;
}

static int on_collect_error(struct tc_report *rep, json_t *ev, size_t line)
{
        struct tc_collect_error *n, *c;
        bool ok = true;

        n = realloc(rep->collect_errors, (rep->n_collect_errors + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        rep->collect_errors = n;
        c = &n[rep->n_collect_errors++];
        memset(c, 0, sizeof *c);
        if (dup_opt_string(ev, "file", &c->file, &ok) < 0 || dup_opt_string(ev, "message", &c->message, &ok) < 0)
                return -ENOMEM;
        if (!ok)
                distrust(rep, "a malformed collect_error event", line);
        return 0;
}

static void on_done(struct tc_report *rep, json_t *ev, size_t line)
{
        json_t *collected = json_object_get(ev, "collected"), *dur = json_object_get(ev, "duration_ms");

        if (rep->done)
                return distrust(rep, "a second done event", line);
        rep->done = true;
        rep->collected = json_is_integer(collected) ? json_integer_value(collected) : -1;
        if (json_is_number(dur))
                rep->duration_ms = json_number_value(dur);
        if (rep->collected < 0 || (size_t) rep->collected != rep->n_tests || rep->n_reported != rep->n_tests)
                distrust(rep, "done does not match the test events received", line);
}

int tc_channel_parse(const char *buf, size_t len, struct tc_report *rep)
{
        size_t pos = 0, line = 0;

        memset(rep, 0, sizeof *rep);
        rep->trusted = true;
        rep->collected = -1;
        while (pos < len) {
                const char *nl = memchr(buf + pos, '\n', len - pos);
                size_t n = nl ? (size_t) (nl - (buf + pos)) : len - pos;
                AUTO(json_decref) json_t *ev = NULL;
                const char *kind;
                json_error_t jerr;
                int r = 0;

                line++;
                if (!nl) {
                        /* The runner always ends a line: it was stopped mid-write. */
                        distrust(rep, "an unterminated last line", line);
                        break;
                }
                ev = json_loadb(buf + pos, n, JSON_REJECT_DUPLICATES, &jerr);
                pos += n + 1;
                if (!ev || !json_is_object(ev) || !json_is_string(json_object_get(ev, "event"))) {
                        distrust(rep, "not a JSON event", line);
                        continue;
                }
                kind = json_string_value(json_object_get(ev, "event"));
                if (!rep->started && strcmp(kind, "start") != 0) {
                        distrust(rep, "the first event is not start", line);
                        continue;
                }
                if (strcmp(kind, "start") == 0)
                        r = on_start(rep, ev, line);
                else if (strcmp(kind, "test") == 0)
                        r = on_test(rep, ev, line);
                else if (strcmp(kind, "collect_error") == 0)
                        r = on_collect_error(rep, ev, line);
                else if (strcmp(kind, "done") == 0)
                        on_done(rep, ev, line);
                /* unknown events are ignored (README: the protocol may add some) */
                if (r < 0)
                        return r;
        }
        rep->in_order = rep->started && rep->trusted;
        if (!rep->started)
                distrust(rep, "no start event", line);
        else if (!rep->done)
                distrust(rep, "no done event (the runner ended early)", line);
        return 0;
}

static bool any_bad(const struct tc_report *rep)
{
        for (size_t i = 0; i < rep->n_tests; i++)
                if (rep->tests[i].outcome == TC_FAILED || rep->tests[i].outcome == TC_ERROR)
                        return true;
        return false;
}

static bool any_passed(const struct tc_report *rep)
{
        for (size_t i = 0; i < rep->n_tests; i++)
                if (rep->tests[i].outcome == TC_PASSED)
                        return true;
        return false;
}

/* @running: the first test without an event was running when the run
 * ended (a trusted channel names the tests in the order they run): it says
 * so, not "not run" like the tests after it (a test that wrote gigabytes
 * looked as innocent as they did). */
static void mark_not_run(struct tc_report *rep, const char *why, bool running)
{
        for (size_t i = 0; i < rep->n_tests; i++) {
                struct tc_test *t = &rep->tests[i];

                if (t->outcome != TC_NOT_RUN)
                        continue;
                t->outcome = TC_ERROR;
                free(t->message);
                free(t->traceback);
                t->traceback = NULL;
                if (nsb_asprintf(&t->message, "%s: %s", running ? "did not finish (it was running)" : "not run",
                                 why) < 0)
                        t->message = NULL;
                running = false;
        }
}

void tc_decide(struct tc_report *rep, const struct run_result *r)
{
        char why[TC_REASON_MAX];
        bool bad = any_bad(rep);
        bool runner_ok = r->status == RUN_EXITED && (r->exit_code == 0 || r->exit_code == 1);

        if (rep->duration_ms <= 0)
                rep->duration_ms = r->wall_ms;
        if (r->status == RUN_LIMIT) {
                /* Rule 4: the runner bounds itself by --budget, so a limit is
                 * evidence against the code under test. */
                char what[160];

                /* the value and the flag, in the CLI's words (config/hints.h) */
                cfg_limit_describe(run_limit_name(r->limit), r->limit_value, what, sizeof what);
                snprintf(why, sizeof why, "the sandbox stopped the tests: %s", what);
                mark_not_run(rep, why, rep->in_order);
                rep->verdict = TC_FAIL;
                snprintf(rep->reason, sizeof rep->reason, "%s", why);
                return;
        }
        if (r->status == RUN_EXITED && rep->trusted && rep->done &&
            (rep->n_collect_errors > 0 || rep->n_tests == 0)) {
                /* Rule 3: the course's harness is broken. */
                rep->verdict = TC_UNDETERMINED;
                snprintf(rep->reason, sizeof rep->reason, "%s",
                         rep->n_collect_errors ? "the harness could not be collected" : "the harness has no tests");
                return;
        }
        if (runner_ok && rep->trusted && rep->done && !bad && !any_passed(rep)) {
                /* Every test skipped: nothing was checked. A skip is also a
                 * one-liner for the code under test (raise unittest.SkipTest),
                 * so no pass without one test that passed. */
                rep->verdict = TC_UNDETERMINED;
                snprintf(rep->reason, sizeof rep->reason, "no test passed: every test was skipped");
                return;
        }
        if (runner_ok && rep->trusted && rep->done) {
                /* Rule 2. */
                rep->verdict = bad ? TC_FAIL : TC_PASS;
                snprintf(rep->reason, sizeof rep->reason, "%s", bad ? "some tests failed" : "every test passed");
                return;
        }
        /* Rule 5: sandbox error, cancel, runner exit 2/4, a signal, a
         * malformed or incomplete channel. */
        if (r->status == RUN_ERROR) {
                char msg[NSB_ERROR_MSG_MAX + 64];

                snprintf(why, sizeof why, "sandbox error (%s): %s", nsb_stage_name((enum nsb_stage) r->error.stage),
                         nsb_error_describe(&r->error, msg, sizeof msg));
        }
        else if (r->status == RUN_CANCELLED)
                snprintf(why, sizeof why, "cancelled");
        else if (r->status == RUN_SIGNALED)
                snprintf(why, sizeof why, "the test runner was killed by signal %d", r->signal);
        else if (!runner_ok)
                snprintf(why, sizeof why, "the test runner exited with status %d", r->exit_code);
        else
                snprintf(why, sizeof why, "%s", rep->problem[0] ? rep->problem : "incomplete results");
        mark_not_run(rep, why, false);
        rep->verdict = bad ? TC_FAIL : TC_UNDETERMINED;
        snprintf(rep->reason, sizeof rep->reason, "%s%s", bad ? "a test failed before: " : "", why);
}

/* json_object_set_new that reports a NULL value (allocation failure). */
static int set(json_t *obj, const char *key, json_t *v)
{
        if (!v)
                return -1;
        return json_object_set_new(obj, key, v);
}

static json_t *opt_string(const char *s)
{
        /* Channel strings came from jansson (valid UTF-8); ours are ASCII. */
        return s ? json_string(s) : json_null();
}

static json_t *counts_json(const struct tc_report *rep)
{
        size_t count[TC_NOT_RUN + 1] = { 0 };

        for (size_t i = 0; i < rep->n_tests; i++)
                count[rep->tests[i].outcome]++;
        return json_pack("{s:I, s:I, s:I, s:I}", "passed", (json_int_t) count[TC_PASSED], "failed",
                         (json_int_t) count[TC_FAILED], "error", (json_int_t) (count[TC_ERROR] + count[TC_NOT_RUN]),
                         "skipped", (json_int_t) count[TC_SKIPPED]);
}

json_t *tc_report_to_json(const struct tc_report *rep, json_t *result)
{
        AUTO(json_decref) json_t *root = json_object();
        AUTO(json_decref) json_t *res = result;
        json_t *tests, *errors;

        if (!root)
                return NULL;
        if (set(root, "schema", json_string(TESTCMD_SCHEMA)) < 0 ||
            set(root, "verdict", json_string(tc_verdict_name(rep->verdict))) < 0 ||
            set(root, "reason", json_string(rep->reason)) < 0 || set(root, "tests", json_array()) < 0 ||
            set(root, "collect_errors", json_array()) < 0 || set(root, "counts", counts_json(rep)) < 0 ||
            set(root, "duration_ms", json_real(rep->duration_ms)) < 0)
                return NULL;
        tests = json_object_get(root, "tests");
        for (size_t i = 0; i < rep->n_tests; i++) {
                const struct tc_test *t = &rep->tests[i];
                json_t *o = json_object();

                if (json_array_append_new(tests, o) < 0 || set(o, "name", json_string(t->name)) < 0 ||
                    set(o, "outcome", json_string(tc_outcome_name(t->outcome))) < 0 ||
                    set(o, "message", opt_string(t->message)) < 0 ||
                    set(o, "traceback", opt_string(t->traceback)) < 0 ||
                    set(o, "duration_ms", json_real(t->duration_ms)) < 0 ||
                    set(o, "stdout", opt_string(t->out)) < 0 || set(o, "stderr", opt_string(t->err)) < 0 ||
                    (t->import_error && set(o, "import_error", json_true()) < 0))
                        return NULL;
        }
        errors = json_object_get(root, "collect_errors");
        for (size_t i = 0; i < rep->n_collect_errors; i++) {
                const struct tc_collect_error *c = &rep->collect_errors[i];
                json_t *o = json_object();

                if (json_array_append_new(errors, o) < 0 || set(o, "file", opt_string(c->file)) < 0 ||
                    set(o, "message", opt_string(c->message)) < 0)
                        return NULL;
        }
        if (set(root, "result", res ? json_incref(res) : json_null()) < 0)
                return NULL;
        return move_ptr(&root);
}

static const char *mark(enum tc_outcome o)
{
        switch (o) {
        case TC_PASSED:
                return "\u2713";   /* ✓ */
        case TC_FAILED:
                return "\u2717";   /* ✗ */
        case TC_SKIPPED:
                return "-";
        default:
                return "!";
        }
}

/* The mark that starts a screen row continuing a long line (util/textsafe.h,
 * "Terminal wrapping"); under the stderr tail's gutter, its own. */
#define CONT "  \u21aa "
#define CONT_TAIL "  |\u21aa"

/* A text from the code under test or the harness (a test's message, a
 * collect error), under its test: each line after four spaces and each
 * screen row of a long line after CONT, so that no row of it passes for one
 * of the summary's, and its unsafe characters shown (util/textsafe.h) so
 * that it cannot move the cursor, erase a line or reorder one. */
static void indent(FILE *f, const char *text)
{
        if (text)
                textsafe_term_lines(f, text, strlen(text), "    ", CONT);
}

/* nsbox's @lead, then a name (a test's, a harness file's) or a reason: one
 * line, unsafe shown, wrapped before the terminal would wrap it. */
static void put_name(FILE *f, const char *lead, const char *name)
{
        size_t col = textsafe_cols(lead, strlen(lead));

        fputs(lead, f);
        if (name)
                textsafe_term_wrap(f, name, strlen(name), CONT, &col);
}

/* Under a failing test, what it printed (pytest's "Captured stdout"): its
 * first CAPTURED_SHOWN bytes, each line after a gutter, unsafe characters
 * shown (util/textsafe.h); the rest is in --json. */
#define CAPTURED_SHOWN 2000
static void captured(FILE *f, const char *label, const char *text)
{
        size_t len, keep;

        if (!text || !*text)
                return;
        len = strlen(text);
        keep = textsafe_cut(text, len, CAPTURED_SHOWN);     /* end on a character */
        fprintf(f, "    ---- captured %s ----\n", label);
        textsafe_term_lines(f, text, keep, "    | ", "    |\u21aa");
        if (keep < len)
                fprintf(f, "    | ... (%zu more bytes: --json has them)\n", len - keep);
}

/* "test_x.py" of "test_x.py::Class::test" (malloc'd; NULL on ENOMEM). */
static char *test_file(const char *name)
{
        const char *sep = strstr(name, "::");

        return strndup(name, sep ? (size_t) (sep - name) : strlen(name));
}

/* A module that could not be imported: said once, as pytest's collection
 * error, with the number of its tests that could not run. */
static void import_error_block(FILE *f, const struct tc_report *rep, size_t i)
{
        const struct tc_test *t = &rep->tests[i];
        AUTOFREE char *file = test_file(t->name);
        char lead[64];
        size_t n = 0;

        for (size_t k = 0; k < rep->n_tests; k++)
                if (rep->tests[k].import_error && file && strncmp(rep->tests[k].name, file, strlen(file)) == 0 &&
                    strncmp(rep->tests[k].name + strlen(file), "::", 2) == 0)
                        n++;
        put_name(f, "! ERROR collecting ", file ? file : t->name);
        snprintf(lead, sizeof lead, " (%zu test%s could not run)", n, n == 1 ? "" : "s");
        fputs(lead, f);
        fputc('\n', f);
        indent(f, t->message);
        captured(f, "stdout", t->out);
        captured(f, "stderr", t->err);
}

uint64_t tc_unattributed(const struct tc_report *rep, const struct run_stream *s, bool err)
{
        uint64_t tests = 0;

        for (size_t i = 0; i < rep->n_tests; i++)
                tests += err ? rep->tests[i].err_bytes : rep->tests[i].out_bytes;
        return s->bytes > tests ? s->bytes - tests : 0;
}

/* Under the failures, the run's own stream when some of it is no test's
 * sys-level output (tc_unattributed): its last lines, where a test's
 * os.write or subprocess output is, with where the rest is. */
static void run_stream_tail(FILE *f, const struct tc_report *rep, const struct run_stream *s, bool err)
{
        const char *text = s->truncated ? s->tail : s->text;
        size_t len = s->truncated ? s->tail_len : s->kept, keep = len > CAPTURED_SHOWN ? CAPTURED_SHOWN : len;
        uint64_t n = tc_unattributed(rep, s, err);

        if (!n || !len)
                return;
        /* start on a character (stray continuation bytes are shown, escaped) */
        for (int i = 0; i < 3 && keep > 0 && ((unsigned char) text[len - keep] & 0xc0) == 0x80; i++)
                keep--;
        fprintf(f, "\n---- the run's %s (last lines): %llu byte%s of it went to fd %d directly (os.write, a "
                   "subprocess, C code), not through a test's sys.%s, so no test is named for them; --json has it "
                   "all in result.%s ----\n",
                err ? "stderr" : "stdout", (unsigned long long) n, n == 1 ? "" : "s", err ? 2 : 1,
                err ? "stderr" : "stdout", err ? "stderr" : "stdout");
        textsafe_term_lines(f, text + len - keep, keep, "  | ", CONT_TAIL);
}

char *tc_summary_text(const struct tc_report *rep, const struct run_result *r)
{
        static const char *const label[] = { "passed", "failed", "error", "skipped" };
        size_t count[TC_NOT_RUN + 1] = { 0 };
        bool header = false, first = true;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        for (size_t i = 0; i < rep->n_tests; i++) {
                const struct tc_test *t = &rep->tests[i];
                char lead[16];

                count[t->outcome == TC_NOT_RUN ? TC_ERROR : t->outcome]++;
                snprintf(lead, sizeof lead, "%s ", mark(t->outcome));
                put_name(f, lead, t->name);
                fputc('\n', f);
        }
        for (size_t i = 0; i < rep->n_collect_errors; i++) {
                if (!header)
                        fputs("\n---- failures ----\n", f), header = true;
                put_name(f, "HARNESS ", rep->collect_errors[i].file);
                fputc('\n', f);
                indent(f, rep->collect_errors[i].message);
        }
        for (size_t i = 0; i < rep->n_tests; i++) {
                const struct tc_test *t = &rep->tests[i];
                char lead[32];

                if (t->outcome != TC_FAILED && t->outcome != TC_ERROR && t->outcome != TC_NOT_RUN)
                        continue;
                if (t->import_error && t->message && strncmp(t->message, "not run: ", 9) == 0)
                        continue;       /* its module's error is shown once */
                if (!header)
                        fputs("\n---- failures ----\n", f), header = true;
                if (t->import_error) {
                        import_error_block(f, rep, i);
                        continue;
                }
                snprintf(lead, sizeof lead, "%s %s ", mark(t->outcome), t->outcome == TC_FAILED ? "FAIL" : "ERROR");
                put_name(f, lead, t->name);
                fputc('\n', f);
                indent(f, t->message);
                captured(f, "stdout", t->out);
                captured(f, "stderr", t->err);
        }
        if (header && r) {
                run_stream_tail(f, rep, &r->out, false);
                /* an undetermined verdict shows the stderr tail below */
                if (!(rep->verdict == TC_UNDETERMINED && r->err.kept))
                        run_stream_tail(f, rep, &r->err, true);
        }
        fputs("\n== ", f);
        for (size_t k = 0; k < ARRAY_SIZE(label); k++) {
                if (!count[k])
                        continue;
                fprintf(f, "%s%zu %s", first ? "" : ", ", count[k], label[k]);
                first = false;
        }
        fprintf(f, "%s in %.2fs ==\n", first ? "no tests" : "", rep->duration_ms / 1000.0);
        if (rep->verdict != TC_PASS || rep->n_tests == 0) {
                /* the reason may quote a sandbox error, which may quote a path */
                char lead[64];

                snprintf(lead, sizeof lead, "verdict: %s (", tc_verdict_name(rep->verdict));
                put_name(f, lead, rep->reason);
                fputs(")\n", f);
        } else
                fprintf(f, "verdict: %s\n", tc_verdict_name(rep->verdict));
        if (rep->verdict == TC_UNDETERMINED && r && r->err.kept) {
                /* The runner's own complaint (or the learner's stderr): the
                 * last lines help to see why nothing could be decided. */
                size_t keep = r->err.kept > 2000 ? 2000 : r->err.kept;

                /* start on a character (skipping at most its 3 trailing
                 * bytes: stray continuation bytes are shown, escaped) */
                for (int i = 0; i < 3 && keep > 0 && ((unsigned char) r->err.text[r->err.kept - keep] & 0xc0) == 0x80;
                     i++)
                        keep--;
                fputs("---- stderr (last lines) ----\n", f);
                textsafe_term_lines(f, r->err.text + r->err.kept - keep, keep, "  | ", CONT_TAIL);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
