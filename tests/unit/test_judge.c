/* Unit tests for judge/: the spec parser, the matchers, case and suite
 * verdicts, the request for a case and the rendering. Pure code only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>

#include "judge/judge_internal.h"
#include "util/cleanup.h"
#include "util/portable.h"

/* ---- helpers ----------------------------------------------------------- */

static void parse_ok(const char *json, const char *spec_path, struct judge_spec *spec)
{
        struct nsb_error e;

        nsb_error_clear(&e);
        if (judge_spec_parse(json, strlen(json), spec_path, spec, &e) < 0)
                fail_msg("spec should parse: %s\n%s", e.msg, json);
}

/* A spec with one case whose stdout matcher is {kind: pattern}. */
static void matcher_spec(const char *kind, const char *pattern, size_t len, struct judge_spec *spec)
{
        json_t *root = json_pack("{s:{s:s}, s:[{s:s, s:{s:{s:s%}}}]}", "program", "source", "x",
                                 "cases", "name", "c", "expect", "stdout", kind, pattern, len);
        char *text;

        assert_non_null(root);
        text = json_dumps(root, 0);
        assert_non_null(text);
        parse_ok(text, "spec.json", spec);
        free(text);
        json_decref(root);
}

static struct run_stream stream(const char *kept, size_t kept_len, uint64_t bytes, const char *tail)
{
        struct run_stream s;

        memset(&s, 0, sizeof s);
        s.text = (char *) kept;
        s.kept = kept_len;
        s.bytes = bytes;
        s.truncated = bytes > kept_len;
        if (tail) {
                s.tail_len = strlen(tail);
                memcpy(s.tail, tail, s.tail_len);
        }
        return s;
}

/* A stream as its recorded result holds it (tail: the recorded tail). */
static const struct judge_stream_view *view(const struct run_stream *s)
{
        static struct judge_stream_view v;

        v = (struct judge_stream_view) {
                .text = s->text, .kept = s->kept, .bytes = s->bytes, .cut = s->truncated || s->bytes > s->kept,
                .tail = s->tail, .tail_len = s->tail_len,
        };
        return &v;
}

/* The verdict of @r as judge gives it: from its rendered result object. */
static int verdict_of(const struct judge_expect *x, const struct run_result *r, struct judge_case_report *c)
{
        memset(c, 0, sizeof *c);
        judge_case_settle(x, result_to_json(r, 1u << 20), c);
        json_decref(c->result_json);
        c->result_json = NULL;
        return 0;
}

static struct run_result *exited(int code, const char *out, const char *err)
{
        struct run_result *r = calloc(1, sizeof *r);

        assert_non_null(r);
        r->status = RUN_EXITED;
        r->exit_code = code;
        r->out = stream(out, strlen(out), strlen(out), NULL);
        r->err = stream(err, strlen(err), strlen(err), NULL);
        return r;
}

/* ---- spec parsing ------------------------------------------------------- */

static void test_parse_good(void **state)
{
        static const char json[] =
                "{\"program\": {\"path\": \"solution.py\"}, \"profile\": \"python\",\n"
                " \"limits\": {\"wall_time\": \"2s\", \"memory\": \"128M\", \"pids\": 32, \"cpu_time\": 1.5,\n"
                "            \"output_limit\": \"64K\", \"file_size\": \"1M\", \"tmp_size\": \"8M\"},\n"
                " \"cases\": [\n"
                "  {\"name\": \"adds\", \"args\": [\"2\", \"3\"], \"stdin\": \"a\\u0000b\",\n"
                "   \"expect\": {\"exit_code\": 0, \"stdout\": {\"equals\": \"5\\n\"}, \"stderr\": {\"contains\": \"\"}}},\n"
                "  {\"name\": \"fails\", \"expect\": {\"exit_code\": 3, \"stdout\": {\"regex\": \"^\\\\d+$\"}}},\n"
                "  {\"name\": \"bare\"}\n"
                " ]}";
        struct judge_spec spec;

        (void) state;
        parse_ok(json, "/srv/specs/spec.json", &spec);
        assert_string_equal(spec.program.path, "/srv/specs/solution.py");
        assert_null(spec.program.source);
        assert_string_equal(spec.program.name, "solution.py");
        assert_string_equal(spec.program.sandbox_path, "/program/solution.py");
        assert_string_equal(spec.profile, "python");
        assert_int_equal(spec.limits.wall_time_ms, 2000);
        assert_int_equal(spec.limits.cpu_time_ms, 1500);
        assert_int_equal(spec.limits.memory_bytes, 128ULL << 20);
        assert_int_equal(spec.limits.pids_max, 32);
        assert_int_equal(spec.limits.output_limit_bytes, 64ULL << 10);
        assert_int_equal(spec.limits.file_size_bytes, 1ULL << 20);
        assert_int_equal(spec.limits.tmp_size_bytes, 8ULL << 20);
        assert_int_equal(spec.limits_set, CFG_F_WALL_TIME | CFG_F_CPU_TIME | CFG_F_MEMORY |
                                                  CFG_F_PIDS | CFG_F_OUTPUT | CFG_F_FILE_SIZE |
                                                  CFG_F_TMP_SIZE);
        assert_int_equal(spec.n_cases, 3);

        assert_string_equal(spec.cases[0].name, "adds");
        assert_int_equal(spec.cases[0].stimulus.n_args, 2);
        assert_string_equal(spec.cases[0].stimulus.args[1], "3");
        assert_int_equal(spec.cases[0].stimulus.stdin_len, 3);
        assert_memory_equal(spec.cases[0].stimulus.stdin_data, "a\0b", 3);
        assert_int_equal(spec.cases[0].expect.out.kind, JUDGE_MATCH_EQUALS);
        assert_int_equal(spec.cases[0].expect.out.len, 2);
        assert_int_equal(spec.cases[0].expect.err.kind, JUDGE_MATCH_CONTAINS);
        assert_int_equal(spec.cases[0].expect.err.len, 0);

        assert_int_equal(spec.cases[1].expect.exit_code, 3);
        assert_int_equal(spec.cases[1].expect.out.kind, JUDGE_MATCH_REGEX);
        assert_non_null(spec.cases[1].expect.out.re);

        assert_int_equal(spec.cases[2].expect.exit_code, 0);   /* no exit_code: 0 is expected */
        assert_int_equal(spec.cases[2].expect.out.kind, JUDGE_MATCH_NONE);
        assert_int_equal(spec.cases[2].stimulus.n_args, 0);
        assert_null(spec.cases[2].stimulus.stdin_data);
        judge_spec_free(&spec);
}

static void test_parse_program_forms(void **state)
{
        static const struct { const char *json, *spec_path, *path, *name; } rows[] = {
                { "{\"program\": {\"path\": \"sol.py\"}, \"cases\": [{\"name\": \"a\"}]}", "spec.json", "sol.py", "sol.py" },
                { "{\"program\": {\"path\": \"sol.py\"}, \"cases\": [{\"name\": \"a\"}]}", "/spec.json", "/sol.py", "sol.py" },
                { "{\"program\": {\"path\": \"d/sol.py\"}, \"cases\": [{\"name\": \"a\"}]}", "x/y/s.json", "x/y/d/sol.py", "sol.py" },
                { "{\"program\": {\"path\": \"/abs/p.py\"}, \"cases\": [{\"name\": \"a\"}]}", "x/s.json", "/abs/p.py", "p.py" },
                { "{\"program\": {\"source\": \"print(1)\"}, \"cases\": [{\"name\": \"a\"}]}", "x/s.json", NULL, "main.py" },
                { "{\"program\": {\"path\": \"p.py\"}, \"limits\": {\"wall_time\": 3, \"pids\": \"8\"}, \"cases\": [{\"name\": \"a\"}]}",
                  NULL, "p.py", "p.py" },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                struct judge_spec spec;

                parse_ok(rows[i].json, rows[i].spec_path, &spec);
                if (rows[i].path)
                        assert_string_equal(spec.program.path, rows[i].path);
                else
                        assert_string_equal(spec.program.source, "print(1)");
                assert_string_equal(spec.program.name, rows[i].name);
                judge_spec_free(&spec);
        }
        {
                struct judge_spec spec;
                parse_ok(rows[5].json, NULL, &spec);
                assert_int_equal(spec.limits.wall_time_ms, 3000);
                assert_int_equal(spec.limits.pids_max, 8);
                judge_spec_free(&spec);
        }
}

#define P "\"program\": {\"source\": \"x\"}, "
#define ONE_CASE "\"cases\": [{\"name\": \"a\"}]"

static void test_parse_bad(void **state)
{
        /* @msg: the exact message, or (when @exact is false) a prefix of it
         * followed somewhere by @needle. */
        static const struct { const char *json; bool exact; const char *msg, *needle; } rows[] = {
                { "{" P ONE_CASE ", \"extra\": 1}", true,
                  "unknown key \"extra\" (expected one of: program, profile, limits, cases, image)", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\", \"expect\": "
                  "{\"stdout\": {\"equal\": \"5\"}}}]}", true,
                  "cases[2].expect.stdout: unknown matcher \"equal\" (expected equals, contains or regex)", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expect\": {\"stderr\": {\"equals\": \"\", \"contains\": \"x\"}}}]}",
                  false, "cases[0].expect.stderr: a matcher takes exactly one key", "got 2" },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expect\": {\"stdout\": {}}}]}",
                  false, "cases[0].expect.stdout: a matcher takes exactly one key", "got 0" },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expect\": {\"stdout\": {\"regex\": \"(ab\"}}}]}",
                  false, "cases[0].expect.stdout.regex: bad regex at offset 3: ", "missing closing parenthesis" },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expect\": {\"stdout\": \"5\"}}]}",
                  false, "cases[0].expect.stdout: expected a matcher", NULL },
                { "{" P "\"profile\": \"python\"}", true, "missing \"cases\"", NULL },
                { "{" P "\"cases\": []}", true, "cases: expected a non-empty array of cases", NULL },
                { "{" P "\"cases\": {\"name\": \"a\"}}", true, "cases: expected a non-empty array of cases", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"a\"}]}", true,
                  "cases[2].name: duplicate case name \"a\" (also cases[0])", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"args\": \"2 3\"}]}", true,
                  "cases[0].args: expected an array of strings", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"args\": [\"2\", 3]}]}", true,
                  "cases[0].args[1]: expected a string", NULL },
                { "{" P "\"limits\": {\"memory\": \"lots\"}, " ONE_CASE "}", false, "limits.memory: ", "'lots'" },
                { "{" P "\"limits\": {\"memory\": 1024}, " ONE_CASE "}", true,
                  "limits.memory: expected a size string like \"256M\"", NULL },
                { "{\"program\": {\"path\": \"a.py\", \"source\": \"x\"}, " ONE_CASE "}", true,
                  "program: give either \"path\" or \"source\", not both", NULL },
                { "{\"program\": {}, " ONE_CASE "}", true, "program: expected {\"path\": FILE} or {\"source\": TEXT}", NULL },
                { "{\"program\": {\"path\": \"dir/\"}, " ONE_CASE "}", true, "program.path: must name a file, not a directory", NULL },
                { "{" ONE_CASE "}", true, "missing \"program\"", NULL },
                { "{" P "\"limits\": {\"wall\": \"2s\"}, " ONE_CASE "}", true,
                  "limits: unknown key \"wall\" (expected one of: wall_time, cpu_time, memory, pids, output_limit, "
                  "file_size, tmp_size)", NULL },
                { "{" P "\"limits\": {\"wall_time\": -1}, " ONE_CASE "}", false, "limits.wall_time: ", "'-1'" },
                { "{" P "\"limits\": {\"wall_time\": \"0s\"}, " ONE_CASE "}", false, "limits.wall_time: ", NULL },
                { "{" P "\"limits\": {\"pids\": 0}, " ONE_CASE "}", false, "limits.pids: ", "out of range" },
                /* 0 would mean no limit to the cgroup and to tmpfs (batch jobs share this parser) */
                { "{" P "\"limits\": {\"memory\": \"0\"}, " ONE_CASE "}", false, "limits.memory: ", "turn the limit off" },
                { "{" P "\"limits\": {\"tmp_size\": \"0M\"}, " ONE_CASE "}", false, "limits.tmp_size: ", "turn the limit off" },
                /* the flags' ranges, and python's own floor */
                { "{" P "\"limits\": {\"output_limit\": \"0\"}, " ONE_CASE "}", false, "limits.output_limit: ",
                  "allowed 1 to 1G" },
                { "{" P "\"limits\": {\"wall_time\": 90000}, " ONE_CASE "}", false, "limits.wall_time: ",
                  "allowed 1ms to 24h" },
                { "{" P "\"limits\": {\"memory\": \"1k\"}, " ONE_CASE "}", false, "limits.memory: ", "allowed 1M to 1T" },
                { "{" P "\"limits\": {\"memory\": \"8M\"}, " ONE_CASE "}", true,
                  "limits.memory: memory limit 8M is below 16M, the least a Python interpreter needs to start "
                  "(docs/profiles.md, \"Limits\")", NULL },
                { "{" P "\"limits\": {\"pids\": 1.5}, " ONE_CASE "}", true, "limits.pids: expected an integer", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expected\": {}}]}", false,
                  "cases[0]: unknown key \"expected\"", NULL },
                { "{" P "\"cases\": [{\"args\": []}]}", true, "cases[0]: missing \"name\"", NULL },
                { "{" P "\"cases\": [{\"name\": \"\"}]}", true, "cases[0].name: must not be empty", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expect\": {\"exit_code\": 256}}]}", true,
                  "cases[0].expect.exit_code: expected an integer from 0 to 255", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expect\": {\"exit_code\": \"0\"}}]}", true,
                  "cases[0].expect.exit_code: expected an integer from 0 to 255", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"expect\": {\"stdout\": {\"equals\": 5}}}]}", true,
                  "cases[0].expect.stdout.equals: expected a string", NULL },
                { "{" P "\"cases\": [{\"name\": \"a\", \"args\": [\"a\\u0000b\"]}]}", true,
                  "cases[0].args[0]: must not contain a NUL character", NULL },
                { "{" P "\"profile\": 3, " ONE_CASE "}", true, "profile: expected a string", NULL },
                { "{" P ONE_CASE ", \"cases\": []}", false, "invalid JSON at line 1, column ", "duplicate" },
                { "{" P ONE_CASE, false, "invalid JSON at line 1, column ", NULL },
                { "[1, 2]", true, "expected a JSON object", NULL },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                struct judge_spec spec;
                struct nsb_error e;

                nsb_error_clear(&e);
                if (judge_spec_parse(rows[i].json, strlen(rows[i].json), "s.json", &spec, &e) >= 0)
                        fail_msg("row %zu parsed: %s", i, rows[i].json);
                assert_int_equal(e.stage, NSB_STAGE_CONFIG);
                if (rows[i].exact ? strcmp(e.msg, rows[i].msg) != 0
                                  : strncmp(e.msg, rows[i].msg, strlen(rows[i].msg)) != 0)
                        fail_msg("row %zu: got '%s', want '%s'", i, e.msg, rows[i].msg);
                if (rows[i].needle && !strstr(e.msg, rows[i].needle))
                        fail_msg("row %zu: '%s' lacks '%s'", i, e.msg, rows[i].needle);
                /* a failed parse leaves nothing to free, and freeing is safe */
                assert_null(spec.cases);
                judge_spec_free(&spec);
        }
}

/* ---- matchers ----------------------------------------------------------- */

static void test_matcher_table(void **state)
{
        static const struct {
                const char *kind, *pattern;
                const char *kept;           /* what was kept */
                uint64_t bytes;             /* what was written (> strlen(kept): cut) */
                const char *tail;           /* tail when cut */
                enum judge_verdict want;
        } rows[] = {
                /* equals */
                { "equals", "hello\n", "hello\n", 6, NULL, JUDGE_PASS },                  /* match, uncut */
                { "equals", "hello\n", "hellO\n", 6, NULL, JUDGE_FAIL },                  /* no match, uncut */
                { "equals", "abcdefghijkl", "abcd", 12, "jkl", JUDGE_UNDETERMINED },      /* match, cut */
                { "equals", "abcdefghijkl", "abXd", 12, "jkl", JUDGE_FAIL },              /* no match, cut: prefix differs */
                { "equals", "abcdefghijkl", "abcd", 12, NULL, JUDGE_UNDETERMINED },       /* match, cut, no tail */
                { "equals", "abcdefghijkl", "abcd", 5000, "zzz", JUDGE_FAIL },            /* cut, wrong length */
                { "equals", "abcdefghijkl", "abcd", 12, "XYZ", JUDGE_FAIL },              /* cut, tail differs */
                { "equals", "abcdefgh", "abcd", 8, "efgh", JUDGE_PASS },                  /* cut, kept + tail = all */
                { "equals", "ab", "abcd", 10, "hij", JUDGE_FAIL },                        /* cut, more than expected */
                { "equals", "", "", 0, NULL, JUDGE_PASS },
                /* contains */
                { "contains", "err", "an err here", 11, NULL, JUDGE_PASS },              /* match, uncut */
                { "contains", "err", "all fine", 8, NULL, JUDGE_FAIL },                  /* no match, uncut */
                { "contains", "err", "an err", 100, "zzz", JUDGE_PASS },                 /* match, cut */
                { "contains", "err", "all fine", 100, "zzz", JUDGE_UNDETERMINED },       /* no match, cut */
                { "contains", "Trace", "xxxx", 100, "Traceback", JUDGE_PASS },           /* found in the tail */
                { "contains", "", "", 0, NULL, JUDGE_PASS },
                /* regex: PCRE2 search, not anchored, multiline off */
                { "regex", "\\d{3}", "id x123!", 8, NULL, JUDGE_PASS },                   /* match, uncut */
                { "regex", "\\d{3}", "id x12!", 7, NULL, JUDGE_FAIL },                    /* no match, uncut */
                { "regex", "\\d{3}", "id x123", 100, "zzz", JUDGE_UNDETERMINED },         /* match, cut */
                { "regex", "\\d{3}", "id x", 100, "zzz", JUDGE_UNDETERMINED },            /* no match, cut */
                { "regex", "^b$", "a\nb\n", 4, NULL, JUDGE_FAIL },
                { "regex", "(?m)^b$", "a\nb\n", 4, NULL, JUDGE_PASS },
                { "regex", "\\Ahello\\z", "hello\n", 6, NULL, JUDGE_FAIL },
                { "regex", "^hello$", "hello\n", 6, NULL, JUDGE_PASS },                   /* $ before a final \n */
                { "regex", "ok", "\xff\xfe ok", 5, NULL, JUDGE_PASS },                    /* invalid UTF-8 subject */
                { "regex", "^.$", "\xc3\xa9", 2, NULL, JUDGE_PASS },                      /* UTF mode: é is one char */
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                struct judge_spec spec;
                struct run_stream s = stream(rows[i].kept, strlen(rows[i].kept), rows[i].bytes, rows[i].tail);
                char reason[JUDGE_REASON_MAX];
                enum judge_verdict v;

                matcher_spec(rows[i].kind, rows[i].pattern, strlen(rows[i].pattern), &spec);
                v = judge_match_stream(&spec.cases[0].expect.out, "stdout", view(&s), reason, sizeof reason);
                if (v != rows[i].want)
                        fail_msg("row %zu (%s %s): got %s, want %s: %s", i, rows[i].kind, rows[i].pattern,
                                 judge_verdict_name(v), judge_verdict_name(rows[i].want), reason);
                assert_true(strlen(reason) > 0);
                assert_true(strncmp(reason, "stdout", 6) == 0);
                judge_spec_free(&spec);
        }
}

static void test_matcher_raw_bytes(void **state)
{
        /* Matching uses the raw bytes: a NUL in the output is compared, not
         * an end of string; invalid UTF-8 is compared as is. */
        struct judge_spec spec;
        struct run_stream s = stream("a\0b", 3, 3, NULL);
        char reason[JUDGE_REASON_MAX];

        (void) state;
        matcher_spec("equals", "a\0b", 3, &spec);
        assert_int_equal(judge_match_stream(&spec.cases[0].expect.out, "stdout", view(&s), reason, sizeof reason),
                         JUDGE_PASS);
        s.text = "a\0c";
        assert_int_equal(judge_match_stream(&spec.cases[0].expect.out, "stdout", view(&s), reason, sizeof reason),
                         JUDGE_FAIL);
        /* the reason is a C string for JSON: NUL shown as U+FFFD */
        assert_string_equal(reason, "stdout differs at line 1: expected 'a\xef\xbf\xbd" "b', got 'a\xef\xbf\xbd" "c'");
        judge_spec_free(&spec);
}

static void check_equals_reason(const char *exp, const char *got, const char *want)
{
        struct judge_spec spec;
        struct run_stream s = stream(got, strlen(got), strlen(got), NULL);
        char reason[JUDGE_REASON_MAX];

        matcher_spec("equals", exp, strlen(exp), &spec);
        assert_int_equal(judge_match_stream(&spec.cases[0].expect.out, "stdout", view(&s), reason, sizeof reason),
                         JUDGE_FAIL);
        if (strcmp(reason, want) != 0)
                fail_msg("got  \"%s\"\nwant \"%s\"", reason, want);
        judge_spec_free(&spec);
}

static void test_equals_reason(void **state)
{
        char exp[300], got[300];

        (void) state;
        check_equals_reason("1\n2\n5\n", "1\n2\n6\n", "stdout differs at line 3: expected '5', got '6'");
        check_equals_reason("1\n2\n3\n", "1\n2\n",
                            "stdout differs at line 3: expected '3', got end of output (expected 3 lines, got 2)");
        check_equals_reason("a\n", "a\nb\n",
                            "stdout differs at line 2: expected end of output, got 'b' (expected 1 line, got 2)");
        check_equals_reason("5\n", "5", "stdout differs at line 1: expected '5\n', got '5'");
        check_equals_reason("it's\n", "it\tis\n", "stdout differs at line 1: expected 'it's', got 'it\tis'");
        check_equals_reason("caf\xc3\xa9\n", "cafe\n", "stdout differs at line 1: expected 'caf\xc3\xa9', got 'cafe'");

        /* A long line is shown around the difference and clipped. */
        memset(exp, 'x', 200);
        memcpy(got, exp, 200);
        exp[150] = 'A';
        got[150] = 'B';
        exp[200] = got[200] = '\0';
        {
                struct judge_spec spec;
                struct run_stream s = stream(got, 200, 200, NULL);
                char reason[JUDGE_REASON_MAX];

                matcher_spec("equals", exp, 200, &spec);
                assert_int_equal(judge_match_stream(&spec.cases[0].expect.out, "stdout", view(&s), reason, sizeof reason),
                                 JUDGE_FAIL);
                assert_non_null(strstr(reason, "stdout differs at line 1: expected '..."));
                assert_non_null(strstr(reason, "xA"));
                assert_non_null(strstr(reason, "xB"));
                assert_true(strlen(reason) < 220);
                judge_spec_free(&spec);
        }
}

/* ---- case verdicts ------------------------------------------------------ */

static void test_case_verdicts(void **state)
{
        static const char json[] =
                "{\"program\": {\"source\": \"x\"}, \"cases\": ["
                " {\"name\": \"plain\"},"
                " {\"name\": \"out\", \"expect\": {\"stdout\": {\"equals\": \"5\\n\"}}},"
                " {\"name\": \"code2\", \"expect\": {\"exit_code\": 2, \"stderr\": {\"contains\": \"usage\"}}},"
                " {\"name\": \"both\", \"expect\": {\"stdout\": {\"equals\": \"5\\n\"}, \"stderr\": {\"regex\": \"x\"}}}"
                "]}";
        struct judge_spec spec;
        struct judge_case_report c;
        struct run_result *r;

        (void) state;
        parse_ok(json, "s.json", &spec);

        /* sandbox error: never a failure */
        r = exited(0, "", "");
        r->status = RUN_ERROR;
        nsb_fail(&r->error, NSB_STAGE_MOUNT, 0, "pivot_root failed");
        assert_int_equal(verdict_of(&spec.cases[0].expect, r, &c), 0);
        assert_int_equal(c.verdict, JUDGE_UNDETERMINED);
        assert_string_equal(c.reason, "sandbox error at stage mount: pivot_root failed");
        free(r);

        /* cancelled */
        r = exited(0, "", "");
        r->status = RUN_CANCELLED;
        verdict_of(&spec.cases[0].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_UNDETERMINED);
        free(r);

        /* a limit is evidence */
        r = exited(0, "", "");
        r->status = RUN_LIMIT;
        r->limit = LIMIT_WALL_TIME;
        verdict_of(&spec.cases[1].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_FAIL);
        /* no value recorded (an old observation): the flag alone */
        assert_string_equal(c.reason, "stopped by the wall_time limit (raise it with --wall-time DUR)");
        /* the value the case had, and the flag, as the CLI says it */
        snprintf(r->limit_value, sizeof r->limit_value, "300ms");
        verdict_of(&spec.cases[1].expect, r, &c);
        assert_string_equal(c.reason, "stopped by the wall_time limit (300ms; raise it with --wall-time DUR)");
        r->limit = LIMIT_MEMORY;
        snprintf(r->limit_value, sizeof r->limit_value, "256M");
        verdict_of(&spec.cases[1].expect, r, &c);
        assert_string_equal(c.reason, "stopped by the memory limit (256M; raise it with --memory SIZE)");
        /* a batch or serve judge job: the spec's limits win over the flags,
         * so the flag would not raise it (review of the #32 follow-up) */
        memset(&c, 0, sizeof c);
        c.raise_in_spec = true;
        r->limit = LIMIT_OUTPUT;
        snprintf(r->limit_value, sizeof r->limit_value, "1M");
        judge_case_settle(&spec.cases[1].expect, result_to_json(r, 1u << 20), &c);
        assert_string_equal(c.reason, "stopped by the output limit (1M per stream, 4x in all; raise it with the "
                                      "spec's limits.output_limit)");
        json_decref(c.result_json);
        free(r);

        /* so is a crash, with the exception line from stderr */
        r = exited(0, "", "Traceback...\n  boom\nMemoryError\n");
        r->status = RUN_SIGNALED;
        r->signal = 11;
        verdict_of(&spec.cases[0].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_FAIL);
        assert_string_equal(c.reason, "killed by SIGSEGV (stderr: 'MemoryError')");
        free(r);

        /* nonzero exit without an explicit exit_code: 0 was expected */
        r = exited(1, "", "Traceback (most recent call last):\nZeroDivisionError: division by zero\n");
        verdict_of(&spec.cases[0].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_FAIL);
        assert_string_equal(c.reason, "exit code 1, expected 0 (stderr: 'ZeroDivisionError: division by zero')");
        free(r);

        r = exited(0, "", "");
        verdict_of(&spec.cases[0].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_PASS);
        assert_string_equal(c.reason, "exit code 0");
        free(r);

        r = exited(0, "5\n", "");
        verdict_of(&spec.cases[1].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_PASS);
        assert_string_equal(c.reason, "exit code 0, stdout equals expected");
        free(r);

        /* exit code and output both wrong: both named */
        r = exited(3, "6\n", "");
        verdict_of(&spec.cases[1].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_FAIL);
        assert_string_equal(c.reason, "exit code 3, expected 0; stdout differs at line 1: expected '5', got '6'");
        free(r);

        /* an expected nonzero exit */
        r = exited(2, "", "usage: prog N\n");
        verdict_of(&spec.cases[2].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_PASS);
        assert_string_equal(c.reason, "exit code 2, stderr contains 'usage'");
        free(r);
        r = exited(0, "", "usage: prog N\n");
        verdict_of(&spec.cases[2].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_FAIL);
        assert_string_equal(c.reason, "exit code 0, expected 2");
        free(r);

        /* cut stdout that cannot settle equals, stderr fine: undetermined */
        r = exited(0, "", "x");
        r->out = stream("5", 1, 2, "\n");   /* kept 1 of 2 bytes, no tail cover of the middle... */
        r->out.tail_len = 0;
        verdict_of(&spec.cases[3].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_UNDETERMINED);
        assert_non_null(strstr(c.reason, "stdout was cut at 1 of 2 bytes"));
        /* ...but a failing stderr is evidence, whatever stdout says */
        r->err = stream("y", 1, 1, NULL);
        verdict_of(&spec.cases[3].expect, r, &c);
        assert_int_equal(c.verdict, JUDGE_FAIL);
        assert_string_equal(c.reason, "stderr does not match /x/");
        free(r);

        judge_spec_free(&spec);
}

/* ---- suite verdict ------------------------------------------------------ */

static void test_suite_verdict(void **state)
{
        static const struct { enum judge_verdict v[3]; size_t n; enum judge_verdict want; } rows[] = {
                { { JUDGE_PASS, JUDGE_PASS, JUDGE_PASS }, 3, JUDGE_PASS },
                { { JUDGE_PASS, JUDGE_FAIL, JUDGE_PASS }, 3, JUDGE_FAIL },
                { { JUDGE_PASS, JUDGE_UNDETERMINED, JUDGE_PASS }, 3, JUDGE_UNDETERMINED },
                { { JUDGE_UNDETERMINED, JUDGE_FAIL, JUDGE_PASS }, 3, JUDGE_FAIL },
                { { JUDGE_PASS, JUDGE_FAIL, JUDGE_NOT_RUN }, 3, JUDGE_FAIL },             /* fail-fast */
                { { JUDGE_PASS, JUDGE_UNDETERMINED, JUDGE_NOT_RUN }, 3, JUDGE_UNDETERMINED }, /* cancelled */
                { { JUDGE_PASS, JUDGE_NOT_RUN, JUDGE_NOT_RUN }, 3, JUDGE_UNDETERMINED },
                { { JUDGE_PASS }, 1, JUDGE_PASS },
                { { JUDGE_PASS }, 0, JUDGE_UNDETERMINED },   /* nothing ran proves nothing */
        };
        struct judge_case_report *c = calloc(3, sizeof *c);

        (void) state;
        assert_non_null(c);
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                for (size_t k = 0; k < rows[i].n; k++)
                        c[k].verdict = rows[i].v[k];
                if (judge_suite_verdict(c, rows[i].n) != rows[i].want)
                        fail_msg("row %zu", i);
        }
        assert_int_equal(judge_exit_code(JUDGE_PASS), 0);
        assert_int_equal(judge_exit_code(JUDGE_FAIL), 1);
        assert_int_equal(judge_exit_code(JUDGE_UNDETERMINED), 3);
        assert_int_equal(JUDGE_EXIT_BAD_SPEC, 125);

        /* fail-fast: stop after a failure; without it, go on */
        memset(c, 0, 3 * sizeof *c);
        c[0].ran = true;
        c[0].verdict = JUDGE_FAIL;
        assert_true(judge_should_stop(&c[0], true));
        assert_false(judge_should_stop(&c[0], false));
        c[0].verdict = JUDGE_UNDETERMINED;
        assert_false(judge_should_stop(&c[0], true));
        /* a cancel always stops */
        c[0].status = RUN_CANCELLED;
        assert_true(judge_should_stop(&c[0], false));

        c[0].verdict = JUDGE_FAIL;
        judge_mark_not_run(c, 1, 3, "not run: --fail-fast");
        assert_int_equal(c[1].verdict, JUDGE_NOT_RUN);
        assert_int_equal(c[2].verdict, JUDGE_NOT_RUN);
        assert_false(c[2].ran);
        assert_string_equal(c[2].reason, "not run: --fail-fast");
        assert_int_equal(judge_suite_verdict(c, 3), JUDGE_FAIL);
        free(c);
}

/* ---- configuration and request ----------------------------------------- */

static void test_config_merge(void **state)
{
        static const char json[] =
                "{\"program\": {\"source\": \"x\"}, \"profile\": \"minimal\","
                " \"limits\": {\"wall_time\": \"2s\", \"memory\": \"128M\"}, \"cases\": [{\"name\": \"a\"}]}";
        struct nsb_config cli, cfg;
        struct judge_spec spec;

        (void) state;
        parse_ok(json, "s.json", &spec);
        cfg_defaults(&cli, NSB_CMD_JUDGE);
        assert_int_equal(judge_cli_explicit(&cli), 0);
        cli.memory_bytes = 1ULL << 30;                   /* --memory 1G */
        cli.set |= CFG_F_MEMORY;
        assert_int_equal(judge_cli_explicit(&cli), CFG_F_MEMORY);
        cli.wall_time_ms = 10000;                        /* --wall-time 10s: the default, */
        cli.set |= CFG_F_WALL_TIME;                      /* but explicit: it wins over the spec */
        judge_config_merge(&cli, judge_cli_explicit(&cli), &spec, &cfg);
        assert_int_equal(cfg.wall_time_ms, 10000);
        cli.set &= ~(uint32_t) CFG_F_WALL_TIME;
        judge_config_merge(&cli, judge_cli_explicit(&cli), &spec, &cfg);
        assert_int_equal(cfg.wall_time_ms, 2000);          /* spec over default */
        assert_int_equal(cfg.memory_bytes, 1ULL << 30);    /* flag over spec */
        assert_int_equal(cfg_cpu_time_ms(&cfg), 2000);     /* follows the wall time */
        assert_int_equal(cfg.pids_max, 64);                /* default */
        assert_string_equal(cfg.profile, "minimal");
        cli.profile = "python";                            /* --profile wins too */
        judge_config_merge(&cli, 0, &spec, &cfg);
        assert_string_equal(cfg.profile, "python");
        judge_spec_free(&spec);
}

static void test_request_has_no_expectation(void **state)
{
        static const char json[] =
                "{\"program\": {\"path\": \"sol.py\"}, \"cases\": [{\"name\": \"a\", \"args\": [\"2\", \"3\"],"
                " \"stdin\": \"in\\n\", \"expect\": {\"stdout\": {\"equals\": \"SECRET-EXPECTED\"},"
                " \"stderr\": {\"contains\": \"SECRET-ERR\"}}}, {\"name\": \"b\"}]}";
        static const char program[] = "print(int(input()))\n";
        struct judge_spec spec;
        struct nsb_config cfg;
        struct prog p;
        struct nsb_error e;

        (void) state;
        parse_ok(json, "d/s.json", &spec);
        cfg_defaults(&cfg, NSB_CMD_JUDGE);
        assert_int_equal(judge_request_build(&cfg, &spec.program, program, strlen(program),
                                             &spec.cases[0].stimulus, 7, &p, &e), 0);
        assert_int_equal(p.req.argc, 6);
        assert_string_equal(p.req.argv[0], "python3");
        assert_string_equal(p.req.argv[1], "-I");
        assert_string_equal(p.req.argv[2], "-B");
        assert_string_equal(p.req.argv[3], "/program/sol.py");
        assert_string_equal(p.req.argv[4], "2");
        assert_string_equal(p.req.argv[5], "3");
        assert_null(p.req.argv[6]);
        assert_true(p.req.python);
        assert_false(p.req.relay);
        assert_int_equal(p.req.cancel_fd, 7);
        assert_ptr_equal(p.req.cfg, &cfg);
        assert_string_equal(p.req.program_name, "sol.py");
        assert_int_equal(p.req.program_len, strlen(program));
        assert_int_equal(p.req.stdin_len, 3);
        assert_memory_equal(p.req.stdin_data, "in\n", 3);
        /* Nothing the sandbox receives holds an expected value. */
        for (size_t i = 0; i < p.req.argc; i++) {
                assert_null(strstr(p.req.argv[i], "SECRET"));
        }
        assert_null(nsb_memmem(p.req.stdin_data, p.req.stdin_len, "SECRET", 6));
        assert_null(nsb_memmem(p.req.program_data, p.req.program_len, "SECRET", 6));
        prog_free(&p);

        /* no stdin given: an empty one, never the caller's */
        assert_int_equal(judge_request_build(&cfg, &spec.program, program, strlen(program),
                                             &spec.cases[1].stimulus, -1, &p, &e), 0);
        assert_int_equal(p.req.argc, 4);
        assert_non_null(p.req.stdin_data);
        assert_int_equal(p.req.stdin_len, 0);
        prog_free(&p);
        judge_spec_free(&spec);
}

/* ---- rendering ---------------------------------------------------------- */

static json_t *stub_result(const struct run_result *r, uint64_t output_limit)
{
        return json_pack("{s:s, s:I}", "stub", run_status_name(r->status), "limit", (json_int_t) output_limit);
}

static void test_render(void **state)
{
        struct judge_report rep;
        struct judge_case_report *c = calloc(3, sizeof *c);
        json_t *root, *cases;
        char *text;

        (void) state;
        assert_non_null(c);
        memset(&rep, 0, sizeof rep);
        c[0] = (struct judge_case_report) { .name = "adds", .verdict = JUDGE_PASS, .ran = true };
        strcpy(c[0].reason, "exit code 0, stdout equals expected");
        c[1] = (struct judge_case_report) { .name = "subs", .verdict = JUDGE_FAIL, .ran = true };
        strcpy(c[1].reason, "stdout differs at line 1: expected '1', got '5'");
        c[1].result.status = RUN_EXITED;
        c[2] = (struct judge_case_report) { .name = "line\nbreak" };
        judge_mark_not_run(c, 2, 3, "not run: --fail-fast stopped after cases[1] failed");
        rep.cases = c;
        rep.n_cases = 3;
        rep.output_limit = 1024;
        rep.verdict = judge_suite_verdict(c, 3);
        memset(rep.program_sha256, 'a', 64);

        root = judge_report_to_json(&rep, stub_result);
        assert_non_null(root);
        assert_string_equal(json_string_value(json_object_get(root, "schema")), "nsbox.verdict/1");
        assert_string_equal(json_string_value(json_object_get(root, "verdict")), "fail");
        assert_int_equal(json_string_length(json_object_get(root, "program_sha256")), 64);
        cases = json_object_get(root, "cases");
        assert_int_equal(json_array_size(cases), 3);
        assert_string_equal(json_string_value(json_object_get(json_array_get(cases, 0), "name")), "adds");
        assert_string_equal(json_string_value(json_object_get(json_array_get(cases, 1), "reason")),
                            "stdout differs at line 1: expected '1', got '5'");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_array_get(cases, 1), "result"),
                                                            "limit")), 1024);
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(cases, 1), "result"),
                                                              "stub")), "exited");
        assert_string_equal(json_string_value(json_object_get(json_array_get(cases, 2), "verdict")), "not_run");
        assert_true(json_is_null(json_object_get(json_array_get(cases, 2), "result")));
        json_decref(root);

        text = judge_summary_text(&rep);
        assert_non_null(text);
        assert_non_null(strstr(text, "\u2713 adds \u2014 exit code 0, stdout equals expected\n"));
        assert_non_null(strstr(text, "\u2717 subs \u2014 stdout differs at line 1"));
        assert_non_null(strstr(text, "- line\\nbreak \u2014 not run"));
        assert_non_null(strstr(text, "verdict: fail (1 passed, 1 failed, 0 undetermined, 1 not run), score 0.3333\n"));
        free(text);
        free(c);
}

/* #32: the reason a --junit file shows without --junit-expected quotes
 * nothing of the spec (exit code, equals/contains text, regex), only what
 * the program did. */
static void test_public_reason(void **state)
{
        static const char json[] =
                "{\"program\": {\"source\": \"x\"}, \"cases\": ["
                " {\"name\": \"eq\", \"expect\": {\"exit_code\": 4, \"stdout\": {\"equals\": \"SECRET\\nb\\n\"}}},"
                " {\"name\": \"co\", \"expect\": {\"stdout\": {\"contains\": \"SECRET\"}}},"
                " {\"name\": \"re\", \"expect\": {\"stderr\": {\"regex\": \"SECRET\\\\d\"}}}]}";
        static const char *const want[] = {
                "exit code 3, not the expected one (stderr: 'err'); stdout differs at line 1: got 'wrong' (got 1 line, not the expected count)",
                "stdout does not contain the expected text",
                "stderr does not match the expected pattern",
        };
        struct judge_spec spec;

        (void) state;
        parse_ok(json, "s.json", &spec);
        for (size_t i = 0; i < 3; i++) {
                struct run_result *r = exited(i == 0 ? 3 : 0, "wrong\n", "err\n");
                json_t *o = result_to_json(r, 1u << 20);
                struct judge_evidence ev;
                struct judge_case_report c;
                struct nsb_error e;
                char buf[JUDGE_REASON_MAX];

                assert_int_equal(judge_evidence_parse(o, &ev, &e), 0);
                judge_case_public_reason(&spec.cases[i].expect, &ev, buf, sizeof buf);
                assert_string_equal(buf, want[i]);
                assert_null(strstr(buf, "SECRET"));
                /* the verdict's own reason still quotes it */
                memset(&c, 0, sizeof c);
                judge_case_verdict(&spec.cases[i].expect, &ev, &c);
                assert_non_null(strstr(c.reason, "SECRET"));
                judge_evidence_free(&ev);
                json_decref(o);
                free(r);
        }
        judge_spec_free(&spec);
}

/* #32: the score is the passed cases' weight over all; an undetermined case,
 * or one cancelled before it ran, leaves the score null (nsbox could not
 * look: it must not lower a score); a case --fail-fast skipped is not passed. */
static void test_tally_score(void **state)
{
        struct judge_case_report c[3] = {
                { .name = "a", .weight = 1, .verdict = JUDGE_PASS },
                { .name = "b", .weight = 3, .verdict = JUDGE_FAIL },
                { .name = "c", .weight = 0, .verdict = JUDGE_PASS },  /* 0: not set, counts 1 */
        };
        struct judge_report rep = { .verdict = JUDGE_FAIL, .cases = c, .n_cases = 3 };
        struct judge_tally t;
        json_t *root;

        (void) state;
        judge_tally(&rep, &t);
        assert_true(t.scored);
        assert_true(t.score > 0.3999 && t.score < 0.4001);
        assert_int_equal(t.count[JUDGE_PASS], 2);
        assert_int_equal(t.count[JUDGE_FAIL], 1);
        c[2].verdict = JUDGE_NOT_RUN;    /* --fail-fast after b: not passed */
        judge_tally(&rep, &t);
        assert_true(t.scored && t.score > 0.1999 && t.score < 0.2001);
        c[1].verdict = JUDGE_UNDETERMINED;
        rep.verdict = JUDGE_UNDETERMINED;
        judge_tally(&rep, &t);
        assert_false(t.scored);
        assert_int_equal(t.count[JUDGE_UNDETERMINED], 1);
        assert_int_equal(t.count[JUDGE_NOT_RUN], 1);
        root = judge_report_to_json(&rep, stub_result);
        assert_non_null(root);
        assert_true(json_is_null(json_object_get(root, "score")));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(root, "counts"), "not_run")), 1);
        json_decref(root);
        c[1].verdict = JUDGE_PASS;       /* cancelled before c ran: no score */
        rep.verdict = JUDGE_UNDETERMINED;
        judge_tally(&rep, &t);
        assert_false(t.scored);
}

/* A cancel that lands between two cases, after one failed: the cases after
 * it did not run because of the cancel, not --fail-fast; nsbox did not look
 * at them, so there is no score (docs/judge.md) -- it was computed, with
 * them as not passed. Their status says cancelled (what a replay reads back
 * from their "not run: cancelled"). */
static void test_tally_cancel_after_a_failure(void **state)
{
        struct judge_case_report c[3] = {
                { .name = "a", .weight = 1, .verdict = JUDGE_FAIL, .ran = true },
                { .name = "b", .weight = 1 },
                { .name = "c", .weight = 1 },
        };
        struct judge_report rep = { .cases = c, .n_cases = 3 };
        struct judge_tally t;

        (void) state;
        judge_mark_not_run(c, 1, 3, "not run: cancelled");
        c[1].status = c[2].status = RUN_CANCELLED;
        rep.verdict = judge_suite_verdict(c, 3);
        assert_int_equal(rep.verdict, JUDGE_FAIL);
        judge_tally(&rep, &t);
        assert_false(t.scored);
        assert_int_equal(t.count[JUDGE_NOT_RUN], 2);
        /* --fail-fast's skips still count as not passed */
        c[1].status = c[2].status = RUN_EXITED;
        judge_tally(&rep, &t);
        assert_true(t.scored);
}

/* The text summary's score never reads as full marks when a case failed,
 * nor as nothing when one passed (it printed "score 1" for a 1e9-weight
 * pass and a failed case, "score 1e-09" the other way round): four decimals,
 * kept off 0 and 1 unless it is exactly that. */
static void test_score_text(void **state)
{
        struct judge_case_report c[2] = {
                { .name = "big", .weight = 1e9, .verdict = JUDGE_PASS, .reason = "ok" },
                { .name = "tiny", .weight = 1, .verdict = JUDGE_FAIL, .reason = "no" },
        };
        struct judge_report rep = { .verdict = JUDGE_FAIL, .cases = c, .n_cases = 2 };
        char *text;

        (void) state;
        text = judge_summary_text(&rep);
        assert_non_null(strstr(text, "), score 0.9999\n"));
        free(text);
        c[0].verdict = JUDGE_FAIL;
        c[1].verdict = JUDGE_PASS;
        text = judge_summary_text(&rep);
        assert_non_null(strstr(text, "), score 0.0001\n"));
        free(text);
        c[0].weight = 3;        /* 1 of 4 */
        text = judge_summary_text(&rep);
        assert_non_null(strstr(text, "), score 0.25\n"));
        free(text);
        c[0].verdict = JUDGE_PASS;
        rep.verdict = JUDGE_PASS;
        text = judge_summary_text(&rep);
        assert_non_null(strstr(text, "), score 1\n"));
        free(text);
}

/* #27: the text summary shows a case's name and reason on one line with the
 * unsafe characters of util/textsafe.h visible (C1 and bidi controls too), a
 * plain quote as it is, wrapped before TEXTSAFE_ROW_COLS columns (a non-ASCII
 * character counted 2) with nsbox's continuation mark; the JSON keeps them
 * exact. */
static void test_summary_unsafe(void **state)
{
        struct judge_report rep;
        struct judge_case_report *c = calloc(1, sizeof *c);
        json_t *root;
        char *text;

        (void) state;
        assert_non_null(c);
        memset(&rep, 0, sizeof rep);
        c[0] = (struct judge_case_report) { .name = "n\x1b[2K\xe2\x80\xae", .verdict = JUDGE_FAIL, .ran = true };
        strcpy(c[0].reason, "expected 'it's', got '\r\xe2\x9c\x93 ok\xc2\x9b" "2K\xc2\x85\xe2\x81\xa6\n\xe2\x9c\x93 5 passed'");
        c[0].result.status = RUN_EXITED;
        rep.cases = c;
        rep.n_cases = 1;
        rep.verdict = JUDGE_FAIL;
        memset(rep.program_sha256, 'a', 64);
        text = judge_summary_text(&rep);
        assert_non_null(text);
        assert_string_equal(text, "\u2717 n\\x1b[2K\\u202e \u2014 expected 'it's', got '\\r\u2713 ok\\u009b2K\\u0085\\u2066"
                                  "\\n\u2713 5\n  \u21aa  passed'\nverdict: fail (0 passed, 1 failed, 0 undetermined), score 0\n");
        free(text);
        root = judge_report_to_json(&rep, stub_result);
        assert_non_null(root);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(root, "cases"), 0), "reason")),
                            c[0].reason);
        json_decref(root);
        free(c);
}

/* Excerpts are exact (the JSON verdict carries them as they are), valid
 * UTF-8 and clipped; the text summary escapes them (util/textsafe.h). */
static void test_excerpt(void **state)
{
        char buf[64];

        (void) state;
        buf[0] = '\0';
        judge_excerpt_append(buf, sizeof buf, "a\xff\xc3\xa9\x01\\'", 7, 80);
        assert_string_equal(buf, "a\xef\xbf\xbd\xc3\xa9\x01\\'");
        buf[0] = '\0';
        judge_excerpt_append(buf, sizeof buf, "0123456789", 10, 5);
        assert_string_equal(buf, "01234...");
        /* never overflows, always terminated */
        buf[0] = '\0';
        judge_excerpt_append(buf, 8, "0123456789", 10, 80);
        assert_true(strlen(buf) < 8);
}


/* ---- verdicts from the recorded result (issue #19) ----------------------- */

/* Case 0 of a one-case spec with stdout matcher {kind: text}. */
static enum judge_verdict judged(const char *kind, const char *text, size_t len, const struct run_result *r,
                                 uint64_t output_limit, json_t **ret_result, char *reason)
{
        struct judge_spec spec;
        struct judge_case_report c;

        memset(&c, 0, sizeof c);
        matcher_spec(kind, text, len, &spec);
        judge_case_settle(&spec.cases[0].expect, result_to_json(r, output_limit), &c);
        judge_spec_free(&spec);
        if (reason)
                strcpy(reason, c.reason);
        *ret_result = c.result_json;
        return c.verdict;
}

/* The same case judged again from the printed object alone: dumped, read
 * back, judged; the verdict and reason must be the same. */
static void assert_rejudged(const char *kind, const char *text, size_t len, json_t *result,
                            enum judge_verdict want, const char *want_reason)
{
        struct judge_spec spec;
        struct judge_case_report c;
        char *dumped = json_dumps(result, JSON_COMPACT);
        json_t *back = json_loads(dumped, JSON_ALLOW_NUL, NULL);

        assert_non_null(back);
        memset(&c, 0, sizeof c);
        matcher_spec(kind, text, len, &spec);
        judge_case_settle(&spec.cases[0].expect, back, &c);
        assert_int_equal(c.verdict, want);
        assert_string_equal(c.reason, want_reason);
        json_decref(c.result_json);
        judge_spec_free(&spec);
        free(dumped);
}

static void test_cut_stream_judged_from_the_recorded_tail(void **state)
{
        /* The case: --output-limit 1K, the program prints 3,001
         * bytes. nsbox held a 4 KiB tail in memory (here: all 3,001 bytes),
         * the result records 1,024 + 1,024. Judged from what is recorded:
         * undetermined, not "pass from the kept part and the tail". */
        static char all[3001], exp_changed[3001];
        struct run_result r;
        json_t *res;
        char reason[JUDGE_REASON_MAX];
        enum judge_verdict v;
        uint32_t x = 12345;

        (void) state;

        for (size_t i = 0; i < sizeof all; i++) {   /* letters that do not repeat a 40-byte window */
                x = x * 1103515245u + 12345u;
                all[i] = (char) ('a' + (x >> 16) % 26);
        }
        memset(&r, 0, sizeof r);
        r.status = RUN_EXITED;
        r.out.text = all;
        r.out.kept = 1024;
        r.out.bytes = sizeof all;
        r.out.truncated = true;
        memcpy(r.out.tail, all, sizeof all);
        r.out.tail_len = sizeof all;

        v = judged("equals", all, sizeof all, &r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_UNDETERMINED);
        assert_int_equal(json_string_length(json_object_get(json_object_get(res, "stdout"), "tail")), 1024);
        assert_rejudged("equals", all, sizeof all, res, v, reason);
        json_decref(res);

        /* A difference in bytes 1024..1976 is in memory only: not evidence. */
        memcpy(exp_changed, all, sizeof all);
        exp_changed[1500] = '#';
        v = judged("equals", exp_changed, sizeof all, &r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_UNDETERMINED);
        json_decref(res);
        /* ...one in the recorded tail is. */
        exp_changed[1500] = all[1500];
        exp_changed[2900] = '#';
        v = judged("equals", exp_changed, sizeof all, &r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_FAIL);
        assert_non_null(strstr(reason, "differs in its last 1024 bytes"));
        assert_rejudged("equals", exp_changed, sizeof all, res, v, reason);
        json_decref(res);

        /* contains: only recorded bytes can prove it */
        v = judged("contains", all + 1500, 40, &r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_UNDETERMINED);
        assert_rejudged("contains", all + 1500, 40, res, v, reason);
        json_decref(res);
        v = judged("contains", all + 2500, 40, &r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_PASS);
        assert_rejudged("contains", all + 2500, 40, res, v, reason);
        json_decref(res);

        /* A limit that records the whole tail: kept + tail cover the stream. */
        v = judged("equals", all, sizeof all, &r, 4096, &res, reason);
        assert_int_equal(v, JUDGE_PASS);
        assert_string_equal(reason, "exit code 0, stdout equals expected (from the kept part and the tail)");
        assert_int_equal(json_string_length(json_object_get(json_object_get(res, "stdout"), "tail")), 3001);
        assert_rejudged("equals", all, sizeof all, res, v, reason);
        json_decref(res);
}

static void test_raw_bytes_are_recorded(void **state)
{
        /* Invalid UTF-8 is shown as U+FFFD in `text`; the matcher compares
         * the raw bytes, which `text_base64` records. */
        struct run_result *r = exited(0, "\xff" "5\n", "");
        char reason[JUDGE_REASON_MAX];
        json_t *res, *out;
        enum judge_verdict v;

        (void) state;
        v = judged("equals", "\xef\xbf\xbd" "5\n", 5, r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_FAIL);   /* U+FFFD is not the byte 0xff */
        out = json_object_get(res, "stdout");
        assert_string_equal(json_string_value(json_object_get(out, "text")), "\xef\xbf\xbd" "5\n");
        assert_string_equal(json_string_value(json_object_get(out, "text_base64")), "/zUK");
        assert_rejudged("equals", "\xef\xbf\xbd" "5\n", 5, res, v, reason);
        json_decref(res);
        v = judged("regex", "^.5$", 4, r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_FAIL);   /* an invalid byte never matches '.' */
        assert_rejudged("regex", "^.5$", 4, res, v, reason);
        json_decref(res);
        v = judged("contains", "5\n", 2, r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_PASS);
        json_decref(res);
        free(r);
        /* valid UTF-8 (a NUL included): no base64 copy */
        r = exited(0, "", "");
        r->out = stream("a\0\xc3\xa9", 4, 4, NULL);
        v = judged("equals", "a\0\xc3\xa9", 4, r, 1024, &res, reason);
        assert_int_equal(v, JUDGE_PASS);
        assert_null(json_object_get(json_object_get(res, "stdout"), "text_base64"));
        json_decref(res);
        free(r);
}

static void test_evidence_parse_is_strict(void **state)
{
        static const struct { const char *json; const char *want; } rows[] = {
                { "{}", "status: missing" },
                { "{\"status\": \"fine\"}", "status: unknown status \"fine\"" },
                { "{\"status\": \"exited\", \"exit_code\": 300}", "exit_code: 300 is not an exit code" },
                { "{\"status\": \"signaled\"}", "signal: missing" },
                { "{\"status\": \"error\", \"error\": {\"stage\": \"mount\"}}", "error.message: missing" },
                { "{\"status\": \"exited\", \"exit_code\": 0, \"stdout\": {\"text\": \"ab\", \"bytes\": 1,"
                  " \"truncated\": false}}", "stdout: bytes is 1, fewer than the 2 bytes of its text" },
                { "{\"status\": \"exited\", \"exit_code\": 0, \"stdout\": {\"text\": \"ab\", \"bytes\": 5,"
                  " \"truncated\": false}}", "stdout: truncated is false, but bytes is 5" },
                { "{\"status\": \"exited\", \"exit_code\": 0, \"stdout\": {\"text\": \"ab\", \"bytes\": 2,"
                  " \"truncated\": false, \"tail\": \"b\"}}", "stdout: tail is only recorded for a truncated stream" },
                { "{\"status\": \"exited\", \"exit_code\": 0, \"stdout\": {\"text\": \"ab\", \"bytes\": 5,"
                  " \"truncated\": true}}", "stdout.tail: missing" },
                { "{\"status\": \"exited\", \"exit_code\": 0, \"stdout\": {\"text\": \"\\ufffd\", \"bytes\": 1,"
                  " \"truncated\": false, \"text_base64\": \"/w\"}}", "stdout.text_base64: not base64" },
                { "{\"status\": \"exited\", \"exit_code\": 0, \"stdout\": {\"text\": \"x\", \"bytes\": 1,"
                  " \"truncated\": false, \"text_base64\": \"/w==\"}}", "stdout.text_base64: does not hold the bytes of stdout.text" },
                { "{\"status\": \"exited\", \"exit_code\": 0, \"stdout\": {\"text\": \"\", \"bytes\": 0,"
                  " \"truncated\": false}}", "stderr: missing" },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                json_t *j = json_loads(rows[i].json, 0, NULL);
                struct judge_evidence ev;
                struct nsb_error e;

                assert_non_null(j);
                nsb_error_clear(&e);
                if (judge_evidence_parse(j, &ev, &e) != -EINVAL || !strstr(e.msg, rows[i].want))
                        fail_msg("row %zu: want \"%s\", got \"%s\"", i, rows[i].want, e.msg);
                json_decref(j);
        }
}

/* ---- observations ---------------------------------------------------------- */

static json_t *sealed_line(const struct judge_spec *spec, const struct nsb_config *cfg, size_t idx,
                           const char *run_id, const struct run_result *r, char id[65])
{
        struct prog p;
        struct nsb_error e;
        struct judge_obs_stdin in = { spec->cases[idx].stimulus.stdin_data ? spec->cases[idx].stimulus.stdin_data : "",
                                      spec->cases[idx].stimulus.stdin_len, true };
        json_t *body, *line;

        assert_int_equal(judge_request_build(cfg, &spec->program, "x", 1, &spec->cases[idx].stimulus, -1, &p,
                                             &e), 0);
        body = judge_obs_plan(spec, idx, "1111111111111111111111111111111111111111111111111111111111111111", cfg,
                              p.argv, p.req.argc, &in);
        assert_non_null(body);
        line = judge_obs_seal(body, idx, run_id, "0.1.0", r ? result_to_json(r, 1024) : NULL, "not run: cancelled", id);
        assert_non_null(line);
        json_decref(body);
        prog_free(&p);
        return line;
}

static char *dump_lines(json_t *const *lines, size_t n)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        assert_non_null(f);
        for (size_t i = 0; i < n; i++) {
                char *t = json_dumps(lines[i], JSON_COMPACT);
                fprintf(f, "%s\n", t);
                free(t);
        }
        fclose(f);
        return buf;
}

static void test_observation_round_trip(void **state)
{
        static const char json[] =
                "{\"program\": {\"source\": \"x\"}, \"cases\": [{\"name\": \"a\", \"args\": [\"2\", \"3\"],"
                " \"stdin\": \"in\\u0000\\n\", \"expect\": {\"stdout\": {\"equals\": \"SECRET-EXPECTED\"}}},"
                " {\"name\": \"b\", \"expect\": {\"stderr\": {\"regex\": \"SECRET-RE\"}}}]}";
        struct judge_spec spec;
        struct nsb_config cfg;
        struct run_result *r = exited(0, "5\n", "");
        json_t *lines[2], *parsed = NULL, *planned;
        char id0[65], id1[65], *text, diff[400];
        struct nsb_error e;
        struct prog p;
        struct judge_obs_stdin in = { "in\0\n", 4, true };

        (void) state;
        parse_ok(json, "s.json", &spec);
        cfg_defaults(&cfg, NSB_CMD_JUDGE);
        lines[0] = sealed_line(&spec, &cfg, 0, "r1", r, id0);
        lines[1] = sealed_line(&spec, &cfg, 1, "r1", NULL, id1);
        assert_int_equal(strlen(id0), 64);
        assert_string_not_equal(id0, id1);
        text = dump_lines(lines, 2);
        /* what was run and what happened; never what was expected */
        assert_null(strstr(text, "SECRET"));
        assert_non_null(strstr(text, "\"args\":[\"2\",\"3\"]"));
        assert_non_null(strstr(text, "\"stdin\":{\"sha256\":"));
        assert_non_null(strstr(text, "\"text\":\"in\\u0000\\n\""));
        assert_non_null(strstr(text, "\"not_run\":\"not run: cancelled\""));
        nsb_error_clear(&e);
        assert_int_equal(judge_obs_parse(text, strlen(text), "obs.jsonl", &parsed, &e), 0);
        assert_int_equal(json_array_size(parsed), 2);
        assert_true(json_equal(json_array_get(parsed, 0), lines[0]));

        /* the same plan: no difference; a changed one: the first difference */
        assert_int_equal(judge_request_build(&cfg, &spec.program, "x", 1, &spec.cases[0].stimulus, -1, &p, &e),
                         0);
        planned = judge_obs_plan(&spec, 0, "1111111111111111111111111111111111111111111111111111111111111111", &cfg,
                                 p.argv, p.req.argc, &in);
        assert_false(judge_obs_difference(json_array_get(parsed, 0), planned, diff, sizeof diff));
        json_decref(planned);
        planned = judge_obs_plan(&spec, 0, "2222222222222222222222222222222222222222222222222222222222222222", &cfg,
                                 p.argv, p.req.argc, &in);
        assert_true(judge_obs_difference(json_array_get(parsed, 0), planned, diff, sizeof diff));
        assert_non_null(strstr(diff, "program.sha256 was \"1111"));
        json_decref(planned);
        cfg.memory_bytes = 1ULL << 30;
        planned = judge_obs_plan(&spec, 0, "1111111111111111111111111111111111111111111111111111111111111111", &cfg,
                                 p.argv, p.req.argc, &in);
        assert_true(judge_obs_difference(json_array_get(parsed, 0), planned, diff, sizeof diff));
        assert_string_equal(diff, "invocation.limits.memory_bytes was 268435456, is now 1073741824");
        json_decref(planned);
        cfg.memory_bytes = 256ULL << 20;
        cfg.network = NSB_NETWORK_LOOPBACK;
        planned = judge_obs_plan(&spec, 0, "1111111111111111111111111111111111111111111111111111111111111111", &cfg,
                                 p.argv, p.req.argc, &in);
        assert_true(judge_obs_difference(json_array_get(parsed, 0), planned, diff, sizeof diff));
        assert_non_null(strstr(diff, "was 'network = none', is now 'network = loopback'"));
        json_decref(planned);
        cfg.network = NSB_NETWORK_NONE;
        in.len = 3;
        planned = judge_obs_plan(&spec, 0, "1111111111111111111111111111111111111111111111111111111111111111", &cfg,
                                 p.argv, p.req.argc, &in);
        assert_true(judge_obs_difference(json_array_get(parsed, 0), planned, diff, sizeof diff));
        assert_non_null(strstr(diff, "invocation.stdin.sha256 was"));
        json_decref(planned);
        prog_free(&p);
        spec.cases[0].stimulus.args[1][0] = '7';
        assert_int_equal(judge_request_build(&cfg, &spec.program, "x", 1, &spec.cases[0].stimulus, -1, &p, &e),
                         0);
        in.len = 4;
        planned = judge_obs_plan(&spec, 0, "1111111111111111111111111111111111111111111111111111111111111111", &cfg,
                                 p.argv, p.req.argc, &in);
        assert_true(judge_obs_difference(json_array_get(parsed, 0), planned, diff, sizeof diff));
        assert_string_equal(diff, "invocation.args[1] was \"3\", is now \"7\"");
        json_decref(planned);
        prog_free(&p);

        json_decref(parsed);
        free(text);
        json_decref(lines[0]);
        json_decref(lines[1]);
        free(r);
        judge_spec_free(&spec);
}

static void test_observation_file_errors(void **state)
{
        static const char json[] = "{\"program\": {\"source\": \"x\"}, \"cases\": [{\"name\": \"a\"}, {\"name\": \"b\"}]}";
        struct judge_spec spec;
        struct nsb_config cfg;
        struct run_result *r = exited(0, "5\n", "");
        json_t *l[2], *edited, *parsed = NULL;
        char id[65], *good, *text;
        struct nsb_error e;
        static const struct { const char *text; const char *want; } raw[] = {
                { "", "obs.jsonl: no observations" },
                { "{\"schema\": 1\n", "obs.jsonl:1: invalid JSON at column" },
                { "[]\n", "obs.jsonl:1: expected an observation object" },
                { "{\"schema\": \"nsbox.result/1\"}\n", "obs.jsonl:1: schema: expected \"nsbox.observation/1\"" },
                { "{\"schema\": \"nsbox.observation/1\", \"extra\": 1}\n", "obs.jsonl:1: unknown key \"extra\"" },
                { "\n", "obs.jsonl:1: empty line" },
        };

        (void) state;
        parse_ok(json, "s.json", &spec);
        cfg_defaults(&cfg, NSB_CMD_JUDGE);
        for (size_t i = 0; i < ARRAY_SIZE(raw); i++) {
                nsb_error_clear(&e);
                if (judge_obs_parse(raw[i].text, strlen(raw[i].text), "obs.jsonl", &parsed, &e) != -EINVAL ||
                    !strstr(e.msg, raw[i].want))
                        fail_msg("raw row %zu: want \"%s\", got \"%s\"", i, raw[i].want, e.msg);
        }
        l[0] = sealed_line(&spec, &cfg, 0, "r1", r, id);
        l[1] = sealed_line(&spec, &cfg, 1, "r1", r, id);
        good = dump_lines(l, 2);
        nsb_error_clear(&e);
        assert_int_equal(judge_obs_parse(good, strlen(good), "obs.jsonl", &parsed, &e), 0);
        json_decref(parsed);

        /* an edited result: the id no longer matches, named with its line */
        edited = json_deep_copy(l[1]);
        json_object_set_new(json_object_get(json_object_get(edited, "result"), "stdout"), "text", json_string("6\n"));
        text = dump_lines((json_t *[]) { l[0], edited }, 2);
        assert_int_equal(judge_obs_parse(text, strlen(text), "obs.jsonl", &parsed, &e), -EINVAL);
        assert_string_equal(e.msg, "obs.jsonl:2: observation_id does not match the line's content (edited after the run?)");
        free(text);
        /* a result that cannot be judged: its path */
        json_object_set_new(json_object_get(json_object_get(edited, "result"), "stdout"), "bytes", json_integer(-1));
        text = dump_lines((json_t *[]) { l[0], edited }, 2);
        assert_int_equal(judge_obs_parse(text, strlen(text), "obs.jsonl", &parsed, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "obs.jsonl:2: result.stdout: bytes is -1"));
        free(text);
        json_decref(edited);
        /* out of order, or two runs mixed */
        text = dump_lines((json_t *[]) { l[1], l[0] }, 2);
        assert_int_equal(judge_obs_parse(text, strlen(text), "obs.jsonl", &parsed, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "obs.jsonl:1: case_index is 1, expected 0"));
        free(text);
        json_decref(l[1]);
        l[1] = sealed_line(&spec, &cfg, 1, "r2", r, id);
        text = dump_lines(l, 2);
        assert_int_equal(judge_obs_parse(text, strlen(text), "obs.jsonl", &parsed, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "obs.jsonl:2: run_id differs from line 1's"));
        free(text);

        free(good);
        json_decref(l[0]);
        json_decref(l[1]);
        free(r);
        judge_spec_free(&spec);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_good),
                cmocka_unit_test(test_parse_program_forms),
                cmocka_unit_test(test_parse_bad),
                cmocka_unit_test(test_matcher_table),
                cmocka_unit_test(test_matcher_raw_bytes),
                cmocka_unit_test(test_equals_reason),
                cmocka_unit_test(test_case_verdicts),
                cmocka_unit_test(test_suite_verdict),
                cmocka_unit_test(test_config_merge),
                cmocka_unit_test(test_request_has_no_expectation),
                cmocka_unit_test(test_render),
                cmocka_unit_test(test_excerpt),
                cmocka_unit_test(test_summary_unsafe), cmocka_unit_test(test_tally_score), cmocka_unit_test(test_score_text), cmocka_unit_test(test_tally_cancel_after_a_failure), cmocka_unit_test(test_public_reason),
                cmocka_unit_test(test_cut_stream_judged_from_the_recorded_tail),
                cmocka_unit_test(test_raw_bytes_are_recorded),
                cmocka_unit_test(test_evidence_parse_is_strict),
                cmocka_unit_test(test_observation_round_trip),
                cmocka_unit_test(test_observation_file_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
