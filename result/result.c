/* result/result.c — rendering of struct run_result, and its exit code. Pure. */
#include "result/result.h"
#include "util/exitcode.h"
#include "util/portable.h"

#include <stdlib.h>
#include <string.h>

#include "util/base64.h"

static const char *const status_names[] = {
        [RUN_EXITED] = "exited", [RUN_SIGNALED] = "signaled", [RUN_LIMIT] = "limit",
        [RUN_CANCELLED] = "cancelled", [RUN_ERROR] = "error",
};

static const char *const limit_names[LIMIT__MAX] = {
        [LIMIT_NONE] = NULL,         [LIMIT_WALL_TIME] = "wall_time", [LIMIT_CPU_TIME] = "cpu_time",
        [LIMIT_MEMORY] = "memory",   [LIMIT_PIDS] = "pids",           [LIMIT_OUTPUT] = "output",
        [LIMIT_FILE_SIZE] = "file_size",
};

const char *run_status_name(enum run_status s)
{
        if ((unsigned) s > RUN_ERROR)
                return "error";
        return status_names[s];
}

const char *run_limit_name(enum run_limit l)
{
        if ((unsigned) l >= LIMIT__MAX)
                return NULL;
        return limit_names[l];
}

/* Length of a valid UTF-8 sequence at s (1..4), or 0 when invalid. Rejects
 * overlongs, surrogates and code points above U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t left)
{
        unsigned char c = s[0];
        size_t n;
        unsigned cp;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                n = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                n = 4, cp = c & 0x07;
        else
                return 0;
        if (left < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        return n;
}

static char *sanitize(const char *s, size_t len, size_t *ret_len)
{
        /* Worst case every byte becomes U+FFFD (3 bytes). A NUL byte is valid
         * UTF-8 and kept: jansson takes an explicit length. */
        char *out = malloc(len * 3 + 1), *o = out;
        const unsigned char *p = (const unsigned char *) s;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_seq(p + i, len - i);
                if (n == 0) {
                        memcpy(o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                } else {
                        memcpy(o, p + i, n);
                        o += n;
                        i += n;
                }
        }
        *o = '\0';
        *ret_len = (size_t) (o - out);
        return out;
}

char *result_utf8_sanitize(const char *s, size_t len)
{
        size_t n;
        return sanitize(s, len, &n);
}

char *result_utf8_sanitize_len(const char *s, size_t len, size_t *ret_len)
{
        return sanitize(s, len, ret_len);
}

static json_t *text_json(const char *s, size_t len)
{
        size_t n;
        char *clean = sanitize(s ? s : "", s ? len : 0, &n);
        json_t *j;

        if (!clean)
                return NULL;
        j = json_stringn(clean, n);
        free(clean);
        return j;
}

bool result_utf8_valid(const char *s, size_t len)
{
        for (size_t i = 0, n; i < len; i += n)
                if ((n = utf8_seq((const unsigned char *) s + i, len - i)) == 0)
                        return false;
        return true;
}

/* "text" (valid UTF-8, U+FFFD for what was not), and "text_base64" with the
 * exact bytes when that replacement changed them: the result records what
 * the program wrote, so a verdict can be checked from it (judge). */
static void put_bytes(json_t *o, const char *key, const char *s, size_t len)
{
        char key64[32];

        json_object_set_new(o, key, text_json(s, len));
        if (s && !result_utf8_valid(s, len)) {
                char *b = b64_encode(s, len);

                snprintf(key64, sizeof key64, "%s_base64", key);
                json_object_set_new(o, key64, b ? json_string(b) : NULL);
                free(b);
        }
}

static json_t *stream_json(const struct run_stream *st, uint64_t output_limit)
{
        json_t *o = json_object();

        put_bytes(o, "text", st->text, st->kept);
        json_object_set_new(o, "bytes", json_integer((json_int_t) st->bytes));
        json_object_set_new(o, "truncated", json_boolean(st->truncated));
        if (st->truncated) {
                size_t n = st->tail_len;
                if (n > output_limit)
                        n = (size_t) output_limit;
                put_bytes(o, "tail", st->tail + (st->tail_len - n), n);
        }
        return o;
}

json_t *result_to_json(const struct run_result *r, uint64_t output_limit)
{
        json_t *o = json_object(), *hits = json_array(), *prot = json_object(), *cmd = json_array();
        const char *lname = r->status == RUN_LIMIT ? run_limit_name(r->limit) : NULL;

        if (!o || !hits || !prot || !cmd) {
                json_decref(o);
                json_decref(hits);
                json_decref(prot);
                json_decref(cmd);
                return NULL;
        }
        json_object_set_new(o, "schema", json_string("nsbox.result/1"));
        json_object_set_new(o, "status", json_string(run_status_name(r->status)));
        json_object_set_new(o, "limit", lname ? json_string(lname) : json_null());
        if (lname && r->limit_value[0])   /* what the message needs: "the memory limit (256M; ...)" */
                json_object_set_new(o, "limit_value", json_string(r->limit_value));
        for (int l = LIMIT_NONE + 1; l < LIMIT__MAX; l++)
                if (r->limits_hit & (1u << l))
                        json_array_append_new(hits, json_string(run_limit_name((enum run_limit) l)));
        json_object_set_new(o, "limits_hit", hits);
        json_object_set_new(o, "exit_code", r->status == RUN_EXITED ? json_integer(r->exit_code) : json_null());
        if (r->status == RUN_SIGNALED || (r->status == RUN_LIMIT && r->signal > 0)) {
                const char *abbrev = nsb_signame(r->signal);
                char name[32];
                snprintf(name, sizeof name, "SIG%s", abbrev ? abbrev : "UNKNOWN");
                json_object_set_new(o, "signal", json_integer(r->signal));
                json_object_set_new(o, "signal_name", json_string(name));
        } else {
                json_object_set_new(o, "signal", json_null());
                json_object_set_new(o, "signal_name", json_null());
        }
        json_object_set_new(o, "wall_ms", json_real((double) (long long) (r->wall_ms * 1000.0) / 1000.0));
        json_object_set_new(o, "cpu_ms", json_real((double) (long long) (r->cpu_ms * 1000.0) / 1000.0));
        json_object_set_new(o, "peak_memory_bytes",
                            r->peak_memory_known ? json_integer((json_int_t) r->peak_memory_bytes) : json_null());
        json_object_set_new(o, "stdout", stream_json(&r->out, output_limit));
        json_object_set_new(o, "stderr", stream_json(&r->err, output_limit));
        json_object_set_new(o, "isolation",
                            json_string(r->isolation == NSB_ISOLATION_REDUCED ? "reduced" : "strict"));
        json_object_set_new(o, "start", json_string(r->warm ? "warm" : "cold"));
        if (!r->warm && r->start_reason[0])
                json_object_set_new(o, "start_reason", json_string(r->start_reason));
        for (int p = 0; p < PROT__MAX; p++)
                json_object_set_new(prot, prot_name((enum nsb_prot) p),
                                    json_string(ledger_get(&r->ledger, (enum nsb_prot) p)));
        json_object_set_new(o, "protections", prot);
        for (size_t i = 0; i < r->command_len; i++)
                json_array_append_new(cmd, text_json(r->command[i], strlen(r->command[i])));
        json_object_set_new(o, "command", cmd);
        json_object_set_new(o, "program_sha256",
                            r->program_sha256[0] ? json_string(r->program_sha256) : json_null());
        json_object_set_new(o, "policy_sha256",
                            r->policy_sha256[0] ? json_string(r->policy_sha256) : json_null());
        if (r->image_digest[0]) {
                json_t *img = json_object();
                json_object_set_new(img, "ref", text_json(r->image_ref, strlen(r->image_ref)));
                json_object_set_new(img, "digest", json_string(r->image_digest));
                json_object_set_new(o, "image", img);
        }
        if (r->status == RUN_ERROR) {
                json_t *err = json_object();
                char buf[NSB_ERROR_MSG_MAX + 128];
                /* Describe first: the order in which a call's arguments are
                 * evaluated is unspecified, so strlen(buf) may not see it. */
                const char *msg = nsb_error_describe(&r->error, buf, sizeof buf);
                json_object_set_new(err, "stage", json_string(nsb_stage_name((enum nsb_stage) r->error.stage)));
                json_object_set_new(err, "message", text_json(msg, strlen(msg)));
                json_object_set_new(o, "error", err);
        } else {
                json_object_set_new(o, "error", json_null());
        }
        if (r->fetched)
                json_object_update(o, r->fetched);
        return o;
}

int result_exit_code(const struct run_result *r)
{
        switch (r->status) {
        case RUN_EXITED:
                return r->exit_code & 0xff;
        case RUN_SIGNALED:
                return NSB_EXIT_SIGNAL_BASE + r->signal;
        case RUN_LIMIT:
                return NSB_EXIT_LIMIT;
        case RUN_CANCELLED:
                return NSB_EXIT_CANCELLED;
        case RUN_ERROR:
        default:
                return r->command_exit == NSB_EXIT_NOT_EXECUTABLE || r->command_exit == NSB_EXIT_NOT_FOUND
                               ? r->command_exit
                               : NSB_EXIT_FAILURE;
        }
}

void run_result_free(struct run_result *r)
{
        if (!r)
                return;
        free(r->out.text);
        free(r->err.text);
        for (size_t i = 0; i < r->command_len; i++)
                free(r->command[i]);
        free(r->command);
        json_decref(r->fetched);
        r->fetched = NULL;
        r->out.text = r->err.text = NULL;
        r->command = NULL;
        r->command_len = 0;
}
