/* report/report_agg.c — one line at a time into bounded aggregates. Pure. */
#include "report/report_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/hints.h"
#include "util/cleanup.h"

void report_agg_init(struct report_agg *a)
{
        memset(a, 0, sizeof *a);
}

void report_job_clear(struct report_job *j)
{
        if (j->root)
                json_decref(j->root);
        memset(j, 0, sizeof *j);
}

/* ---- small helpers ----------------------------------------------------- */

static void copy_trunc(char *dst, size_t size, const char *src)
{
        snprintf(dst, size, "%s", src ? src : "");
}

static void table_add(struct report_table *t, const char *key)
{
        char k[REPORT_KEY_MAX];

        copy_trunc(k, sizeof k, key);
        for (size_t i = 0; i < t->n; i++)
                if (strcmp(t->v[i].key, k) == 0) {
                        t->v[i].n++;
                        return;
                }
        if (t->n == REPORT_TABLE_MAX) {
                t->other++;
                return;
        }
        memcpy(t->v[t->n].key, k, sizeof k);
        t->v[t->n++].n = 1;
}

size_t report_hist_bucket(double v)
{
        size_t i = 0;
        double bound = 1.0;

        if (!(v >= 1.0))        /* also NaN */
                return 0;
        while (i + 1 < REPORT_HIST_BUCKETS && v >= bound) {
                bound *= 2.0;
                i++;
        }
        return i;
}

double report_hist_lower(size_t i)
{
        double v = 1.0;

        if (i == 0)
                return 0.0;
        while (--i > 0)
                v *= 2.0;
        return v;
}

static void hist_add(struct report_hist *h, double v)
{
        if (v < 0 || v != v)
                return;
        if (h->n == 0 || v < h->min)
                h->min = v;
        if (h->n == 0 || v > h->max)
                h->max = v;
        h->sum += v;
        h->n++;
        h->b[report_hist_bucket(v)]++;
}

static void slow_swap(struct report_slow *x, struct report_slow *y)
{
        struct report_slow t = *x;
        *x = *y;
        *y = t;
}

/* A min-heap of the REPORT_TOP_K largest wall times: the root is the
 * smallest kept, the one a slower job replaces. */
static void slow_add(struct report_agg *a, const struct report_job *j)
{
        struct report_slow s;
        size_t i;

        memset(&s, 0, sizeof s);
        copy_trunc(s.id, sizeof s.id, j->id);
        copy_trunc(s.where, sizeof s.where, j->where);
        s.wall_ms = j->wall_ms;
        if (a->n_slow < REPORT_TOP_K) {
                i = a->n_slow++;
                a->slow[i] = s;
                while (i > 0 && a->slow[(i - 1) / 2].wall_ms > a->slow[i].wall_ms) {
                        slow_swap(&a->slow[(i - 1) / 2], &a->slow[i]);
                        i = (i - 1) / 2;
                }
                return;
        }
        if (!(s.wall_ms > a->slow[0].wall_ms))
                return;
        a->slow[0] = s;
        for (i = 0;;) {
                size_t l = 2 * i + 1, r = l + 1, m = i;

                if (l < a->n_slow && a->slow[l].wall_ms < a->slow[m].wall_ms)
                        m = l;
                if (r < a->n_slow && a->slow[r].wall_ms < a->slow[m].wall_ms)
                        m = r;
                if (m == i)
                        break;
                slow_swap(&a->slow[m], &a->slow[i]);
                i = m;
        }
}

static int by_wall_desc(const void *x, const void *y)
{
        const struct report_slow *a = x, *b = y;
        return a->wall_ms < b->wall_ms ? 1 : a->wall_ms > b->wall_ms ? -1 : 0;
}

size_t report_slowest(const struct report_agg *a, struct report_slow *ret)
{
        memcpy(ret, a->slow, a->n_slow * sizeof *ret);
        qsort(ret, a->n_slow, sizeof *ret, by_wall_desc);
        return a->n_slow;
}

static int count_desc(const void *x, const void *y)
{
        const struct report_count *a = x, *b = y;
        return a->n < b->n ? 1 : a->n > b->n ? -1 : strcmp(a->key, b->key);
}

size_t report_table_sorted(const struct report_table *t, struct report_count *ret)
{
        memcpy(ret, t->v, t->n * sizeof *ret);
        qsort(ret, t->n, sizeof *ret, count_desc);
        return t->n;
}

static int by_count_desc(const void *x, const void *y)
{
        const struct report_group *a = x, *b = y;
        return a->n < b->n ? 1 : a->n > b->n ? -1 : 0;
}

size_t report_groups_sorted(const struct report_agg *a, struct report_group *ret)
{
        memcpy(ret, a->groups, a->n_groups * sizeof *ret);
        qsort(ret, a->n_groups, sizeof *ret, by_count_desc);
        return a->n_groups;
}

static void group_add(struct report_agg *a, const char *stage, const char *message, const char *id)
{
        char s[REPORT_KEY_MAX], m[REPORT_MSG_MAX];

        copy_trunc(s, sizeof s, stage ? stage : "(none)");
        /* the same error in another job differs in a path, an id, a number:
         * folded, so that it groups (report_normalize) */
        if (message)
                report_normalize(message, strlen(message), false, m, sizeof m);
        else
                copy_trunc(m, sizeof m, "(no message)");
        a->errors++;
        for (size_t i = 0; i < a->n_groups; i++)
                if (strcmp(a->groups[i].stage, s) == 0 && strcmp(a->groups[i].message, m) == 0) {
                        a->groups[i].n++;
                        return;
                }
        if (a->n_groups == REPORT_GROUPS_MAX) {
                /* Full: the new group takes the place of the least frequent
                 * one and its count (Space-Saving), so an error that is
                 * frequent overall is kept whatever came before it (more
                 * than 1 in 256 of the errors: always), its count at most
                 * `over` too high. Counting only the first 256 groups let a
                 * few hundred one-off messages hide the error of most jobs. */
                struct report_group *g = &a->groups[0];

                for (size_t i = 1; i < a->n_groups; i++)
                        if (a->groups[i].n < g->n)
                                g = &a->groups[i];
                a->errors_ungrouped += g->n;
                memcpy(g->stage, s, sizeof s);
                memcpy(g->message, m, sizeof m);
                copy_trunc(g->first_id, REPORT_ID_MAX, id);
                g->over = g->n;
                g->n++;
                return;
        }
        memcpy(a->groups[a->n_groups].stage, s, sizeof s);
        memcpy(a->groups[a->n_groups].message, m, sizeof m);
        copy_trunc(a->groups[a->n_groups].first_id, REPORT_ID_MAX, id);
        a->groups[a->n_groups].over = 0;
        a->groups[a->n_groups++].n = 1;
}

void report_add_bad(struct report_agg *a, const char *file, uint64_t line, const char *why)
{
        a->bad++;
        if (a->n_bad_kept < REPORT_BAD_KEEP) {
                struct report_bad *b = &a->bad_kept[a->n_bad_kept++];

                snprintf(b->where, sizeof b->where, "%s:%llu", file, (unsigned long long) line);
                copy_trunc(b->why, sizeof b->why, why);
        }
}

/* ---- typed access: a key that is there must have the right type -------- */

/* *ret: the value at @key when it is there and not null, else NULL; a
 * value for which @ok is false is an error naming @key and @what it must be. */
static int member(const json_t *o, const char *key, bool (*ok)(const json_t *), const char *what,
                  const json_t **ret, char *why, size_t size)
{
        const json_t *v = json_object_get(o, key);

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!ok(v)) {
                snprintf(why, size, "\"%s\" is not %s", key, what);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static bool is_string(const json_t *v) { return json_is_string(v); }
static bool is_object(const json_t *v) { return json_is_object(v); }
static bool is_size(const json_t *v) { return json_is_number(v) && json_number_value(v) >= 0; }

static int get_str(const json_t *o, const char *key, const char **ret, char *why, size_t size)
{
        const json_t *v;
        int r = member(o, key, is_string, "a string", &v, why, size);

        *ret = v ? json_string_value(v) : NULL;
        return r;
}

/* *ret_has: a number >= 0 is at @key. */
static int get_num(const json_t *o, const char *key, bool *ret_has, double *ret, char *why, size_t size)
{
        const json_t *v;
        int r = member(o, key, is_size, "a number >= 0", &v, why, size);

        *ret_has = v != NULL;
        *ret = v ? json_number_value(v) : 0;
        return r;
}

static int get_obj(const json_t *o, const char *key, const json_t **ret, char *why, size_t size)
{
        return member(o, key, is_object, "an object", ret, why, size);
}

/* No id (a verdict written by `nsbox judge --result`, a bad batch line
 * without one): the job is named by where it is, FILE:LINE. */
static void render_id(const json_t *id, const char *where, char *buf, size_t size)
{
        if (json_is_string(id)) {
                copy_trunc(buf, size, json_string_value(id));
        } else if (json_is_integer(id)) {
                snprintf(buf, size, "%lld", (long long) json_integer_value(id));
        } else if (!id || json_is_null(id)) {
                copy_trunc(buf, size, where);
        } else {
                AUTOFREE char *s = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
                copy_trunc(buf, size, s ? s : "(id)");
        }
}

/* The fields of one result object (a line, or a judge case's result). */
struct result_view {
        const char *status, *outcome, *limit, *limit_value, *start, *signal_name, *err_stage, *err_msg, *stderr_text;
        bool has_wall, has_mem, has_exit;
        double wall_ms, mem;
        long long exit_code;
};

static int result_view(const json_t *o, struct result_view *v, char *why, size_t size)
{
        const json_t *err, *serr, *ec;
        int r;

        memset(v, 0, sizeof *v);
        if (!json_is_string(json_object_get(o, "status"))) {
                snprintf(why, size, "\"status\" is missing or not a string");
                return -EINVAL;
        }
        v->status = json_string_value(json_object_get(o, "status"));
        if ((r = get_str(o, "outcome", &v->outcome, why, size)) < 0 ||
            (r = get_str(o, "limit", &v->limit, why, size)) < 0 ||
            (r = get_str(o, "limit_value", &v->limit_value, why, size)) < 0 ||
            (r = get_str(o, "start", &v->start, why, size)) < 0 ||
            (r = get_str(o, "signal_name", &v->signal_name, why, size)) < 0 ||
            (r = get_num(o, "wall_ms", &v->has_wall, &v->wall_ms, why, size)) < 0 ||
            (r = get_num(o, "peak_memory_bytes", &v->has_mem, &v->mem, why, size)) < 0 ||
            (r = get_obj(o, "error", &err, why, size)) < 0 ||
            (r = get_obj(o, "stderr", &serr, why, size)) < 0)
                return r;
        if (err && ((r = get_str(err, "stage", &v->err_stage, why, size)) < 0 ||
                    (r = get_str(err, "message", &v->err_msg, why, size)) < 0))
                return r;
        if (serr && (r = get_str(serr, "text", &v->stderr_text, why, size)) < 0)
                return r;
        ec = json_object_get(o, "exit_code");
        if (ec && !json_is_null(ec)) {
                if (!json_is_integer(ec)) {
                        snprintf(why, size, "\"exit_code\" is not an integer");
                        return -EINVAL;
                }
                v->has_exit = true;
                v->exit_code = (long long) json_integer_value(ec);
        }
        return 0;
}

/* What a failure is grouped by: for a program that ran, the last line of
 * its stderr (where Python puts the exception: "SyntaxError: invalid
 * syntax"); a limit, a signal or a sandbox error by themselves; else
 * @reason. @prefix first ("case NAME: " for a judge case). */
static void group_reason(const struct result_view *v, const char *reason, const char *prefix, char *buf, size_t size)
{
        char last[REPORT_MSG_MAX];

        report_last_line(v->stderr_text, last, sizeof last);
        if (strcmp(v->status, "exited") == 0 && last[0])
                snprintf(buf, size, "%s%s", prefix, last);
        else
                snprintf(buf, size, "%s%s", prefix, reason);
}

/* Why a result is not a plain success, in words; "" when it is one. */
static void result_reason(const struct result_view *v, char *buf, size_t size)
{
        buf[0] = '\0';
        if (strcmp(v->status, "error") == 0)
                snprintf(buf, size, "sandbox error (%s): %s", v->err_stage ? v->err_stage : "?",
                         v->err_msg ? v->err_msg : "(no message)");
        else if (strcmp(v->status, "limit") == 0) {
                char what[160];

                /* the value and the flag, as the CLI says it (config/hints.h) */
                cfg_limit_describe(v->limit, v->limit_value, what, sizeof what);
                snprintf(buf, size, "stopped by %s", what);
        }
        else if (strcmp(v->status, "signaled") == 0)
                snprintf(buf, size, "killed by %s", v->signal_name ? v->signal_name : "a signal");
        else if (strcmp(v->status, "cancelled") == 0)
                snprintf(buf, size, "cancelled");
        else if (strcmp(v->status, "exited") != 0)
                snprintf(buf, size, "status %s", v->status);
        else if (v->has_exit && v->exit_code != 0)
                snprintf(buf, size, "exit code %lld", v->exit_code);
        else if (!v->has_exit && !v->outcome)
                snprintf(buf, size, "exited without an exit code");
}

static bool result_failed(const struct result_view *v)
{
        if (v->outcome)
                return strcmp(v->outcome, "pass") != 0;
        return strcmp(v->status, "exited") != 0 || !v->has_exit || v->exit_code != 0;
}

static int add_result(struct report_agg *a, struct report_job *j, char *why, size_t size)
{
        struct result_view v;
        int r = result_view(j->root, &v, why, size);

        if (r < 0)
                return r;
        a->results++;
        table_add(&a->status, v.status);
        if (v.outcome)
                table_add(&a->outcome, v.outcome);
        if (v.limit)
                table_add(&a->limit, v.limit);
        table_add(&a->start, v.start ? v.start : "cold/unknown");
        if (strcmp(v.status, "error") == 0)
                group_add(a, v.err_stage, v.err_msg, j->id);
        j->status = v.status;
        j->outcome = v.outcome;
        j->has_wall = v.has_wall;
        j->wall_ms = v.wall_ms;
        j->has_mem = v.has_mem;
        j->peak_mem_bytes = v.mem;
        j->failed = result_failed(&v);
        j->erred = strcmp(v.status, "error") == 0 || (v.outcome && strcmp(v.outcome, "error") == 0);
        if (j->failed) {
                result_reason(&v, j->reason, sizeof j->reason);
                if (!j->reason[0])
                        snprintf(j->reason, sizeof j->reason, "outcome %s", v.outcome ? v.outcome : "?");
                j->stderr_text = v.stderr_text;
                group_reason(&v, j->reason, "", j->why, sizeof j->why);
        }
        return 0;
}

static int add_verdict(struct report_agg *a, struct report_job *j, char *why, size_t size)
{
        const json_t *cases = json_object_get(j->root, "cases"), *c;
        const char *start = NULL;
        size_t i;
        int r;

        if (!json_is_string(json_object_get(j->root, "verdict"))) {
                snprintf(why, size, "\"verdict\" is missing or not a string");
                return -EINVAL;
        }
        if (!json_is_array(cases)) {
                snprintf(why, size, "\"cases\" is missing or not an array");
                return -EINVAL;
        }
        j->status = json_string_value(json_object_get(j->root, "verdict"));
        j->failed = strcmp(j->status, "pass") != 0;
        j->erred = strcmp(j->status, "undetermined") == 0;
        if ((r = get_str(j->root, "start", &start, why, size)) < 0)
                return r;
        /* Check every case before counting any: a bad line adds nothing. */
        json_array_foreach(cases, i, c) {
                const json_t *res;
                struct result_view v;
                const char *name, *verdict, *reason;

                if (!json_is_object(c) || get_str(c, "name", &name, why, size) < 0 ||
                    get_str(c, "verdict", &verdict, why, size) < 0 || get_str(c, "reason", &reason, why, size) < 0 ||
                    get_obj(c, "result", &res, why, size) < 0 || (res && result_view(res, &v, why, size) < 0)) {
                        char inner[REPORT_REASON_MAX];

                        copy_trunc(inner, sizeof inner, json_is_object(c) ? why : "not an object");
                        snprintf(why, size, "cases[%zu]: %s", i, inner);
                        return -EINVAL;
                }
        }
        a->verdicts++;
        table_add(&a->verdict, j->status);
        json_array_foreach(cases, i, c) {
                const json_t *res = json_object_get(c, "result");
                const char *verdict = json_string_value(json_object_get(c, "verdict"));
                struct result_view v;

                report_case_add(a, json_string_value(json_object_get(c, "name")), verdict);
                if (!json_is_object(res)) {
                        if (j->failed && !j->reason[0] && verdict && strcmp(verdict, "pass") != 0) {
                                const char *name = json_string_value(json_object_get(c, "name"));
                                const char *reason = json_string_value(json_object_get(c, "reason"));

                                snprintf(j->reason, sizeof j->reason, "case %s: %s", name ? name : "?",
                                         reason ? reason : verdict);
                                snprintf(j->why, sizeof j->why, "%s", j->reason);
                                j->why_quotes = true;
                        }
                        continue;
                }
                (void) result_view(res, &v, why, size);
                if (v.limit)
                        table_add(&a->limit, v.limit);
                if (strcmp(v.status, "error") == 0)
                        group_add(a, v.err_stage, v.err_msg, j->id);
                if (!start)
                        start = v.start;
                if (v.has_wall) {
                        j->has_wall = true;
                        j->wall_ms += v.wall_ms;
                }
                if (v.has_mem && (!j->has_mem || v.mem > j->peak_mem_bytes)) {
                        j->has_mem = true;
                        j->peak_mem_bytes = v.mem;
                }
                if (j->failed && !j->reason[0] && verdict && strcmp(verdict, "pass") != 0) {
                        const char *name = json_string_value(json_object_get(c, "name"));
                        const char *reason = json_string_value(json_object_get(c, "reason"));
                        char prefix[REPORT_KEY_MAX + 8];

                        snprintf(j->reason, sizeof j->reason, "case %s: %s", name ? name : "?",
                                 reason ? reason : verdict);
                        j->stderr_text = v.stderr_text;
                        /* the case's exception when it raised one, else
                         * the judge's reason (its excerpts folded) */
                        snprintf(prefix, sizeof prefix, "case %.*s: ", REPORT_KEY_MAX - 1, name ? name : "?");
                        if (v.has_exit && v.exit_code != 0)
                                group_reason(&v, reason ? reason : verdict, prefix, j->why, sizeof j->why);
                        else
                                snprintf(j->why, sizeof j->why, "%s%s", prefix, reason ? reason : verdict);
                        j->why_quotes = true;
                }
        }
        if (j->failed && !j->reason[0])
                snprintf(j->reason, sizeof j->reason, "verdict %s", j->status);
        if (j->failed && !j->why[0])
                snprintf(j->why, sizeof j->why, "%s", j->reason);
        table_add(&a->start, start ? start : "cold/unknown");
        return 0;
}

static bool blank(const char *text, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
                        return false;
        return true;
}

/* A NUL inside a string of the input (JSON_ALLOW_NUL: a program's stderr may
 * hold one) would end the C string everything below renders (strlen), and
 * hide what follows it: "all tests passed\0Traceback ...". Each NUL, in every
 * string of the object, becomes util/textsafe.h's visible escape \x00 once,
 * here, with the string's length (json_string_length), before anything reads
 * a value. The report renders; it never writes the input back. */
static int show_nul(json_t *v)
{
        const char *key;
        json_t *m;
        size_t i;

        if (json_is_object(v)) {
                json_object_foreach(v, key, m)
                        if (show_nul(m) < 0)
                                return -ENOMEM;
        } else if (json_is_array(v)) {
                json_array_foreach(v, i, m)
                        if (show_nul(m) < 0)
                                return -ENOMEM;
        } else if (json_is_string(v) && memchr(json_string_value(v), '\0', json_string_length(v))) {
                const char *s = json_string_value(v);
                size_t len = json_string_length(v), n = 0;
                AUTOFREE char *buf = malloc(len * 4 + 1);

                if (!buf)
                        return -ENOMEM;
                for (i = 0; i < len; i++) {
                        if (s[i])
                                buf[n++] = s[i];
                        else
                                memcpy(buf + n, "\\x00", 4), n += 4;
                }
                if (json_string_setn(v, buf, n) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int report_add_line(struct report_agg *a, const char *file, uint64_t line, const char *text, size_t len,
                    struct report_job *ret_job)
{
        char why[REPORT_REASON_MAX] = "";
        const char *schema = NULL;
        json_error_t jerr;
        int r;

        memset(ret_job, 0, sizeof *ret_job);
        a->lines++;
        if (blank(text, len))
                return 0;
        ret_job->root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!ret_job->root) {
                snprintf(why, sizeof why, "not JSON: %s (column %d)", jerr.text, jerr.column);
                goto bad;
        }
        if (!json_is_object(ret_job->root)) {
                snprintf(why, sizeof why, "not a JSON object");
                goto bad;
        }
        if (show_nul(ret_job->root) < 0) {
                snprintf(why, sizeof why, "out of memory making its NUL characters visible");
                goto bad;
        }
        snprintf(ret_job->where, sizeof ret_job->where, "%s:%llu", file, (unsigned long long) line);
        render_id(json_object_get(ret_job->root, "id"), ret_job->where, ret_job->id, sizeof ret_job->id);
        if (get_str(ret_job->root, "schema", &schema, why, sizeof why) < 0)
                goto bad;
        if (schema && strcmp(schema, "nsbox.verdict/1") == 0)
                ret_job->is_verdict = true;
        else if (schema && strcmp(schema, "nsbox.result/1") != 0) {
                snprintf(why, sizeof why, "schema \"%.100s\" is neither nsbox.result/1 nor nsbox.verdict/1", schema);
                goto bad;
        } else if (!schema && !json_object_get(ret_job->root, "status")) {
                ret_job->is_verdict = json_object_get(ret_job->root, "verdict") != NULL;
                if (!ret_job->is_verdict) {
                        snprintf(why, sizeof why, "neither a result (no \"status\") nor a verdict (no \"verdict\")");
                        goto bad;
                }
        }
        r = ret_job->is_verdict ? add_verdict(a, ret_job, why, sizeof why) : add_result(a, ret_job, why, sizeof why);
        if (r < 0)
                goto bad;
        a->valid++;
        if (ret_job->has_wall) {
                hist_add(&a->wall_ms, ret_job->wall_ms);
                slow_add(a, ret_job);
        }
        if (ret_job->has_mem)
                hist_add(&a->mem_mib, ret_job->peak_mem_bytes / (1024.0 * 1024.0));
        if (ret_job->failed) {
                a->failed++;
                report_fgroup_add(a, ret_job);
        }
        return 1;
bad:
        report_job_clear(ret_job);
        report_add_bad(a, file, line, why);
        return -EINVAL;
}

int report_add_documents(struct report_agg *a, const char *file, const char *text, size_t len,
                         int (*each)(const struct report_job *j, void *ctx), void *ctx)
{
        uint64_t line = 1;
        size_t off = 0;

        for (;;) {
                struct report_job job;
                json_error_t jerr;
                json_t *v;
                size_t used;
                int r;

                while (off < len && (text[off] == ' ' || text[off] == '\t' || text[off] == '\r' || text[off] == '\n'))
                        line += text[off++] == '\n';
                if (off == len)
                        return 0;
                v = json_loadb(text + off, len - off, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
                if (!v) {
                        char why[REPORT_REASON_MAX];

                        /* No way to find the next document after this: the
                         * rest of the file is one bad entry. */
                        snprintf(why, sizeof why, "not JSON: %s (line %d of the document)", jerr.text, jerr.line);
                        a->lines++;
                        report_add_bad(a, file, line, why);
                        return 0;
                }
                used = (size_t) jerr.position;
                json_decref(v);
                if (used == 0 || used > len - off)
                        used = len - off;
                r = report_add_line(a, file, line, text + off, used, &job);
                if (r > 0) {
                        int k = each ? each(&job, ctx) : 0;

                        report_job_clear(&job);
                        if (k < 0)
                                return k;
                }
                for (size_t i = off; i < off + used; i++)
                        line += text[i] == '\n';
                off += used;
        }
}
