/* serve/serve_http.c — libmicrohttpd and the service's one loop. Syscall layer.
 *
 * libmicrohttpd runs without a thread of its own (no
 * MHD_USE_INTERNAL_POLLING_THREAD): its epoll fd sits in this process's
 * poll() next to the engine's pipes and the signalfd, and MHD_run() is
 * called from here. A request for a job is read whole (bounded), planned
 * (serve_plan.c), written to the engine as one line, and its connection
 * suspended (MHD_suspend_connection); the engine's result line with the
 * same id resumes it with the answer (serve_map.c). The callbacks stay thin:
 * read under limits, hand on, write the answer.
 */
#include "serve/serve_http.h"

#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serve/serve_engine.h"
#include "util/cleanup.h"
#include "util/json_cleanup.h"

#define CONNECTION_TIMEOUT_S 30u        /* an idle connection (or a slow client between two reads) is closed */
#define CONNECTION_LIMIT 1000u
#define DRAIN_GRACE_MS 2000.0           /* idle keep-alive clients, once every answer is sent */
#define RETRY_AFTER "1"
#define DISCARD_MAX (16u << 20)         /* body bytes read and dropped past --max-body to answer 413 cleanly */

enum drain { RUNNING = 0, DRAINING, CANCELLING };

struct req {
        struct serve *s;
        struct MHD_Connection *conn;
        enum serve_route route;
        char *body;
        size_t len, cap;
        bool too_big;
        size_t received;                /* body bytes so far, kept or not */
        unsigned early_status;          /* an error found from the headers, answered once the body is read */
        const char *early_msg;
        const char *early_allow;
        json_t *client_id;              /* /v1/run: the id the client gave */
        json_t *answer;                 /* set when the result line came; sent when resumed */
        unsigned answer_status;
        /* /v1/batch: its jobs wait in @todo until the engine has room; their
         * lines collect in @out, which the streamed answer sends. */
        struct todo *todo;
        size_t n_todo, next_todo;
        char *out;
        size_t out_len, out_cap, out_pos;
        size_t expected, written;       /* lines the answer will hold; lines in @out so far */
        bool stream_suspended;          /* the answer's reader waits for a line */
        struct req *next_batch;         /* the list of batches with jobs still to send */
};

/* A job line of a /v1/batch body, not yet sent to the engine. */
struct todo {
        json_t *job;
        json_t *client_id;
        size_t line;
};

/* A job in the engine: the request its result line answers. */
struct job_ref {
        json_int_t id;                  /* the service's id (the engine's line carries it) */
        struct req *r;                  /* NULL: its client is gone (the line is dropped) */
        json_t *client_id;              /* /v1/batch: the id the client gave this line */
        size_t line;                    /* /v1/batch: the body's line */
        double t0_ms;                   /* when it went to the engine */
        struct job_ref *next;
};

/* A connection, for the read deadline: libmicrohttpd's own timeout is one
 * of inactivity, which a client trickling a byte at a time never reaches. */
struct conn_track {
        struct MHD_Connection *conn;
        double t0_ms;                   /* when it began waiting for a request */
        bool reading;                   /* a request is (or may be) arriving: the deadline runs */
        struct conn_track *next;
};

struct serve {
        const struct serve_opts *o;
        struct MHD_Daemon *d;
        struct serve_engine eng;
        const char *token;
        size_t token_len;
        struct job_ref *inflight;       /* jobs in the engine */
        unsigned n_inflight;
        struct req *batches;            /* /v1/batch requests with job lines still to send */
        size_t n_todo;                  /* those lines, all batches together */
        json_int_t next_id;
        enum drain drain;
        double drained_at_ms;           /* when the last answer of a drain was handed to MHD; 0: not yet */
        int engine_status;              /* its wait status once it ended */
        bool engine_failed;             /* it ended at start (bad options): the service stops */
        double engine_started_ms;
        bool cancelled_some;            /* a second signal found jobs left */
        unsigned capacity;              /* jobs in flight at most: -j (or the CPUs) + --queue */
        struct serve_metrics metrics;
        struct conn_track *conns;
        const char *unix_path;          /* removed at exit */
};

/* What the engine's -j defaults to: the CPUs this process may run on. */
static unsigned cpus(void)
{
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
                return (unsigned) CPU_COUNT(&set);
        return 1;
}

static double now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

/* ---- answers ---- */

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
        if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER);
        if (status == MHD_HTTP_UNAUTHORIZED)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        if (s->drain != RUNNING)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        r = MHD_queue_response(c, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static enum MHD_Result respond_error(struct serve *s, struct MHD_Connection *c, unsigned status, const char *msg,
                                     const char *allow)
{
        int why = status == 400   ? REFUSE_BAD_REQUEST
                  : status == 401 ? REFUSE_UNAUTHORIZED
                  : status == 413 ? REFUSE_TOO_LARGE
                  : status == 503 ? (s->drain != RUNNING ? REFUSE_STOPPING : REFUSE_QUEUE_FULL)
                                  : -1;

        if (why >= 0)
                s->metrics.refused[why]++;
        return respond(s, c, status, serve_error_body(status, msg), allow);
}

static json_t *health(const struct serve *s)
{
        const char *why = s->drain != RUNNING ? "the service is stopping (draining)"
                          : s->eng.pid <= 0   ? "the job engine is not running"
                                              : NULL;

        /* jobs: the engine's -j as it runs (its default: the CPUs) */
        return json_pack("{s:b,s:s?,s:i,s:i,s:i,s:I,s:b}", "ready", why == NULL, "reason", why, "jobs",
                         (int) (s->capacity - s->o->queue), "queue", (int) s->o->queue, "in_flight",
                         (int) s->n_inflight, "batch_waiting", (json_int_t) s->n_todo, "warm", s->o->warm);
}

static enum MHD_Result respond_metrics(struct serve *s, struct MHD_Connection *c)
{
        char *text = serve_metrics_render(&s->metrics, s->n_inflight, s->capacity, s->capacity - s->o->queue,
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

/* ---- the in-flight list ---- */

static struct job_ref *ref_add(struct serve *s, json_int_t id, struct req *r, json_t *client_id, size_t line)
{
        struct job_ref *ref = calloc(1, sizeof *ref);

        if (!ref)
                return NULL;
        *ref = (struct job_ref){ .id = id, .r = r, .client_id = client_id ? json_incref(client_id) : NULL,
                                 .line = line, .t0_ms = now_ms(), .next = s->inflight };
        s->inflight = ref;
        s->n_inflight++;
        return ref;
}

static struct job_ref *ref_take(struct serve *s, json_int_t id)
{
        for (struct job_ref **p = &s->inflight; *p; p = &(*p)->next)
                if ((*p)->id == id) {
                        struct job_ref *ref = *p;
                        *p = ref->next;
                        s->n_inflight--;
                        return ref;
                }
        return NULL;
}

static void ref_free(struct job_ref *ref)
{
        json_decref(ref->client_id);
        free(ref);
}

/* Hand a single request its answer and wake its connection. */
static void answer(struct req *r, unsigned status, json_t *body)
{
        r->answer = body ? body : serve_error_body(500, "out of memory");
        r->answer_status = status;
        MHD_resume_connection(r->conn);
}

/* One more line of a /v1/batch answer (@line stolen); wakes its reader. */
static void stream_line(struct req *r, json_t *line)
{
        char *text = line ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
        size_t n = text ? strlen(text) : 0;

        json_decref(line);
        if (text && r->out_cap - r->out_len < n + 1) {
                size_t cap = r->out_cap ? r->out_cap : 65536;
                char *nb;
                while (cap - r->out_len < n + 1)
                        cap *= 2;
                if ((nb = realloc(r->out, cap))) {
                        r->out = nb;
                        r->out_cap = cap;
                }
        }
        if (text && r->out_cap - r->out_len >= n + 1) {
                memcpy(r->out + r->out_len, text, n);
                r->out[r->out_len + n] = '\n';
                r->out_len += n + 1;
        }
        free(text);   /* out of memory: the line is lost, the count still ends the answer */
        r->written++;
        if (r->stream_suspended) {
                r->stream_suspended = false;
                MHD_resume_connection(r->conn);
        }
}

static void pump(struct serve *s);

static void on_line(void *ctx, const char *text, size_t len)
{
        struct serve *s = ctx;
        AUTO(json_decref) json_t *line = json_loadb(text, len, 0, NULL);
        json_t *id = line ? json_object_get(line, "id") : NULL;
        struct job_ref *ref;
        struct req *r;

        if (!json_is_integer(id)) {
                fprintf(stderr, "nsbox serve: the engine wrote a line without a job id (ignored)\n");
                return;
        }
        if (!(ref = ref_take(s, json_integer_value(id))))
                return;
        r = ref->r;
        if (serve_line_is_bad_request(line)) {   /* a refusal, not a job */
                s->metrics.refused[REFUSE_BAD_REQUEST]++;
                if (r && r->route == ROUTE_V1_BATCH) {
                        char msg[NSB_ERROR_MSG_MAX + 32];   /* the body's line, not the engine's */
                        snprintf(msg, sizeof msg, "line %zu: %s", ref->line, serve_bad_request_message(line));
                        stream_line(r, serve_batch_error_line(ref->client_id, ref->line, "error", "config", msg));
                } else if (r)
                        answer(r, MHD_HTTP_BAD_REQUEST, serve_error_body(400, serve_bad_request_message(line)));
        } else {
                serve_metrics_job(&s->metrics, line, (now_ms() - ref->t0_ms) / 1e3);
                if (r && r->route == ROUTE_RUN_CODE)
                        answer(r, MHD_HTTP_OK, serve_map_run_code(line));
                else if (r && r->route == ROUTE_V1_RUN)
                        answer(r, MHD_HTTP_OK, serve_map_v1_run(line, r->client_id));
                else if (r)
                        stream_line(r, serve_map_batch_line(line, ref->client_id, ref->line));
        }
        ref_free(ref);
        pump(s);   /* a slot is free: the next batch line */
}

static void drop_todo(struct serve *s, struct req *r, const char *why)
{
        for (size_t i = r->next_todo; i < r->n_todo; i++) {
                if (why)
                        stream_line(r, serve_batch_error_line(r->todo[i].client_id, r->todo[i].line, "cancelled",
                                                              "supervise", why));
                json_decref(r->todo[i].job);
                json_decref(r->todo[i].client_id);
        }
        s->n_todo -= r->n_todo - r->next_todo;
        r->next_todo = r->n_todo;
        for (struct req **p = &s->batches; *p; p = &(*p)->next_batch)
                if (*p == r) {
                        *p = r->next_batch;
                        break;
                }
}

/* Every request still waiting gets its answer: no job will end. */
static void fail_inflight(struct serve *s, const char *why)
{
        while (s->batches)
                drop_todo(s, s->batches, why);
        while (s->inflight) {
                struct job_ref *ref = ref_take(s, s->inflight->id);
                struct req *r = ref->r;

                if (r && r->route == ROUTE_RUN_CODE)
                        answer(r, MHD_HTTP_OK, serve_map_run_code_error(why));
                else if (r && r->route == ROUTE_V1_RUN)
                        answer(r, MHD_HTTP_SERVICE_UNAVAILABLE, serve_error_body(503, why));
                else if (r)
                        stream_line(r, serve_batch_error_line(ref->client_id, ref->line, "cancelled", "supervise", why));
                ref_free(ref);
        }
}

/* @job (its id set here) to the engine, answered to @r. */
static int send_job(struct serve *s, json_t *job, struct req *r, json_t *client_id, size_t line)
{
        json_int_t id = ++s->next_id;
        AUTOFREE char *text = NULL;
        size_t n;

        if (json_object_set_new(job, "id", json_integer(id)) || !(text = json_dumps(job, JSON_COMPACT)))
                return -ENOMEM;
        n = strlen(text);
        text[n] = '\n';
        if (serve_engine_send(&s->eng, text, n + 1) < 0)
                return -EPIPE;
        return ref_add(s, id, r, client_id, line) ? 0 : -ENOMEM;
}

/* Batch lines go to the engine while it has room, oldest batch first.
 * Single requests that find no room get 503; a batch's lines wait. */
static void pump(struct serve *s)
{
        while (s->batches && s->n_inflight < s->capacity && s->eng.pid > 0 && s->eng.in_fd >= 0) {
                struct req *r = s->batches;
                struct todo *t = &r->todo[r->next_todo];

                if (send_job(s, t->job, r, t->client_id, t->line) < 0)
                        stream_line(r, serve_batch_error_line(t->client_id, t->line, "error", "supervise",
                                                              "the job engine did not take this job"));
                json_decref(t->job);
                json_decref(t->client_id);
                r->next_todo++;
                s->n_todo--;
                if (r->next_todo == r->n_todo)
                        drop_todo(s, r, NULL);   /* all sent: off the list */
        }
}

/* ---- requests ---- */

static enum MHD_Result submit(struct serve *s, struct req *r)
{
        struct nsb_error e;
        AUTO(json_decref) json_t *job = NULL;
        int k;

        if (s->drain != RUNNING)
                return respond_error(s, r->conn, 503, "the service is stopping: no new jobs", NULL);
        if (s->eng.pid <= 0 || s->eng.in_fd < 0)
                return respond_error(s, r->conn, 503, "the job engine is not running", NULL);
        /* The bound: -j running plus --queue waiting (the engine reads a line
         * only when a worker is free; the rest wait in its pipe and ours). */
        if (s->n_inflight >= s->capacity)
                return respond_error(s, r->conn, 503, "the queue is full: retry later", NULL);
        nsb_error_clear(&e);
        k = r->route == ROUTE_RUN_CODE ? serve_plan_run_code(r->body ? r->body : "", r->len, 0, &job, &e)
                                       : serve_plan_v1_run(r->body ? r->body : "", r->len, 0, &job, &r->client_id, &e);
        if (k < 0)
                return respond_error(s, r->conn, 400, e.msg, NULL);
        k = send_job(s, job, r, NULL, 0);
        if (k < 0)
                return respond_error(s, r->conn, k == -EPIPE ? 503 : 500,
                                     k == -EPIPE ? "the job engine is not running" : "out of memory", NULL);
        MHD_suspend_connection(r->conn);
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
                if (r->out_pos == r->out_len)
                        r->out_pos = r->out_len = 0;
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

                line++;
                if (strspn(p, " \t\r") < len) {   /* blank lines are skipped, as batch skips them */
                        r->expected++;
                        nsb_error_clear(&e);
                        if (serve_plan_v1_run(p, len, 0, &job, &cid, &e) < 0) {
                                char msg[NSB_ERROR_MSG_MAX + 32];
                                snprintf(msg, sizeof msg, "line %zu: %s", line, e.msg);
                                s->metrics.refused[REFUSE_BAD_REQUEST]++;
                                stream_line(r, serve_batch_error_line(cid, line, "error", "config", msg));
                                json_decref(cid);
                        } else {
                                r->todo[r->n_todo++] = (struct todo){ .job = job, .client_id = cid, .line = line };
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
        pump(s);
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
        if (reading)
                t->t0_ms = now_ms();
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode what)
{
        struct serve *s = cls;
        struct conn_track *t = *socket_context;

        if (what == MHD_CONNECTION_NOTIFY_STARTED) {
                if (!(t = calloc(1, sizeof *t)))
                        return;   /* untracked: only the inactivity timeout bounds it */
                *t = (struct conn_track){ .conn = c, .t0_ms = now_ms(), .reading = true, .next = s->conns };
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

/* A connection still reading its request past the deadline is shut down:
 * libmicrohttpd sees its end and closes it. It holds no job (a job starts
 * only once its whole request is in), only a connection slot. */
static void enforce_read_deadline(struct serve *s)
{
        double now = now_ms(), limit = s->o->read_deadline_s * 1e3;

        for (struct conn_track *t = s->conns; t; t = t->next) {
                const union MHD_ConnectionInfo *i;

                if (!t->reading || now - t->t0_ms <= limit)
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
                bool ready = s->drain == RUNNING && s->eng.pid > 0;
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
        /* Its jobs still in the engine run on (nothing cancels one job of
         * a batch engine); their lines, when they come, find no one. */
        for (struct job_ref *ref = s->inflight; ref; ref = ref->next)
                if (ref->r == r)
                        ref->r = NULL;
        drop_todo(s, r, NULL);
        json_decref(r->answer);
        json_decref(r->client_id);
        free(r->todo);
        free(r->out);
        free(r->body);
        free(r);
        *con_cls = NULL;
}

/* ---- the loop ---- */

static unsigned connections(struct serve *s)
{
        const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        return i ? i->num_connections : 0;
}

static void start_drain(struct serve *s)
{
        MHD_socket lfd;

        s->drain = DRAINING;
        /* No new connections; those open get 503 for a new request. */
        lfd = MHD_quiesce_daemon(s->d);
        if (lfd != MHD_INVALID_SOCKET)
                close(lfd);
        if (s->unix_path)
                unlink(s->unix_path);
        fprintf(stderr, "nsbox serve: stopping: %u job(s) in flight finish, new ones are refused\n", s->n_inflight);
}

static void on_signal(struct serve *s, int sfd)
{
        struct signalfd_siginfo si;

        while (read(sfd, &si, sizeof si) == (ssize_t) sizeof si) {
                if (s->drain == RUNNING) {
                        start_drain(s);
                } else if (s->drain == DRAINING) {
                        /* A second signal: what is left is cancelled, each
                         * answered as cancelled when the engine has stopped. */
                        s->drain = CANCELLING;
                        s->cancelled_some = s->n_inflight > 0 || s->n_todo > 0;
                        fprintf(stderr, "nsbox serve: cancelling the %u job(s) left\n", s->n_inflight);
                        if (s->eng.pid > 0)
                                kill(s->eng.pid, SIGTERM);
                }
        }
}

static int engine_ended(struct serve *s)
{
        s->engine_status = serve_engine_reap(&s->eng);
        fail_inflight(s, s->drain == CANCELLING ? "cancelled: the service was stopped before this job ended"
                                                : "the job engine ended before this job did");
        if (s->drain != RUNNING)
                return 0;
        if (now_ms() - s->engine_started_ms < 1000.0) {
                /* it ended at once: its options (after `--`) or the host */
                s->engine_failed = true;
                return -1;
        }
        fprintf(stderr, "nsbox serve: the job engine ended (wait status %d); starting a new one\n", s->engine_status);
        return 1;
}

static int drain_done(struct serve *s)
{
        if (s->drain == RUNNING || s->n_inflight || s->n_todo)
                return 0;
        if (s->eng.in_fd >= 0 && s->eng.olen == 0)
                serve_engine_close_input(&s->eng);   /* no job left: the engine ends */
        if (s->eng.pid > 0)
                return 0;
        if (s->drained_at_ms == 0)
                s->drained_at_ms = now_ms();
        return connections(s) == 0 || now_ms() - s->drained_at_ms > DRAIN_GRACE_MS;
}

static int loop(struct serve *s, int sfd, int mhd_fd, struct nsb_error *e)
{
        for (;;) {
                struct pollfd p[4];
                nfds_t n = 0;
                int i_out = -1, i_in = -1, timeout = -1;
                MHD_UNSIGNED_LONG_LONG to;

                p[n++] = (struct pollfd){ sfd, POLLIN, 0 };
                p[n++] = (struct pollfd){ mhd_fd, POLLIN, 0 };
                if (s->eng.out_fd >= 0)
                        p[i_out = (int) n++] = (struct pollfd){ s->eng.out_fd, POLLIN, 0 };
                if (s->eng.in_fd >= 0 && s->eng.olen)
                        p[i_in = (int) n++] = (struct pollfd){ s->eng.in_fd, POLLOUT, 0 };
                if (MHD_get_timeout(s->d, &to) == MHD_YES)
                        timeout = to > 60000 ? 60000 : (int) to;
                if (s->drain != RUNNING && (timeout < 0 || timeout > 100))
                        timeout = 100;
                if (s->conns && (timeout < 0 || timeout > 500))
                        timeout = 500;   /* the read deadline is checked twice a second */
                if (poll(p, n, timeout) < 0 && errno != EINTR)
                        return nsb_fail(e, NSB_STAGE_SUPERVISE, errno, "poll");
                if (p[0].revents)
                        on_signal(s, sfd);
                if (i_in >= 0 && p[i_in].revents)
                        (void) serve_engine_flush(&s->eng);   /* a closed pipe shows as EOF on its stdout */
                if (i_out >= 0 && p[i_out].revents && serve_engine_read(&s->eng, on_line, s) == 0) {
                        int k = engine_ended(s);
                        if (k > 0 && serve_engine_start(&s->eng, s->o, e) < 0)
                                return -EIO;
                        if (k > 0)
                                s->engine_started_ms = now_ms();
                        if (k < 0)
                                start_drain(s);
                }
                MHD_run(s->d);
                enforce_read_deadline(s);
                if (drain_done(s))
                        return 0;
        }
}

int serve_http_run(const struct serve_opts *o, int listen_fd, const char *token, size_t token_len,
                   const char *where, struct nsb_error *e)
{
        struct serve s = { .o = o, .token = token, .token_len = token_len };
        const union MHD_DaemonInfo *info;
        sigset_t stop;
        AUTOCLOSE int sfd = -1;
        int r;

        if (o->listen_kind == SERVE_LISTEN_UNIX)
                s.unix_path = o->unix_path;
        s.capacity = (o->jobs ? o->jobs : cpus()) + o->queue;
        /* SIGTERM/SIGINT/SIGHUP drain through a signalfd read in the loop;
         * SIGPIPE is ignored (a client gone, the engine gone: both are
         * seen as errors where they happen). */
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGHUP);
        signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &stop, NULL) < 0 || (sfd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                close(listen_fd);
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "signalfd");
        }
        if (serve_engine_start(&s.eng, o, e) < 0) {
                close(listen_fd);
                return -EIO;
        }
        s.engine_started_ms = now_ms();
        /* No MHD_USE_INTERNAL_POLLING_THREAD: MHD makes no thread, and its
         * epoll fd is polled here (STYLE 14: no thread in a process whose
         * children clone sandboxes). */
        s.d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, on_request, &s,
                               MHD_OPTION_LISTEN_SOCKET, listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s,
                               MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s,
                               MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
                               CONNECTION_LIMIT, MHD_OPTION_END);
        if (!s.d || !(info = MHD_get_daemon_info(s.d, MHD_DAEMON_INFO_EPOLL_FD))) {
                close(listen_fd);
                serve_engine_close_input(&s.eng);
                serve_engine_reap(&s.eng);
                return nsb_fail(e, NSB_STAGE_PREPARE, EIO, "libmicrohttpd could not start on %s", where);
        }
        fprintf(stderr, "nsbox serve: listening on %s (-j %u, queue %u, %s)\n", where, o->jobs, o->queue,
                o->warm ? "warm" : "cold");
        r = loop(&s, sfd, info->epoll_fd, e);
        if (s.eng.pid > 0) {
                kill(s.eng.pid, SIGTERM);
                s.engine_status = serve_engine_reap(&s.eng);
        }
        fail_inflight(&s, "the service stopped");
        MHD_stop_daemon(s.d);
        if (s.unix_path && s.drain == RUNNING)
                unlink(s.unix_path);
        if (r < 0)
                return r;
        if (s.engine_failed)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "the job engine (nsbox batch) ended at once (wait status %d): see its message above",
                                s.engine_status);
        return s.cancelled_some ? 1 : 0;
}
