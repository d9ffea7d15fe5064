/* Unit tests for the closure cache: the file format, where it may live, and
 * above all when a cached closure must NOT be reused (invalidation, trust). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/closure_cache.h"
#include "util/cleanup.h"

#define KEY "python:/usr/bin/python3"

static const struct timespec future = { .tv_sec = INT32_MAX };  /* "nothing changed since the walk" */

struct tree {
        char root[PATH_MAX];    /* mkdtemp'd */
        char lib[PATH_MAX];     /* root/lib: the watched library directory */
        char so[PATH_MAX];      /* root/lib/libx.so.1: a file of the closure */
        char link[PATH_MAX];    /* root/lib/libx.so -> libx.so.1 */
        char absent[PATH_MAX];  /* root/opt: watched while absent */
        char cache[PATH_MAX];   /* root/cache: $XDG_CACHE_HOME */
        int cache_fd;
        struct host_entry entries[3];
        struct host_set set;
};

static void put(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
        struct tree *t = calloc(1, sizeof *t);
        const char *tmp = getenv("TMPDIR");

        assert_non_null(t);
        snprintf(t->root, sizeof t->root, "%s/nsbox-cc-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
        assert_non_null(mkdtemp(t->root));
        snprintf(t->lib, sizeof t->lib, "%s/lib", t->root);
        snprintf(t->so, sizeof t->so, "%s/libx.so.1", t->lib);
        snprintf(t->link, sizeof t->link, "%s/libx.so", t->lib);
        snprintf(t->absent, sizeof t->absent, "%s/opt", t->root);
        snprintf(t->cache, sizeof t->cache, "%s/cache", t->root);
        assert_int_equal(mkdir(t->lib, 0755), 0);
        put(t->so, "\177ELF pretend");
        assert_int_equal(symlink("libx.so.1", t->link), 0);
        t->entries[0] = (struct host_entry){ t->link, HOST_SYMLINK, "libx.so.1" };
        t->entries[1] = (struct host_entry){ t->so, HOST_FILE, NULL };
        t->entries[2] = (struct host_entry){ t->lib, HOST_DIR, NULL };
        t->set = (struct host_set){ .v = t->entries, .n = 3 };
        assert_int_equal(cc_open_dir(t->cache, NULL, &t->cache_fd), 0);
        *state = t;
        return 0;
}

static int teardown(void **state)
{
        struct tree *t = *state;
        char cmd[PATH_MAX + 16];

        close(t->cache_fd);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
        assert_int_equal(system(cmd), 0);
        free(t);
        return 0;
}

static void store(struct tree *t)
{
        const char *watch[] = { t->lib, t->absent };
        assert_int_equal(cc_store(t->cache_fd, KEY, &t->set, watch, 2, &future), 0);
}

/* 1 on a hit, and then the set is exactly what was stored. */
static int load(struct tree *t)
{
        struct host_set got = { 0 };
        int r = cc_load(t->cache_fd, KEY, &got);

        if (r == 1) {
                assert_int_equal(got.n, t->set.n);
                for (size_t i = 0; i < got.n; i++) {
                        assert_string_equal(got.v[i].path, t->set.v[i].path);
                        assert_int_equal(got.v[i].kind, t->set.v[i].kind);
                        if (t->set.v[i].target)
                                assert_string_equal(got.v[i].target, t->set.v[i].target);
                        else
                                assert_null(got.v[i].target);
                }
                host_set_free(&got);
        } else {
                assert_int_equal(got.n, 0);
        }
        return r;
}

static char *cache_file(struct tree *t)
{
        static char path[PATH_MAX + 64];
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof path, "%s/nsbox", t->cache);
        d = opendir(path);
        assert_non_null(d);
        while ((de = readdir(d)))
                if (strncmp(de->d_name, "closure-", 8) == 0) {
                        snprintf(path, sizeof path, "%s/nsbox/%s", t->cache, de->d_name);
                        closedir(d);
                        return path;
                }
        closedir(d);
        fail_msg("no cache file");
        return NULL;
}

/* ---- format -------------------------------------------------------------- */

static void test_format_round_trip_and_rejects(void **state)
{
        struct tree *t = *state;
        struct cc_stamp st = { .path = t->so, .present = true, .dev = 1, .ino = 2, .mode = 0100644, .size = 3,
                               .mtime_s = 4, .mtime_ns = 5, .ctime_s = 6, .ctime_ns = 7 };
        struct cc_entry in = { .set = t->set, .stamps = &st, .n_stamps = 1 }, out;
        char *text, *bad;
        size_t len;

        assert_int_equal(cc_format(KEY, &in, &text, &len), 0);
        assert_int_equal(cc_parse(text, len, KEY, &out), 0);
        assert_int_equal(out.set.n, 3);
        assert_string_equal(out.set.v[0].target, "libx.so.1");
        assert_int_equal(out.n_stamps, 1);
        assert_true(out.stamps[0].present && out.stamps[0].ino == 2 && out.stamps[0].ctime_ns == 7);
        cc_entry_free(&out);

        /* another key, a cut file, trailing data, a foreign file: all refused */
        assert_int_equal(cc_parse(text, len, "python:/other", &out), -EBADMSG);
        assert_int_equal(cc_parse(text, len - 4, KEY, &out), -EBADMSG);
        bad = malloc(len + 8);
        assert_non_null(bad);
        memcpy(bad, text, len);
        memcpy(bad + len, "e\tf\t/x\t\n", 8);
        assert_int_equal(cc_parse(bad, len + 8, KEY, &out), -EBADMSG);
        free(bad);
        assert_int_equal(cc_parse("hello\n", 6, KEY, &out), -EBADMSG);
        {
                static const char no_target[] = "nsbox-closure/2\nkey\t" KEY "\ne\tl\t/lib\t\nend\n";
                static const char relative[] = "nsbox-closure/2\nkey\t" KEY "\ne\tf\tlib/x\t\nend\n";
                assert_int_equal(cc_parse(no_target, sizeof no_target - 1, KEY, &out), -EBADMSG);
                assert_int_equal(cc_parse(relative, sizeof relative - 1, KEY, &out), -EBADMSG);
        }
        free(text);

        /* a path that cannot be one line is never cached */
        {
                struct host_entry nl = { "/usr/lib/evil\nname", HOST_FILE, NULL };
                struct cc_entry e2 = { .set = { &nl, 1 } };
                assert_int_equal(cc_format(KEY, &e2, &text, &len), -EINVAL);
        }
}

/* ---- where the cache may live -------------------------------------------- */

static void test_open_dir(void **state)
{
        struct tree *t = *state;
        char home[PATH_MAX + 16], dir[PATH_MAX + 32];
        struct stat st;
        int fd;

        /* created 0700 under $HOME/.cache when there is no $XDG_CACHE_HOME */
        snprintf(home, sizeof home, "%s/home", t->root);
        assert_int_equal(mkdir(home, 0755), 0);
        assert_int_equal(cc_open_dir(NULL, home, &fd), 0);
        close(fd);
        snprintf(dir, sizeof dir, "%s/.cache/nsbox", home);
        assert_int_equal(lstat(dir, &st), 0);
        assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);

        /* a relative $XDG_CACHE_HOME is ignored; no home at all: no cache */
        assert_int_equal(cc_open_dir("rel/cache", home, &fd), 0);
        close(fd);
        assert_true(cc_open_dir(NULL, NULL, &fd) < 0);
        assert_int_equal(fd, -1);
        assert_true(cc_open_dir("relative", "", &fd) < 0);

        /* a directory others can enter or write is not used */
        assert_int_equal(chmod(dir, 0755), 0);
        assert_int_equal(cc_open_dir(NULL, home, &fd), -EPERM);
        assert_int_equal(fd, -1);

        /* nor a symlink planted in its place */
        snprintf(dir, sizeof dir, "%s/x/nsbox", t->root);
        snprintf(home, sizeof home, "%s/x", t->root);
        assert_int_equal(mkdir(home, 0700), 0);
        assert_int_equal(symlink(t->cache, dir), 0);
        assert_true(cc_open_dir(home, NULL, &fd) < 0);
        assert_int_equal(fd, -1);
}

/* ---- invalidation -------------------------------------------------------- */

static void test_hit_then_touched_file_misses(void **state)
{
        struct tree *t = *state;
        struct timespec ts[2] = { { .tv_sec = 1000000 }, { .tv_sec = 1000000 } };

        assert_int_equal(load(t), 0);           /* nothing stored yet */
        store(t);
        assert_int_equal(load(t), 1);
        assert_int_equal(load(t), 1);           /* reading does not consume it */
        /* same size, same inode, only the times differ */
        assert_int_equal(utimensat(AT_FDCWD, t->so, ts, 0), 0);
        assert_int_equal(load(t), 0);
        store(t);
        assert_int_equal(load(t), 1);
}

static void test_replaced_file_misses(void **state)
{
        struct tree *t = *state;
        char tmp[PATH_MAX + 8];

        store(t);
        assert_int_equal(load(t), 1);
        /* an upgrade: same content, new inode renamed over the old one */
        snprintf(tmp, sizeof tmp, "%s.new", t->so);
        put(tmp, "\177ELF pretend");
        assert_int_equal(rename(tmp, t->so), 0);
        assert_int_equal(load(t), 0);
}

static void test_retargeted_symlink_misses(void **state)
{
        struct tree *t = *state;

        store(t);
        assert_int_equal(load(t), 1);
        assert_int_equal(unlink(t->link), 0);
        assert_int_equal(symlink("libx.so.2", t->link), 0);
        assert_int_equal(load(t), 0);
}

static void test_new_library_in_watched_dir_misses(void **state)
{
        struct tree *t = *state;
        char shadow[PATH_MAX + 16];

        store(t);
        assert_int_equal(load(t), 1);
        /* a library that appears next to the closure could now be the one
         * the loader finds first */
        snprintf(shadow, sizeof shadow, "%s/libnew.so.1", t->lib);
        put(shadow, "x");
        assert_int_equal(load(t), 0);
}

static void test_absent_path_appearing_misses(void **state)
{
        struct tree *t = *state;

        store(t);
        assert_int_equal(load(t), 1);
        assert_int_equal(mkdir(t->absent, 0755), 0);
        assert_int_equal(load(t), 0);
}

static void test_changed_during_walk_not_stored(void **state)
{
        struct tree *t = *state;
        const char *watch[] = { t->lib };
        struct timespec now;

        /* the tree was written just now: a walk started now may have seen it
         * half-changed, so the result is not kept */
        clock_gettime(CLOCK_REALTIME, &now);
        assert_int_equal(cc_store(t->cache_fd, KEY, &t->set, watch, 1, &now), -EAGAIN);
        assert_int_equal(load(t), 0);
}

static void test_untrusted_file_ignored(void **state)
{
        struct tree *t = *state;
        char *file;

        store(t);
        file = cache_file(t);
        assert_int_equal(load(t), 1);
        /* writable by the group: anyone in it could point the sandbox at
         * other host files */
        assert_int_equal(chmod(file, 0620), 0);
        assert_int_equal(load(t), 0);
        assert_int_equal(chmod(file, 0600), 0);
        assert_int_equal(load(t), 1);
        if (geteuid() == 0) {
                /* owned by someone else: never trusted, whatever its mode */
                assert_int_equal(chown(file, 65534, 65534), 0);
                assert_int_equal(load(t), 0);
                assert_int_equal(chown(file, 0, 0), 0);
        }
        /* a symlink in its place is not followed */
        {
                char moved[PATH_MAX + 80];
                snprintf(moved, sizeof moved, "%s.real", file);
                assert_int_equal(rename(file, moved), 0);
                assert_int_equal(symlink(moved, file), 0);
                assert_int_equal(load(t), 0);
        }
        /* a different key never reads this entry */
        {
                struct host_set got = { 0 };
                assert_int_equal(cc_load(t->cache_fd, "python:/usr/local/bin/python3", &got), 0);
        }
}

static void test_corrupt_file_misses(void **state)
{
        struct tree *t = *state;
        char *file;

        store(t);
        file = cache_file(t);
        assert_int_equal(truncate(file, 40), 0);
        assert_int_equal(load(t), 0);
        store(t);                               /* and it heals on the next store */
        assert_int_equal(load(t), 1);
}

/* The package list's key: any change to the list is another key (so a
 * cached closure of one list never serves another), and no two lists share
 * one, whatever bytes their paths hold. */
static void test_packages_key(void **state)
{
        static char a[] = "/srv/venv/site-packages/numpy", b[] = "/srv/venv/site-packages/numpy.libs",
                    c[] = "/usr/lib/python3/dist-packages/numpy";
        /* "x;" + "y" and "x" + ";y" (or "1:x") would collide if paths were
         * only joined */
        static char j1[] = "/p;5:/q", j2[] = "/p", j3[] = "/q";
        char *const lists[][3] = { { a }, { a, b }, { b, a }, { c }, { a, c }, { j1 }, { j2, j3 }, { NULL } };
        const size_t lens[] = { 1, 2, 2, 1, 2, 1, 2, 0 };
        char *keys[ARRAY_SIZE(lens)];

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(lens); i++)
                assert_int_equal(cc_packages_key(lists[i], lens[i], &keys[i]), 0);
        for (size_t i = 0; i < ARRAY_SIZE(lens); i++)
                for (size_t k = 0; k < i; k++)
                        if (strcmp(keys[i], keys[k]) == 0)
                                fail_msg("lists %zu and %zu share the key '%s'", k, i, keys[i]);
        /* the same list, the same key (a cache can hit at all) */
        {
                char *again;
                assert_int_equal(cc_packages_key(lists[1], 2, &again), 0);
                assert_string_equal(again, keys[1]);
                free(again);
        }
        /* and an interpreter's key never equals a package list's */
        for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
                assert_string_not_equal(keys[i], KEY);
                free(keys[i]);
        }
}

/* A package list's closure is stored and found under its own key only. */
static void test_packages_key_selects_entry(void **state)
{
        struct tree *t = *state;
        static char a[] = "/srv/a", b[] = "/srv/b";
        char *const one[] = { a }, *const two[] = { a, b };
        char *k1, *k2;
        struct host_set got = { 0 };
        const char *watch[] = { t->lib };

        assert_int_equal(cc_packages_key(one, 1, &k1), 0);
        assert_int_equal(cc_packages_key(two, 2, &k2), 0);
        assert_int_equal(cc_store(t->cache_fd, k1, &t->set, watch, 1, &future), 0);
        assert_int_equal(cc_load(t->cache_fd, k1, &got), 1);
        host_set_free(&got);
        assert_int_equal(cc_load(t->cache_fd, k2, &got), 0);
        assert_int_equal(got.n, 0);
        free(k1);
        free(k2);
}

/* A directory the mount plan covers empty (a stdlib's site-packages) comes
 * back from the cache as one: a cached run hides it as an uncached one. */
static void test_hidden_round_trip(void **state)
{
        struct tree *t = *state;
        char *dirs[] = { t->lib };
        struct host_set got = { 0 };

        t->set.hidden = dirs;
        t->set.n_hidden = 1;
        store(t);
        assert_int_equal(cc_load(t->cache_fd, KEY, &got), 1);
        assert_int_equal(got.n, t->set.n);
        assert_int_equal(got.n_hidden, 1);
        assert_string_equal(got.hidden[0], t->lib);
        host_set_free(&got);
        /* and one without keeps none */
        t->set.n_hidden = 0;
        store(t);
        assert_int_equal(cc_load(t->cache_fd, KEY, &got), 1);
        assert_int_equal(got.n_hidden, 0);
        host_set_free(&got);
        t->set.hidden = NULL;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_format_round_trip_and_rejects, setup, teardown),
                cmocka_unit_test_setup_teardown(test_open_dir, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hit_then_touched_file_misses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_replaced_file_misses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_retargeted_symlink_misses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_new_library_in_watched_dir_misses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_absent_path_appearing_misses, setup, teardown),
                cmocka_unit_test_setup_teardown(test_changed_during_walk_not_stored, setup, teardown),
                cmocka_unit_test_setup_teardown(test_untrusted_file_ignored, setup, teardown),
                cmocka_unit_test_setup_teardown(test_corrupt_file_misses, setup, teardown),
                cmocka_unit_test(test_packages_key),
                cmocka_unit_test_setup_teardown(test_hidden_round_trip, setup, teardown),
                cmocka_unit_test_setup_teardown(test_packages_key_selects_entry, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
