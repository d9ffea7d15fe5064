/* serve/serve_http.c — libmicrohttpd's callbacks. Syscall layer.
 *
 * libmicrohttpd runs without a thread of its own (no
 * MHD_USE_INTERNAL_POLLING_THREAD): serve_loop.c polls its epoll fd and
 * calls MHD_run(). A request for a job is read whole (bounded), planned
 * (serve_plan.c), written to the engine as one line (serve_jobs.c), and its
 * connection suspended (MHD_suspend_connection); the engine's result line
 * resumes it with the answer (serve_map.c). The callbacks stay thin: read
 * under limits, hand on, write the answer.
 */
#include "serve/serve_state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/cleanup.h"
#include "util/json_cleanup.h"

#define CONNECTION_TIMEOUT_S 30u        /* an idle connection (or a slow client between two reads) is closed */
#define CONNECTION_LIMIT 1000u
#define RETRY_AFTER "1"
#define DISCARD_MAX (16u << 20)         /* body bytes read and dropped past --max-body to answer 413 cleanly */

/* ---- answers ---- */

static struct conn_track *track_of(struct MHD_Connection *c)
{
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

        return i ? i->socket_context : NULL;
}

/* An answer is queued on @c: the write deadline runs (for a /v1/batch
 * stream @stream, per line instead: see serve_http_enforce_read_deadline). */
static void track_writing(struct MHD_Connection *c, struct req *stream)
{
        struct conn_track *t = track_of(c);

        if (!t)
                return;
        t->writing = !stream;
        t->w0_ms = serve_now_ms();
        t->stream = stream;
}

static enum MHD_Result respond(struct serve *s, struct MHD_Connection *c, unsigned status, json_t *body,
                               const char *allow)
{
        AUTO(json_decref) json_t *owned = body;
        char *text = owned ? json_dumps(owned, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
        struct MHD_Response *resp;
        enum MHD_Result r;

        if (!text) {
                static const char oom[] = "{\"error\":{\"status\":500,\"message\":\"out of memory\"}}";
                resp = MHD_create_response_from_buffer(sizeof oom - 1, (void *) oom, MHD_RESPMEM_PERSISTENT);
                status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        } else {
                size_t n = strlen(text);
                text[n] = '\n';   /* json_dumps' NUL becomes the body's last newline */
                resp = MHD_create_response_from_buffer(n + 1, text, MHD_RESPMEM_MUST_FREE);
        }
        if (!resp) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        if (status == MHD_HTTP_METHOD_NOT_ALLOWED && allow)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
        if (status == MHD_HTTP_SERVICE_UNAVAILABLE || status == MHD_HTTP_GATEWAY_TIMEOUT)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER);
        if (status == MHD_HTTP_UNAUTHORIZED)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        if (s->drain != RUNNING)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        if (r == MHD_YES)
                track_writing(c, NULL);
        return r;
}

static enum MHD_Result respond_error(struct serve *s, struct MHD_Connection *c, unsigned status, const char *msg,
                                     const char *allow)
{
        int why = status == 400   ? REFUSE_BAD_REQUEST
                  : status == 401 ? REFUSE_UNAUTHORIZED
                  : status == 413 ? REFUSE_TOO_LARGE
                  : status == 503 || status == 504 ? (s->drain != RUNNING ? REFUSE_STOPPING : REFUSE_QUEUE_FULL)
                                  : -1;

        if (why >= 0)
                s->metrics.refused[why]++;
        return respond(s, c, status, serve_error_body(status, msg), allow);
}

static bool engines_ready(struct serve *s)
{
        for (unsigned p = 0; p < s->n_profiles; p++)
                if (!serve_cur_engine(s, p))
                        return false;
        return true;
}

static json_t *health(struct serve *s)
{
        /* without --profile the key is absent (docs/serve.md) */
        json_t *profiles = s->o->n_profiles ? json_array() : NULL;

        for (unsigned p = 0; profiles && p < s->o->n_profiles; p++)
                json_array_append_new(profiles, json_string(s->o->profiles[p]));
        const char *why = s->drain != RUNNING ? "the service is stopping (draining)"
                          : !engines_ready(s)    ? "a job engine is not running"
                                              : NULL;

        /* jobs: the engine's -j as it runs (its default: the CPUs) */
        json_t *h = json_pack("{s:b,s:s?,s:i,s:i,s:i,s:I,s:b,s:i}", "ready", why == NULL, "reason", why, "jobs",
                              (int) (s->capacity - s->o->queue), "queue", (int) s->o->queue, "in_flight",
                              (int) (s->n_inflight + s->n_waiting_single), "batch_waiting",
                              (json_int_t) (s->n_todo - s->n_waiting_single), "warm", s->o->warm,
                              "engines_started", (int) s->next_gen);

        if (h && profiles)
                json_object_set(h, "profiles", profiles);
        json_decref(profiles);
        return h;
}

static enum MHD_Result respond_metrics(struct serve *s, struct MHD_Connection *c)
{
        char *text = serve_metrics_render(&s->metrics, s->n_inflight + s->n_waiting_single, s->capacity, s->capacity - s->o->queue,
                                          s->drain != RUNNING);
        struct MHD_Response *resp;
        enum MHD_Result r;

        if (!text)
                return respond_error(s, c, 500, "out of memory", NULL);
        if (!(resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE))) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
        r = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        return r;
}

/* ---- requests ---- */

static enum MHD_Result submit(struct serve *s, struct req *r)
{
        struct nsb_error e;
        AUTO(json_decref) json_t *job = NULL;
        unsigned profile = 0;
        int k;

        if (s->drain != RUNNING)
                return respond_error(s, r->conn, 503, "the service is stopping: no new jobs", NULL);
        /* The bound: -j running plus --queue waiting (the engine reads a line
         * only when a worker is free; the rest wait in its pipe and ours). */
        if (s->n_inflight + s->n_waiting_single >= s->capacity)
                return respond_error(s, r->conn, s->o->queue_full_status, "the queue is full: retry later", NULL);
        nsb_error_clear(&e);
        k = r->route == ROUTE_RUN_CODE
                    ? serve_plan_run_code(s->o, r->body ? r->body : "", r->len, 0, &job, &profile, &e)
                    : serve_plan_v1_run(s->o, r->body ? r->body : "", r->len, 0, &job, &r->client_id, &profile, &e);
        if (k < 0)
                return respond_error(s, r->conn, 400, e.msg, NULL);
        if (!serve_cur_engine(s, profile))
                return respond_error(s, r->conn, 503, "the job engine is not running", NULL);
        if (serve_jobs_enqueue_single(s, r, job, profile) < 0)
                return respond_error(s, r->conn, 500, "out of memory", NULL);
        job = NULL;   /* the queue's */
        /* Suspended before the pump: a job the engine refuses at once is
         * answered by resuming it. */
        MHD_suspend_connection(r->conn);
        serve_jobs_pump(s);
        return MHD_YES;
}

/* The streamed answer of /v1/batch: lines as their jobs end. With none
 * ready, the connection is suspended until stream_line wakes it. */
static ssize_t batch_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
        struct req *r = cls;
        size_t n = r->out_len - r->out_pos;

        (void) pos;
        if (n > 0) {
                if (n > max)
                        n = max;
                memcpy(buf, r->out + r->out_pos, n);
                r->out_pos += n;
                /* taken: what is left has the deadline from now */
                r->out_since_ms = serve_now_ms();
                if (r->out_pos == r->out_len)
                        r->out_pos = r->out_len = 0, r->out_since_ms = 0;
                return (ssize_t) n;
        }
        if (r->written >= r->expected)
                return MHD_CONTENT_READER_END_OF_STREAM;
        r->stream_suspended = true;
        MHD_suspend_connection(r->conn);
        return 0;
}

#define BATCH_MAX_LINES 100000u

/* /v1/batch: every line planned now (a bad one is its own error line), the
 * jobs queued, the answer started: 200, JSON Lines in completion order. */
static enum MHD_Result submit_batch(struct serve *s, struct req *r)
{
        const char *p = r->body ? r->body : "", *end = p + r->len;
        struct MHD_Response *resp;
        enum MHD_Result res;
        size_t line = 0, n = 0;

        if (s->drain != RUNNING)
                return respond_error(s, r->conn, 503, "the service is stopping: no new jobs", NULL);
        for (const char *q = p; q < end; q++)
                n += *q == '\n';
        if (n + 1 > BATCH_MAX_LINES)
                return respond_error(s, r->conn, 413, "more than 100000 lines in one /v1/batch", NULL);
        if (!(r->todo = calloc(n + 1, sizeof *r->todo)))
                return respond_error(s, r->conn, 500, "out of memory", NULL);
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t len = nl ? (size_t) (nl - p) : (size_t) (end - p);
                struct nsb_error e;
                json_t *job = NULL, *cid = NULL;
                unsigned profile = 0;

                line++;
                if (strspn(p, " \t\r") < len) {   /* blank lines are skipped, as batch skips them */
                        r->expected++;
                        nsb_error_clear(&e);
                        if (serve_plan_v1_run(s->o, p, len, 0, &job, &cid, &profile, &e) < 0) {
                                char msg[NSB_ERROR_MSG_MAX + 32];
                                snprintf(msg, sizeof msg, "line %zu: %s", line, e.msg);
                                s->metrics.refused[REFUSE_BAD_REQUEST]++;
                                serve_jobs_stream_line(r, serve_batch_error_line(cid, line, "error", "config", msg));
                                json_decref(cid);
                        } else {
                                r->todo[r->n_todo++] = (struct todo){ .job = job, .client_id = cid, .line = line,
                                                                      .profile = profile };
                        }
                }
                p += len + (nl != NULL);
        }
        if (r->n_todo) {
                struct req **tail = &s->batches;
                while (*tail)
                        tail = &(*tail)->next_batch;
                *tail = r;
                s->n_todo += r->n_todo;
        }
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 65536, batch_reader, r, NULL);
        if (!resp)
                return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
        res = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        if (res == MHD_YES)
                track_writing(r->conn, r);
        serve_jobs_pump(s);
        return res;
}

static bool body_append(struct req *r, const char *data, size_t n, size_t max)
{
        if (r->too_big || n > max - r->len) {
                r->too_big = true;   /* the rest is read and dropped; 413 at the end */
                return false;
        }
        if (r->cap - r->len < n + 1) {
                size_t cap = r->cap ? r->cap : 4096;
                char *nb;
                while (cap - r->len < n + 1)
                        cap *= 2;
                if (!(nb = realloc(r->body, cap)))
                        return r->too_big = true, false;
                r->body = nb;
                r->cap = cap;
        }
        memcpy(r->body + r->len, data, n);
        r->len += n;
        r->body[r->len] = '\0';
        return true;
}

static void headers_seen(struct MHD_Connection *c)
{
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        struct conn_track *t = i ? i->socket_context : NULL;

        if (t)
                t->headers_seen = true;
}

/* The first call for a request: its headers are in. Auth, route, the
 * declared length. An error is answered once the body is read (and
 * dropped), so a client still sending it reads the answer instead of a
 * reset; past --max-body + DISCARD_MAX nothing more is read: 413 at once. */
static enum MHD_Result first_call(struct serve *s, struct req *r, const char *url, const char *method)
{
        const char *auth = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
        const char *clen = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *path, *allow;
        unsigned status;

        headers_seen(r->conn);   /* the header deadline is over; the read deadline runs on */

        if (clen && strtoull(clen, NULL, 10) > s->o->max_body + DISCARD_MAX)
                return respond_error(s, r->conn, 413, "the body is larger than --max-body", NULL);
        if (clen && strtoull(clen, NULL, 10) > s->o->max_body)
                r->too_big = true;   /* read and dropped, then 413: the client reads it */
        /* The token is compared, never echoed: no answer quotes the URL. */
        if (!serve_authorized(s->token, s->token_len, auth, url, &path)) {
                r->early_status = 401;
                r->early_msg = "a valid token is needed (Authorization: Bearer TOKEN)";
                return MHD_YES;
        }
        status = serve_route_of(method, path, &r->route, &allow);
        if (status == 404) {
                r->early_status = 404;
                r->early_msg = "no such endpoint (POST /run_code, POST /v1/run, POST /v1/batch, GET /v1/health, GET /metrics)";
        } else if (status == 405) {
                r->early_status = 405;
                r->early_msg = allow && strcmp(allow, "GET") == 0 ? "use GET" : "use POST";
                r->early_allow = allow;
        }
        return MHD_YES;
}

static void track_reading(struct MHD_Connection *c, bool reading)
{
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        struct conn_track *t = i ? i->socket_context : NULL;

        if (!t)
                return;
        t->reading = reading;
        if (reading) {
                t->t0_ms = serve_now_ms();
                t->writing = false;   /* the answer was taken whole (or the request ended) */
                t->stream = NULL;
        }
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode what)
{
        struct serve *s = cls;
        struct conn_track *t = *socket_context;

        if (what == MHD_CONNECTION_NOTIFY_STARTED) {
                if (!(t = calloc(1, sizeof *t)))
                        return;   /* untracked: only the inactivity timeout bounds it */
                *t = (struct conn_track){ .conn = c, .t0_ms = serve_now_ms(), .reading = true, .next = s->conns };
                s->conns = t;
                *socket_context = t;
                return;
        }
        for (struct conn_track **p = &s->conns; t && *p; p = &(*p)->next)
                if (*p == t) {
                        *p = t->next;
                        free(t);
                        break;
                }
        *socket_context = NULL;
}

/* A client that does not take its answer within --write-deadline (a
 * /v1/batch's: each line within it of its coming) holds its connection
 * and the answer's memory: shut down, as a slow sender is. 1: it was. */
static bool slow_reader(struct serve *s, struct conn_track *t, double now)
{
        double limit = s->o->write_deadline_s * 1e3, since = t->stream ? t->stream->out_since_ms : t->w0_ms;
        const union MHD_ConnectionInfo *i;

        if ((!t->writing && !t->stream) || since <= 0 || now - since <= limit)
                return false;
        t->writing = false;
        t->stream = NULL;
        i = MHD_get_connection_info(t->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (i && shutdown(i->connect_fd, SHUT_RDWR) == 0)
                s->metrics.refused[REFUSE_SLOW_READER]++;
        return true;
}

/* A connection still reading its request past the deadline is shut down:
 * libmicrohttpd sees its end and closes it. It holds no job (a job starts
 * only once its whole request is in), only a connection slot. */
void serve_http_enforce_read_deadline(struct serve *s)
{
        serve_jobs_drop_abandoned(s);
        double now = serve_now_ms(), limit = s->o->read_deadline_s * 1e3, hlimit = s->o->header_deadline_s * 1e3;

        if (hlimit > limit)
                hlimit = limit;   /* the read deadline covers the header too */

        for (struct conn_track *t = s->conns; t; t = t->next) {
                const union MHD_ConnectionInfo *i;

                /* A new connection that has not sent a whole header within
                 * the header deadline holds a slot for nothing (a token is
                 * checked only once the header is in): cut sooner. */
                if (slow_reader(s, t, now))
                        continue;
                if (!t->reading || now - t->t0_ms <= (t->headers_seen ? limit : hlimit))
                        continue;
                t->reading = false;
                i = MHD_get_connection_info(t->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                if (i && shutdown(i->connect_fd, SHUT_RDWR) == 0)
                        s->metrics.refused[REFUSE_SLOW_CLIENT]++;
        }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
        struct serve *s = cls;
        struct req *r = *con_cls;

        (void) version;
        if (!r) {
                if (!(r = calloc(1, sizeof *r)))
                        return MHD_NO;
                r->s = s;
                r->conn = c;
                *con_cls = r;
                return first_call(s, r, url, method);
        }
        if (*upload_size) {
                size_t n = *upload_size;

                *upload_size = 0;
                /* An error's body is not kept, and no body is read past
                 * --max-body (a chunked one declares no length): 413 now,
                 * and the connection closes after it. */
                r->received += n;
                if (r->received > s->o->max_body + DISCARD_MAX)
                        return respond_error(s, c, 413, "the body is larger than --max-body", NULL);
                if (!r->early_status && !r->too_big)
                        body_append(r, upload, n, s->o->max_body);
                return MHD_YES;
        }
        track_reading(c, false);   /* the whole request is in: no deadline while it is answered */
        if (r->answer) {   /* resumed: its result came */
                json_t *a = r->answer;
                r->answer = NULL;
                return respond(s, c, r->answer_status, a, NULL);
        }
        if (r->early_status)
                return respond_error(s, c, r->early_status, r->early_msg, r->early_allow);
        if (r->too_big)
                return respond_error(s, c, 413, "the body is larger than --max-body", NULL);
        if (r->route == ROUTE_HEALTH) {
                bool ready = s->drain == RUNNING && engines_ready(s);
                return respond(s, c, ready ? 200 : 503, health(s), NULL);
        }
        if (r->route == ROUTE_METRICS)
                return respond_metrics(s, c);
        if (r->route == ROUTE_V1_BATCH)
                return submit_batch(s, r);
        return submit(s, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
        struct serve *s = cls;
        struct req *r = *con_cls;

        (void) why;
        track_reading(c, true);   /* kept alive: the next request's deadline starts now */
        if (!r)
                return;
        serve_jobs_forget(s, r);
        json_decref(r->answer);
        json_decref(r->client_id);
        free(r->todo);
        free(r->out);
        free(r->body);
        free(r);
        *con_cls = NULL;
}


struct MHD_Daemon *serve_http_start(struct serve *s, int listen_fd)
{
        /* No MHD_USE_INTERNAL_POLLING_THREAD: MHD makes no thread, and its
         * epoll fd is polled by serve_loop.c (STYLE 14: no thread in a
         * process whose children clone sandboxes). */
        return MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request, s,
                                MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                                MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
                                CONNECTION_LIMIT,
                                /* One address cannot take every slot with idle
                                 * connections (no token is needed to open one).
                                 * MHD counts IPv4/IPv6 peers only: a unix
                                 * socket's are let through. */
                                MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int) s->o->per_ip, MHD_OPTION_END);
}
