/* tests/unit/test_batch.c — the pure half of `nsbox batch`. */
#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "batch/batch_internal.h"

static struct batch_job parse_ok(const char *line)
{
        struct batch_job j;
        struct nsb_error e;

        nsb_error_clear(&e);
        if (batch_job_parse(line, strlen(line), 7, NULL, &j, &e) < 0)
                fail_msg("unexpected error: %s", e.msg);
        return j;
}

static void parse_err(const char *line, const char *needle)
{
        struct batch_job j;
        struct nsb_error e;

        nsb_error_clear(&e);
        assert_int_equal(batch_job_parse(line, strlen(line), 12, NULL, &j, &e), -EINVAL);
        assert_int_equal(e.stage, NSB_STAGE_CONFIG);
        if (strncmp(e.msg, "line 12: ", 9) != 0 || !strstr(e.msg, needle))
                fail_msg("message '%s' lacks 'line 12: ' or '%s'", e.msg, needle);
        batch_job_free(&j);
}

static const char *refusal(const char *input)
{
        static char buf[NSB_ERROR_MSG_MAX];
        const char *nl = strchr(input, '\n');

        return batch_input_refusal(input, nl ? (size_t) (nl - input) : strlen(input), strlen(input), "in.json", buf,
                                   sizeof buf);
}

static void expect_refusal(const char *input, const char *what, const char *fix)
{
        const char *m = refusal(input);

        if (!m || !strstr(m, what) || !strstr(m, fix) || strncmp(m, "in.json is not JSON Lines: ", 27) != 0)
                fail_msg("input '%s': got '%s', want '%s' and '%s'", input, m ? m : "(accepted)", what, fix);
}

static void test_input_refusal(void **state)
{
        (void) state;
        /* a job line, even a bad one, is JSON Lines: its errors are its own line */
        assert_null(refusal("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"1\"}\n[1]\n"));
        assert_null(refusal("{\"id\":\"a\"}"));
        assert_null(refusal("  {\"kind\":\"perl\"}\r"));
        expect_refusal("[{\"id\":\"a\",\"kind\":\"python\",\"code\":\"1\"}]\n", "a JSON array;", "jq -c '.[]' in.json");
        expect_refusal("[\n {\"id\":\"a\"}\n]\n", "a JSON array over several lines", "jq -c '.[]' in.json");
        expect_refusal("{\n  \"id\": \"a\",\n  \"kind\": \"python\"\n}\n", "pretty-printed JSON", "jq -c . in.json");
        expect_refusal("{\n \"program\": {\"source\": \"x\"},\n \"cases\": []\n}\n", "a pretty-printed judge spec",
                       "nsbox judge in.json");
        expect_refusal("{\"program\": {\"source\": \"x\"}, \"cases\": []}\n", "a judge spec", "kind: \"judge\", spec: .");
        expect_refusal("{\"schema\":\"nsbox.result/1\",\"status\":\"exited\"}\n", "nsbox's own output", "not its results");
        expect_refusal("vm\n", "plain text (\"vm\")", "one job object per line");
        expect_refusal("\"text\"\n", "a JSON value that is not an object", "one job object");
        expect_refusal("42\n", "a JSON value that is not an object", "one job object");
}

static void test_input_refusal_binary(void **state)
{
        static const char nul_in_object[] = "{\"id\":\"a\",\0\"kind\":\"python\"}\n";
        static const char nul_first[] = "\0\0\0\n";
        char buf[NSB_ERROR_MSG_MAX];
        const char *m;

        (void) state;
        /* Not "pretty-printed JSON" (jansson stops at the NUL): binary data. */
        m = batch_input_refusal(nul_in_object, sizeof nul_in_object - 2, sizeof nul_in_object - 1, "in.json", buf,
                                sizeof buf);
        if (!m || !strstr(m, "in.json is not JSON Lines: its first line holds a NUL byte (at byte 11)") ||
            strstr(m, "pretty"))
                fail_msg("got '%s'", m ? m : "(accepted)");
        m = batch_input_refusal(nul_first, 3, 4, NULL, buf, sizeof buf);
        if (!m || !strstr(m, "the input on stdin is not JSON Lines: its first line holds a NUL byte (at byte 1)"))
                fail_msg("got '%s'", m ? m : "(accepted)");
}

static void test_long_line_refusal(void **state)
{
        char buf[NSB_ERROR_MSG_MAX];
        const char *m;

        (void) state;
        /* the head of a job object: that job's own bad line */
        assert_null(batch_long_line_refusal("{\"id\":\"a\",\"code\":\"xxxx", 20, "in", buf, sizeof buf));
        assert_null(batch_long_line_refusal(" \t{\"id\"", 7, "in", buf, sizeof buf));
        /* anything else is no JSON Lines, named from its head */
        m = batch_long_line_refusal("\0\0\0\0", 4, "/dev/zero", buf, sizeof buf);
        if (!m || !strstr(m, "/dev/zero is not JSON Lines: its first line holds a NUL byte (at byte 1)"))
                fail_msg("got '%s'", m ? m : "(accepted)");
        m = batch_long_line_refusal("{\"id\":\0", 7, "in", buf, sizeof buf);
        if (!m || !strstr(m, "holds a NUL byte (at byte 7)"))
                fail_msg("got '%s'", m ? m : "(accepted)");
        m = batch_long_line_refusal("[{\"id\":\"a\",\"code\":\"xx", 20, "in", buf, sizeof buf);
        if (!m || !strstr(m, "a JSON array") || !strstr(m, "jq -c '.[]' in"))
                fail_msg("got '%s'", m ? m : "(accepted)");
        m = batch_long_line_refusal("xxxxxxxx", 8, "in", buf, sizeof buf);
        if (!m || !strstr(m, "plain text (\"xxxxxxxx\")"))
                fail_msg("got '%s'", m ? m : "(accepted)");
}

static void test_bom(void **state)
{
        (void) state;
        assert_int_equal(batch_bom_len("\xef\xbb\xbf{}", 5), 3);
        assert_int_equal(batch_bom_len("\xef\xbb\xbf", 3), 3);
        assert_int_equal(batch_bom_len("\xef\xbb", 2), 0);
        assert_int_equal(batch_bom_len("{\"id\":1}", 8), 0);
        assert_int_equal(batch_bom_len("\xbb\xef\xbf{", 4), 0);
}

static void test_summary(void **state)
{
        struct batch_progress p = { .done = 5, .count = { 2, 1, 1, 1 }, .elapsed_ms = 2345 };
        char buf[256];

        (void) state;
        batch_summary_text(&p, false, buf, sizeof buf);
        assert_string_equal(buf, "nsbox batch: 5 lines in 2.3s: pass 2 fail 1 timeout 1 error 1; bad lines 0");
        p.bad_lines = 1;
        p.first_bad_line = 4;
        p.skipped = 3;
        batch_summary_text(&p, true, buf, sizeof buf);
        assert_string_equal(buf, "nsbox batch: 5 lines in 2.3s (cancelled): pass 2 fail 1 timeout 1 error 1; bad lines 1 "
                                 "(first: line 4); skipped 3 (--resume)");
}

static void test_python_job(void **state)
{
        struct batch_job j = parse_ok("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"x=1\",\"test_code\":\"assert x\",\"timeout\":2.5}");

        assert_int_equal(j.kind, BATCH_PYTHON);
        assert_string_equal(json_string_value(j.id), "a");
        assert_int_equal(j.program_len, strlen("x=1\nassert x"));
        assert_memory_equal(j.program, "x=1\nassert x", j.program_len);
        assert_int_equal(j.limits_set, CFG_F_WALL_TIME);
        assert_int_equal(j.limits.wall_time_ms, 2500);
        assert_int_equal(j.line, 7);
        batch_job_free(&j);
        j = parse_ok("{\"id\":3,\"kind\":\"python\",\"code\":\"pass\",\"test_code\":null,\"limits\":{\"memory\":\"64M\",\"pids\":8}}");
        assert_int_equal(json_integer_value(j.id), 3);
        assert_string_equal(j.program, "pass");
        assert_int_equal(j.limits_set, CFG_F_MEMORY | CFG_F_PIDS);
        assert_int_equal(j.limits.memory_bytes, 64u << 20);
        batch_job_free(&j);
}

static void test_run_and_judge_jobs(void **state)
{
        struct batch_job j = parse_ok("{\"id\":\"r\",\"kind\":\"run\",\"argv\":[\"/bin/echo\",\"hi\"],\"stdin\":\"a\\u0000b\"}");

        assert_int_equal(j.kind, BATCH_RUN);
        assert_int_equal(j.argc, 2);
        assert_string_equal(j.argv[1], "hi");
        assert_null(j.argv[2]);
        assert_int_equal(j.stdin_len, 3);
        batch_job_free(&j);
        j = parse_ok("{\"id\":\"j\",\"kind\":\"judge\",\"spec\":{\"program\":{\"source\":\"print(1)\"},"
                     "\"cases\":[{\"name\":\"c\",\"expect\":{\"stdout\":{\"equals\":\"1\\n\"}}}]}}");
        assert_int_equal(j.kind, BATCH_JUDGE);
        assert_int_equal(j.spec.n_cases, 1);
        batch_job_free(&j);
}

static void test_files(void **state)
{
        struct batch_job j = parse_ok("{\"id\":\"f\",\"kind\":\"python\",\"code\":\"\","
                                      "\"files\":{\"data/in.txt\":\"aGVsbG8=\",\"e\":\"\"},\"fetch_files\":[\"out.txt\",\"d/x\"]}");
        char *key = NULL;

        (void) state;
        assert_int_equal(j.n_files, 2);
        assert_string_equal(j.files[0].name, "data/in.txt");
        assert_int_equal(j.files[0].len, 5);
        assert_memory_equal(j.files[0].data, "hello", 5);
        assert_int_equal(j.files[1].len, 0);
        assert_int_equal(j.n_fetch, 2);
        assert_string_equal(j.fetch[1], "d/x");
        batch_job_free(&j);
        /* files that cannot fit the workspace's tmpfs (whole pages each): a bad line, not ENOSPC at run time */
        {
                struct nsb_config cli;
                struct nsb_error e;

                memset(&cli, 0, sizeof cli);
                cli.tmp_size_bytes = 64u << 20;
                j = parse_ok("{\"id\":\"f\",\"kind\":\"python\",\"code\":\"\",\"limits\":{\"tmp_size\":\"4K\"},"
                             "\"files\":{\"a\":\"eA==\"}}");
                assert_int_equal(batch_files_fit(&cli, &j, &e), 0);   /* one page */
                batch_job_free(&j);
                j = parse_ok("{\"id\":\"f\",\"kind\":\"python\",\"code\":\"\",\"limits\":{\"tmp_size\":\"4K\"},"
                             "\"files\":{\"a\":\"eA==\",\"b\":\"eA==\"}}");
                assert_int_equal(batch_files_fit(&cli, &j, &e), -EFBIG);
                assert_non_null(strstr(e.msg, "do not fit the job's workspace (tmp_size 4096 bytes)"));
                batch_job_free(&j);
                cli.tmp_size_bytes = 4096;   /* the engine's own --tmp-size */
                j = parse_ok("{\"id\":\"f\",\"kind\":\"python\",\"code\":\"\",\"files\":{\"a\":\"eA==\",\"b\":\"eA==\",\"c\":\"\"}}");
                assert_int_equal(batch_files_fit(&cli, &j, &e), -EFBIG);
                batch_job_free(&j);
        }
        /* a cancel line: that key alone, an id */
        assert_int_equal(batch_cancel_parse("{\"cancel\": \"j1\"}", strlen("{\"cancel\": \"j1\"}"), &key), 1);
        assert_string_equal(key, "\"j1\"");
        free(key);
        assert_int_equal(batch_cancel_parse("{\"cancel\":7}", strlen("{\"cancel\":7}"), &key), 1);
        assert_string_equal(key, "7");
        free(key);
        assert_int_equal(batch_cancel_parse("{\"id\":1,\"kind\":\"python\",\"code\":\"x\"}", strlen("{\"id\":1,\"kind\":\"python\",\"code\":\"x\"}"), &key), 0);
        assert_null(key);
        assert_int_equal(batch_cancel_parse("{\"cancel\":1,\"id\":2}", strlen("{\"cancel\":1,\"id\":2}"), &key), -EINVAL);
        assert_int_equal(batch_cancel_parse("{\"cancel\":[1]}", strlen("{\"cancel\":[1]}"), &key), -EINVAL);
}

static void test_bad_lines(void **state)
{
        parse_err("{\"id\":\"a\",\"kind\":\"python\"", "invalid JSON");
        parse_err("[1]", "expected a JSON object");
        parse_err("{\"kind\":\"python\",\"code\":\"\"}", "missing \"id\"");
        parse_err("{\"id\":\"\",\"kind\":\"python\",\"code\":\"\"}", "\"id\"");
        parse_err("{\"id\":1.5,\"kind\":\"python\",\"code\":\"\"}", "\"id\"");
        parse_err("{\"id\":\"a\",\"kind\":\"perl\",\"code\":\"\"}",
                  "\"kind\": unknown kind \"perl\" (expected \"python\", \"judge\", \"run\" or \"test\")");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"cod\":\"\"}",
                  "unknown key \"cod\" for a python job (expected id, kind, code, test_code, timeout, limits, stdin, files, fetch_files, image)");
        /* a job's files: plain relative names inside /workspace, base64 content, bounded */
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"files\":{\"../x\":\"\"}}",
                  "\"files\": the name \"../x\" has a \".\" or \"..\" component");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"files\":{\"/etc/x\":\"\"}}",
                  "\"files\": the name \"/etc/x\" is absolute");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"files\":{\"a//b\":\"\"}}", "empty component");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"files\":{\"a\":\"not base64!\"}}",
                  "\"files\": \"a\": expected base64 text");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"files\":[]}", "\"files\": expected an object");
        /* a name that is another's directory: a bad line (400 through serve), not a sandbox error at run time */
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"files\":{\"a\":\"\",\"a/b\":\"\"}}",
                  "\"files\": \"a\" is a file and the directory of \"a/b\"");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"files\":{\"d/e/f\":\"\",\"d/e\":\"\"}}",
                  "\"files\": \"d/e\" is a file and the directory of \"d/e/f\"");
        parse_err("{\"id\":\"a\",\"kind\":\"run\",\"argv\":[\"/bin/true\"],\"fetch_files\":[\"a/..\"]}",
                  "\"fetch_files\": the name \"a/..\" has");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"fetch_files\":[\"x\",\"x\"]}", "named twice");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"fetch_files\":[\"\"]}", "is empty");
        parse_err("{\"id\":\"a\",\"kind\":\"judge\",\"spec\":{},\"files\":{}}", "unknown key \"files\" for a judge job");
        parse_err("{\"id\":\"a\",\"kind\":\"judge\",\"spce\":{}}",
                  "unknown key \"spce\" for a judge job (expected id, kind, spec)");
        parse_err("{\"id\":\"a\",\"kind\":\"python\"}", "missing \"code\"");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"argv\":[]}", "unknown key \"argv\"");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"limits\":{\"walltime\":\"1s\"}}", "unknown key \"walltime\"");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"limits\":{\"memory\":\"lots\"}}", "limits.memory");
        /* below what python needs to start: the caller's mistake, not a fail */
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"limits\":{\"memory\":\"8M\"}}",
                  "limits.memory: memory limit 8M is below 16M");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"limits\":{\"output_limit\":\"0\"}}",
                  "limits.output_limit: '0' is out of range: allowed 1 to 1G");
        parse_err("{\"id\":\"a\",\"kind\":\"run\",\"argv\":[\"/bin/true\"],\"limits\":{\"memory\":\"1k\"}}",
                  "allowed 1M to 1T");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"timeout\":0}", "\"timeout\"");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"\",\"timeout\":1,\"limits\":{\"wall_time\":\"1s\"}}", "not both");
        parse_err("{\"id\":\"a\",\"kind\":\"run\",\"argv\":[]}", "\"argv\"");
        parse_err("{\"id\":\"a\",\"kind\":\"run\",\"argv\":[\"a\\u0000b\"]}", "NUL");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"#\\u0000\",\"test_code\":\"assert 0\"}", "\"code\": must not contain a NUL");
        parse_err("{\"id\":\"a\",\"kind\":\"python\",\"code\":\"x=1\",\"test_code\":\"#\\u0000\"}", "\"test_code\": must not contain a NUL");
        parse_err("{\"id\":\"a\",\"kind\":\"judge\",\"spec\":{\"program\":{\"source\":\"\"}}}", "spec");
        parse_err("{\"id\":\"a\",\"id\":\"b\",\"kind\":\"python\",\"code\":\"\"}", "invalid JSON");
}

static void test_error_keeps_id(void **state)
{
        struct batch_job j;
        struct nsb_error e;
        const char *line = "{\"id\":\"x9\",\"kind\":\"python\"}";
        json_t *out;

        assert_true(batch_job_parse(line, strlen(line), 4, NULL, &j, &e) < 0);
        out = batch_error_line(j.id, j.line, &e);
        assert_non_null(out);
        assert_string_equal(json_string_value(json_object_get(out, "id")), "x9");
        assert_string_equal(json_string_value(json_object_get(out, "status")), "error");
        assert_string_equal(json_string_value(json_object_get(out, "outcome")), "error");
        assert_int_equal(json_integer_value(json_object_get(out, "label")), 0);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "batch"), "line")), 4);
        assert_non_null(strstr(json_string_value(json_object_get(json_object_get(out, "error"), "message")), "line 4"));
        json_decref(out);
        batch_job_free(&j);
}

static void test_outcome(void **state)
{
        struct run_result r;

        memset(&r, 0, sizeof r);
        r.status = RUN_EXITED;
        assert_int_equal(batch_outcome_of(&r), OUTCOME_PASS);
        r.exit_code = 1;
        assert_int_equal(batch_outcome_of(&r), OUTCOME_FAIL);
        r.status = RUN_SIGNALED;
        assert_int_equal(batch_outcome_of(&r), OUTCOME_FAIL);
        r.status = RUN_LIMIT;
        r.limit = LIMIT_WALL_TIME;
        assert_int_equal(batch_outcome_of(&r), OUTCOME_TIMEOUT);
        r.limit = LIMIT_CPU_TIME;
        assert_int_equal(batch_outcome_of(&r), OUTCOME_TIMEOUT);
        for (int l = LIMIT_MEMORY; l < LIMIT__MAX; l++) {
                r.limit = (enum run_limit) l;
                assert_int_equal(batch_outcome_of(&r), OUTCOME_FAIL);
        }
        r.status = RUN_ERROR;
        assert_int_equal(batch_outcome_of(&r), OUTCOME_ERROR);
        r.status = RUN_CANCELLED;
        assert_int_equal(batch_outcome_of(&r), OUTCOME_ERROR);
        assert_int_equal(batch_verdict_outcome(JUDGE_PASS), OUTCOME_PASS);
        assert_int_equal(batch_verdict_outcome(JUDGE_FAIL), OUTCOME_FAIL);
        assert_int_equal(batch_verdict_outcome(JUDGE_UNDETERMINED), OUTCOME_ERROR);
        assert_string_equal(batch_outcome_name(OUTCOME_TIMEOUT), "timeout");
}

static void test_shard_blank_ids(void **state)
{
        size_t taken[3] = { 0 };
        json_t *set = json_object();
        char *k1, *k2;

        for (size_t line = 1; line <= 10; line++)
                for (unsigned k = 0; k < 3; k++)
                        taken[k] += batch_shard_takes(k, 3, line);
        assert_int_equal(taken[0], 4);
        assert_int_equal(taken[1], 3);
        assert_int_equal(taken[2], 3);
        assert_true(batch_shard_takes(1, 3, 2));
        assert_false(batch_shard_takes(1, 3, 1));
        assert_true(batch_shard_takes(0, 0, 5));
        assert_true(batch_line_blank(" \t\r", 3));
        assert_false(batch_line_blank(" x", 2));

        json_t *s7 = json_string("7"), *i7 = json_integer(7);

        k1 = batch_id_key(s7);
        k2 = batch_id_key(i7);
        json_decref(s7);
        json_decref(i7);
        assert_string_not_equal(k1, k2);
        batch_resume_add(set, "{\"id\":\"7\",\"status\":\"exited\"}", 28);
        batch_resume_add(set, "{\"id\":\"cut", 10);
        batch_resume_add(set, "{\"id\":null}", 11);
        assert_non_null(json_object_get(set, k1));
        assert_null(json_object_get(set, k2));
        assert_int_equal(json_object_size(set), 1);
        free(k1);
        free(k2);
        json_decref(set);
}

static void test_line_render(void **state)
{
        json_t *id = json_string("q");
        json_t *out = batch_line_render(id, 3, json_pack("{s:s}", "status", "exited"), OUTCOME_PASS, 1.5, 9.25);
        const char *first;
        void *it;

        assert_non_null(out);
        it = json_object_iter(out);
        first = json_object_iter_key(it);
        assert_string_equal(first, "id");
        assert_string_equal(json_string_value(json_object_get(out, "outcome")), "pass");
        assert_int_equal(json_integer_value(json_object_get(out, "label")), 1);
        assert_true(json_real_value(json_object_get(json_object_get(out, "batch"), "end_ms")) == 9.25);
        json_decref(out);
        out = batch_line_render(id, 3, json_pack("{s:s}", "verdict", "fail"), -1, 0, 1);
        assert_null(json_object_get(out, "outcome"));
        assert_null(json_object_get(out, "label"));
        json_decref(out);
        json_decref(id);
}

static void test_progress(void **state)
{
        struct batch_progress p = { .total = 100, .done = 40, .skipped = 10, .elapsed_ms = 4000 };
        char buf[256];

        p.count[OUTCOME_PASS] = 30;
        p.count[OUTCOME_FAIL] = 8;
        p.count[OUTCOME_TIMEOUT] = 1;
        p.count[OUTCOME_ERROR] = 1;
        batch_progress_text(&p, buf, sizeof buf);
        assert_string_equal(buf, "[##########..........] 50/100  10.0/s  ETA 5s  pass 30 fail 8 timeout 1 error 1  skipped 10");
        p.total = 0;
        batch_progress_text(&p, buf, sizeof buf);
        assert_non_null(strstr(buf, "50 done"));
        p.total = 50;
        batch_progress_text(&p, buf, sizeof buf);
        assert_non_null(strstr(buf, "done"));
        p.total = 10000;
        batch_progress_text(&p, buf, sizeof buf);
        assert_non_null(strstr(buf, "ETA 16m35s"));
        batch_progress_text(&p, buf, 8);
        assert_int_equal(strlen(buf), 7);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_input_refusal),
                cmocka_unit_test(test_input_refusal_binary),
                cmocka_unit_test(test_bom),
                cmocka_unit_test(test_long_line_refusal),
                cmocka_unit_test(test_summary),
                cmocka_unit_test(test_python_job),
                cmocka_unit_test(test_run_and_judge_jobs),
                cmocka_unit_test(test_bad_lines), cmocka_unit_test(test_files),
                cmocka_unit_test(test_error_keeps_id),
                cmocka_unit_test(test_outcome),
                cmocka_unit_test(test_shard_blank_ids),
                cmocka_unit_test(test_line_render),
                cmocka_unit_test(test_progress),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
