/* frame/frame.h — the command frame: what every nsbox command shares.
 *
 * Owns: the row each command supplies (struct frame_command: its entry
 * function, which of its files hold tests or results, when @e explains its
 * exit status), the steps nsbox.c takes before any entry function
 * (frame_prepare: relative sources, the profile, the python memory floor,
 * --stdin -, the files' rule, pinning --result/--junit, the reduced-isolation
 * warning, cancellation), and the rule for the files (frame_check_files).
 *
 * Invariants:
 *   - a file that holds expected values (the spec, the jobs) or results that
 *     quote them (--result, --junit, --observe, stdout redirected to
 *     a file) never lies inside a host directory the program is given
 *     (workspace, harness, binds, packages): a program would read the tests,
 *     or rewrite the evidence a later run is judged from. One function checks
 *     them all, for every command whose row names them;
 *   - --result and --junit are pinned (util/resultfile.h) before anything runs;
 *   - one cancel fd per process (plat_cancel_fd), made before any command
 *     that runs something, never by one that only reads files;
 *   - exit statuses are util/exitcode.h's: a command maps its outcomes onto
 *     them and the frame prints @e when the row says it explains the status.
 * Layers: below the commands (judge, test, batch, report include this header);
 * above config, platform and util. nsbox.c holds the table and drives it.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "config/config.h"
#include "util/error.h"
#include "util/exitcode.h"

/* A command's files that may not lie inside a directory the program is given. */
enum frame_file {
        FRAME_INPUT = 1u << 0,      /* cfg->input_path (not "-"): the spec, the jobs */
        FRAME_RESULT = 1u << 1,     /* --result */
        FRAME_JUNIT = 1u << 2,      /* --junit */
        FRAME_OBSERVE = 1u << 3,    /* --observe */
        FRAME_STDOUT = 1u << 4,     /* stdout, when it is a regular file */
};

/* Who resolves the profile: nobody (the command reads files, or probes the
 * host), the frame (from --profile), or the command itself (judge: its spec
 * may name the profile; it calls frame_check_files once resolved). */
enum frame_profile { FRAME_PROFILE_NONE = 0, FRAME_PROFILE_CLI, FRAME_PROFILE_OWN };

struct frame_command;

/* What an entry function is handed. */
struct frame_run {
        struct nsb_config *cfg;
        int cancel_fd;                  /* readable once cancelled; -1 for a command that runs nothing */
        FILE *out;                      /* stdout */
        int out_fd;
        FILE *progress;                 /* a terminal stderr for a progress line, unless --quiet; else NULL */
        FILE *summary;                  /* stderr, unless --quiet; else NULL */
        const struct frame_command *cmd;
};

/* One row per command. */
struct frame_command {
        enum nsb_cmd cmd;
        const char *name;               /* prefix of its error message ("nsbox: judge: ..."); NULL: none */
        enum frame_profile profile;
        bool runs;                      /* runs a program: --stdin -, pins, reduced warning, cancel fd */
        bool python;                    /* runs python: the memory floor python needs */
        const char *input_what;         /* how FRAME_INPUT is named in a refusal ("SPEC", "JOBS") */
        unsigned guarded;               /* enum frame_file */
        int (*main)(const struct frame_run *run, struct nsb_error *e);
        int explained;                  /* the status at which @e says why; -1: any but 0 */
};

/* The row for @cmd in @table (terminated by a row whose main is NULL), or NULL. */
const struct frame_command *frame_lookup(const struct frame_command *table, enum nsb_cmd cmd);

/* The shared steps before @c->main, filling @run. -errno with @e set (a
 * usage error: NSB_EXIT_FAILURE). */
int frame_prepare(const struct frame_command *c, struct nsb_config *cfg, struct frame_run *run,
                  struct nsb_error *e);

/* --image (frame_image.c): open cfg->image (verify, pin, unpack into the
 * cache) and fill cfg->image_digest, image_rootfs, image_env and, for a
 * python command, the interpreter inside it. Refuses what an image makes
 * meaningless (packages, reduced isolation, --warm). 0 without --image. */
int frame_open_image(struct nsb_config *cfg, bool python, struct nsb_error *e);
/* The same, the cache entry's shared lock handed to *@ret_lock (-1: none)
 * instead of held until exit: a process that opens many images (a batch's
 * persistent worker) closes each when done with it. */
int frame_open_image_lock(struct nsb_config *cfg, bool python, int *ret_lock, struct nsb_error *e);

/* nsbox doctor --image: the image opened as a run would open it (present,
 * every digest and the pin checked, unpacked into the cache if it is not
 * there) and its interpreter found; @detail says what, @fix what to do. */
bool frame_doctor_image(const struct nsb_config *cfg, char *detail, size_t dsize, char *fix, size_t fsize);

/* nsbox image ls|rm|prune (image/image.h img_cmd): an exit status. */
int frame_image_cmd(char *const *argv, size_t argc, struct nsb_error *e);

/* The files @run->cmd guards are outside every host source run->cfg mounts
 * (config's cfg_check_unexposed). 0, or -EINVAL naming the file and the
 * option that would expose it. */
int frame_check_files(const struct frame_run *run, struct nsb_error *e);
