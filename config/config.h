/* config/config.h — struct nsb_config, the single schema of a run.
 *
 * Owns: every value a run can be configured with, with units in the names.
 * Each field a policy key fills has one row in config/schema.c (flag,
 * profile key, JSON key, default, range, rendering); the command line,
 * profiles, judge specs and batch jobs all fill it through those rows.
 * Defaults are the secure ones: relaxing anything is explicit and shows up
 * in the result's `isolation`.
 * Pure: nothing here makes a syscall.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "path/path.h"   /* struct nsb_bind, nsb_tmpfs: the mount requests */
#include "util/error.h"

enum nsb_cmd {
        NSB_CMD_NONE = 0,
        NSB_CMD_RUN,
        NSB_CMD_PYTHON,
        NSB_CMD_JUDGE,
        NSB_CMD_TEST,
        NSB_CMD_BATCH,
        NSB_CMD_DOCTOR,
        NSB_CMD_PROFILE,        /* nsbox profile show NAME|FILE */
        NSB_CMD_REPORT,         /* nsbox report RESULTS.jsonl... */
        NSB_CMD_IMAGE,          /* nsbox image ls|rm|prune (docs/images.md) */
        NSB_CMD_VERSION,
        NSB_CMD_HELP,
};

enum nsb_isolation { NSB_ISOLATION_STRICT = 0, NSB_ISOLATION_REDUCED };
enum nsb_network { NSB_NETWORK_NONE = 0, NSB_NETWORK_LOOPBACK };

/* Bits of nsb_config.set: the policy fields the command line gave
 * explicitly. A profile fills only the fields whose bit is clear, so a flag
 * always wins, even one that repeats the default (cfg_profile_overlay). List
 * fields (binds, tmpfs, env, packages, seccomp_deny) have no bit: the profile's
 * entries come first, the command line's are appended. */
enum cfg_field {
        CFG_F_WALL_TIME = 1u << 0,
        CFG_F_CPU_TIME = 1u << 1,
        CFG_F_MEMORY = 1u << 2,
        CFG_F_PIDS = 1u << 3,
        CFG_F_OUTPUT = 1u << 4,
        CFG_F_FILE_SIZE = 1u << 5,
        CFG_F_TMP_SIZE = 1u << 6,
        CFG_F_NETWORK = 1u << 7,
        CFG_F_ISOLATION = 1u << 8,
        CFG_F_INTERPRETER = 1u << 9,
        CFG_F_INTERP_ARGS = 1u << 10,
        CFG_F_CGROUP_PARENT = 1u << 11,
};

struct nsb_config {
        enum nsb_cmd cmd;
        bool help;                      /* COMMAND --help */
        uint32_t set;                   /* enum cfg_field: given on the command line */

        char *profile;                  /* "python", "minimal" or a file; NULL = command default */
        char *workspace;                /* host dir bound rw at /workspace; NULL = fresh private tmpfs */
        char *harness;                  /* host dir bound ro at /harness; NULL = none */
        struct nsb_bind *binds;         /* --ro-bind / --bind, in order */
        size_t n_binds;
        struct nsb_tmpfs *tmpfs;        /* --tmpfs DST[:SIZE]: private, writable, empty */
        size_t n_tmpfs;

        uint64_t wall_time_ms;          /* default 10 s */
        uint64_t cpu_time_ms;           /* 0 = same as wall time */
        uint64_t memory_bytes;          /* default 256 MiB */
        uint64_t pids_max;              /* default 64 */
        uint64_t output_limit_bytes;    /* per stream kept; 4x in all stops the run; default 1 MiB */
        uint64_t file_size_bytes;       /* RLIMIT_FSIZE; default 16 MiB */
        uint64_t tmp_size_bytes;        /* size of /tmp (and of the fresh workspace); default 64 MiB */

        char *stdin_path;               /* NULL = /dev/null */
        char **env_add;                 /* "NAME=VALUE", added to the scrubbed set */
        size_t n_env_add;

        enum nsb_network network;
        enum nsb_isolation isolation;
        bool json;                      /* result object on stdout instead of the streams */
        char *result_path;              /* also write the result object here */
        char *cgroup_parent;            /* a delegated cgroup v2 directory (absolute, under
                                           /sys/fs/cgroup) to make run cgroups in; NULL = the
                                           one nsbox is in, or a systemd scope it asks for */

        char *interpreter;              /* python profile: host interpreter; default /usr/bin/python3 */
        char *interp_args;              /* its arguments before the program, split on blanks;
                                           NULL = "-I -B" */
        char **packages;                /* package dirs (or module files) mounted read-only at the
                                           same path; the only third-party code the program sees */
        size_t n_packages;
        char **preload;                 /* [python] preload: modules a warm job's zygote imports
                                           before it serves (dotted names, in order); cold runs
                                           import nothing for it (docs/warm-start.md) */
        size_t n_preload;
        char *image;                    /* --image REF: the sandbox's root is this image's (docs/images.md);
                                           NULL = the host's files, by profile */
        char *image_digest;             /* not policy text of its own: "sha256:HEX" once the image is
                                           opened (frame/frame_image.c); rendered into `image =` */
        char *image_rootfs;             /* the unpacked root in the cache, or NULL */
        char **image_env;               /* the image config's Env: the base of the program's */
        size_t n_image_env;
        char **seccomp_deny;            /* syscalls denied (EPERM) on top of the built-in filter */
        size_t n_seccomp_deny;
        char *inline_code;              /* nsbox python -c CODE */
        char **argv;                    /* run: COMMAND ARG...; python: SCRIPT ARG... (or ARG... with -c) */
        size_t argc;

        /* doctor */
        bool doctor_json;

        /* judge / test / batch positional file (SPEC.json, JOBS.jsonl) */
        char *input_path;
        unsigned jobs;                  /* batch -j; 0 = number of cores */
        bool warm;                      /* batch/judge --warm: python jobs from a zygote */
        unsigned warm_rotate;           /* --warm-rotate: jobs per zygote; 0 = NSB_WARM_ROTATE_DEFAULT */
        bool script_dir_first;          /* not policy: the command's program is a script in the
                                           workspace, run as `python FILE` runs it, its folder
                                           first on sys.path (cfg_python_argv: the word -I
                                           becomes -E -s); set by the command, never by a flag */
        char *resume_path;              /* batch --resume: skip the ids already in this file */
        unsigned shard_index;           /* batch --shard K/N: take lines with (line-1) % N == K */
        unsigned shard_count;           /* 0 = no sharding */
        bool fail_fast;                 /* judge --fail-fast */
        char *observe_path;             /* judge --observe: write each case's observation here */
        char *replay_path;              /* judge --replay: judge these observations, run nothing */
        char *junit_path;               /* judge, test --junit: also write JUnit XML here */
        bool junit_expected;            /* judge --junit-expected: the JUnit file may quote expected values */
        char *program_path;             /* judge --program: grade this file instead of the spec's program */

        /* report: the RESULTS files are argv/argc ("-" = stdin) */
        char *html_path;                /* report --html: the self-contained page */
        const char *bind_next_word;     /* not policy: the absolute word right after a --ro-bind or
                                           --bind SRC without :DST (argv's), for the hint of
                                           config/hints.h; NULL otherwise */
        bool quiet;                     /* batch --quiet: no progress line, no closing summary */
};

/* Secure defaults for @cmd. */
void cfg_defaults(struct nsb_config *cfg, enum nsb_cmd cmd);
void cfg_free(struct nsb_config *cfg);

/* What --isolation reduced cannot provide, having no mount or network
 * namespace, among @cfg's policy: a loopback network, a private tmpfs, a bind
 * whose DST is not its SRC. NULL, or why (in @buf). Pure. The supervisor
 * refuses such a run; a profile refuses the key with its FILE:LINE. */
const char *cfg_reduced_conflict(const struct nsb_config *cfg, char *buf, size_t size);

/* The python profile's interpreter when none is named: the one default,
 * read by the builder, the supervisor's mounts, batch and doctor. */
#define CFG_DEFAULT_INTERPRETER "/usr/bin/python3"

/* The interpreter @cfg runs: its own, else CFG_DEFAULT_INTERPRETER. */
const char *cfg_interpreter(const struct nsb_config *cfg);

#define NSB_WARM_ROTATE_DEFAULT 500u
#define NSB_WARM_ROTATE_MAX 1000000u

/* Effective CPU limit: cpu_time_ms, or wall_time_ms when unset. */
uint64_t cfg_cpu_time_ms(const struct nsb_config *cfg);

/* The mounts @cfg asks for, as the path and mount layers take them
 * (borrowed from @cfg). */
struct path_mounts cfg_mounts(const struct nsb_config *cfg);

/* Strict parsers shared by the CLI and profiles. Reject empty input, junk,
 * negative values, overflow and (for durations) zero. */
int cfg_parse_size(const char *s, uint64_t *ret_bytes, struct nsb_error *e);
/* A size where 0 would not mean "nothing" (--memory, --tmp-size): the cgroup
 * backends read a zero memory limit as "no limit", tmpfs reads size=0 as
 * "unbounded". Refused, so no typo or spec turns a bound off while the
 * result still names it. */
int cfg_parse_bound(const char *s, uint64_t *ret_bytes, struct nsb_error *e);
int cfg_parse_duration(const char *s, uint64_t *ret_ms, struct nsb_error *e);
int cfg_parse_count(const char *s, uint64_t min, uint64_t max, uint64_t *ret, struct nsb_error *e);

/* A limit's value, by the flag's name ("memory", "wall-time") or the spec
 * key ("wall_time"): parsed as its kind (size, duration, count), then
 * checked against the range every source of limits shares (zero and absurd
 * values are refused, the message says what is allowed). Stage usage. */
int cfg_parse_limit(const char *name, const char *s, uint64_t *ret, struct nsb_error *e);

/* The least memory limit a CPython 3 interpreter starts under, on either
 * backend: measured for Debian 12's python3.11 at 3M charged under cgroup v1
 * and 12.5M of address space under the rlimit backend (RLIMIT_AS); 16M
 * leaves a margin for other builds (docs/profiles.md). */
#define CFG_PYTHON_MEMORY_MIN (16ULL << 20)
/* -ERANGE, stage usage, naming the minimum, when @memory_bytes is below it. */
int cfg_check_python_memory(uint64_t memory_bytes, struct nsb_error *e);

/* Parse argv (argv[0] is the program name). Fills @cfg; on failure returns
 * -EINVAL with stage "usage" and a message naming the bad argument. */
int cfg_parse_cli(int argc, char **argv, struct nsb_config *cfg, struct nsb_error *e);

/* Make the command line's relative --ro-bind/--bind sources, --workspace
 * and --harness absolute under @cwd (as bwrap reads them), so the policy and
 * its hash name the real host path and Landlock (reduced isolation) can take
 * them. A relative source needs an absolute DST: -EINVAL otherwise. Pure. */
int cfg_absolute_sources(struct nsb_config *cfg, const char *cwd, struct nsb_error *e);

/* Apply one command-line option by name (without "--") to @cfg, as if it had
 * been given, without marking it in cfg->set. Profiles fill the
 * configuration through this, so the CLI and the INI share one table of value
 * parsers. -ENOENT: no such option. */
int cfg_set_option(struct nsb_config *cfg, const char *name, const char *value, struct nsb_error *e);

/* The cfg_field bit of command-line option @name, 0 for list options. */
uint32_t cfg_field_of_option(const char *name);

/* "Did you mean": the name among @names (n distinct ones) closest to the
 * mistyped @word, or NULL when none is close (config/suggest.c). Pure. */
const char *cfg_closest(const char *word, const char *const *names, size_t n);
/* Edits (insert, delete, substitute, swap two adjacent) from @a to @b;
 * SIZE_MAX for words longer than 64 bytes. */
size_t cfg_edit_distance(const char *a, const char *b);

/* The option table, row by row, for what is generated from it (the man
 * page check, shell completion): false past the last row. @ret_cmds has bit
 * (1u << enum nsb_cmd) set for each command that accepts the option;
 * @ret_metavar is NULL for a flag. Pure. */
bool cfg_option_row(size_t i, const char **ret_name, const char **ret_metavar, unsigned *ret_cmds);

/* The command table: name and enum of row @i; false past the last row. Pure. */
bool cfg_command_row(size_t i, const char **ret_name, enum nsb_cmd *ret_cmd);

/* Usage text for @cmd (NSB_CMD_NONE: the top-level help). Generated from the
 * option table. Returns a malloc'd string. */
char *cfg_usage(enum nsb_cmd cmd);
