/* Unit tests for config/: sizes, durations, counts and the command line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config/config.h"
#include "util/cleanup.h"

static void test_sizes(void **state)
{
        static const struct { const char *in; uint64_t out; } ok[] = {
                { "0", 0 }, { "100", 100 }, { "1K", 1024 }, { "256M", 256ULL << 20 },
                { "1G", 1ULL << 30 }, { "1g", 1ULL << 30 }, { "2GiB", 2ULL << 30 },
                { "1.5K", 1536 }, { "3T", 3ULL << 40 }, { "7b", 7 },
        };
        static const char *const bad[] = {
                "", "M", "-1", "1X", "1 M", "1.", ".5M", "1.5", "99999999999999999999",
                "20000000000T", "1M1", "0x10",
        };
        struct nsb_error e;
        uint64_t v;

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                assert_int_equal(cfg_parse_size(ok[i].in, &v, &e), 0);
                assert_int_equal(v, ok[i].out);
        }
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                nsb_error_clear(&e);
                assert_true(cfg_parse_size(bad[i], &v, &e) < 0);
                assert_int_equal(e.stage, NSB_STAGE_USAGE);
                assert_true(strlen(e.msg) > 0);
        }
}

static void test_durations(void **state)
{
        static const struct { const char *in; uint64_t ms; } ok[] = {
                { "500ms", 500 }, { "10s", 10000 }, { "2m", 120000 }, { "1h", 3600000 },
                { "3", 3000 }, { "1.5s", 1500 }, { "0.001s", 1 }, { "2.25", 2250 },
        };
        static const char *const bad[] = {
                "", "0", "0s", "0ms", "-1s", "1.5ms", "0.0001s", "10x", "s", "1 s", "10S",
                "99999999999999999999h", "5000000000000000h",
        };
        struct nsb_error e;
        uint64_t v;

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                assert_int_equal(cfg_parse_duration(ok[i].in, &v, &e), 0);
                assert_int_equal(v, ok[i].ms);
        }
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_true(cfg_parse_duration(bad[i], &v, &e) < 0);
}

static void test_cli_run(void **state)
{
        char *argv[] = { "nsbox", "run", "--memory=1G", "--wall-time", "2s", "--env", "A=b",
                         "--ro-bind", "/data:/d", "--bind", "/x", "--", "/bin/echo", "--memory", NULL };
        struct nsb_config cfg;
        struct nsb_error e;

        (void) state;
        assert_int_equal(cfg_parse_cli(14, argv, &cfg, &e), 0);
        assert_int_equal(cfg.cmd, NSB_CMD_RUN);
        assert_int_equal(cfg.memory_bytes, 1ULL << 30);
        assert_int_equal(cfg.wall_time_ms, 2000);
        assert_int_equal(cfg_cpu_time_ms(&cfg), 2000);
        assert_int_equal(cfg.n_env_add, 1);
        assert_int_equal(cfg.n_binds, 2);
        assert_string_equal(cfg.binds[0].src, "/data");
        assert_string_equal(cfg.binds[0].dst, "/d");
        assert_true(cfg.binds[0].read_only);
        assert_string_equal(cfg.binds[1].dst, "/x");
        assert_false(cfg.binds[1].read_only);
        assert_int_equal(cfg.argc, 2);
        assert_string_equal(cfg.argv[1], "--memory");   /* the program's flag, not ours */
        cfg_free(&cfg);
}

/* SRC may hold ':' (DST is absolute: the separator is the last ":/"). */
static void test_cli_bind_with_colons(void **state)
{
        static const struct { const char *arg, *src, *dst; } rows[] = {
                { "/data:/d", "/data", "/d" },
                { "/x", "/x", "/x" },
                { "/srv/run-12:00:/data", "/srv/run-12:00", "/data" },
                { "/srv/run-12:00:/srv/run-12:00", "/srv/run-12:00", "/srv/run-12:00" },
                { "/srv:data", "/srv", "data" },        /* refused later: DST is relative */
                { "/srv/a:/b:/c", "/srv/a:/b", "/c" },
                { "/srv/a:/b:c", "/srv/a", "/b:c" },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                char *argv[] = { "nsbox", "run", "--ro-bind", (char *) rows[i].arg, "--", "/bin/true", NULL };
                struct nsb_config cfg;
                struct nsb_error e;

                nsb_error_clear(&e);
                assert_int_equal(cfg_parse_cli(6, argv, &cfg, &e), 0);
                assert_int_equal(cfg.n_binds, 1);
                if (strcmp(cfg.binds[0].src, rows[i].src) != 0 || strcmp(cfg.binds[0].dst, rows[i].dst) != 0)
                        fail_msg("'%s': got '%s' -> '%s'", rows[i].arg, cfg.binds[0].src, cfg.binds[0].dst);
                cfg_free(&cfg);
        }
}

/* Relative bind sources are taken from the current directory, as bwrap
 * does, and recorded absolute (the policy hash names the real path). */
static void test_absolute_sources(void **state)
{
        char *ok[] = { "nsbox", "run", "--ro-bind", "data:/data", "--bind", "./out:/out", "--ro-bind", "/abs",
                       "--", "x", NULL };
        char *bad[] = { "nsbox", "run", "--ro-bind", "data", "--", "x", NULL };
        struct nsb_config cfg;
        struct nsb_error e;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(10, ok, &cfg, &e), 0);
        assert_int_equal(cfg_absolute_sources(&cfg, "/home/u", &e), 0);
        assert_string_equal(cfg.binds[0].src, "/home/u/data");
        assert_string_equal(cfg.binds[1].src, "/home/u/out");
        assert_string_equal(cfg.binds[2].src, "/abs");
        cfg_free(&cfg);
        assert_int_equal(cfg_parse_cli(6, bad, &cfg, &e), 0);
        assert_true(cfg_absolute_sources(&cfg, "/", &e) < 0);
        assert_non_null(strstr(e.msg, "--ro-bind 'data': a relative SRC"));
        cfg_free(&cfg);
}

/* The last --env NAME=... wins, in the environment and in the policy. */
static void test_env_repeated(void **state)
{
        char *argv[] = { "nsbox", "run", "--env", "A=1", "--env", "AB=x", "--env", "A=2", "--", "x", NULL };
        struct nsb_config cfg;
        struct nsb_error e;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(10, argv, &cfg, &e), 0);
        assert_int_equal(cfg.n_env_add, 2);
        assert_string_equal(cfg.env_add[0], "A=2");
        assert_string_equal(cfg.env_add[1], "AB=x");
        cfg_free(&cfg);
}

static void test_cli_batch_jobs(void **state)
{
        char *a1[] = { "nsbox", "batch", "-j", "3", "-", NULL };
        char *a2[] = { "nsbox", "batch", "-j2", "-", NULL };
        char *a3[] = { "nsbox", "batch", "-jx", "-", NULL };
        struct nsb_config cfg;
        struct nsb_error e;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(5, a1, &cfg, &e), 0);
        assert_int_equal(cfg.jobs, 3);
        cfg_free(&cfg);
        assert_int_equal(cfg_parse_cli(4, a2, &cfg, &e), 0);
        assert_int_equal(cfg.jobs, 2);
        cfg_free(&cfg);
        assert_true(cfg_parse_cli(4, a3, &cfg, &e) < 0);
        assert_non_null(strstr(e.msg, "-j"));
        cfg_free(&cfg);
}

static void test_cli_python(void **state)
{
        char *a1[] = { "nsbox", "python", "--json", "main.py", "x", "--wall-time", NULL };
        char *a2[] = { "nsbox", "python", "-c", "print(1)", "arg", NULL };
        struct nsb_config cfg;
        struct nsb_error e;

        (void) state;
        assert_int_equal(cfg_parse_cli(6, a1, &cfg, &e), 0);
        assert_true(cfg.json);
        assert_int_equal(cfg.argc, 3);
        assert_string_equal(cfg.argv[0], "main.py");
        cfg_free(&cfg);
        assert_int_equal(cfg_parse_cli(5, a2, &cfg, &e), 0);
        assert_string_equal(cfg.inline_code, "print(1)");
        assert_int_equal(cfg.argc, 1);
        cfg_free(&cfg);
}

/* #32: judge takes its options after the SPEC too, and --program FILE. */
static void test_judge_options_after_spec(void **state)
{
        const char *argv[] = { "nsbox", "judge", "spec.json", "--json", "--program", "b.py", "--junit-expected" };
        struct nsb_config cfg;
        struct nsb_error e;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(7, (char **) argv, &cfg, &e), 0);
        assert_string_equal(cfg.input_path, "spec.json");
        assert_string_equal(cfg.program_path, "b.py");
        assert_true(cfg.json && cfg.junit_expected);
        cfg_free(&cfg);
}

static void test_cli_errors(void **state)
{
        static const struct { int argc; char *argv[6]; const char *needle; } cases[] = {
                { 4, { "nsbox", "run", "--frobnicate", "x" }, "'--frobnicate'" },
                { 5, { "nsbox", "run", "--memory", "lots", "x" }, "--memory" },
                { 3, { "nsbox", "run", "--memory" }, "needs a value" },
                { 2, { "nsbox", "run" }, "missing COMMAND" },
                { 2, { "nsbox", "python" }, "missing SCRIPT" },
                { 2, { "nsbox", "bogus" }, "unknown command 'bogus'" },
                { 4, { "nsbox", "python", "--stdin-x", "a" }, "'--stdin-x'" },
                { 5, { "nsbox", "run", "--network", "full", "x" }, "--network" },
                { 5, { "nsbox", "run", "--env", "1A=b", "x" }, "invalid variable name" },
                { 4, { "nsbox", "doctor", "--memory", "1G" }, "'--memory' is an option of run, python, judge, test and batch, not of doctor" },
                { 4, { "nsbox", "run", "--json=1", "x" }, "takes no value" },
                /* 0 would mean "no limit" to the cgroup and to tmpfs */
                { 5, { "nsbox", "run", "--memory", "0", "x" }, "0 would turn the limit off" },
                { 5, { "nsbox", "run", "--tmp-size", "0K", "x" }, "0 would turn the limit off" },
                /* zero and absurd limits, with what is allowed */
                { 5, { "nsbox", "run", "--memory", "1k", "x" }, "'1k' is out of range: allowed 1M to 1T" },
                { 5, { "nsbox", "run", "--memory", "2T", "x" }, "allowed 1M to 1T" },
                { 5, { "nsbox", "run", "--output-limit", "0", "x" }, "'0' is out of range: allowed 1 to 1G" },
                { 5, { "nsbox", "run", "--output-limit", "2G", "x" }, "allowed 1 to 1G" },
                { 5, { "nsbox", "run", "--file-size", "0", "x" }, "allowed 1 to 1T" },
                { 5, { "nsbox", "run", "--wall-time", "25h", "x" }, "allowed 1ms to 24h" },
                { 5, { "nsbox", "run", "--cpu-time", "2000m", "x" }, "allowed 1ms to 24h" },
                { 5, { "nsbox", "run", "--tmp-size", "1K", "x" }, "allowed 4K to 1T" },
                { 5, { "nsbox", "run", "--pids", "0", "x" }, "out of range" },
                { 4, { "nsbox", "judge", "spec.json", "b.json" }, "unexpected argument 'b.json' after SPEC.json 'spec.json'" },
                { 5, { "nsbox", "judge", "--json", "spec.json", "b.json" }, "unexpected argument 'b.json'" },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct nsb_config cfg;
                struct nsb_error e;
                nsb_error_clear(&e);
                assert_true(cfg_parse_cli(cases[i].argc, (char **) cases[i].argv, &cfg, &e) < 0);
                assert_int_equal(e.stage, NSB_STAGE_USAGE);
                if (!strstr(e.msg, cases[i].needle))
                        fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].needle);
                cfg_free(&cfg);
        }
}

/* Parse @argv, which must fail; its message in @e. */
static void parse_fails(int argc, char **argv, struct nsb_error *e)
{
        struct nsb_config cfg;

        nsb_error_clear(e);
        assert_true(cfg_parse_cli(argc, argv, &cfg, e) < 0);
        assert_int_equal(e->stage, NSB_STAGE_USAGE);
        cfg_free(&cfg);
}

/* "did you mean": the closest name of that command, or none. */
static void test_suggestions(void **state)
{
        static const struct { int argc; char *argv[5]; const char *needle; } cases[] = {
                { 4, { "nsbox", "python", "--wall-tme", "2s" }, "unknown option '--wall-tme' (did you mean --wall-time?)" },
                { 4, { "nsbox", "python", "--wall-tme=2s", "x" }, "unknown option '--wall-tme' (did you mean --wall-time?)" },
                { 4, { "nsbox", "run", "--memroy", "1G" }, "(did you mean --memory?)" },
                { 4, { "nsbox", "run", "--mem", "1G" }, "(did you mean --memory?)" },
                { 4, { "nsbox", "python", "-memory", "1G" }, "unknown option '-memory' (did you mean --memory?)" },
                { 3, { "nsbox", "batch", "--resum" }, "(did you mean --resume?)" },
                { 3, { "nsbox", "doctor", "--jsn" }, "(did you mean --json?)" },
                { 2, { "nsbox", "pyhton" }, "unknown command 'pyhton' (did you mean python?)" },
                { 2, { "nsbox", "doctr" }, "unknown command 'doctr' (did you mean doctor?)" },
                { 2, { "nsbox", "bach" }, "unknown command 'bach' (did you mean batch?)" },
                /* an option of another command says whose it is */
                { 4, { "nsbox", "python", "--shard", "0/2" }, "'--shard' is an option of batch, not of python" },
                { 3, { "nsbox", "python", "--fail-fst" }, "(--fail-fast is an option of judge, not of python)" },
                { 4, { "nsbox", "doctor", "--wall-time", "1s" }, "not of doctor" },
        };
        static const struct { int argc; char *argv[5]; } far[] = {
                { 3, { "nsbox", "python", "--xyzzy" } },
                { 3, { "nsbox", "run", "--q" } },
                { 2, { "nsbox", "zzzzzz" } },
                { 2, { "nsbox", "xy" } },
        };
        (void) state;
        struct nsb_error e;

        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                parse_fails(cases[i].argc, (char **) cases[i].argv, &e);
                if (!strstr(e.msg, cases[i].needle))
                        fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].needle);
        }
        for (size_t i = 0; i < ARRAY_SIZE(far); i++) {
                parse_fails(far[i].argc, (char **) far[i].argv, &e);
                if (strstr(e.msg, "did you mean") || strstr(e.msg, "is an option of"))
                        fail_msg("far case %zu: '%s' suggests something", i, e.msg);
                assert_non_null(strstr(e.msg, "--help lists the"));
        }
        assert_int_equal(cfg_edit_distance("pyhton", "python"), 1);
        assert_int_equal(cfg_edit_distance("wall-tme", "wall-time"), 1);
        assert_int_equal(cfg_edit_distance("", "run"), 3);
        assert_int_equal(cfg_edit_distance("kitten", "sitting"), 3);
        {
                const char *names[] = { "run", "python", "judge" };
                assert_null(cfg_closest("zzz", names, 3));
                assert_string_equal(cfg_closest("rum", names, 3), "run");
                assert_string_equal(cfg_closest("jugde", names, 3), "judge");
        }
}

/* Every command's help teaches: purpose, usage, grouped options, exit
 * status, an example; doctor's --json is doctor's own. */
static void test_usage(void **state)
{
        static const enum nsb_cmd cmds[] = { NSB_CMD_RUN, NSB_CMD_PYTHON, NSB_CMD_JUDGE, NSB_CMD_TEST,
                                             NSB_CMD_BATCH, NSB_CMD_DOCTOR, NSB_CMD_PROFILE };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
                char *u = cfg_usage(cmds[i]);
                assert_non_null(u);
                assert_non_null(strstr(u, " — "));
                assert_non_null(strstr(u, "\nUsage: nsbox "));
                assert_non_null(strstr(u, "\nExit status:\n"));
                assert_non_null(strstr(u, "\nExample:\n  nsbox "));
                assert_non_null(strstr(u, "\nGeneral:\n  --help"));
                free(u);
        }
        {
                char *u = cfg_usage(NSB_CMD_DOCTOR);
                assert_non_null(strstr(u, "nsbox.doctor/1"));
                assert_null(strstr(u, "result object"));
                assert_null(strstr(u, "--memory"));
                free(u);
                u = cfg_usage(NSB_CMD_PYTHON);
                assert_non_null(strstr(u, "\nLimits:\n"));
                assert_non_null(strstr(u, "\nFilesystem:\n"));
                assert_non_null(strstr(u, "print the result object"));
                assert_null(strstr(u, "--shard"));
                free(u);
                u = cfg_usage(NSB_CMD_NONE);
                assert_non_null(strstr(u, "\nCommands:\n"));
                assert_non_null(strstr(u, "\n  python   run a Python script"));
                assert_non_null(strstr(u, "\nExit status:\n"));
                free(u);
        }
}

static void test_error_prefix(void **state)
{
        struct nsb_error e;
        char buf[600];

        (void) state;
        assert_int_equal(nsb_fail(&e, NSB_STAGE_MOUNT, 2, "open '%s'", "/x"), -2);
        assert_int_equal(nsb_error_prefix(&e, "mount step %d", 3), -2);
        assert_string_equal(e.msg, "mount step 3: open '/x'");
        assert_string_equal(nsb_stage_name(e.stage), "mount");
        nsb_error_describe(&e, buf, sizeof buf);
        assert_non_null(strstr(buf, "No such file"));
        /* a refused value reads as its message, without "Invalid argument" */
        nsb_fail(&e, NSB_STAGE_USAGE, EINVAL, "'wifi': expected none or loopback");
        assert_string_equal(nsb_error_describe(&e, buf, sizeof buf), "'wifi': expected none or loopback");
        nsb_fail(&e, NSB_STAGE_CONFIG, ERANGE, "number '0' is out of range (1 to 64)");
        assert_string_equal(nsb_error_describe(&e, buf, sizeof buf), "number '0' is out of range (1 to 64)");
        /* a system error keeps its errno text, and so does EINVAL from a syscall */
        nsb_fail(&e, NSB_STAGE_CONFIG, ENOENT, "cannot read 'x.ini'");
        assert_non_null(strstr(nsb_error_describe(&e, buf, sizeof buf), "No such file"));
        nsb_fail(&e, NSB_STAGE_MOUNT, EINVAL, "tmpfs at '/'");
        assert_non_null(strstr(nsb_error_describe(&e, buf, sizeof buf), "Invalid argument"));
        /* a made-up error without errno still reads as a failure */
        assert_true(nsb_fail(&e, NSB_STAGE_CONFIG, 0, "bad") < 0);
}

/* nsbox help COMMAND (and --help COMMAND) is that command's help; a name
 * that is no command is refused with a suggestion, as `nsbox pyhton` is. */
static void test_help_for_a_command(void **state)
{
        static const struct { int argc; char *argv[4]; enum nsb_cmd cmd; } ok[] = {
                { 3, { "nsbox", "help", "judge" }, NSB_CMD_JUDGE },
                { 3, { "nsbox", "--help", "batch" }, NSB_CMD_BATCH },
                { 3, { "nsbox", "-h", "doctor" }, NSB_CMD_DOCTOR },
        };
        static const struct { int argc; char *argv[5]; const char *want; } bad[] = {
                { 3, { "nsbox", "help", "pyhton" }, "unknown command 'pyhton' (did you mean python?)" },
                { 3, { "nsbox", "help", "xyzzy" }, "unknown command 'xyzzy' (nsbox --help lists the commands)" },
                { 4, { "nsbox", "help", "judge", "x" }, "help: unexpected argument 'x' (nsbox help [COMMAND])" },
        };
        struct nsb_config cfg;
        struct nsb_error e;

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                nsb_error_clear(&e);
                assert_int_equal(cfg_parse_cli(ok[i].argc, (char **) ok[i].argv, &cfg, &e), 0);
                assert_int_equal(cfg.cmd, ok[i].cmd);
                assert_true(cfg.help);
                cfg_free(&cfg);
        }
        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(2, (char *[]) { "nsbox", "help", NULL }, &cfg, &e), 0);
        assert_int_equal(cfg.cmd, NSB_CMD_HELP);
        cfg_free(&cfg);
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                parse_fails(bad[i].argc, (char **) bad[i].argv, &e);
                assert_string_equal(e.msg, bad[i].want);
        }
}

/* Odd words where a command or option belongs: each message quotes what was
 * typed (cut when long, so its advice still fits) and says what to do. */
static void test_odd_words(void **state)
{
        static char long_opt[2 + 5000 + 1], long_cmd[5000 + 1];
        static const struct { int argc; char *argv[5]; const char *want; } cases[] = {
                { 2, { "nsbox", "--wall-tme" }, "'--wall-tme' before the command: options come after it (nsbox "
                                                "COMMAND --wall-time ..., and nsbox COMMAND --help lists them)" },
                { 3, { "nsbox", "--json", "python" }, "'--json' before the command: options come after it (nsbox "
                                                      "COMMAND --json ..., and nsbox COMMAND --help lists them)" },
                { 2, { "nsbox", "--" }, "'--' where the command belongs: nsbox COMMAND [OPTIONS] ARGS (nsbox "
                                        "--help lists the commands)" },
                { 2, { "nsbox", "-" }, "'-' where the command belongs: nsbox COMMAND [OPTIONS] ARGS (nsbox "
                                       "--help lists the commands)" },
                { 2, { "nsbox", "---x" }, "'---x' before the command: options come after it (nsbox COMMAND "
                                          "[OPTIONS] ARGS; nsbox --help lists the commands)" },
                { 4, { "nsbox", "python", "--=", "x.py" }, "python: unknown option '--=' (nsbox python --help "
                                                          "lists the options)" },
                { 4, { "nsbox", "python", "--MEMORY", "1G" }, "python: unknown option '--MEMORY' (did you mean "
                                                              "--memory?)" },
                { 2, { "nsbox", "PYTHON" }, "unknown command 'PYTHON' (did you mean python?)" },
                /* nsbox's own options, before any command */
                { 2, { "nsbox", "--halp" }, "unknown option '--halp' (did you mean --help?)" },
                { 2, { "nsbox", "--verison" }, "unknown option '--verison' (did you mean --version?)" },
                { 2, { "nsbox", "-v" }, "unknown option '-v' (did you mean -V, --version?)" },
                { 2, { "nsbox", "--version=1" }, "--version takes no value" },
                { 2, { "nsbox", "--help=1" }, "--help takes no value" },
                { 2, { "nsbox", "-help" }, "unknown option '-help' (did you mean --help?)" },
                { 3, { "nsbox", "judge", "--help=x" }, "judge: --help takes no value" },
                { 3, { "nsbox", "run", "--memory" }, "run: --memory needs a value (SIZE)" },
                { 5, { "nsbox", "batch", "jobs.jsonl", "-j", "2" }, "batch: unexpected argument '-j' after JOBS.jsonl "
                                                                    "'jobs.jsonl' (options go before it)" },
                { 4, { "nsbox", "batch", "a.jsonl", "b.jsonl" }, "batch: unexpected argument 'b.jsonl' after "
                                                                 "JOBS.jsonl 'a.jsonl' (one input at most)" },
                { 5, { "nsbox", "profile", "show", "python", "--json" }, "profile: unexpected argument '--json' "
                                                                         "after 'show python' (options go before it)" },
        };
        struct nsb_error e;

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                parse_fails(cases[i].argc, (char **) cases[i].argv, &e);
                assert_string_equal(e.msg, cases[i].want);
        }
        memset(long_opt, 'a', sizeof long_opt - 1);
        long_opt[0] = long_opt[1] = '-';
        parse_fails(4, (char *[]) { "nsbox", "python", long_opt, "x.py", NULL }, &e);
        assert_non_null(strstr(e.msg, "aaa...' (nsbox python --help lists the options)"));
        assert_true(strlen(e.msg) < 200);
        parse_fails(2, (char *[]) { "nsbox", long_opt, NULL }, &e);
        assert_non_null(strstr(e.msg, "aaa...' before the command: options come after it"));
        assert_true(strlen(e.msg) < 200);
        memset(long_cmd, 'b', sizeof long_cmd - 1);
        parse_fails(2, (char *[]) { "nsbox", long_cmd, NULL }, &e);
        assert_non_null(strstr(e.msg, "bbb...' (nsbox --help lists the commands)"));
        /* so is a long value, and the message still says what is allowed */
        long_opt[0] = 'z';
        long_opt[1] = 'z';
        parse_fails(5, (char *[]) { "nsbox", "python", "--network", long_opt, "x.py", NULL }, &e);
        assert_non_null(strstr(e.msg, "aaa...': expected none or loopback"));
        parse_fails(5, (char *[]) { "nsbox", "python", "--memory", long_opt, "x.py", NULL }, &e);
        assert_non_null(strstr(e.msg, "aaa...' (expected a number of bytes with an optional unit K, M, G or T"));
        parse_fails(5, (char *[]) { "nsbox", "python", "--wall-time", long_opt, "x.py", NULL }, &e);
        assert_non_null(strstr(e.msg, "...' (expected a number with a unit ms, s, m or h"));
        parse_fails(5, (char *[]) { "nsbox", "batch", "--jobs", long_opt, NULL }, &e);
        assert_non_null(strstr(e.msg, "...' (expected a whole number)"));
        /* an empty value says what a value looks like */
        parse_fails(4, (char *[]) { "nsbox", "python", "--memory=", "x.py", NULL }, &e);
        assert_string_equal(e.msg, "--memory: empty size (expected a number of bytes with an optional unit K, M, "
                                   "G or T, e.g. 512K, 256M, 1G)");
        parse_fails(4, (char *[]) { "nsbox", "python", "--wall-time=", "x.py", NULL }, &e);
        assert_string_equal(e.msg, "--wall-time: empty duration (expected a number with a unit ms, s, m or h, "
                                   "e.g. 500ms, 10s, 2m)");
}

/* Each command's help says what that command does with --json, and its
 * exit statuses are that command's own. */
static void test_usage_is_each_commands_own(void **state)
{
        char *u;

        (void) state;
        u = cfg_usage(NSB_CMD_BATCH);
        assert_non_null(strstr(u, "--json                     accepted and changes nothing: batch always writes "
                                  "JSON Lines"));
        assert_null(strstr(u, "instead of relaying"));
        free(u);
        u = cfg_usage(NSB_CMD_JUDGE);
        assert_non_null(strstr(u, "print the verdict (nsbox.verdict/1)"));
        assert_non_null(strstr(u, "  3      undetermined: the sandbox failed, cut output cannot settle a check, "
                                  "or cancelled\n"));
        free(u);
        u = cfg_usage(NSB_CMD_TEST);
        assert_non_null(strstr(u, "print the report (nsbox.tests/1)"));
        assert_null(strstr(u, "cut output"));           /* that is the judge's */
        assert_non_null(strstr(u, "every test was skipped"));
        free(u);
        u = cfg_usage(NSB_CMD_NONE);
        assert_non_null(strstr(u, "\n  report       0 summarised, 1 no result or verdict in the input"));
        assert_non_null(strstr(u, "\n  profile      0 printed, 125"));
        /* the overview has every status each command's help lists */
        assert_non_null(strstr(u, "126 COMMAND cannot be executed, 127 COMMAND not found"));
        assert_non_null(strstr(u, "2 and some input lines were bad"));
        free(u);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sizes),        cmocka_unit_test(test_durations),
                cmocka_unit_test(test_cli_run),      cmocka_unit_test(test_cli_python),
                cmocka_unit_test(test_cli_bind_with_colons),
                cmocka_unit_test(test_cli_batch_jobs),
                cmocka_unit_test(test_env_repeated),
                cmocka_unit_test(test_absolute_sources),
                cmocka_unit_test(test_cli_errors), cmocka_unit_test(test_judge_options_after_spec),   cmocka_unit_test(test_error_prefix),
                cmocka_unit_test(test_suggestions),  cmocka_unit_test(test_usage),
                cmocka_unit_test(test_help_for_a_command), cmocka_unit_test(test_odd_words),
                cmocka_unit_test(test_usage_is_each_commands_own),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
