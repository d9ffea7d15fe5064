/* Unit tests for config/stdin_plan.c: what the program's stdin is made
 * of for each thing the caller can name (issue #27: never the caller's own
 * description, nor a description of the caller's file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "config/stdin_plan.h"

static void test_stdin_plan(void **state)
{
        static const struct {
                struct stdin_src src;
                enum stdin_how how;
                const char *why;   /* a word of the refusal */
        } cases[] = {
                /* absent: /dev/null anew */
                { { .given = false }, STDIN_EMPTY, NULL },
                /* by name */
                { { .given = true, .mode = S_IFREG | 0644, .size = 12 }, STDIN_COPY, NULL },
                { { .given = true, .mode = S_IFREG | 0644, .size = STDIN_COPY_MAX }, STDIN_COPY, NULL },
                { { .given = true, .mode = S_IFREG | 0644, .size = STDIN_COPY_MAX + 1 }, STDIN_PUMP, NULL },
                { { .given = true, .mode = S_IFCHR | 0666, .is_null = true }, STDIN_EMPTY, NULL },
                { { .given = true, .mode = S_IFDIR | 0755 }, STDIN_REFUSE, "directory" },
                { { .given = true, .mode = S_IFIFO | 0600 }, STDIN_REFUSE, "FIFO or a pipe" },
                { { .given = true, .mode = S_IFIFO | 0600, .pipe_known = true }, STDIN_REFUSE, "FIFO (named pipe)" },
                { { .given = true, .mode = S_IFIFO | 0600, .pipe_known = true, .anon_pipe = true }, STDIN_PUMP, NULL },
                { { .given = true, .mode = S_IFSOCK | 0600 }, STDIN_REFUSE, "socket" },
                { { .given = true, .mode = S_IFCHR | 0666 }, STDIN_REFUSE, "character device" },
                { { .given = true, .mode = S_IFBLK | 0660 }, STDIN_REFUSE, "block device" },
                /* nsbox's own: never handed in */
                { { .given = true, .dash = true, .mode = S_IFREG | 0644, .size = 5 }, STDIN_COPY, NULL },
                { { .given = true, .dash = true, .mode = S_IFREG | 0644, .size = STDIN_COPY_MAX + 1 }, STDIN_PUMP, NULL },
                { { .given = true, .dash = true, .mode = S_IFIFO | 0600 }, STDIN_PUMP, NULL },
                { { .given = true, .dash = true, .mode = S_IFSOCK | 0777 }, STDIN_PUMP, NULL },
                { { .given = true, .dash = true, .tty = true, .mode = S_IFCHR | 0620 }, STDIN_PUMP, NULL },
                { { .given = true, .dash = true, .mode = S_IFCHR | 0666 }, STDIN_PUMP, NULL },
                { { .given = true, .dash = true, .mode = S_IFCHR | 0666, .is_null = true }, STDIN_EMPTY, NULL },
                { { .given = true, .dash = true, .mode = S_IFDIR | 0755 }, STDIN_REFUSE, "directory" },
        };
        (void) state;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const char *why = "unset";
                enum stdin_how how = stdin_plan(&cases[i].src, &why);

                assert_int_equal(how, cases[i].how);
                if (cases[i].why)
                        assert_non_null(strstr(why, cases[i].why));
                else
                        assert_null(why);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stdin_plan),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
