/* Unit tests for testcmd/: the results channel, the verdict rules and the
 * rendering. Pure code only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "testcmd/testcmd_internal.h"
#include "util/cleanup.h"

#define START "{\"event\":\"start\",\"protocol\":1,\"tests\":[\"t.py::a\",\"t.py::b\"]}\n"
#define PASS_A "{\"event\":\"test\",\"name\":\"t.py::a\",\"outcome\":\"passed\",\"message\":null}\n"
#define PASS_B "{\"event\":\"test\",\"name\":\"t.py::b\",\"outcome\":\"passed\",\"message\":null}\n"
#define FAIL_B "{\"event\":\"test\",\"name\":\"t.py::b\",\"outcome\":\"failed\",\"message\":\"assert 1 == 2\"}\n"
#define SKIP_A "{\"event\":\"test\",\"name\":\"t.py::a\",\"outcome\":\"skipped\",\"message\":\"nope\"}\n"
#define SKIP_B "{\"event\":\"test\",\"name\":\"t.py::b\",\"outcome\":\"skipped\",\"message\":\"nope\"}\n"
#define DONE2 "{\"event\":\"done\",\"collected\":2,\"duration_ms\":5.0}\n"

static struct run_result exited(int code)
{
        struct run_result r;

        memset(&r, 0, sizeof r);
        r.status = RUN_EXITED;
        r.exit_code = code;
        r.wall_ms = 10;
        return r;
}

static enum tc_verdict decide(const char *chan, struct run_result r, struct tc_report *rep)
{
        assert_int_equal(tc_channel_parse(chan, strlen(chan), rep), 0);
        tc_decide(rep, &r);
        return rep->verdict;
}

static void test_complete_channel(void **state)
{
        struct tc_report rep;

        assert_int_equal(decide(START PASS_A PASS_B DONE2, exited(0), &rep), TC_PASS);
        assert_true(rep.trusted);
        tc_report_free(&rep);
        assert_int_equal(decide(START PASS_A FAIL_B DONE2, exited(1), &rep), TC_FAIL);
        assert_string_equal(rep.tests[1].message, "assert 1 == 2");
        tc_report_free(&rep);
        /* unknown events and fields are ignored */
        assert_int_equal(decide(START "{\"event\":\"later\",\"x\":1}\n" PASS_A PASS_B DONE2, exited(0), &rep), TC_PASS);
        tc_report_free(&rep);
}

static void test_all_skipped_is_undetermined(void **state)
{
        struct tc_report rep;

        /* raise unittest.SkipTest in the code under test skips every test:
         * that is no evidence of a pass */
        assert_int_equal(decide(START SKIP_A SKIP_B DONE2, exited(0), &rep), TC_UNDETERMINED);
        assert_non_null(strstr(rep.reason, "skipped"));
        tc_report_free(&rep);
        /* one test passed, the other skipped: a pass */
        assert_int_equal(decide(START PASS_A SKIP_B DONE2, exited(0), &rep), TC_PASS);
        tc_report_free(&rep);
}

static void test_untrusted_channel(void **state)
{
        struct tc_report rep;

        /* no done: the runner died */
        assert_int_equal(decide(START PASS_A, exited(0), &rep), TC_UNDETERMINED);
        assert_int_equal(rep.tests[1].outcome, TC_ERROR);
        tc_report_free(&rep);
        /* an unterminated line, a count mismatch, an unannounced name, junk */
        assert_int_equal(decide(START PASS_A PASS_B "{\"event\":\"done\",\"collected\":2}", exited(0), &rep),
                         TC_UNDETERMINED);
        tc_report_free(&rep);
        assert_int_equal(decide(START PASS_A PASS_B "{\"event\":\"done\",\"collected\":3}\n", exited(0), &rep),
                         TC_UNDETERMINED);
        tc_report_free(&rep);
        assert_int_equal(decide(START PASS_B PASS_A DONE2, exited(0), &rep), TC_UNDETERMINED);
        tc_report_free(&rep);
        assert_int_equal(decide(START "garbage\n" PASS_A PASS_B DONE2, exited(0), &rep), TC_UNDETERMINED);
        tc_report_free(&rep);
        assert_int_equal(decide(PASS_A, exited(0), &rep), TC_UNDETERMINED);
        tc_report_free(&rep);
        /* a failure already received is evidence */
        assert_int_equal(decide(START "{\"event\":\"test\",\"name\":\"t.py::a\",\"outcome\":\"error\"}\n",
                                exited(4), &rep), TC_FAIL);
        tc_report_free(&rep);
}

static void test_sandbox_outcomes(void **state)
{
        struct tc_report rep;
        struct run_result r = exited(0);

        r.status = RUN_ERROR;
        assert_int_equal(decide("", r, &rep), TC_UNDETERMINED);
        tc_report_free(&rep);
        /* the reason keeps the cause, not only the step that met it */
        nsb_fail(&r.error, NSB_STAGE_PREPARE, EMFILE, "pipe");
        decide(START PASS_A, r, &rep);
        assert_string_equal(rep.reason, "sandbox error (prepare): pipe: Too many open files");
        tc_report_free(&rep);
        memset(&r.error, 0, sizeof r.error);
        r.status = RUN_LIMIT;
        r.limit = LIMIT_WALL_TIME;
        assert_int_equal(decide(START PASS_A, r, &rep), TC_FAIL);
        assert_int_equal(rep.tests[1].outcome, TC_ERROR);
        /* b was running (the runner runs them in the announced order): not
         * "not run" like the tests after it, which hid the culprit */
        assert_non_null(strstr(rep.tests[1].message, "did not finish (it was running)"));
        tc_report_free(&rep);
        decide(START, r, &rep);
        assert_non_null(strstr(rep.tests[0].message, "did not finish (it was running)"));
        assert_non_null(strstr(rep.tests[1].message, "not run: the sandbox stopped the tests"));
        tc_report_free(&rep);
        /* the value and the flag, as the CLI, judge, report and serve say it (review of the #32 follow-up) */
        snprintf(r.limit_value, sizeof r.limit_value, "300ms");
        decide(START PASS_A, r, &rep);
        assert_string_equal(rep.reason,
                            "the sandbox stopped the tests: the wall_time limit (300ms; raise it with --wall-time DUR)");
        tc_report_free(&rep);
        r.status = RUN_CANCELLED;
        assert_int_equal(decide(START PASS_A, r, &rep), TC_UNDETERMINED);
        tc_report_free(&rep);
        /* a broken harness */
        assert_int_equal(decide("{\"event\":\"start\",\"protocol\":1,\"tests\":[]}\n"
                                "{\"event\":\"collect_error\",\"file\":\"t.py\",\"message\":\"SyntaxError\"}\n"
                                "{\"event\":\"done\",\"collected\":0}\n", exited(3), &rep), TC_UNDETERMINED);
        assert_int_equal(rep.n_collect_errors, 1);
        tc_report_free(&rep);
}

static void test_render(void **state)
{
        struct tc_report rep;
        struct run_result r = exited(1);
        AUTOFREE char *text = NULL;
        json_t *root;

        decide(START PASS_A FAIL_B DONE2, r, &rep);
        text = tc_summary_text(&rep, &r);
        assert_non_null(strstr(text, "\u2713 t.py::a\n"));
        assert_non_null(strstr(text, "\u2717 t.py::b\n"));
        assert_non_null(strstr(text, "    assert 1 == 2\n"));
        assert_non_null(strstr(text, "== 1 passed, 1 failed in 0.01s ==\n"));
        root = tc_report_to_json(&rep, NULL);
        assert_non_null(root);
        assert_string_equal(json_string_value(json_object_get(root, "schema")), "nsbox.tests/1");
        assert_string_equal(json_string_value(json_object_get(root, "verdict")), "fail");
        assert_int_equal(json_array_size(json_object_get(root, "tests")), 2);
        assert_true(json_is_null(json_object_get(root, "result")));
        json_decref(root);
        tc_report_free(&rep);
        assert_int_equal(tc_exit_code(TC_PASS), 0);
        assert_int_equal(tc_exit_code(TC_FAIL), 1);
        assert_int_equal(tc_exit_code(TC_UNDETERMINED), 3);
}

/* #32 follow-up: what no test's sys.stdout/err wrote (fd 1/2 directly) is told
 * apart from the tests' own and shown under the failures, once, never
 * under a test; nothing when every byte was a test's. */
static void test_unattributed(void **state)
{
        struct tc_report rep;
        struct run_result r = exited(1);
        AUTOFREE char *text = NULL;
        AUTOFREE char *quiet = NULL;
        char out[] = "SYS\nFD1\n", err[] = "E\n";

        (void) state;
        decide(START PASS_A "{\"event\":\"test\",\"name\":\"t.py::b\",\"outcome\":\"failed\",\"message\":\"x\","
                            "\"stdout\":\"SYS\\n\",\"stdout_bytes\":4,\"stderr\":\"E\\n\"}\n" DONE2, r, &rep);
        r.out.text = out;
        r.out.kept = r.out.bytes = 8;
        r.err.text = err;
        r.err.kept = r.err.bytes = 2;
        assert_int_equal(tc_unattributed(&rep, &r.out, false), 4);
        assert_int_equal(tc_unattributed(&rep, &r.err, true), 0);   /* no stderr_bytes: the text's length */
        text = tc_summary_text(&rep, &r);
        assert_non_null(strstr(text, "    ---- captured stdout ----\n    | SYS\n"));
        assert_non_null(strstr(text, "---- the run's stdout (last lines): 4 bytes of it went to fd 1 directly"));
        assert_non_null(strstr(text, "  | SYS\n  | FD1\n"));
        assert_null(strstr(text, "the run's stderr"));
        r.out.bytes = r.out.kept = 4;
        quiet = tc_summary_text(&rep, &r);
        assert_null(strstr(quiet, "the run's"));
        tc_report_free(&rep);
}

/* #27: a message from the code under test (ESC[2K, CR, the 8-bit CSI, NEL, a
 * bidi override, a fake pass line) stays under its test, escaped; so does
 * the stderr tail of an undetermined run; the JSON keeps it exact. */
#define HOSTILE_MSG "boom\\u001b[2K\\r\\u009b2K\\u0085\\u202e\\n\\u2713 5 passed"

static void test_render_unsafe(void **state)
{
        struct tc_report rep;
        struct run_result r = exited(1);
        AUTOFREE char *text = NULL;
        json_t *root;

        (void) state;
        decide(START PASS_A "{\"event\":\"test\",\"name\":\"t.py::b\",\"outcome\":\"failed\",\"message\":\""
               HOSTILE_MSG "\"}\n" DONE2, r, &rep);
        text = tc_summary_text(&rep, &r);
        assert_non_null(text);
        assert_non_null(strstr(text, "\n    boom\\x1b[2K\\r\\u009b2K\\u0085\\u202e\n    \u2713 5 passed\n"));
        assert_null(strchr(text, '\x1b'));
        assert_null(strchr(text, '\r'));
        assert_null(strstr(text, "\xc2\x9b"));
        assert_null(strstr(text, "\n\u2713 5"));
        root = tc_report_to_json(&rep, NULL);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(root, "tests"), 1),
                                                              "message")),
                            "boom\x1b[2K\r\xc2\x9b" "2K\xc2\x85\xe2\x80\xae\n\u2713 5 passed");
        json_decref(root);
        tc_report_free(&rep);
        free(text);

        /* the runner killed: undetermined, the stderr tail under "  | " */
        r = exited(0);
        r.status = RUN_SIGNALED;
        r.signal = 9;
        r.err.text = "x\xe2\x80\xae\x1b[2K\r\nverdict: pass\n";
        r.err.kept = strlen(r.err.text);
        decide(START PASS_A, r, &rep);
        text = tc_summary_text(&rep, &r);
        assert_non_null(strstr(text, "---- stderr (last lines) ----\n  | x\\u202e\\x1b[2K\r\n  | verdict: pass\n"));
        assert_null(strstr(text, "\nverdict: pass"));
        tc_report_free(&rep);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_complete_channel),
                cmocka_unit_test(test_all_skipped_is_undetermined),
                cmocka_unit_test(test_untrusted_channel),
                cmocka_unit_test(test_sandbox_outcomes),
                cmocka_unit_test(test_render),
                cmocka_unit_test(test_unattributed),
                cmocka_unit_test(test_render_unsafe),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
