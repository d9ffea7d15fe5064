/* config/schema.c — the one table of every option and policy key
 * (config/schema.h), and the value parsers its rows name. Pure.
 */
#include "config/schema.h"
#include "config/config_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsbox-config.h"
#if NSBOX_HAVE_SECCOMP
#include <seccomp.h>
#endif
#include "util/cleanup.h"
#include "util/portable.h"

/* ---- value parsers ------------------------------------------------------- */

int cfg_set_text(char **field, const char *value, struct nsb_error *e)
{
        char *copy = strdup(value);
        if (!copy)
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        free(*field);
        *field = copy;
        return 0;
}

int cfg_push_text(char ***v, size_t *n, const char *value, struct nsb_error *e)
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

static int opt_profile(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->profile, v, e); }
static int opt_workspace(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->workspace, v, e); }
static int opt_harness(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->harness, v, e); }
static int opt_stdin(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->stdin_path, v, e); }
static int opt_result(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->result_path, v, e); }
/* Where it is and whether it is usable is the cgroup module's question, at
 * run time (cg_obtain); here only its form. */
static int opt_cgroup_parent(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        if (v[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "expected the absolute path of a cgroup v2 directory (under /sys/fs/cgroup), "
                                "got '%s'", v);
        return cfg_set_text(&c->cgroup_parent, v, e);
}
static int opt_json(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->json = true; c->doctor_json = true; return 0; }
static int opt_help(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->help = true; return 0; }
static int opt_observe(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->observe_path, v, e); }
static int opt_replay(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->replay_path, v, e); }
static int opt_fail_fast(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->fail_fast = true; return 0; }
static int opt_quiet(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->quiet = true; return 0; }
static int opt_warm(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->warm = true; return 0; }

static int opt_warm_rotate(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        uint64_t n;
        int r = cfg_parse_count(v, 1, NSB_WARM_ROTATE_MAX, &n, e);
        if (r < 0)
                return r;
        c->warm_rotate = (unsigned) n;
        return 0;
}

static int opt_jobs(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        uint64_t n;
        int r = cfg_parse_count(v, 1, 4096, &n, e);
        if (r < 0)
                return r;
        c->jobs = (unsigned) n;
        return 0;
}

static int opt_junit(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->junit_path, v, e); }
static int opt_junit_expected(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { (void) v; (void) e; c->junit_expected = true; return 0; }
static int opt_program(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->program_path, v, e); }
static int opt_html(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->html_path, v, e); }
static int opt_resume(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return cfg_set_text(&c->resume_path, v, e); }

/* K/N with 0 <= K < N: shard K of N (0-based, like a Kubernetes completion
 * index; a Slurm array can pass $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT). */
static int opt_shard(const struct cfg_key *row, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        const char *slash = strchr(v, '/');
        char k[32];
        uint64_t idx, n;

        if (!slash || (size_t) (slash - v) >= sizeof k)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': expected K/N, e.g. 0/4", QV(v));
        memcpy(k, v, (size_t) (slash - v));
        k[slash - v] = '\0';
        if (cfg_parse_count(slash + 1, 1, 1u << 20, &n, e) < 0 || cfg_parse_count(k, 0, n - 1, &idx, e) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': expected K/N with 0 <= K < N", QV(v));
        c->shard_index = (unsigned) idx;
        c->shard_count = (unsigned) n;
        return 0;
}

static int opt_env(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        const char *eq = strchr(v, '=');
        if (!eq || eq == v)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': expected NAME=VALUE", QV(v));
        for (const char *p = v; p < eq; p++)
                if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                      (p > v && *p >= '0' && *p <= '9')))
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "'%.*s%s': invalid variable name (letters, digits and _, not starting with "
                                        "a digit)", QV(v));
        /* --env A=1 --env A=2: the program sees A=2, and so does the policy
         * (one entry, so the same environment always has the same hash). */
        for (size_t i = 0; i < c->n_env_add; i++)
                if (strncmp(c->env_add[i], v, (size_t) (eq - v) + 1) == 0)
                        return cfg_set_text(&c->env_add[i], v, e);
        return cfg_push_text(&c->env_add, &c->n_env_add, v, e);
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
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': empty source (expected SRC[:DST])", QV(v));
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

static int opt_package(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        if (v[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': expected an absolute path", QV(v));
        return cfg_push_text(&c->packages, &c->n_packages, v, e);
}

/* A module the zygote imports (warm/zygote.py): a dotted name of ASCII
 * identifiers, nothing else. Checked here, where the flag or the profile
 * line can still be named; the name is written into the zygote's program as
 * a string literal, so this check is also what keeps that text a literal. */
#define PRELOAD_NAME_MAX 200
static int opt_preload(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        size_t len = strlen(v);
        bool start = true;

        for (size_t i = 0; i < len; i++) {
                char ch = v[i];
                bool letter = ch == '_' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
                bool ok = start ? letter : letter || (ch >= '0' && ch <= '9') || (ch == '.' && i + 1 < len);

                if (!ok)
                        break;
                start = ch == '.';
                if (i + 1 == len && len <= PRELOAD_NAME_MAX)
                        return cfg_push_text(&c->preload, &c->n_preload, v, e);
        }
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': not a module name (identifiers of ASCII letters, "
                        "digits and _ joined by dots, e.g. numpy or xml.etree, at most %d characters)", QV(v),
                        PRELOAD_NAME_MAX);
}

static int opt_seccomp_deny(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        /* The name is checked here, where the flag or the profile line can
         * still be named (libseccomp's table lookup makes no syscall); the
         * filter compiler checks it again before anything runs. */
        if (!*v || strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(v))
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': not a syscall name (lower-case letters, "
                                "digits and _)", QV(v));
#if NSBOX_HAVE_SECCOMP
        /* (the posix platform has no seccomp: its plan refuses any name) */
        if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, v) < 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': not a system call of this architecture (as "
                                "named in syscalls(2), e.g. uname, getcpu)", QV(v));
#endif
        return cfg_push_text(&c->seccomp_deny, &c->n_seccomp_deny, v, e);
}

static int opt_tmpfs(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        const char *colon = strchr(v, ':');
        struct nsb_tmpfs t = { 0 };
        struct nsb_tmpfs *nt;

        if (colon && cfg_parse_size(colon + 1, &t.size_bytes, e) < 0)
                return nsb_error_prefix(e, "'%.*s%s'", QV(v));
        if (colon && t.size_bytes == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': size must be positive", QV(v));
        if (v[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': expected an absolute DST[:SIZE]", QV(v));
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

static int opt_ro_bind(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return add_bind(c, v, true, e); }
static int opt_bind(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e) { return add_bind(c, v, false, e); }

/* A limit: parsed as its kind, then checked against the row's range, which
 * every source of the value shares. Zero is never a limit (it would turn a
 * bound off, keep nothing, or kill the program at its first byte), and a
 * value no host could mean is a typo. */
static int parse_limit(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        uint64_t n;
        int r = k->kind == CFG_KIND_DURATION ? cfg_parse_duration(v, &n, e)
                : k->kind == CFG_KIND_COUNT  ? cfg_parse_count(v, k->min, k->max, &n, e)
                                             : cfg_parse_size(v, &n, e);

        if (r < 0)
                return r;
        if (n < k->min || n > k->max)
                return nsb_fail(e, NSB_STAGE_USAGE, 0, "'%s' is out of range: allowed %s to %s (%s)", v,
                                k->min_text, k->max_text, k->why);
        memcpy((char *) c + k->offset, &n, sizeof n);
        return 0;
}

/* One of the row's choices: "'x': expected none or loopback". */
static int parse_choice(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        char list[128] = "";
        size_t n = 0;

        while (k->choices[n])
                n++;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(v, k->choices[i]) == 0) {
                        int val = (int) i;
                        memcpy((char *) c + k->offset, &val, k->size);
                        return 0;
                }
                nsb_appendf(list, sizeof list, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", k->choices[i]);
        }
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s': expected %s", QV(v), list);
}

/* A string field (the interpreter, its args). */
static int parse_text(const struct cfg_key *k, struct nsb_config *c, const char *v, struct nsb_error *e)
{
        return cfg_set_text((char **) ((char *) c + k->offset), v, e);
}

/* ---- the table ------------------------------------------------------------- */

#define C_RUN (1u << NSB_CMD_RUN)
#define C_PY (1u << NSB_CMD_PYTHON)
#define C_JUDGE (1u << NSB_CMD_JUDGE)
#define C_TEST (1u << NSB_CMD_TEST)
#define C_BATCH (1u << NSB_CMD_BATCH)
#define C_DOCTOR (1u << NSB_CMD_DOCTOR)
#define C_REPORT (1u << NSB_CMD_REPORT)
#define C_SANDBOX (C_RUN | C_PY | C_JUDGE | C_TEST | C_BATCH)
#define C_ALL (C_SANDBOX | C_DOCTOR)
#define C_PYTHON (C_PY | C_JUDGE | C_TEST | C_BATCH)

#define KIB (1ULL << 10)
#define MIB (1ULL << 20)
#define GIB (1ULL << 30)
#define TIB (1ULL << 40)
#define DAY_MS (24ULL * 3600 * 1000)

#define FIELD(f) .offset = offsetof(struct nsb_config, f), .size = sizeof(((struct nsb_config *) 0)->f)
#define LIST(f, n) FIELD(f), .count_offset = offsetof(struct nsb_config, n), \
                   .elem_size = sizeof(*((struct nsb_config *) 0)->f)

/* A command-line option that is no policy key: what a command does, where
 * its output goes. */
#define OPT(FLAG, MV, CMDS, FN, GROUP, HELP) \
        { .flag = FLAG, .metavar = MV, .cmds = CMDS, .parse = FN, .group = GROUP, .help = HELP }

/* A limit: flag, profile [limits] key, and judge/batch "limits" key alike. */
#define LIMIT(FLAG, MV, KEY, KIND, F, DEF, BIT, MIN, MAX, MINT, MAXT, WHY, HELP)                        \
        { .flag = FLAG, .metavar = MV, .cmds = C_SANDBOX, .parse = parse_limit, .group = CFG_G_LIMITS,  \
          .help = HELP, .kind = KIND, .section = "limits", .key = KEY, .json = KEY, FIELD(F), .def = DEF, \
          .bit = BIT, .min = MIN, .max = MAX, .min_text = MINT, .max_text = MAXT, .why = WHY,           \
          .render = cfg_render_limit }

static const char *const isolation_names[] = { "strict", "reduced", NULL };
static const char *const network_names[] = { "none", "loopback", NULL };

/* One row per option, in --help order within each group. */
static const struct cfg_key keys[] = {
        OPT("profile", "NAME|FILE", C_SANDBOX, opt_profile, CFG_G_ISOLATION,
            "built-in profile (python, minimal) or an INI file"),
        OPT("workspace", "DIR", C_SANDBOX, opt_workspace, CFG_G_FILES,
            "bound read-write at /workspace (default: fresh, empty, private)"),
        OPT("harness", "DIR", C_SANDBOX, opt_harness, CFG_G_FILES, "bound read-only at /harness"),
        { .flag = "ro-bind", .metavar = "SRC[:DST]", .cmds = C_SANDBOX, .parse = opt_ro_bind, .group = CFG_G_FILES,
          .help = "extra read-only mount (repeatable)", .kind = CFG_KIND_LIST, .section = "mounts",
          .key = "ro_bind", LIST(binds, n_binds), .check = CFG_CHECK_BIND, .render = cfg_render_binds },
        /* ro_bind and bind share one list, in the order given */
        { .flag = "bind", .metavar = "SRC[:DST]", .cmds = C_SANDBOX, .parse = opt_bind, .group = CFG_G_FILES,
          .help = "extra read-write mount (repeatable)", .kind = CFG_KIND_LIST, .section = "mounts", .key = "bind",
          LIST(binds, n_binds), .check = CFG_CHECK_BIND, .render = cfg_render_binds },
        { .flag = "tmpfs", .metavar = "DST[:SIZE]", .cmds = C_SANDBOX, .parse = opt_tmpfs, .group = CFG_G_FILES,
          .help = "extra private writable tmpfs (default size: --tmp-size; repeatable)", .kind = CFG_KIND_LIST,
          .section = "mounts", .key = "tmpfs", LIST(tmpfs, n_tmpfs), .check = CFG_CHECK_TMPFS,
          .render = cfg_render_tmpfs },
        LIMIT("wall-time", "DUR", "wall_time", CFG_KIND_DURATION, wall_time_ms, 10000, CFG_F_WALL_TIME, 1, DAY_MS,
              "1ms", "24h", "a sandboxed run longer than a day is a typo",
              "wall-clock limit, e.g. 500ms, 10s, 2m"),
        /* 0: the same as wall_time, and it follows it (cfg_cpu_time_ms) */
        LIMIT("cpu-time", "DUR", "cpu_time", CFG_KIND_DURATION, cpu_time_ms, 0, CFG_F_CPU_TIME, 1, DAY_MS,
              "1ms", "24h", "a sandboxed run longer than a day is a typo",
              "CPU-time limit of the whole tree (default: = wall time)"),
        /* Under the rlimit backend the limit is address space: the dynamic
         * loader and libc of /bin/echo do not fit in 2M. */
        LIMIT("memory", "SIZE", "memory", CFG_KIND_SIZE, memory_bytes, 256 * MIB, CFG_F_MEMORY, MIB, TIB,
              "1M", "1T", "no program starts in less; 0 would turn the limit off", "memory limit, e.g. 256M, 1G"),
        LIMIT("pids", "N", "pids", CFG_KIND_COUNT, pids_max, 64, CFG_F_PIDS, 1, 1u << 22, "1", "4194304",
              "the kernel's largest pid_max", "process and thread limit"),
        /* Kept in nsbox's memory, once per stream. */
        LIMIT("output-limit", "SIZE", "output_limit", CFG_KIND_SIZE, output_limit_bytes, MIB, CFG_F_OUTPUT, 1, GIB,
              "1", "1G", "0 would keep nothing and stop the program at its first byte; nsbox holds up to this "
              "much per stream in memory", "bytes of stdout and of stderr kept each; 4x in all stops the run"),
        LIMIT("file-size", "SIZE", "file_size", CFG_KIND_SIZE, file_size_bytes, 16 * MIB, CFG_F_FILE_SIZE, 1, TIB,
              "1", "1T", "0 would make every write to a file kill the program",
              "largest file the program may write"),
        LIMIT("tmp-size", "SIZE", "tmp_size", CFG_KIND_SIZE, tmp_size_bytes, 64 * MIB, CFG_F_TMP_SIZE, 4 * KIB, TIB,
              "4K", "1T", "0 would turn the limit off: a tmpfs of size 0 is unbounded; one page is its least",
              "size of the private /tmp and of the fresh workspace"),
        OPT("stdin", "FILE", C_SANDBOX, opt_stdin, CFG_G_ENV,
            "standard input (default: empty); judge and batch: for the cases and jobs that give none"),
        /* [env] takes any variable name as its key */
        { .flag = "env", .metavar = "NAME=VALUE", .cmds = C_SANDBOX, .parse = opt_env, .group = CFG_G_ENV,
          .help = "add to the scrubbed environment (repeatable)", .kind = CFG_KIND_LIST, .section = "env",
          LIST(env_add, n_env_add), .dedupe = CFG_DEDUPE_NAME, .render = cfg_render_env },
        { .flag = "isolation", .metavar = "strict|reduced", .cmds = C_ALL, .parse = parse_choice,
          .group = CFG_G_ISOLATION, .help = "reduced must be asked for explicitly", .kind = CFG_KIND_CHOICE,
          .section = "sandbox", .key = "isolation", FIELD(isolation), .choices = isolation_names,
          .bit = CFG_F_ISOLATION, .render = cfg_render_choice },
        { .flag = "network", .metavar = "none|loopback", .cmds = C_SANDBOX, .parse = parse_choice,
          .group = CFG_G_ISOLATION, .help = "empty network namespace; loopback brings up lo inside it",
          .kind = CFG_KIND_CHOICE, .section = "sandbox", .key = "network", FIELD(network), .choices = network_names,
          .bit = CFG_F_NETWORK, .render = cfg_render_choice },
        { .flag = "interpreter", .metavar = "PATH", .cmds = C_PYTHON | C_DOCTOR, .parse = parse_text,
          .group = CFG_G_ENV, .help = "host Python interpreter", .kind = CFG_KIND_TEXT, .section = "python",
          .key = "interpreter", FIELD(interpreter), .def_text = CFG_DEFAULT_INTERPRETER,
          .bit = CFG_F_INTERPRETER, .check = CFG_CHECK_PATH, .render = cfg_render_text },
        { .flag = "interpreter-args", .metavar = "ARGS", .cmds = C_PYTHON, .parse = parse_text, .group = CFG_G_ENV,
          .help = "interpreter arguments before the program, blank-separated", .kind = CFG_KIND_TEXT,
          .section = "python", .key = "args", FIELD(interp_args), .def_text = CFG_DEFAULT_INTERP_ARGS,
          .bit = CFG_F_INTERP_ARGS, .render = cfg_render_text },
        { .flag = "package", .metavar = "DIR", .cmds = C_SANDBOX, .parse = opt_package, .group = CFG_G_FILES,
          .help = "python package dir mounted read-only at the same path (repeatable)", .kind = CFG_KIND_LIST,
          .section = "python", .key = "packages", LIST(packages, n_packages), .check = CFG_CHECK_PATH,
          .dedupe = CFG_DEDUPE_WHOLE, .render = cfg_render_strings },
        /* What a warm job finds imported (a zygote's import-time work done
         * once); policy, since it is what jobs run with. Cold runs ignore it. */
        { .flag = "preload", .metavar = "MODULE", .cmds = C_PYTHON, .parse = opt_preload, .group = CFG_G_ENV,
          .help = "with --warm: the zygote imports MODULE before it serves, so warm jobs start with it imported "
          "(repeatable; cold runs do not import it)", .kind = CFG_KIND_LIST, .section = "python",
          .key = "preload", LIST(preload, n_preload), .dedupe = CFG_DEDUPE_WHOLE, .render = cfg_render_strings },
        { .flag = "image", .metavar = "REF", .cmds = C_SANDBOX | C_DOCTOR, .parse = parse_text,
          .group = CFG_G_FILES, .help = "run on this image's root, read-only: oci:DIR[:TAG], oci-archive:FILE[:TAG] "
          "or docker-archive:FILE[:NAME:TAG], optionally @sha256:HEX (docs/images.md)", .kind = CFG_KIND_TEXT,
          .section = "sandbox", .key = "image", FIELD(image), .render = cfg_render_image },
        { .flag = "seccomp-deny", .metavar = "SYSCALL", .cmds = C_SANDBOX, .parse = opt_seccomp_deny,
          .group = CFG_G_ISOLATION, .help = "also deny this syscall with EPERM (repeatable)", .kind = CFG_KIND_LIST,
          .section = "sandbox", .key = "seccomp_deny", LIST(seccomp_deny, n_seccomp_deny),
          .render = cfg_render_strings },
        /* Where the run's cgroups are made, not what the program may do: a
         * profile key and a flag, but no line of the policy text (no renderer),
         * so policy_sha256 is the same wherever the run is accounted. */
        { .flag = "cgroup-parent", .metavar = "DIR", .cmds = C_ALL, .parse = opt_cgroup_parent,
          .group = CFG_G_ISOLATION, .help = "make run cgroups in DIR, a delegated cgroup v2 subtree with memory and "
          "pids (default: nsbox's own cgroup, or a systemd scope it asks for)", .kind = CFG_KIND_TEXT,
          .section = "sandbox", .key = "cgroup_parent", FIELD(cgroup_parent), .bit = CFG_F_CGROUP_PARENT },
        OPT("json", NULL, C_RUN | C_PY, opt_json, CFG_G_OUTPUT,
            "print the result object on stdout instead of relaying the program's streams"),
        OPT("json", NULL, C_JUDGE, opt_json, CFG_G_OUTPUT,
            "print the verdict (nsbox.verdict/1) on stdout instead of one line per case"),
        OPT("json", NULL, C_TEST, opt_json, CFG_G_OUTPUT,
            "print the report (nsbox.tests/1) on stdout instead of one line per test"),
        OPT("json", NULL, C_BATCH, opt_json, CFG_G_OUTPUT, "accepted and changes nothing: batch always writes JSON Lines"),
        OPT("json", NULL, C_DOCTOR, opt_json, CFG_G_OUTPUT,
            "print the report as one JSON object (nsbox.doctor/1) instead of text"),
        OPT("result", "FILE", C_SANDBOX, opt_result, CFG_G_OUTPUT,
            "also write the result object to FILE (batch: every line)"),
        OPT("jobs", "N", C_BATCH, opt_jobs, CFG_G_BATCH, "parallel jobs (default: number of cores); also -j N"),
        OPT("resume", "FILE", C_BATCH, opt_resume, CFG_G_BATCH,
            "skip the jobs whose id already has a line in FILE (earlier results)"),
        OPT("shard", "K/N", C_BATCH, opt_shard, CFG_G_BATCH,
            "take every Nth line from line K+1 (0 <= K < N): one of N machines"),
        OPT("fail-fast", NULL, C_JUDGE, opt_fail_fast, CFG_G_JUDGE, "stop at the first failing case"),
        OPT("observe", "OBS.jsonl", C_JUDGE, opt_observe, CFG_G_JUDGE,
            "also write each case's observation (what ran, what happened) to OBS.jsonl"),
        OPT("replay", "OBS.jsonl", C_JUDGE, opt_replay, CFG_G_JUDGE,
            "judge the observations in OBS.jsonl against the spec; no sandbox runs"),
        OPT("junit", "FILE", C_JUDGE | C_TEST, opt_junit, CFG_G_OUTPUT,
            "also write the cases (tests) as JUnit XML to FILE"),
        OPT("junit-expected", NULL, C_JUDGE, opt_junit_expected, CFG_G_OUTPUT,
            "let the --junit file quote the expected values (hidden by default: a CI page may be the learner's)"),
        OPT("program", "FILE", C_JUDGE, opt_program, CFG_G_JUDGE,
            "grade FILE instead of the spec's program (same cases, limits and profile)"),
        OPT("html", "FILE", C_REPORT, opt_html, CFG_G_OUTPUT,
            "also write the summary as one self-contained HTML page to FILE"),
        OPT("quiet", NULL, C_BATCH, opt_quiet, CFG_G_BATCH, "no progress line and no closing summary on stderr"),
        OPT("warm", NULL, C_BATCH | C_JUDGE, opt_warm, CFG_G_ISOLATION,
            "start python jobs from a ready interpreter (a zygote) forked into fresh namespaces; "
            "a job that cannot start warm runs cold and its result says why"),
        OPT("warm-rotate", "N", C_BATCH | C_JUDGE, opt_warm_rotate, CFG_G_ISOLATION,
            "with --warm: replace the zygote after N jobs (default 500)"),
        OPT("help", NULL, C_ALL | (1u << NSB_CMD_PROFILE) | C_REPORT | (1u << NSB_CMD_IMAGE), opt_help, CFG_G_GENERAL, "show this help"),
};

/* The profile's sections, in the order the canonical text writes them. */
static const char *const sections[] = { "limits", "sandbox", "mounts", "env", "python" };

const char *cfg_profile_section(size_t i)
{
        return i < ARRAY_SIZE(sections) ? sections[i] : NULL;
}

static const char *const group_titles[CFG_G__MAX] = {
        [CFG_G_ISOLATION] = "Profile and isolation", [CFG_G_LIMITS] = "Limits", [CFG_G_FILES] = "Filesystem",
        [CFG_G_ENV] = "Program environment", [CFG_G_OUTPUT] = "Output", [CFG_G_BATCH] = "Batch",
        [CFG_G_JUDGE] = "Judge", [CFG_G_GENERAL] = "General",
};

const char *cfg_group_title(enum cfg_group g)
{
        return g < CFG_G__MAX ? group_titles[g] : "";
}

const struct cfg_key *cfg_key_at(size_t i)
{
        return i < ARRAY_SIZE(keys) ? &keys[i] : NULL;
}

const struct cfg_key *cfg_key_by_flag(const char *flag, size_t len, enum nsb_cmd cmd)
{
        const struct cfg_key *other = NULL;

        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (strlen(keys[i].flag) == len && strncmp(keys[i].flag, flag, len) == 0) {
                        if (keys[i].cmds & (1u << cmd))
                                return &keys[i];
                        other = other ? other : &keys[i];
                }
        return other;
}

const struct cfg_key *cfg_key_by_profile(const char *section, const char *key)
{
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (keys[i].section && strcmp(keys[i].section, section) == 0 &&
                    (keys[i].key ? strcmp(keys[i].key, key) == 0 : true))
                        return &keys[i];
        return NULL;
}

const struct cfg_key *cfg_key_by_json(const char *json)
{
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (keys[i].json && strcmp(keys[i].json, json) == 0)
                        return &keys[i];
        return NULL;
}

bool cfg_key_list_shared(const struct cfg_key *k)
{
        for (const struct cfg_key *o = keys; o < k; o++)
                if (k->kind == CFG_KIND_LIST && o->kind == CFG_KIND_LIST && o->offset == k->offset)
                        return true;
        return false;
}

/* ---- what is derived from the rows ------------------------------------------ */

void cfg_defaults(struct nsb_config *cfg, enum nsb_cmd cmd)
{
        memset(cfg, 0, sizeof *cfg);
        cfg->cmd = cmd;
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (keys[i].kind == CFG_KIND_DURATION || keys[i].kind == CFG_KIND_SIZE ||
                    keys[i].kind == CFG_KIND_COUNT)
                        memcpy((char *) cfg + keys[i].offset, &keys[i].def, sizeof keys[i].def);
                else if (keys[i].kind == CFG_KIND_CHOICE) {
                        int v = (int) keys[i].def;
                        memcpy((char *) cfg + keys[i].offset, &v, keys[i].size);
                }
}

uint32_t cfg_field_of_option(const char *name)
{
        const struct cfg_key *k = cfg_key_by_flag(name, strlen(name), NSB_CMD_NONE);
        return k ? k->bit : 0;
}

uint32_t cfg_limit_bits(void)
{
        uint32_t bits = 0;

        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (keys[i].json)
                        bits |= keys[i].bit;
        return bits;
}

void cfg_limits_apply(const struct nsb_config *overlay, uint32_t take, struct nsb_config *cfg)
{
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (keys[i].json && (take & keys[i].bit))
                        memcpy((char *) cfg + keys[i].offset, (const char *) overlay + keys[i].offset, keys[i].size);
}

void cfg_key_value_text(const struct cfg_key *k, const struct nsb_config *cfg, char *buf, size_t size)
{
        const char *field = (const char *) cfg + k->offset;
        uint64_t v = 0;
        int choice = 0;

        buf[0] = '\0';
        switch (k->kind) {
        case CFG_KIND_DURATION:
        case CFG_KIND_SIZE:
        case CFG_KIND_COUNT:
                memcpy(&v, field, sizeof v);
                cfg_format_value(k->kind, v, buf, size);
                break;
        case CFG_KIND_CHOICE:
                memcpy(&choice, field, k->size);
                snprintf(buf, size, "%s", k->choices[choice]);
                break;
        case CFG_KIND_TEXT:
                snprintf(buf, size, "%s", *(char *const *) field ? *(char *const *) field
                                          : k->def_text ? k->def_text : "");
                break;
        default:
                break;
        }
}
