/* config/policy_load.c — find and read a profile, then resolve it under the
 * command line. Reads files (the profile, stat of mount sources); everything
 * else is policy_parse.c and policy_render.c.
 *
 * Lookup of --profile X:
 *   1. X contains '/' or ends in ".ini": the file X;
 *   2. X is a built-in (python, minimal): compiled in, never shadowed, so a
 *      file on disk cannot change what `--profile python` means;
 *   3. else X.ini in the system directory (/etc/nsbox/profiles), then in the
 *      user's ($XDG_CONFIG_HOME or ~/.config, + /nsbox/profiles); the first
 *      found is used, so an administrator's profile cannot be shadowed by a user.
 */
#include "config/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/statfs.h>   /* fstatfs: Linux's (glibc and musl alike) */
#define NSB_PIPEFS_MAGIC 0x50495045   /* linux/magic.h's PIPEFS_MAGIC: no kernel headers needed */
#endif

#include "path/path.h"
#include "config/stdin_plan.h"
#include "util/cleanup.h"
#include "util/readfile.h"

static bool host_path_exists(const char *path, void *user)
{
        struct stat st;
        (void) user;
        return stat(path, &st) == 0;
}

/* A profile name as a message quotes it: cut after 48 characters, so the
 * message keeps what it says about the search path. */
#define NAME_QUOTE(n) (int) (strlen(n) > 48 ? 48 : strlen(n)), (n), strlen(n) > 48 ? "..." : ""

static bool looks_like_path(const char *s)
{
        size_t n = strlen(s);
        return strchr(s, '/') || (n > 4 && strcmp(s + n - 4, ".ini") == 0);
}

static bool valid_name(const char *s)
{
        return *s && *s != '.' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == strlen(s);
}

/* The first NAME.ini on the search path, into @ret (PATH_MAX). */
static int search(const char *name, char *ret, size_t size, struct nsb_error *e)
{
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        char user_dir[4096] = "";
        bool here;

        if (xdg && xdg[0] == '/')
                snprintf(user_dir, sizeof user_dir, "%s/nsbox/profiles", xdg);
        else if (home && home[0] == '/')
                snprintf(user_dir, sizeof user_dir, "%s/.config/nsbox/profiles", home);
        snprintf(ret, size, "%s/%s.ini", CFG_PROFILE_SYSTEM_DIR, name);
        if (access(ret, F_OK) == 0)
                return 0;
        if (user_dir[0]) {
                snprintf(ret, size, "%s/%s.ini", user_dir, name);
                if (access(ret, F_OK) == 0)
                        return 0;
        }
        here = access(name, F_OK) == 0;
        /* The message names every place looked in: no errno text after it.
         * A file of that name here is read only as a path ("./x.conf"). */
        return nsb_fail(e, NSB_STAGE_CONFIG, 0,
                        "profile '%.*s%s' not found: not a built-in (python, minimal), and no %.*s%s.ini in %s%s%s"
                        "%s%s%s", NAME_QUOTE(name), NAME_QUOTE(name), CFG_PROFILE_SYSTEM_DIR,
                        user_dir[0] ? " or " : "", user_dir,
                        here ? " (to read the file in this directory, give its path: ./" : "", here ? name : "",
                        here ? ")" : "");
}

int cfg_profile_load(const char *name, enum nsb_cmd cmd, struct nsb_config *ret, struct nsb_error *e)
{
        struct cfg_profile_opts opts = { .file = name, .exists = host_path_exists };
        const char *builtin = looks_like_path(name) ? NULL : cfg_profile_builtin(name);
        AUTOFREE char *text = NULL;
        size_t len = 0;
        char path[4096 + 64];
        int r;

        cfg_defaults(ret, cmd);
        if (builtin) {
                /* No existence checks: a missing interpreter is reported when
                 * a run needs it, as before profiles existed. */
                opts = (struct cfg_profile_opts){ .file = name };
                return cfg_profile_parse(builtin, strlen(builtin), &opts, ret, e);
        }
        if (looks_like_path(name)) {
                snprintf(path, sizeof path, "%s", name);
        } else {
                if (!valid_name(name))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "profile '%.*s%s': a name is letters, digits, '.', '_' and '-' "
                                        "(or give a path to an .ini file)", NAME_QUOTE(name));
                r = search(name, path, sizeof path, e);
                if (r < 0)
                        return r;
        }
        r = read_file(path, CFG_PROFILE_MAX_BYTES, &text, &len, e);
        if (r < 0) {
                e->stage = NSB_STAGE_CONFIG;
                return nsb_error_prefix(e, "profile");
        }
        opts.file = path;
        return cfg_profile_parse(text, len, &opts, ret, e);
}

int cfg_profile_resolve(struct nsb_config *cfg, const char *name, struct nsb_error *e)
{
        struct nsb_config prof;
        int r;

        if (!name)
                name = cfg->profile ? cfg->profile : cfg_profile_default(cfg->cmd);
        r = cfg_profile_load(name, cfg->cmd, &prof, e);
        if (r == 0)
                r = cfg_profile_overlay(cfg, &prof, e);
        cfg_free(&prof);
        if (r < 0)
                return r;
        /* Commands that run Python always name their interpreter, so the
         * policy (and its hash) says which one ran. */
        if (cfg->cmd != NSB_CMD_RUN && !cfg->interpreter && !(cfg->interpreter = strdup(CFG_DEFAULT_INTERPRETER)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        return 0;
}

static int check_source(const char *path_real, const char *path, const char *what, const char *option,
                        const char *src, struct nsb_error *e)
{
        char src_real[PATH_MAX];

        if (!src || !realpath(src, src_real))
                return 0;
        if (!path_under(path_real, src_real))
                return 0;
        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s '%s' lies inside %s '%s', which the program can %s",
                        what, path, option, src, strcmp(option, "--workspace") == 0 || strcmp(option, "--bind") == 0
                                                         ? "read and change"
                                                         : "read: what it holds would enter the sandbox");
}

static bool same_file(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

bool cfg_stdin_is_ours(const struct nsb_config *cfg)
{
        return cfg->stdin_path && strcmp(cfg->stdin_path, "-") == 0;
}

int cfg_stdin_dash_open(struct nsb_error *e)
{
        struct stat st;
        int flags = fcntl(STDIN_FILENO, F_GETFL);
        int fd;

        if (flags < 0 || fstat(STDIN_FILENO, &st) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EBADF, "--stdin -: nsbox's standard input is closed");
        if (isatty(STDIN_FILENO))
                return nsb_fail(e, NSB_STAGE_USAGE, 0,
                                "--stdin -: nsbox's standard input is a terminal, which nsbox does not read whole; "
                                "pipe the input in (printf 'hi\\n' | nsbox ...) or give --stdin FILE");
        if (S_ISDIR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_USAGE, 0, "--stdin -: nsbox's standard input is a directory");
        if ((flags & O_ACCMODE) == O_RDONLY) {
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        } else {
                /* Opened for writing too (`<>`): nsbox reads a read-only
                 * descriptor of the same file, at the same place. */
                off_t at = S_ISREG(st.st_mode) ? lseek(STDIN_FILENO, 0, SEEK_CUR) : 0;

                fd = open("/proc/self/fd/0", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd >= 0 && at > 0 && lseek(fd, at, SEEK_SET) < 0) {
                        close(fd);
                        fd = -1;
                }
        }
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "--stdin -: nsbox's standard input");
        return fd;
}

/* Is @st /dev/null (by its device number: a link to it, or nsbox's own
 * stdin redirected from it)? */
static bool is_dev_null(const struct stat *st)
{
        struct stat null;

        return S_ISCHR(st->st_mode) && stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
               st->st_rdev == null.st_rdev;
}

int cfg_stdin_describe(const struct nsb_config *cfg, int *ret_path_fd, struct stdin_src *ret, struct nsb_error *e)
{
        struct stat st;
        int fd = -1;

        *ret_path_fd = -1;
        *ret = (struct stdin_src) { .given = cfg->stdin_path != NULL, .dash = cfg_stdin_is_ours(cfg) };
        if (!ret->given)
                return 0;
        if (ret->dash) {
                int fl = fcntl(STDIN_FILENO, F_GETFL);
                /* Closed when nsbox started, fd 0 holds a write-only
                 * /dev/null (nsbox.c hold_std_fds): refused as closed. */
                if (fl < 0 || (fl & O_ACCMODE) == O_WRONLY || fstat(STDIN_FILENO, &st) < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EBADF,
                                        "--stdin -: nsbox's standard input is closed (or not open for reading)");
                ret->tty = isatty(STDIN_FILENO);
        } else {
#ifdef O_PATH
                /* O_PATH: no open of the object itself yet — opening a FIFO
                 * wakes its writer, opening a device runs its driver — and
                 * the supervisor reads the very inode looked at here. */
                fd = open(cfg->stdin_path, O_PATH | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0) {
                        int err = errno;
                        if (fd >= 0)
                                close(fd);
                        return nsb_fail(e, NSB_STAGE_USAGE, err, "--stdin '%s'", cfg->stdin_path);
                }
#ifdef __linux__
                if (S_ISFIFO(st.st_mode)) {
                        /* A pipe's filesystem tells `<(cmd)`'s anonymous
                         * pipe (pipefs) from a named FIFO (stdin_plan.h). */
                        struct statfs fs;
                        ret->pipe_known = fstatfs(fd, &fs) == 0;
                        ret->anon_pipe = ret->pipe_known && fs.f_type == NSB_PIPEFS_MAGIC;
                }
#endif
#else
                /* No O_PATH (the posix build): a look by name; the
                 * supervisor's open checks the kind again. */
                if (stat(cfg->stdin_path, &st) < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, errno, "--stdin '%s'", cfg->stdin_path);
#endif
        }
        ret->mode = st.st_mode;
        ret->size = S_ISREG(st.st_mode) && st.st_size > 0 ? (uint64_t) st.st_size : 0;
        ret->is_null = is_dev_null(&st);
        *ret_path_fd = fd;
        return 0;
}

int cfg_stdin_refused(const struct nsb_config *cfg, const char *why, struct nsb_error *e)
{
        if (cfg_stdin_is_ours(cfg))
                return nsb_fail(e, NSB_STAGE_USAGE, 0, "--stdin -: nsbox's standard input is %s", why);
        if (strcmp(why, "a directory") == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, 0,
                                "--stdin '%s' is a directory: give a regular file (its bytes are copied in), "
                                "/dev/null, or --stdin - (nsbox's own standard input)",
                                cfg->stdin_path);
        if (strcmp(why, "a socket") == 0)   /* a shell cannot redirect from a socket */
                return nsb_fail(e, NSB_STAGE_USAGE, 0,
                                "--stdin '%s' is a socket: by name nsbox takes a regular file (its bytes are "
                                "copied in) or /dev/null, and never hands the program the host's object itself; "
                                "connect to it and pipe what it sends into nsbox's own standard input "
                                "(socat -u UNIX-CONNECT:'%s' - | nsbox ... --stdin -)",
                                cfg->stdin_path, cfg->stdin_path);
        return nsb_fail(e, NSB_STAGE_USAGE, 0,
                        "--stdin '%s' is %s: by name nsbox takes a regular file (its bytes are copied in), "
                        "/dev/null or an anonymous pipe (--stdin <(cmd), on Linux), and never hands the program "
                        "the host's object itself; stream anything else through nsbox's own standard input "
                        "(--stdin - < '%s')",
                        cfg->stdin_path, why, cfg->stdin_path);
}

int cfg_check_stdin(const struct nsb_config *cfg, struct nsb_error *e)
{
        AUTOCLOSE int fd = -1;
        struct stdin_src src;
        const char *why;
        int r;

        if (cfg_stdin_is_ours(cfg) && cfg->cmd == NSB_CMD_BATCH)
                return nsb_fail(e, NSB_STAGE_USAGE, 0,
                                "--stdin -: a batch runs many jobs and nsbox's standard input can feed one; give "
                                "each job its \"stdin\", or --stdin FILE (every job reads it anew)");
        if ((r = cfg_stdin_describe(cfg, &fd, &src, e)) < 0)
                return r;
        if (stdin_plan(&src, &why) == STDIN_REFUSE)
                return cfg_stdin_refused(cfg, why, e);
        return 0;
}

int cfg_check_shared_stdin(const struct nsb_config *cfg, const struct stat *tests, const char *tests_what,
                           struct nsb_error *e)
{
        AUTOCLOSE int fd = -1;
        struct stat st, other;

        if (!cfg->stdin_path || (cfg_stdin_is_ours(cfg) && isatty(STDIN_FILENO)))
                return 0;   /* a terminal is neither the tests nor the results */
        fd = cfg_stdin_is_ours(cfg) ? cfg_stdin_dash_open(e)
                                    : open(cfg->stdin_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 && cfg_stdin_is_ours(cfg))
                return fd;
        if (fd < 0 || fstat(fd, &st) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, errno, "--stdin '%s'", cfg->stdin_path);
        if (cfg_stdin_is_ours(cfg) && tests && same_file(&st, tests))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--stdin -: nsbox's standard input is the %s: the "
                                "program would read the tests", tests_what);
        if (cfg_stdin_is_ours(cfg))
                return 0;   /* one run reads it (the caller counted): a pipe is fine */
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--stdin '%s': not a file (every case or job without its own stdin reads it anew, "
                                "so a pipe would feed only the first)",
                                cfg->stdin_path);
        if (!S_ISREG(st.st_mode))
                return 0;   /* /dev/null in and out is fine */
        if (tests && same_file(&st, tests))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--stdin '%s' is the %s: every program would read the tests",
                                cfg->stdin_path, tests_what);
        if ((cfg->result_path && stat(cfg->result_path, &other) == 0 && same_file(&st, &other)) ||
            (fstat(STDOUT_FILENO, &other) == 0 && same_file(&st, &other)))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--stdin '%s' is where the results go: a program would read earlier results, "
                                "their reasons and output included",
                                cfg->stdin_path);
        return 0;
}

/* realpath() of @path, or, when it does not exist yet (a --result file
 * about to be created), of its directory followed by its last component. */
static bool resolve_maybe_new(const char *path, char *ret)
{
        char dir[PATH_MAX], dir_real[PATH_MAX];
        const char *slash, *base;

        if (realpath(path, ret))
                return true;
        if (errno != ENOENT)
                return false;
        slash = strrchr(path, '/');
        base = slash ? slash + 1 : path;
        if (!slash)
                snprintf(dir, sizeof dir, ".");
        else if (slash == path)
                snprintf(dir, sizeof dir, "/");
        else
                snprintf(dir, sizeof dir, "%.*s", (int) (slash - path), path);
        if (!base[0] || !realpath(dir, dir_real))
                return false;
        return snprintf(ret, PATH_MAX, "%s/%s", strcmp(dir_real, "/") == 0 ? "" : dir_real, base) < PATH_MAX;
}

int cfg_check_unexposed(const struct nsb_config *cfg, const char *path, const char *what, bool writable_only,
                        struct nsb_error *e)
{
        char real[PATH_MAX];
        int r;

        if (!path || !resolve_maybe_new(path, real))
                return 0;
        if ((r = check_source(real, path, what, "--workspace", cfg->workspace, e)) < 0 ||
            (!writable_only && (r = check_source(real, path, what, "--harness", cfg->harness, e)) < 0))
                return r;
        for (size_t i = 0; i < cfg->n_binds; i++)
                if ((!writable_only || !cfg->binds[i].read_only) &&
                    (r = check_source(real, path, what, cfg->binds[i].read_only ? "--ro-bind" : "--bind",
                                      cfg->binds[i].src, e)) < 0)
                        return r;
        for (size_t i = 0; !writable_only && i < cfg->n_packages; i++)
                if ((r = check_source(real, path, what, "--package", cfg->packages[i], e)) < 0)
                        return r;
        return 0;
}

int cfg_check_unexposed_fd(const struct nsb_config *cfg, int fd, const char *what, struct nsb_error *e)
{
        char link[64], path[PATH_MAX];
        struct stat st;
        ssize_t n;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;   /* a pipe, a terminal, /dev/null */
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        n = readlink(link, path, sizeof path - 1);
        if (n <= 0 || path[0] != '/')
                return 0;
        path[n] = '\0';
        return cfg_check_unexposed(cfg, path, what, false, e);
}
