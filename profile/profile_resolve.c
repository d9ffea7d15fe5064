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
#include "util/cleanup.h"

#define MAX_SYMLINK_HOPS 40

static const char *const default_lib_dirs[] = {
        "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
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

static int find_lib(const struct elf_deps *d, const char *origin, const char *name, char *ret)
{
        for (size_t i = 0; i < d->n_runpath + ARRAY_SIZE(default_lib_dirs); i++) {
                const char *dir = i < d->n_runpath ? d->runpath[i] : default_lib_dirs[i - d->n_runpath];
                char expanded[PATH_MAX];

                if (strncmp(dir, "$ORIGIN", 7) == 0)
                        snprintf(expanded, sizeof expanded, "%s%s", origin, dir + 7);
                else
                        snprintf(expanded, sizeof expanded, "%s", dir);
                if ((size_t) snprintf(ret, PATH_MAX, "%s/%s", expanded, name) >= PATH_MAX)
                        continue;
                if (access(ret, R_OK) == 0)
                        return 0;
        }
        return -ENOENT;
}

/* Worklist over ELF files: each file's interpreter and needed libraries are
 * mirrored and queued. No recursion: the list may be long. */
static int add_closure(struct host_set *set, const char *first, struct nsb_error *e)
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
                        bool seen = false;

                        if (strchr(name, '/'))
                                snprintf(lib, sizeof lib, "%s", name);
                        else if (find_lib(&d, origin, name, lib) < 0) {
                                r = nsb_fail(e, NSB_STAGE_PREPARE, ENOENT,
                                             "'%s' needs '%s', which is not in the library path", cur, name);
                                break;
                        }
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
        return add_closure(set, real, e);
}

int profile_add_libraries_of(struct host_set *set, const char *path, struct nsb_error *e)
{
        char real[PATH_MAX];

        if (!realpath(path, real))
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "'%s'", path);
        return add_closure(set, real, e);
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

/* The standard library of an interpreter at <prefix>/bin/pythonX.Y lives in
 * <prefix>/lib/pythonX.Y (CPython's getpath looks for os.py there). */
static int find_stdlib(const char *real, char *ret, struct nsb_error *e)
{
        char prefix[PATH_MAX], cand[PATH_MAX];
        const char *base = strrchr(real, '/') + 1;
        unsigned major, minor;
        char *slash;
        AUTO(closedir) DIR *d = NULL;
        struct dirent *de;
        unsigned best_minor = 0;
        bool found = false;

        snprintf(prefix, sizeof prefix, "%s", real);
        slash = strrchr(prefix, '/');
        *slash = '\0';                          /* .../bin */
        slash = strrchr(prefix, '/');
        if (slash)
                *slash = '\0';                  /* prefix */
        if (sscanf(base, "python%u.%u", &major, &minor) == 2) {
                snprintf(cand, sizeof cand, "%s/lib/python%u.%u/os.py", prefix, major, minor);
                if (access(cand, R_OK) == 0) {
                        snprintf(ret, PATH_MAX, "%s/lib/python%u.%u", prefix, major, minor);
                        return 0;
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
        return found ? 0 : nsb_fail(e, NSB_STAGE_PREPARE, ENOENT,
                                    "no standard library (lib/python3.*/os.py) under '%s' for interpreter '%s'",
                                    prefix, real);
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
        char real[PATH_MAX], stdlib[PATH_MAX], dynload[PATH_MAX], sreal[PATH_MAX], key[PATH_MAX + 8];
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
        r = find_stdlib(real, stdlib, e);
        if (r < 0)
                return r;
        r = mirror(set, stdlib, sreal, &kind, e);
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
                r = add_closure(set, so, e);
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
                if (find_lib(&none, "/", "libgcc_s.so.1", gcc_s) == 0) {
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
        return 0;
}
