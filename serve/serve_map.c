/* serve/serve_map.c — result lines turned into responses. Pure.
 *
 * SandboxFusion's /run_code mapping (docs/serve.md has the table): a
 * sandbox failure is SandboxError, never Failed; a limit is Failed (its
 * run_result says which), never Success; Success is exactly "exited 0". */
#include "serve/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/hints.h"
#include "util/json_cleanup.h"
#include "util/textsafe.h"

bool serve_line_is_bad_request(const json_t *line)
{
        const json_t *b = json_object_get(line, "batch");
        const char *status = json_string_value(json_object_get(line, "status"));

        /* The engine writes start_ms for every job a worker ran; a line
         * that never became a job has only its line number. */
        return status && strcmp(status, "error") == 0 && json_is_object(b) && !json_object_get(b, "start_ms");
}

const char *serve_bad_request_message(const json_t *line)
{
        const char *m = json_string_value(json_object_get(json_object_get(line, "error"), "message"));
        size_t d;

        if (!m)
                return "the job was refused";
        /* "line 5: ..." is the engine's input line, which means nothing to
         * the client: its request was one line. */
        d = strncmp(m, "line ", 5) == 0 ? strspn(m + 5, "0123456789") : 0;
        if (d && strncmp(m + 5 + d, ": ", 2) == 0)
                return m + 5 + d + 2;
        return m;
}

/* @message as a JSON string. The service's own messages quote what the
 * client sent cut at a byte bound ("unknown key \"%.64s\""), which may end
 * inside a UTF-8 character: jansson refuses that, and the answer would be a
 * 500 "out of memory" naming nothing. Replaced with U+FFFD instead. */
static json_t *message_json(const char *message)
{
        char clean[4 * NSB_ERROR_MSG_MAX];   /* a message is shorter; U+FFFD takes 3 bytes for 1 */
        json_t *j = message ? json_string(message) : json_string("");

        if (j || !message)
                return j;
        clean[0] = '\0';
        textsafe_exact_append(clean, sizeof clean, message, strlen(message), sizeof clean / 2);
        return json_string(clean);
}

json_t *serve_error_body(unsigned status, const char *message)
{
        return json_pack("{s:{s:i,s:o}}", "error", "status", (int) status, "message", message_json(message));
}

static const char *stream_text(const json_t *line, const char *name)
{
        const char *t = json_string_value(json_object_get(json_object_get(line, name), "text"));
        return t ? t : "";
}

static json_t *sandbox_error(const char *message)
{
        return json_pack("{s:s,s:o,s:n,s:n,s:{}}", "status", "SandboxError", "message", message_json(message),
                         "compile_result", "run_result", "files");
}

json_t *serve_map_run_code_error(const char *why)
{
        return sandbox_error(why);
}

json_t *serve_map_run_code(const json_t *line)
{
        const char *status = json_string_value(json_object_get(line, "status"));
        const char *limit = json_string_value(json_object_get(line, "limit"));
        const json_t *wall = json_object_get(line, "wall_ms");
        const char *run_status = "Finished", *top = "Failed";
        json_t *rc = json_null(), *resp;
        char message[NSB_ERROR_MSG_MAX + 64] = "";

        if (!status || strcmp(status, "error") == 0) {
                const json_t *err = json_object_get(line, "error");
                snprintf(message, sizeof message, "sandbox error (%s): %s",
                         json_string_value(json_object_get(err, "stage")) ?: "unknown",
                         json_string_value(json_object_get(err, "message")) ?: "no result");
                return sandbox_error(message);
        }
        if (strcmp(status, "cancelled") == 0)
                return sandbox_error("cancelled: the service was stopped before this job ended");
        if (strcmp(status, "exited") == 0) {
                json_int_t code = json_integer_value(json_object_get(line, "exit_code"));
                rc = json_integer(code);
                top = code == 0 ? "Success" : "Failed";
        } else if (strcmp(status, "signaled") == 0) {
                /* as a shell reports it: 128 + N */
                rc = json_integer(128 + json_integer_value(json_object_get(line, "signal")));
                snprintf(message, sizeof message, "killed by %s",
                         json_string_value(json_object_get(line, "signal_name")) ?: "a signal");
        } else if (strcmp(status, "limit") == 0) {
                bool time = limit && (strcmp(limit, "wall_time") == 0 || strcmp(limit, "cpu_time") == 0);
                char what[160];

                run_status = time ? "TimeLimitExceeded" : "Error";
                /* the value, as the CLI says it (config/hints.h), and the
                 * request key that raises it: a caller here has no flags */
                cfg_limit_describe_by(limit ? limit : "unknown",
                                      json_string_value(json_object_get(line, "limit_value")),
                                      limit && strcmp(limit, "wall_time") == 0 ? "run_timeout"
                                      : limit && strcmp(limit, "memory") == 0  ? "memory_limit_MB"
                                                                               : "",
                                      what, sizeof what);
                snprintf(message, sizeof message, "stopped by %s", what);
        } else {
                snprintf(message, sizeof message, "unknown result status \"%.32s\"", status);
                json_decref(rc);
                return sandbox_error(message);
        }
        resp = json_pack("{s:s,s:s,s:n,s:{s:s,s:f,s:o,s:s,s:s},s:{}}", "status", top, "message", message,
                         "compile_result", "run_result", "status", run_status, "execution_time",
                         json_is_number(wall) ? json_number_value(wall) / 1000.0 : 0.0, "return_code", rc, "stdout",
                         stream_text(line, "stdout"), "stderr", stream_text(line, "stderr"), "files");
        /* fetch_files: the ones read back (name → base64), as SandboxFusion
         * returns them; the others, and why, in nsbox's own key */
        if (resp && json_is_object(json_object_get(line, "files")))
                json_object_set(resp, "files", json_object_get(line, "files"));
        if (resp && json_is_object(json_object_get(line, "files_refused")))
                json_object_set(resp, "files_refused", json_object_get(line, "files_refused"));
        return resp;
}

json_t *serve_map_v1_run(const json_t *line, const json_t *client_id)
{
        json_t *j = json_deep_copy(line);

        if (!j)
                return NULL;
        json_object_del(j, "batch");
        if (client_id)
                json_object_set(j, "id", (json_t *) client_id);
        else
                json_object_del(j, "id");
        return j;
}

json_t *serve_map_batch_line(const json_t *line, const json_t *client_id, size_t body_line)
{
        json_t *j = serve_map_v1_run(line, client_id);

        if (j && json_object_set_new(j, "batch", json_pack("{s:I}", "line", (json_int_t) body_line))) {
                json_decref(j);
                return NULL;
        }
        return j;
}

json_t *serve_batch_error_line(const json_t *client_id, size_t body_line, const char *status, const char *stage,
                               const char *message)
{
        /* no id given: no "id" key (as /v1/run and the result lines), not null */
        json_t *l = json_pack("{s:s,s:s,s:{s:s,s:o},s:s,s:i,s:{s:I}}", "schema", "nsbox.result/1", "status", status,
                              "error", "stage", stage, "message", message_json(message), "outcome", "error", "label",
                              0, "batch", "line", (json_int_t) body_line);
        json_t *with_id = l && client_id ? json_pack("{s:O}", "id", (json_t *) client_id) : NULL;

        if (with_id) {   /* id first, as every result line has it */
                if (json_object_update(with_id, l) == 0) {
                        json_decref(l);
                        return with_id;
                }
                json_decref(with_id);
        }
        return l;
}

/* ---- /metrics ---- */

static const char *const status_names[8] = { "exited", "signaled", "limit", "cancelled", "error",
                                             "pass", "fail", "undetermined" };
static const char *const outcome_names[4] = { "pass", "fail", "timeout", "error" };
static const double bucket_le[SERVE_N_BUCKETS] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 };

static int name_index(const char *const *names, size_t n, const char *v)
{
        for (size_t i = 0; v && i < n; i++)
                if (strcmp(names[i], v) == 0)
                        return (int) i;
        return -1;
}

void serve_metrics_job(struct serve_metrics *m, const json_t *line, double seconds)
{
        const char *st = json_string_value(json_object_get(line, "status"));
        int i = name_index(status_names, 8, st ? st : json_string_value(json_object_get(line, "verdict")));
        int o = name_index(outcome_names, 4, json_string_value(json_object_get(line, "outcome")));

        if (i >= 0)
                m->status[i]++;
        if (o >= 0)
                m->outcome[o]++;
        st = json_string_value(json_object_get(line, "start"));
        if (st && strcmp(st, "warm") == 0)
                m->starts[0]++;
        else if (st && strcmp(st, "cold") == 0)
                m->starts[1]++;
        if (json_is_string(json_object_get(line, "start_reason")))
                m->warm_fallbacks++;   /* a judge's verdict carries it too: its cases ran cold */
        for (size_t b = 0; b < SERVE_N_BUCKETS; b++)
                if (seconds <= bucket_le[b]) {
                        m->bucket[b]++;
                        break;
                }
        m->latency_sum += seconds;
        m->latency_count++;
}

static const char *const refusal_names[REFUSE__MAX] = { "bad_request", "unauthorized", "too_large", "queue_full",
                                                        "stopping",    "slow_client",  "client_gone", "slow_reader" };

char *serve_metrics_render(const struct serve_metrics *m, unsigned in_flight, unsigned capacity, unsigned jobs,
                           bool draining)
{
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        unsigned long long cum = 0;

        if (!f)
                return NULL;
        fputs("# HELP nsbox_serve_jobs_total Jobs answered, by result status (or verdict).\n"
              "# TYPE nsbox_serve_jobs_total counter\n", f);
        for (size_t i = 0; i < 8; i++)
                fprintf(f, "nsbox_serve_jobs_total{status=\"%s\"} %llu\n", status_names[i], m->status[i]);
        fputs("# HELP nsbox_serve_python_outcomes_total Python jobs answered, by outcome.\n"
              "# TYPE nsbox_serve_python_outcomes_total counter\n", f);
        for (size_t i = 0; i < 4; i++)
                fprintf(f, "nsbox_serve_python_outcomes_total{outcome=\"%s\"} %llu\n", outcome_names[i], m->outcome[i]);
        fputs("# HELP nsbox_serve_job_seconds Time from a job's request to its answer.\n"
              "# TYPE nsbox_serve_job_seconds histogram\n", f);
        for (size_t b = 0; b < SERVE_N_BUCKETS; b++) {
                cum += m->bucket[b];
                fprintf(f, "nsbox_serve_job_seconds_bucket{le=\"%g\"} %llu\n", bucket_le[b], cum);
        }
        fprintf(f, "nsbox_serve_job_seconds_bucket{le=\"+Inf\"} %llu\n", m->latency_count);
        fprintf(f, "nsbox_serve_job_seconds_sum %.6f\nnsbox_serve_job_seconds_count %llu\n", m->latency_sum,
                m->latency_count);
        fputs("# HELP nsbox_serve_refusals_total Requests refused, by reason.\n"
              "# TYPE nsbox_serve_refusals_total counter\n", f);
        for (size_t i = 0; i < REFUSE__MAX; i++)
                fprintf(f, "nsbox_serve_refusals_total{reason=\"%s\"} %llu\n", refusal_names[i], m->refused[i]);
        fprintf(f, "# HELP nsbox_serve_in_flight Jobs running, plus requests' jobs waiting in the service for a -j slot.\n"
                   "# TYPE nsbox_serve_in_flight gauge\nnsbox_serve_in_flight %u\n"
                   "# HELP nsbox_serve_capacity Jobs that may be in flight (-j plus --queue).\n"
                   "# TYPE nsbox_serve_capacity gauge\nnsbox_serve_capacity %u\n"
                   "# HELP nsbox_serve_jobs_at_once The engine's -j (by default the CPUs).\n"
                   "# TYPE nsbox_serve_jobs_at_once gauge\nnsbox_serve_jobs_at_once %u\n"
                   "# HELP nsbox_serve_starts_total Jobs answered, by how their sandbox started (warm: forked from a zygote).\n"
                   "# TYPE nsbox_serve_starts_total counter\nnsbox_serve_starts_total{start=\"warm\"} %llu\n"
                   "nsbox_serve_starts_total{start=\"cold\"} %llu\n"
                   "# HELP nsbox_serve_warm_fallbacks_total Jobs that ran cold under --warm (their start_reason says why).\n"
                   "# TYPE nsbox_serve_warm_fallbacks_total counter\nnsbox_serve_warm_fallbacks_total %llu\n"
                   "# HELP nsbox_serve_warm_slots Jobs that may start warm at once (the engines' -j under --warm; 0 cold).\n"
                   "# TYPE nsbox_serve_warm_slots gauge\nnsbox_serve_warm_slots %u\n"
                   "# HELP nsbox_serve_draining 1 while the service stops.\n"
                   "# TYPE nsbox_serve_draining gauge\nnsbox_serve_draining %d\n",
                in_flight, capacity, jobs, m->starts[0], m->starts[1], m->warm_fallbacks, m->warm_slots, draining ? 1 : 0);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
