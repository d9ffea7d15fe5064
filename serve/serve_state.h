/* serve/serve_state.h — the service's state, shared by its three syscall
 * files: serve_jobs.c (the jobs in the engine and the requests they
 * answer), serve_http.c (libmicrohttpd's callbacks) and serve_loop.c (the
 * poll loop, signals, drain). Not for other modules.
 *
 * Ownership: a struct req is libmicrohttpd's connection's (made at its
 * first call, freed when it completes); a struct job_ref is the engine's
 * job (made when its line is sent, freed when its result line comes or
 * when the engine ends), and points at its request until that completes. */
#pragma once

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/serve.h"
#include "serve/serve_engine.h"

enum drain { RUNNING = 0, DRAINING, CANCELLING };

#define SERVE_ENGINES_PER_PROFILE 4     /* the current engine and up to three rotated out, still ending */
#define SERVE_ENGINES (SERVE_ENGINES_PER_PROFILE * SERVE_MAX_PROFILES)

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
        double out_since_ms;            /* when the oldest line in @out not yet taken by the client came; 0: none */
        struct req *next_batch;         /* the list of batches with jobs still to send */
};

/* A job line of a /v1/batch body, not yet sent to the engine. */
struct todo {
        json_t *job;
        json_t *client_id;
        size_t line;
        unsigned profile;
};

/* A job in the engine: the request its result line answers. */
struct job_ref {
        json_int_t id;                  /* the service's id (the engine's line carries it) */
        struct req *r;                  /* NULL: its client is gone (the line is dropped) */
        json_t *client_id;              /* /v1/batch: the id the client gave this line */
        size_t line;                    /* /v1/batch: the body's line */
        double t0_ms;                   /* when it went to the engine */
        unsigned gen;                   /* the engine it went to */
        struct job_ref *next;
};

/* A connection, for the read deadline: libmicrohttpd's own timeout is one
 * of inactivity, which a client trickling a byte at a time never reaches. */
struct conn_track {
        struct MHD_Connection *conn;
        double t0_ms;                   /* when it began waiting for a request */
        bool reading;                   /* a request is (or may be) arriving: the deadline runs */
        bool headers_seen;              /* a request's whole header has come on it (the header deadline is over) */
        bool writing;                   /* an answer is queued: the write deadline runs from @w0_ms */
        double w0_ms;
        struct req *stream;             /* a /v1/batch answer streaming on it: its lines have the deadline */
        struct conn_track *next;
};

struct serve {
        const struct serve_opts *o;
        struct MHD_Daemon *d;
        /* The engines: eng[cur[P]] takes profile P's new jobs; the others
         * were rotated out (stdin closed) and end when their last jobs have. */
        struct serve_engine eng[SERVE_ENGINES];
        unsigned cur[SERVE_MAX_PROFILES];
        unsigned n_profiles;            /* engines taking jobs: o->n_profiles, or 1 */
        unsigned next_gen;
        const char *token;
        size_t token_len;
        struct job_ref *inflight;       /* jobs in the engine */
        unsigned n_inflight;
        /* Requests with jobs not yet sent to an engine: single requests
         * (/run_code, /v1/run: one todo each) first, then /v1/batch ones.
         * An engine is sent at most -j jobs at once, so a job waiting here
         * has not started, and is dropped if its client goes away. */
        struct req *batches;
        size_t n_todo;                  /* those jobs, all requests together */
        unsigned n_waiting_single;      /* of which single requests' (bounded by --queue) */
        json_int_t next_id;
        enum drain drain;
        double drained_at_ms;           /* when the last answer of a drain was handed to MHD; 0: not yet */
        int engine_status;              /* its wait status once it ended */
        bool engine_failed;             /* it ended at start (bad options): the service stops */
        bool cancelled_some;            /* a second signal found jobs left */
        unsigned capacity;              /* jobs in flight at most: -j (or the CPUs) + --queue */
        struct serve_metrics metrics;
        struct conn_track *conns;
        const char *unix_path;          /* removed at exit */
};

double serve_now_ms(void);

/* The engine that takes profile @profile's new jobs; NULL when none runs. */
static inline struct serve_engine *serve_cur_engine(struct serve *s, unsigned profile)
{
        struct serve_engine *eng = &s->eng[s->cur[profile]];
        return eng->pid > 0 && eng->in_fd >= 0 ? eng : NULL;
}

/* serve_jobs.c */
void serve_jobs_on_line(void *ctx, const char *text, size_t len);   /* an engine result line */
/* Every job of engine generation @gen (-1: of every engine, and the batch
 * lines not sent yet) ends as @why. */
void serve_jobs_fail(struct serve *s, int gen, const char *why);
int serve_jobs_send(struct serve *s, json_t *job, unsigned profile, struct req *r, json_t *client_id, size_t line);
void serve_jobs_pump(struct serve *s);                             /* batch lines, while the engine has room */
void serve_jobs_stream_line(struct req *r, json_t *line);          /* a /v1/batch answer line (stolen) */
void serve_jobs_forget(struct serve *s, struct req *r);            /* @r completed: its jobs answer no one */

/* serve_loop.c: after a job was sent, a new engine if the current one has
 * taken --engine-rotate jobs. */
void serve_loop_maybe_rotate(struct serve *s, unsigned profile);

/* serve_jobs.c: a single request's job waits for an engine's room. */
int serve_jobs_enqueue_single(struct serve *s, struct req *r, json_t *job, unsigned profile);
/* Requests waiting whose client has closed its connection: their jobs that
 * never started are dropped (each counted as refused client_gone). */
void serve_jobs_drop_abandoned(struct serve *s);

/* serve_http.c */
struct MHD_Daemon *serve_http_start(struct serve *s, int listen_fd);
void serve_http_enforce_read_deadline(struct serve *s);
