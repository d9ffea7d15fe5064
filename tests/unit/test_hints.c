/* Unit tests for config/hints.c (issue #32): bwrap's options and its
 * two-word bind get nsbox's equivalent, a limit names its value and flag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "config/config.h"
#include "config/hints.h"
#include "util/error.h"

/* cfg_parse_cli on a NULL-terminated argv; 0 or -1 */
static int parse(struct nsb_config *cfg, struct nsb_error *e, char **argv)
{
        int argc = 0;

        while (argv[argc])
                argc++;
        nsb_error_clear(e);
        return cfg_parse_cli(argc, argv, cfg, e);
}

static void test_bwrap_options(void **state)
{
        static const struct {
                const char *option, *words;   /* a word of nsbox's equivalent */
        } cases[] = {
                { "--unshare-all", "unshares every namespace" },
                { "--unshare-net", "unshares every namespace" },
                { "--dev-bind", "--ro-bind SRC[:DST]" },
                { "--share-net", "--network loopback" },
                { "--setenv", "--env NAME=VALUE" },
                { "--size", "--tmpfs DST:SIZE" },
                { "--ro-bind-try", "--ro-bind SRC[:DST]" },
                /* bwrap's, and close to an option of nsbox's: never "did
                 * you mean --file-size?" for bwrap's --file FD DST */
                { "--file", "--ro-bind FILE[:DST]" },
                { "--dir", "--tmpfs DST" },
                { "--symlink", "creates no symlinks" },
        };
        (void) state;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char *argv[] = { "nsbox", "python", (char *) cases[i].option, "/data", "x.py", NULL };
                struct nsb_config cfg;
                struct nsb_error e;

                assert_true(parse(&cfg, &e, argv) < 0);
                assert_non_null(strstr(e.msg, "bwrap's; in nsbox: "));
                assert_non_null(strstr(e.msg, cases[i].words));
                cfg_free(&cfg);
        }
        assert_null(cfg_bwrap_option_hint("memory", 6));
        assert_null(cfg_bwrap_option_hint("unshare", 7));   /* a prefix is not the name */
}

static void test_bwrap_pair(void **state)
{
        static const struct {
                const char *const argv[8];
                const char *error;   /* the message of nsbox's failure */
                const char *hint;    /* NULL: no hint */
        } cases[] = {
                { { "nsbox", "python", "--ro-bind", "/data", "/data", "x.py" }, "script: '/data': Is a directory",
                  "--ro-bind takes one word, SRC[:DST]: for bwrap's `--ro-bind /data /data`, write "
                  "`--ro-bind /data:/data` ('/data' was read as the next argument, not as DST)" },
                { { "nsbox", "run", "--bind", "/srv/in", "/in", "--", "/bin/true" },
                  "command '/in': No such file or directory",
                  "--bind takes one word, SRC[:DST]: for bwrap's `--bind /srv/in /in`, write `--bind /srv/in:/in` "
                  "('/in' was read as the next argument, not as DST)" },
                { { "nsbox", "judge", "--ro-bind", "/srv", "/spec.json" }, "spec: cannot read '/spec.json': No such "
                  "file or directory",
                  "--ro-bind takes one word, SRC[:DST]: for bwrap's `--ro-bind /srv /spec.json`, write "
                  "`--ro-bind /srv:/spec.json` ('/spec.json' was read as the next argument, not as DST)" },
                /* a relative SRC needs DST: refused whatever the message */
                { { "nsbox", "python", "--ro-bind", "data", "/data", "x.py" },
                  "--ro-bind 'data': a relative SRC is found in the current directory, but DST must be absolute",
                  "--ro-bind takes one word, SRC[:DST]: for bwrap's `--ro-bind data /data`, write "
                  "`--ro-bind data:/data` ('/data' was read as the next argument, not as DST)" },
                /* the shape, but the failure is not about the word: a SRC
                 * missing, a word that only starts another quoted one, a
                 * program's own status (no message) */
                { { "nsbox", "run", "--ro-bind", "/nonexistent", "/bin/true" },
                  "--ro-bind '/nonexistent': No such file or directory", NULL },
                { { "nsbox", "run", "--ro-bind", "/srv", "/in" }, "command '/in/x': No such file or directory", NULL },
                { { "nsbox", "run", "--ro-bind", "/srv", "/bin/sh", "-c", "exit 127" }, NULL, NULL },
                /* nsbox's own forms */
                { { "nsbox", "python", "--ro-bind", "/data:/data", "/x.py" }, "script: '/x.py': No such file", NULL },
                { { "nsbox", "python", "--ro-bind", "/data", "/data/x.py" }, "script: '/data/x.py': No such file",
                  NULL },
                { { "nsbox", "python", "--ro-bind", "/data", "x.py" }, "script: 'x.py': No such file", NULL },
                { { "nsbox", "python", "--ro-bind", "/data", "-c", "print(1)" }, "'-c'", NULL },
        };
        (void) state;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char *argv[8] = { 0 };
                struct nsb_config cfg;
                struct nsb_error e;
                char hint[512] = "";

                memcpy(argv, cases[i].argv, sizeof cases[i].argv);
                assert_int_equal(parse(&cfg, &e, argv), 0);
                assert_int_equal(cfg_bwrap_pair_hint(&cfg, cases[i].error, hint, sizeof hint), cases[i].hint != NULL);
                if (cases[i].hint)
                        assert_string_equal(hint, cases[i].hint);
                cfg_free(&cfg);
        }
}

static void test_limit_hint(void **state)
{
        static const struct {
                const char *const argv[6];
                const char *limit, *hint;
        } cases[] = {
                { { "nsbox", "python", "x.py" }, "memory", "the memory limit (256M; raise it with --memory SIZE)" },
                { { "nsbox", "python", "--memory", "1G", "x.py" }, "memory",
                  "the memory limit (1G; raise it with --memory SIZE)" },
                { { "nsbox", "python", "--wall-time", "1500ms", "x.py" }, "wall_time",
                  "the wall_time limit (1500ms; raise it with --wall-time DUR)" },
                /* cpu_time unset is the wall time's */
                { { "nsbox", "python", "--wall-time", "2s", "x.py" }, "cpu_time",
                  "the cpu_time limit (2s; raise it with --cpu-time DUR)" },
                { { "nsbox", "python", "x.py" }, "pids", "the pids limit (64; raise it with --pids N)" },
                { { "nsbox", "python", "x.py" }, "output",
                  "the output limit (1M per stream, 4x in all; raise it with --output-limit SIZE)" },
                { { "nsbox", "python", "x.py" }, "file_size",
                  "the file_size limit (16M; raise it with --file-size SIZE)" },
                { { "nsbox", "python", "x.py" }, "jobs", NULL },
                { { "nsbox", "python", "x.py" }, NULL, NULL },
        };
        (void) state;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char *argv[6] = { 0 };
                struct nsb_config cfg;
                struct nsb_error e;
                char hint[256] = "";

                memcpy(argv, cases[i].argv, sizeof cases[i].argv);
                assert_int_equal(parse(&cfg, &e, argv), 0);
                assert_int_equal(cfg_limit_hint(&cfg, cases[i].limit, hint, sizeof hint), cases[i].hint != NULL);
                if (cases[i].hint)
                        assert_string_equal(hint, cases[i].hint);
                cfg_free(&cfg);
        }
}

/* The one wording every front end uses for a result's limit and value. */
static void test_limit_describe(void **state)
{
        char buf[256];

        (void) state;
        assert_true(cfg_limit_describe("memory", "256M", buf, sizeof buf));
        assert_string_equal(buf, "the memory limit (256M; raise it with --memory SIZE)");
        assert_true(cfg_limit_describe("wall_time", NULL, buf, sizeof buf));
        assert_string_equal(buf, "the wall_time limit (raise it with --wall-time DUR)");
        assert_true(cfg_limit_describe("output", "1M", buf, sizeof buf));
        assert_string_equal(buf, "the output limit (1M per stream, 4x in all; raise it with --output-limit SIZE)");
        /* a value read back from a file that is not one is left out */
        assert_true(cfg_limit_describe("pids", "64; rm -rf /", buf, sizeof buf));
        assert_string_equal(buf, "the pids limit (raise it with --pids N)");
        assert_true(cfg_limit_describe("pids", "", buf, sizeof buf));
        assert_string_equal(buf, "the pids limit (raise it with --pids N)");
        assert_false(cfg_limit_describe("jobs", "3", buf, sizeof buf));
        assert_string_equal(buf, "the jobs limit");
        assert_false(cfg_limit_describe(NULL, NULL, buf, sizeof buf));
        /* raised by something else than a flag (a spec's key, a request's), or by nothing said */
        assert_true(cfg_limit_describe_by("memory", "64M", "memory_limit_MB", buf, sizeof buf));
        assert_string_equal(buf, "the memory limit (64M; raise it with memory_limit_MB)");
        assert_true(cfg_limit_describe_by("output", NULL, "", buf, sizeof buf));
        assert_string_equal(buf, "the output limit (per stream, 4x in all)");
        assert_true(cfg_limit_describe_by("pids", NULL, "", buf, sizeof buf));
        assert_string_equal(buf, "the pids limit");
        assert_string_equal(cfg_limit_key("output"), "output_limit");
        assert_string_equal(cfg_limit_key("wall_time"), "wall_time");
        assert_null(cfg_limit_key("jobs"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bwrap_options),
                cmocka_unit_test(test_bwrap_pair),
                cmocka_unit_test(test_limit_hint),
                cmocka_unit_test(test_limit_describe),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
