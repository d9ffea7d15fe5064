/* Unit tests for profile/shebang_parse.c: the "#!" line as execve(2) reads
 * it (interpreter up to the first blank, the rest as one argument); and for
 * profile/pyvenv_parse.c: a venv's "home" and "version", as CPython's
 * getpath reads them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "profile/profile.h"
#include "profile/profile_internal.h"
#include "util/cleanup.h"

static void test_shebang_lines(void **state)
{
        static const struct { const char *text; int r; const char *interp, *arg; } rows[] = {
                { "#!/bin/sh\necho hi\n", 1, "/bin/sh", NULL },
                { "#! /usr/bin/env  python3 \nprint(1)\n", 1, "/usr/bin/env", "python3" },
                { "#!/usr/bin/python3 -I -B\r\n", 1, "/usr/bin/python3", "-I -B" },
                { "#!/bin/sh", 1, "/bin/sh", NULL },
                { "#!\tinterp\targ", 1, "interp", "arg" },
                { "#!   \n", -EINVAL, NULL, NULL },
                { "print(1)\n", 0, NULL, NULL },
                { "#", 0, NULL, NULL },
                { "\x7f" "ELF", 0, NULL, NULL },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                char *interp = NULL, *arg = NULL;
                int r = shebang_parse(rows[i].text, strlen(rows[i].text), &interp, &arg);

                if (r != rows[i].r)
                        fail_msg("row %zu: got %d, want %d", i, r, rows[i].r);
                if (rows[i].interp)
                        assert_string_equal(interp, rows[i].interp);
                else
                        assert_null(interp);
                if (rows[i].arg)
                        assert_string_equal(arg, rows[i].arg);
                else
                        assert_null(arg);
                free(interp);
                free(arg);
        }
}

/* A NUL inside the line (the kernel stops at it; nsbox refuses to guess). */
static void test_shebang_nul(void **state)
{
        static const char text[] = "#!/bin/sh\0x\n";
        char *interp, *arg;

        (void) state;
        assert_int_equal(shebang_parse(text, sizeof text - 1, &interp, &arg), -EINVAL);
        assert_null(interp);
}

static void test_pyvenv_lines(void **state)
{
        static const struct { const char *text; int r; const char *home; unsigned major, minor; } rows[] = {
                /* what python3 -m venv writes (3.11) */
                { "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n"
                  "executable = /usr/bin/python3.11\n", 0, "/usr/bin", 3, 11 },
                /* getpath: key without blanks or case, value stripped */
                { "  HOME=/opt/py/bin  \r\nVersion =3.12.1", 0, "/opt/py/bin", 3, 12 },
                { "home = /root/.pyenv/versions/3.12.1/bin\n", 0, "/root/.pyenv/versions/3.12.1/bin", 0, 0 },
                { "version = 3.11.2\n", -ENOENT, NULL, 3, 11 },
                { "home =   \n", -EINVAL, NULL, 0, 0 },
                { "homes = /x\nhome\n", -ENOENT, NULL, 0, 0 },
                { "home = /a\nversion = three\n", 0, "/a", 0, 0 },
                { "", -ENOENT, NULL, 0, 0 },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                char home[64] = "";
                unsigned major = 99, minor = 99;
                int r = pyvenv_parse(rows[i].text, strlen(rows[i].text), home, sizeof home, &major, &minor);

                if (r != rows[i].r)
                        fail_msg("row %zu: got %d, want %d", i, r, rows[i].r);
                if (rows[i].home)
                        assert_string_equal(home, rows[i].home);
                assert_int_equal(major, rows[i].major);
                assert_int_equal(minor, rows[i].minor);
        }
}

/* A home longer than the buffer is refused, never cut (a cut path could
 * name another directory). */
static void test_pyvenv_home_too_long(void **state)
{
        static const char text[] = "home = /a/very/long/home/directory\n";
        char home[8];
        unsigned major, minor;

        (void) state;
        assert_int_equal(pyvenv_parse(text, sizeof text - 1, home, sizeof home, &major, &minor), -EINVAL);
}

static void test_expand_origin(void **state)
{
        static const struct { const char *dir, *want; } rows[] = {
                { "$ORIGIN/../lib", "/opt/conda/bin/../lib" },
                { "${ORIGIN}/../../numpy.libs", "/opt/conda/bin/../../numpy.libs" },
                { "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu" },
                { "$ORIGIN/x/${ORIGIN}", "/opt/conda/bin/x//opt/conda/bin" },
                { "/a/$ORIGINAL", "/a/$ORIGINAL" },     /* not the token: a literal name, as for ld.so */
                { "$ORIGIN", "/opt/conda/bin" },
                { "${ORIGIN", "${ORIGIN" },
                { "", "" },
        };
        char out[64];

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
                assert_int_equal(elf_expand_origin(rows[i].dir, "/opt/conda/bin", out, sizeof out), 0);
                assert_string_equal(out, rows[i].want);
        }
        /* too long: refused, never cut */
        assert_int_equal(elf_expand_origin("$ORIGIN/lib", "/opt/conda/bin", out, 18), -ENAMETOOLONG);
        assert_int_equal(elf_expand_origin("$ORIGIN/lib", "/opt/conda/bin", out, 19), 0);
        assert_string_equal(out, "/opt/conda/bin/lib");
        assert_int_equal(elf_expand_origin("x", "/o", out, 0), -ENAMETOOLONG);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shebang_lines),
                cmocka_unit_test(test_shebang_nul),
                cmocka_unit_test(test_pyvenv_lines),
                cmocka_unit_test(test_expand_origin),
                cmocka_unit_test(test_pyvenv_home_too_long),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
