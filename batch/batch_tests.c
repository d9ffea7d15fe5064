/* batch/batch_tests.c — `test` jobs: the job's keys, the package the split
 * harness reads on stdin, and the verdict from its report. Pure:
 * allocation only.
 *
 * The harness (harness/nsbox_split.py, placed at /program/main.py) forks
 * the code's process before it reads the tests part of the package, and
 * reports on a stdout only its test process holds, each line keyed by a
 * random KEY that sits in the tests part. So a line nsbox trusts was
 * written by a process that read the tests, never by the code: the code
 * cannot know KEY, and the lines it could not write are fails, not passes.
 */
#include "batch/batch_tests.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/json_cleanup.h"

static int take_source(const json_t *root, const char *key, char **ret, size_t *ret_len, struct nsb_error *e)
{
        const json_t *v = json_object_get(root, key);

        if (!v)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "test job: missing \"%s\"", key);
        if (!json_is_string(v))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"%s\": expected a string", key);
        /* As for python jobs: a NUL would end a source line unseen. */
        if (memchr(json_string_value(v), '\0', json_string_length(v)))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"%s\": must not contain a NUL character", key);
        *ret = strdup(json_string_value(v));
        if (!*ret)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        *ret_len = json_string_length(v);
        return 0;
}

/* A Python name, or attributes and argument-less calls on one
 * (`Solution().twoSum`): the harness parses it; here only its characters
 * (it travels in the package's header line, blank-separated). */
static bool entry_text(const char *s)
{
        if (!s[0] || (s[0] >= '0' && s[0] <= '9') || s[0] == '.' || s[0] == '(' || s[0] == ')' ||
            strlen(s) > BATCH_ENTRY_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
                      *s == '.' || *s == '(' || *s == ')') ||
                    (*s == '(' && s[1] != ')'))   /* calls without arguments only */
                        return false;
        return true;
}

int batch_test_parse(const json_t *root, struct batch_job *job, struct nsb_error *e)
{
        const json_t *entry = json_object_get(root, "entry_point");
        int r;

        r = take_source(root, "code", &job->program, &job->program_len, e);
        if (r < 0)
                return r;
        r = take_source(root, "test_code", &job->tests, &job->tests_len, e);
        if (r < 0)
                return r;
        if (entry && !json_is_null(entry)) {
                /* It travels in the package's header line: a Python name only. */
                if (!json_is_string(entry) || !entry_text(json_string_value(entry)))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "\"entry_point\": expected the code's function: a Python name, or "
                                        "attributes and calls without arguments on one (Solution().twoSum), "
                                        "at most %d ASCII characters", BATCH_ENTRY_MAX);
                job->entry_point = strdup(json_string_value(entry));
                if (!job->entry_point)
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        }
        return 0;
}

uint64_t batch_test_budget_ms(uint64_t wall_ms)
{
        /* The harness reports a hang itself, before nsbox's wall limit. */
        uint64_t margin = wall_ms / 10 < 1000 ? wall_ms / 10 : 1000;

        return wall_ms - margin > 50 ? wall_ms - margin : 50;
}

int batch_test_package(const struct batch_job *job, uint64_t budget_ms, const char *key, char **ret, size_t *ret_len)
{
        char head[256];
        int n = snprintf(head, sizeof head, "NSBOX-SPLIT 1 %zu %zu %zu %" PRIu64 " %s\n", job->program_len,
                         job->stdin_len, job->tests_len, budget_ms, job->entry_point ? job->entry_point : "-");
        size_t key_len = strlen(key), len, off = 0;
        char *p;

        if (n < 0 || (size_t) n >= sizeof head)
                return -EINVAL;
        len = (size_t) n + job->program_len + job->stdin_len + key_len + 1 + job->tests_len;
        p = malloc(len + 1);
        if (!p)
                return -ENOMEM;
#define PUT(src, l) do { if (l) memcpy(p + off, (src), (l)); off += (l); } while (0)
        PUT(head, (size_t) n);
        PUT(job->program, job->program_len);
        PUT(job->stdin_data, job->stdin_len);
        /* The tests part: after everything the code's process gets. */
        PUT(key, key_len);
        PUT("\n", 1);
        PUT(job->tests, job->tests_len);
#undef PUT
        p[off] = '\0';
        *ret = p;
        *ret_len = off;
        return 0;
}

/* The report lines keyed by @key, in order. */
struct report {
        json_t *start_tests;            /* borrowed from the start event */
        json_t *events;                 /* name -> test event */
        json_t *extra;                  /* failed steps outside start.tests, in order */
        bool done;
};

static void add_event(struct report *rep, json_t *ev)
{
        const char *name = json_string_value(json_object_get(ev, "name"));
        const char *outcome = json_string_value(json_object_get(ev, "outcome"));
        bool listed = false;
        size_t i;
        json_t *t;

        if (!name || !outcome || (strcmp(outcome, "passed") != 0 && strcmp(outcome, "failed") != 0))
                return;
        json_array_foreach(rep->start_tests, i, t)
                listed = listed || strcmp(json_string_value(t), name) == 0;
        if (!listed) {
                /* A setup step that failed: a failing entry of its own; a
                 * pass outside the list proves nothing and is ignored. */
                if (strcmp(outcome, "failed") == 0)
                        json_array_append(rep->extra, ev);
                return;
        }
        if (json_object_get(rep->events, name)) {
                /* Twice: the report contradicts itself; no pass from it. */
                json_object_set_new(json_object_get(rep->events, name), "outcome", json_string("failed"));
                return;
        }
        json_object_set(rep->events, name, ev);
}

static bool string_array(const json_t *a)
{
        size_t i;
        json_t *t;

        if (!json_is_array(a))
                return false;
        json_array_foreach(a, i, t)
                if (!json_is_string(t))
                        return false;
        return true;
}

static void read_report(const char *out, size_t len, const char *key, json_t **ret_start, struct report *rep)
{
        size_t key_len = strlen(key);
        const char *p = out, *end = out + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t line_len;
                AUTO(json_decref) json_t *ev = NULL;
                const char *what;

                if (!nl)
                        break;   /* a cut last line is no line */
                line_len = (size_t) (nl - p);
                if (line_len > key_len && memcmp(p, key, key_len) == 0 && p[key_len] == ' ')
                        ev = json_loadb(p + key_len + 1, line_len - key_len - 1, 0, NULL);
                p = nl + 1;
                what = json_string_value(json_object_get(ev, "event"));
                if (!what)
                        continue;
                if (!*ret_start) {
                        if (strcmp(what, "start") == 0 && json_integer_value(json_object_get(ev, "protocol")) == 1 &&
                            string_array(json_object_get(ev, "tests")))
                                *ret_start = json_incref(ev);
                        continue;
                }
                rep->start_tests = json_object_get(*ret_start, "tests");
                if (strcmp(what, "test") == 0 && !rep->done)
                        add_event(rep, ev);
                else if (strcmp(what, "done") == 0)
                        rep->done = true;
        }
}

/* Why the tests without an event did not run: the run's own end. */
static void not_run_reason(const struct run_result *r, bool started, char *buf, size_t size)
{
        if (r->status == RUN_LIMIT)
                snprintf(buf, size, "not run: the %s limit stopped the job", run_limit_name(r->limit));
        else if (r->status == RUN_SIGNALED)
                snprintf(buf, size, "not run: the test process was killed by signal %d", r->signal);
        else if (!started && r->status == RUN_EXITED && r->exit_code == BATCH_TEST_SETUP_FAILED)
                snprintf(buf, size, "not run: the harness could not set up (its stderr says why)");
        else if (!started)
                snprintf(buf, size, "not run: the test process ended before it announced the tests (exit status %d)",
                         r->exit_code);
        else
                snprintf(buf, size, "not run: the test process ended before it (exit status %d)", r->exit_code);
}

static json_t *test_entry(const char *name, const json_t *ev, const char *not_run)
{
        const json_t *ms = ev ? json_object_get(ev, "duration_ms") : NULL;
        const json_t *msg = ev ? json_object_get(ev, "message") : NULL;
        const char *outcome = ev ? json_string_value(json_object_get(ev, "outcome")) : "failed";

        return json_pack("{s:s, s:s, s:O, s:o}", "name", name, "outcome", outcome, "duration_ms",
                         json_is_number(ms) ? ms : json_null(), "message",
                         !ev ? json_string(not_run) : json_is_string(msg) ? json_incref((json_t *) msg) : json_null());
}

json_t *batch_test_verdict(const char *out, size_t len, const char *key, const struct run_result *r,
                           enum batch_outcome *ret_outcome)
{
        AUTO(json_decref) json_t *start = NULL;
        AUTO(json_decref) json_t *events = json_object(), *extra = json_array(), *tests = json_array();
        struct report rep = { .events = events, .extra = extra };
        size_t passed = 0, total, i;
        char not_run[160];
        json_t *t;

        if (!events || !extra || !tests)
                return NULL;
        read_report(out ? out : "", out ? len : 0, key, &start, &rep);
        not_run_reason(r, start != NULL, not_run, sizeof not_run);
        if (start)
                json_array_foreach(json_object_get(start, "tests"), i, t) {
                        const char *name = json_string_value(t);
                        json_t *ev = json_object_get(events, name);

                        passed += ev && strcmp(json_string_value(json_object_get(ev, "outcome")), "passed") == 0;
                        json_array_append_new(tests, test_entry(name, ev, not_run));
                }
        json_array_foreach(extra, i, t)
                json_array_append_new(tests, test_entry(json_string_value(json_object_get(t, "name")), t, not_run));
        /* A fail always names a failed entry and why: the test process
         * ended before it announced its tests (killed by the code before it
         * read them), or test_code holds no test at all. */
        if (json_array_size(tests) == 0)
                json_array_append_new(tests, test_entry("test_code", NULL,
                                                        start ? "no test in test_code (no top-level assert, "
                                                                "test_* function or check)"
                                                              : not_run));
        total = json_array_size(tests);
        /* pass: the test process ended well, said it was done, and every
         * test it announced passed (at least one). Anything less is a
         * fail, except nsbox's own failure (error). */
        if (r->status == RUN_ERROR || r->status == RUN_CANCELLED)
                *ret_outcome = OUTCOME_ERROR;
        else if (!start && r->status == RUN_EXITED && r->exit_code == BATCH_TEST_SETUP_FAILED)
                *ret_outcome = OUTCOME_ERROR;   /* the harness could not set up, before any code ran */
        else if (r->status == RUN_EXITED && r->exit_code == 0 && start && rep.done && passed == total)
                *ret_outcome = OUTCOME_PASS;
        else
                *ret_outcome = OUTCOME_FAIL;
        return json_pack("{s:O, s:{s:I, s:I, s:I}, s:f}", "tests", tests, "counts", "passed", (json_int_t) passed,
                         "failed", (json_int_t) (total - passed), "total", (json_int_t) total, "score",
                         total ? (double) passed / (double) total : 0.0);
}
