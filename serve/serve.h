/* serve/serve.h — `nsbox serve`: an HTTP front door to the batch engine.
 *
 * Owns: the service's command line, its listening socket and token, the
 * HTTP side (libmicrohttpd in external-poll mode: no thread of its own), the
 * translation of a request into one batch job line and of that job's result
 * line into a response (SandboxFusion's /run_code and the native /v1/run),
 * the bounded queue of requests in flight, and drain on SIGTERM.
 * Does not own: running jobs. Jobs run in `nsbox batch --quiet -j N [--warm]
 * -` (the engine), a child process fed JSON Lines on a pipe; every sandbox
 * rule, warm slot and worker is the engine's (docs/serve.md).
 *
 * Invariants:
 *   - the serve process never clones a sandbox and runs no thread but its
 *     own: libmicrohttpd is driven from one poll loop (STYLE 14);
 *   - one answer per request, always: a job that could not run is an error
 *     response, never a dropped connection;
 *   - the token is compared in constant time and never logged or returned;
 *   - a request never names a host file (judge program.path, a profile):
 *     the engine would read it with the service's rights.
 * Layers: serve_plan.c and serve_map.c are pure (cmocka: tests/unit/
 * test_serve.c); serve_engine.c spawns and feeds the engine; serve_listen.c
 * makes the socket; serve_http.c is libmicrohttpd's callbacks, serve_jobs.c
 * the jobs in the engine, serve_loop.c the loop (serve_state.h between
 * them); serve_main.c is the nsbox-serve program, serve_exec.c nsbox's way
 * to it.
 */
#pragma once

#include <jansson.h>
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

#define SERVE_DEFAULT_QUEUE 64u
#define SERVE_DEFAULT_MAX_BODY (16u << 20)
#define SERVE_MAX_BODY_LIMIT (1u << 30)
/* The engine's bound on one job line (batch_run.c's LINE_MAX_BYTES): a
 * longer line is an error line without an id, which no request would get. */
#define SERVE_ENGINE_LINE_MAX (64u << 20)
#define SERVE_DEFAULT_READ_DEADLINE_S 60u
#define SERVE_DEFAULT_HEADER_DEADLINE_S 10u
#define SERVE_DEFAULT_WRITE_DEADLINE_S 60u
#define SERVE_DEFAULT_ENGINE_ROTATE 100000ul
#define SERVE_MAX_PROFILES 8u
#define SERVE_DEFAULT_PER_IP 64u

enum serve_listen_kind { SERVE_LISTEN_UNIX = 0, SERVE_LISTEN_TCP, SERVE_LISTEN_INHERITED /* systemd socket activation */ };

struct serve_opts {
        enum serve_listen_kind listen_kind;
        char *unix_path;                /* unix: the socket's path */
        bool unix_default;              /* the default path: its directory is made 0700 */
        char *tcp_host, *tcp_port;      /* tcp */
        char *token_file;               /* required on tcp */
        char *engine;                   /* the nsbox binary that runs `batch` */
        unsigned jobs;                  /* -j: jobs at once (0: the engine's default, one per CPU) */
        unsigned queue;                 /* requests waiting beyond the running ones, then 503 */
        size_t max_body;                /* request body bound, then 413 */
        unsigned long engine_rotate;    /* after this many jobs a new engine takes the next ones (0: never) */
        unsigned read_deadline_s;       /* from a connection's start (or its last answer) to a whole request read */
        unsigned header_deadline_s;     /* from a new connection's start to its first request's whole header */
        unsigned write_deadline_s;      /* from an answer's start (a /v1/batch line's) to its last byte taken by the client */
        bool help;                      /* --help: print serve_usage, nothing else */
        bool warm;                      /* --warm for the engine (default on; --cold turns it off) */
        /* Operator ceilings (0: none): a request may lower a job's limit
         * below them, never raise it above (400 naming key and ceiling). */
        uint64_t max_memory_bytes;      /* --max-memory SIZE */
        uint64_t max_wall_ms;           /* --max-wall-time DUR */
        const char *max_memory_arg, *max_wall_arg;   /* as given, for the message */
        unsigned per_ip;                /* --per-ip-connections N: TCP connections per client address (0: no limit) */
        unsigned queue_full_status;     /* --queue-full-status 503|504: a full queue's answer (default 503) */
        const char *profiles[SERVE_MAX_PROFILES]; /* --profile NAME...: one engine each; a request picks one
                                                     by its "profile" key (the first by default); none: one
                                                     engine, the batch default (or `-- --profile P`) */
        unsigned n_profiles;
        char **engine_args;             /* after `--`: passed to `nsbox batch` unchanged (not owned) */
        size_t n_engine_args;
};

/* argv[0] is "serve" (or the helper's name); @xdg_runtime_dir is
 * $XDG_RUNTIME_DIR (NULL: unset); @activated: systemd passed a listening
 * socket (serve_activation_count), which --listen may not contradict. Pure.
 * -EINVAL with @e (stage usage). */
int serve_opts_parse(int argc, char **argv, const char *xdg_runtime_dir, bool activated, struct serve_opts *ret,
                     struct nsb_error *e);

/* systemd socket activation (sd_listen_fds(3)): how many sockets this
 * process was given from $LISTEN_PID and $LISTEN_FDS; 0 when none (unset,
 * or meant for another pid); -EINVAL for values that are not numbers. */
int serve_activation_count(const char *listen_pid, const char *listen_fds, long pid);
void serve_opts_free(struct serve_opts *o);
extern const char serve_usage[];

/* ---- routes and auth (pure) ---- */

enum serve_route { ROUTE_NONE = 0, ROUTE_RUN_CODE, ROUTE_V1_RUN, ROUTE_V1_BATCH, ROUTE_HEALTH, ROUTE_METRICS };

/* The route for @path and the HTTP status: 200 (found, method allowed), 404
 * or 405 (then *ret_allow names the allowed method). */
unsigned serve_route_of(const char *method, const char *path, enum serve_route *ret, const char **ret_allow);

/* Constant time in the length of @want: equal lengths and bytes. */
bool serve_token_equal(const char *want, size_t want_len, const char *got, size_t got_len);

/* With a token: the request is allowed when @authorization is "Bearer
 * TOKEN", or @url's first segment is TOKEN (then *ret_path is what follows
 * it). Without a token (@token NULL) every request is allowed. *ret_path
 * points into @url. */
bool serve_authorized(const char *token, size_t token_len, const char *authorization, const char *url,
                      const char **ret_path);

/* ---- requests → job lines (pure, serve_plan.c) ---- */

/* A SandboxFusion /run_code body → a python job line with id @id, and
 * the index in @o->profiles of the profile it names ("profile": an
 * extension of nsbox's; 0 when it names none). A bad body is -EINVAL with
 * @e naming the key (stage config). */
int serve_plan_run_code(const struct serve_opts *o, const char *body, size_t len, json_int_t id, json_t **ret_job,
                        unsigned *ret_profile, struct nsb_error *e);

/* A /v1/run body (one batch job object) → the same job with id @id and
 * without its "profile" key (*ret_profile: its index, as above);
 * *ret_client_id is the id it gave (NULL: none), restored in the answer. */
int serve_plan_v1_run(const struct serve_opts *o, const char *body, size_t len, json_int_t id, json_t **ret_job,
                      json_t **ret_client_id, unsigned *ret_profile, struct nsb_error *e);

/* ---- result lines → responses (pure, serve_map.c) ---- */

/* A result line the engine could not take as a job (a bad line: its
 * `batch` has no start_ms): the request's error, not the sandbox's. */
bool serve_line_is_bad_request(const json_t *line);

/* A bad line's message, without the engine's "line N: ". */
const char *serve_bad_request_message(const json_t *line);

/* SandboxFusion's response for a python job's result line. */
json_t *serve_map_run_code(const json_t *line);

/* The native answer: the line without `batch`, with the client's id. */
json_t *serve_map_v1_run(const json_t *line, const json_t *client_id);

/* /v1/batch: a job's result line with the client's id and the request
 * body's line number ("batch": {"line": N}), as `nsbox batch` numbers
 * its own. */
json_t *serve_map_batch_line(const json_t *line, const json_t *client_id, size_t body_line);

/* /v1/batch: the line of a job that never ran: a body line that could not
 * become a job (@status "error", stage config) or one cancelled (@status
 * "cancelled"); outcome error, label 0, like batch's bad lines. */
json_t *serve_batch_error_line(const json_t *client_id, size_t body_line, const char *status, const char *stage,
                               const char *message);

/* {"error": {"status": N, "message": "..."}} */
json_t *serve_error_body(unsigned status, const char *message);

/* SandboxFusion's SandboxError for a job that ended without a result
 * (the engine ended, a cancel): @why is the message. */
json_t *serve_map_run_code_error(const char *why);

/* ---- /metrics (pure, serve_map.c) ---- */

#define SERVE_N_BUCKETS 11
enum serve_refusal { REFUSE_BAD_REQUEST = 0, REFUSE_UNAUTHORIZED, REFUSE_TOO_LARGE, REFUSE_QUEUE_FULL,
                     REFUSE_STOPPING, REFUSE_SLOW_CLIENT, REFUSE_CLIENT_GONE, REFUSE_SLOW_READER, REFUSE__MAX };

struct serve_metrics {
        unsigned long long status[8];   /* job results: exited signaled limit cancelled error, pass fail undetermined (verdicts) */
        unsigned long long outcome[4];  /* python jobs: pass fail timeout error */
        unsigned long long bucket[SERVE_N_BUCKETS]; /* job latency, request to answer (cumulative at render) */
        double latency_sum;
        unsigned long long latency_count;
        unsigned long long refused[REFUSE__MAX];
        unsigned long long starts[2];   /* jobs by their result's "start": warm, cold */
        unsigned long long warm_fallbacks; /* of the cold ones, those that asked warm (a start_reason says why not) */
        unsigned warm_slots;            /* gauge: jobs that may start warm at once (each engine's -j with --warm; 0 cold) */
};

/* Count one answered job: its result line and seconds from request to answer. */
void serve_metrics_job(struct serve_metrics *m, const json_t *line, double seconds);
/* Prometheus text exposition (version 0.0.4); malloc'd, NULL on ENOMEM. */
char *serve_metrics_render(const struct serve_metrics *m, unsigned in_flight, unsigned capacity, unsigned jobs,
                           bool draining);

/* ---- the program (sys) ---- */

/* The nsbox-serve helper: argv = { name, "--engine", NSBOX, "serve", ... }. */
int serve_main(int argc, char **argv);
