/* Unit tests for util/portable.c (asprintf, memmem and signal names in
 * plain C) and util/strv.c. On glibc the names are checked against
 * sigabbrev_np for every number, which is what the Linux build printed
 * before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <signal.h>

#include "util/portable.h"
#include "util/strv.h"

#if defined(__GLIBC__) && defined(_GNU_SOURCE)
#define HAVE_SIGABBREV 1   /* glibc with its GNU interface: the Linux build */
#endif

static void test_asprintf(void **state)
{
        char *s = NULL;
        char big[5000];

        (void) state;
        assert_int_equal(nsb_asprintf(&s, "%s/%d", "a", 42), 4);
        assert_string_equal(s, "a/42");
        free(s);
        assert_int_equal(nsb_asprintf(&s, "%s", ""), 0);
        assert_string_equal(s, "");
        free(s);
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        assert_int_equal(nsb_asprintf(&s, "<%s>", big), (int) sizeof big + 1);
        assert_int_equal(s[0], '<');
        assert_int_equal(s[sizeof big], '>');
        assert_int_equal(s[sizeof big + 1], '\0');
        free(s);
}

static void test_memmem(void **state)
{
        static const char hay[] = "abcab\0cabd";
        const size_t n = sizeof hay - 1;   /* the NUL inside counts */

        (void) state;
        assert_ptr_equal(nsb_memmem(hay, n, "ab", 2), hay);
        assert_ptr_equal(nsb_memmem(hay, n, "cabd", 4), hay + 6);
        assert_ptr_equal(nsb_memmem(hay, n, "b\0c", 3), hay + 4);
        assert_ptr_equal(nsb_memmem(hay, n, "", 0), hay);
        assert_null(nsb_memmem(hay, n, "bad", 3));
        assert_ptr_equal(nsb_memmem(hay, n, "abd", 3), hay + 7);
        assert_null(nsb_memmem(hay, 2, "abc", 3));
        assert_null(nsb_memmem(hay, n, "d!", 2));   /* would run past the end */
        assert_ptr_equal(nsb_memmem(hay, n, "d", 1), hay + n - 1);
}

static void test_signame(void **state)
{
        (void) state;
        assert_string_equal(nsb_signame(SIGKILL), "KILL");
        assert_string_equal(nsb_signame(SIGXCPU), "XCPU");
        assert_string_equal(nsb_signame(SIGXFSZ), "XFSZ");
        assert_string_equal(nsb_signame(SIGSEGV), "SEGV");
        assert_null(nsb_signame(0));
        assert_null(nsb_signame(-1));
        assert_null(nsb_signame(1000));
#ifdef HAVE_SIGABBREV
        for (int sig = -1; sig < 80; sig++) {
                const char *want = sigabbrev_np(sig), *got = nsb_signame(sig);
                if (!want) {
                        assert_null(got);
                } else {
                        assert_non_null(got);
                        assert_string_equal(got, want);
                }
        }
#endif
}

/* util/strv.c: a copy appended; with unique, an equal string only once */
static void test_strv(void **state)
{
        char **v = NULL, s[] = "a";
        size_t n = 0;

        (void) state;
        assert_int_equal(strv_add(&v, &n, s, true), 1);
        s[0] = 'z';     /* a copy was taken */
        assert_int_equal(strv_add(&v, &n, "a", true), 0);
        assert_int_equal(strv_add(&v, &n, "a", false), 1);
        assert_int_equal(strv_add(&v, &n, "b", true), 1);
        assert_int_equal(n, 3);
        assert_string_equal(v[0], "a");
        assert_string_equal(v[1], "a");
        assert_string_equal(v[2], "b");
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_asprintf),
                cmocka_unit_test(test_memmem),
                cmocka_unit_test(test_signame),
                cmocka_unit_test(test_strv),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
