/* config/policy_parse.c — profile files (INI, through inih) into struct
 * nsb_config. Pure: allocation only; whether a mount source exists is asked
 * of the caller's callback.
 *
 * Every key is a row of the schema (config/schema.h) and its value goes
 * through that row's parser, the flag's own, so a profile accepts exactly
 * what the flag does.
 * inih gives no line numbers to the handler, so the text is fed through our
 * own line reader, which counts lines, rejects NUL bytes and over-long lines,
 * and checks section headers (inih only reports sections through keys, so an
 * unknown empty section would otherwise pass unseen).
 */
#include "config/policy.h"
#include "config/schema.h"
#include "config/config_internal.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "path/path.h"
#include "util/cleanup.h"
#include "util/portable.h"

struct ini_ctx {
        const struct cfg_profile_opts *opts;
        struct nsb_config *cfg;
        struct nsb_error *e;
        const char *text;
        size_t len, pos;
        int line;               /* of the line last handed to inih */
        int err_line;           /* first error we found; 0 = none */
        uint64_t seen;          /* scalar keys (bit = their schema row) already given */
};

static const char *file_name(const struct ini_ctx *c)
{
        return c->opts && c->opts->file ? c->opts->file : "<profile>";
}

/* Record the first error only, as "FILE:LINE: message". */
static void fail_at(struct ini_ctx *c, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(struct ini_ctx *c, int errnum, const char *fmt, ...)
{
        char msg[NSB_ERROR_MSG_MAX];
        va_list ap;

        if (c->err_line)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        c->err_line = c->line;
        nsb_fail(c->e, NSB_STAGE_CONFIG, errnum, "%s:%d: %s", file_name(c), c->line, msg);
}

static void check_section_line(struct ini_ctx *c, const char *s)
{
        const char *end, *best, *sections[8];
        char typed[64];
        size_t n_sections = 0;
        size_t n;

        s += strspn(s, " \t\r");
        if (*s != '[')
                return;
        end = strchr(s, ']');
        if (!end)
                return;         /* inih reports the syntax error */
        n = (size_t) (end - s - 1);
        for (size_t i = 0; cfg_profile_section(i); i++)
                if (strlen(cfg_profile_section(i)) == n && strncmp(cfg_profile_section(i), s + 1, n) == 0)
                        return;
        snprintf(typed, sizeof typed, "%.*s", (int) (n < sizeof typed ? n : 0), s + 1);
        for (size_t i = 0; cfg_profile_section(i); i++)
                sections[n_sections++] = cfg_profile_section(i);
        best = n < sizeof typed ? cfg_closest(typed, sections, n_sections) : NULL;
        if (best)
                fail_at(c, EINVAL, "unknown section [%.*s] (did you mean [%s]?)", (int) (n > 64 ? 64 : n), s + 1,
                        best);
        else
                fail_at(c, EINVAL, "unknown section [%.*s] (expected [limits], [sandbox], [mounts], [env] or "
                        "[python])", (int) (n > 64 ? 64 : n), s + 1);
}

/* "unknown key 'memroy' in [limits] (did you mean memory?)"; a key of
 * another section says where it belongs; else the section's keys. */
static void unknown_key(struct ini_ctx *c, const char *section, const char *name)
{
        const char *names[64], *best;
        const struct cfg_key *k;
        char list[256] = "";
        size_t n = 0, len = 0;

        for (size_t i = 0; (k = cfg_key_at(i)); i++)
                if (k->key && strcmp(k->key, name) == 0) {
                        if (!section[0])
                                fail_at(c, EINVAL, "key '%s' outside any section (it belongs in [%s])", name,
                                        k->section);
                        else
                                fail_at(c, EINVAL, "key '%s' belongs in [%s], not in [%s]", name, k->section,
                                        section);
                        return;
                }
        for (size_t i = 0; (k = cfg_key_at(i)) && n < ARRAY_SIZE(names); i++)
                if (k->key && strcmp(k->section, section) == 0) {
                        names[n++] = k->key;
                        if (len < sizeof list)
                                len += (size_t) snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                                         k->key);
                }
        best = strlen(name) < 64 ? cfg_closest(name, names, n) : NULL;
        if (!section[0])
                fail_at(c, EINVAL, "key '%.64s' outside any section (keys follow a [section] line: [limits], "
                        "[sandbox], [mounts], [env] or [python])", name);
        else if (best)
                fail_at(c, EINVAL, "unknown key '%.64s' in [%s] (did you mean %s?)", name, section, best);
        else
                fail_at(c, EINVAL, "unknown key '%.64s' in [%s] (expected %s)", name, section, list);
}

/* inih's line reader (fgets-like), over our buffer. */
static char *read_line(char *str, int num, void *stream)
{
        struct ini_ctx *c = stream;
        const char *p, *nl;
        size_t n, room = (size_t) num - 2;      /* keep room for '\n' and NUL */

        if (c->pos >= c->len || num < 3)
                return NULL;
        p = c->text + c->pos;
        nl = memchr(p, '\n', c->len - c->pos);
        n = nl ? (size_t) (nl - p) : c->len - c->pos;
        c->pos += n + (nl ? 1 : 0);
        c->line++;
        if (memchr(p, '\0', n))
                fail_at(c, EINVAL, "NUL byte in the line");
        if (n > room) {
                fail_at(c, E2BIG, "line longer than %zu characters", room);
                n = room;
        }
        memcpy(str, p, n);
        str[n] = '\n';
        str[n + 1] = '\0';
        check_section_line(c, str);
        return str;
}

static void check_source(struct ini_ctx *c, const char *what, const char *src)
{
        if (src[0] != '/')
                fail_at(c, EINVAL, "%s: source '%s' is not an absolute path", what, src);
        else if (c->opts && c->opts->exists && !c->opts->exists(src, c->opts->user))
                fail_at(c, ENOENT, "%s: source '%s' does not exist", what, src);
}

/* @p in path/'s normal form, or NULL when it is relative, has a ".."
 * component, is the root, or memory ran out. */
static char *normalized(const char *p)
{
        struct nsb_error sub;
        char *out = NULL;

        nsb_error_clear(&sub);
        return path_normalize(p, "", &out, &sub) < 0 ? NULL : out;
}

/* @norm against the mount at @other: path_conflict's rule, with the line's
 * wording ("overlaps the bind at ..."). */
static void check_against(struct ini_ctx *c, const char *what, const char *dst, const char *norm, bool is_tmpfs,
                          const char *other, bool other_is_tmpfs)
{
        AUTOFREE char *o = normalized(other);
        const char *why = o ? path_conflict(norm, is_tmpfs, o, other_is_tmpfs) : NULL;

        if (!why)
                return;
        if (strcmp(o, norm) == 0)
                fail_at(c, EINVAL, "%s: destination '%s' is mounted twice", what, dst);
        else
                fail_at(c, EINVAL, "%s: destination '%s' overlaps the %s at '%s'", what, dst,
                        other_is_tmpfs ? "tmpfs" : "bind", other);
}

/* Files the sandbox writes itself (mount/mnt_plan.c: synth_files and the
 * CPU count's files). A profile's mount at one of them, or at a directory
 * holding one (ro_bind = /etc, tmpfs = /etc, ro_bind = X:/etc/passwd), would
 * show the host's accounts and clock or hide nsbox's: refused, as the mount
 * plan refuses a profile's host files there. A profile is a policy reused
 * for every run and every learner; the command line's --bind/--ro-bind/
 * --tmpfs are the caller's own choice for that run and are not refused
 * (docs/security.md, "What the root holds"). */
static const char *const synthesized[] = {
        "/etc/passwd", "/etc/group", "/etc/localtime",
        "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible",
};

static bool hides_synthesized(const char *norm, const char **which)
{
        for (size_t i = 0; i < ARRAY_SIZE(synthesized); i++)
                if (path_under(synthesized[i], norm)) {        /* the file itself, or a dir above it */
                        *which = synthesized[i];
                        return true;
                }
        return false;
}

/* A mount destination: absolute, no "..", not the sandbox's own, not over
 * a file the sandbox writes itself, and not
 * given to another mount (binds and tmpfs share one namespace of dsts).
 * The same rules as the mount plan's (path.h), checked here so that a
 * profile's mistake is refused with its FILE:LINE. */
static void check_dst(struct ini_ctx *c, const char *what, const char *dst, bool is_tmpfs)
{
        const struct nsb_config *cfg = c->cfg;
        size_t n_binds = cfg->n_binds - (is_tmpfs ? 0 : 1), n_tmpfs = cfg->n_tmpfs - (is_tmpfs ? 1 : 0);
        AUTOFREE char *norm = NULL;
        const char *which = NULL;

        if (dst[0] != '/' || path_has_dotdot(dst)) {
                fail_at(c, EINVAL, "%s: destination '%s' must be absolute, without '..'", what, dst);
                return;
        }
        norm = normalized(dst);         /* NULL: the root itself ("/", "//", "/.") */
        if (!norm || path_is_reserved(norm)) {
                fail_at(c, EINVAL, "%s: destination '%s' is a path the sandbox owns (" PATH_RESERVED_LIST ")",
                        what, dst);
                return;
        }
        if (hides_synthesized(norm, &which)) {
                fail_at(c, EINVAL, "%s: destination '%s' would replace the sandbox's own %s (nsbox writes it; "
                        "a profile may not mount over it)", what, dst, which);
                return;
        }
        for (size_t i = 0; i < n_binds; i++)
                check_against(c, what, dst, norm, is_tmpfs, cfg->binds[i].dst, false);
        for (size_t i = 0; i < n_tmpfs; i++)
                check_against(c, what, dst, norm, is_tmpfs, cfg->tmpfs[i].dst, true);
}

static void check_bind(struct ini_ctx *c, const char *what)
{
        const struct nsb_bind *b = &c->cfg->binds[c->cfg->n_binds - 1];

        check_source(c, what, b->src);
        check_dst(c, what, b->dst, false);
}

/* The interpreter or a package: mounted at its own path. */
static void check_path(struct ini_ctx *c, const char *what, bool package)
{
        const struct nsb_config *cfg = c->cfg;
        const char *path = package ? cfg->packages[cfg->n_packages - 1] : cfg->interpreter;
        AUTOFREE char *norm = NULL;

        check_source(c, what, path);
        if (path[0] != '/')
                return;
        norm = normalized(path);
        if (!norm || path_is_reserved(norm) || path_has_dotdot(path)) {
                fail_at(c, EINVAL, "%s: '%s' lies under a path the sandbox owns, or has '..'", what, path);
                return;
        }
        for (size_t i = 0; package && i + 1 < cfg->n_packages; i++) {
                AUTOFREE char *o = normalized(cfg->packages[i]);
                if (o && strcmp(o, norm) == 0)
                        fail_at(c, EINVAL, "%s: '%s' is named twice", what, path);
        }
}

/* isolation = reduced and a key it cannot provide, in either order: the
 * later of the two is the error. */
static void check_reduced(struct ini_ctx *c, const char *what)
{
        char why[NSB_ERROR_MSG_MAX - 64];

        if (c->cfg->isolation != NSB_ISOLATION_REDUCED || !cfg_reduced_conflict(c->cfg, why, sizeof why))
                return;
        if (strcmp(what, "[sandbox] isolation") == 0)
                fail_at(c, EINVAL, "%s: reduced conflicts with an earlier key: %s", what, why);
        else
                fail_at(c, EINVAL, "%s: conflicts with isolation = reduced: %s", what, why);
}

static int hex_digit(char ch)
{
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        if (ch >= 'a' && ch <= 'f')
                return ch - 'a' + 10;
        if (ch >= 'A' && ch <= 'F')
                return ch - 'A' + 10;
        return -1;
}

/* "\xHH" in a value is the byte HH: how `profile show` writes what a line
 * cannot hold as it is (policy_render.c). Into a malloc'd *ret; -EINVAL for
 * \x00, -ENOMEM. */
static int unescape(const char *v, char **ret)
{
        char *out = malloc(strlen(v) + 1), *o = out;

        if (!out)
                return -ENOMEM;
        while (*v) {
                int hi, lo;

                if (v[0] == '\\' && v[1] == 'x' && (hi = hex_digit(v[2])) >= 0 && (lo = hex_digit(v[3])) >= 0) {
                        if (hi == 0 && lo == 0) {
                                free(out);
                                return -EINVAL;
                        }
                        *o++ = (char) (hi << 4 | lo);
                        v += 4;
                } else {
                        *o++ = *v++;
                }
        }
        *o = '\0';
        *ret = out;
        return 0;
}

static int on_env(struct ini_ctx *c, const char *name, const char *value)
{
        AUTOFREE char *kv = NULL;
        struct nsb_error sub;
        size_t n = strlen(name);

        for (size_t i = 0; i < c->cfg->n_env_add; i++)
                if (strncmp(c->cfg->env_add[i], name, n) == 0 && c->cfg->env_add[i][n] == '=') {
                        fail_at(c, EINVAL, "[env] %s is given twice", name);
                        return 0;
                }
        if (nsb_asprintf(&kv, "%s=%s", name, value) < 0) {
                fail_at(c, ENOMEM, "out of memory");
                return 0;
        }
        nsb_error_clear(&sub);
        if (cfg_set_option(c->cfg, "env", kv, &sub) < 0) {
                fail_at(c, sub.errnum ? sub.errnum : EINVAL, "[env] %s: %s", name, sub.msg);
                return 0;
        }
        return 1;
}

static int on_key(void *user, const char *section, const char *name, const char *raw)
{
        struct ini_ctx *c = user;
        AUTOFREE char *value = NULL;
        int r;
        const struct cfg_key *k = NULL;
        struct nsb_error sub;
        size_t idx = 0;
        char what[128];

        if (c->err_line)
                return 1;       /* only the first error is reported */
        /* "k = ;x" is a comment, and so is any ';' after whitespace: refuse
         * it rather than guess; \x3b is the ';' itself. */
        for (size_t i = 0; raw[i]; i++)
                if (raw[i] == ';' && (i == 0 || isspace((unsigned char) raw[i - 1]))) {
                        fail_at(c, EINVAL, "[%s] %s: a value may not begin with ';' nor have one after a space "
                                "(write that ';' as \\x3b)", section, name);
                        return 0;
                }
        r = unescape(raw, &value);
        if (r < 0) {
                fail_at(c, -r, "[%s] %s: %s", section, name,
                        r == -ENOMEM ? "out of memory" : "\\x00 (a NUL byte) in the value");
                return 0;
        }
        if (strcmp(section, "env") == 0)
                return on_env(c, name, value);
        for (size_t i = 0; cfg_key_at(i); i++)
                if (cfg_key_at(i)->key && cfg_key_by_profile(section, name) == cfg_key_at(i)) {
                        k = cfg_key_at(i);
                        idx = i;
                }
        if (!k) {
                unknown_key(c, section, name);
                return 0;
        }
        snprintf(what, sizeof what, "[%s] %s", section, name);
        if (k->kind != CFG_KIND_LIST) {
                if (c->seen & (1ull << idx)) {
                        fail_at(c, EINVAL, "%s is given twice", what);
                        return 0;
                }
                c->seen |= 1ull << idx;
        }
        nsb_error_clear(&sub);
        if (k->parse(k, c->cfg, value, &sub) < 0) {
                fail_at(c, sub.errnum ? sub.errnum : EINVAL, "%s: %s", what, sub.msg);
                return 0;
        }
        if (k->check == CFG_CHECK_BIND)
                check_bind(c, what);
        else if (k->check == CFG_CHECK_TMPFS)
                check_dst(c, what, c->cfg->tmpfs[c->cfg->n_tmpfs - 1].dst, true);
        else if (k->check == CFG_CHECK_PATH)
                check_path(c, what, k->kind == CFG_KIND_LIST);
        check_reduced(c, what);
        return c->err_line ? 0 : 1;
}

int cfg_profile_parse(const char *text, size_t len, const struct cfg_profile_opts *opts, struct nsb_config *cfg,
                      struct nsb_error *e)
{
        struct ini_ctx c = { .opts = opts, .cfg = cfg, .e = e, .text = text, .len = len };
        int r = ini_parse_stream(read_line, &c, on_key, &c);

        if (r > 0 && (!c.err_line || r < c.err_line)) {
                c.err_line = 0;
                c.line = r;
                fail_at(&c, EINVAL, "syntax error (expected [section], key = value, or a ; comment)");
        } else if (r < 0 && !c.err_line) {
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "%s: out of memory", file_name(&c));
        }
        if (c.err_line)
                return -(e->errnum ? e->errnum : EINVAL);
        return 0;
}

bool cfg_profile_key_row(size_t i, const char **ret_section, const char **ret_key)
{
        for (size_t k = 0; cfg_key_at(k); k++) {
                const struct cfg_key *row = cfg_key_at(k);
                if (!row->section || !row->key || i-- > 0)
                        continue;
                *ret_section = row->section;
                *ret_key = row->key;
                return true;
        }
        return false;
}

const char *cfg_profile_builtin(const char *name)
{
        /* A profile starts from cfg_defaults(), the schema's rows: a built-in
         * names only what differs from them. `nsbox profile show` prints the
         * resolved policy, defaults included. */
        static const struct { const char *name, *text; } builtins[] = {
                { "minimal", "; minimal: the default of nsbox run. No interpreter, no extra mounts.\n" },
                { "python", "; python: the default of nsbox python, judge and test.\n"
                            "[python]\n"
                            "interpreter = " CFG_DEFAULT_INTERPRETER "\n"
                            "args = " CFG_DEFAULT_INTERP_ARGS "\n" },
        };
        for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
                if (strcmp(builtins[i].name, name) == 0)
                        return builtins[i].text;
        return NULL;
}

const char *cfg_profile_default(enum nsb_cmd cmd)
{
        return cmd == NSB_CMD_RUN ? "minimal" : "python";
}
