/* Unit tests for path/: the one normal form of a sandbox path and the rules
 * between mounts that config/ and mount/ both apply. Portable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "path/path.h"
#include "util/cleanup.h"

static void test_normalize(void **state)
{
        static const struct { const char *in, *out; } ok[] = {
                { "/data", "/data" },       { "//data", "/data" },      { "/./data/", "/data" },
                { "/a//b/./c/", "/a/b/c" }, { "/a/.b/c", "/a/.b/c" },  { "/a/..b", "/a/..b" },
        };
        static const char *const bad[] = { "data", "", "/", "//", "/.", "/a/../b", "/a/..", "../a" };
        struct nsb_error e;

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                char *out = NULL;
                assert_int_equal(path_normalize(ok[i].in, "--bind", &out, &e), 0);
                assert_string_equal(out, ok[i].out);
                free(out);
        }
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char *out = NULL;
                nsb_error_clear(&e);
                assert_true(path_normalize(bad[i], "--bind", &out, &e) < 0);
                assert_null(out);
                assert_non_null(strstr(e.msg, "--bind: destination"));
        }
        assert_true(path_has_dotdot("/a/../b"));
        assert_true(path_has_dotdot(".."));
        assert_false(path_has_dotdot("/a/..b/c"));
        assert_false(path_has_dotdot("/a../b"));
}

static void test_under_and_reserved(void **state)
{
        (void) state;
        assert_true(path_under("/tmp", "/tmp"));
        assert_true(path_under("/tmp/x", "/tmp"));
        assert_false(path_under("/tmpx", "/tmp"));
        assert_true(path_under("/anything", "/"));
        for (size_t i = 0; i < PATH_N_RESERVED; i++) {
                char inside[64];
                assert_true(path_is_reserved(path_reserved[i]));
                snprintf(inside, sizeof inside, "%s/x", path_reserved[i]);
                assert_true(path_is_reserved(inside));
                /* the human list names every reserved path */
                assert_non_null(strstr(PATH_RESERVED_LIST, path_reserved[i]));
        }
        assert_true(path_is_reserved("/"));
        assert_false(path_is_reserved("/data"));
        assert_false(path_is_reserved("/tmpfoo"));
        assert_false(path_is_reserved("/usr/dev"));
}

static void test_conflict_rules(void **state)
{
        (void) state;
        /* the same place, whatever the kinds */
        assert_non_null(path_conflict("/d", false, "/d", false));
        assert_non_null(path_conflict("/d", true, "/d", true));
        assert_non_null(path_conflict("/d", true, "/d", false));
        /* binds may nest, either way round */
        assert_null(path_conflict("/d/x", false, "/d", false));
        assert_null(path_conflict("/d", false, "/d/x", false));
        /* a tmpfs may neither hold nor sit inside another mount */
        assert_non_null(path_conflict("/d/x", true, "/d", false));
        assert_non_null(path_conflict("/d", true, "/d/x", false));
        assert_non_null(path_conflict("/d", false, "/d/x", true));
        assert_non_null(path_conflict("/d/x", true, "/d", true));
        /* siblings and prefixes that are not components are fine */
        assert_null(path_conflict("/d", true, "/e", true));
        assert_null(path_conflict("/dx", true, "/d", false));
}

static void test_nesting(void **state)
{
        (void) state;
        assert_true(path_nesting_refused("/d/x", true, "/d", false));
        assert_false(path_nesting_refused("/d/x", false, "/d", false));
        assert_false(path_nesting_refused("/d/x", true, "/d", true));
        assert_false(path_nesting_refused("/d/x", false, "/d", true));
        assert_false(path_nesting_refused("/e", true, "/d", false));
        assert_false(path_nesting_refused("/d", true, "/d", false));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_normalize),
                cmocka_unit_test(test_under_and_reserved),
                cmocka_unit_test(test_conflict_rules),
                cmocka_unit_test(test_nesting),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
