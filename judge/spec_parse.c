/* judge/spec_parse.c — the judge spec, strictly. Pure: allocation only.
 *
 * Every key is checked against a list; an unknown key, a wrong type or a bad
 * value is an error whose message starts with the JSON path of the offending
 * value ("cases[2].expect.stdout: unknown matcher \"equal\" ..."), so a spec
 * author can find it without counting braces. Regexes are compiled here, so a
 * spec that parses can always be evaluated.
 */
#include "judge/judge_internal.h"
#include "config/schema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/json_cleanup.h"
#include "util/portable.h"
#include "util/textsafe.h"

#define PATH_MAX_LEN 160

static const char *const top_keys[] = { "program", "profile", "limits", "cases", "image", NULL };
static const char *const program_keys[] = { "path", "source", NULL };
static const char *const case_keys[] = { "name", "weight", "args", "stdin", "expect", NULL };
static const char *const expect_keys[] = { "exit_code", "stdout", "stderr", NULL };

int judge_fail_at(struct nsb_error *e, const char *path, const char *fmt, ...)
{
        char what[NSB_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        if (!path)      /* the spec itself: its callers name it ("spec 'x.json'") */
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s", what);
        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: %s", path, what);
}

static int fail_oom(struct nsb_error *e)
{
        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
}

/* A key or name for a message: clipped, one line, the unsafe characters of
 * util/textsafe.h shown as escapes (an error message is prose for a person,
 * in the JSON too). */
static const char *shown(char *buf, size_t size, const char *s)
{
        buf[0] = '\0';
        textsafe_term_append(buf, size, s, strlen(s), 40);
        return buf;
}

static int check_keys(const json_t *obj, const char *path, const char *const *allowed, struct nsb_error *e)
{
        const char *key;
        json_t *v;

        json_object_foreach((json_t *) obj, key, v) {
                char list[160] = "", k[64];
                bool ok = false;

                for (size_t i = 0; allowed[i]; i++)
                        if (strcmp(key, allowed[i]) == 0)
                                ok = true;
                if (ok)
                        continue;
                for (size_t i = 0; allowed[i]; i++) {
                        if (i)
                                strncat(list, ", ", sizeof list - strlen(list) - 1);
                        strncat(list, allowed[i], sizeof list - strlen(list) - 1);
                }
                return judge_fail_at(e, path, "unknown key \"%s\" (expected one of: %s)",
                                     shown(k, sizeof k, key), list);
        }
        return 0;
}

/* A copy of a JSON string. @allow_nul: the value may hold U+0000 (stdin,
 * expected output); otherwise it is rejected (names, paths, argv). */
static int take_string(const json_t *v, const char *path, bool allow_nul, bool allow_empty,
                       char **ret, size_t *ret_len, struct nsb_error *e)
{
        const char *s;
        size_t len;
        char *copy;

        if (!json_is_string(v))
                return judge_fail_at(e, path, "expected a string");
        s = json_string_value(v);
        len = json_string_length(v);
        if (!allow_nul && memchr(s, '\0', len))
                return judge_fail_at(e, path, "must not contain a NUL character");
        if (!allow_empty && len == 0)
                return judge_fail_at(e, path, "must not be empty");
        copy = malloc(len + 1);
        if (!copy)
                return fail_oom(e);
        memcpy(copy, s, len);
        copy[len] = '\0';
        *ret = copy;
        if (ret_len)
                *ret_len = len;
        return 0;
}

static char *path_join(const char *spec_path, const char *rel)
{
        const char *slash = spec_path ? strrchr(spec_path, '/') : NULL;
        char *out = NULL;
        int n;

        if (rel[0] == '/' || !slash)
                return strdup(rel);
        if (slash == spec_path)
                n = nsb_asprintf(&out, "/%s", rel);
        else
                n = nsb_asprintf(&out, "%.*s/%s", (int) (slash - spec_path), spec_path, rel);
        return n < 0 ? NULL : out;
}

/* The program is the file @rel (from @base_of's folder, when relative):
 * placed at /program/BASENAME. @what names it in errors. */
static int program_at(struct judge_program *p, const char *base_of, const char *rel, const char *what,
                      struct nsb_error *e)
{
        const char *base = strrchr(rel, '/');

        base = base ? base + 1 : rel;
        if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
                return judge_fail_at(e, what, "must name a file, not a directory");
        p->origin = what;
        p->name = strdup(base);
        p->path = path_join(base_of, rel);
        if (nsb_asprintf(&p->sandbox_path, "/program/%s", base) < 0)
                p->sandbox_path = NULL;
        return p->name && p->path && p->sandbox_path ? 0 : fail_oom(e);
}

int judge_spec_set_program(struct judge_spec *spec, const char *path, struct nsb_error *e)
{
        struct judge_program *p = &spec->program;

        if (!*path)
                return judge_fail_at(e, "--program", "must not be empty");
        free(p->path);
        free(p->source);
        free(p->name);
        free(p->sandbox_path);
        memset(p, 0, sizeof *p);
        /* a command-line path: from the current directory */
        return program_at(p, NULL, path, "--program", e);
}

static int parse_program(const json_t *obj, const char *spec_path, struct judge_program *p, struct nsb_error *e)
{
        const json_t *path = json_object_get(obj, "path"), *src = json_object_get(obj, "source");
        AUTOFREE char *rel = NULL;
        int r;

        if (!json_is_object(obj))
                return judge_fail_at(e, "program", "expected {\"path\": FILE} or {\"source\": TEXT}");
        r = check_keys(obj, "program", program_keys, e);
        if (r < 0)
                return r;
        if (path && src)
                return judge_fail_at(e, "program", "give either \"path\" or \"source\", not both");
        if (!path && !src)
                return judge_fail_at(e, "program", "expected {\"path\": FILE} or {\"source\": TEXT}");
        if (src) {
                r = take_string(src, "program.source", true, true, &p->source, &p->source_len, e);
                if (r < 0)
                        return r;
                p->name = strdup("main.py");
                p->sandbox_path = strdup("/program/main.py");
                return p->name && p->sandbox_path ? 0 : fail_oom(e);
        }
        r = take_string(path, "program.path", false, false, &rel, NULL, e);
        if (r < 0)
                return r;
        return program_at(p, spec_path, rel, "program.path", e);
}

static int parse_matcher(const json_t *obj, const char *path, struct judge_matcher *m, struct nsb_error *e)
{
        static const struct { const char *key; enum judge_match_kind kind; } kinds[] = {
                { "equals", JUDGE_MATCH_EQUALS },
                { "contains", JUDGE_MATCH_CONTAINS },
                { "regex", JUDGE_MATCH_REGEX },
        };
        char vpath[PATH_MAX_LEN], k[64];
        const char *key;
        json_t *v;
        size_t i;
        int r;

        if (!json_is_object(obj))
                return judge_fail_at(e, path, "expected a matcher like {\"equals\": \"...\"}");
        if (json_object_size(obj) != 1)
                return judge_fail_at(e, path, "a matcher takes exactly one key (equals, contains or regex), got %zu",
                                     json_object_size(obj));
        json_object_foreach((json_t *) obj, key, v) {
                for (i = 0; i < ARRAY_SIZE(kinds); i++)
                        if (strcmp(key, kinds[i].key) == 0)
                                break;
                if (i == ARRAY_SIZE(kinds))
                        return judge_fail_at(e, path, "unknown matcher \"%s\" (expected equals, contains or regex)",
                                             shown(k, sizeof k, key));
                snprintf(vpath, sizeof vpath, "%s.%s", path, key);
                r = take_string(v, vpath, true, true, &m->text, &m->len, e);
                if (r < 0)
                        return r;
                m->kind = kinds[i].kind;
        }
        if (m->kind == JUDGE_MATCH_REGEX) {
                PCRE2_SIZE off = 0;
                int code = 0;

                /* UTF mode: patterns and subjects are characters, not bytes.
                 * MATCH_INVALID_UTF: a program's output that is not valid
                 * UTF-8 is still searched (invalid bytes never match) instead
                 * of making the match itself an error. */
                m->re = pcre2_compile((PCRE2_SPTR) m->text, m->len, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                                      &code, &off, NULL);
                if (!m->re) {
                        PCRE2_UCHAR msg[256];

                        if (pcre2_get_error_message(code, msg, sizeof msg) < 0)
                                snprintf((char *) msg, sizeof msg, "error %d", code);
                        return judge_fail_at(e, vpath, "bad regex at offset %zu: %s", (size_t) off, (char *) msg);
                }
        }
        return 0;
}

static int parse_expect(const json_t *obj, const char *path, struct judge_expect *x, struct nsb_error *e)
{
        const json_t *v;
        char sub[PATH_MAX_LEN];
        int r;

        if (!json_is_object(obj))
                return judge_fail_at(e, path, "expected an object");
        r = check_keys(obj, path, expect_keys, e);
        if (r < 0)
                return r;
        if ((v = json_object_get(obj, "exit_code"))) {
                snprintf(sub, sizeof sub, "%s.exit_code", path);
                if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 255)
                        return judge_fail_at(e, sub, "expected an integer from 0 to 255");
                x->exit_code = (int) json_integer_value(v);
        }
        if ((v = json_object_get(obj, "stdout"))) {
                snprintf(sub, sizeof sub, "%s.stdout", path);
                r = parse_matcher(v, sub, &x->out, e);
                if (r < 0)
                        return r;
        }
        if ((v = json_object_get(obj, "stderr"))) {
                snprintf(sub, sizeof sub, "%s.stderr", path);
                r = parse_matcher(v, sub, &x->err, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_case(const json_t *obj, size_t idx, struct judge_case *c, struct nsb_error *e)
{
        char path[PATH_MAX_LEN], sub[PATH_MAX_LEN];
        const json_t *v;
        int r;

        snprintf(path, sizeof path, "cases[%zu]", idx);
        if (!json_is_object(obj))
                return judge_fail_at(e, path, "expected an object");
        r = check_keys(obj, path, case_keys, e);
        if (r < 0)
                return r;

        snprintf(sub, sizeof sub, "%s.name", path);
        if (!(v = json_object_get(obj, "name")))
                return judge_fail_at(e, path, "missing \"name\"");
        r = take_string(v, sub, false, false, &c->name, NULL, e);
        if (r < 0)
                return r;
        c->weight = 1;
        if ((v = json_object_get(obj, "weight"))) {
                snprintf(sub, sizeof sub, "%s.weight", path);
                /* a share of the score: positive and finite (a case worth
                 * nothing is a case to leave out) */
                if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e9)
                        return judge_fail_at(e, sub, "expected a number greater than 0 (at most 1e9)");
                c->weight = json_number_value(v);
        }

        if ((v = json_object_get(obj, "args"))) {
                snprintf(sub, sizeof sub, "%s.args", path);
                if (!json_is_array(v))
                        return judge_fail_at(e, sub, "expected an array of strings");
                c->stimulus.args = calloc(json_array_size(v) + 1, sizeof *c->stimulus.args);
                if (!c->stimulus.args)
                        return fail_oom(e);
                for (size_t i = 0; i < json_array_size(v); i++) {
                        snprintf(sub, sizeof sub, "%s.args[%zu]", path, i);
                        r = take_string(json_array_get(v, i), sub, false, true, &c->stimulus.args[i], NULL, e);
                        if (r < 0)
                                return r;
                        c->stimulus.n_args++;
                }
        }
        if ((v = json_object_get(obj, "stdin"))) {
                snprintf(sub, sizeof sub, "%s.stdin", path);
                r = take_string(v, sub, true, true, &c->stimulus.stdin_data, &c->stimulus.stdin_len, e);
                if (r < 0)
                        return r;
        }
        if ((v = json_object_get(obj, "expect"))) {
                snprintf(sub, sizeof sub, "%s.expect", path);
                r = parse_expect(v, sub, &c->expect, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_spec(const json_t *root, const char *spec_path, struct judge_spec *spec, struct nsb_error *e)
{
        const json_t *v, *cases;
        int r;

        if (!json_is_object(root))
                return judge_fail_at(e, NULL, "expected a JSON object");
        r = check_keys(root, NULL, top_keys, e);
        if (r < 0)
                return r;

        if (!(v = json_object_get(root, "program")))
                return judge_fail_at(e, NULL, "missing \"program\"");
        r = parse_program(v, spec_path, &spec->program, e);
        if (r < 0)
                return r;

        if ((v = json_object_get(root, "profile"))) {
                AUTOFREE char *given = NULL;
                size_t n;

                r = take_string(v, "profile", false, false, &given, NULL, e);
                if (r < 0)
                        return r;
                /* A path (a '/' or an .ini name, as cfg_profile_load tells
                 * them from names) is found from the spec's folder, as
                 * program.path is: a spec and its files move together. */
                n = strlen(given);
                if (strchr(given, '/') || (n > 4 && strcmp(given + n - 4, ".ini") == 0))
                        spec->profile = path_join(spec_path, given);
                else
                        spec->profile = strdup(given);
                if (!spec->profile)
                        return fail_oom(e);
        }
        /* an image to run the program on (docs/images.md); --image wins */
        if ((v = json_object_get(root, "image"))) {
                r = take_string(v, "image", false, false, &spec->image, NULL, e);
                if (r < 0)
                        return r;
        }
        if ((v = json_object_get(root, "limits"))) {
                r = cfg_limits_parse_json(v, &spec->limits, &spec->limits_set, e);
                if (r < 0)
                        return r;
                /* The judge runs the program under Python. */
                if ((spec->limits_set & CFG_F_MEMORY) && cfg_check_python_memory(spec->limits.memory_bytes, e) < 0) {
                        e->stage = NSB_STAGE_CONFIG;
                        return nsb_error_prefix(e, "limits.memory");
                }
        }

        if (!(cases = json_object_get(root, "cases")))
                return judge_fail_at(e, NULL, "missing \"cases\"");
        if (!json_is_array(cases) || json_array_size(cases) == 0)
                return judge_fail_at(e, "cases", "expected a non-empty array of cases");
        spec->cases = calloc(json_array_size(cases), sizeof *spec->cases);
        if (!spec->cases)
                return fail_oom(e);
        for (size_t i = 0; i < json_array_size(cases); i++) {
                r = parse_case(json_array_get(cases, i), i, &spec->cases[i], e);
                spec->n_cases++;     /* counted even when half-filled, so free sees it */
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(spec->cases[j].name, spec->cases[i].name) == 0) {
                                char path[PATH_MAX_LEN], n[64];
                                snprintf(path, sizeof path, "cases[%zu].name", i);
                                return judge_fail_at(e, path, "duplicate case name \"%s\" (also cases[%zu])",
                                                     shown(n, sizeof n, spec->cases[i].name), j);
                        }
        }
        return 0;
}

int judge_spec_parse(const char *text, size_t len, const char *spec_path, struct judge_spec *ret,
                     struct nsb_error *e)
{
        AUTO(json_decref) json_t *root = NULL;
        json_error_t jerr;
        int r;

        memset(ret, 0, sizeof *ret);
        cfg_defaults(&ret->limits, NSB_CMD_JUDGE);
        /* REJECT_DUPLICATES: a key given twice is ambiguous, never "last wins".
         * ALLOW_NUL: stdin and expected output are bytes and may hold \u0000;
         * the fields that must not (names, paths, argv) check it themselves. */
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!root)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "invalid JSON at line %d, column %d: %s",
                                jerr.line, jerr.column, jerr.text);
        r = parse_spec(root, spec_path, ret, e);
        if (r < 0)
                judge_spec_free(ret);
        return r;
}

static void matcher_free(struct judge_matcher *m)
{
        free(m->text);
        pcre2_code_free(m->re);     /* accepts NULL */
}

void judge_spec_free(struct judge_spec *spec)
{
        if (!spec)
                return;
        free(spec->program.path);
        free(spec->program.source);
        free(spec->program.name);
        free(spec->program.sandbox_path);
        free(spec->profile);
        free(spec->image);
        for (size_t i = 0; i < spec->n_cases; i++) {
                struct judge_case *c = &spec->cases[i];

                free(c->name);
                for (size_t j = 0; j < c->stimulus.n_args; j++)
                        free(c->stimulus.args[j]);
                free(c->stimulus.args);
                free(c->stimulus.stdin_data);
                matcher_free(&c->expect.out);
                matcher_free(&c->expect.err);
        }
        free(spec->cases);
        memset(spec, 0, sizeof *spec);
}
