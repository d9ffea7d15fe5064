/* config/policy_render.c — the canonical text of a resolved policy, its
 * hash, and the overlay of a profile under the command line. Pure.
 *
 * The text is the profile format itself, so `nsbox profile show` output is a
 * profile nsbox accepts back, and policy_sha256 is the hash of exactly what
 * `show` prints (without its comment header). Fixed key order, no comments,
 * sizes and durations in their largest exact unit: two spellings of one
 * policy ("1024K", "1M") give one text and one hash.
 */
#include "config/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/sha256.h"

#define DEFAULT_INTERP_ARGS "-I -B"

/* A size in its largest exact binary unit: 268435456 -> 256M. */
static void put_size_value(FILE *f, uint64_t v)
{
        static const struct { char unit; unsigned shift; } units[] = { { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 } };

        for (size_t i = 0; i < ARRAY_SIZE(units); i++)
                if (v && v % (1ULL << units[i].shift) == 0) {
                        fprintf(f, "%llu%c", (unsigned long long) (v >> units[i].shift), units[i].unit);
                        return;
                }
        fprintf(f, "%llu", (unsigned long long) v);
}

static void put_size(FILE *f, const char *key, uint64_t v)
{
        fprintf(f, "%s = ", key);
        put_size_value(f, v);
        fputc('\n', f);
}

static void put_duration(FILE *f, const char *key, uint64_t ms)
{
        static const struct { const char *unit; uint64_t ms; } units[] = {
                { "h", 3600000 }, { "m", 60000 }, { "s", 1000 },
        };

        for (size_t i = 0; i < ARRAY_SIZE(units); i++)
                if (ms % units[i].ms == 0) {
                        fprintf(f, "%s = %llu%s\n", key, (unsigned long long) (ms / units[i].ms), units[i].unit);
                        return;
                }
        fprintf(f, "%s = %llums\n", key, (unsigned long long) ms);
}

/* Values are written as they are, except for what the parser would read
 * differently: a control character (the text stays one line per key), a
 * blank at either end (inih strips it), a ';' at the start or after a blank
 * (a comment), and a backslash that begins "\xHH" (the parser's escape) are
 * written as \xHH, which the parser turns back into the byte. So
 * parse(render(v)) == v, and two different policies never render (and hash)
 * the same. */
static bool is_hex(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void put_value(FILE *f, const char *s)
{
        size_t n = strlen(s);

        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                bool blank_edge = c == ' ' && (i == 0 || i + 1 == n);
                bool comment = c == ';' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t');
                bool escape = c == '\\' && s[i + 1] == 'x' && is_hex(s[i + 2]) && is_hex(s[i + 3]);

                if (c < 0x20 || c == 0x7f || blank_edge || comment || escape)
                        fprintf(f, "\\x%02x", c);
                else
                        fputc(c, f);
        }
}

static void put_kv(FILE *f, const char *key, const char *value)
{
        fprintf(f, "%s = ", key);
        put_value(f, value);
        fputc('\n', f);
}

int cfg_policy_render(const struct nsb_config *cfg, char **ret, struct nsb_error *e)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "rendering the policy");
        fputs("[limits]\n", f);
        put_duration(f, "wall_time", cfg->wall_time_ms);
        if (cfg->cpu_time_ms)   /* 0: the same as wall_time, and it follows it */
                put_duration(f, "cpu_time", cfg->cpu_time_ms);
        put_size(f, "memory", cfg->memory_bytes);
        fprintf(f, "pids = %llu\n", (unsigned long long) cfg->pids_max);
        put_size(f, "output_limit", cfg->output_limit_bytes);
        put_size(f, "file_size", cfg->file_size_bytes);
        put_size(f, "tmp_size", cfg->tmp_size_bytes);

        fputs("\n[sandbox]\n", f);
        fprintf(f, "isolation = %s\n", cfg->isolation == NSB_ISOLATION_REDUCED ? "reduced" : "strict");
        fprintf(f, "network = %s\n", cfg->network == NSB_NETWORK_LOOPBACK ? "loopback" : "none");
        for (size_t i = 0; i < cfg->n_seccomp_deny; i++)
                put_kv(f, "seccomp_deny", cfg->seccomp_deny[i]);

        if (cfg->n_binds || cfg->n_tmpfs)
                fputs("\n[mounts]\n", f);
        for (size_t i = 0; i < cfg->n_binds; i++) {
                const struct nsb_bind *b = &cfg->binds[i];
                fprintf(f, "%s = ", b->read_only ? "ro_bind" : "bind");
                put_value(f, b->src);
                /* SRC alone only when it reads back as SRC:SRC (no ':') */
                if (strcmp(b->src, b->dst) != 0 || strchr(b->src, ':')) {
                        fputc(':', f);
                        put_value(f, b->dst);
                }
                fputc('\n', f);
        }
        for (size_t i = 0; i < cfg->n_tmpfs; i++) {
                fputs("tmpfs = ", f);
                put_value(f, cfg->tmpfs[i].dst);
                if (cfg->tmpfs[i].size_bytes) {
                        fputc(':', f);
                        put_size_value(f, cfg->tmpfs[i].size_bytes);
                }
                fputc('\n', f);
        }

        if (cfg->n_env_add)
                fputs("\n[env]\n", f);
        for (size_t i = 0; i < cfg->n_env_add; i++) {
                const char *kv = cfg->env_add[i], *eq = strchr(kv, '=');
                fprintf(f, "%.*s = ", (int) (eq - kv), kv);
                put_value(f, eq + 1);
                fputc('\n', f);
        }

        if (cfg->interpreter || cfg->interp_args || cfg->n_packages) {
                fputs("\n[python]\n", f);
                if (cfg->interpreter)
                        put_kv(f, "interpreter", cfg->interpreter);
                put_kv(f, "args", cfg->interp_args ? cfg->interp_args : DEFAULT_INTERP_ARGS);
                for (size_t i = 0; i < cfg->n_packages; i++)
                        put_kv(f, "packages", cfg->packages[i]);
        }
        if (fclose(f) != 0 || !buf) {
                free(buf);
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "rendering the policy");
        }
        *ret = buf;
        return 0;
}

void cfg_policy_sha256(const struct nsb_config *cfg, char out[65])
{
        AUTOFREE char *text = NULL;
        struct nsb_error e;

        out[0] = '\0';
        if (cfg_policy_render(cfg, &text, &e) == 0)
                sha256_hex(text, strlen(text), out);
}

/* ---- precedence ---------------------------------------------------------- */

uint32_t cfg_field_of_option(const char *name)
{
        static const struct { const char *option; uint32_t bit; } fields[] = {
                { "wall-time", CFG_F_WALL_TIME }, { "cpu-time", CFG_F_CPU_TIME },
                { "memory", CFG_F_MEMORY }, { "pids", CFG_F_PIDS },
                { "output-limit", CFG_F_OUTPUT }, { "file-size", CFG_F_FILE_SIZE },
                { "tmp-size", CFG_F_TMP_SIZE }, { "network", CFG_F_NETWORK },
                { "isolation", CFG_F_ISOLATION }, { "interpreter", CFG_F_INTERPRETER },
                { "interpreter-args", CFG_F_INTERP_ARGS },
        };

        for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
                if (strcmp(fields[i].option, name) == 0)
                        return fields[i].bit;
        return 0;
}

/* *list = profile's entries, then cfg's (element size @size). */
static int prepend(void **list, size_t *n, void **plist, size_t *pn, size_t size)
{
        char *v;

        if (*pn == 0)
                return 0;
        if (!(v = malloc((*n + *pn) * size)))
                return -ENOMEM;
        memcpy(v, *plist, *pn * size);
        if (*n)
                memcpy(v + *pn * size, *list, *n * size);
        free(*list);
        free(*plist);
        *list = v;
        *n += *pn;
        *plist = NULL;
        *pn = 0;
        return 0;
}

/* Length of the part of @s that identifies it: NAME of NAME=VALUE, or all. */
static size_t key_len(const char *s, bool by_name)
{
        const char *eq = by_name ? strchr(s, '=') : NULL;
        return eq ? (size_t) (eq - s) : strlen(s);
}

/* Drop an entry when a later one has the same key: the command line's
 * --env NAME=... replaces the profile's NAME, and a package named in both
 * is mounted once. Keeps the rendered policy a valid profile. */
static void drop_overridden(char **v, size_t *n, bool by_name)
{
        size_t out = 0;

        for (size_t i = 0; i < *n; i++) {
                size_t klen = key_len(v[i], by_name);
                bool later = false;
                for (size_t k = i + 1; k < *n && !later; k++)
                        later = key_len(v[k], by_name) == klen && strncmp(v[k], v[i], klen) == 0;
                if (later)
                        free(v[i]);
                else
                        v[out++] = v[i];
        }
        *n = out;
}

static void take_str(char **dst, char **src)
{
        if (!*src)
                return;
        free(*dst);
        *dst = move_ptr(src);
}

int cfg_profile_overlay(struct nsb_config *cfg, struct nsb_config *p, struct nsb_error *e)
{
        const uint32_t set = cfg->set;

#define TAKE(bit, field)                \
        if (!(set & (bit)))             \
                cfg->field = p->field
        TAKE(CFG_F_WALL_TIME, wall_time_ms);
        TAKE(CFG_F_CPU_TIME, cpu_time_ms);
        TAKE(CFG_F_MEMORY, memory_bytes);
        TAKE(CFG_F_PIDS, pids_max);
        TAKE(CFG_F_OUTPUT, output_limit_bytes);
        TAKE(CFG_F_FILE_SIZE, file_size_bytes);
        TAKE(CFG_F_TMP_SIZE, tmp_size_bytes);
        TAKE(CFG_F_NETWORK, network);
        TAKE(CFG_F_ISOLATION, isolation);
#undef TAKE
        if (!(set & CFG_F_INTERPRETER))
                take_str(&cfg->interpreter, &p->interpreter);
        if (!(set & CFG_F_INTERP_ARGS))
                take_str(&cfg->interp_args, &p->interp_args);
        if (prepend((void **) &cfg->binds, &cfg->n_binds, (void **) &p->binds, &p->n_binds, sizeof *cfg->binds) < 0 ||
            prepend((void **) &cfg->tmpfs, &cfg->n_tmpfs, (void **) &p->tmpfs, &p->n_tmpfs, sizeof *cfg->tmpfs) < 0 ||
            prepend((void **) &cfg->env_add, &cfg->n_env_add, (void **) &p->env_add, &p->n_env_add,
                    sizeof *cfg->env_add) < 0 ||
            prepend((void **) &cfg->packages, &cfg->n_packages, (void **) &p->packages, &p->n_packages,
                    sizeof *cfg->packages) < 0 ||
            prepend((void **) &cfg->seccomp_deny, &cfg->n_seccomp_deny, (void **) &p->seccomp_deny,
                    &p->n_seccomp_deny, sizeof *cfg->seccomp_deny) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        drop_overridden(cfg->env_add, &cfg->n_env_add, true);
        drop_overridden(cfg->packages, &cfg->n_packages, false);
        return 0;
}

/* ---- the interpreter's command line --------------------------------------- */

int cfg_python_argv(const struct nsb_config *cfg, char *const *tail, size_t n_tail, char ***ret, size_t *ret_n)
{
        const char *interp = cfg_interpreter(cfg);
        const char *args = cfg->interp_args ? cfg->interp_args : DEFAULT_INTERP_ARGS;
        /* The default keeps the contract's argv[0]. Any other interpreter is
         * named by its path: CPython finds its prefix (and a venv's
         * pyvenv.cfg) from argv[0], and "python3" would be looked up on PATH. */
        const char *argv0 = strcmp(interp, CFG_DEFAULT_INTERPRETER) == 0 ? "python3" : interp;
        size_t n_words = 0, bytes = strlen(argv0) + 1 + strlen(args) + 1, n = 0;
        char **v, *strings, *w;

        for (const char *p = args; *p;) {
                p += strspn(p, " \t");
                if (!*p)
                        break;
                n_words++;
                p += strcspn(p, " \t");
        }
        v = malloc((1 + n_words + n_tail + 1) * sizeof *v + bytes);
        if (!v)
                return -ENOMEM;
        strings = (char *) (v + 1 + n_words + n_tail + 1);
        v[n++] = strcpy(strings, argv0);
        w = strings + strlen(argv0) + 1;
        strcpy(w, args);
        for (char *tok = strtok(w, " \t"); tok; tok = strtok(NULL, " \t"))
                v[n++] = tok;
        for (size_t i = 0; i < n_tail; i++)
                v[n++] = tail[i];
        v[n] = NULL;
        *ret = v;
        *ret_n = n;
        return 0;
}
