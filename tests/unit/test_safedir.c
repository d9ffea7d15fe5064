/* Unit tests for util/safedir.h: the verdict on one directory (pure), and the
 * walk from / that refuses a cache under a directory others can rename in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/safedir.h"

static void test_verdict(void **state)
{
        (void) state;
        /* root's or the caller's, writable by the owner only */
        assert_int_equal(nsb_dir_verdict(0, S_IFDIR | 0755, 1000), NSB_DIR_OK);
        assert_int_equal(nsb_dir_verdict(1000, S_IFDIR | 0700, 1000), NSB_DIR_OK);
        assert_int_equal(nsb_dir_verdict(1000, S_IFDIR | 0755, 1000), NSB_DIR_OK);
        /* another user's directory, however closed */
        assert_int_equal(nsb_dir_verdict(65534, S_IFDIR | 0700, 1000), NSB_DIR_FOREIGN);
        assert_int_equal(nsb_dir_verdict(65534, S_IFDIR | 0755, 0), NSB_DIR_FOREIGN);
        /* group- or other-writable, not sticky: anyone there renames */
        assert_int_equal(nsb_dir_verdict(0, S_IFDIR | 0777, 1000), NSB_DIR_WRITABLE);
        assert_int_equal(nsb_dir_verdict(0, S_IFDIR | 0775, 0), NSB_DIR_WRITABLE);
        assert_int_equal(nsb_dir_verdict(1000, S_IFDIR | 0757, 1000), NSB_DIR_WRITABLE);
        /* sticky (/tmp): others add entries but rename only their own */
        assert_int_equal(nsb_dir_verdict(0, S_IFDIR | 01777, 1000), NSB_DIR_OK);
        assert_string_equal(nsb_dir_verdict_text(NSB_DIR_OK), "");
        assert_non_null(strstr(nsb_dir_verdict_text(NSB_DIR_FOREIGN), "another user"));
        assert_non_null(strstr(nsb_dir_verdict_text(NSB_DIR_WRITABLE), "writable"));
}

static void mk(char *out, size_t n, const char *base, const char *name, mode_t mode)
{
        snprintf(out, n, "%s/%s", base, name);
        assert_int_equal(mkdir(out, 0700), 0);
        assert_int_equal(chmod(out, mode), 0);
}

static void test_walk(void **state)
{
        const char *tmp = getenv("TMPDIR");
        char root[PATH_MAX], ok[PATH_MAX + 8], open_dir[PATH_MAX + 8], under[PATH_MAX + 16];
        char sticky[PATH_MAX + 8], link[PATH_MAX + 8], *real = NULL;
        struct nsb_error e = { 0 };
        struct stat a, b;
        int fd = -1;

        (void) state;
        snprintf(root, sizeof root, "%s/nsbox-sd-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
        assert_non_null(mkdtemp(root));
        mk(ok, sizeof ok, root, "ok", 0700);
        /* the caller's own: accepted, resolved, and the fd is that directory */
        assert_int_equal(nsb_dir_check_path("test cache", ok, &real, &fd, &e), 0);
        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, &a), 0);
        assert_int_equal(stat(ok, &b), 0);
        assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
        assert_non_null(real);
        close(fd);
        free(real);

        /* under a 0777 directory: refused, the message names that directory */
        mk(open_dir, sizeof open_dir, root, "open", 0777);
        mk(under, sizeof under, open_dir, "cache", 0700);
        fd = -1;
        assert_int_equal(nsb_dir_check_path("test cache", under, NULL, &fd, &e), -EPERM);
        assert_int_equal(fd, -1);
        assert_non_null(strstr(e.msg, "/open'"));
        assert_non_null(strstr(e.msg, "writable by others"));
        /* the directory itself 0777: refused too */
        assert_int_equal(nsb_dir_check_path("test cache", open_dir, NULL, NULL, &e), -EPERM);

        /* under a sticky 1777 directory (as /tmp): accepted */
        mk(sticky, sizeof sticky, root, "sticky", 01777);
        snprintf(under, sizeof under, "%s/cache", sticky);
        assert_int_equal(mkdir(under, 0700), 0);
        assert_int_equal(nsb_dir_check_path("test cache", under, NULL, NULL, &e), 0);

        /* a symlink in the configured path is resolved, then its target checked */
        snprintf(link, sizeof link, "%s/link", root);
        snprintf(under, sizeof under, "%s/cache", open_dir);
        assert_int_equal(symlink(under, link), 0);
        assert_int_equal(nsb_dir_check_path("test cache", link, NULL, NULL, &e), -EPERM);
        assert_non_null(strstr(e.msg, "/open'"));

        /* as root: a directory on the way owned by another user is refused */
        if (geteuid() == 0) {
                snprintf(under, sizeof under, "%s/cache", ok);
                assert_int_equal(mkdir(under, 0700), 0);
                assert_int_equal(chown(ok, 65534, 65534), 0);
                assert_int_equal(nsb_dir_check_path("test cache", under, NULL, NULL, &e), -EPERM);
                assert_non_null(strstr(e.msg, "another user"));
        }

        /* absent: an error, not a verdict */
        snprintf(under, sizeof under, "%s/absent", root);
        assert_int_equal(nsb_dir_check_path("test cache", under, NULL, NULL, &e), -ENOENT);

        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_verdict),
                cmocka_unit_test(test_walk),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
