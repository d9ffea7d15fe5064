/* config/cli_parse.c — the command line, through one option table. Pure.
 *
 * Grammar: nsbox COMMAND [OPTIONS] [--] [POSITIONAL...]
 * Options take their value as the next argument or after '=' (--memory=1G).
 * Option parsing stops at "--" or at the first positional argument, so the
 * sandboxed command's own flags are never read as nsbox's.
 */
#include "config/config.h"
#include "util/portable.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest option or command name worth a suggestion. */
#define WORD_BUF 64

#define DEFAULT_WALL_MS 10000ULL
#define DEFAULT_MEMORY (256ULL << 20)
#define DEFAULT_PIDS 64ULL
#define DEFAULT_OUTPUT (1ULL << 20)
#define DEFAULT_FILE_SIZE (16ULL << 20)
#define DEFAULT_TMP_SIZE (64ULL << 20)

void cfg_defaults(struct nsb_config *cfg, enum nsb_cmd cmd)
{
        memset(cfg, 0, sizeof *cfg);
        cfg->cmd = cmd;
        cfg->wall_time_ms = DEFAULT_WALL_MS;
        cfg->memory_bytes = DEFAULT_MEMORY;
        cfg->pids_max = DEFAULT_PIDS;
        cfg->output_limit_bytes = DEFAULT_OUTPUT;
        cfg->file_size_bytes = DEFAULT_FILE_SIZE;
        cfg->tmp_size_bytes = DEFAULT_TMP_SIZE;
        cfg->network = NSB_NETWORK_NONE;
        cfg->isolation = NSB_ISOLATION_STRICT;
}

const char *cfg_interpreter(const struct nsb_config *cfg)
{
        return cfg->interpreter ? cfg->interpreter : CFG_DEFAULT_INTERPRETER;
}

uint64_t cfg_cpu_time_ms(const struct nsb_config *cfg)
{
        return cfg->cpu_time_ms ? cfg->cpu_time_ms : cfg->wall_time_ms;
}

const char *cfg_reduced_conflict(const struct nsb_config *cfg, char *buf, size_t size)
{
        if (cfg->network == NSB_NETWORK_LOOPBACK) {
                snprintf(buf, size, "--network loopback needs a network namespace; under --isolation reduced "
                                    "every socket is refused (use strict isolation for loopback)");
                return buf;
        }
        if (cfg->n_tmpfs > 0) {
                snprintf(buf, size, "--tmpfs %s needs a mount namespace, which --isolation reduced does not have "
                                    "(use strict isolation, or --bind a directory of your own)", cfg->tmpfs[0].dst);
                return buf;
        }
        for (size_t i = 0; i < cfg->n_binds; i++)
                if (strcmp(cfg->binds[i].src, cfg->binds[i].dst) != 0) {
                        snprintf(buf, size, "%s %s:%s: under --isolation reduced a path stays where it is on the "
                                            "host (no mount namespace), so SRC and DST must be the same",
                                 cfg->binds[i].read_only ? "--ro-bind" : "--bind", cfg->binds[i].src,
                                 cfg->binds[i].dst);
                        return buf;
                }
        return NULL;
}

static void free_strv(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

void cfg_free(struct nsb_config *cfg)
{
        if (!cfg)
                return;
        free(cfg->profile);
        free(cfg->workspace);
        free(cfg->harness);
        for (size_t i = 0; i < cfg->n_binds; i++) {
                free(cfg->binds[i].src);
                free(cfg->binds[i].dst);
        }
        free(cfg->binds);
        for (size_t i = 0; i < cfg->n_tmpfs; i++)
                free(cfg->tmpfs[i].dst);
        free(cfg->tmpfs);
        free(cfg->stdin_path);
        free_strv(cfg->env_add, cfg->n_env_add);
        free(cfg->result_path);
        free(cfg->interpreter);
        free(cfg->interp_args);
        free_strv(cfg->packages, cfg->n_packages);
        free_strv(cfg->seccomp_deny, cfg->n_seccomp_deny);
        free(cfg->inline_code);
        free_strv(cfg->argv, cfg->argc);
        free(cfg->input_path);
        free(cfg->resume_path);
        free(cfg->observe_path);
        free(cfg->replay_path);
        free(cfg->junit_path);
        free(cfg->html_path);
        memset(cfg, 0, sizeof *cfg);
}

/* ---- value handlers ---------------------------------------------------- */

typedef int (*opt_fn)(struct nsb_config *cfg, const char *value, struct nsb_error *e);

static int set_str(char **field, const char *value, struct nsb_error *e)
{
        char *copy = strdup(value);
        if (!copy)
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        free(*field);
        *field = copy;
        return 0;
}

static int push_str(char ***v, size_t *n, const char *value, struct nsb_error *e)
{
        char **nv = realloc(*v, (*n + 1) * sizeof **v);
        if (!nv)
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        *v = nv;
        if (!(nv[*n] = strdup(value)))
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        (*n)++;
        return 0;
}

static int opt_profile(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->profile, v, e); }
static int opt_workspace(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->workspace, v, e); }
static int opt_harness(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->harness, v, e); }
static int opt_stdin(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->stdin_path, v, e); }
static int opt_result(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->result_path, v, e); }
static int opt_interpreter(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->interpreter, v, e); }
static int opt_interp_args(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->interp_args, v, e); }
static int opt_json(struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->json = true; c->doctor_json = true; return 0; }
static int opt_help(struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->help = true; return 0; }
static int opt_observe(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->observe_path, v, e); }
static int opt_replay(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->replay_path, v, e); }
static int opt_fail_fast(struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->fail_fast = true; return 0; }
static int opt_quiet(struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->quiet = true; return 0; }
static int opt_wall(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_limit("wall-time", v, &c->wall_time_ms, e); }
static int opt_cpu(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_limit("cpu-time", v, &c->cpu_time_ms, e); }
static int opt_memory(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_limit("memory", v, &c->memory_bytes, e); }
static int opt_output(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_limit("output-limit", v, &c->output_limit_bytes, e); }
static int opt_fsize(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_limit("file-size", v, &c->file_size_bytes, e); }
static int opt_tmp(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_limit("tmp-size", v, &c->tmp_size_bytes, e); }
static int opt_pids(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_limit("pids", v, &c->pids_max, e); }

static int opt_jobs(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        uint64_t n;
        int r = cfg_parse_count(v, 1, 4096, &n, e);
        if (r < 0)
                return r;
        c->jobs = (unsigned) n;
        return 0;
}

static int opt_junit(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->junit_path, v, e); }
static int opt_html(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->html_path, v, e); }
static int opt_resume(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->resume_path, v, e); }

/* K/N with 0 <= K < N: shard K of N (0-based, like a Kubernetes completion
 * index; a Slurm array can pass $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT). */
static int opt_shard(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        const char *slash = strchr(v, '/');
        char k[32];
        uint64_t idx, n;

        if (!slash || (size_t) (slash - v) >= sizeof k)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': expected K/N, e.g. 0/4", v);
        memcpy(k, v, (size_t) (slash - v));
        k[slash - v] = '\0';
        if (cfg_parse_count(slash + 1, 1, 1u << 20, &n, e) < 0 || cfg_parse_count(k, 0, n - 1, &idx, e) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': expected K/N with 0 <= K < N", v);
        c->shard_index = (unsigned) idx;
        c->shard_count = (unsigned) n;
        return 0;
}

static int opt_env(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        const char *eq = strchr(v, '=');
        if (!eq || eq == v)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': expected NAME=VALUE", v);
        for (const char *p = v; p < eq; p++)
                if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                      (p > v && *p >= '0' && *p <= '9')))
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "'%s': invalid variable name (letters, digits and _, not starting with a digit)", v);
        /* --env A=1 --env A=2: the program sees A=2, and so does the policy
         * (one entry, so the same environment always has the same hash). */
        for (size_t i = 0; i < c->n_env_add; i++)
                if (strncmp(c->env_add[i], v, (size_t) (eq - v) + 1) == 0)
                        return set_str(&c->env_add[i], v, e);
        return push_str(&c->env_add, &c->n_env_add, v, e);
}

static int opt_network(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        if (strcmp(v, "none") == 0)
                c->network = NSB_NETWORK_NONE;
        else if (strcmp(v, "loopback") == 0)
                c->network = NSB_NETWORK_LOOPBACK;
        else
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "'%s': expected none or loopback", v);
        return 0;
}

static int opt_isolation(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        if (strcmp(v, "strict") == 0)
                c->isolation = NSB_ISOLATION_STRICT;
        else if (strcmp(v, "reduced") == 0)
                c->isolation = NSB_ISOLATION_REDUCED;
        else
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "'%s': expected strict or reduced", v);
        return 0;
}

/* The ':' before DST. DST is absolute, so when @v has a ":/" the last one
 * is the separator, and a host SRC may hold ':' itself
 * ("/data/run-12:00:/data"). Otherwise the first ':' is, so "/srv:data" is
 * still the relative DST "data" that is refused; a SRC with ':' then needs
 * its DST written out. DST never contains ":/", so SRC:DST as profile show
 * writes it reads back the same. */
static const char *bind_separator(const char *v)
{
        const char *sep = NULL;

        for (const char *p = strstr(v, ":/"); p; p = strstr(p + 1, ":/"))
                sep = p;
        return sep ? sep : strchr(v, ':');
}

static int add_bind(struct nsb_config *c, const char *v, bool ro, struct nsb_error *e)
{
        const char *colon = bind_separator(v);
        struct nsb_bind b = { .read_only = ro };
        struct nsb_bind *nb;

        if (!*v || colon == v)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': empty source (expected SRC[:DST])", v);
        b.src = colon ? strndup(v, (size_t) (colon - v)) : strdup(v);
        b.dst = colon ? strdup(colon + 1) : strdup(v);
        if (!b.src || !b.dst) {
                free(b.src);
                free(b.dst);
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        }
        nb = realloc(c->binds, (c->n_binds + 1) * sizeof *nb);
        if (!nb) {
                free(b.src);
                free(b.dst);
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        }
        c->binds = nb;
        c->binds[c->n_binds++] = b;
        return 0;
}

static int opt_package(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        if (v[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': expected an absolute path", v);
        return push_str(&c->packages, &c->n_packages, v, e);
}

static int opt_seccomp_deny(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        /* Only the shape here; the filter compiler rejects a name the
         * kernel does not know, before anything runs. */
        if (!*v || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(v))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': not a syscall name (lower-case letters, digits and _)", v);
        return push_str(&c->seccomp_deny, &c->n_seccomp_deny, v, e);
}

static int opt_tmpfs(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        const char *colon = strchr(v, ':');
        struct nsb_tmpfs t = { 0 };
        struct nsb_tmpfs *nt;

        if (colon && cfg_parse_size(colon + 1, &t.size_bytes, e) < 0)
                return nsb_error_prefix(e, "'%s'", v);
        if (colon && t.size_bytes == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': size must be positive", v);
        if (v[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s': expected an absolute DST[:SIZE]", v);
        if (!(t.dst = colon ? strndup(v, (size_t) (colon - v)) : strdup(v)))
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        nt = realloc(c->tmpfs, (c->n_tmpfs + 1) * sizeof *nt);
        if (!nt) {
                free(t.dst);
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        }
        c->tmpfs = nt;
        c->tmpfs[c->n_tmpfs++] = t;
        return 0;
}

static int opt_ro_bind(struct nsb_config *c, const char *v, struct nsb_error *e) { return add_bind(c, v, true, e); }
static int opt_bind(struct nsb_config *c, const char *v, struct nsb_error *e) { return add_bind(c, v, false, e); }

/* ---- the table --------------------------------------------------------- */

#define C_RUN (1u << NSB_CMD_RUN)
#define C_PY (1u << NSB_CMD_PYTHON)
#define C_JUDGE (1u << NSB_CMD_JUDGE)
#define C_TEST (1u << NSB_CMD_TEST)
#define C_BATCH (1u << NSB_CMD_BATCH)
#define C_DOCTOR (1u << NSB_CMD_DOCTOR)
#define C_REPORT (1u << NSB_CMD_REPORT)
#define C_SANDBOX (C_RUN | C_PY | C_JUDGE | C_TEST | C_BATCH)
#define C_ALL (C_SANDBOX | C_DOCTOR)

/* What an option is about: --help lists the options in these groups, in
 * this order. */
enum opt_group { G_ISOLATION, G_LIMITS, G_FILES, G_ENV, G_OUTPUT, G_BATCH, G_JUDGE, G_GENERAL, G__MAX };

static const char *const group_titles[G__MAX] = {
        [G_ISOLATION] = "Profile and isolation", [G_LIMITS] = "Limits", [G_FILES] = "Filesystem",
        [G_ENV] = "Program environment", [G_OUTPUT] = "Output", [G_BATCH] = "Batch",
        [G_JUDGE] = "Judge", [G_GENERAL] = "General",
};

struct cli_opt {
        const char *name;      /* without the leading "--" */
        const char *metavar;   /* NULL: a flag without value */
        unsigned cmds;         /* commands that accept it */
        opt_fn fn;
        const char *help;
        enum opt_group group;  /* its heading in --help */
};

/* One row per option, one line per row. */
static const struct cli_opt options[] = {
        { "profile", "NAME|FILE", C_SANDBOX, opt_profile, "built-in profile (python, minimal) or an INI file", G_ISOLATION },
        { "workspace", "DIR", C_SANDBOX, opt_workspace, "bound read-write at /workspace (default: fresh, empty, private)", G_FILES },
        { "harness", "DIR", C_SANDBOX, opt_harness, "bound read-only at /harness", G_FILES },
        { "ro-bind", "SRC[:DST]", C_SANDBOX, opt_ro_bind, "extra read-only mount (repeatable)", G_FILES },
        { "bind", "SRC[:DST]", C_SANDBOX, opt_bind, "extra read-write mount (repeatable)", G_FILES },
        { "tmpfs", "DST[:SIZE]", C_SANDBOX, opt_tmpfs, "extra private writable tmpfs (default size: --tmp-size; repeatable)", G_FILES },
        { "wall-time", "DUR", C_SANDBOX, opt_wall, "wall-clock limit, e.g. 500ms, 10s, 2m (default 10s)", G_LIMITS },
        { "cpu-time", "DUR", C_SANDBOX, opt_cpu, "CPU-time limit of the whole tree (default: = wall time)", G_LIMITS },
        { "memory", "SIZE", C_SANDBOX, opt_memory, "memory limit, e.g. 256M, 1G (default 256M)", G_LIMITS },
        { "pids", "N", C_SANDBOX, opt_pids, "process and thread limit (default 64)", G_LIMITS },
        { "output-limit", "SIZE", C_SANDBOX, opt_output, "bytes of stdout and of stderr kept each; 4x in all stops the run (default 1M)", G_LIMITS },
        { "file-size", "SIZE", C_SANDBOX, opt_fsize, "largest file the program may write (default 16M)", G_LIMITS },
        { "tmp-size", "SIZE", C_SANDBOX, opt_tmp, "size of the private /tmp (default 64M)", G_LIMITS },
        { "stdin", "FILE", C_SANDBOX, opt_stdin, "standard input (default: empty); judge and batch: for the cases and jobs that give none", G_ENV },
        { "env", "NAME=VALUE", C_SANDBOX, opt_env, "add to the scrubbed environment (repeatable)", G_ENV },
        { "network", "none|loopback", C_SANDBOX, opt_network, "empty network namespace; loopback brings up lo inside it", G_ISOLATION },
        { "isolation", "strict|reduced", C_ALL, opt_isolation, "reduced must be asked for explicitly (default strict)", G_ISOLATION },
        { "interpreter", "PATH", C_PY | C_JUDGE | C_TEST | C_BATCH | C_DOCTOR, opt_interpreter, "host Python interpreter (default /usr/bin/python3)", G_ENV },
        { "interpreter-args", "ARGS", C_PY | C_JUDGE | C_TEST | C_BATCH, opt_interp_args, "interpreter arguments before the program, blank-separated (default \"-I -B\")", G_ENV },
        { "package", "DIR", C_SANDBOX, opt_package, "python package dir mounted read-only at the same path (repeatable)", G_FILES },
        { "seccomp-deny", "SYSCALL", C_SANDBOX, opt_seccomp_deny, "also deny this syscall with EPERM (repeatable)", G_ISOLATION },
        { "json", NULL, C_SANDBOX, opt_json, "print the result object (judge: the verdict, test: the report) on stdout instead of the program's streams or a summary", G_OUTPUT },
        { "json", NULL, C_DOCTOR, opt_json, "print the report as one JSON object (nsbox.doctor/1) instead of text", G_OUTPUT },
        { "result", "FILE", C_SANDBOX, opt_result, "also write the result object to FILE (batch: every line)", G_OUTPUT },
        { "jobs", "N", C_BATCH, opt_jobs, "parallel jobs (default: number of cores); also -j N", G_BATCH },
        { "resume", "FILE", C_BATCH, opt_resume, "skip the jobs whose id already has a line in FILE (earlier results)", G_BATCH },
        { "shard", "K/N", C_BATCH, opt_shard, "take every Nth line from line K+1 (0 <= K < N): one of N machines", G_BATCH },
        { "fail-fast", NULL, C_JUDGE, opt_fail_fast, "stop at the first failing case", G_JUDGE },
        { "observe", "OBS.jsonl", C_JUDGE, opt_observe, "also write each case's observation (what ran, what happened) to OBS.jsonl", G_JUDGE },
        { "replay", "OBS.jsonl", C_JUDGE, opt_replay, "judge the observations in OBS.jsonl against the spec; no sandbox runs", G_JUDGE },
        { "junit", "FILE", C_JUDGE | C_TEST, opt_junit, "also write the cases (tests) as JUnit XML to FILE", G_OUTPUT },
        { "html", "FILE", C_REPORT, opt_html, "also write the summary as one self-contained HTML page to FILE", G_OUTPUT },
        { "quiet", NULL, C_BATCH, opt_quiet, "no progress line and no closing summary on stderr", G_BATCH },
        { "help", NULL, C_ALL | (1u << NSB_CMD_PROFILE) | C_REPORT, opt_help, "show this help", G_GENERAL },
};

/* run and python share these; run adds 126/127 between them. */
#define EXIT_RUN_HEAD                                                                                   \
        "  N      the program exited with status N\n"                                                  \
        "  124    a limit stopped it (the result's `limit` says which)\n"                              \
        "  125    nsbox itself failed: usage, configuration, sandbox set-up (status error)\n"
#define EXIT_RUN_TAIL                                                                                   \
        "  128+N  it died of signal N\n"                                                               \
        "  130    cancelled (SIGINT, SIGTERM, SIGHUP): the whole tree was killed\n"
#define EXIT_VERDICT(what)                                                                             \
        "  0      every " what " passed\n"                                                             \
        "  1      some " what " failed (wrong output, nonzero exit, a limit, a crash)\n"               \
        "  3      undetermined: the sandbox failed, or cut output cannot settle a check\n"

static const struct cli_cmd {
        const char *name;
        enum nsb_cmd cmd;
        const char *synopsis;  /* may hold several lines */
        const char *purpose;   /* one line */
        const char *exits;     /* the EXIT STATUS section */
        const char *example;
} commands[] = {
        { "run", NSB_CMD_RUN, "nsbox run [OPTIONS] -- COMMAND [ARG...]",
          "run COMMAND in a fresh sandbox (minimal profile)",
          EXIT_RUN_HEAD "  126    COMMAND exists but cannot be executed (status error, stage exec)\n"
                        "  127    COMMAND does not exist (status error, stage exec)\n" EXIT_RUN_TAIL,
          "nsbox run --json --wall-time 2s -- /bin/echo hi" },
        { "python", NSB_CMD_PYTHON, "nsbox python [OPTIONS] [--] SCRIPT [ARG...]\n       nsbox python [OPTIONS] -c CODE [ARG...]",
          "run a Python script, or code given with -c, in a fresh sandbox (python profile)", EXIT_RUN_HEAD EXIT_RUN_TAIL,
          "nsbox python --json --memory 128M --wall-time 2s -c 'print(sum(range(10**6)))'" },
        { "judge", NSB_CMD_JUDGE, "nsbox judge [OPTIONS] SPEC.json",
          "run a program against the cases of SPEC.json, one sandbox per case, and print a verdict",
          EXIT_VERDICT("case") "  125    bad spec, or nsbox itself failed\n",
          "nsbox judge examples/judge-spec.json" },
        { "test", NSB_CMD_TEST, "nsbox test [OPTIONS] --harness DIR",
          "run the hidden tests in DIR against the workspace, with feedback per test",
          EXIT_VERDICT("test") "  125    usage or set-up error\n",
          "nsbox test --harness examples/course/harness --workspace examples/course/workspace" },
        { "batch", NSB_CMD_BATCH, "nsbox batch [OPTIONS] [JOBS.jsonl|-]",
          "run many jobs (JSON Lines) in parallel, one sandbox each, one result line each",
          "  0      every job taken produced its line (whatever the jobs' own outcomes)\n"
          "  2      as 0, but some input lines were bad (each got an error line)\n"
          "  125    usage, unreadable input or --resume file, stdout closed\n"
          "  130    cancelled (SIGINT, SIGTERM, SIGHUP): the lines written so far are whole\n",
          "nsbox batch -j 2 examples/jobs.jsonl > results.jsonl" },
        { "doctor", NSB_CMD_DOCTOR, "nsbox doctor [--json] [--isolation MODE] [--interpreter PATH]",
          "say whether this host can sandbox programs, and the exact fix when it cannot",
          "  0      the requested isolation can be provided\n"
          "  1      it cannot (each failing check says why, and its fix)\n"
          "  125    usage error\n",
          "nsbox doctor --json" },
        { "profile", NSB_CMD_PROFILE, "nsbox profile show NAME|FILE",
          "print the resolved policy of a built-in profile or an INI file, as a profile file",
          "  0      printed\n"
          "  125    no such profile, or a bad profile file (FILE:LINE says where)\n",
          "nsbox profile show python" },
        { "report", NSB_CMD_REPORT, "nsbox report [--html FILE] RESULTS.jsonl... ('-': stdin)",
          "summarise batch results and judge verdicts for a person: counts, slowest jobs, errors by stage",
          "  0      the summary was printed\n"
          "  1      no line of the input was a result or a verdict\n"
          "  125    usage error, an input that cannot be read, or --html cannot be written\n",
          "nsbox report examples/results.jsonl" },
};

#define N_OPTIONS (sizeof options / sizeof options[0])
#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* The row of --NAME (@len bytes) for @cmd; a row of another command when
 * @cmd has none (so the caller can say whose it is); NULL when none. */
static const struct cli_opt *find_opt(const char *name, size_t len, enum nsb_cmd cmd)
{
        const struct cli_opt *other = NULL;

        for (size_t i = 0; i < N_OPTIONS; i++)
                if (strlen(options[i].name) == len && strncmp(options[i].name, name, len) == 0) {
                        if (options[i].cmds & (1u << cmd))
                                return &options[i];
                        other = other ? other : &options[i];
                }
        return other;
}

static const char *cmd_name(enum nsb_cmd cmd)
{
        for (size_t i = 0; i < N_COMMANDS; i++)
                if (commands[i].cmd == cmd)
                        return commands[i].name;
        return "nsbox";
}

/* "batch", "judge and test", "run, python and batch": the commands of @cmds. */
static void cmds_text(unsigned cmds, char *buf, size_t size)
{
        size_t n = 0, k = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < N_COMMANDS; i++)
                n += (cmds >> commands[i].cmd) & 1u;
        for (size_t i = 0; i < N_COMMANDS; i++) {
                size_t len = strlen(buf);
                if (!((cmds >> commands[i].cmd) & 1u))
                        continue;
                k++;
                snprintf(buf + len, size - len, "%s%s", k == 1 ? "" : k == n ? " and " : ", ", commands[i].name);
        }
}

/* "unknown option '--wall-tme' (did you mean --wall-time?)": only the
 * options @cmd takes are suggested; an option of other commands says whose. */
static int unknown_option(enum nsb_cmd cmd, const char *arg, size_t len, struct nsb_error *e)
{
        const char *names[N_OPTIONS];
        const char *word = arg + (arg[1] == '-' ? 2 : 1);
        size_t n = 0, wlen = len - (size_t) (word - arg);
        const struct cli_opt *other = find_opt(word, wlen, cmd);
        char typed[WORD_BUF], whose[128];
        const char *best;

        if (other && !(other->cmds & (1u << cmd))) {
                cmds_text(other->cmds, whose, sizeof whose);
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: '%.*s' is an option of %s, not of %s",
                                cmd_name(cmd), (int) len, arg, whose, cmd_name(cmd));
        }
        for (size_t i = 0; i < N_OPTIONS; i++)
                if ((options[i].cmds & (1u << cmd)) && (n == 0 || strcmp(names[n - 1], options[i].name) != 0))
                        names[n++] = options[i].name;
        snprintf(typed, sizeof typed, "%.*s", (int) wlen, word);
        best = cfg_closest(typed, names, n);
        if (best)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s' (did you mean --%s?)",
                                cmd_name(cmd), (int) len, arg, best);
        /* Close to an option of another command: say whose it is. */
        n = 0;
        for (size_t i = 0; i < N_OPTIONS; i++)
                if (n == 0 || strcmp(names[n - 1], options[i].name) != 0)
                        names[n++] = options[i].name;
        best = cfg_closest(typed, names, n);
        if (best && (other = find_opt(best, strlen(best), cmd))) {
                cmds_text(other->cmds, whose, sizeof whose);
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s' (--%s is an option of %s, "
                                "not of %s)", cmd_name(cmd), (int) len, arg, best, whose, cmd_name(cmd));
        }
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s' (nsbox %s --help lists the options)",
                        cmd_name(cmd), (int) len, arg, cmd_name(cmd));
}

static int unknown_command(const char *word, struct nsb_error *e)
{
        const char *names[N_COMMANDS];
        const char *best;

        for (size_t i = 0; i < N_COMMANDS; i++)
                names[i] = commands[i].name;
        best = strlen(word) < WORD_BUF ? cfg_closest(word, names, N_COMMANDS) : NULL;
        if (best)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "unknown command '%s' (did you mean %s?)", word, best);
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "unknown command '%s' (nsbox --help lists the commands)", word);
}

/* Positional arguments of each command, after the options. */
static int take_positionals(struct nsb_config *cfg, int argc, char **argv, int i, struct nsb_error *e)
{
        switch (cfg->cmd) {
        case NSB_CMD_RUN:
                if (i >= argc)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "run: missing COMMAND (nsbox run [OPTIONS] -- COMMAND [ARG...])");
                break;
        case NSB_CMD_PYTHON:
                if (!cfg->inline_code && i >= argc)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "python: missing SCRIPT (or -c CODE)");
                break;
        case NSB_CMD_JUDGE:
                if (argc - i > 1)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "judge: unexpected argument '%s' after SPEC.json '%s' (options go before it)",
                                        argv[i + 1], argv[i]);
                if (argc - i != 1)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "judge: expected exactly one SPEC.json");
                return set_str(&cfg->input_path, argv[i], e);
        case NSB_CMD_PROFILE:
                if (argc - i != 2 || strcmp(argv[i], "show") != 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "profile: expected 'show NAME|FILE'");
                return set_str(&cfg->input_path, argv[i + 1], e);
        case NSB_CMD_REPORT:
                if (i >= argc)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "report: expected RESULTS.jsonl... (batch results or judge verdicts; '-': stdin)");
                for (int k = i; k < argc; k++)
                        if (strncmp(argv[k], "--", 2) == 0)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                                "report: '%s' after the files: options go before them "
                                                "(a file named so: ./%s)", argv[k], argv[k]);
                break;
        case NSB_CMD_BATCH:
                if (argc - i > 1)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "batch: unexpected argument '%s'", argv[i + 1]);
                return argc - i == 1 ? set_str(&cfg->input_path, argv[i], e) : 0;
        default:
                if (i < argc)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unexpected argument '%s'",
                                        cmd_name(cfg->cmd), argv[i]);
                return 0;
        }
        for (; i < argc; i++) {
                int r = push_str(&cfg->argv, &cfg->argc, argv[i], e);
                if (r < 0)
                        return r;
        }
        return 0;
}

int cfg_parse_cli(int argc, char **argv, struct nsb_config *cfg, struct nsb_error *e)
{
        enum nsb_cmd cmd = NSB_CMD_NONE;
        const char *word;
        int i, r;

        if (argc < 2) {
                cfg_defaults(cfg, NSB_CMD_HELP);
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "missing command (try nsbox --help)");
        }
        word = argv[1];
        if (strcmp(word, "--version") == 0 || strcmp(word, "-V") == 0) {
                cfg_defaults(cfg, NSB_CMD_VERSION);
                return 0;
        }
        if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0 || strcmp(word, "help") == 0) {
                cfg_defaults(cfg, NSB_CMD_HELP);
                return 0;
        }
        for (size_t k = 0; k < N_COMMANDS; k++)
                if (strcmp(word, commands[k].name) == 0)
                        cmd = commands[k].cmd;
        cfg_defaults(cfg, cmd);
        if (cmd == NSB_CMD_NONE)
                return unknown_command(word, e);

        for (i = 2; i < argc; i++) {
                const char *a = argv[i], *eq, *value = NULL;
                const struct cli_opt *o;
                size_t len;

                if (strcmp(a, "--") == 0) {
                        i++;
                        break;
                }
                if (cmd == NSB_CMD_PYTHON && strcmp(a, "-c") == 0) {
                        if (i + 1 >= argc)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "python: -c needs CODE");
                        r = set_str(&cfg->inline_code, argv[++i], e);
                        if (r < 0)
                                return r;
                        i++;
                        break;   /* everything after CODE is the program's argv */
                }
                /* -j N, or -jN as make(1) takes it */
                if (cmd == NSB_CMD_BATCH && strncmp(a, "-j", 2) == 0) {
                        if (!a[2] && i + 1 >= argc)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "batch: -j needs N");
                        r = opt_jobs(cfg, a[2] ? a + 2 : argv[++i], e);
                        if (r < 0)
                                return nsb_error_prefix(e, "-j");
                        continue;
                }
                if (strcmp(a, "-h") == 0) {
                        cfg->help = true;
                        continue;
                }
                if (a[0] != '-' || strcmp(a, "-") == 0)
                        break;   /* first positional */
                if (strncmp(a, "--", 2) != 0)
                        return unknown_option(cmd, a, strcspn(a, "="), e);
                eq = strchr(a + 2, '=');
                len = eq ? (size_t) (eq - (a + 2)) : strlen(a + 2);
                o = find_opt(a + 2, len, cmd);
                if (!o || !(o->cmds & (1u << cmd)))
                        return unknown_option(cmd, a, len + 2, e);
                if (o->metavar) {
                        if (eq)
                                value = eq + 1;
                        else if (i + 1 < argc)
                                value = argv[++i];
                        else
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--%s needs a value (%s)",
                                                o->name, o->metavar);
                } else if (eq) {
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--%s takes no value", o->name);
                }
                r = o->fn(cfg, value, e);
                if (r < 0)
                        return nsb_error_prefix(e, "--%s", o->name);
                cfg->set |= cfg_field_of_option(o->name);
        }
        if (cfg->help)
                return 0;
        return take_positionals(cfg, argc, argv, i, e);
}

int cfg_absolute_sources(struct nsb_config *cfg, const char *cwd, struct nsb_error *e)
{
        for (size_t i = 0; i < cfg->n_binds; i++) {
                struct nsb_bind *b = &cfg->binds[i];
                const char *what = b->read_only ? "--ro-bind" : "--bind";
                char *abs = NULL;

                if (b->src[0] == '/')
                        continue;
                if (b->dst[0] != '/')
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "%s '%s': a relative SRC is found in the current directory, but DST must "
                                        "be absolute (SRC:/DST)", what, b->src);
                if (nsb_asprintf(&abs, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/",
                             strncmp(b->src, "./", 2) == 0 ? b->src + 2 : b->src) < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
                free(b->src);
                b->src = abs;
        }
        return 0;
}

int cfg_set_option(struct nsb_config *cfg, const char *name, const char *value, struct nsb_error *e)
{
        const struct cli_opt *o = find_opt(name, strlen(name), NSB_CMD_NONE);

        if (!o || !o->metavar)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "no option '%s'", name);
        return o->fn(cfg, value, e);
}

bool cfg_option_row(size_t i, const char **ret_name, const char **ret_metavar, unsigned *ret_cmds)
{
        if (i >= N_OPTIONS)
                return false;
        *ret_name = options[i].name;
        *ret_metavar = options[i].metavar;
        *ret_cmds = options[i].cmds;
        return true;
}

bool cfg_command_row(size_t i, const char **ret_name, enum nsb_cmd *ret_cmd)
{
        if (i >= N_COMMANDS)
                return false;
        *ret_name = commands[i].name;
        *ret_cmd = commands[i].cmd;
        return true;
}

/* "--memory SIZE" */
static void opt_head(const struct cli_opt *o, char *buf, size_t size)
{
        snprintf(buf, size, "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
}

static void usage_top(FILE *f)
{
        fputs("nsbox — run untrusted programs in a Linux namespace sandbox, with an accurate account of each run\n\n"
              "Usage: nsbox COMMAND [OPTIONS] [ARGS]\n"
              "       nsbox --version | --help | COMMAND --help\n\nCommands:\n", f);
        for (size_t k = 0; k < N_COMMANDS; k++)
                fprintf(f, "  %-8s %s\n", commands[k].name, commands[k].purpose);
        fputs("\nExit status:\n"
              "  run, python  the program's own status; 124 a limit stopped it; 128+N signal N;\n"
              "               130 cancelled; 125 nsbox itself failed (usage, configuration, set-up)\n"
              "  judge, test  0 pass, 1 fail, 3 undetermined, 125 bad input or set-up error\n"
              "  batch        0 every job produced its line, 125 set-up error, 130 cancelled\n"
              "  doctor       0 ready, 1 not ready\n"
              "\nExample:\n  nsbox python --json --memory 128M --wall-time 2s -c 'print(sum(range(10**6)))'\n"
              "\nFirst run `nsbox doctor`. Each command explains itself: nsbox COMMAND --help.\n"
              "The whole interface: docs/contract.md in the source tree.\n", f);
}

static void usage_cmd(FILE *f, const struct cli_cmd *c)
{
        fprintf(f, "nsbox %s — %s\n\nUsage: %s\n", c->name, c->purpose, c->synopsis);
        for (int g = 0; g < G__MAX; g++) {
                bool titled = false;
                for (size_t k = 0; k < N_OPTIONS; k++) {
                        char head[64];
                        if (options[k].group != (enum opt_group) g || !(options[k].cmds & (1u << c->cmd)))
                                continue;
                        if (!titled)
                                fprintf(f, "\n%s:\n", group_titles[g]);
                        titled = true;
                        opt_head(&options[k], head, sizeof head);
                        if (strlen(head) >= 26)
                                fprintf(f, "  %s\n  %-26s %s\n", head, "", options[k].help);
                        else
                                fprintf(f, "  %-26s %s\n", head, options[k].help);
                }
        }
        fprintf(f, "\nExit status:\n%s\nExample:\n  %s\n", c->exits, c->example);
}

char *cfg_usage(enum nsb_cmd cmd)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        if (cmd == NSB_CMD_NONE || cmd == NSB_CMD_HELP)
                usage_top(f);
        for (size_t k = 0; k < N_COMMANDS; k++)
                if (commands[k].cmd == cmd)
                        usage_cmd(f, &commands[k]);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
