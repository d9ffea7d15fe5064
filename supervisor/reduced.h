/* supervisor/reduced.h — `--isolation reduced`: what stands in for the namespaces.
 *
 * For hosts where user namespaces are unavailable, and only when asked for.
 * The program shares the host's file tree, network, IPC and process table, so
 * each wall becomes a narrower door:
 *   - files: Landlock allows reading only the interpreter's (or command's)
 *     closure and the program, and writing only the workspace and a private
 *     temporary directory that replaces /tmp (HOME and TMPDIR point there);
 *   - network and host IPC: seccomp refuses socket() of every family and the
 *     System V / POSIX IPC calls (socketpair stays, for pipes between workers);
 *   - processes: the program leads its own session and process group, which
 *     seccomp keeps it from leaving (setsid, setpgid); the group is killed
 *     whole; Landlock's scopes (ABI 6+) keep signals and ptrace inside;
 *   - identity: a root caller's program runs as nobody (65534:65534).
 * What cannot be had without namespaces is reported "disabled" or
 * "unavailable", never claimed: a private /tmp size, a private PID view, the
 * hostname. docs/security.md lists the residual risks.
 *
 * Split: reduced_check/rules/argv are pure; reduced_prepare/cleanup touch the
 * host (a private directory) and nothing else.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"
#include "landlock/landlock.h"
#include "profile/profile.h"
#include "util/error.h"

#define REDUCED_NOBODY_UID 65534u
#define REDUCED_NOBODY_GID 65534u

struct reduced_plan {
        char *dir;                      /* private directory on the host; removed after the run */
        char *workdir;                  /* the program's working directory (--workspace or dir/workspace) */
        char *tmpdir;                   /* dir/tmp: the program's HOME and TMPDIR */
        char *program_dir;              /* dir/program: holds /program/NAME's bytes */
        bool drop_to_nobody;            /* the caller is root: the program runs as 65534:65534 */
        struct ll_path_rule *rules;     /* Landlock rules, host paths */
        size_t n_rules;
};

/* Pure: refuses, with the reason, what only namespaces can provide. */
int reduced_check(const struct nsb_config *cfg, const char *runner_dir, struct nsb_error *e);

/* Pure: the Landlock rules: read-only for the files and directories of @host
 * (symlinks are resolved by their targets, which @host holds too), the program
 * directory, @extra_ro and read-only binds; writable for the working and
 * temporary directories, writable binds and the harmless device nodes. */
int reduced_rules(struct reduced_plan *p, const struct nsb_config *cfg, const struct host_set *host,
                  const char *const *extra_ro, size_t n_extra, struct nsb_error *e);

/* Pure: a copy of @argv where "/program/NAME" names the program's real place. */
int reduced_argv(const struct reduced_plan *p, const char *program_name, char *const *argv, size_t argc,
                 char ***ret, struct nsb_error *e);
void reduced_argv_free(char **argv);

/* Host: make the private directory (in $TMPDIR/nsbox-reduced-UID, the
 * user's own, or $TMPDIR itself when that is not usable; mode 0700, owned
 * by the user the program runs as) with workspace/, tmp/ and program/NAME. */
int reduced_prepare(struct reduced_plan *p, const struct nsb_config *cfg, const char *program_name,
                    const char *program_data, size_t program_len, struct nsb_error *e);

/* Host: remove the private directories in $TMPDIR/nsbox-reduced-UID (or
 * /tmp's) that a SIGKILLed nsbox of ours left (their creator's pid is gone):
 * one open when there is none. reduced_prepare does it too (and in $TMPDIR
 * itself); a full-isolation run calls it so that the next run of any kind
 * cleans up, as it does for stale cgroups. */
void reduced_reap_stale(void);

/* Host: the tasks (threads) the host counts against @uid's RLIMIT_NPROC.
 * Without a user namespace that limit is shared with every process the user
 * runs, so the rlimit backend adds this to --pids (docs/security.md).
 * -ENOENT (and *ret 0) where /proc has no Linux status files to count. */
int reduced_count_tasks(uid_t uid, unsigned long *ret);

/* Host: remove the private directory and free the plan. Run only after every
 * process of the run is gone. Safe on a zeroed plan. */
void reduced_cleanup(struct reduced_plan *p);
