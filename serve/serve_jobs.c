/* serve/serve_jobs.c — the jobs in the engine and the requests they
 * answer. Syscall layer (it resumes libmicrohttpd connections).
 *
 * One job_ref per job line sent; the engine's result line with its id ends
 * it: a single request (/run_code, /v1/run) gets its answer and is resumed;
 * a /v1/batch request gets one more line of its streamed answer. A batch's
 * lines wait in its todo list and enter the engine as it has room. */
#include "serve/serve_state.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/cleanup.h"
#include "util/json_cleanup.h"

double serve_now_ms(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec * 1e3 + (double) t.tv_nsec / 1e6;
}

static struct job_ref *ref_add(struct serve *s, json_int_t id, struct req *r, json_t *client_id, size_t line,
                               unsigned gen)
{
        struct job_ref *ref = calloc(1, sizeof *ref);

        if (!ref)
                return NULL;
        *ref = (struct job_ref){ .id = id, .r = r, .client_id = client_id ? json_incref(client_id) : NULL,
                                 .line = line, .t0_ms = serve_now_ms(), .gen = gen, .next = s->inflight };
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
void serve_jobs_stream_line(struct req *r, json_t *line)
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
                if (r->out_len == r->out_pos)
                        r->out_since_ms = serve_now_ms();   /* the write deadline runs for it */
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

void serve_jobs_on_line(void *ctx, const char *text, size_t len)
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
                        serve_jobs_stream_line(r, serve_batch_error_line(ref->client_id, ref->line, "error", "config", msg));
                } else if (r)
                        answer(r, MHD_HTTP_BAD_REQUEST, serve_error_body(400, serve_bad_request_message(line)));
        } else {
                serve_metrics_job(&s->metrics, line, (serve_now_ms() - ref->t0_ms) / 1e3);
                if (r && r->route == ROUTE_RUN_CODE)
                        answer(r, MHD_HTTP_OK, serve_map_run_code(line));
                else if (r && r->route == ROUTE_V1_RUN)
                        answer(r, MHD_HTTP_OK, serve_map_v1_run(line, r->client_id));
                else if (r)
                        serve_jobs_stream_line(r, serve_map_batch_line(line, ref->client_id, ref->line));
        }
        ref_free(ref);
        serve_jobs_pump(s);   /* a slot is free: the next batch line */
}

static bool is_single(const struct req *r)
{
        return r->route != ROUTE_V1_BATCH;
}

/* A single request's job that ended without a result line. */
static void answer_unrun(struct req *r, const char *why)
{
        if (r->route == ROUTE_RUN_CODE)
                answer(r, MHD_HTTP_OK, serve_map_run_code_error(why));
        else
                answer(r, MHD_HTTP_SERVICE_UNAVAILABLE, serve_error_body(503, why));
}

static void drop_todo(struct serve *s, struct req *r, const char *why)
{
        for (size_t i = r->next_todo; i < r->n_todo; i++) {
                if (why && is_single(r))
                        answer_unrun(r, why);
                else if (why)
                        serve_jobs_stream_line(r, serve_batch_error_line(r->todo[i].client_id, r->todo[i].line, "cancelled",
                                                              "supervise", why));
                json_decref(r->todo[i].job);
                json_decref(r->todo[i].client_id);
        }
        if (is_single(r))
                s->n_waiting_single -= (unsigned) (r->n_todo - r->next_todo);
        s->n_todo -= r->n_todo - r->next_todo;
        r->next_todo = r->n_todo;
        for (struct req **p = &s->batches; *p; p = &(*p)->next_batch)
                if (*p == r) {
                        *p = r->next_batch;
                        break;
                }
}

/* The jobs of engine @gen (-1: all, and every batch line not sent) end
 * as @why: each request gets its answer. */
void serve_jobs_fail(struct serve *s, int gen, const char *why)
{
        if (gen < 0)
                while (s->batches)
                        drop_todo(s, s->batches, why);
        for (struct job_ref **p = &s->inflight; *p;) {
                struct job_ref *ref = *p;
                struct req *r = ref->r;

                if (gen >= 0 && ref->gen != (unsigned) gen) {
                        p = &ref->next;
                        continue;
                }
                *p = ref->next;
                s->n_inflight--;
                if (r && is_single(r))
                        answer_unrun(r, why);
                else if (r)
                        serve_jobs_stream_line(r, serve_batch_error_line(ref->client_id, ref->line, "cancelled",
                                                                         "supervise", why));
                ref_free(ref);
        }
}

/* @job (its id set here) to the engine, answered to @r. */
int serve_jobs_send(struct serve *s, json_t *job, unsigned profile, struct req *r, json_t *client_id, size_t line)
{
        struct serve_engine *eng = serve_cur_engine(s, profile);
        json_int_t id = ++s->next_id;
        AUTOFREE char *text = NULL;
        size_t n;

        if (json_object_set_new(job, "id", json_integer(id)) || !(text = json_dumps(job, JSON_COMPACT)))
                return -ENOMEM;
        n = strlen(text);
        if (n + 1 > SERVE_ENGINE_LINE_MAX)
                return -E2BIG;   /* --max-body may be larger: a /v1/batch body holds many lines */
        text[n] = '\n';
        if (!eng || serve_engine_send(eng, text, n + 1) < 0)
                return -EPIPE;
        if (!ref_add(s, id, r, client_id, line, eng->gen))
                return -ENOMEM;
        eng->sent++;
        serve_loop_maybe_rotate(s, profile);
        return 0;
}

/* Room in profile @profile's current engine: fewer than -j of its jobs
 * unanswered. (At most -j per engine in flight: the jobs the engine has
 * read are running, none waits in its pipe where no one could take it
 * back.) */
static bool engine_has_room(struct serve *s, unsigned profile)
{
        const struct serve_engine *eng = serve_cur_engine(s, profile);
        unsigned per_engine = s->capacity - s->o->queue, n = 0;

        if (!eng)
                return false;   /* restarting: the job waits */
        for (const struct job_ref *ref = s->inflight; ref && n < per_engine; ref = ref->next)
                n += ref->gen == eng->gen;
        return n < per_engine;
}

#define TOO_LARGE_FOR_ENGINE "the job is larger than the job engine takes as one line (64 MiB)"

/* Waiting jobs go to their engine while it has room, single requests
 * first (each behind the single requests before it), then the batches'
 * lines, oldest batch first. */
void serve_jobs_pump(struct serve *s)
{
        while (s->batches) {
                struct req *r = s->batches;
                struct todo *t = &r->todo[r->next_todo];

                if (!engine_has_room(s, t->profile))
                        break;
                int sent = serve_jobs_send(s, t->job, t->profile, r, t->client_id, t->line);

                if (sent == -E2BIG && is_single(r)) {
                        s->metrics.refused[REFUSE_TOO_LARGE]++;
                        answer(r, 413, serve_error_body(413, TOO_LARGE_FOR_ENGINE));
                } else if (sent == -E2BIG) {
                        s->metrics.refused[REFUSE_TOO_LARGE]++;
                        serve_jobs_stream_line(r, serve_batch_error_line(t->client_id, t->line, "error", "config",
                                                                         TOO_LARGE_FOR_ENGINE));
                } else if (sent < 0) {
                        if (is_single(r))
                                answer_unrun(r, "the job engine did not take this job");
                        else
                                serve_jobs_stream_line(r, serve_batch_error_line(t->client_id, t->line, "error",
                                                                                 "supervise",
                                                                                 "the job engine did not take this job"));
                }
                json_decref(t->job);
                json_decref(t->client_id);
                r->next_todo++;
                s->n_todo--;
                if (is_single(r))
                        s->n_waiting_single--;
                if (r->next_todo == r->n_todo)
                        drop_todo(s, r, NULL);   /* all sent: off the list */
        }
}

int serve_jobs_enqueue_single(struct serve *s, struct req *r, json_t *job, unsigned profile)
{
        struct req **at = &s->batches;

        if (!(r->todo = calloc(1, sizeof *r->todo)))
                return -ENOMEM;
        r->todo[0] = (struct todo){ .job = job, .profile = profile };
        r->n_todo = 1;
        while (*at && is_single(*at))   /* behind the single requests, ahead of the batches */
                at = &(*at)->next_batch;
        r->next_batch = *at;
        *at = r;
        s->n_todo++;
        s->n_waiting_single++;
        return 0;
}

/* @r's jobs running in an engine answer no one: each is cancelled there
 * (a cancel line, docs/batch.md: its sandbox is killed at once) and its
 * result line, which still comes, is dropped. An engine rotated out has its
 * input closed: its job runs to its own limits. */
static void cancel_running(struct serve *s, struct req *r)
{
        for (struct job_ref *ref = s->inflight; ref; ref = ref->next) {
                char line[64];
                int n;

                if (ref->r != r)
                        continue;
                ref->r = NULL;
                s->metrics.refused[REFUSE_CLIENT_GONE]++;
                n = snprintf(line, sizeof line, "{\"cancel\":%" JSON_INTEGER_FORMAT "}\n", ref->id);
                for (unsigned i = 0; i < SERVE_ENGINES; i++)
                        if (s->eng[i].gen == ref->gen && s->eng[i].pid > 0 && s->eng[i].in_fd >= 0)
                                (void) serve_engine_send(&s->eng[i], line, (size_t) n);
        }
}

/* Whether request @r, which a job in flight answers, waits with its
 * connection suspended (libmicrohttpd does not watch it then): a single
 * request always (its answer resumes it), a /v1/batch answer while it
 * waits for a line. */
static bool suspended_waiting(const struct req *r)
{
        return is_single(r) || r->stream_suspended;
}

#define WATCH_MAX 1024u

/* The suspended requests to watch: the queued ones, and those with jobs running. */
static nfds_t watch_list(struct serve *s, struct pollfd *p, struct req **w)
{
        nfds_t n = 0;

        for (struct req *r = s->batches; r && n < WATCH_MAX; r = r->next_batch)
                w[n++] = r;
        for (struct job_ref *ref = s->inflight; ref && n < WATCH_MAX; ref = ref->next) {
                bool seen = !ref->r || !suspended_waiting(ref->r) || ref->r->next_todo < ref->r->n_todo;

                /* a single request has one job: only a batch's can be listed twice */
                for (nfds_t k = 0; k < n && !seen && !is_single(ref->r); k++)
                        seen = w[k] == ref->r;
                if (!seen)
                        w[n++] = ref->r;
        }
        for (nfds_t k = 0; k < n; k++) {
                const union MHD_ConnectionInfo *i = MHD_get_connection_info(w[k]->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                p[k] = (struct pollfd){ .fd = i ? i->connect_fd : -1, .events = POLLRDHUP };
        }
        return n;
}

/* A waiting request's client that closed its connection (or half of it:
 * POLLRDHUP) will read no answer. libmicrohttpd does not watch a suspended
 * connection, so we poll them here: its jobs not started are dropped, its
 * running ones cancelled. */
void serve_jobs_drop_abandoned(struct serve *s)
{
        static struct pollfd p[WATCH_MAX];
        static struct req *w[WATCH_MAX];
        nfds_t n = watch_list(s, p, w);

        if (n == 0 || poll(p, n, 0) <= 0)
                return;
        for (nfds_t k = 0; k < n; k++) {
                if (!(p[k].revents & (POLLRDHUP | POLLHUP | POLLERR)))
                        continue;
                s->metrics.refused[REFUSE_CLIENT_GONE] += w[k]->n_todo - w[k]->next_todo;
                cancel_running(s, w[k]);
                /* Off the queue; the answer goes nowhere, but resuming the
                 * connection lets libmicrohttpd find it closed and end it. */
                if (w[k]->next_todo < w[k]->n_todo || !is_single(w[k]))
                        drop_todo(s, w[k], "cancelled: the client closed its connection before this job started");
                if (is_single(w[k]) && !w[k]->answer)
                        answer_unrun(w[k], "cancelled: the client closed its connection");
                else if (!is_single(w[k]) && w[k]->stream_suspended) {
                        w[k]->stream_suspended = false;
                        MHD_resume_connection(w[k]->conn);
                }
        }
}


void serve_jobs_forget(struct serve *s, struct req *r)
{
        /* Its jobs still in the engine answer no one: cancelled there; their
         * lines, when they come, find no one. */
        cancel_running(s, r);
        drop_todo(s, r, NULL);
}
