/* program/program.h — the request for a python program, built in one place.
 *
 * Owns: how a python program becomes a struct sbx_request: the interpreter
 * argv (the profile's interpreter and its --interpreter-args, then the
 * program: /program/NAME, -c CODE or a path already inside the sandbox, then
 * its arguments), the file placed at /program/NAME, the program's stdin, and
 * program_sha256. python, judge, batch and test all call prog_build, so a
 * flag that shapes the program (--interpreter, --interpreter-args, --env,
 * --stdin, --package, the profile's [python] keys) reaches every command the
 * same way: the environment and the packages travel in @cfg, which the
 * request carries, and policy_sha256 hashes that same @cfg.
 *
 * A learner's folder is a program: a script file that lies inside the
 * workspace (prog_locate) runs from there, as `python FILE` runs it: the
 * interpreter is given /workspace/REL/NAME (cfg->script_dir_first puts its
 * folder first on sys.path), the working directory is the caller's, mapped
 * into /workspace, and the bytes nsbox read are still placed (and hashed) at
 * /program/NAME.
 *
 * Invariants:
 *   - the argv the sandbox runs is cfg_python_argv(@cfg, program...): nothing
 *     else spells an interpreter flag;
 *   - prog.sha256 is the hash of exactly the bytes placed at /program/NAME
 *     (or of -c CODE); "" when the program is not a file nsbox was given;
 *     sbx_run copies it into the result next to policy_sha256, so a result
 *     never names one without the other.
 * Pure: allocation only.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "supervisor/sandbox.h"
#include "util/error.h"

enum prog_kind {
        PROG_FILE,      /* @data placed read-only at /program/@name and run from there */
        PROG_CODE,      /* python -c @data */
        PROG_PATH,      /* @name: a path the sandbox already holds (the test runner) */
};

enum prog_stdin {
        PROG_STDIN_CFG,         /* @stdin_data, else what @cfg says (--stdin FILE, --stdin -, /dev/null) */
        PROG_STDIN_PER_RUN,     /* @stdin_data, else --stdin FILE, else empty: never nsbox's own stdin */
};

struct prog_source {
        enum prog_kind kind;
        const char *name;               /* PROG_FILE: the file name; PROG_PATH: the sandbox path */
        const char *data;               /* PROG_FILE: its bytes; PROG_CODE: the code */
        size_t len;
        char *const *args;              /* the program's own arguments (borrowed) */
        size_t n_args;
        const char *script;             /* PROG_FILE: the path the interpreter runs, when not
                                           /program/@name (a workspace script, prog_locate) */
        const char *workdir;            /* the working directory inside; NULL = /workspace */
        enum prog_stdin stdin_mode;
        const char *stdin_data;         /* when non-NULL: the program's stdin bytes */
        size_t stdin_len;
};

struct prog {
        struct sbx_request req;         /* ready for sbx_run; borrows @cfg and the source's bytes */
        char **argv;                    /* owned: the one allocation of cfg_python_argv */
        char *path;                     /* owned: "/program/NAME" */
        char sha256[65];                /* program_sha256 (req.program_sha256 points here, and
                                           sbx_run fills it where it fills policy_sha256);
                                           "" when none */
};

/* Fill @ret for running @src under @cfg (the caller sets req.cancel_fd,
 * relay, channel_fd, python_host, runner_dir afterwards as it needs).
 * -ENOMEM (stage prepare). Free with prog_free. */
int prog_build(const struct nsb_config *cfg, const struct prog_source *src, struct prog *ret, struct nsb_error *e);
void prog_free(struct prog *p);

/* Where a script in the workspace runs from. */
struct prog_place {
        char *script;                   /* "/workspace/REL/NAME"; NULL: not in the workspace */
        char *workdir;                  /* "/workspace[/REL]": the caller's cwd mapped, else "/workspace" */
};

/* Pure. @ws, @dir, @file and @cwd are real paths (no symlink, no "..") of
 * the workspace, of the script's folder as named, of the script itself (its
 * target, when it is a symlink) and of the caller's working directory (NULL
 * when unknown). The script is in the workspace when @dir lies below @ws:
 * then @ret says where it runs from (the real file's place below
 * /workspace); otherwise both are NULL. -EXDEV: named in the workspace, the
 * file lies outside it (a symlink leading out). -ENOMEM. */
int prog_place_plan(const char *ws, const char *dir, const char *file, const char *cwd, struct prog_place *ret);

/* program_locate.c (realpath, getcwd): prog_place_plan for the host script
 * @host_path under @cfg: NULL, NULL unless there is a --workspace and strict
 * isolation (reduced isolation has no /workspace: the workspace is used where
 * it is, and the script runs as /program/NAME). A path that cannot be
 * resolved is not in the workspace (reading it fails on its own). Refused
 * (stage usage), in either isolation: a script named in the workspace that
 * leads out of it, or is no regular file. Call it before reading the file.
 * -ENOMEM (stage prepare). */
int prog_locate(const struct nsb_config *cfg, const char *host_path, struct prog_place *ret, struct nsb_error *e);
void prog_place_free(struct prog_place *p);
