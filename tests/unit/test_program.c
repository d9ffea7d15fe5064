/* Unit tests for program/: where a script in the workspace runs from
 * (prog_place_plan), and the request prog_build makes of it. Pure code only. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config/config.h"
#include "program/program.h"
#include "util/sha256.h"

static void place(const char *ws, const char *dir, const char *file, const char *cwd, const char *script,
                  const char *workdir)
{
        struct prog_place p;

        assert_int_equal(prog_place_plan(ws, dir, file, cwd, &p), 0);
        if (!script) {
                assert_null(p.script);
                assert_null(p.workdir);
                return;
        }
        assert_string_equal(p.script, script);
        assert_string_equal(p.workdir, workdir);
        prog_place_free(&p);
}

static void test_place(void **state)
{
        struct prog_place p;

        (void) state;
        /* `cd project && nsbox python --workspace . main.py` */
        place("/h/project", "/h/project", "/h/project/main.py", "/h/project", "/workspace/main.py", "/workspace");
        /* a script in a sub-folder, run from the workspace's top */
        place("/h/project", "/h/project/a/b", "/h/project/a/b/m.py", "/h/project", "/workspace/a/b/m.py",
              "/workspace");
        /* the caller inside the workspace: its cwd, mapped */
        place("/h/project", "/h/project", "/h/project/m.py", "/h/project/a", "/workspace/m.py", "/workspace/a");
        /* the caller outside it (or no cwd): /workspace */
        place("/h/project", "/h/project", "/h/project/m.py", "/h", "/workspace/m.py", "/workspace");
        place("/h/project", "/h/project", "/h/project/m.py", NULL, "/workspace/m.py", "/workspace");
        /* a prefix of a name is not a folder */
        place("/h/project", "/h/project2", "/h/project2/m.py", "/h/project", NULL, NULL);
        place("/h/project", "/h/project", "/h/project/m.py", "/h/project2", "/workspace/m.py", "/workspace");
        /* outside: as today, /program/NAME */
        place("/h/project", "/tmp", "/tmp/m.py", "/h/project", NULL, NULL);
        /* a symlink named in the workspace runs as the file it leads to
         * (an absolute link's text names a host path the sandbox lacks) */
        place("/h/project", "/h/project", "/h/project/lib/real.py", "/h/project", "/workspace/lib/real.py",
              "/workspace");
        /* the root as the workspace */
        place("/", "/a", "/a/m.py", "/", "/workspace/a/m.py", "/workspace");
        /* named in the workspace, leading out of it: refused, nothing made */
        assert_int_equal(prog_place_plan("/h/project", "/h/project", "/etc/x.py", "/h/project", &p), -EXDEV);
        assert_null(p.script);
        assert_int_equal(prog_place_plan("/h/project", "/h/project", "/h/project", "/h/project", &p), -EXDEV);
}

static void test_request(void **state)
{
        struct nsb_config c;
        struct nsb_error e;
        struct prog p;
        char sha[65];
        char *args[] = { "x" };
        struct prog_source src = { .kind = PROG_FILE, .name = "main.py", .data = "print(1)\n", .len = 9,
                                   .args = args, .n_args = 1, .script = "/workspace/a/main.py",
                                   .workdir = "/workspace/a" };

        (void) state;
        cfg_defaults(&c, NSB_CMD_PYTHON);
        c.script_dir_first = true;
        assert_int_equal(prog_build(&c, &src, &p, &e), 0);
        /* python3 -E -s -B /workspace/a/main.py x */
        assert_int_equal(p.req.argc, 6);
        assert_string_equal(p.req.argv[1], "-E");
        assert_string_equal(p.req.argv[2], "-s");
        assert_string_equal(p.req.argv[4], "/workspace/a/main.py");
        assert_string_equal(p.req.script, "/workspace/a/main.py");
        assert_string_equal(p.req.workdir, "/workspace/a");
        /* the bytes read are what is placed and hashed */
        assert_string_equal(p.req.program_name, "main.py");
        assert_int_equal(p.req.program_len, 9);
        sha256_hex(src.data, src.len, sha);
        assert_string_equal(p.sha256, sha);
        prog_free(&p);
        cfg_free(&c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_place),
                cmocka_unit_test(test_request),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
