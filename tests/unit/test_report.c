/* tests/unit/test_report.c — the pure half of `nsbox report` and the JUnit writer. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <string.h>

#include "report/junit.h"
#include "report/report_internal.h"
#include "util/cleanup.h"

static int add(struct report_agg *a, uint64_t line, const char *text, struct report_job *job)
{
        return report_add_line(a, "r.jsonl", line, text, strlen(text), job);
}

static void add_ok(struct report_agg *a, uint64_t line, const char *text)
{
        struct report_job j;

        if (add(a, line, text, &j) != 1)
                fail_msg("line %llu not valid: %s (%s)", (unsigned long long) line, text,
                         a->n_bad_kept ? a->bad_kept[a->n_bad_kept - 1].why : "");
        report_job_clear(&j);
}

static uint64_t count_of(const struct report_table *t, const char *key)
{
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->v[i].key, key) == 0)
                        return t->v[i].n;
        return 0;
}

static char *render(int (*fn)(const struct report_agg *, FILE *), const struct report_agg *a)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        assert_non_null(f);
        assert_int_equal(fn(a, f), 0);
        fclose(f);
        return buf;
}

static void test_counts(void **state)
{
        struct report_agg a;
        struct report_job j;

        report_agg_init(&a);
        add_ok(&a, 1, "{\"id\":\"a\",\"schema\":\"nsbox.result/1\",\"status\":\"exited\",\"exit_code\":0,"
                      "\"wall_ms\":12.5,\"peak_memory_bytes\":10485760,\"outcome\":\"pass\",\"start\":\"warm\"}");
        add_ok(&a, 2, "{\"id\":2,\"status\":\"limit\",\"limit\":\"memory\",\"exit_code\":null,\"wall_ms\":40,"
                      "\"outcome\":\"fail\",\"stderr\":{\"text\":\"MemoryError\"}}");
        assert_int_equal(add(&a, 3, "   \r", &j), 0);
        add_ok(&a, 4, "{\"id\":\"c\",\"status\":\"error\",\"error\":{\"stage\":\"config\",\"message\":\"bad\"},"
                      "\"outcome\":\"error\"}");
        add_ok(&a, 5, "{\"id\":\"d\",\"status\":\"error\",\"error\":{\"stage\":\"config\",\"message\":\"bad\"}}");
        add_ok(&a, 6, "{\"id\":\"r\",\"status\":\"exited\",\"exit_code\":3}");   /* a run job: no outcome */
        assert_int_equal(a.lines, 6);
        assert_int_equal(a.valid, 5);
        assert_int_equal(a.results, 5);
        assert_int_equal(count_of(&a.status, "exited"), 2);
        assert_int_equal(count_of(&a.status, "error"), 2);
        assert_int_equal(count_of(&a.outcome, "pass"), 1);
        assert_int_equal(count_of(&a.outcome, "fail"), 1);
        assert_int_equal(count_of(&a.limit, "memory"), 1);
        assert_int_equal(count_of(&a.start, "warm"), 1);
        assert_int_equal(count_of(&a.start, "cold/unknown"), 4);
        assert_int_equal(a.failed, 4);
        assert_int_equal(a.errors, 2);
        assert_int_equal(a.n_groups, 1);
        assert_int_equal(a.groups[0].n, 2);
        assert_string_equal(a.groups[0].first_id, "c");
        assert_int_equal(a.wall_ms.n, 2);
        assert_int_equal(a.mem_mib.n, 1);
        assert_true(a.mem_mib.max == 10.0);
        assert_int_equal(a.bad, 0);
}

static void test_job_view(void **state)
{
        struct report_agg a;
        struct report_job j;

        report_agg_init(&a);
        assert_int_equal(add(&a, 9, "{\"id\":2,\"status\":\"limit\",\"limit\":\"memory\",\"outcome\":\"fail\","
                                    "\"stderr\":{\"text\":\"MemoryError\"}}", &j), 1);
        assert_true(j.failed);
        assert_false(j.erred);
        assert_string_equal(j.id, "2");
        assert_string_equal(j.where, "r.jsonl:9");
        assert_string_equal(j.reason, "stopped by the memory limit (raise it with --memory SIZE)");
        assert_string_equal(j.stderr_text, "MemoryError");
        report_job_clear(&j);
        /* the value the result recorded, and the flag, as the CLI says it */
        assert_int_equal(add(&a, 9, "{\"id\":3,\"status\":\"limit\",\"limit\":\"memory\",\"limit_value\":\"256M\"}", &j), 1);
        assert_string_equal(j.reason, "stopped by the memory limit (256M; raise it with --memory SIZE)");
        report_job_clear(&j);
        assert_int_equal(add(&a, 10, "{\"id\":\"x\",\"status\":\"signaled\",\"signal_name\":\"SIGSEGV\"}", &j), 1);
        assert_true(j.failed);
        assert_string_equal(j.reason, "killed by SIGSEGV");
        report_job_clear(&j);
        assert_int_equal(add(&a, 12, "{\"status\":\"exited\",\"exit_code\":1}", &j), 1);
        assert_string_equal(j.id, "r.jsonl:12");     /* no id: named by where it is */
        report_job_clear(&j);
        assert_int_equal(add(&a, 11, "{\"id\":\"ok\",\"status\":\"exited\",\"exit_code\":0}", &j), 1);
        assert_false(j.failed);
        report_job_clear(&j);
}

static void test_verdicts(void **state)
{
        struct report_agg a;
        struct report_job j;

        report_agg_init(&a);
        assert_int_equal(add(&a, 1, "{\"id\":\"v\",\"schema\":\"nsbox.verdict/1\",\"verdict\":\"fail\",\"cases\":["
                                    "{\"name\":\"a\",\"verdict\":\"pass\",\"reason\":\"ok\",\"result\":{\"status\":\"exited\","
                                    "\"exit_code\":0,\"wall_ms\":10,\"peak_memory_bytes\":2097152}},"
                                    "{\"name\":\"b\",\"verdict\":\"fail\",\"reason\":\"stdout differs\",\"result\":{"
                                    "\"status\":\"limit\",\"limit\":\"wall_time\",\"wall_ms\":30,\"peak_memory_bytes\":1048576,"
                                    "\"stderr\":{\"text\":\"Trace\"}}},"
                                    "{\"name\":\"c\",\"verdict\":\"undetermined\",\"reason\":\"sandbox\",\"result\":{"
                                    "\"status\":\"error\",\"error\":{\"stage\":\"mount\",\"message\":\"m\"}}},"
                                    "{\"name\":\"d\",\"verdict\":\"not_run\",\"reason\":\"fail-fast\",\"result\":null}]}",
                     &j), 1);
        assert_true(j.is_verdict);
        assert_true(j.failed);
        assert_false(j.erred);
        assert_string_equal(j.reason, "case b: stdout differs");
        assert_string_equal(j.stderr_text, "Trace");
        assert_true(j.wall_ms == 40.0);
        assert_true(j.peak_mem_bytes == 2097152.0);
        report_job_clear(&j);
        assert_int_equal(a.verdicts, 1);
        assert_int_equal(a.results, 0);
        assert_int_equal(count_of(&a.verdict, "fail"), 1);
        assert_int_equal(count_of(&a.limit, "wall_time"), 1);
        assert_int_equal(a.errors, 1);
        assert_string_equal(a.groups[0].stage, "mount");
        /* a bad case makes the whole line bad and counts nothing */
        assert_int_equal(add(&a, 2, "{\"verdict\":\"pass\",\"cases\":[{\"name\":\"a\",\"result\":{\"status\":\"limit\","
                                    "\"limit\":\"memory\"}},{\"name\":5}]}", &j), -EINVAL);
        assert_int_equal(count_of(&a.limit, "memory"), 0);
        assert_int_equal(a.verdicts, 1);
        assert_non_null(strstr(a.bad_kept[0].why, "cases[1]"));
        assert_string_equal(a.bad_kept[0].where, "r.jsonl:2");
}

static int count_rows(const struct report_job *j, void *ctx)
{
        if (j->failed)
                ++*(int *) ctx;
        return 0;
}

/* Indented documents one after the other, as `nsbox judge --result` writes them. */
static void test_documents(void **state)
{
        const char *text = "{\n  \"schema\": \"nsbox.verdict/1\",\n  \"verdict\": \"fail\",\n  \"cases\": []\n}\n"
                           "\n{\n  \"status\": \"exited\",\n  \"exit_code\": 0\n}\n"
                           "{\"id\": 5, \"status\": 7}\n"
                           "{\n  \"status\": \"exited\",\n  \"x\": [}\n{\"status\": \"exited\"}\n";
        struct report_agg a;
        int failed = 0;

        report_agg_init(&a);
        assert_int_equal(report_add_documents(&a, "v.json", text, strlen(text), count_rows, &failed), 0);
        assert_int_equal(a.verdicts, 1);
        assert_int_equal(a.results, 1);
        assert_int_equal(failed, 1);
        assert_int_equal(a.bad, 2);
        assert_string_equal(a.bad_kept[0].where, "v.json:11");
        assert_non_null(strstr(a.bad_kept[0].why, "\"status\""));
        /* the broken document ends the file: what follows it is not read */
        assert_string_equal(a.bad_kept[1].where, "v.json:12");
        assert_non_null(strstr(a.bad_kept[1].why, "not JSON"));
        assert_int_equal(a.n_slow, 0);
}

static void test_bad_lines(void **state)
{
        static const struct { const char *text, *needle; } bad[] = {
                { "{\"status\":", "not JSON" },
                { "[1,2]", "not a JSON object" },
                { "{\"id\":1}", "neither a result" },
                { "{\"schema\":\"other/1\",\"status\":\"exited\"}", "schema" },
                { "{\"status\":7}", "\"status\"" },
                { "{\"status\":\"exited\",\"wall_ms\":\"fast\"}", "\"wall_ms\"" },
                { "{\"status\":\"exited\",\"wall_ms\":-1}", "\"wall_ms\"" },
                { "{\"status\":\"error\",\"error\":\"x\"}", "\"error\"" },
                { "{\"status\":\"exited\",\"exit_code\":1.5}", "\"exit_code\"" },
                { "{\"verdict\":\"pass\"}", "\"cases\"" },
                { "{\"status\":\"exited\",\"status\":\"error\"}", "duplicate" },
        };
        struct report_agg a;
        struct report_job j;

        report_agg_init(&a);
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                assert_int_equal(add(&a, i + 1, bad[i].text, &j), -EINVAL);
                assert_null(j.root);
                if (!strstr(a.bad_kept[i].why, bad[i].needle))
                        fail_msg("%s: '%s' lacks '%s'", bad[i].text, a.bad_kept[i].why, bad[i].needle);
        }
        assert_int_equal(a.bad, ARRAY_SIZE(bad));
        assert_int_equal(a.valid, 0);
        assert_int_equal(a.status.n, 0);
        assert_string_equal(a.bad_kept[3].where, "r.jsonl:4");
        for (int i = 0; i < 30; i++)
                assert_int_equal(add(&a, 100 + (uint64_t) i, "x", &j), -EINVAL);
        assert_int_equal(a.n_bad_kept, REPORT_BAD_KEEP);
        assert_int_equal(a.bad, ARRAY_SIZE(bad)+ 30);
}

/* Keys come from the input: the tables stay bounded. */
static void test_bounded_tables(void **state)
{
        struct report_agg a;
        char line[256];

        report_agg_init(&a);
        for (int i = 0; i < REPORT_TABLE_MAX + 8; i++) {
                snprintf(line, sizeof line, "{\"status\":\"s%d\"}", i);
                add_ok(&a, (uint64_t) i + 1, line);
        }
        assert_int_equal(a.status.n, REPORT_TABLE_MAX);
        assert_int_equal(a.status.other, 8);
        for (int i = 0; i < REPORT_GROUPS_MAX + 5; i++) {
                snprintf(line, sizeof line, "{\"status\":\"error\",\"error\":{\"stage\":\"config\",\"message\":\"m%d\"}}", i);
                add_ok(&a, 1000 + (uint64_t) i, line);
        }
        assert_int_equal(a.n_groups, REPORT_GROUPS_MAX);
        assert_int_equal(a.errors_ungrouped, 5);
        assert_int_equal(a.errors, REPORT_GROUPS_MAX + 5);
}

/* More one-off messages than groups kept, then one error that most jobs had:
 * that error is the first group shown, with a count that may be high by at
 * most what it inherited. Before, only the first REPORT_GROUPS_MAX groups
 * were counted and it did not appear at all. */
static void test_frequent_error_after_many_unique(void **state)
{
        struct report_agg a;
        struct report_group g[REPORT_GROUPS_MAX];
        char line[256], *out;
        size_t n;

        (void) state;
        report_agg_init(&a);
        for (int i = 0; i < REPORT_GROUPS_MAX + 44; i++) {
                snprintf(line, sizeof line, "{\"status\":\"error\",\"error\":{\"stage\":\"mount\",\"message\":\"u%d\"}}", i);
                add_ok(&a, (uint64_t) i + 1, line);
        }
        for (int i = 0; i < 1000; i++) {
                /* interleaved with more one-offs: still kept */
                snprintf(line, sizeof line, "{\"status\":\"error\",\"error\":{\"stage\":\"mount\",\"message\":\"v%d\"}}", i);
                add_ok(&a, 2000 + (uint64_t) i, line);
                add_ok(&a, 4000 + (uint64_t) i,
                       "{\"id\":\"big\",\"status\":\"error\",\"error\":{\"stage\":\"cgroup\",\"message\":\"no space\"}}");
        }
        n = report_groups_sorted(&a, g);
        assert_int_equal(n, REPORT_GROUPS_MAX);
        assert_string_equal(g[0].stage, "cgroup");
        assert_string_equal(g[0].message, "no space");
        assert_true(g[0].n >= 1000 && g[0].n - g[0].over <= 1000);
        assert_true(g[0].over > 0);
        out = render(report_render_text, &a);
        assert_non_null(strstr(out, "cgroup: no space"));
        assert_non_null(strstr(out, "~"));
        assert_non_null(strstr(out, "the most frequent are kept"));
        free(out);
}

static int cmp_desc(const void *x, const void *y)
{
        double a = *(const double *) x, b = *(const double *) y;
        return a < b ? 1 : a > b ? -1 : 0;
}

/* The top-k is the k largest of everything, in order, whatever the order of arrival. */
static void test_slowest(void **state)
{
        enum { N = 2000 };
        static double all[N];
        struct report_slow top[REPORT_TOP_K];
        struct report_agg a;
        char line[128];
        size_t n;

        report_agg_init(&a);
        srand(7);
        for (int i = 0; i < N; i++) {
                all[i] = (double) (rand() % 100000) / 10.0;
                snprintf(line, sizeof line, "{\"id\":%d,\"status\":\"exited\",\"exit_code\":0,\"wall_ms\":%.1f}", i, all[i]);
                add_ok(&a, (uint64_t) i + 1, line);
        }
        qsort(all, N, sizeof all[0], cmp_desc);
        n = report_slowest(&a, top);
        assert_int_equal(n, REPORT_TOP_K);
        for (size_t i = 0; i < n; i++)
                if (top[i].wall_ms != all[i])
                        fail_msg("slowest[%zu] = %f, expected %f", i, top[i].wall_ms, all[i]);
        assert_int_equal(a.wall_ms.n, N);
}

static void test_hist_buckets(void **state)
{
        assert_int_equal(report_hist_bucket(0), 0);
        assert_int_equal(report_hist_bucket(0.99), 0);
        assert_int_equal(report_hist_bucket(1), 1);
        assert_int_equal(report_hist_bucket(1.99), 1);
        assert_int_equal(report_hist_bucket(2), 2);
        assert_int_equal(report_hist_bucket(1000), 10);         /* [512, 1024) */
        assert_int_equal(report_hist_bucket(1e300), REPORT_HIST_BUCKETS - 1);
        assert_true(report_hist_lower(0) == 0);
        assert_true(report_hist_lower(1) == 1);
        assert_true(report_hist_lower(10) == 512);
        for (size_t i = 1; i + 1 < REPORT_HIST_BUCKETS; i++)
                assert_int_equal(report_hist_bucket(report_hist_lower(i)), i);
}

/* An escape sequence in an id or message never reaches the terminal. */
static void test_text_render(void **state)
{
        struct report_agg a;
        char *out;

        report_agg_init(&a);
        add_ok(&a, 1, "{\"id\":\"evil\\u001b[2J\",\"status\":\"error\",\"error\":{\"stage\":\"exec\","
                      "\"message\":\"no \\u009b31m such\"},\"wall_ms\":5}");
        add_ok(&a, 2, "{\"id\":\"ok\",\"status\":\"exited\",\"exit_code\":0,\"outcome\":\"pass\",\"wall_ms\":1500}");
        report_add_bad(&a, "f.jsonl", 3, "not JSON");
        out = render(report_render_text, &a);
        assert_null(strchr(out, '\x1b'));
        assert_null(strstr(out, "\xc2\x9b"));
        assert_non_null(strstr(out, "evil\\x1b[2J"));
        assert_non_null(strstr(out, "no \\u009b31m such"));
        assert_non_null(strstr(out, "2 jobs (2 results, 0 verdicts), 1 failed or erred; 1 bad lines"));
        assert_non_null(strstr(out, "exited 1 (50.0%)"));
        assert_non_null(strstr(out, "f.jsonl:3: not JSON"));
        assert_non_null(strstr(out, "1.50 s  ok"));
        free(out);
}

static void test_html(void **state)
{
        struct report_agg a;
        struct report_job j;
        char *rows_buf = NULL, *page;
        size_t rows_len = 0;
        FILE *rows = tmpfile();

        assert_non_null(rows);
        report_agg_init(&a);
        assert_int_equal(add(&a, 1, "{\"id\":\"<img src=x onerror=alert(1)>\",\"status\":\"exited\",\"exit_code\":1,"
                                    "\"outcome\":\"fail\",\"stderr\":{\"text\":\"</pre><script>alert('x')</script>&"
                                    "\\u001b[2K\\r\\u009b\\u202e\\u2066\\n\\u2713 ok\"}}",
                         &j), 1);
        assert_int_equal(report_html_row(rows, &j), 0);
        report_job_clear(&j);
        {
                FILE *f = open_memstream(&rows_buf, &rows_len);
                assert_int_equal(report_render_html(&a, rows, f), 0);
                fclose(f);
        }
        page = rows_buf;
        assert_null(strstr(page, "<img"));
        assert_null(strstr(page, "<script>alert"));
        assert_non_null(strstr(page, "&lt;img src=x onerror=alert(1)&gt;"));
        assert_non_null(strstr(page, "&lt;/pre&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"));
        assert_non_null(strstr(page, "exit code 1"));
        /* #27: the unsafe set shown, not dropped; the newline kept in <pre> */
        assert_non_null(strstr(page, "&amp;\\x1b[2K\\r\\u009b\\u202e\\u2066\n\u2713 ok</pre>"));
        assert_null(strchr(page, '\x1b'));
        assert_null(strchr(page, '\r'));
        assert_non_null(strstr(page, "default-src 'none'"));
        assert_null(strstr(page, "src=\"http"));
        assert_null(strstr(page, "href="));
        assert_non_null(strstr(page, "none recorded"));   /* no wall time in the input: no histogram */
        /* exactly one script element: ours */
        assert_non_null(strstr(page, "<script>"));
        assert_null(strstr(strstr(page, "<script>") + 1, "<script"));
        free(page);
        fclose(rows);
}

/* #32: what differs between two instances of one failure is folded. */
static void test_normalize(void **state)
{
        static const struct { const char *in; bool quotes; const char *out; } rows[] = {
                { "SyntaxError: invalid syntax (main.py, line 12)", false, "SyntaxError: invalid syntax (main.py, line N)" },
                { "File \"/tmp/s17/main.py\", line 3, in f", false, "File \"<path>\", line N, in f" },
                { "cannot mount /tmp/nsbox-7731af10: EBUSY", false, "cannot mount <path>: EBUSY" },
                { "object at 0x7f3a2c1b9d60 is gone", false, "object at <id> is gone" },
                { "run 3f2a9c1e-77aa-4b1c-9d2e-0123456789ab failed", false, "run <id> failed" },
                { "test_2 and x1 stay, 2.5 folds", false, "test_2 and x1 stay, N folds" },
                { "deadbeef is a word, cafe too", false, "deadbeef is a word, cafe too" },
                { "expected '5', got '6'  twice", true, "expected '\u2026', got '\u2026' twice" },
                { "expected '5'", false, "expected 'N'" },
                { "</pre><b>", false, "</pre><b>" },
        };
        char out[REPORT_MSG_MAX];

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                report_normalize(rows[i].in, strlen(rows[i].in), rows[i].quotes, out, sizeof out);
                if (strcmp(out, rows[i].out) != 0)
                        fail_msg("row %zu: '%s' gave '%s', not '%s'", i, rows[i].in, out, rows[i].out);
        }
        report_last_line("Traceback...\n  File x\nValueError: bad\n\n  \n", out, sizeof out);
        assert_string_equal(out, "ValueError: bad");
        /* cut on a character */
        report_normalize("\xc3\xa9\xc3\xa9\xc3\xa9", 6, false, out, 4);
        assert_string_equal(out, "\xc3\xa9");
}

/* Failed jobs group by their normalised reason, largest first, with an
 * example as it was; judge cases by how often they fail. */
static void test_failure_groups(void **state)
{
        struct report_agg *a = malloc(sizeof *a);
        struct report_fgroup *g = malloc(sizeof *g * REPORT_FGROUPS_MAX);
        struct report_case_stat c[REPORT_CASES_MAX];
        char line[512];
        size_t n;

        (void) state;
        assert_non_null(a);
        assert_non_null(g);
        report_agg_init(a);
        for (int i = 0; i < 30; i++) {
                snprintf(line, sizeof line, "{\"id\":\"s%d\",\"status\":\"exited\",\"exit_code\":1,\"stderr\":{\"text\":"
                         "\"  File \\\"/w/%d/a.py\\\", line %d\\nSyntaxError: bad (a.py, line %d)\\n\"}}", i, i, i, i);
                add_ok(a, (uint64_t) i + 1, line);
        }
        for (int i = 0; i < 5; i++) {
                snprintf(line, sizeof line, "{\"id\":\"z%d\",\"status\":\"exited\",\"exit_code\":1,\"stderr\":{\"text\":"
                         "\"ZeroDivisionError: division by zero\\n\"}}", i);
                add_ok(a, 100 + (uint64_t) i, line);
        }
        add_ok(a, 200, "{\"id\":\"ok\",\"status\":\"exited\",\"exit_code\":0}");
        add_ok(a, 201, "{\"id\":\"v\",\"schema\":\"nsbox.verdict/1\",\"verdict\":\"fail\",\"cases\":["
                       "{\"name\":\"a\",\"verdict\":\"pass\",\"reason\":\"r\",\"result\":null},"
                       "{\"name\":\"b\",\"verdict\":\"fail\",\"reason\":\"stdout differs at line 1: expected '1', got '2'\","
                       "\"result\":{\"status\":\"exited\",\"exit_code\":0}}]}");
        n = report_fgroups_sorted(a, g);
        assert_int_equal(n, 3);
        assert_string_equal(g[0].key, "SyntaxError: bad (a.py, line N)");
        assert_int_equal(g[0].n, 30);
        assert_string_equal(g[0].example, "SyntaxError: bad (a.py, line 0)");
        assert_string_equal(g[0].example_id, "s0");
        assert_string_equal(g[1].key, "ZeroDivisionError: division by zero");
        assert_int_equal(g[1].n, 5);
        assert_string_equal(g[2].key, "case b: stdout differs at line N: expected '\u2026', got '\u2026'");
        assert_int_equal(report_cases_sorted(a, c), 2);
        assert_string_equal(c[0].name, "b");
        assert_int_equal(c[0].failed, 1);
        assert_int_equal(c[1].runs, 1);
        free(g);
        free(a);
}

/* A result that exited without an exit code (a hand-made or damaged line)
 * failed, and says why in words: it read "outcome ?". */
static void test_reason_without_exit_code(void **state)
{
        struct report_agg *a = malloc(sizeof *a);
        struct report_fgroup *g = malloc(sizeof *g * REPORT_FGROUPS_MAX);

        (void) state;
        assert_non_null(a);
        assert_non_null(g);
        report_agg_init(a);
        add_ok(a, 1, "{\"id\":\"x\",\"status\":\"exited\"}");
        assert_int_equal(report_fgroups_sorted(a, g), 1);
        assert_string_equal(g[0].key, "exited without an exit code");
        free(g);
        free(a);
}

/* "judge cases, most failed first": by how often a case failed on
 * evidence, then by how often it could not be judged; a case that only
 * erred (the sandbox, not the program) does not go above one that failed
 * more (it did: the two counts were summed). */
static void test_cases_most_failed_first(void **state)
{
        struct report_agg *a = malloc(sizeof *a);
        struct report_case_stat c[REPORT_CASES_MAX];

        (void) state;
        assert_non_null(a);
        report_agg_init(a);
        for (int i = 0; i < 5; i++)
                report_case_add(a, "flaky_infra", "undetermined");
        report_case_add(a, "flaky_infra", "fail");
        for (int i = 0; i < 3; i++)
                report_case_add(a, "wrong", "fail");
        report_case_add(a, "wrong", "not_run");
        report_case_add(a, "fine", "pass");
        assert_int_equal(report_cases_sorted(a, c), 3);
        assert_string_equal(c[0].name, "wrong");
        assert_string_equal(c[1].name, "flaky_infra");
        assert_string_equal(c[2].name, "fine");
        free(a);
}

/* #32: what CI viewers read: the reason in the failure's body (its first
 * line in message=), the captured streams per case (escaped, bounded), a
 * time on every case. */
static void test_junit(void **state)
{
        static char big[JUNIT_STREAM_MAX + 100];
        struct junit_case c[] = {
                { .name = "ok", .classname = "judge.spec", .time_s = 0.01, .kind = JUNIT_PASS,
                  .out = "5\n", .out_len = 2 },
                { .name = "wrong \"<out>\"", .classname = "judge.spec", .time_s = 0.02, .kind = JUNIT_FAILURE,
                  .message = "stdout differs & more", .detail = "line\n\x01" "bad\xff", .detail_len = 10,
                  .out = "<b>&\x1b[2J", .out_len = 8, .err = big, .err_len = sizeof big },
                { .name = "sbx", .classname = "judge.spec", .time_s = -1, .kind = JUNIT_ERROR,
                  .message = "sandbox error\nsecond line" },
                { .name = "later", .classname = "judge.spec", .time_s = -1, .kind = JUNIT_SKIPPED, .message = "not run" },
        };
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        (void) state;
        memset(big, 'e', sizeof big);
        assert_int_equal(junit_render(f, "suite", c, 4, 0.03, NULL), 0);
        fclose(f);
        assert_non_null(strstr(buf, "tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\" time=\"0.030\""));
        assert_non_null(strstr(buf, "<testcase name=\"ok\" classname=\"judge.spec\" time=\"0.010\">\n"
                                    "    <system-out>5\n</system-out>\n  </testcase>"));
        assert_non_null(strstr(buf, "name=\"wrong &quot;&lt;out&gt;&quot;\""));
        assert_non_null(strstr(buf, "<failure message=\"stdout differs &amp; more\" type=\"fail\">stdout differs "
                                    "&amp; more\n\nline\n\\x01bad\\xff</failure>"));
        assert_non_null(strstr(buf, "<system-out>&lt;b&gt;&amp;\\x1b[2J</system-out>"));
        assert_non_null(strstr(buf, "\n[... 100 more bytes]</system-err>"));
        assert_non_null(strstr(buf, "<testcase name=\"sbx\" classname=\"judge.spec\" time=\"0.000\">"));
        assert_non_null(strstr(buf, "<error message=\"sandbox error...\" type=\"undetermined\">sandbox error\n"
                                    "second line</error>"));
        assert_non_null(strstr(buf, "<skipped message=\"not run\"/>"));
        assert_null(strchr(buf, '\x01'));
        assert_null(strchr(buf, '\x1b'));
        free(buf);
}

/* A stream of bytes that are not UTF-8 (a program writes 70,000 0x80
 * bytes, all of them "continuation bytes") is still shown, escaped, up to
 * the bound: the cut backs up over at most one character's 3 trailing
 * bytes, never over the whole stream (it did: an empty <system-out>). */
static void test_junit_invalid_stream(void **state)
{
        static char junk[JUNIT_STREAM_MAX + 5000];
        struct junit_case c = { .name = "c", .classname = "judge.spec", .kind = JUNIT_PASS,
                                .out = junk, .out_len = sizeof junk };
        char *buf = NULL, *p;
        size_t len = 0, shown = 0;
        FILE *f = open_memstream(&buf, &len);

        (void) state;
        memset(junk, 0x80, sizeof junk);
        assert_int_equal(junit_render(f, "suite", &c, 1, 0, NULL), 0);
        fclose(f);
        for (p = buf; (p = strstr(p, "\\x80")); p += 4)
                shown++;
        assert_true(shown >= JUNIT_STREAM_MAX - 3);
        assert_true(shown <= JUNIT_STREAM_MAX);
        free(buf);
}

/* #32 follow-up: the run's own streams (nsbox test: fd 1/2 written directly) as
 * the suite's <system-out>/<system-err>, after its cases. */
static void test_junit_run_streams(void **state)
{
        struct junit_case c = { .name = "c", .classname = "t", .kind = JUNIT_PASS, .out = "mine", .out_len = 4 };
        struct junit_case run = { .out = "FD1 <&>", .out_len = 7, .err = "FD2", .err_len = 3 };
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        (void) state;
        assert_int_equal(junit_render(f, "suite", &c, 1, 0, &run), 0);
        fclose(f);
        assert_non_null(strstr(buf, "<system-out>mine</system-out>\n  </testcase>\n"
                                    "    <system-out>FD1 &lt;&amp;&gt;</system-out>\n"
                                    "    <system-err>FD2</system-err>\n</testsuite>"));
        free(buf);
}

static void test_junit_classname(void **state)
{
        const char *test;
        char *cn;

        (void) state;
        cn = junit_classname(NULL, "test_x.py::TestAdd::test_a", &test);
        assert_string_equal(cn, "test_x.TestAdd");
        assert_string_equal(test, "test_a");
        free(cn);
        cn = junit_classname(NULL, "sub/test_y.py::test_f", &test);
        assert_string_equal(cn, "sub.test_y");
        assert_string_equal(test, "test_f");
        free(cn);
        cn = junit_classname("judge", "/srv/course/hw1.json", &test);
        assert_string_equal(cn, "judge.hw1");
        free(cn);
        /* the suite's name: the last component, never a host path */
        cn = junit_suite_name("/srv/course/harness//");
        assert_string_equal(cn, "harness");
        free(cn);
        cn = junit_suite_name("hw1.json");
        assert_string_equal(cn, "hw1.json");
        free(cn);
        cn = junit_suite_name("/");
        assert_string_equal(cn, "/");
        free(cn);
}

/* A program that writes a NUL byte gets "\u0000" in its result's text (and
 * a verdict holds that result): the line is still a result, never a bad line
 * that would hide a failed job from the counts and the table. */
static void test_nul_in_output(void **state)
{
        static const char line[] = "{\"id\":\"n\",\"status\":\"exited\",\"exit_code\":1,"
                                   "\"stdout\":{\"text\":\"a\\u0000b\",\"bytes\":3,\"truncated\":false}}";
        static const char doc[] = "{\n  \"schema\": \"nsbox.verdict/1\",\n  \"verdict\": \"fail\",\n  \"cases\": [\n"
                                  "    {\"name\": \"x\", \"verdict\": \"fail\", \"reason\": \"r\", \"result\":\n"
                                  "      {\"status\": \"exited\", \"exit_code\": 0, \"stderr\": {\"text\": \"\\u0000\"}}}]\n}\n";
        struct report_agg a;
        int failed = 0;

        (void) state;
        report_agg_init(&a);
        add_ok(&a, 1, line);
        assert_int_equal(report_add_documents(&a, "v.json", doc, strlen(doc), count_rows, &failed), 0);
        assert_int_equal(a.bad, 0);
        assert_int_equal(a.results, 1);
        assert_int_equal(a.verdicts, 1);
        assert_int_equal(failed, 1);
}

/* An id or message with a bidi override (U+202E) or isolate (U+2066) would
 * make its line read in another order than it is written: shown as an escape
 * (util/textsafe.h), like the line separator U+2028. */
static void test_text_render_bidi(void **state)
{
        struct report_agg a;
        char *out;

        (void) state;
        report_agg_init(&a);
        add_ok(&a, 1, "{\"id\":\"sub\u202eliaf\",\"status\":\"error\",\"error\":{\"stage\":\"exec\","
                      "\"message\":\"x\u2066y\u2069 \u00e9\u2028\"},\"wall_ms\":5}");
        out = render(report_render_text, &a);
        assert_null(strstr(out, "\xe2\x80\xae"));
        assert_null(strstr(out, "\xe2\x81\xa6"));
        assert_null(strstr(out, "\xe2\x81\xa9"));
        assert_non_null(strstr(out, "sub\\u202eliaf"));
        assert_non_null(strstr(out, "x\\u2066y\\u2069 \xc3\xa9\\u2028"));       /* other text as it is */
        free(out);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counts),
                cmocka_unit_test(test_job_view),
                cmocka_unit_test(test_verdicts),
                cmocka_unit_test(test_bad_lines),
                cmocka_unit_test(test_documents),
                cmocka_unit_test(test_bounded_tables),
                cmocka_unit_test(test_slowest),
                cmocka_unit_test(test_hist_buckets),
                cmocka_unit_test(test_text_render),
                cmocka_unit_test(test_html),
                cmocka_unit_test(test_junit), cmocka_unit_test(test_normalize), cmocka_unit_test(test_failure_groups), cmocka_unit_test(test_cases_most_failed_first), cmocka_unit_test(test_reason_without_exit_code), cmocka_unit_test(test_junit_run_streams),
                cmocka_unit_test(test_junit_classname), cmocka_unit_test(test_junit_invalid_stream),
                cmocka_unit_test(test_nul_in_output),
                cmocka_unit_test(test_text_render_bidi),
                cmocka_unit_test(test_frequent_error_after_many_unique),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
