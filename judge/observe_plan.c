/* judge/observe_plan.c — observations (`nsbox judge --observe`), their file,
 * and what a replay compares. Pure: allocation only.
 *
 * An observation is one case as it ran: what was run (the case, the program's
 * name and hash, the argv, the stdin's hash and bytes, the limits, the
 * resolved policy and its hash) and what happened (the result object). It
 * holds no expected value. Its id is the SHA-256 of the rest of the line in a
 * fixed form (keys sorted, compact), so a line edited after the run is
 * refused, and two attempts never share an id (each run has its own run_id).
 *
 * A replay builds the same "what was run" part from the spec and the command
 * line it is given (judge_obs_plan, the function the live run used) and
 * compares it with each stored line, naming the first difference.
 */
#include "judge/judge_internal.h"
#include "config/policy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/cleanup.h"
#include "util/json_cleanup.h"
#include "util/sha256.h"
#include "util/textsafe.h"

/* Excerpts of differing values in a refusal, in bytes. */
#define SHOWN_MAX 80

static int set(json_t *obj, const char *key, json_t *v)
{
        if (!v)
                return -1;
        return json_object_set_new(obj, key, v);
}

/* Above INT64_MAX (a size in exabytes) as a decimal string: JSON integers
 * here are 64-bit signed. */
static json_t *u64_json(uint64_t v)
{
        char buf[24];

        if (v <= (uint64_t) INT64_MAX)
                return json_integer((json_int_t) v);
        snprintf(buf, sizeof buf, "%llu", (unsigned long long) v);
        return json_string(buf);
}

static json_t *strv_json(char *const *v, size_t n)
{
        AUTO(json_decref) json_t *a = json_array();

        if (!a)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                /* argv strings come from JSON or the command line: made valid
                 * UTF-8 the way the result's `command` is */
                AUTOFREE char *clean = result_utf8_sanitize(v[i], strlen(v[i]));
                if (!clean || json_array_append_new(a, json_string(clean)) < 0)
                        return NULL;
        }
        return move_ptr(&a);
}

static json_t *stdin_json(const struct judge_obs_stdin *in)
{
        AUTO(json_decref) json_t *o = NULL;
        char sha[65];

        if (!in->known)
                return json_null();
        if (!(o = json_object()))
                return NULL;
        sha256_hex(in->data ? in->data : "", in->len, sha);
        if (set(o, "sha256", json_string(sha)) < 0 || set(o, "bytes", json_integer((json_int_t) in->len)) < 0)
                return NULL;
        if (result_utf8_valid(in->data ? in->data : "", in->len)) {
                if (set(o, "text", json_stringn(in->data ? in->data : "", in->len)) < 0)
                        return NULL;
        } else {
                AUTOFREE char *b = b64_encode(in->data, in->len);
                if (!b || set(o, "base64", json_string(b)) < 0)
                        return NULL;
        }
        return move_ptr(&o);
}

static json_t *limits_json(const struct nsb_config *cfg)
{
        AUTO(json_decref) json_t *o = json_object();
        /* cpu_time 0 follows wall_time: record the limit that applied */
        uint64_t cpu = cfg->cpu_time_ms ? cfg->cpu_time_ms : cfg->wall_time_ms;

        if (!o || set(o, "wall_time_ms", u64_json(cfg->wall_time_ms)) < 0 || set(o, "cpu_time_ms", u64_json(cpu)) < 0 ||
            set(o, "memory_bytes", u64_json(cfg->memory_bytes)) < 0 || set(o, "pids", u64_json(cfg->pids_max)) < 0 ||
            set(o, "output_limit_bytes", u64_json(cfg->output_limit_bytes)) < 0 ||
            set(o, "file_size_bytes", u64_json(cfg->file_size_bytes)) < 0 ||
            set(o, "tmp_size_bytes", u64_json(cfg->tmp_size_bytes)) < 0)
                return NULL;
        return move_ptr(&o);
}

json_t *judge_obs_plan(const struct judge_spec *spec, size_t idx, const char *program_sha256,
                       const struct nsb_config *cfg, char *const *argv, size_t argc, const struct judge_obs_stdin *in)
{
        const struct judge_case *jc = &spec->cases[idx];
        AUTO(json_decref) json_t *body = json_object(), *prog = json_object(), *inv = json_object();
        AUTOFREE char *policy = NULL;
        char policy_sha[65];
        struct nsb_error e;

        if (!body || !prog || !inv || cfg_policy_render(cfg, &policy, &e) < 0)
                return NULL;
        sha256_hex(policy, strlen(policy), policy_sha);
        /* The order here is the order a replay compares in. */
        if (set(prog, "name", json_string(spec->program.name)) < 0 ||
            set(prog, "sha256", json_string(program_sha256)) < 0 ||
            set(inv, "args", strv_json(jc->stimulus.args, jc->stimulus.n_args)) < 0 ||
            set(inv, "argv", strv_json(argv, argc)) < 0 || set(inv, "stdin", stdin_json(in)) < 0 ||
            set(inv, "limits", limits_json(cfg)) < 0 || set(body, "case", json_string(jc->name)) < 0 ||
            set(body, "program", move_ptr(&prog)) < 0 || set(body, "invocation", move_ptr(&inv)) < 0 ||
            set(body, "policy", json_string(policy)) < 0 || set(body, "policy_sha256", json_string(policy_sha)) < 0)
                return NULL;
        return move_ptr(&body);
}

/* SHA-256 of the line without its id, in jansson's compact sorted form. */
static int obs_id(const json_t *line, char out[65])
{
        AUTO(json_decref) json_t *copy = json_copy((json_t *) line);
        AUTOFREE char *text = NULL;

        if (!copy)
                return -ENOMEM;
        json_object_del(copy, "observation_id");
        if (!(text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS)))
                return -ENOMEM;
        sha256_hex(text, strlen(text), out);
        return 0;
}

json_t *judge_obs_seal(const json_t *body, size_t idx, const char *run_id, const char *version, json_t *result,
                       const char *not_run, char id[65])
{
        AUTO(json_decref) json_t *line = json_object(), *res = result;
        const char *key;
        json_t *v;

        /* Who and what first, then what was run (body), then what happened. */
        if (!line || set(line, "schema", json_string(JUDGE_OBS_SCHEMA)) < 0 ||
            set(line, "observation_id", json_string("")) < 0 || set(line, "run_id", json_string(run_id)) < 0 ||
            set(line, "nsbox_version", json_string(version)) < 0 ||
            set(line, "case_index", json_integer((json_int_t) idx)) < 0)
                return NULL;
        json_object_foreach((json_t *) body, key, v)
                if (json_object_set(line, key, v) < 0)
                        return NULL;
        if (set(line, "result", res ? move_ptr(&res) : json_null()) < 0 ||
            (!result && set(line, "not_run", json_string(not_run ? not_run : "not run")) < 0))
                return NULL;
        if (obs_id(line, id) < 0 || set(line, "observation_id", json_string(id)) < 0)
                return NULL;
        return move_ptr(&line);
}

/* ---- reading the file ------------------------------------------------------ */

static const char *const line_keys[] = {
        "schema", "observation_id", "run_id", "nsbox_version", "case_index", "case", "program", "invocation",
        "policy", "policy_sha256", "result", "not_run", NULL,
};

struct line_ctx {
        const char *path;
        size_t lineno;
        struct nsb_error *e;
};

static int line_bad(const struct line_ctx *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int line_bad(const struct line_ctx *l, const char *fmt, ...)
{
        char what[NSB_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        return nsb_fail(l->e, NSB_STAGE_CONFIG, EINVAL, "%s:%zu: %s", l->path, l->lineno, what);
}

static bool is_strv(const json_t *a)
{
        size_t i;
        json_t *v;

        if (!json_is_array(a))
                return false;
        json_array_foreach(a, i, v)
                if (!json_is_string(v))
                        return false;
        return true;
}

static bool is_hex64(const json_t *v)
{
        const char *s = json_string_value(v);

        if (!s || strlen(s) != 64)
                return false;
        return strspn(s, "0123456789abcdef") == 64;
}

/* The fields a replay reads and compares, each of the type it expects. */
static int line_shape(const json_t *o, const struct line_ctx *l)
{
        const json_t *prog = json_object_get(o, "program"), *inv = json_object_get(o, "invocation"),
                     *in = json_object_get(inv, "stdin"), *res = json_object_get(o, "result"),
                     *not_run = json_object_get(o, "not_run");
        const char *key;
        json_t *v;

        json_object_foreach((json_t *) o, key, v) {
                bool known = false;
                for (size_t k = 0; line_keys[k]; k++)
                        known |= strcmp(key, line_keys[k]) == 0;
                if (!known)
                        return line_bad(l, "unknown key \"%.40s\"", key);
        }
        if (!json_is_string(json_object_get(o, "schema")) ||
            strcmp(json_string_value(json_object_get(o, "schema")), JUDGE_OBS_SCHEMA) != 0)
                return line_bad(l, "schema: expected \"%s\" (not an observation of nsbox judge --observe)",
                                JUDGE_OBS_SCHEMA);
        if (!is_hex64(json_object_get(o, "observation_id")))
                return line_bad(l, "observation_id: expected 64 lowercase hex digits");
        if (!json_is_string(json_object_get(o, "run_id")) || !json_is_string(json_object_get(o, "nsbox_version")))
                return line_bad(l, "run_id and nsbox_version: expected strings");
        if (!json_is_integer(json_object_get(o, "case_index")))
                return line_bad(l, "case_index: expected an integer");
        if (!json_is_string(json_object_get(o, "case")))
                return line_bad(l, "case: expected the case's name, a string");
        if (!json_is_object(prog) || !json_is_string(json_object_get(prog, "name")) ||
            !is_hex64(json_object_get(prog, "sha256")))
                return line_bad(l, "program: expected {\"name\": NAME, \"sha256\": HEX}");
        if (!json_is_object(inv) || !is_strv(json_object_get(inv, "args")) || !is_strv(json_object_get(inv, "argv")) ||
            !json_is_object(json_object_get(inv, "limits")))
                return line_bad(l, "invocation: expected {\"args\": [...], \"argv\": [...], \"stdin\": ..., \"limits\": {...}}");
        if (!in || !(json_is_null(in) || (json_is_object(in) && is_hex64(json_object_get(in, "sha256")) &&
                                          json_is_integer(json_object_get(in, "bytes")))))
                return line_bad(l, "invocation.stdin: expected null or {\"sha256\": HEX, \"bytes\": N, ...}");
        if (!json_is_string(json_object_get(o, "policy")) || !is_hex64(json_object_get(o, "policy_sha256")))
                return line_bad(l, "policy, policy_sha256: expected the policy text and its hash");
        if (!res || !(json_is_null(res) || json_is_object(res)))
                return line_bad(l, "result: expected a result object, or null for a case that did not run");
        if (json_is_null(res) != (not_run != NULL) || (not_run && !json_is_string(not_run)))
                return line_bad(l, "not_run: a string when (and only when) result is null");
        if (json_is_object(res)) {
                struct judge_evidence ev;
                struct nsb_error inner;

                nsb_error_clear(&inner);
                if (judge_evidence_parse(res, &ev, &inner) < 0)
                        return line_bad(l, "result.%s", inner.msg);
                judge_evidence_free(&ev);
        }
        return 0;
}

static int parse_line(const char *s, size_t len, const struct line_ctx *l, size_t index, const char *run_id,
                      json_t **ret)
{
        AUTO(json_decref) json_t *o = NULL;
        json_error_t jerr;
        char id[65];

        if (len == 0)
                return line_bad(l, "empty line (one observation per line)");
        o = json_loadb(s, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!o)
                return line_bad(l, "invalid JSON at column %d: %s", jerr.column, jerr.text);
        if (!json_is_object(o))
                return line_bad(l, "expected an observation object");
        if (line_shape(o, l) < 0)
                return -EINVAL;
        if (json_integer_value(json_object_get(o, "case_index")) != (json_int_t) index)
                return line_bad(l, "case_index is %lld, expected %zu (one line per case, in the spec's order)",
                                (long long) json_integer_value(json_object_get(o, "case_index")), index);
        if (run_id && strcmp(run_id, json_string_value(json_object_get(o, "run_id"))) != 0)
                return line_bad(l, "run_id differs from line 1's: the file mixes observations of two runs");
        if (obs_id(o, id) < 0)
                return nsb_fail(l->e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (strcmp(id, json_string_value(json_object_get(o, "observation_id"))) != 0)
                return line_bad(l, "observation_id does not match the line's content (edited after the run?)");
        *ret = move_ptr(&o);
        return 0;
}

int judge_obs_parse(const char *text, size_t len, const char *path, json_t **ret, struct nsb_error *e)
{
        AUTO(json_decref) json_t *lines = json_array();
        struct line_ctx l = { .path = path, .lineno = 0, .e = e };
        size_t pos = 0;

        if (!lines)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (len == 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: no observations (an empty file)", path);
        while (pos < len) {
                const char *nl = memchr(text + pos, '\n', len - pos);
                size_t end = nl ? (size_t) (nl - text) : len;
                const json_t *first = json_array_get(lines, 0);
                json_t *o = NULL;

                l.lineno++;
                if (parse_line(text + pos, end - pos, &l, json_array_size(lines),
                               first ? json_string_value(json_object_get(first, "run_id")) : NULL, &o) < 0)
                        return -EINVAL;
                if (json_array_append_new(lines, o) < 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                pos = end + 1;
        }
        *ret = move_ptr(&lines);
        return 0;
}

/* ---- what differs ---------------------------------------------------------- */

static void shown(char *buf, size_t size, const json_t *v)
{
        AUTOFREE char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

        buf[0] = '\0';
        if (!s) {
                snprintf(buf, size, "%s", v ? "?" : "nothing");
                return;
        }
        textsafe_term_append(buf, size, s, strlen(s), SHOWN_MAX);
}

static size_t line_at(const char *s, size_t len, size_t off, size_t *ret_start)
{
        size_t start = off, end = off;

        while (start > 0 && s[start - 1] != '\n')
                start--;
        while (end < len && s[end] != '\n')
                end++;
        *ret_start = start;
        return end - start;
}

/* Two texts of several lines (the policy): the first line that differs. */
static void text_difference(char *buf, size_t size, const char *path, const json_t *was, const json_t *now)
{
        const char *a = json_string_value(was), *b = json_string_value(now);
        size_t la = json_string_length(was), lb = json_string_length(now), d = 0, line = 1, sa, sb, na, nb;

        while (d < la && d < lb && a[d] == b[d]) {
                if (a[d] == '\n')
                        line++;
                d++;
        }
        na = line_at(a, la, d, &sa);
        nb = line_at(b, lb, d, &sb);
        snprintf(buf, size, "%s line %zu was '", path, line);
        textsafe_term_append(buf, size, a + sa, na, SHOWN_MAX);
        snprintf(buf + strlen(buf), size - strlen(buf), "', is now '");
        textsafe_term_append(buf, size, b + sb, nb, SHOWN_MAX);
        snprintf(buf + strlen(buf), size - strlen(buf), "'");
}

static bool difference(const json_t *was, const json_t *now, const char *path, char *buf, size_t size)
{
        char p[256], a[SHOWN_MAX * 2], b[SHOWN_MAX * 2];

        if (was && now && json_equal((json_t *) was, (json_t *) now))
                return false;
        if (json_is_object(was) && json_is_object(now)) {
                const char *key;
                json_t *v;

                json_object_foreach((json_t *) now, key, v) {
                        snprintf(p, sizeof p, "%s.%s", path, key);
                        if (difference(json_object_get(was, key), v, p, buf, size))
                                return true;
                }
                json_object_foreach((json_t *) was, key, v) {
                        snprintf(p, sizeof p, "%s.%s", path, key);
                        if (!json_object_get(now, key) && difference(v, NULL, p, buf, size))
                                return true;
                }
        }
        if (json_is_array(was) && json_is_array(now)) {
                size_t n = json_array_size(was) < json_array_size(now) ? json_array_size(was) : json_array_size(now);

                for (size_t i = 0; i < n; i++) {
                        snprintf(p, sizeof p, "%s[%zu]", path, i);
                        if (difference(json_array_get(was, i), json_array_get(now, i), p, buf, size))
                                return true;
                }
                snprintf(buf, size, "%s has %zu items, was %zu", path, json_array_size(now), json_array_size(was));
                return true;
        }
        if (json_is_string(was) && json_is_string(now) &&
            (memchr(json_string_value(was), '\n', json_string_length(was)) ||
             memchr(json_string_value(now), '\n', json_string_length(now)))) {
                text_difference(buf, size, path, was, now);
                return true;
        }
        shown(a, sizeof a, was);
        shown(b, sizeof b, now);
        snprintf(buf, size, "%s was %s, is now %s", path, a, b);
        return true;
}

bool judge_obs_difference(const json_t *observed, const json_t *planned, char *buf, size_t size)
{
        const char *key;
        json_t *v;

        buf[0] = '\0';
        /* Only what the plan holds: the rest of the line is the outcome. A
         * stdin the run never read (a case that did not run) is not compared. */
        json_object_foreach((json_t *) planned, key, v) {
                const json_t *was = json_object_get(observed, key);

                if (strcmp(key, "invocation") == 0 && json_is_object(was)) {
                        const char *k2;
                        json_t *v2;
                        char p[64];

                        json_object_foreach(v, k2, v2) {
                                const json_t *w2 = json_object_get(was, k2);

                                if (strcmp(k2, "stdin") == 0 && json_is_null(w2))
                                        continue;
                                snprintf(p, sizeof p, "invocation.%s", k2);
                                if (difference(w2, v2, p, buf, size))
                                        return true;
                        }
                        continue;
                }
                if (difference(was, v, key, buf, size))
                        return true;
        }
        return false;
}
