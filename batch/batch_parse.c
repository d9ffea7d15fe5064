/* batch/batch_parse.c — job lines, output lines, outcome, progress. Pure:
 * allocation only.
 *
 * A job line is checked as strictly as a judge spec: the keys allowed depend
 * on the kind, and an unknown key, a wrong type or a bad value is an error
 * whose message starts with "line N:" and the key, so the author of a
 * 10,000-line file can find it.
 */
#include "batch/batch_internal.h"
#include "batch/batch_tests.h"
#include "config/schema.h"
#include "path/path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/base64.h"
#include "util/cleanup.h"
#include "util/json_cleanup.h"
#include "util/textsafe.h"


static const struct job_kind {
        const char *name;
        enum batch_kind kind;
        const char *const keys[10];   /* allowed besides id and kind, NULL-terminated */
} kinds[] = {
        { "python", BATCH_PYTHON, { "code", "test_code", "timeout", "limits", "stdin", "files", "fetch_files", "image", NULL } },
        { "judge", BATCH_JUDGE, { "spec", NULL } },
        { "run", BATCH_RUN, { "argv", "timeout", "limits", "stdin", "files", "fetch_files", "image", NULL } },
        { "test", BATCH_TEST, { "code", "test_code", "entry_point", "timeout", "limits", "stdin", NULL } },
};

bool batch_shard_takes(unsigned index, unsigned count, size_t line)
{
        return count == 0 || (line - 1) % count == index;
}

bool batch_line_blank(const char *text, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
                        return false;
        return true;
}

size_t batch_bom_len(const char *text, size_t len)
{
        return len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

char *batch_id_key(const json_t *id)
{
        return id ? json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
}

void batch_resume_add(json_t *set, const char *text, size_t len)
{
        AUTO(json_decref) json_t *root = json_loadb(text, len, 0, NULL);
        AUTOFREE char *key = NULL;
        json_t *id;

        if (!json_is_object(root))
                return;
        id = json_object_get(root, "id");
        if (!json_is_string(id) && !json_is_integer(id))
                return;
        key = batch_id_key(id);
        if (key)
                json_object_set_new(set, key, json_true());
}

/* memmem, which POSIX lacks (the posix platform builds this file too). */
static bool holds(const char *text, size_t len, const char *needle)
{
        size_t n = strlen(needle);

        for (size_t i = 0; i + n <= len; i++)
                if (text[i] == needle[0] && memcmp(text + i, needle, n) == 0)
                        return true;
        return false;
}

int batch_cancel_parse(const char *text, size_t len, char **ret_key)
{
        AUTO(json_decref) json_t *root = NULL;
        json_t *id;

        *ret_key = NULL;
        /* Only a line that names the key is parsed twice: job lines stay one parse. */
        if (!holds(text, len, "\"cancel\"") || !(root = json_loadb(text, len, 0, NULL)) || !json_is_object(root) ||
            !(id = json_object_get(root, "cancel")))
                return 0;
        if (json_object_size(root) != 1 || (!json_is_string(id) && !json_is_integer(id)))
                return -EINVAL;
        return (*ret_key = batch_id_key(id)) ? 1 : -ENOMEM;
}

/* "unknown key \"cod\" for a python job (expected id, kind, code, ...)". */
static int unknown_key(const struct job_kind *kind, const char *key, struct nsb_error *e)
{
        char list[256];
        size_t len = (size_t) snprintf(list, sizeof list, "id, kind");

        for (size_t i = 0; kind->keys[i] && len < sizeof list; i++)
                len += (size_t) snprintf(list + len, sizeof list - len, ", %s", kind->keys[i]);
        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "unknown key \"%.64s\" for a %s job (expected %s)", key,
                        kind->name, list);
}

/* A string field without NUL bytes (they cannot reach argv or a file name). */
static int take_text(const json_t *v, const char *key, bool allow_nul, char **ret, size_t *ret_len,
                     struct nsb_error *e)
{
        if (!json_is_string(v))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"%s\": expected a string", key);
        if (!allow_nul && memchr(json_string_value(v), '\0', json_string_length(v)))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"%s\": must not contain a NUL character", key);
        *ret = malloc(json_string_length(v) + 1);
        if (!*ret)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        memcpy(*ret, json_string_value(v), json_string_length(v) + 1);
        if (ret_len)
                *ret_len = json_string_length(v);
        return 0;
}

static int parse_python(const json_t *root, struct batch_job *job, struct nsb_error *e)
{
        const json_t *code = json_object_get(root, "code"), *test = json_object_get(root, "test_code");
        size_t code_len, test_len;
        const char *t;

        if (!code)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "python job: missing \"code\"");
        if (!json_is_string(code))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"code\": expected a string");
        if (test && !json_is_null(test) && !json_is_string(test))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"test_code\": expected a string or null");
        code_len = json_string_length(code);
        test_len = json_is_string(test) ? json_string_length(test) : 0;
        t = json_is_string(test) ? json_string_value(test) : "";
        /* Python 3.11 reads a source line only up to a NUL and joins what
         * follows to the next line: "#\u0000" in code would comment out the
         * first line of test_code unseen (3.12 refuses such a file). */
        if (memchr(json_string_value(code), '\0', code_len))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"code\": must not contain a NUL character");
        if (memchr(t, '\0', test_len))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"test_code\": must not contain a NUL character");
        /* The test harness runs after the code, in the same module, as the
         * executor it replaces does: it sees the code's definitions. */
        job->program = malloc(code_len + 1 + test_len + 1);
        if (!job->program)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        memcpy(job->program, json_string_value(code), code_len);
        job->program_len = code_len;
        if (json_is_string(test)) {
                job->program[job->program_len++] = '\n';
                memcpy(job->program + job->program_len, t, test_len);
                job->program_len += test_len;
        }
        job->program[job->program_len] = '\0';
        return 0;
}

static int parse_run(const json_t *root, struct batch_job *job, struct nsb_error *e)
{
        const json_t *argv = json_object_get(root, "argv");

        if (!argv)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "run job: missing \"argv\"");
        if (!json_is_array(argv) || json_array_size(argv) == 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"argv\": expected a non-empty array of strings");
        job->argv = calloc(json_array_size(argv) + 1, sizeof *job->argv);
        if (!job->argv)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        for (size_t i = 0; i < json_array_size(argv); i++) {
                char key[32];
                int r;

                snprintf(key, sizeof key, "argv[%zu]", i);
                r = take_text(json_array_get(argv, i), key, false, &job->argv[i], NULL, e);
                if (r < 0)
                        return r;
                job->argc = i + 1;
        }
        return 0;
}

static int parse_judge(const json_t *root, const char *jobs_path, struct batch_job *job, struct nsb_error *e)
{
        const json_t *spec = json_object_get(root, "spec");
        AUTOFREE char *text = NULL;
        int r;

        if (!json_is_object(spec))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "judge job: \"spec\" must be a judge spec object");
        /* One parser for judge specs: the spec goes through the same checks
         * (and the same error paths) as `nsbox judge SPEC.json`. */
        text = json_dumps(spec, JSON_COMPACT);
        if (!text)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        r = judge_spec_parse(text, strlen(text), jobs_path, &job->spec, e);
        if (r < 0)
                return nsb_error_prefix(e, "spec");
        return 0;
}

static int parse_limits(const json_t *root, struct batch_job *job, struct nsb_error *e)
{
        const json_t *limits = json_object_get(root, "limits"), *timeout = json_object_get(root, "timeout");
        int r;

        cfg_defaults(&job->limits, NSB_CMD_BATCH);
        if (limits) {
                r = cfg_limits_parse_json(limits, &job->limits, &job->limits_set, e);
                if (r < 0)
                        return r;
        }
        if (timeout) {
                AUTO(json_decref) json_t *as_limit = NULL;

                if (job->limits_set & CFG_F_WALL_TIME)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "\"timeout\": give timeout or limits.wall_time, not both");
                if (!json_is_number(timeout) || json_number_value(timeout) <= 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"timeout\": expected a number of seconds > 0");
                /* Shorthand for limits.wall_time, through the same parser. */
                as_limit = json_pack("{s:O}", "wall_time", timeout);
                if (!as_limit)
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                r = cfg_limits_parse_json(as_limit, &job->limits, &job->limits_set, e);
                if (r < 0)
                        return nsb_error_prefix(e, "\"timeout\"");
        }
        /* A python job under less memory than python needs would "fail"
         * every time: the caller's mistake, told as such. */
        if ((job->kind == BATCH_PYTHON || job->kind == BATCH_TEST) && (job->limits_set & CFG_F_MEMORY) &&
            cfg_check_python_memory(job->limits.memory_bytes, e) < 0) {
                e->stage = NSB_STAGE_CONFIG;
                return nsb_error_prefix(e, "limits.memory");
        }
        return 0;
}

/* A name that is another's directory ("a" and "a/b") could be neither: a
 * bad line here, which nsbox serve answers 400, rather than the mount
 * plan's refusal once a worker runs it (a sandbox error). */
static int files_nested(const struct batch_job *job, struct nsb_error *e)
{
        for (size_t i = 0; i < job->n_files; i++) {
                size_t n = strlen(job->files[i].name);

                for (size_t j = 0; j < job->n_files; j++)
                        if (j != i && strncmp(job->files[j].name, job->files[i].name, n) == 0 &&
                            job->files[j].name[n] == '/')
                                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                                "\"files\": \"%.64s\" is a file and the directory of \"%.64s\"",
                                                job->files[i].name, job->files[j].name);
        }
        return 0;
}

/* "files": {name: base64}, each name a plain relative path (path_job_file_name). */
static int parse_files(const json_t *v, struct batch_job *job, struct nsb_error *e)
{
        const char *name;
        const json_t *data;
        size_t total = 0;

        if (!json_is_object(v))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"files\": expected an object of name: base64 content");
        if (json_object_size(v) > MNT_MAX_JOB_FILES)
                return nsb_fail(e, NSB_STAGE_CONFIG, E2BIG, "\"files\": %zu files, more than %u", json_object_size(v),
                                MNT_MAX_JOB_FILES);
        if (json_object_size(v) && !(job->files = calloc(json_object_size(v), sizeof *job->files)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        json_object_foreach((json_t *) v, name, data) {
                struct mnt_file *f = &job->files[job->n_files];
                char *bytes = NULL;
                size_t len = 0;
                int r = path_job_file_name("\"files\"", name, strlen(name), e);

                if (r < 0)
                        return r;
                if (!json_is_string(data) ||
                    (r = b64_decode(json_string_value(data), json_string_length(data), &bytes, &len)) == -EINVAL)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"files\": \"%.64s\": expected base64 text", name);
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                f->data = bytes;
                f->len = len;
                if (!(f->name = strdup(name)))
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                job->n_files++;
                if ((total += len) > BATCH_FILES_MAX_BYTES)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EFBIG, "\"files\": more than %u MiB in all",
                                        BATCH_FILES_MAX_BYTES >> 20);
        }
        return files_nested(job, e);
}

/* "fetch_files": [name, ...], read back after the run. */
static int parse_fetch(const json_t *v, struct batch_job *job, struct nsb_error *e)
{
        size_t i;
        const json_t *name;

        if (!json_is_array(v))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"fetch_files\": expected an array of names");
        if (json_array_size(v) > MNT_MAX_JOB_FILES)
                return nsb_fail(e, NSB_STAGE_CONFIG, E2BIG, "\"fetch_files\": %zu names, more than %u",
                                json_array_size(v), MNT_MAX_JOB_FILES);
        if (json_array_size(v) && !(job->fetch = calloc(json_array_size(v), sizeof *job->fetch)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        json_array_foreach(v, i, name) {
                int r;

                if (!json_is_string(name))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"fetch_files\": item %zu is not a string", i);
                if ((r = path_job_file_name("\"fetch_files\"", json_string_value(name), json_string_length(name), e)) < 0)
                        return r;
                for (size_t j = 0; j < job->n_fetch; j++)
                        if (strcmp(job->fetch[j], json_string_value(name)) == 0)
                                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"fetch_files\": \"%.64s\" named twice",
                                                job->fetch[j]);
                if (!(job->fetch[job->n_fetch] = strdup(json_string_value(name))))
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
                job->n_fetch++;
        }
        return 0;
}

static int parse_job(const json_t *root, const char *jobs_path, struct batch_job *job, struct nsb_error *e)
{
        const json_t *kind, *v;
        const char *key;
        size_t k;
        int r;

        if (!json_is_object(root))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "expected a JSON object");
        job->id = json_object_get(root, "id");
        if (!job->id)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "missing \"id\"");
        if (!(json_is_string(job->id) && json_string_length(job->id) > 0) && !json_is_integer(job->id)) {
                job->id = NULL;
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"id\": expected a non-empty string or an integer");
        }
        json_incref(job->id);
        kind = json_object_get(root, "kind");
        if (!json_is_string(kind))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "\"kind\": expected \"python\", \"judge\", \"run\" or \"test\"");
        for (k = 0; k < ARRAY_SIZE(kinds); k++)
                if (strcmp(json_string_value(kind), kinds[k].name) == 0)
                        break;
        if (k == ARRAY_SIZE(kinds))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "\"kind\": unknown kind \"%.64s\" (expected \"python\", \"judge\", \"run\" or \"test\")",
                                json_string_value(kind));
        job->kind = kinds[k].kind;
        json_object_foreach((json_t *) root, key, v) {
                bool known = strcmp(key, "id") == 0 || strcmp(key, "kind") == 0;

                for (size_t i = 0; !known && kinds[k].keys[i]; i++)
                        known = strcmp(key, kinds[k].keys[i]) == 0;
                if (!known)
                        return unknown_key(&kinds[k], key, e);
        }
        if ((v = json_object_get(root, "stdin"))) {
                r = take_text(v, "stdin", true, &job->stdin_data, &job->stdin_len, e);
                if (r < 0)
                        return r;
        }
        /* an image REF (docs/images.md): opened by the job's worker */
        if ((v = json_object_get(root, "image"))) {
                size_t len;
                r = take_text(v, "image", false, &job->image, &len, e);
                if (r < 0)
                        return r;
        }
        r = parse_limits(root, job, e);
        if (r < 0)
                return r;
        if ((v = json_object_get(root, "files")) && (r = parse_files(v, job, e)) < 0)
                return r;
        if ((v = json_object_get(root, "fetch_files")) && (r = parse_fetch(v, job, e)) < 0)
                return r;
        switch (job->kind) {
        case BATCH_PYTHON:
                return parse_python(root, job, e);
        case BATCH_RUN:
                return parse_run(root, job, e);
        case BATCH_TEST:
                return batch_test_parse(root, job, e);
        default:
                return parse_judge(root, jobs_path, job, e);
        }
}

int batch_job_parse(const char *text, size_t len, size_t line, const char *jobs_path, struct batch_job *ret,
                    struct nsb_error *e)
{
        AUTO(json_decref) json_t *root = NULL;
        json_error_t jerr;
        int r;

        memset(ret, 0, sizeof *ret);
        ret->line = line;
        /* REJECT_DUPLICATES: a key given twice is ambiguous, never "last wins".
         * ALLOW_NUL: stdin may hold \u0000; code and argv check it. */
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (!root)
                r = nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "invalid JSON at column %d: %s", jerr.column, jerr.text);
        else
                r = parse_job(root, jobs_path, ret, e);
        if (r < 0)
                return nsb_error_prefix(e, "line %zu", line);
        return 0;
}

int batch_files_fit(const struct nsb_config *cli, const struct batch_job *job, struct nsb_error *e)
{
        struct nsb_config c = *cli;
        uint64_t need = 0;

        if (!job->n_files)
                return 0;
        cfg_limits_apply(&job->limits, job->limits_set, &c);
        for (size_t i = 0; i < job->n_files; i++)
                need += ((uint64_t) job->files[i].len + 4095) & ~(uint64_t) 4095;
        if (need <= c.tmp_size_bytes)
                return 0;
        return nsb_fail(e, NSB_STAGE_CONFIG, EFBIG,
                        "line %zu: \"files\": %llu bytes (in whole 4 KiB pages) do not fit the job's workspace "
                        "(tmp_size %llu bytes)", job->line, (unsigned long long) need,
                        (unsigned long long) c.tmp_size_bytes);
}

void batch_job_free(struct batch_job *job)
{
        if (!job)
                return;
        json_decref(job->id);
        free(job->program);
        free(job->tests);
        free(job->entry_point);
        for (size_t i = 0; i < job->argc; i++)
                free(job->argv[i]);
        free(job->argv);
        free(job->stdin_data);
        for (size_t i = 0; i < job->n_files; i++) {
                free((char *) job->files[i].name);
                free((char *) job->files[i].data);
        }
        free(job->files);
        for (size_t i = 0; i < job->n_fetch; i++)
                free(job->fetch[i]);
        free(job->fetch);
        free(job->image);
        judge_spec_free(&job->spec);
        memset(job, 0, sizeof *job);
}

enum batch_outcome batch_outcome_of(const struct run_result *r)
{
        switch (r->status) {
        case RUN_EXITED:
                return r->exit_code == 0 ? OUTCOME_PASS : OUTCOME_FAIL;
        case RUN_LIMIT:
                return r->limit == LIMIT_WALL_TIME || r->limit == LIMIT_CPU_TIME ? OUTCOME_TIMEOUT : OUTCOME_FAIL;
        case RUN_SIGNALED:
                return OUTCOME_FAIL;
        default:
                return OUTCOME_ERROR;   /* error, cancelled: the program's correctness is unknown */
        }
}

enum batch_outcome batch_verdict_outcome(enum judge_verdict v)
{
        return v == JUDGE_PASS ? OUTCOME_PASS : v == JUDGE_FAIL ? OUTCOME_FAIL : OUTCOME_ERROR;
}

const char *batch_outcome_name(enum batch_outcome o)
{
        static const char *const names[] = { "pass", "fail", "timeout", "error" };
        return (unsigned) o < ARRAY_SIZE(names) ? names[o] : "error";
}

json_t *batch_line_render(const json_t *id, size_t line, json_t *body, int outcome, double start_ms,
                          double end_ms)
{
        AUTO(json_decref) json_t *out = json_object();
        AUTO(json_decref) json_t *owned = body;
        json_t *info;

        if (!out || !owned)
                return NULL;
        /* id first: a reader of the stream sees whose line it is at once. */
        if (json_object_set_new(out, "id", id ? json_deep_copy(id) : json_null()) < 0 ||
            json_object_update(out, owned) < 0)
                return NULL;
        if (outcome >= 0 && (json_object_set_new(out, "outcome", json_string(batch_outcome_name(outcome))) < 0 ||
                             json_object_set_new(out, "label", json_integer(outcome == OUTCOME_PASS)) < 0))
                return NULL;
        info = json_pack("{s:I}", "line", (json_int_t) line);
        if (!info || json_object_set_new(out, "batch", info) < 0)
                return NULL;
        if (start_ms >= 0 && (json_object_set_new(info, "start_ms", json_real((double) (long long) (start_ms * 1e3 + 0.5) / 1e3)) < 0 ||
                              json_object_set_new(info, "end_ms", json_real((double) (long long) (end_ms * 1e3 + 0.5) / 1e3)) < 0))
                return NULL;
        return move_ptr(&out);
}

json_t *batch_error_line(const json_t *id, size_t line, const struct nsb_error *err)
{
        struct run_result r;
        json_t *body;

        memset(&r, 0, sizeof r);
        r.status = RUN_ERROR;
        r.error = *err;
        ledger_init(&r.ledger);
        body = result_to_json(&r, 0);
        return batch_line_render(id, line, body, OUTCOME_ERROR, -1, -1);
}

static void duration_text(double seconds, char *buf, size_t size)
{
        unsigned long long s = (unsigned long long) (seconds + 0.5);

        if (s < 60)
                snprintf(buf, size, "%llus", s);
        else if (s < 3600)
                snprintf(buf, size, "%llum%02llus", s / 60, s % 60);
        else
                snprintf(buf, size, "%lluh%02llum", s / 3600, s / 60 % 60);
}

void batch_progress_text(const struct batch_progress *p, char *buf, size_t size)
{
        size_t seen = p->done + p->skipped, n;
        double rate = p->elapsed_ms > 0 ? (double) p->done * 1e3 / p->elapsed_ms : 0;
        char bar[24], eta[32] = "ETA ?", tail[160];

        if (p->total) {
                size_t fill = seen >= p->total ? 20 : seen * 20 / p->total;
                memset(bar, '#', fill);
                memset(bar + fill, '.', 20 - fill);
                bar[20] = '\0';
                if (seen >= p->total)
                        snprintf(eta, sizeof eta, "done");
                else if (rate > 0)
                        duration_text((double) (p->total - seen) / rate, eta + 4, sizeof eta - 4);
        }
        snprintf(tail, sizeof tail, "pass %zu fail %zu timeout %zu error %zu", p->count[OUTCOME_PASS],
                 p->count[OUTCOME_FAIL], p->count[OUTCOME_TIMEOUT], p->count[OUTCOME_ERROR]);
        if (p->total)
                n = (size_t) snprintf(buf, size, "[%s] %zu/%zu  %.1f/s  %s  %s", bar, seen, p->total, rate, eta,
                                      tail);
        else
                n = (size_t) snprintf(buf, size, "%zu done  %.1f/s  %s", seen, rate, tail);
        if (p->skipped && n < size)
                snprintf(buf + n, size - n, "  skipped %zu", p->skipped);
}

/* At most 40 bytes of @s for a message: one line, the unsafe characters of
 * util/textsafe.h shown as escapes. */
static void shown_text(const char *s, size_t len, char *buf, size_t size)
{
        buf[0] = '\0';
        textsafe_term_append(buf, size, s, len, 40);
}

static bool has_any(const json_t *o, const char *const *keys)
{
        for (; *keys; keys++)
                if (json_object_get(o, *keys))
                        return true;
        return false;
}

const char *batch_input_refusal(const char *text, size_t line_len, size_t avail, const char *input, char *buf,
                                size_t size)
{
        const char *file = input ? input : "FILE";
        static const char *const job_keys[] = { "id", "kind", NULL };
        static const char *const spec_keys[] = { "cases", "program", NULL };
        AUTO(json_decref) json_t *root = json_loadb(text, line_len, JSON_DECODE_ANY, NULL);
        AUTO(json_decref) json_t *whole = NULL;
        const char *p = text, *what, *fix;
        char head[48];

        while (p < text + line_len && (*p == ' ' || *p == '\t' || *p == '\r'))
                p++;
        if (memchr(text, '\0', line_len)) {
                /* Binary data: jansson stops at the NUL, so any other
                 * reading of this line would misname it. */
                snprintf(buf, size,
                         "%s is not JSON Lines: its first line holds a NUL byte (at byte %zu), so it is binary data, "
                         "not text; nsbox batch reads one job object per line of UTF-8 text (docs/batch.md)",
                         input ? input : "the input on stdin",
                         (size_t) ((const char *) memchr(text, '\0', line_len) - text) + 1);
                return buf;
        }
        if (json_is_object(root) && !has_any(root, job_keys) && has_any(root, spec_keys)) {
                what = "a judge spec (an object with \"cases\"), not a job";
                fix = "run it with `nsbox judge %s`, or make it one judge job: "
                      "jq -c '{id: \"1\", kind: \"judge\", spec: .}' %s";
        } else if (json_is_object(root) && !has_any(root, job_keys) && json_is_string(json_object_get(root, "schema")) &&
                   strncmp(json_string_value(json_object_get(root, "schema")), "nsbox.", 6) == 0) {
                what = "nsbox's own output (a result or verdict line), not a job";
                fix = "give nsbox batch the jobs, not its results%.0s%.0s";
        } else if (json_is_object(root)) {
                return NULL;   /* a job line; its own errors are its own bad line */
        } else if (json_is_array(root) || (!root && *p == '[')) {
                what = root ? "a JSON array" : "a JSON array over several lines";
                fix = "convert it: jq -c '.[]' %s > jobs.jsonl%.0s";
        } else if (!root && *p == '{') {
                /* Pretty-printed: the object goes on past this line. */
                whole = json_loadb(text, avail, JSON_DISABLE_EOF_CHECK, NULL);
                if (json_is_object(whole) && !has_any(whole, job_keys) && has_any(whole, spec_keys)) {
                        what = "a pretty-printed judge spec, not a job";
                        fix = "run it with `nsbox judge %s`, or make it one judge job: "
                              "jq -c '{id: \"1\", kind: \"judge\", spec: .}' %s";
                } else {
                        what = "pretty-printed JSON (an object over several lines)";
                        fix = "put each job on one line: jq -c . %s > jobs.jsonl%.0s";
                }
        } else if (root) {
                what = "a JSON value that is not an object";
                fix = "each line must be one job object (docs/batch.md)%.0s%.0s";
        } else {
                shown_text(p, line_len - (size_t) (p - text), head, sizeof head);
                snprintf(buf, size,
                         "%s is not JSON Lines: its first line is plain text (\"%s\"); nsbox batch reads one job "
                         "object per line, e.g. {\"id\": \"a\", \"kind\": \"python\", \"code\": \"print(1)\"} "
                         "(docs/batch.md)",
                         input ? input : "the input on stdin", head);
                return buf;
        }
        {
                char hint[256];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
                snprintf(hint, sizeof hint, fix, file, file);
#pragma GCC diagnostic pop
                snprintf(buf, size, "%s is not JSON Lines: its first line is %s; %s", input ? input : "the input on stdin",
                         what, hint);
        }
        return buf;
}

const char *batch_long_line_refusal(const char *head, size_t len, const char *input, char *buf, size_t size)
{
        const char *p = head;

        while (p < head + len && (*p == ' ' || *p == '\t' || *p == '\r'))
                p++;
        /* A job object too long to read is that job's bad line; a head that
         * cannot start one (binary data, an array, text) is no JSON Lines. */
        if (!memchr(head, '\0', len) && p < head + len && *p == '{')
                return NULL;
        return batch_input_refusal(head, len, len, input, buf, size);
}

void batch_summary_text(const struct batch_progress *p, bool cancelled, char *buf, size_t size)
{
        size_t n;

        n = (size_t) snprintf(buf, size, "nsbox batch: %zu line%s in %.1fs%s: pass %zu fail %zu timeout %zu error %zu",
                              p->done, p->done == 1 ? "" : "s", p->elapsed_ms / 1e3, cancelled ? " (cancelled)" : "",
                              p->count[OUTCOME_PASS], p->count[OUTCOME_FAIL], p->count[OUTCOME_TIMEOUT],
                              p->count[OUTCOME_ERROR]);
        if (n < size)
                n += (size_t) snprintf(buf + n, size - n, "; bad lines %zu", p->bad_lines);
        if (p->bad_lines && n < size)
                n += (size_t) snprintf(buf + n, size - n, " (first: line %zu)", p->first_bad_line);
        if (p->skipped && n < size)
                snprintf(buf + n, size - n, "; skipped %zu (--resume)", p->skipped);
}
