/* config/cli_parse.c — the command line, through one option table. Pure.
 *
 * Grammar: nsbox COMMAND [OPTIONS] [--] [POSITIONAL...]
 * Options take their value as the next argument or after '=' (--memory=1G).
 * Option parsing stops at "--" or at the first positional argument, so the
 * sandboxed command's own flags are never read as nsbox's.
 */
#include "config/config.h"
#include "config/hints.h"
#include "config/schema.h"
#include "config/config_internal.h"
#include "util/cleanup.h"
#include "util/portable.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Options named in a suggestion, at most. */
#define N_KEYS_MAX 64
/* Longest option or command name worth a suggestion. */
#define WORD_BUF 64

const char *cfg_interpreter(const struct nsb_config *cfg)
{
        return cfg->interpreter ? cfg->interpreter : CFG_DEFAULT_INTERPRETER;
}

uint64_t cfg_cpu_time_ms(const struct nsb_config *cfg)
{
        return cfg->cpu_time_ms ? cfg->cpu_time_ms : cfg->wall_time_ms;
}

struct path_mounts cfg_mounts(const struct nsb_config *cfg)
{
        return (struct path_mounts){
                .workspace = cfg->workspace,
                .harness = cfg->harness,
                .binds = cfg->binds,
                .n_binds = cfg->n_binds,
                .tmpfs = cfg->tmpfs,
                .n_tmpfs = cfg->n_tmpfs,
                .tmp_size_bytes = cfg->tmp_size_bytes,
        };
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
        free(cfg->image);
        free(cfg->image_digest);
        free(cfg->image_rootfs);
        free_strv(cfg->image_env, cfg->n_image_env);
        free_strv(cfg->packages, cfg->n_packages);
        free_strv(cfg->preload, cfg->n_preload);
        free_strv(cfg->seccomp_deny, cfg->n_seccomp_deny);
        free(cfg->inline_code);
        free_strv(cfg->argv, cfg->argc);
        free(cfg->input_path);
        free(cfg->resume_path);
        free(cfg->observe_path);
        free(cfg->replay_path);
        free(cfg->junit_path);
        free(cfg->program_path);
        free(cfg->html_path);
        memset(cfg, 0, sizeof *cfg);
}

/* run and python share these; run adds 126/127 between them. */
#define EXIT_RUN_HEAD                                                                                   \
        "  N      the program exited with status N\n"                                                  \
        "  124    a limit stopped it (the result's `limit` says which)\n"                              \
        "  125    nsbox itself failed: usage, configuration, sandbox set-up (status error)\n"
#define EXIT_RUN_TAIL                                                                                   \
        "  128+N  it died of signal N\n"                                                               \
        "  130    cancelled (SIGINT, SIGTERM, SIGHUP): the whole tree was killed\n"
#define EXIT_JUDGE                                                                                      \
        "  0      every case passed\n"                                                                  \
        "  1      some case failed (wrong output, nonzero exit, a limit, a crash)\n"                    \
        "  3      undetermined: the sandbox failed, cut output cannot settle a check, or cancelled\n"    \
        "  125    bad spec, or nsbox itself failed\n"
#define EXIT_TEST                                                                                       \
        "  0      every test passed (at least one ran)\n"                                               \
        "  1      some test failed or erred, or a limit stopped the tests\n"                            \
        "  3      undetermined: the sandbox failed, the runner was killed or cancelled, the harness\n"   \
        "         has no tests or cannot be collected, or every test was skipped\n"                     \
        "  125    usage or set-up error\n"

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
          EXIT_JUDGE,
          "nsbox judge examples/judge-spec.json" },
        { "test", NSB_CMD_TEST, "nsbox test [OPTIONS] --harness DIR --workspace DIR",
          "run the hidden tests in DIR against the workspace, with feedback per test",
          EXIT_TEST,
          "nsbox test --harness examples/course/harness --workspace examples/course/workspace" },
        { "batch", NSB_CMD_BATCH, "nsbox batch [OPTIONS] [JOBS.jsonl|-]",
          "run many jobs (JSON Lines) in parallel, one sandbox each, one result line each",
          "  0      every job taken produced its line (whatever the jobs' own outcomes)\n"
          "  2      as 0, but some input lines were bad (each got an error line)\n"
          "  125    usage, unreadable input or --resume file, stdout closed\n"
          "  130    cancelled (SIGINT, SIGTERM, SIGHUP): the lines written so far are whole\n",
          "nsbox batch -j 2 examples/jobs.jsonl > results.jsonl" },
        { "doctor", NSB_CMD_DOCTOR, "nsbox doctor [--json] [--isolation MODE] [--interpreter PATH] [--cgroup-parent DIR] [--image REF]",
          "say whether this host can sandbox programs, and the exact fix when it cannot",
          "  0      the requested isolation can be provided\n"
          "  1      it cannot (each failing check says why, and its fix)\n"
          "  125    usage error\n",
          "nsbox doctor --json" },
        { "image", NSB_CMD_IMAGE, "nsbox image ls | rm sha256:HEX... | prune",
          "list or remove the images --image unpacked into the cache (docs/images.md)",
          "  0      listed, removed or pruned\n"
          "  125    usage error, an image in use (rm), or the cache cannot be read\n",
          "nsbox image ls" },
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

#define N_COMMANDS ARRAY_SIZE(commands)

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

/* The names of every option, each once (rows of one name are adjacent). */
static size_t all_option_names(const char **names)
{
        const struct cfg_key *k;
        size_t n = 0;

        for (size_t i = 0; (k = cfg_key_at(i)) && n < N_KEYS_MAX; i++)
                if (n == 0 || strcmp(names[n - 1], k->flag) != 0)
                        names[n++] = k->flag;
        return n;
}

/* "unknown option '--wall-tme' (did you mean --wall-time?)": only the
 * options @cmd takes are suggested; an option of other commands says whose. */
static int unknown_option(enum nsb_cmd cmd, const char *arg, size_t len, struct nsb_error *e)
{
        const char *names[N_KEYS_MAX];
        const char *word = arg + (arg[1] == '-' ? 2 : 1);
        size_t n = 0, wlen = len - (size_t) (word - arg);
        const struct cfg_key *other = cfg_key_by_flag(word, wlen, cmd), *k;
        char typed[WORD_BUF], whose[128];
        const char *best, *bwrap = cfg_bwrap_option_hint(word, wlen);

        if (other && !(other->cmds & (1u << cmd))) {
                cmds_text(other->cmds, whose, sizeof whose);
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: '%.*s%s' is an option of %s, not of %s",
                                cmd_name(cmd), QUOTE_LEN(len), arg, QUOTE_CUT(len), whose, cmd_name(cmd));
        }
        if (bwrap)   /* a bubblewrap habit: nsbox's way of saying it */
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s%s' (bwrap's; in nsbox: %s)",
                                cmd_name(cmd), QUOTE_LEN(len), arg, QUOTE_CUT(len), bwrap);
        for (size_t i_key = 0; (k = cfg_key_at(i_key)); i_key++)
                if ((k->cmds & (1u << cmd)) && (n == 0 || strcmp(names[n - 1], k->flag) != 0) && n < N_KEYS_MAX)
                        names[n++] = k->flag;
        snprintf(typed, sizeof typed, "%.*s", (int) wlen, word);
        best = cfg_closest(typed, names, n);
        if (best)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s%s' (did you mean --%s?)",
                                cmd_name(cmd), QUOTE_LEN(len), arg, QUOTE_CUT(len), best);
        /* Close to an option of another command: say whose it is. */
        n = all_option_names(names);
        best = cfg_closest(typed, names, n);
        if (best && (other = cfg_key_by_flag(best, strlen(best), cmd))) {
                cmds_text(other->cmds, whose, sizeof whose);
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s%s' (--%s is an option of %s, "
                                "not of %s)", cmd_name(cmd), QUOTE_LEN(len), arg, QUOTE_CUT(len), best, whose,
                                cmd_name(cmd));
        }
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unknown option '%.*s%s' (nsbox %s --help lists the options)",
                        cmd_name(cmd), QUOTE_LEN(len), arg, QUOTE_CUT(len), cmd_name(cmd));
}

/* An option where the command belongs ("nsbox --json python"): say that
 * options come after the command, with the option's right name. */
static int option_before_command(const char *word, struct nsb_error *e)
{
        static const char *const top[] = { "help", "version" };   /* nsbox's own, before any command */
        const char *names[N_KEYS_MAX];
        const char *name = word + strspn(word, "-"), *best = NULL;
        size_t n = all_option_names(names), len = strcspn(name, "=");
        char typed[WORD_BUF];

        if (!word[1] || strcmp(word, "--") == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%s' where the command belongs: nsbox COMMAND "
                                "[OPTIONS] ARGS (nsbox --help lists the commands)", word);
        if (strcmp(word, "-v") == 0 || strcmp(word, "-H") == 0)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "unknown option '%s' (did you mean %s?)", word,
                                word[1] == 'v' ? "-V, --version" : "-h, --help");
        if (len < WORD_BUF) {
                snprintf(typed, sizeof typed, "%.*s", (int) len, name);
                for (size_t i = 0; i < 2 && name[len] == '='; i++)
                        if (strcmp(typed, top[i]) == 0)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--%s takes no value", top[i]);
                if ((best = cfg_closest(typed, top, 2)))
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "unknown option '%.*s%s' (did you mean --%s?)",
                                        QV(word), best);
                best = cfg_closest(typed, names, n);
                for (size_t i = 0; i < n; i++)
                        if (strcmp(typed, names[i]) == 0)
                                best = names[i];
        }
        if (best)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s' before the command: options come after it "
                                "(nsbox COMMAND --%s ..., and nsbox COMMAND --help lists them)",
                                QV(word), best);
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "'%.*s%s' before the command: options come after it (nsbox "
                        "COMMAND [OPTIONS] ARGS; nsbox --help lists the commands)",
                        QV(word));
}

static int unknown_command(const char *word, struct nsb_error *e)
{
        const char *names[N_COMMANDS];
        const char *best;
        size_t len = strlen(word);

        if (word[0] == '-')
                return option_before_command(word, e);
        for (size_t i = 0; i < N_COMMANDS; i++)
                names[i] = commands[i].name;
        best = len < WORD_BUF ? cfg_closest(word, names, N_COMMANDS) : NULL;
        if (best)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "unknown command '%s' (did you mean %s?)", word, best);
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "unknown command '%.*s%s' (nsbox --help lists the commands)",
                        QV(word));
}

/* "nsbox help [COMMAND]", "nsbox --help [COMMAND]": that command's help, as
 * `git help` does; no COMMAND: the overview. */
static int help_for(int argc, char **argv, struct nsb_config *cfg, struct nsb_error *e)
{
        cfg_defaults(cfg, NSB_CMD_HELP);
        if (argc < 3)
                return 0;
        if (argc > 3)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unexpected argument '%.*s%s' (nsbox help [COMMAND])",
                                argv[1], QV(argv[3]));
        for (size_t k = 0; k < N_COMMANDS; k++)
                if (strcmp(argv[2], commands[k].name) == 0) {
                        cfg_defaults(cfg, commands[k].cmd);
                        cfg->help = true;
                        return 0;
                }
        return unknown_command(argv[2], e);
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
                if (cfg->input_path && i < argc)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "judge: unexpected argument '%s' after SPEC.json '%s' (one SPEC; "
                                        "--program FILE grades another program)", argv[i], cfg->input_path);
                if (cfg->input_path)
                        return 0;
                if (argc - i > 1)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "judge: unexpected argument '%s' after SPEC.json '%s' (options go before it)",
                                        argv[i + 1], argv[i]);
                if (argc - i != 1)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "judge: expected exactly one SPEC.json");
                return cfg_set_text(&cfg->input_path, argv[i], e);
        case NSB_CMD_PROFILE:
                if (argc - i > 2 && strcmp(argv[i], "show") == 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "profile: unexpected argument '%.*s%s' after "
                                        "'show %.*s%s'%s", QV(argv[i + 2]), QV(argv[i + 1]),
                                        argv[i + 2][0] == '-' ? " (options go before it)" : "");
                if (argc - i != 2 || strcmp(argv[i], "show") != 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "profile: expected 'show NAME|FILE'");
                return cfg_set_text(&cfg->input_path, argv[i + 1], e);
        case NSB_CMD_IMAGE:
                if (i >= argc)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "image: expected ls, rm sha256:HEX... or prune");
                break;
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
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "batch: unexpected argument '%.*s%s' after "
                                        "JOBS.jsonl '%.*s%s'%s", QV(argv[i + 1]), QV(argv[i]),
                                        argv[i + 1][0] == '-' ? " (options go before it)" : " (one input at most)");
                return argc - i == 1 ? cfg_set_text(&cfg->input_path, argv[i], e) : 0;
        default:
                if (i < argc)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: unexpected argument '%s'",
                                        cmd_name(cfg->cmd), argv[i]);
                return 0;
        }
        for (; i < argc; i++) {
                int r = cfg_push_text(&cfg->argv, &cfg->argc, argv[i], e);
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
        if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0 || strcmp(word, "help") == 0)
                return help_for(argc, argv, cfg, e);
        for (size_t k = 0; k < N_COMMANDS; k++)
                if (strcmp(word, commands[k].name) == 0)
                        cmd = commands[k].cmd;
        cfg_defaults(cfg, cmd);
        if (cmd == NSB_CMD_NONE)
                return unknown_command(word, e);

        for (i = 2; i < argc; i++) {
                const char *a = argv[i], *eq, *value = NULL;
                const struct cfg_key *o;
                size_t len;

                if (strcmp(a, "--") == 0) {
                        i++;
                        break;
                }
                if (cmd == NSB_CMD_PYTHON && strcmp(a, "-c") == 0) {
                        if (i + 1 >= argc)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "python: -c needs CODE");
                        r = cfg_set_text(&cfg->inline_code, argv[++i], e);
                        if (r < 0)
                                return r;
                        i++;
                        break;   /* everything after CODE is the program's argv */
                }
                /* -j N, or -jN as make(1) takes it */
                if (cmd == NSB_CMD_BATCH && strncmp(a, "-j", 2) == 0) {
                        if (!a[2] && i + 1 >= argc)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "batch: -j needs N");
                        o = cfg_key_by_flag("jobs", 4, cmd);
                        r = o->parse(o, cfg, a[2] ? a + 2 : argv[++i], e);
                        if (r < 0)
                                return nsb_error_prefix(e, "-j");
                        continue;
                }
                if (strcmp(a, "-h") == 0) {
                        cfg->help = true;
                        continue;
                }
                if (a[0] != '-' || strcmp(a, "-") == 0) {
                        /* judge SPEC [OPTIONS]: its one positional may come
                         * first, the options after it */
                        if (cmd == NSB_CMD_JUDGE && !cfg->input_path) {
                                r = cfg_set_text(&cfg->input_path, a, e);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        break;   /* first positional */
                }
                if (strncmp(a, "--", 2) != 0)
                        return unknown_option(cmd, a, strcspn(a, "="), e);
                eq = strchr(a + 2, '=');
                len = eq ? (size_t) (eq - (a + 2)) : strlen(a + 2);
                o = cfg_key_by_flag(a + 2, len, cmd);
                if (!o || !(o->cmds & (1u << cmd)))
                        return unknown_option(cmd, a, len ? len + 2 : strlen(a), e);
                if (o->metavar) {
                        if (eq)
                                value = eq + 1;
                        else if (i + 1 < argc)
                                value = argv[++i];
                        else
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: --%s needs a value (%s)",
                                                cmd_name(cmd), o->flag, o->metavar);
                } else if (eq) {
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: --%s takes no value", cmd_name(cmd),
                                        o->flag);
                }
                r = o->parse(o, cfg, value, e);
                if (r < 0)
                        return nsb_error_prefix(e, "--%s", o->flag);
                cfg->set |= o->bit;
                /* bwrap's `--ro-bind SRC DST` typed as two words: kept for
                 * the hint a failed run prints (config/hints.h) */
                if ((strcmp(o->flag, "ro-bind") == 0 || strcmp(o->flag, "bind") == 0) && !strchr(value, ':'))
                        cfg->bind_next_word = i + 1 < argc && argv[i + 1][0] == '/' ? argv[i + 1] : NULL;
        }
        if (cfg->help)
                return 0;
        return take_positionals(cfg, argc, argv, i, e);
}

/* @*path, when relative, taken from @cwd ("." is @cwd itself). */
static int absolute_from(const char *cwd, char **path)
{
        const char *rel = *path;
        char *abs = NULL;

        if (rel[0] == '/')
                return 0;
        if (strcmp(rel, ".") == 0)
                rel = "";
        else if (strncmp(rel, "./", 2) == 0)
                rel += 2;
        if (nsb_asprintf(&abs, "%s%s%s", cwd, strcmp(cwd, "/") == 0 || !rel[0] ? "" : "/", rel) < 0)
                return -ENOMEM;
        free(*path);
        *path = abs;
        return 0;
}

int cfg_absolute_sources(struct nsb_config *cfg, const char *cwd, struct nsb_error *e)
{
        for (size_t i = 0; i < cfg->n_binds; i++) {
                struct nsb_bind *b = &cfg->binds[i];
                const char *what = b->read_only ? "--ro-bind" : "--bind";

                if (b->src[0] == '/')
                        continue;
                if (b->dst[0] != '/')
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "%s '%s': a relative SRC is found in the current directory, but DST must "
                                        "be absolute (SRC:/DST)", what, b->src);
                if (absolute_from(cwd, &b->src) < 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        }
        /* Reduced isolation hands these paths to Landlock, which takes
         * absolute ones only; strict isolation opens them from here alike. */
        if ((cfg->workspace && absolute_from(cwd, &cfg->workspace) < 0) ||
            (cfg->harness && absolute_from(cwd, &cfg->harness) < 0))
                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        return 0;
}

int cfg_set_option(struct nsb_config *cfg, const char *name, const char *value, struct nsb_error *e)
{
        const struct cfg_key *o = cfg_key_by_flag(name, strlen(name), NSB_CMD_NONE);

        if (!o || !o->metavar)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOENT, "no option '%s'", name);
        return o->parse(o, cfg, value, e);
}

bool cfg_option_row(size_t i, const char **ret_name, const char **ret_metavar, unsigned *ret_cmds)
{
        const struct cfg_key *k = cfg_key_at(i);

        if (!k)
                return false;
        *ret_name = k->flag;
        *ret_metavar = k->metavar;
        *ret_cmds = k->cmds;
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
static void opt_head(const struct cfg_key *o, char *buf, size_t size)
{
        snprintf(buf, size, "--%s%s%s", o->flag, o->metavar ? " " : "", o->metavar ? o->metavar : "");
}

/* The row's help, and its default as the row holds it ("(default 256M)"),
 * so --help never states a default the code does not have. */
static void help_line(const struct cfg_key *k, char *buf, size_t size)
{
        char value[128];
        uint64_t v = 0;

        snprintf(buf, size, "%s", k->help);
        if (k->kind == CFG_KIND_NONE || k->kind == CFG_KIND_LIST || (k->kind == CFG_KIND_TEXT && !k->def_text))
                return;
        if (k->kind != CFG_KIND_TEXT && k->kind != CFG_KIND_CHOICE) {
                memcpy(&v, &k->def, sizeof v);
                if (!v)
                        return;         /* cpu_time: its help says what 0 means */
        }
        if (k->kind == CFG_KIND_TEXT) {
                bool quote = strchr(k->def_text, ' ') != NULL;
                nsb_appendf(buf, size, " (default %s%s%s)", quote ? "\"" : "", k->def_text, quote ? "\"" : "");
                return;
        }
        if (k->kind == CFG_KIND_CHOICE)
                snprintf(value, sizeof value, "%s", k->choices[k->def]);
        else
                cfg_format_value(k->kind, v, value, sizeof value);
        nsb_appendf(buf, size, " (default %s)", value);
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
              "               130 cancelled; 125 nsbox itself failed (usage, configuration, set-up);\n"
              "               run: 126 COMMAND cannot be executed, 127 COMMAND not found\n"
              "  judge, test  0 pass, 1 fail, 3 undetermined, 125 bad input or set-up error\n"
              "  batch        0 every job produced its line, 2 and some input lines were bad,\n"
              "               125 set-up error, 130 cancelled\n"
              "  doctor       0 ready, 1 not ready, 125 usage error\n"
              "  profile      0 printed, 125 no such profile or a bad file\n"
              "  report       0 summarised, 1 no result or verdict in the input, 125 unreadable input\n"
              "\nExample:\n  nsbox python --json --memory 128M --wall-time 2s -c 'print(sum(range(10**6)))'\n"
              "\nFirst run `nsbox doctor`. Each command explains itself: nsbox COMMAND --help.\n"
              "The whole interface: man nsbox (installed), docs/contract.md (source tree).\n", f);
}

static void usage_cmd(FILE *f, const struct cli_cmd *c)
{
        const struct cfg_key *k;

        fprintf(f, "nsbox %s — %s\n\nUsage: %s\n", c->name, c->purpose, c->synopsis);
        for (int g = 0; g < CFG_G__MAX; g++) {
                bool titled = false;
                for (size_t i_key = 0; (k = cfg_key_at(i_key)); i_key++) {
                        char head[64], help[512];
                        if (k->group != (enum cfg_group) g || !(k->cmds & (1u << c->cmd)))
                                continue;
                        if (!titled)
                                fprintf(f, "\n%s:\n", cfg_group_title((enum cfg_group) g));
                        titled = true;
                        opt_head(k, head, sizeof head);
                        help_line(k, help, sizeof help);
                        if (strlen(head) >= 26)
                                fprintf(f, "  %s\n  %-26s %s\n", head, "", help);
                        else
                                fprintf(f, "  %-26s %s\n", head, help);
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
