/* tests/unit/test_batch_tests.c — `test` jobs of `nsbox batch`: the job's
 * keys, the package the split harness reads, and the verdict from its
 * keyed report (batch/batch_tests.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <string.h>

#include "batch/batch_internal.h"
#include "batch/batch_tests.h"

#define KEY "0123456789abcdef0123456789abcdef"
#define L(json) KEY " " json "\n"
#define START L("{\"event\":\"start\",\"protocol\":1,\"tests\":[\"a\",\"b\"]}")
#define PASS_A L("{\"event\":\"test\",\"name\":\"a\",\"outcome\":\"passed\",\"duration_ms\":0.1,\"message\":null}")
#define PASS_B L("{\"event\":\"test\",\"name\":\"b\",\"outcome\":\"passed\",\"duration_ms\":0.1,\"message\":null}")
#define FAIL_B L("{\"event\":\"test\",\"name\":\"b\",\"outcome\":\"failed\",\"duration_ms\":0.1,\"message\":\"no\"}")
#define DONE L("{\"event\":\"done\"}")

static struct run_result exited(int code)
{
        struct run_result r;

        memset(&r, 0, sizeof r);
        r.status = RUN_EXITED;
        r.exit_code = code;
        return r;
}

/* outcome, and counts.passed / counts.total into *ret_passed, *ret_total */
static enum batch_outcome verdict(const char *out, struct run_result r, long *ret_passed, long *ret_total)
{
        enum batch_outcome o = OUTCOME__MAX;
        json_t *v = batch_test_verdict(out, strlen(out), KEY, &r, &o);
        json_t *counts;

        assert_non_null(v);
        counts = json_object_get(v, "counts");
        *ret_passed = (long) json_integer_value(json_object_get(counts, "passed"));
        *ret_total = (long) json_integer_value(json_object_get(counts, "total"));
        assert_int_equal(json_array_size(json_object_get(v, "tests")), (size_t) *ret_total);
        json_decref(v);
        return o;
}

static void complete_report_passes(void **state)
{
        long p, t;

        assert_int_equal(verdict(START PASS_A PASS_B DONE, exited(0), &p, &t), OUTCOME_PASS);
        assert_int_equal(p, 2);
        assert_int_equal(t, 2);
}

static void anything_less_fails(void **state)
{
        struct run_result killed = exited(0), limit = exited(0);
        long p, t;

        killed.status = RUN_SIGNALED;
        killed.signal = 9;
        limit.status = RUN_LIMIT;
        limit.limit = LIMIT_WALL_TIME;
        /* a failed test: partial credit */
        assert_int_equal(verdict(START PASS_A FAIL_B DONE, exited(0), &p, &t), OUTCOME_FAIL);
        assert_int_equal(p, 1);
        /* no done, a missing test, a cut last line */
        assert_int_equal(verdict(START PASS_A PASS_B, exited(0), &p, &t), OUTCOME_FAIL);
        assert_int_equal(verdict(START PASS_A DONE, exited(0), &p, &t), OUTCOME_FAIL);
        assert_int_equal(p, 1);
        assert_int_equal(t, 2);
        assert_int_equal(verdict(START PASS_A KEY " {\"event\":\"test\",\"name\":\"b\",\"outcome\":\"passed\"", exited(0), &p, &t),
                         OUTCOME_FAIL);
        /* complete, but the test process did not end well */
        assert_int_equal(verdict(START PASS_A PASS_B DONE, killed, &p, &t), OUTCOME_FAIL);
        assert_int_equal(verdict(START PASS_A PASS_B DONE, limit, &p, &t), OUTCOME_FAIL);
        assert_int_equal(verdict(START PASS_A PASS_B DONE, exited(1), &p, &t), OUTCOME_FAIL);
        /* the same test twice (a second, contradicting, event) */
        assert_int_equal(verdict(START PASS_A FAIL_B PASS_B DONE, exited(0), &p, &t), OUTCOME_FAIL);
        assert_int_equal(verdict(START PASS_A PASS_B PASS_B DONE, exited(0), &p, &t), OUTCOME_FAIL);
        /* nothing announced: one failed entry, never an empty pass */
        assert_int_equal(verdict("", killed, &p, &t), OUTCOME_FAIL);
        assert_int_equal(t, 1);
        assert_int_equal(verdict(L("{\"event\":\"start\",\"protocol\":1,\"tests\":[]}") DONE, exited(0), &p, &t),
                         OUTCOME_FAIL);
        assert_int_equal(t, 1);
}

static void lines_without_the_key_are_not_the_report(void **state)
{
        long p, t;

        /* a forged report with a guessed key, or none, passes nothing */
#define FORGED(k) k " {\"event\":\"start\",\"protocol\":1,\"tests\":[\"a\"]}\n" \
                  k " {\"event\":\"test\",\"name\":\"a\",\"outcome\":\"passed\"}\n" k " {\"event\":\"done\"}\n"
        assert_int_equal(verdict(FORGED("00000000000000000000000000000000"), exited(0), &p, &t), OUTCOME_FAIL);
        assert_int_equal(verdict(FORGED(""), exited(0), &p, &t), OUTCOME_FAIL);
        assert_int_equal(verdict(FORGED(KEY "x"), exited(0), &p, &t), OUTCOME_FAIL);
        /* stray lines among the real ones change nothing */
        assert_int_equal(verdict("hello\n" START FORGED("") PASS_A PASS_B "x\n" DONE, exited(0), &p, &t), OUTCOME_PASS);
        /* a pass for a test never announced proves nothing; a failed setup step counts */
        assert_int_equal(verdict(START PASS_A PASS_B
                                 L("{\"event\":\"test\",\"name\":\"line 9\",\"outcome\":\"failed\",\"message\":\"x\"}")
                                 L("{\"event\":\"test\",\"name\":\"zz\",\"outcome\":\"passed\"}") DONE,
                                 exited(0), &p, &t), OUTCOME_FAIL);
        assert_int_equal(p, 2);
        assert_int_equal(t, 3);
}

static void sandbox_failure_is_error(void **state)
{
        struct run_result r = exited(0);
        long p, t;

        r.status = RUN_ERROR;
        assert_int_equal(verdict(START PASS_A PASS_B DONE, r, &p, &t), OUTCOME_ERROR);
        r.status = RUN_CANCELLED;
        assert_int_equal(verdict("", r, &p, &t), OUTCOME_ERROR);
        /* the harness failed to set up, before the fork: nsbox's failure */
        assert_int_equal(verdict("", exited(BATCH_TEST_SETUP_FAILED), &p, &t), OUTCOME_ERROR);
        /* ... but not once it announced the tests (the code has run by then) */
        assert_int_equal(verdict(START, exited(BATCH_TEST_SETUP_FAILED), &p, &t), OUTCOME_FAIL);
        assert_int_equal(verdict("", exited(1), &p, &t), OUTCOME_FAIL);
}

static void package_puts_the_tests_last(void **state)
{
        struct batch_job j = { .program = "def f(): pass", .program_len = 13, .stdin_data = "in", .stdin_len = 2,
                               .tests = "assert f() is None", .tests_len = 18, .entry_point = "f" };
        char *p;
        size_t len;

        assert_int_equal(batch_test_package(&j, 9000, KEY, &p, &len), 0);
        assert_string_equal(p, "NSBOX-SPLIT 1 13 2 18 9000 f\ndef f(): passin" KEY "\nassert f() is None");
        assert_int_equal(len, strlen(p));
        free(p);
        j.entry_point = NULL;
        assert_int_equal(batch_test_package(&j, 50, KEY, &p, &len), 0);
        assert_non_null(strstr(p, " 50 -\n"));
        free(p);
        assert_int_equal(batch_test_budget_ms(10000), 9000);
        assert_int_equal(batch_test_budget_ms(60000), 59000);
        assert_int_equal(batch_test_budget_ms(100), 90 > 50 ? 90 : 50);
        assert_int_equal(batch_test_budget_ms(20), 50);
}

static void parse_keys(void **state)
{
        struct batch_job j;
        struct nsb_error e;
        const char *ok = "{\"id\":1,\"kind\":\"test\",\"code\":\"x=1\",\"test_code\":\"assert x\",\"entry_point\":\"f_1\","
                         "\"timeout\":2,\"stdin\":\"a\"}";
        const char *bad[][2] = {
                { "{\"id\":1,\"kind\":\"test\",\"test_code\":\"assert x\"}", "missing \"code\"" },
                { "{\"id\":1,\"kind\":\"test\",\"code\":\"x\"}", "missing \"test_code\"" },
                { "{\"id\":1,\"kind\":\"test\",\"code\":\"x\",\"test_code\":null}", "\"test_code\": expected a string" },
                { "{\"id\":1,\"kind\":\"test\",\"code\":\"x\\u0000\",\"test_code\":\"t\"}", "NUL" },
                { "{\"id\":1,\"kind\":\"test\",\"code\":\"x\",\"test_code\":\"t\",\"entry_point\":\"a b\"}", "entry_point" },
                { "{\"id\":1,\"kind\":\"test\",\"code\":\"x\",\"test_code\":\"t\",\"entry_point\":\"1a\"}", "entry_point" },
                { "{\"id\":1,\"kind\":\"test\",\"code\":\"x\",\"test_code\":\"t\",\"entry_point\":\"f(1)\"}", "entry_point" },
                { "{\"id\":1,\"kind\":\"test\",\"code\":\"x\",\"test_code\":\"t\",\"spec\":{}}", "unknown key \"spec\"" },
        };

        nsb_error_clear(&e);
        assert_int_equal(batch_job_parse(ok, strlen(ok), 1, NULL, &j, &e), 0);
        assert_int_equal(j.kind, BATCH_TEST);
        assert_string_equal(j.program, "x=1");
        assert_string_equal(j.tests, "assert x");
        assert_string_equal(j.entry_point, "f_1");
        assert_int_equal(j.stdin_len, 1);
        batch_job_free(&j);
        {
                const char *lc = "{\"id\":1,\"kind\":\"test\",\"code\":\"x\",\"test_code\":\"t\","
                                 "\"entry_point\":\"Solution().twoSum\"}";
                assert_int_equal(batch_job_parse(lc, strlen(lc), 1, NULL, &j, &e), 0);
                assert_string_equal(j.entry_point, "Solution().twoSum");
                batch_job_free(&j);
        }
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                nsb_error_clear(&e);
                assert_int_equal(batch_job_parse(bad[i][0], strlen(bad[i][0]), 1, NULL, &j, &e), -EINVAL);
                if (!strstr(e.msg, bad[i][1]))
                        fail_msg("'%s': message '%s' lacks '%s'", bad[i][0], e.msg, bad[i][1]);
                batch_job_free(&j);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(complete_report_passes),
                cmocka_unit_test(anything_less_fails),
                cmocka_unit_test(lines_without_the_key_are_not_the_report),
                cmocka_unit_test(sandbox_failure_is_error),
                cmocka_unit_test(package_puts_the_tests_last),
                cmocka_unit_test(parse_keys),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
