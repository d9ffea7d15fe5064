/* profile/profile_resolve.c — walk the host to find what an executable needs.
 * Reads the host (lstat, readlink, mmap); runs in the supervisor before clone,
 * with the caller's own view and permissions of the host. */
#include "profile/profile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile/closure_cache.h"
#include "profile/profile_internal.h"
#include "util/cleanup.h"
#include "util/readfile.h"

#define MAX_SYMLINK_HOPS 40

/* ld.so's order on Debian/Ubuntu (ld.so.conf.d: libc.conf's /usr/local/lib
 * before the multiarch directories; ldconfig ranks a soname found in both by
 * that order), then the built-in trusted directories. */
static const char *const default_lib_dirs[] = {
        "/usr/local/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
};

static struct host_entry *find(struct host_set *set, const char *path)
{
        for (size_t i = 0; i < set->n; i++)
                if (strcmp(set->v[i].path, path) == 0)
                        return &set->v[i];
        return NULL;
}

static int add(struct host_set *set, const char *path, enum host_kind kind, const char *target)
{
        struct host_entry *nv;

        if (find(set, path))
                return 0;
        nv = realloc(set->v, (set->n + 1) * sizeof *nv);
        if (!nv)
                return -ENOMEM;
        set->v = nv;
        nv[set->n].kind = kind;
        nv[set->n].path = strdup(path);
        nv[set->n].target = target ? strdup(target) : NULL;
        if (!nv[set->n].path || (target && !nv[set->n].target)) {
                free(nv[set->n].path);
                free(nv[set->n].target);
                return -ENOMEM;
        }
        set->n++;
        return 0;
}

/* Drop the entry for @path (mirror() records the object a walk ends at;
 * the caller may want that object in pieces). */
static void remove_entry(struct host_set *set, const char *path)
{
        struct host_entry *he = find(set, path);

        if (!he)
                return;
        free(he->path);
        free(he->target);
        memmove(he, he + 1, (size_t) (set->v + set->n - (he + 1)) * sizeof *he);
        set->n--;
}

/* Normalise an absolute path lexically: collapse "//", ".", "..". */
static void normalise(char *p)
{
        char *out = p, *in = p;

        while (*in) {
                while (*in == '/')
                        in++;
                if (!*in)
                        break;
                if (in[0] == '.' && (in[1] == '/' || !in[1])) {
                        in++;
                        continue;
                }
                if (in[0] == '.' && in[1] == '.' && (in[2] == '/' || !in[2])) {
                        in += 2;
                        while (out > p && *--out != '/')
                                ;
                        continue;
                }
                *out++ = '/';
                while (*in && *in != '/')
                        *out++ = *in++;
        }
        if (out == p)
                *out++ = '/';
        *out = '\0';
}

/* Record @path and every symlink on the way to the object it names. On
 * success *ret_kind says what the final object is and ret_real (PATH_MAX)
 * holds its symlink-free path. */
static int mirror(struct host_set *set, const char *path, char *ret_real, enum host_kind *ret_kind,
                  struct nsb_error *e)
{
        char cur[PATH_MAX], rest[PATH_MAX];
        size_t at = 0;                  /* rest + at: what is left to walk */
        int hops = 0;

        if (path[0] != '/' || strlen(path) >= sizeof rest)
                return nsb_fail(e, NSB_STAGE_PREPARE, EINVAL, "'%s' is not an absolute path", path);
        snprintf(rest, sizeof rest, "%s", path);
        normalise(rest);
        cur[0] = '\0';
        for (;;) {
                char *p = rest + at, *slash, comp[NAME_MAX + 1], cand[PATH_MAX];
                struct stat st;
                size_t clen;

                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                slash = strchr(p, '/');
                clen = slash ? (size_t) (slash - p) : strlen(p);
                if (clen > NAME_MAX)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENAMETOOLONG, "'%s': name too long", path);
                memcpy(comp, p, clen);
                comp[clen] = '\0';
                at = (size_t) (p + clen - rest);
                if ((size_t) snprintf(cand, sizeof cand, "%s/%s", cur, comp) >= sizeof cand)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENAMETOOLONG, "'%s': path too long", path);
                if (lstat(cand, &st) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, errno, "'%s'", cand);
                if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX], next[PATH_MAX * 2];
                        ssize_t n = readlink(cand, target, sizeof target - 1);
                        if (n < 0)
                                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "readlink '%s'", cand);
                        target[n] = '\0';
                        if (++hops > MAX_SYMLINK_HOPS)
                                return nsb_fail(e, NSB_STAGE_PREPARE, ELOOP, "'%s': too many symlinks", path);
                        if (add(set, cand, HOST_SYMLINK, target) < 0)
                                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                        if (target[0] == '/')
                                snprintf(next, sizeof next, "%s%s", target, rest + at);
                        else
                                snprintf(next, sizeof next, "%s/%s%s", cur, target, rest + at);
                        if (strlen(next) >= sizeof rest)
                                return nsb_fail(e, NSB_STAGE_PREPARE, ENAMETOOLONG, "'%s': path too long", path);
                        memcpy(rest, next, strlen(next) + 1);
                        normalise(rest);
                        at = 0;
                        cur[0] = '\0';
                        continue;
                }
                memcpy(cur, cand, strlen(cand) + 1);
                if (!rest[at] || strcmp(rest + at, "/") == 0) {
                        *ret_kind = S_ISDIR(st.st_mode) ? HOST_DIR : HOST_FILE;
                        break;
                }
                if (!S_ISDIR(st.st_mode))
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOTDIR, "'%s': '%s' is not a directory", path, cand);
        }
        if (!cur[0])
                return nsb_fail(e, NSB_STAGE_PREPARE, EINVAL, "'%s' names the root directory", path);
        snprintf(ret_real, PATH_MAX, "%s", cur);
        if (add(set, cur, *ret_kind, NULL) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        return 0;
}

static int read_deps(const char *path, struct elf_deps *deps, struct nsb_error *e)
{
        AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        void *map;
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "open '%s'", path);
        if (fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "stat '%s'", path);
        if (!S_ISREG(st.st_mode) || st.st_size < 64) {
                memset(deps, 0, sizeof *deps);
                return 0;
        }
        map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "mmap '%s'", path);
        r = elf_deps_parse(map, (size_t) st.st_size, deps, e);
        munmap(map, (size_t) st.st_size);
        if (r == -ENOEXEC) {   /* a script or data file: no closure */
                memset(deps, 0, sizeof *deps);
                return 0;
        }
        return r < 0 ? nsb_error_prefix(e, "'%s'", path) : 0;
}

/* Where ld.so would find @name for an object whose DT_RUNPATH is in @d and
 * which lives in @origin: its RUNPATH, then the default directories. 0 and
 * the path in @ret (PATH_MAX); *ret_via_origin says it was found through a
 * $ORIGIN entry (a wheel's bundled libraries). */
static int find_lib(const struct elf_deps *d, const char *origin, const char *name, char *ret, bool *ret_via_origin)
{
        for (size_t i = 0; i < d->n_runpath + ARRAY_SIZE(default_lib_dirs); i++) {
                const char *dir = i < d->n_runpath ? d->runpath[i] : default_lib_dirs[i - d->n_runpath];
                char expanded[PATH_MAX];

                if (elf_expand_origin(dir, origin, expanded, sizeof expanded) < 0)
                        continue;
                if ((size_t) snprintf(ret, PATH_MAX, "%s/%s", expanded, name) >= PATH_MAX)
                        continue;
                if (access(ret, R_OK) == 0) {
                        if (ret_via_origin)
                                *ret_via_origin = i < d->n_runpath && strstr(dir, "ORIGIN") != NULL;
                        return 0;
                }
        }
        return -ENOENT;
}

/* A library a wheel bundles (numpy.libs/libopenblas...so, found through
 * RUNPATH $ORIGIN/../../numpy.libs) may read files beside it: its whole
 * "*.libs" directory is provided, not only the libraries named. */
static int add_bundled_dir(struct host_set *set, const char *lib, struct nsb_error *e)
{
        char dir[PATH_MAX], real[PATH_MAX];
        const char *base;
        enum host_kind kind;
        char *slash;
        size_t n;

        snprintf(dir, sizeof dir, "%s", lib);
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = '\0';
        base = strrchr(dir, '/') + 1;
        n = strlen(base);
        if (n <= 5 || strcmp(base + n - 5, ".libs") != 0)
                return 0;
        return mirror(set, dir, real, &kind, e);
}

/* Worklist over ELF files: each file's interpreter and needed libraries are
 * mirrored and queued. No recursion: the list may be long. */
static int add_closure(struct host_set *set, const char *first, bool bundled_dirs, struct nsb_error *e)
{
        char **work = NULL;
        size_t n_work = 0, done = 0;
        int r = 0;

        if (!(work = malloc(sizeof *work)) || !(work[0] = strdup(first))) {
                free(work);
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        }
        n_work = 1;
        while (done < n_work && r >= 0) {
                const char *cur = work[done++];
                struct elf_deps d;
                char origin[PATH_MAX];
                const char *slash;

                r = read_deps(cur, &d, e);
                if (r < 0)
                        break;
                slash = strrchr(cur, '/');
                snprintf(origin, sizeof origin, "%.*s", (int) (slash - cur), cur);
                for (size_t i = 0; i < d.n_needed + (d.interp ? 1 : 0) && r >= 0; i++) {
                        const char *name = i < d.n_needed ? d.needed[i] : d.interp;
                        char lib[PATH_MAX], real[PATH_MAX];
                        enum host_kind kind;
                        bool seen = false, via_origin = false;

                        if (strchr(name, '/'))
                                snprintf(lib, sizeof lib, "%s", name);
                        else if (find_lib(&d, origin, name, lib, &via_origin) < 0) {
                                r = nsb_fail(e, NSB_STAGE_PREPARE, ENOENT,
                                             "'%s' needs '%s', which is not in the library path", cur, name);
                                break;
                        }
                        if (bundled_dirs && via_origin && (r = add_bundled_dir(set, lib, e)) < 0)
                                break;
                        r = mirror(set, lib, real, &kind, e);
                        if (r < 0)
                                break;
                        for (size_t k = 0; k < n_work; k++)
                                seen = seen || strcmp(work[k], real) == 0;
                        if (!seen) {
                                char **nw = realloc(work, (n_work + 1) * sizeof *nw);
                                if (!nw || !(nw[n_work] = strdup(real))) {
                                        if (nw)
                                                work = nw;
                                        r = nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                                        break;
                                }
                                work = nw;
                                n_work++;
                        }
                }
                elf_deps_free(&d);
        }
        for (size_t k = 0; k < n_work; k++)
                free(work[k]);
        free(work);
        return r < 0 ? r : 0;
}

int profile_add_executable(struct host_set *set, const char *path, struct nsb_error *e)
{
        char real[PATH_MAX];
        enum host_kind kind;
        int r = mirror(set, path, real, &kind, e);

        if (r < 0)
                return r;
        if (kind != HOST_FILE)
                return nsb_fail(e, NSB_STAGE_PREPARE, EISDIR, "'%s' is not a file", path);
        return add_closure(set, real, false, e);
}

int profile_add_libraries_of(struct host_set *set, const char *path, struct nsb_error *e)
{
        char real[PATH_MAX];

        if (!realpath(path, real))
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "'%s'", path);
        return add_closure(set, real, false, e);
}

int profile_add_module_libraries(struct host_set *set, const char *so, struct nsb_error *e)
{
        return add_closure(set, so, true, e);
}

const char *const *profile_lib_dirs(size_t *ret_n)
{
        *ret_n = ARRAY_SIZE(default_lib_dirs);
        return default_lib_dirs;
}

static bool is_python(const char *path)
{
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        return strncmp(base, "python", 6) == 0;
}

/* An interpreter named by a "#!" line, or by env on such a line. */
static int add_interpreter(struct host_set *set, const char *path, const char *sandbox_path, unsigned depth,
                           struct nsb_error *e);

/* The "#!" line of the file @path, as shebang_parse; 0 also when the file
 * cannot be read (execute-only: the kernel will say what it finds). */
static int read_shebang(const char *path, char **ret_interp, char **ret_arg)
{
        AUTOCLOSE int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        char head[256];
        ssize_t n;

        *ret_interp = *ret_arg = NULL;
        if (fd < 0)
                return 0;
        n = read(fd, head, sizeof head);
        return n <= 0 ? 0 : shebang_parse(head, (size_t) n, ret_interp, ret_arg);
}

static int add_script_interpreter(struct host_set *set, const char *path, const char *sandbox_path, unsigned depth,
                                  struct nsb_error *e)
{
        AUTOFREE char *interp = NULL, *arg = NULL;
        int r = read_shebang(path, &interp, &arg);

        if (r == -ENOMEM)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        if (r <= 0 || interp[0] != '/')
                return 0;       /* not a script, or one the kernel refuses itself */
        /* binfmt_script's own bound (BINPRM_MAX_RECURSION) */
        if (depth >= 4)
                return nsb_fail(e, NSB_STAGE_PREPARE, ELOOP, "'%s': too many levels of #! interpreters", path);
        r = add_interpreter(set, interp, sandbox_path, depth + 1, e);
        if (r < 0)
                return depth ? r : nsb_error_prefix(e, "'%s' (#!%s)", path, interp);
        if (arg && !strchr(arg, ' ') && arg[0] != '-' && strcmp(strrchr(interp, '/'), "/env") == 0) {
                AUTOFREE char *target = NULL;

                if (profile_which(arg, sandbox_path, &target, e) < 0)
                        return nsb_error_prefix(e, "'%s' (#!%s %s)", path, interp, arg);
                r = add_interpreter(set, target, sandbox_path, depth + 1, e);
                if (r < 0)
                        return nsb_error_prefix(e, "'%s' (#!%s %s)", path, interp, arg);
        }
        return 0;
}

static int add_interpreter(struct host_set *set, const char *path, const char *sandbox_path, unsigned depth,
                           struct nsb_error *e)
{
        int r = is_python(path) ? profile_add_python(set, path, NULL, e) : profile_add_executable(set, path, e);

        return r < 0 ? r : add_script_interpreter(set, path, sandbox_path, depth, e);
}

int profile_add_command(struct host_set *set, const char *path, const char *sandbox_path, struct nsb_error *e)
{
        char real[PATH_MAX];
        int r;

        /* `nsbox run -- /usr/bin/python3 ...` (or python3.11, a symlink to
         * it, python3 on PATH) needs its standard library as much as a #!
         * python script does. A "python..." that is not a CPython binary
         * (python3-config, a pyenv shim) is an ordinary command. */
        if (is_python(path) || (realpath(path, real) && is_python(real))) {
                struct nsb_error ignored;

                if (profile_add_python(set, path, NULL, &ignored) == 0)
                        return 0;
        }
        r = profile_add_executable(set, path, e);

        return r < 0 ? r : add_script_interpreter(set, path, sandbox_path, 0, e);
}

/* <prefix>/lib/pythonX.Y holding os.py (CPython's getpath landmark) into
 * @ret: the version @major.@minor if given (not 0), else the newest. */
static bool stdlib_under(const char *prefix, unsigned major, unsigned minor, char *ret)
{
        char cand[PATH_MAX];
        AUTO(closedir) DIR *d = NULL;
        struct dirent *de;
        unsigned best_minor = 0;
        bool found = false;

        if (major) {
                snprintf(cand, sizeof cand, "%s/lib/python%u.%u/os.py", prefix, major, minor);
                if (access(cand, R_OK) == 0) {
                        snprintf(ret, PATH_MAX, "%s/lib/python%u.%u", prefix, major, minor);
                        return true;
                }
        }
        snprintf(cand, sizeof cand, "%s/lib", prefix);
        d = opendir(cand);
        while (d && (de = readdir(d))) {
                char ospy[PATH_MAX];
                if (sscanf(de->d_name, "python3.%u", &minor) != 1)
                        continue;
                snprintf(ospy, sizeof ospy, "%s/lib/%s/os.py", prefix, de->d_name);
                if (access(ospy, R_OK) == 0 && (!found || minor > best_minor)) {
                        best_minor = minor;
                        found = true;
                        snprintf(ret, PATH_MAX, "%s/lib/%s", prefix, de->d_name);
                }
        }
        return found;
}

/* The directory above @path's directory (/usr/bin/python3 -> /usr). */
static void prefix_of(const char *path, char *ret)
{
        char *slash;

        snprintf(ret, PATH_MAX, "%s", path);
        if ((slash = strrchr(ret, '/')))
                *slash = '\0';
        if ((slash = strrchr(ret, '/')) && slash != ret)
                *slash = '\0';
}

/* The standard library of an interpreter at <prefix>/bin/pythonX.Y lives in
 * <prefix>/lib/pythonX.Y (CPython's getpath looks for os.py there). In a
 * venv CPython looks under the base interpreter's prefix instead, from
 * pyvenv.cfg's "home" (a --copies venv's binary has no stdlib beside it). */
static int find_stdlib(const char *interpreter, const char *real, char *ret, struct nsb_error *e)
{
        char prefix[PATH_MAX], cfg[PATH_MAX], home[PATH_MAX];
        const char *base = strrchr(real, '/') + 1;
        unsigned major = 0, minor = 0;

        if (profile_find_pyvenv_cfg(interpreter, cfg) == 0) {
                AUTOFREE char *text = NULL;
                struct nsb_error ignored;
                size_t len = 0;
                unsigned vmajor, vminor;

                if (read_file(cfg, 64 * 1024, &text, &len, &ignored) == 0 &&
                    pyvenv_parse(text, len, home, sizeof home, &vmajor, &vminor) == 0 && home[0] == '/') {
                        char bin_file[PATH_MAX + 2];
                        snprintf(bin_file, sizeof bin_file, "%s/x", home);
                        prefix_of(bin_file, prefix);
                        if (stdlib_under(prefix, vmajor, vminor, ret))
                                return 0;
                }
        }
        if (sscanf(base, "python%u.%u", &major, &minor) != 2)
                major = minor = 0;
        prefix_of(real, prefix);
        if (stdlib_under(prefix, major, minor, ret))
                return 0;
        return nsb_fail(e, NSB_STAGE_PREPARE, ENOENT,
                        "no standard library (lib/python3.*/os.py) under '%s' for interpreter '%s'", prefix, real);
}

static bool is_packages_dir(const char *name)
{
        return strcmp(name, "site-packages") == 0 || strcmp(name, "dist-packages") == 0;
}

/* The standard library directory @stdlib (symlink-free), mounted whole,
 * with the third-party packages installed inside it (Debian's dist-packages
 * under /usr/lib/python3.11, a pyenv or conda tree's site-packages) recorded
 * in set->hidden: the site module puts them on sys.path whenever they exist,
 * and an unnamed package must be absent (an ImportError), never half there.
 * One whole bind and a cover each costs two mounts; listing the directory
 * entry by entry cost ~200 (+5 ms a cold start). A packages entry that is a
 * symlink is hidden where it leads when that is inside @stdlib (elsewhere
 * the link dangles unless the profile mounts its target). */
static int add_stdlib(struct host_set *set, const char *stdlib, struct nsb_error *e)
{
        AUTO(closedir) DIR *d = opendir(stdlib);
        struct dirent *de;

        if (!d)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "standard library '%s'", stdlib);
        if (add(set, stdlib, HOST_DIR, NULL) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        while ((de = readdir(d))) {
                char path[PATH_MAX], real[PATH_MAX];
                struct stat st;

                if (!is_packages_dir(de->d_name))
                        continue;
                if ((size_t) snprintf(path, sizeof path, "%s/%s", stdlib, de->d_name) >= sizeof path)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENAMETOOLONG, "'%s/%s'", stdlib, de->d_name);
                if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode) || !realpath(path, real) ||
                    strncmp(real, stdlib, strlen(stdlib)) != 0 || real[strlen(stdlib)] != '/')
                        continue;       /* dangling, not a directory, or outside what is mounted */
                if (host_set_add_hidden(set, real) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        }
        return 0;
}

int profile_script_python(const char *path, char *ret, size_t size)
{
        AUTOFREE char *interp = NULL, *arg = NULL;
        int r = read_shebang(path, &interp, &arg);

        if (r <= 0)
                return r == -ENOMEM ? r : 0;
        ret[0] = '\0';
        if (interp[0] == '/' && is_python(interp) && (size_t) snprintf(ret, size, "%s", interp) >= size)
                ret[0] = '\0';
        return 1;
}

/* The interpreter is exec'd as "INTERP -I -B PROGRAM": it must be the Python
 * binary itself. A script (pydoc3, a pyenv shim, a wrapper) would be handed
 * those arguments, and its own "#!" interpreter is not in the sandbox. */
static int require_binary(const char *interpreter, const char *real, struct nsb_error *e)
{
        AUTOCLOSE int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        char head[4], hint[PATH_MAX];
        int r;

        if (fd < 0 || read(fd, head, sizeof head) != (ssize_t) sizeof head || memcmp(head, "\177ELF", 4) == 0)
                return 0;       /* unreadable or short: the walk below says what it finds */
        r = profile_script_python(real, hint, sizeof hint);
        if (r == -ENOMEM)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        if (r == 1 && hint[0])
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOEXEC,
                                "interpreter '%s' is a script, not a Python binary: its #! line runs %s; pass "
                                "that with --interpreter %s",
                                interpreter, hint, hint);
        return nsb_fail(e, NSB_STAGE_PREPARE, ENOEXEC, "interpreter '%s' is %s, not a Python binary", interpreter,
                        r == 1 ? "a script" : "not an ELF file");
}

static int add_python(struct host_set *set, const char *interpreter, bool use_cache, char **ret_real,
                      struct nsb_error *e)
{
        char real[PATH_MAX], stdlib[PATH_MAX], dynload[PATH_MAX], sreal[PATH_MAX], key[PATH_MAX + 8], cfg[PATH_MAX];
        AUTOCLOSE int cache_fd = -1;
        struct timespec started;
        enum host_kind kind;
        AUTO(closedir) DIR *d = NULL;
        struct dirent *de;
        int r;

        if (!realpath(interpreter, real))
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "interpreter '%s'", interpreter);
        if (access(real, X_OK) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "interpreter '%s' is not executable", real);
        r = require_binary(interpreter, real, e);
        if (r < 0)
                return r;
        /* The walk below costs ~7 ms; a valid cached result, a few hundred us. */
        if (use_cache && set->n == 0 && (size_t) snprintf(key, sizeof key, "python:%s", interpreter) < sizeof key) {
                clock_gettime(CLOCK_REALTIME, &started);
                if (cc_open_dir(getenv("XDG_CACHE_HOME"), getenv("HOME"), &cache_fd) == 0 &&
                    cc_load(cache_fd, key, set) == 1)
                        goto done;
        }
        r = profile_add_executable(set, interpreter, e);
        if (r < 0)
                return nsb_error_prefix(e, "interpreter '%s'", interpreter);
        r = find_stdlib(interpreter, real, stdlib, e);
        if (r < 0)
                return r;
        /* A venv's interpreter is one only with its pyvenv.cfg (sys.prefix,
         * its site-packages), whichever command runs it (nsbox run too). */
        if (profile_find_pyvenv_cfg(interpreter, cfg) == 0 && (r = profile_add_path(set, cfg, e)) < 0)
                return nsb_error_prefix(e, "virtual environment of '%s'", interpreter);
        /* the symlinks on the way to it; then the directory itself */
        r = mirror(set, stdlib, sreal, &kind, e);
        if (r < 0)
                return r;
        remove_entry(set, sreal);
        r = add_stdlib(set, sreal, e);
        if (r < 0)
                return r;
        /* Extension modules load their own libraries (libssl, libffi, ...). */
        snprintf(dynload, sizeof dynload, "%s/lib-dynload", sreal);
        d = opendir(dynload);
        while (d && (de = readdir(d))) {
                char so[PATH_MAX];
                size_t n = strlen(de->d_name);
                if (n < 4 || strcmp(de->d_name + n - 3, ".so") != 0)
                        continue;
                snprintf(so, sizeof so, "%s/%s", dynload, de->d_name);
                r = add_closure(set, so, false, e);
                if (r == -ENOENT) {
                        /* A module whose library is not installed can't be
                         * imported on the host either; leave it out. */
                        continue;
                }
                if (r < 0)
                        return r;
        }
        /* glibc dlopen()s libgcc_s.so.1 to unwind a thread in pthread_exit();
         * CPython ends that way each daemon thread that wakes while the
         * interpreter shuts down. It is in no DT_NEEDED list, and without it
         * glibc aborts a correct program ("libgcc_s.so.1 must be installed
         * for pthread_exit to work"). */
        {
                const struct elf_deps none = { 0 };
                char gcc_s[PATH_MAX];
                if (find_lib(&none, "/", "libgcc_s.so.1", gcc_s, NULL) == 0) {
                        r = profile_add_executable(set, gcc_s, e);
                        if (r < 0)
                                return r;
                }
        }
        if (cache_fd >= 0)
                (void) cc_store(cache_fd, key, set, default_lib_dirs, ARRAY_SIZE(default_lib_dirs), &started);
done:
        if (ret_real && !(*ret_real = strdup(real)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        return 0;
}

int profile_add_python(struct host_set *set, const char *interpreter, char **ret_real, struct nsb_error *e)
{
        return add_python(set, interpreter, true, ret_real, e);
}

int profile_add_python_uncached(struct host_set *set, const char *interpreter, char **ret_real, struct nsb_error *e)
{
        return add_python(set, interpreter, false, ret_real, e);
}

int profile_add_path(struct host_set *set, const char *path, struct nsb_error *e)
{
        char real[PATH_MAX];
        enum host_kind kind;

        return mirror(set, path, real, &kind, e);
}

int host_set_add_all(struct host_set *set, const struct host_set *src, struct nsb_error *e)
{
        for (size_t i = 0; i < src->n; i++)
                if (add(set, src->v[i].path, src->v[i].kind, src->v[i].target) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        for (size_t i = 0; i < src->n_hidden; i++)
                if (host_set_add_hidden(set, src->hidden[i]) < 0)
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        /* one root per set: an image's entries never mix with the host's */
        if (src->root && !set->root && !(set->root = strdup(src->root)))
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        return 0;
}
