/* config/hints.c — what a person at the terminal needs after a refusal or a limit. Pure.
 *
 * People who know bubblewrap type its options: `--unshare-all`,
 * `--dev-bind`, `--ro-bind SRC DST` as two words. nsbox has no such option,
 * or takes one word (SRC[:DST]); without a hint the first gets "unknown
 * option" and the last "script '/data' not found", which says nothing of
 * why. Here: the equivalent of each bwrap option nsbox lacks, and the hint
 * for a two-word bind (cli_parse.c and nsbox.c print them). */
#include "config/hints.h"
#include "config/schema.h"
#include "config/config_internal.h"
#include "util/portable.h"

#include <stdio.h>
#include <string.h>

#define DEFAULT_ALREADY "nsbox does this on every run: leave it out"
#define NAMESPACES_ALREADY "nsbox unshares every namespace (user, mount, pid, network, IPC, UTS, cgroup) on " \
                           "every run: leave it out"

static const struct {
        const char *name;
        const char *hint;
} bwrap_options[] = {
        { "unshare-all", NAMESPACES_ALREADY },
        { "unshare-user", NAMESPACES_ALREADY },
        { "unshare-user-try", NAMESPACES_ALREADY },
        { "unshare-pid", NAMESPACES_ALREADY },
        { "unshare-net", NAMESPACES_ALREADY },
        { "unshare-ipc", NAMESPACES_ALREADY },
        { "unshare-uts", NAMESPACES_ALREADY },
        { "unshare-cgroup", NAMESPACES_ALREADY },
        { "unshare-cgroup-try", NAMESPACES_ALREADY },
        { "share-net", "nsbox gives no network; --network loopback brings up lo, nothing reaches the host's" },
        { "dev-bind", "nsbox's /dev is its own (null, zero, full, random, urandom) and takes no device; "
                      "--ro-bind SRC[:DST] or --bind SRC[:DST] for files and folders" },
        { "dev-bind-try", "nsbox's /dev is its own and takes no device; --ro-bind SRC[:DST] for files and folders" },
        { "ro-bind-try", "--ro-bind SRC[:DST] (one word; a SRC that does not exist is refused)" },
        { "bind-try", "--bind SRC[:DST] (one word; a SRC that does not exist is refused)" },
        { "dev", "nsbox mounts its own /dev on every run: leave it out" },
        { "proc", "nsbox mounts the run's own /proc on every run: leave it out" },
        { "size", "the size goes with the mount: --tmpfs DST:SIZE" },
        { "setenv", "--env NAME=VALUE" },
        { "unsetenv", "nsbox starts from a scrubbed environment: --env NAME=VALUE adds to it" },
        { "clearenv", "nsbox starts from a scrubbed environment: leave it out" },
        { "chdir", "the program runs in /workspace (--workspace DIR binds a folder there)" },
        { "die-with-parent", DEFAULT_ALREADY },
        { "new-session", DEFAULT_ALREADY },
        { "as-pid-1", DEFAULT_ALREADY },
        { "cap-drop", "nsbox drops every capability on every run: leave it out" },
        { "cap-add", "nsbox grants the program no capability" },
        { "seccomp", "nsbox installs its own seccomp filter; --seccomp-deny SYSCALL adds to it" },
        { "uid", "the program runs as an unprivileged user of its own user namespace (docs/security.md)" },
        { "gid", "the program runs as an unprivileged user of its own user namespace (docs/security.md)" },
        { "hostname", "nsbox sets the run's own host name (its UTS namespace)" },
        { "remount-ro", "nsbox's root is read-only but for /tmp, /workspace and --bind/--tmpfs mounts" },
        /* bwrap's FD and tree-building options: --file is also close to
         * --file-size, which "did you mean" would offer */
        { "file", "nsbox reads no file descriptors; --ro-bind FILE[:DST] binds a file" },
        { "bind-data", "nsbox reads no file descriptors; --ro-bind FILE[:DST] binds a file" },
        { "ro-bind-data", "nsbox reads no file descriptors; --ro-bind FILE[:DST] binds a file" },
        { "dir", "--tmpfs DST makes an empty writable folder; --bind and --ro-bind make their DST" },
        { "symlink", "nsbox creates no symlinks: --ro-bind SRC:DST binds the target in the link's place" },
};

const char *cfg_bwrap_option_hint(const char *name, size_t len)
{
        for (size_t i = 0; i < sizeof bwrap_options / sizeof bwrap_options[0]; i++)
                if (strlen(bwrap_options[i].name) == len && memcmp(bwrap_options[i].name, name, len) == 0)
                        return bwrap_options[i].hint;
        return NULL;
}

/* The word after a bind without DST was an absolute path: options end at
 * the first positional, so it became the SCRIPT, COMMAND or input file, and
 * the bind is the last one. The shape `--ro-bind /data /data x.py` leaves
 * behind; a script below the bound folder (`--ro-bind /data /data/x.py`)
 * is as meant. */
bool cfg_bwrap_pair_hint(const struct nsb_config *cfg, const char *error, char *buf, size_t size)
{
        const char *word = cfg->bind_next_word;
        const struct nsb_bind *b = cfg->n_binds ? &cfg->binds[cfg->n_binds - 1] : NULL;
        const char *flag, *at;
        size_t n, wlen;

        if (!word || !b || !size || !error)
                return false;
        n = strlen(b->src);
        if (strncmp(word, b->src, n) == 0 && word[n] == '/')
                return false;
        /* Only when nsbox's failure is about the word ("script '/data': Is
         * a directory", "command '/in': No such file"): a program that ran
         * and exited 126 or 127, or a SRC that does not exist, is not this
         * habit, and the hint would say to bind over the program. A
         * relative SRC without DST is refused whatever follows ("DST must
         * be absolute"): no valid command line has one, so it is the habit. */
        wlen = strlen(word);
        for (at = strchr(error, '\''); at; at = strchr(at + 1, '\''))
                if (strncmp(at + 1, word, wlen) == 0 && at[1 + wlen] == '\'')
                        break;
        if (!at && b->src[0] == '/')
                return false;
        flag = b->read_only ? "--ro-bind" : "--bind";
        snprintf(buf, size, "%s takes one word, SRC[:DST]: for bwrap's `%s %s %s`, write `%s %s:%s` "
                            "('%s' was read as the next argument, not as DST)",
                 flag, flag, b->src, word, flag, b->src, word, word);
        return true;
}

/* The limit key of a result's limit name: "output" is --output-limit's. */
static const struct cfg_key *limit_key(const char *limit)
{
        const struct cfg_key *k = limit ? cfg_key_by_json(strcmp(limit, "output") == 0 ? "output_limit" : limit) : NULL;

        return k && k->kind != CFG_KIND_NONE && k->kind <= CFG_KIND_COUNT && k->size == sizeof(uint64_t) ? k : NULL;
}

/* The value this run had: a profile's or the flag's, else the default. */
bool cfg_limit_value(const struct nsb_config *cfg, const char *limit, char *buf, size_t size)
{
        const struct cfg_key *k = limit_key(limit);
        uint64_t v;

        if (!k || !size)
                return false;
        memcpy(&v, (const char *) cfg + k->offset, sizeof v);
        if (strcmp(limit, "cpu_time") == 0)
                v = cfg_cpu_time_ms(cfg);
        cfg_format_value(k->kind, v, buf, size);
        return true;
}

/* The one wording of a limit that stopped a run, for the CLI, judge, serve
 * and report alike (#32 and its follow-up): the value it had (when known: a result
 * written before results carried it has none) and the flag that raises it. */
bool cfg_limit_describe(const char *limit, const char *value, char *buf, size_t size)
{
        return cfg_limit_describe_by(limit, value, NULL, buf, size);
}

const char *cfg_limit_key(const char *limit)
{
        const struct cfg_key *k = limit_key(limit);

        return k ? k->json : NULL;
}

bool cfg_limit_describe_by(const char *limit, const char *value, const char *raise, char *buf, size_t size)
{
        const struct cfg_key *k = limit_key(limit);
        size_t n = value ? strspn(value, "0123456789.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") : 0;
        char flag[64], inner[160] = "";

        /* a value read back from a file (judge --replay, report) is shown
         * only when it looks like one: a unit-suffixed number, short */
        if (!value || n == 0 || value[n] != '\0' || n > 24)
                value = NULL;
        if (!size)
                return k != NULL;
        if (!k) {
                snprintf(buf, size, "the %s limit", limit ? limit : "(unnamed)");
                return false;
        }
        if (!raise) {
                snprintf(flag, sizeof flag, "--%s %s", k->flag, k->metavar);
                raise = flag;
        }
        if (value)
                nsb_appendf(inner, sizeof inner, "%s", value);
        if (strcmp(limit, "output") == 0)
                nsb_appendf(inner, sizeof inner, "%sper stream, 4x in all", value ? " " : "");
        if (raise[0])
                nsb_appendf(inner, sizeof inner, "%sraise it with %s", inner[0] ? "; " : "", raise);
        if (inner[0])
                snprintf(buf, size, "the %s limit (%s)", limit, inner);
        else
                snprintf(buf, size, "the %s limit", limit);
        return true;
}

/* "the memory limit (256M; raise it with --memory SIZE)" with @cfg's value. */
bool cfg_limit_hint(const struct nsb_config *cfg, const char *limit, char *buf, size_t size)
{
        char value[48];

        if (!cfg_limit_value(cfg, limit, value, sizeof value))
                return false;
        cfg_limit_describe(limit, value, buf, size);
        return true;
}
