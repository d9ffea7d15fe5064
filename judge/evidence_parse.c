/* judge/evidence_parse.c — the evidence of a case, read from its recorded
 * `nsbox.result/1` object. Pure: allocation only.
 *
 * A live run renders its result object first and judges what that object
 * holds, exactly as a replay judges a stored one: one reader, so a verdict is
 * a function of the recorded result and nothing kept in memory beside it.
 * The reader is strict, as a replayed file may have been edited: every field
 * it uses is checked, with the path of the culprit in the message; fields it
 * does not use are left alone (the result object grows).
 */
#include "judge/judge_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/cleanup.h"

static const char *type_name(const json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        default:
                return "null";
        }
}

static int need(const json_t *obj, const char *key, const char *path, json_type type, json_t **ret,
                struct nsb_error *e)
{
        char p[64];
        json_t *v = json_object_get(obj, key);

        snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
        if (!v)
                return judge_fail_at(e, p, "missing");
        if (json_typeof(v) != type && !(type == JSON_TRUE && json_is_boolean(v)))
                return judge_fail_at(e, p, "expected %s, got %s",
                                     type == JSON_STRING ? "a string" : type == JSON_INTEGER ? "an integer" :
                                     type == JSON_OBJECT ? "an object" : "a boolean", type_name(v));
        *ret = v;
        return 0;
}

static int int_in(const json_t *obj, const char *key, int lo, int hi, const char *what, int *ret, struct nsb_error *e)
{
        json_t *v;

        if (need(obj, key, "", JSON_INTEGER, &v, e) < 0)
                return -EINVAL;
        if (json_integer_value(v) < lo || json_integer_value(v) > hi)
                return judge_fail_at(e, key, "%lld is not %s (%d-%d)", (long long) json_integer_value(v), what, lo, hi);
        *ret = (int) json_integer_value(v);
        return 0;
}

/* @key's raw bytes: @key_base64 when present (then its bytes, made valid
 * UTF-8, must be @key's text), else @key's text itself. */
static int raw_bytes(const json_t *obj, const char *key, const char *path, const char **ret, size_t *ret_len,
                     char **owned, struct nsb_error *e)
{
        char key64[32], p[64];
        json_t *t, *b;
        int r;

        if (need(obj, key, path, JSON_STRING, &t, e) < 0)
                return -EINVAL;
        snprintf(key64, sizeof key64, "%s_base64", key);
        snprintf(p, sizeof p, "%s.%s", path, key64);
        b = json_object_get(obj, key64);
        if (!b) {
                *ret = json_string_value(t);
                *ret_len = json_string_length(t);
                return 0;
        }
        if (!json_is_string(b))
                return judge_fail_at(e, p, "expected a string, got %s", type_name(b));
        r = b64_decode(json_string_value(b), json_string_length(b), owned, ret_len);
        if (r == -ENOMEM)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (r < 0)
                return judge_fail_at(e, p, "not base64 (RFC 4648, padded, no line breaks)");
        {
                size_t clean_len;
                AUTOFREE char *clean = result_utf8_sanitize_len(*owned, *ret_len, &clean_len);

                if (!clean)
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                if (clean_len != json_string_length(t) || memcmp(clean, json_string_value(t), clean_len) != 0)
                        return judge_fail_at(e, p, "does not hold the bytes of %s.%s (made valid UTF-8, they differ from it)",
                                             path, key);
        }
        *ret = *owned;
        return 0;
}

static int stream_parse(const json_t *result, const char *name, struct judge_stream_view *s, char **owned,
                        struct nsb_error *e)
{
        json_t *o, *bytes, *trunc;
        json_int_t n;

        if (need(result, name, "", JSON_OBJECT, &o, e) < 0)
                return -EINVAL;
        if (raw_bytes(o, "text", name, &s->text, &s->kept, &owned[0], e) < 0 ||
            need(o, "bytes", name, JSON_INTEGER, &bytes, e) < 0 || need(o, "truncated", name, JSON_TRUE, &trunc, e) < 0)
                return -EINVAL;
        n = json_integer_value(bytes);
        if (n < 0 || (uint64_t) n < s->kept)
                return judge_fail_at(e, name, "bytes is %lld, fewer than the %zu bytes of its text", (long long) n,
                                     s->kept);
        s->bytes = (uint64_t) n;
        s->cut = s->bytes > s->kept;
        if (json_is_true(trunc) != s->cut)
                return judge_fail_at(e, name, "truncated is %s, but bytes is %llu and its text holds %zu",
                                     json_is_true(trunc) ? "true" : "false", (unsigned long long) s->bytes, s->kept);
        s->tail = NULL;
        s->tail_len = 0;
        if (!s->cut) {
                if (json_object_get(o, "tail") || json_object_get(o, "tail_base64"))
                        return judge_fail_at(e, name, "tail is only recorded for a truncated stream");
                return 0;
        }
        if (raw_bytes(o, "tail", name, &s->tail, &s->tail_len, &owned[1], e) < 0)
                return -EINVAL;
        if (s->tail_len > s->bytes)
                return judge_fail_at(e, name, "its tail holds %zu bytes, more than the %llu written", s->tail_len,
                                     (unsigned long long) s->bytes);
        return 0;
}

int judge_evidence_parse(const json_t *result, struct judge_evidence *ret, struct nsb_error *e)
{
        json_t *status, *v;
        const char *st;
        int found = -1;

        memset(ret, 0, sizeof *ret);
        if (!json_is_object(result))
                return judge_fail_at(e, "result", "expected an object, got %s", result ? type_name(result) : "nothing");
        if (need(result, "status", "", JSON_STRING, &status, e) < 0)
                return -EINVAL;
        st = json_string_value(status);
        for (int i = RUN_EXITED; i <= RUN_ERROR; i++)
                if (strcmp(st, run_status_name((enum run_status) i)) == 0)
                        found = i;
        if (found < 0)
                return judge_fail_at(e, "status", "unknown status \"%.40s\" (expected exited, signaled, limit, cancelled or error)",
                                     st);
        ret->status = (enum run_status) found;
        switch (ret->status) {
        case RUN_EXITED:
                if (int_in(result, "exit_code", 0, 255, "an exit code", &ret->exit_code, e) < 0)
                        return -EINVAL;
                break;
        case RUN_SIGNALED:
                if (int_in(result, "signal", 1, 64, "a signal number", &ret->signal, e) < 0)
                        return -EINVAL;
                break;
        case RUN_LIMIT:
                v = json_object_get(result, "limit");
                if (!v || !(json_is_null(v) || json_is_string(v)))
                        return judge_fail_at(e, "limit", "expected a limit name or null");
                ret->limit = json_is_string(v) ? json_string_value(v) : NULL;
                /* optional (results before it have none); shown only when it
                 * looks like a value (cfg_limit_describe) */
                v = json_object_get(result, "limit_value");
                ret->limit_value = json_is_string(v) ? json_string_value(v) : NULL;
                break;
        case RUN_ERROR: {
                json_t *err, *stage, *msg;

                if (need(result, "error", "", JSON_OBJECT, &err, e) < 0 ||
                    need(err, "stage", "error", JSON_STRING, &stage, e) < 0 ||
                    need(err, "message", "error", JSON_STRING, &msg, e) < 0)
                        return -EINVAL;
                ret->error_stage = json_string_value(stage);
                ret->error_message = json_string_value(msg);
                break;
        }
        case RUN_CANCELLED:
        default:
                break;
        }
        if (stream_parse(result, "stdout", &ret->out, &ret->owned[0], e) < 0 ||
            stream_parse(result, "stderr", &ret->err, &ret->owned[2], e) < 0) {
                judge_evidence_free(ret);
                return -EINVAL;
        }
        return 0;
}

void judge_evidence_free(struct judge_evidence *ev)
{
        for (size_t i = 0; i < ARRAY_SIZE(ev->owned); i++) {
                free(ev->owned[i]);
                ev->owned[i] = NULL;
        }
}
