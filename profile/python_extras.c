/* profile/python_extras.c — what a python profile adds to the interpreter's
 * closure: a virtual environment's pyvenv.cfg and the packages the profile
 * names, each with the native libraries its extension modules load. Reads
 * the host (access, opendir, lstat through profile_add_path).
 *
 * A venv (python3 -m venv) is a directory with pyvenv.cfg, bin/python (a
 * symlink to the base interpreter, or a copy with --copies) and
 * lib/pythonX.Y/site-packages. CPython finds pyvenv.cfg next to argv[0] or
 * one directory up, takes the standard library from the base interpreter's
 * prefix ("home = ..."), and puts the venv's site-packages on sys.path. So
 * inside the sandbox we need: the bin/python symlink chain (mirrored by
 * profile_add_python), pyvenv.cfg, and of site-packages only the packages
 * the profile names, each at its own host path; argv[0] must be the venv's
 * path (cfg_python_argv does that).
 *
 * A named package brings its whole native closure: every extension module
 * (*.so) under it, and what each needs (DT_NEEDED through RUNPATH, $ORIGIN
 * and symlink chains such as /etc/alternatives; a wheel's bundled "*.libs"
 * directory whole). Walking a large package costs milliseconds, so the result
 * is cached like the interpreter's closure, keyed on the package list
 * (cc_packages_key) and watching every directory walked.
 */
#include "profile/profile.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/closure_cache.h"
#include "profile/profile_internal.h"
#include "util/cleanup.h"
#include "util/strv.h"

int profile_find_pyvenv_cfg(const char *interpreter, char *ret)
{
        char dir[PATH_MAX];
        char *slash;

        if (interpreter[0] != '/' || strlen(interpreter) >= sizeof dir)
                return -ENOENT;
        snprintf(dir, sizeof dir, "%s", interpreter);
        for (int up = 0; up < 2; up++) {
                slash = strrchr(dir, '/');
                if (!slash || slash == dir)
                        return -ENOENT;
                *slash = '\0';
                if ((size_t) snprintf(ret, PATH_MAX, "%s/pyvenv.cfg", dir) < PATH_MAX && access(ret, R_OK) == 0)
                        return 0;
        }
        return -ENOENT;
}

struct dir_list {
        char **v;
        size_t n;
};

static void dir_list_free(struct dir_list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        *l = (struct dir_list){ 0 };
}

static int dir_list_push(struct dir_list *l, const char *path)
{
        return strv_add(&l->v, &l->n, path, false) < 0 ? -ENOMEM : 0;
}

static bool is_extension(const char *name)
{
        size_t n = strlen(name);

        return n > 3 && strcmp(name + n - 3, ".so") == 0;
}

/* One extension module's libraries. One whose library is not installed
 * cannot be imported on the host either: left out, as lib-dynload's are. */
static int add_module(struct host_set *set, const char *so, struct nsb_error *e)
{
        int r = profile_add_module_libraries(set, so, e);

        if (r == -ENOENT) {
                nsb_error_clear(e);
                return 0;
        }
        return r;
}

/* Every extension module under the directory @pkg (symlink-free), breadth
 * first without following symlinks; each directory walked is appended to
 * @walked (a cache watches them: a module added there changes its mtime). */
static int add_package_modules(struct host_set *set, const char *pkg, struct dir_list *walked, struct nsb_error *e)
{
        size_t next = walked->n;

        if (dir_list_push(walked, pkg) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        while (next < walked->n) {
                char dir[PATH_MAX];
                AUTO(closedir) DIR *d = NULL;
                struct dirent *de;

                snprintf(dir, sizeof dir, "%s", walked->v[next++]);
                /* What the caller cannot read, its own python cannot import. */
                if (!(d = opendir(dir)))
                        continue;
                while ((de = readdir(d))) {
                        char path[PATH_MAX];
                        unsigned char type = de->d_type;
                        struct stat st;
                        int r = 0;

                        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                                continue;
                        if ((size_t) snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= sizeof path)
                                continue;
                        if (type == DT_UNKNOWN && lstat(path, &st) == 0)
                                type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
                        if (type == DT_DIR)
                                r = dir_list_push(walked, path) < 0
                                            ? nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory")
                                            : 0;
                        else if (type == DT_REG && is_extension(de->d_name))
                                r = add_module(set, path, e);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* The packages and their native closure, walked afresh. */
static int resolve_packages(struct host_set *set, char *const *packages, size_t n_packages, struct dir_list *walked,
                            struct nsb_error *e)
{
        for (size_t i = 0; i < n_packages; i++) {
                char real[PATH_MAX];
                struct stat st;
                int r = profile_add_path(set, packages[i], e);

                if (r < 0)
                        return r;
                if (!realpath(packages[i], real) || stat(real, &st) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "'%s'", packages[i]);
                if (S_ISDIR(st.st_mode))
                        r = add_package_modules(set, real, walked, e);
                else if (is_extension(real))
                        r = add_module(set, real, e);
                if (r < 0)
                        return nsb_error_prefix(e, "'%s'", packages[i]);
        }
        return 0;
}

/* The named packages' host set, from the cache when it still holds. */
static int add_packages(struct host_set *set, char *const *packages, size_t n_packages, struct nsb_error *e)
{
        struct host_set pk = { 0 };
        struct dir_list walked = { 0 };
        AUTOCLOSE int cache_fd = -1;
        AUTOFREE char *key = NULL;
        struct timespec started;
        int r;

        clock_gettime(CLOCK_REALTIME, &started);
        if (cc_packages_key(packages, n_packages, &key) == 0 &&
            cc_open_dir(getenv("XDG_CACHE_HOME"), getenv("HOME"), &cache_fd) == 0 && cc_load(cache_fd, key, &pk) == 1) {
                r = host_set_add_all(set, &pk, e);
                host_set_free(&pk);
                return r;
        }
        r = resolve_packages(&pk, packages, n_packages, &walked, e);
        if (r == 0 && cache_fd >= 0 && key) {
                size_t n_libs;
                const char *const *libs = profile_lib_dirs(&n_libs);
                const char **watch = malloc((n_libs + walked.n + 1) * sizeof *watch);

                if (watch) {
                        memcpy(watch, libs, n_libs * sizeof *watch);
                        memcpy(watch + n_libs, walked.v, walked.n * sizeof *watch);
                        (void) cc_store(cache_fd, key, &pk, watch, n_libs + walked.n, &started);
                        free(watch);
                }
        }
        if (r == 0)
                r = host_set_add_all(set, &pk, e);
        host_set_free(&pk);
        dir_list_free(&walked);
        return r;
}

int profile_add_python_extras(struct host_set *set, const char *interpreter, char *const *packages,
                              size_t n_packages, struct nsb_error *e)
{
        char cfg[PATH_MAX];
        int r;

        if (interpreter && profile_find_pyvenv_cfg(interpreter, cfg) == 0) {
                r = profile_add_path(set, cfg, e);
                if (r < 0)
                        return nsb_error_prefix(e, "virtual environment of '%s'", interpreter);
        }
        if (n_packages == 0)
                return 0;
        r = add_packages(set, packages, n_packages, e);
        return r < 0 ? nsb_error_prefix(e, "package") : 0;
}
