/* config/cli_parse.c — the command line, through one option table. Pure.
 *
 * Grammar: nsbox COMMAND [OPTIONS] [--] [POSITIONAL...]
 * Options take their value as the next argument or after '=' (--memory=1G).
 * Option parsing stops at "--" or at the first positional argument, so the
 * sandboxed command's own flags are never read as nsbox's.
 */
#include "config/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        free(cfg->cgroup_parent);
        free(cfg->interpreter);
        free(cfg->interp_args);
        free_strv(cfg->packages, cfg->n_packages);
        free_strv(cfg->seccomp_deny, cfg->n_seccomp_deny);
        free(cfg->inline_code);
        free_strv(cfg->argv, cfg->argc);
        free(cfg->input_path);
        free(cfg->resume_path);
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

/* Where it is and whether it is usable is the cgroup module's question, at
 * run time (cg_obtain); here only its form. */
static int opt_cgroup_parent(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        if (v[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "expected the absolute path of a cgroup v2 directory (under /sys/fs/cgroup), "
                                "got '%s'", v);
        return set_str(&c->cgroup_parent, v, e);
}
static int opt_interpreter(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->interpreter, v, e); }
static int opt_interp_args(struct nsb_config *c, const char *v, struct nsb_error *e) { return set_str(&c->interp_args, v, e); }
static int opt_json(struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->json = true; c->doctor_json = true; return 0; }
static int opt_help(struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->help = true; return 0; }
static int opt_fail_fast(struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->fail_fast = true; return 0; }
static int opt_wall(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_duration(v, &c->wall_time_ms, e); }
static int opt_cpu(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_duration(v, &c->cpu_time_ms, e); }
static int opt_memory(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_bound(v, &c->memory_bytes, e); }
static int opt_output(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_size(v, &c->output_limit_bytes, e); }
static int opt_fsize(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_size(v, &c->file_size_bytes, e); }
static int opt_tmp(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_bound(v, &c->tmp_size_bytes, e); }
static int opt_pids(struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_parse_count(v, 1, 1 << 22, &c->pids_max, e); }

static int opt_jobs(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        uint64_t n;
        int r = cfg_parse_count(v, 1, 4096, &n, e);
        if (r < 0)
                return r;
        c->jobs = (unsigned) n;
        return 0;
}

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
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--env '%s': expected NAME=VALUE", v);
        for (const char *p = v; p < eq; p++)
                if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                      (p > v && *p >= '0' && *p <= '9')))
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "--env '%s': invalid variable name", v);
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
                                "--network '%s': expected none or loopback", v);
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
                                "--isolation '%s': expected strict or reduced", v);
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
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "bind '%s': empty source", v);
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
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "package '%s': expected an absolute path", v);
        return push_str(&c->packages, &c->n_packages, v, e);
}

static int opt_seccomp_deny(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        /* Only the shape here; the filter compiler rejects a name the
         * kernel does not know, before anything runs. */
        if (!*v || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(v))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "seccomp deny '%s': not a syscall name", v);
        return push_str(&c->seccomp_deny, &c->n_seccomp_deny, v, e);
}

static int opt_tmpfs(struct nsb_config *c, const char *v, struct nsb_error *e)
{
        const char *colon = strchr(v, ':');
        struct nsb_tmpfs t = { 0 };
        struct nsb_tmpfs *nt;

        if (colon && cfg_parse_size(colon + 1, &t.size_bytes, e) < 0)
                return nsb_error_prefix(e, "tmpfs '%s'", v);
        if (colon && t.size_bytes == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "tmpfs '%s': size must be positive", v);
        if (v[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "tmpfs '%s': expected an absolute DST[:SIZE]", v);
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
#define C_SANDBOX (C_RUN | C_PY | C_JUDGE | C_TEST | C_BATCH)
#define C_ALL (C_SANDBOX | C_DOCTOR)

struct cli_opt {
        const char *name;      /* without the leading "--" */
        const char *metavar;   /* NULL: a flag without value */
        unsigned cmds;         /* commands that accept it */
        opt_fn fn;
        const char *help;
};

static const struct cli_opt options[] = {
        { "profile", "NAME|FILE", C_SANDBOX, opt_profile, "built-in profile (python, minimal) or an INI file" },
        { "workspace", "DIR", C_SANDBOX, opt_workspace, "bound read-write at /workspace (default: fresh, empty, private)" },
        { "harness", "DIR", C_SANDBOX, opt_harness, "bound read-only at /harness" },
        { "ro-bind", "SRC[:DST]", C_SANDBOX, opt_ro_bind, "extra read-only mount (repeatable)" },
        { "bind", "SRC[:DST]", C_SANDBOX, opt_bind, "extra read-write mount (repeatable)" },
        { "tmpfs", "DST[:SIZE]", C_SANDBOX, opt_tmpfs, "extra private writable tmpfs (default size: --tmp-size; repeatable)" },
        { "wall-time", "DUR", C_SANDBOX, opt_wall, "wall-clock limit, e.g. 500ms, 10s, 2m (default 10s)" },
        { "cpu-time", "DUR", C_SANDBOX, opt_cpu, "CPU-time limit of the whole tree (default: = wall time)" },
        { "memory", "SIZE", C_SANDBOX, opt_memory, "memory limit, e.g. 256M, 1G (default 256M)" },
        { "pids", "N", C_SANDBOX, opt_pids, "process and thread limit (default 64)" },
        { "output-limit", "SIZE", C_SANDBOX, opt_output, "bytes of stdout and of stderr kept each; 4x in all stops the run (default 1M)" },
        { "file-size", "SIZE", C_SANDBOX, opt_fsize, "largest file the program may write (default 16M)" },
        { "tmp-size", "SIZE", C_SANDBOX, opt_tmp, "size of the private /tmp (default 64M)" },
        { "stdin", "FILE", C_SANDBOX, opt_stdin,
          "standard input (default: empty); judge and batch: for the cases and jobs that give none" },
        { "env", "NAME=VALUE", C_SANDBOX, opt_env, "add to the scrubbed environment (repeatable)" },
        { "network", "none|loopback", C_SANDBOX, opt_network, "empty network namespace; loopback brings up lo inside it" },
        { "isolation", "strict|reduced", C_ALL, opt_isolation, "reduced must be asked for explicitly (default strict)" },
        { "interpreter", "PATH", C_PY | C_JUDGE | C_TEST | C_BATCH | C_DOCTOR, opt_interpreter, "host Python interpreter (default /usr/bin/python3)" },
        { "interpreter-args", "ARGS", C_PY | C_JUDGE | C_TEST | C_BATCH, opt_interp_args, "interpreter arguments before the program, blank-separated (default \"-I -B\")" },
        { "package", "DIR", C_SANDBOX, opt_package, "python package dir mounted read-only at the same path (repeatable)" },
        { "seccomp-deny", "SYSCALL", C_SANDBOX, opt_seccomp_deny, "also deny this syscall with EPERM (repeatable)" },
        { "json", NULL, C_ALL, opt_json, "print the result object on stdout instead of the program's streams" },
        { "result", "FILE", C_SANDBOX, opt_result, "also write the result object to FILE (batch: every line)" },
        { "cgroup-parent", "DIR", C_ALL, opt_cgroup_parent, "make run cgroups in DIR, a delegated cgroup v2 subtree with memory and pids (default: nsbox's own cgroup, or a systemd scope it asks for)" },
        { "jobs", "N", C_BATCH, opt_jobs, "parallel jobs (default: number of cores); also -j N" },
        { "resume", "FILE", C_BATCH, opt_resume, "skip the jobs whose id already has a line in FILE (earlier results)" },
        { "shard", "K/N", C_BATCH, opt_shard, "take every Nth line from line K+1 (0 <= K < N): one of N machines" },
        { "fail-fast", NULL, C_JUDGE, opt_fail_fast, "stop at the first failing case" },
        { "help", NULL, C_ALL | (1u << NSB_CMD_PROFILE), opt_help, "show this help" },
};

static const struct { const char *name; enum nsb_cmd cmd; const char *synopsis; } commands[] = {
        { "run", NSB_CMD_RUN, "nsbox run [OPTIONS] -- COMMAND [ARG...]" },
        { "python", NSB_CMD_PYTHON, "nsbox python [OPTIONS] [--] SCRIPT [ARG...] | -c CODE [ARG...]" },
        { "judge", NSB_CMD_JUDGE, "nsbox judge [OPTIONS] SPEC.json" },
        { "test", NSB_CMD_TEST, "nsbox test [OPTIONS] --harness DIR" },
        { "batch", NSB_CMD_BATCH, "nsbox batch [OPTIONS] [JOBS.jsonl|-]" },
        { "doctor", NSB_CMD_DOCTOR, "nsbox doctor [--json] [--isolation MODE] [--interpreter PATH]" },
        { "profile", NSB_CMD_PROFILE, "nsbox profile show NAME|FILE" },
};

static const struct cli_opt *find_opt(const char *name, size_t len)
{
        for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
                if (strlen(options[i].name) == len && strncmp(options[i].name, name, len) == 0)
                        return &options[i];
        return NULL;
}

static const char *cmd_name(enum nsb_cmd cmd)
{
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
                if (commands[i].cmd == cmd)
                        return commands[i].name;
        return "nsbox";
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
        for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
                if (strcmp(word, commands[k].name) == 0)
                        cmd = commands[k].cmd;
        cfg_defaults(cfg, cmd);
        if (cmd == NSB_CMD_NONE)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "unknown command '%s' (try nsbox --help)", word);

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
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%s'", cmd_name(cmd), a);
                eq = strchr(a + 2, '=');
                len = eq ? (size_t) (eq - (a + 2)) : strlen(a + 2);
                o = find_opt(a + 2, len);
                if (!o || !(o->cmds & (1u << cmd)))
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s'",
                                        cmd_name(cmd), (int) (len + 2), a);
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
                if (asprintf(&abs, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/",
                             strncmp(b->src, "./", 2) == 0 ? b->src + 2 : b->src) < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
                free(b->src);
                b->src = abs;
        }
        return 0;
}

int cfg_set_option(struct nsb_config *cfg, const char *name, const char *value, struct nsb_error *e)
{
        const struct cli_opt *o = find_opt(name, strlen(name));

        if (!o || !o->metavar)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "no option '%s'", name);
        return o->fn(cfg, value, e);
}

char *cfg_usage(enum nsb_cmd cmd)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        if (cmd == NSB_CMD_NONE || cmd == NSB_CMD_HELP) {
                fputs("nsbox — run untrusted programs in a Linux namespace sandbox\n\nUsage:\n", f);
                for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
                        fprintf(f, "  %s\n", commands[k].synopsis);
                fputs("  nsbox --version | --help | COMMAND --help\n", f);
        } else {
                for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
                        if (commands[k].cmd == cmd)
                                fprintf(f, "Usage: %s\n\nOptions:\n", commands[k].synopsis);
                for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) {
                        char head[64];
                        if (!(options[k].cmds & (1u << cmd)))
                                continue;
                        snprintf(head, sizeof head, "--%s%s%s", options[k].name,
                                 options[k].metavar ? " " : "", options[k].metavar ? options[k].metavar : "");
                        fprintf(f, "  %-28s %s\n", head, options[k].help);
                }
        }
        fclose(f);
        return buf;
}
