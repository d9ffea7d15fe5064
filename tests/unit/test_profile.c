/* Unit tests for profile/shebang_parse.c: the "#!" line as execve(2) reads
 * it (interpreter up to the first blank, the rest as one argument). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "profile/profile.h"
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shebang_lines),
                cmocka_unit_test(test_shebang_nul),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
