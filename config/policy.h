/* config/policy.h — profiles: the policy of a run, written down.
 *
 * Owns: the profile file format (INI, parsed with inih), the built-in
 * profiles `python` and `minimal`, the named-profile search path, the
 * precedence between a profile and the command line, and the canonical text
 * of a resolved policy (what `nsbox profile show` prints, and what
 * policy_sha256 hashes).
 *
 * Precedence, lowest first: built-in defaults (cfg_defaults) < the profile <
 * a judge spec's "limits" (judge_config_merge) < explicit command-line flags.
 * A flag wins because cfg_parse_cli marks it in nsb_config.set, and the
 * overlay fills only fields whose bit is clear.
 *
 * Invariants:
 *   - parsing is strict: an unknown section or key, a key given twice, a
 *     malformed value, a relative or missing mount source, a mount over a path
 *     the sandbox owns, or one destination mounted twice is an error
 *     "FILE:LINE: what is wrong" (stage config), and nothing runs;
 *   - render(parse(render(p))) == render(p): the canonical text round-trips;
 *   - the same resolved policy always gives the same policy_sha256.
 * Layers: policy_parse.c and policy_render.c are pure (allocation only; a
 * caller-supplied callback checks that mount sources exist); policy_load.c
 * reads profile files and the search path.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "nsbox-config.h"
#include "util/error.h"

#define CFG_PROFILE_MAX_BYTES (1u << 20)
/* meson's -Dsystem_profile_dir, default /etc/nsbox/profiles */
#define CFG_PROFILE_SYSTEM_DIR NSBOX_PROFILE_SYSTEM_DIR

struct cfg_profile_opts {
        const char *file;                       /* name used in "FILE:LINE:" messages */
        /* Does this host path exist? NULL: do not check (unit tests, fuzzing). */
        bool (*exists)(const char *path, void *user);
        void *user;
};

/* The profile key table, row by row (for the man page check): false past
 * the last row. [env] takes any variable name and has no row. Pure. */
bool cfg_profile_key_row(size_t i, const char **ret_section, const char **ret_key);

/* Parse profile @text (@len bytes; NUL bytes are an error) on top of @cfg,
 * which the caller has set to cfg_defaults(). Pure. */
int cfg_profile_parse(const char *text, size_t len, const struct cfg_profile_opts *opts, struct nsb_config *cfg,
                      struct nsb_error *e);

/* Text of built-in profile @name, or NULL. */
const char *cfg_profile_builtin(const char *name);

/* Fill every field of @cfg the command line did not set from @profile; list
 * fields become the profile's entries followed by @cfg's. Moves what it takes
 * out of @profile, which the caller still frees. */
int cfg_profile_overlay(struct nsb_config *cfg, struct nsb_config *profile, struct nsb_error *e);

/* The canonical INI text of the policy in @cfg (limits, sandbox, mounts, env,
 * python): no comments, fixed key order, sizes and durations in their largest
 * exact unit. malloc'd into *ret. Pure. */
int cfg_policy_render(const struct nsb_config *cfg, char **ret, struct nsb_error *e);

/* Hex SHA-256 of cfg_policy_render(@cfg); "" if that ran out of memory. */
void cfg_policy_sha256(const struct nsb_config *cfg, char out[65]);

/* The interpreter's argv: argv[0] ("python3" for the default interpreter,
 * else its path), the profile's args split on blanks, then @tail (borrowed).
 * With cfg->script_dir_first, an arg "-I" becomes "-E" "-s": isolated mode
 * but for -P (3.11's -I is -E -s -P), so the script's folder leads sys.path
 * as under `python FILE`, and a zygote started from the same @cfg gets the
 * same words as its jobs. One allocation, NULL-terminated: free(*ret) frees
 * it all. -ENOMEM. */
int cfg_python_argv(const struct nsb_config *cfg, char *const *tail, size_t n_tail, char ***ret, size_t *ret_n);

/* policy_load.c (reads files). Load profile @name_or_file into *ret (from
 * cfg_defaults(@cmd)): a built-in name, a path (contains '/' or ends in
 * ".ini"), or a name looked up as NAME.ini in CFG_PROFILE_SYSTEM_DIR, then in
 * $XDG_CONFIG_HOME/nsbox/profiles (default ~/.config/nsbox/profiles). */
int cfg_profile_load(const char *name_or_file, enum nsb_cmd cmd, struct nsb_config *ret, struct nsb_error *e);

/* policy_load.c. Is @path (a judge spec, a jobs file: what holds expected
 * values) outside every host source @cfg mounts into the sandbox (workspace,
 * harness, binds, packages)? @path may not exist yet (a --result file to be
 * created): its directory is resolved then. With @writable_only, only the sources the
 * program can write (workspace, --bind) count: nsbox test's harness may be
 * read, at /harness anyway, but never changed. Compared after realpath; a
 * source that cannot be resolved is skipped (the run reports it). -EINVAL
 * (stage config) naming the option that would expose it. */
int cfg_check_unexposed(const struct nsb_config *cfg, const char *path, const char *what, bool writable_only,
                        struct nsb_error *e);

/* The same for the regular file open at @fd (stdout redirected by the
 * caller's shell); anything else (pipe, terminal, device) passes. */
int cfg_check_unexposed_fd(const struct nsb_config *cfg, int fd, const char *what, struct nsb_error *e);

/* judge, batch: --stdin FILE is read anew by every case or job that gives no
 * stdin of its own, so it must be a file or a device we can read (a pipe
 * would feed the first run only); and it must be neither the file @tests
 * describes (the spec, the jobs, read from a path or piped in: expected
 * values; named @tests_what in the message; NULL = none) nor where results
 * go (--result, stdout).
 * 0, or -errno (stage usage) saying why not. */
struct stat;
int cfg_check_shared_stdin(const struct nsb_config *cfg, const struct stat *tests, const char *tests_what,
                           struct nsb_error *e);

/* --stdin -: a new CLOEXEC descriptor of nsbox's own standard input for
 * nsbox itself to read (judge --observe records it; the shared-stdin check
 * compares it with the tests), open for reading only (a read-write one is
 * reopened read-only at the same offset). Never handed to the program
 * (config/stdin_plan.h). -errno (stage usage): closed, a terminal (not
 * read whole), a directory. */
int cfg_stdin_dash_open(struct nsb_error *e);

/* What --stdin names, for stdin_plan (config/stdin_plan.h): nsbox's own
 * stdin for `-`, else the path, opened O_PATH (no open of a FIFO or device
 * itself: *ret_path_fd, CLOEXEC, the caller closes it; -1 for `-`, when
 * --stdin is absent, and where there is no O_PATH: looked at by stat), as
 * the caller, following symlinks. -errno (stage
 * usage) when it cannot be looked at. */
struct stdin_src;
int cfg_stdin_describe(const struct nsb_config *cfg, int *ret_path_fd, struct stdin_src *ret, struct nsb_error *e);

/* The usage error for what stdin_plan refused (@why: what it is). */
int cfg_stdin_refused(const struct nsb_config *cfg, const char *why, struct nsb_error *e);

/* Before anything runs: --stdin - where it cannot serve (batch: many jobs,
 * one input), a --stdin that cannot be looked at, and what stdin_plan
 * refuses (a directory; by name, a FIFO, a socket, a device other than
 * /dev/null). Stage usage. */
int cfg_check_stdin(const struct nsb_config *cfg, struct nsb_error *e);

/* --stdin -? */
bool cfg_stdin_is_ours(const struct nsb_config *cfg);

/* The profile a command uses when none is named: python for python, judge,
 * test and batch; minimal for run. */
const char *cfg_profile_default(enum nsb_cmd cmd);

/* Load @name (NULL: cfg->profile, else the command's default) and overlay it
 * on @cfg, which holds the parsed command line. */
int cfg_profile_resolve(struct nsb_config *cfg, const char *name, struct nsb_error *e);
