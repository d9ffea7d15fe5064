/* serve/serve_map.c — result lines turned into responses. Pure.
 *
 * SandboxFusion's /run_code mapping (docs/serve.md has the table): a
 * sandbox failure is SandboxError, never Failed; a limit is Failed (its
 * run_result says which), never Success; Success is exactly "exited 0". */
#include "serve/serve.h"

#include <stdio.h>
#include <string.h>

#include "util/json_cleanup.h"

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

json_t *serve_error_body(unsigned status, const char *message)
{
        return json_pack("{s:{s:i,s:s}}", "error", "status", (int) status, "message", message ? message : "");
}

static const char *stream_text(const json_t *line, const char *name)
{
        const char *t = json_string_value(json_object_get(json_object_get(line, name), "text"));
        return t ? t : "";
}

static json_t *sandbox_error(const char *message)
{
        return json_pack("{s:s,s:s,s:n,s:n,s:{}}", "status", "SandboxError", "message", message, "compile_result",
                         "run_result", "files");
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
        json_t *rc = json_null();
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
                run_status = time ? "TimeLimitExceeded" : "Error";
                snprintf(message, sizeof message, "stopped by the %s limit", limit ? limit : "unknown");
        } else {
                snprintf(message, sizeof message, "unknown result status \"%.32s\"", status);
                json_decref(rc);
                return sandbox_error(message);
        }
        return json_pack("{s:s,s:s,s:n,s:{s:s,s:f,s:o,s:s,s:s},s:{}}", "status", top, "message", message,
                         "compile_result", "run_result", "status", run_status, "execution_time",
                         json_is_number(wall) ? json_number_value(wall) / 1000.0 : 0.0, "return_code", rc, "stdout",
                         stream_text(line, "stdout"), "stderr", stream_text(line, "stderr"), "files");
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
