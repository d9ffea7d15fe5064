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
#include "config/config_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/sha256.h"
#include "util/textsafe.h"

void cfg_format_value(enum cfg_kind kind, uint64_t v, char *buf, size_t size)
{
        static const struct { const char *unit; uint64_t ms; } times[] = {
                { "h", 3600000 }, { "m", 60000 }, { "s", 1000 },
        };
        static const struct { char unit; unsigned shift; } sizes[] = {
                { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 },
        };

        snprintf(buf, size, kind == CFG_KIND_DURATION ? "%llums" : "%llu", (unsigned long long) v);
        if (kind == CFG_KIND_DURATION) {
                for (size_t i = 0; i < ARRAY_SIZE(times); i++)
                        if (v % times[i].ms == 0) {
                                snprintf(buf, size, "%llu%s", (unsigned long long) (v / times[i].ms), times[i].unit);
                                return;
                        }
        } else if (kind == CFG_KIND_SIZE) {
                for (size_t i = 0; i < ARRAY_SIZE(sizes); i++)
                        if (v && v % (1ULL << sizes[i].shift) == 0) {
                                snprintf(buf, size, "%llu%c", (unsigned long long) (v >> sizes[i].shift),
                                         sizes[i].unit);
                                return;
                        }
        }
}

/* Values are written as they are, except for what the parser would read
 * differently: a control character (the text stays one line per key), a
 * blank at either end (inih strips it), a ';' at the start or after a blank
 * (a comment), a backslash that begins "\xHH" (the parser's escape), and
 * every byte of a character util/textsafe.h calls unsafe are
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

        for (size_t i = 0; i < n;) {
                unsigned char c = (unsigned char) s[i];
                bool blank_edge = c == ' ' && (i == 0 || i + 1 == n);
                bool comment = c == ';' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t');
                bool escape = c == '\\' && s[i + 1] == 'x' && is_hex(s[i + 2]) && is_hex(s[i + 3]);
                enum textsafe_class cls;
                uint32_t cp;
                size_t len = textsafe_next(s + i, n - i, &cp, &cls);

                /* util/textsafe.h's unsafe set (C0, DEL, C1, bidi controls,
                 * line separators, bytes not UTF-8): every byte of it as
                 * \xHH, so --print-profile never writes one to a terminal */
                if (cls != TEXTSAFE_PLAIN || blank_edge || comment || escape) {
                        for (size_t k = 0; k < len; k++)
                                fprintf(f, "\\x%02x", (unsigned char) s[i + k]);
                } else {
                        fwrite(s + i, 1, len, f);
                }
                i += len;
        }
}

static void put_kv(FILE *f, const char *key, const char *value)
{
        fprintf(f, "%s = ", key);
        put_value(f, value);
        fputc('\n', f);
}

/* ---- the rows' renderers (config_internal.h) ------------------------------- */

static const void *field_of(const struct cfg_key *k, const struct nsb_config *cfg)
{
        return (const char *) cfg + k->offset;
}

static size_t count_of(const struct cfg_key *k, const struct nsb_config *cfg)
{
        size_t n;
        memcpy(&n, (const char *) cfg + k->count_offset, sizeof n);
        return n;
}

/* A limit; 0 is only ever cpu_time's "the same as wall_time", which follows
 * it and is not written. */
void cfg_render_limit(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
        char text[64];
        uint64_t v;

        memcpy(&v, field_of(k, cfg), sizeof v);
        if (!v)
                return;
        cfg_format_value(k->kind, v, text, sizeof text);
        fprintf(f, "%s = %s\n", k->key, text);
}

void cfg_render_choice(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
        char text[64];

        cfg_key_value_text(k, cfg, text, sizeof text);
        fprintf(f, "%s = %s\n", k->key, text);
}

/* The interpreter when one is named; its args whenever the [python] section
 * is there at all (their default written out, so the text says what runs). */
void cfg_render_text(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
        const char *v = *(char *const *) field_of(k, cfg);

        if (!v && (k->bit == CFG_F_INTERPRETER || !(cfg->interpreter || cfg->n_packages || cfg->n_preload)))
                return;
        put_kv(f, k->key, v ? v : k->def_text);
}

/* The image as it ran: its reference without the caller's pin, pinned to
 * the digest that was opened (a profile nsbox accepts back, and
 * policy_sha256 differs for another image under the same name). */
void cfg_render_image(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
        const char *v = cfg->image, *at = v ? strrchr(v, '@') : NULL;
        char buf[4200];

        if (!v)
                return;
        if (!cfg->image_digest) {
                put_kv(f, k->key, v);
                return;
        }
        if (at && strchr(at, '/'))
                at = NULL;
        snprintf(buf, sizeof buf, "%.*s@%s", (int) (at ? (size_t) (at - v) : strlen(v)), v, cfg->image_digest);
        put_kv(f, k->key, buf);
}

void cfg_render_strings(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
        char *const *v = *(char **const *) field_of(k, cfg);

        for (size_t i = 0; i < count_of(k, cfg); i++)
                put_kv(f, k->key, v[i]);
}

/* ro_bind and bind, in the order given. */
void cfg_render_binds(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
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
}

void cfg_render_tmpfs(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
        char size[32];

        for (size_t i = 0; i < cfg->n_tmpfs; i++) {
                fprintf(f, "%s = ", k->key);
                put_value(f, cfg->tmpfs[i].dst);
                if (cfg->tmpfs[i].size_bytes) {
                        cfg_format_value(CFG_KIND_SIZE, cfg->tmpfs[i].size_bytes, size, sizeof size);
                        fprintf(f, ":%s", size);
                }
                fputc('\n', f);
        }
}

void cfg_render_env(const struct cfg_key *k, const struct nsb_config *cfg, FILE *f)
{
        for (size_t i = 0; i < cfg->n_env_add; i++) {
                const char *kv = cfg->env_add[i], *eq = strchr(kv, '=');
                fprintf(f, "%.*s = ", (int) (eq - kv), kv);
                put_value(f, eq + 1);
                fputc('\n', f);
        }
}

/* ---- the canonical text ------------------------------------------------------- */

/* Section @section's lines, rows in table order, into @f with its header
 * when it has any. */
static int render_section(const struct nsb_config *cfg, const char *section, bool first, FILE *f)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *s = open_memstream(&buf, &len);

        if (!s)
                return -ENOMEM;
        for (size_t i = 0; cfg_key_at(i); i++) {
                const struct cfg_key *k = cfg_key_at(i);
                if (k->section && k->render && strcmp(k->section, section) == 0 && !cfg_key_list_shared(k))
                        k->render(k, cfg, s);
        }
        if (fclose(s) != 0) {
                free(buf);
                return -ENOMEM;
        }
        if (len)
                fprintf(f, "%s[%s]\n%s", first ? "" : "\n", section, buf);
        free(buf);
        return len ? 1 : 0;
}

int cfg_policy_render(const struct nsb_config *cfg, char **ret, struct nsb_error *e)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        bool first = true;
        int r = 0;

        if (!f)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "rendering the policy");
        for (size_t i = 0; cfg_profile_section(i) && r >= 0; i++)
                if ((r = render_section(cfg, cfg_profile_section(i), first, f)) > 0)
                        first = false;
        if (fclose(f) != 0 || !buf || r < 0) {
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
        for (size_t i = 0; cfg_key_at(i); i++) {
                const struct cfg_key *k = cfg_key_at(i);
                char *to = (char *) cfg + k->offset, *from = (char *) p + k->offset;

                if (k->kind == CFG_KIND_NONE)
                        continue;
                if (k->kind == CFG_KIND_LIST) {
                        if (cfg_key_list_shared(k))
                                continue;
                        if (prepend((void **) to, (size_t *) ((char *) cfg + k->count_offset), (void **) from,
                                    (size_t *) ((char *) p + k->count_offset), k->elem_size) < 0)
                                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                        if (k->dedupe != CFG_DEDUPE_NONE)
                                drop_overridden(*(char ***) to, (size_t *) ((char *) cfg + k->count_offset),
                                                k->dedupe == CFG_DEDUPE_NAME);
                } else if (!(cfg->set & k->bit)) {
                        /* the command line did not give it: the profile's */
                        if (k->kind == CFG_KIND_TEXT)
                                take_str((char **) to, (char **) from);
                        else
                                memcpy(to, from, k->size);
                }
        }
        return 0;
}

/* ---- the interpreter's command line --------------------------------------- */

int cfg_python_argv(const struct nsb_config *cfg, char *const *tail, size_t n_tail, char ***ret, size_t *ret_n)
{
        const char *interp = cfg_interpreter(cfg);
        const char *args = cfg->interp_args ? cfg->interp_args : CFG_DEFAULT_INTERP_ARGS;
        /* The default keeps the contract's argv[0]. Any other interpreter is
         * named by its path: CPython finds its prefix (and a venv's
         * pyvenv.cfg) from argv[0], and "python3" would be looked up on PATH. */
        const char *argv0 = strcmp(interp, CFG_DEFAULT_INTERPRETER) == 0 ? "python3" : interp;
        size_t n_words = 0, bytes = strlen(argv0) + 1 + strlen(args) + 1, n = 0;
        char **v, *strings, *w;

        for (const char *p = args; *p;) {
                size_t len;

                p += strspn(p, " \t");
                if (!*p)
                        break;
                len = strcspn(p, " \t");
                /* room for the second word "-I" becomes */
                n_words += cfg->script_dir_first && len == 2 && strncmp(p, "-I", 2) == 0 ? 2 : 1;
                p += len;
        }
        v = malloc((1 + n_words + n_tail + 1) * sizeof *v + bytes);
        if (!v)
                return -ENOMEM;
        strings = (char *) (v + 1 + n_words + n_tail + 1);
        v[n++] = strcpy(strings, argv0);
        w = strings + strlen(argv0) + 1;
        strcpy(w, args);
        for (char *tok = strtok(w, " \t"); tok; tok = strtok(NULL, " \t")) {
                if (cfg->script_dir_first && strcmp(tok, "-I") == 0) {
                        /* static strings: the block holds no room for them */
                        v[n++] = "-E";
                        v[n++] = "-s";
                } else {
                        v[n++] = tok;
                }
        }
        for (size_t i = 0; i < n_tail; i++)
                v[n++] = tail[i];
        v[n] = NULL;
        *ret = v;
        *ret_n = n;
        return 0;
}
