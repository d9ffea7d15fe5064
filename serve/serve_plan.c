/* serve/serve_plan.c — `nsbox serve`'s pure half: its command line, routes,
 * the token check, and requests turned into batch job lines. No syscalls. */
#include "serve/serve.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "config/schema.h"
#include "util/cleanup.h"
#include "util/json_cleanup.h"

/* ---- command line ---- */

const char serve_usage[] =
        "Usage: nsbox serve [--listen unix:PATH|tcp:HOST:PORT] [--token-file FILE] [-j N] [--queue N]\n"
        "                   [--max-body BYTES] [--read-deadline SECONDS] [--profile NAME]... [--engine-rotate N]\n"
        "                   [--max-memory SIZE] [--max-wall-time DUR] [--per-ip-connections N]\n"
        "                   [--queue-full-status 503|504] [--header-deadline SECONDS] [--write-deadline SECONDS]\n"
        "                   [--warm|--cold] [-- BATCH OPTIONS...]\n"
        "\n"
        "An HTTP service that runs each request's job in its own sandbox through `nsbox batch`:\n"
        "POST /run_code (SandboxFusion's request and response), POST /v1/run (one batch job line),\n"
        "POST /v1/batch (JSON Lines in, result lines streamed out as jobs end),\n"
        "GET /v1/health, GET /metrics. docs/serve.md.\n"
        "\n"
        "  --listen unix:PATH      default $XDG_RUNTIME_DIR/nsbox/nsbox.sock (mode 0600, directory 0700)\n"
        "  --listen tcp:HOST:PORT  needs --token-file: every request then carries the token\n"
        "  --token-file FILE       the token (Authorization: Bearer TOKEN, or /TOKEN/run_code)\n"
        "  -j N                    jobs at once (default: one per CPU)\n"
        "  --queue N               requests waiting beyond those (default 64), then 503 + Retry-After\n"
        "  --max-body BYTES        request body bound (default 16 MiB), then 413\n"
        "  --read-deadline SECONDS a whole request (headers and body) must arrive within this (default 60),\n"
        "                          however slowly it trickles in; else the connection is closed\n"
        "  --header-deadline SECONDS  a new connection's first request's headers must arrive within this\n"
        "                          (default 10); else it is closed\n"
        "  --write-deadline SECONDS  a client must have taken an answer within this of its start (default 60;\n"
        "                          /v1/batch: each line); else the connection is closed\n"
        "  --max-memory SIZE       a request may ask for at most this memory (memory_limit_MB, limits.memory),\n"
        "                          else 400; its default is the engine's (-- --memory)\n"
        "  --max-wall-time DUR     a request may ask for at most this wall time (run_timeout, timeout,\n"
        "                          limits.wall_time), else 400; its default is the engine's (-- --wall-time)\n"
        "  --per-ip-connections N  TCP connections open at once from one address (default 64; 0: no limit)\n"
        "  --queue-full-status 503|504  a full queue's status (default 503; 504 for clients that retry only it)\n"
        "  --warm, --cold          start python jobs warm (default) or cold\n"
        "  --engine-rotate N       a new engine (nsbox batch) after N jobs (default 100000; 0: never)\n"
        "  --profile NAME          (repeatable) one engine per profile; a request picks one by its\n"
        "                          \"profile\" key, the first by default\n"
        "  -- OPTIONS              passed to `nsbox batch` for every job (--memory 256M, --wall-time 10s, ...)\n"
        "\n"
        "SIGTERM drains (running and queued jobs finish, new requests get 503; exit 0);\n"
        "a second SIGTERM cancels what is left (exit 130).\n";

static int parse_uint(const char *flag, const char *v, unsigned long long max, unsigned long long *ret,
                      struct nsb_error *e)
{
        char *end = NULL;
        unsigned long long n;

        if (!v || !*v || *v == '-' || *v == '+')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s needs a number", flag);
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno || *end || n > max)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s: '%.64s' is not a number from 0 to %llu", flag, v, max);
        *ret = n;
        return 0;
}

/* "unix:PATH" or "tcp:HOST:PORT" (HOST may be [v6]). */
static int parse_listen(const char *v, struct serve_opts *o, struct nsb_error *e)
{
        if (strncmp(v, "unix:", 5) == 0 && v[5]) {
                if (v[5] != '/')
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--listen unix:PATH: PATH must be absolute");
                free(o->unix_path);
                o->unix_path = strdup(v + 5);
                o->listen_kind = SERVE_LISTEN_UNIX;
                o->unix_default = false;
                return o->unix_path ? 0 : nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        }
        if (strncmp(v, "tcp:", 4) == 0) {
                const char *hp = v + 4, *colon = strrchr(hp, ':');
                size_t hl;

                if (!colon || colon == hp || !colon[1])
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--listen tcp:HOST:PORT: '%.64s' lacks HOST or PORT", v);
                hl = (size_t) (colon - hp);
                if (hp[0] == '[' && hl >= 2 && hp[hl - 1] == ']')
                        hp++, hl -= 2;   /* [::1] */
                free(o->tcp_host);
                free(o->tcp_port);
                o->tcp_host = strndup(hp, hl);
                o->tcp_port = strdup(colon + 1);
                o->listen_kind = SERVE_LISTEN_TCP;
                if (strspn(o->tcp_port ? o->tcp_port : "", "0123456789") != strlen(o->tcp_port ? o->tcp_port : "x") ||
                    strlen(o->tcp_port) > 5 || atoi(o->tcp_port) > 65535)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--listen tcp:HOST:PORT: bad port in '%.64s'", v);
                return o->tcp_host ? 0 : nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
        }
        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--listen '%.64s': expected unix:PATH or tcp:HOST:PORT", v);
}

static int set_default_listen(const char *xdg, struct serve_opts *o, struct nsb_error *e)
{
        if (!xdg || xdg[0] != '/')
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "XDG_RUNTIME_DIR is not set (or not absolute), so there is no default socket: "
                                "give --listen unix:PATH, or --listen tcp:HOST:PORT with --token-file FILE");
        {
                size_t n = strlen(xdg) + sizeof "/nsbox/nsbox.sock";

                o->unix_path = malloc(n);
                if (!o->unix_path)
                        return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
                snprintf(o->unix_path, n, "%s/nsbox/nsbox.sock", xdg);
        }
        o->unix_default = true;
        return 0;
}

static int take_value(int argc, char **argv, int *i, const char **ret, struct nsb_error *e)
{
        const char *a = argv[*i], *eq = strchr(a, '=');

        if (eq && strncmp(a, "--", 2) == 0) {
                *ret = eq + 1;
                return 0;
        }
        if (*i + 1 >= argc)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "%s needs a value", a);
        *ret = argv[++*i];
        return 0;
}

static bool is_flag(const char *a, const char *name)
{
        size_t n = strlen(name);
        return strncmp(a, name, n) == 0 && (a[n] == '\0' || (a[n] == '=' && name[1] == '-'));
}

/* The service's guards: ceilings on a request's limits, the connection
 * bounds, a full queue's status. 1: @argv[*i] was one (taken); 0: not one
 * of these; -EINVAL with @e. */
static int take_guard_flag(int argc, char **argv, int *i, struct serve_opts *o, struct nsb_error *e)
{
        const char *a = argv[*i], *v;
        unsigned long long n;

        if (is_flag(a, "--header-deadline")) {
                if (take_value(argc, argv, i, &v, e) < 0 ||
                    parse_uint("--header-deadline", v, 3600, &n, e) < 0)
                        return -EINVAL;
                if (n == 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--header-deadline: at least 1 second");
                o->header_deadline_s = (unsigned) n;
        } else if (is_flag(a, "--write-deadline")) {
                if (take_value(argc, argv, i, &v, e) < 0 || parse_uint("--write-deadline", v, 3600, &n, e) < 0)
                        return -EINVAL;
                if (n == 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--write-deadline: at least 1 second");
                o->write_deadline_s = (unsigned) n;
        } else if (is_flag(a, "--max-memory")) {
                if (take_value(argc, argv, i, &v, e) < 0)
                        return -EINVAL;
                if (cfg_parse_limit("memory", v, &o->max_memory_bytes, e) < 0)
                        return nsb_error_prefix(e, "--max-memory");
                o->max_memory_arg = v;
        } else if (is_flag(a, "--max-wall-time")) {
                if (take_value(argc, argv, i, &v, e) < 0)
                        return -EINVAL;
                if (cfg_parse_limit("wall-time", v, &o->max_wall_ms, e) < 0)
                        return nsb_error_prefix(e, "--max-wall-time");
                o->max_wall_arg = v;
        } else if (is_flag(a, "--per-ip-connections")) {
                if (take_value(argc, argv, i, &v, e) < 0 ||
                    parse_uint("--per-ip-connections", v, 100000, &n, e) < 0)
                        return -EINVAL;
                o->per_ip = (unsigned) n;
        } else if (is_flag(a, "--queue-full-status")) {
                if (take_value(argc, argv, i, &v, e) < 0)
                        return -EINVAL;
                if (strcmp(v, "503") != 0 && strcmp(v, "504") != 0)
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "--queue-full-status: 503 or 504, not '%.16s'", v);
                o->queue_full_status = (unsigned) atoi(v);
        } else {
                return 0;
        }
        return 1;
}

int serve_opts_parse(int argc, char **argv, const char *xdg, bool activated, struct serve_opts *o,
                     struct nsb_error *e)
{
        bool listen_given = false;
        unsigned long long n;
        const char *v;
        int i, g;

        memset(o, 0, sizeof *o);
        o->queue = SERVE_DEFAULT_QUEUE;
        o->max_body = SERVE_DEFAULT_MAX_BODY;
        o->read_deadline_s = SERVE_DEFAULT_READ_DEADLINE_S;
        o->header_deadline_s = SERVE_DEFAULT_HEADER_DEADLINE_S;
        o->write_deadline_s = SERVE_DEFAULT_WRITE_DEADLINE_S;
        o->engine_rotate = SERVE_DEFAULT_ENGINE_ROTATE;
        o->per_ip = SERVE_DEFAULT_PER_IP;
        o->queue_full_status = 503;
        o->warm = true;
        for (i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (strcmp(a, "--") == 0) {
                        o->engine_args = argv + i + 1;
                        o->n_engine_args = (size_t) (argc - i - 1);
                        break;
                } else if (is_flag(a, "--listen")) {
                        if (take_value(argc, argv, &i, &v, e) < 0 || parse_listen(v, o, e) < 0)
                                return -EINVAL;
                        listen_given = true;
                } else if (is_flag(a, "--token-file")) {
                        if (take_value(argc, argv, &i, &v, e) < 0)
                                return -EINVAL;
                        free(o->token_file);
                        if (!(o->token_file = strdup(v)))
                                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
                } else if (is_flag(a, "--engine")) {
                        if (take_value(argc, argv, &i, &v, e) < 0)
                                return -EINVAL;
                        free(o->engine);
                        if (!(o->engine = strdup(v)))
                                return nsb_fail(e, NSB_STAGE_USAGE, ENOMEM, "out of memory");
                } else if (is_flag(a, "-j") || is_flag(a, "--jobs")) {
                        if (take_value(argc, argv, &i, &v, e) < 0 || parse_uint("-j", v, 4096, &n, e) < 0)
                                return -EINVAL;
                        if (n == 0)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "-j: 0 jobs at once would run nothing");
                        o->jobs = (unsigned) n;
                } else if (is_flag(a, "--queue")) {
                        if (take_value(argc, argv, &i, &v, e) < 0 || parse_uint("--queue", v, 1u << 20, &n, e) < 0)
                                return -EINVAL;
                        o->queue = (unsigned) n;
                } else if (is_flag(a, "--max-body")) {
                        if (take_value(argc, argv, &i, &v, e) < 0 ||
                            parse_uint("--max-body", v, SERVE_MAX_BODY_LIMIT, &n, e) < 0)
                                return -EINVAL;
                        if (n < 1024)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--max-body: at least 1024 bytes");
                        o->max_body = (size_t) n;
                } else if (is_flag(a, "--profile")) {
                        if (take_value(argc, argv, &i, &v, e) < 0)
                                return -EINVAL;
                        if (!*v || o->n_profiles == SERVE_MAX_PROFILES)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--profile: a name, at most %u of them",
                                                SERVE_MAX_PROFILES);
                        for (unsigned k = 0; k < o->n_profiles; k++)
                                if (strcmp(o->profiles[k], v) == 0)
                                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--profile '%.64s' given twice", v);
                        o->profiles[o->n_profiles++] = v;
                } else if (is_flag(a, "--engine-rotate")) {
                        if (take_value(argc, argv, &i, &v, e) < 0 ||
                            parse_uint("--engine-rotate", v, 1000000000ull, &n, e) < 0)
                                return -EINVAL;
                        o->engine_rotate = (unsigned long) n;
                } else if (is_flag(a, "--read-deadline")) {
                        if (take_value(argc, argv, &i, &v, e) < 0 ||
                            parse_uint("--read-deadline", v, 3600, &n, e) < 0)
                                return -EINVAL;
                        if (n == 0)
                                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "--read-deadline: at least 1 second");
                        o->read_deadline_s = (unsigned) n;
                } else if ((g = take_guard_flag(argc, argv, &i, o, e)) != 0) {
                        if (g < 0)
                                return -EINVAL;
                } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                        o->help = true;
                        return 0;
                } else if (strcmp(a, "--warm") == 0) {
                        o->warm = true;
                } else if (strcmp(a, "--cold") == 0) {
                        o->warm = false;
                } else {
                        return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                        "serve: unknown option '%.64s' (serve takes --listen, --token-file, -j, "
                                        "--queue, --max-body, --read-deadline, --engine-rotate, --profile, --max-memory, --max-wall-time, "
                                        "--per-ip-connections, --queue-full-status, --header-deadline, --write-deadline, --warm, --cold; options for the jobs go after `--`, "
                                        "as `nsbox batch` takes them)", a);
                }
        }
        if (!o->engine)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL, "serve: no engine (run it as `nsbox serve`)");
        if (activated && listen_given)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--listen: systemd passed this service its socket (socket activation); "
                                "leave --listen out");
        if (activated)
                o->listen_kind = SERVE_LISTEN_INHERITED;
        else if (!listen_given && set_default_listen(xdg, o, e) < 0)
                return -EINVAL;
        /* A TCP port is reachable by anyone who can route to it: without a
         * token it would run anyone's code. A unix socket's mode (0600) is
         * its authentication. */
        if (o->listen_kind == SERVE_LISTEN_TCP && !o->token_file)
                return nsb_fail(e, NSB_STAGE_USAGE, EINVAL,
                                "--listen tcp:... needs --token-file FILE: a TCP service without a token "
                                "would run anyone's code");
        return 0;
}

int serve_activation_count(const char *listen_pid, const char *listen_fds, long pid)
{
        char *end = NULL;
        long p, n;

        if (!listen_pid || !listen_fds)
                return 0;
        errno = 0;
        p = strtol(listen_pid, &end, 10);
        if (errno || end == listen_pid || *end || p <= 0)
                return -EINVAL;
        if (p != pid)
                return 0;   /* meant for the process that exec'd us, not for us */
        n = strtol(listen_fds, &end, 10);
        if (errno || end == listen_fds || *end || n < 0 || n > 64)
                return -EINVAL;
        return (int) n;
}

void serve_opts_free(struct serve_opts *o)
{
        free(o->unix_path);
        free(o->tcp_host);
        free(o->tcp_port);
        free(o->token_file);
        free(o->engine);
        memset(o, 0, sizeof *o);
}

/* ---- routes, auth ---- */

static const struct {
        const char *path, *method;
        enum serve_route route;
} routes[] = {
        { "/run_code", "POST", ROUTE_RUN_CODE },
        { "/v1/run", "POST", ROUTE_V1_RUN },
        { "/v1/batch", "POST", ROUTE_V1_BATCH },
        { "/v1/health", "GET", ROUTE_HEALTH },
        { "/metrics", "GET", ROUTE_METRICS },
};

unsigned serve_route_of(const char *method, const char *path, enum serve_route *ret, const char **ret_allow)
{
        *ret = ROUTE_NONE;
        *ret_allow = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
                if (strcmp(path, routes[i].path) != 0)
                        continue;
                *ret_allow = routes[i].method;
                if (strcmp(method, routes[i].method) != 0 &&
                    !(strcmp(method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0))
                        return 405;
                *ret = routes[i].route;
                return 200;
        }
        return 404;
}

bool serve_token_equal(const char *want, size_t want_len, const char *got, size_t got_len)
{
        /* Every byte of @want is read whatever @got holds, so the time says
         * nothing about where they first differ (nor about @want's length
         * beyond what the attempt already knows: its own length). */
        volatile unsigned char diff = (unsigned char) (want_len != got_len);

        for (size_t i = 0; i < want_len; i++)
                diff |= (unsigned char) (want[i] ^ (i < got_len ? got[i] : (char) ~want[i]));
        return want_len > 0 && diff == 0;
}

bool serve_authorized(const char *token, size_t token_len, const char *authorization, const char *url,
                      const char **ret_path)
{
        static const char bearer[] = "Bearer ";
        const char *seg, *slash;

        *ret_path = url;
        if (!token)
                return true;
        if (authorization && strncasecmp(authorization, bearer, sizeof bearer - 1) == 0) {
                const char *t = authorization + sizeof bearer - 1;
                if (serve_token_equal(token, token_len, t, strlen(t)))
                        return true;
        }
        /* http://host:port/TOKEN/run_code, for clients that post to a
         * configured URL with fixed headers (verl's SandboxFusion caller). */
        if (url[0] != '/')
                return false;
        seg = url + 1;
        slash = strchr(seg, '/');
        if (!slash)
                return false;
        if (!serve_token_equal(token, token_len, seg, (size_t) (slash - seg)))
                return false;
        *ret_path = slash;
        return true;
}

/* ---- requests ---- */

static int load_object(const char *body, size_t len, json_t **ret, struct nsb_error *e)
{
        json_error_t je;
        json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);

        if (!j)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "the body is not JSON: %s (line %d, column %d)", je.text,
                                je.line, je.column);
        if (!json_is_object(j)) {
                json_decref(j);
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "the body is not a JSON object");
        }
        *ret = j;
        return 0;
}

static const char *const run_code_keys[] = {
        "code", "language", "run_timeout", "compile_timeout", "memory_limit_MB", "stdin", "files", "fetch_files",
        "profile",   /* nsbox's own: one of the service's --profile names */
};

/* The request's "profile" (removed from it when @strip): its index in
 * o->profiles; 0 when it names none. Only the service's own profiles: a
 * request never names a profile file. */
static int take_profile(const struct serve_opts *o, json_t *req, bool strip, unsigned *ret, struct nsb_error *e)
{
        const json_t *v = json_object_get(req, "profile");
        char names[256] = "";

        *ret = 0;
        if (!v || json_is_null(v)) {
                json_object_del(req, "profile");
                return 0;
        }
        if (!json_is_string(v))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "profile: a string, one of the service's --profile names");
        for (unsigned i = 0; i < o->n_profiles; i++) {
                if (strcmp(json_string_value(v), o->profiles[i]) == 0) {
                        *ret = i;
                        if (strip)
                                json_object_del(req, "profile");
                        return 0;
                }
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", o->profiles[i]);
        }
        if (!o->n_profiles)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "profile \"%.64s\": this service was started without --profile: it runs one policy",
                                json_string_value(v));
        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "profile \"%.64s\": not one of this service's (%s)",
                        json_string_value(v), names);
}

static int check_keys(const json_t *o, const char *const *keys, size_t n, struct nsb_error *e)
{
        const char *k;
        json_t *v;

        json_object_foreach((json_t *) o, k, v) {
                size_t i;
                for (i = 0; i < n && strcmp(k, keys[i]) != 0; i++)
                        ;
                if (i == n)
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "unknown key \"%.64s\"", k);
        }
        return 0;
}

/* run_timeout / compile_timeout: seconds, a number > 0 (SandboxFusion's
 * floats). NULL or absent: *ret 0 (the engine's default). */
static int seconds(const json_t *o, const char *key, double *ret, struct nsb_error *e)
{
        const json_t *v = json_object_get(o, key);

        *ret = 0;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 86400)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s: a number of seconds, more than 0 and at most 86400",
                                key);
        *ret = json_number_value(v);
        return 0;
}

/* SandboxFusion's files (name → base64, placed in the job's own
 * workspace) and fetch_files (names read back) become the job's keys of
 * the same names; the engine checks each name and the content (a bad one
 * is its refusal: 400 naming the key). Empty or null: none. */
static int take_files(const json_t *req, json_t *job, struct nsb_error *e)
{
        const json_t *files = json_object_get(req, "files"), *fetch = json_object_get(req, "fetch_files");

        if (files && !json_is_null(files) && !json_is_object(files))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "files: an object of name → base64 content");
        if (fetch && !json_is_null(fetch) && !json_is_array(fetch))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "fetch_files: an array of names");
        if ((json_object_size(files) && json_object_set(job, "files", (json_t *) files)) ||
            (json_array_size(fetch) && json_object_set(job, "fetch_files", (json_t *) fetch)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        return 0;
}

static int run_code_job(const struct serve_opts *o, const json_t *req, json_int_t id, json_t *job, struct nsb_error *e)
{
        const json_t *code = json_object_get(req, "code"), *lang = json_object_get(req, "language");
        const json_t *in = json_object_get(req, "stdin"), *mem = json_object_get(req, "memory_limit_MB");
        double run_s, compile_s;

        if (!lang || !json_is_string(lang))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "language: missing (nsbox serve runs \"python\")");
        if (strcmp(json_string_value(lang), "python") != 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EOPNOTSUPP,
                                "language \"%.32s\" is not supported: nsbox serve runs \"python\" only",
                                json_string_value(lang));
        if (!code || !json_is_string(code))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "code: missing, or not a string");
        if (in && !json_is_null(in) && !json_is_string(in))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "stdin: a string or null");
        if (seconds(req, "run_timeout", &run_s, e) < 0 || seconds(req, "compile_timeout", &compile_s, e) < 0)
                return -EINVAL;
        (void) compile_s;   /* python has no compile step: accepted, nothing to bound */
        if (mem && !json_is_null(mem) &&
            (!json_is_integer(mem) || json_integer_value(mem) == 0 || json_integer_value(mem) < -1 ||
             json_integer_value(mem) > (1 << 20)))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                "memory_limit_MB: an integer from 16 to 1048576, or -1 for the service's default");
        if (o->max_wall_ms && run_s * 1e3 > (double) o->max_wall_ms)
                return nsb_fail(e, NSB_STAGE_CONFIG, ERANGE,
                                "run_timeout: %g s is above this service's ceiling (--max-wall-time %s)", run_s,
                                o->max_wall_arg);
        if (o->max_memory_bytes && mem && json_is_integer(mem) && json_integer_value(mem) > 0 &&
            (uint64_t) json_integer_value(mem) << 20 > o->max_memory_bytes)
                return nsb_fail(e, NSB_STAGE_CONFIG, ERANGE,
                                "memory_limit_MB: %lld is above this service's ceiling (--max-memory %s)",
                                (long long) json_integer_value(mem), o->max_memory_arg);
        if (json_object_set_new(job, "id", json_integer(id)) || json_object_set_new(job, "kind", json_string("python")) ||
            json_object_set(job, "code", (json_t *) code))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (in && json_is_string(in) && json_string_length(in) > 0 && json_object_set(job, "stdin", (json_t *) in))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (run_s > 0 && json_object_set_new(job, "timeout", json_real(run_s)))
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (take_files(req, job, e) < 0)
                return -EINVAL;
        if (mem && json_is_integer(mem) && json_integer_value(mem) > 0) {
                char m[32];

                snprintf(m, sizeof m, "%lldM", (long long) json_integer_value(mem));
                if (json_object_set_new(job, "limits", json_pack("{s:s}", "memory", m)))
                        return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        }
        return 0;
}

int serve_plan_run_code(const struct serve_opts *o, const char *body, size_t len, json_int_t id, json_t **ret_job,
                        unsigned *ret_profile, struct nsb_error *e)
{
        AUTO(json_decref) json_t *req = NULL;
        AUTO(json_decref) json_t *job = json_object();

        *ret_job = NULL;
        if (!job)
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        if (load_object(body, len, &req, e) < 0 ||
            check_keys(req, run_code_keys, ARRAY_SIZE(run_code_keys), e) < 0 ||
            take_profile(o, req, false, ret_profile, e) < 0 || run_code_job(o, req, id, job, e) < 0)
                return -EINVAL;
        *ret_job = move_ptr(&job);
        return 0;
}

/* A judge spec names no host file: the engine would read it with the
 * service's rights and hand it to the program (program.path), or load it
 * as policy (profile). */
static int check_spec(const json_t *job, struct nsb_error *e)
{
        const json_t *spec = json_object_get(job, "spec");
        const json_t *prog = spec ? json_object_get(spec, "program") : NULL;

        if (spec && json_is_object(spec) && json_object_get(spec, "profile"))
                return nsb_fail(e, NSB_STAGE_CONFIG, EPERM,
                                "spec.profile: a request cannot choose a profile (the service's own applies)");
        if (prog && json_is_object(prog) && json_object_get(prog, "path"))
                return nsb_fail(e, NSB_STAGE_CONFIG, EPERM,
                                "spec.program.path: a request cannot name a host file; send program.source");
        return 0;
}

/* A job's "limits" (and "timeout", its wall-time shorthand) read by the
 * engine's own parser, then held to the operator's ceilings. @where names
 * the object in the message ("" or "spec."). */
static int limits_within(const struct serve_opts *o, const json_t *limits, const json_t *timeout, const char *where,
                         struct nsb_error *e)
{
        struct nsb_config c;
        uint32_t set = 0;
        int r = 0;

        if (!o->max_memory_bytes && !o->max_wall_ms)
                return 0;
        cfg_defaults(&c, NSB_CMD_BATCH);
        if (limits && json_is_object(limits) && cfg_limits_parse_json(limits, &c, &set, e) < 0)
                r = nsb_error_prefix(e, "%s", where);
        else if (o->max_memory_bytes && (set & CFG_F_MEMORY) && c.memory_bytes > o->max_memory_bytes)
                r = nsb_fail(e, NSB_STAGE_CONFIG, ERANGE,
                             "%slimits.memory: above this service's ceiling (--max-memory %s)", where,
                             o->max_memory_arg);
        else if (o->max_wall_ms && (set & CFG_F_WALL_TIME) && c.wall_time_ms > o->max_wall_ms)
                r = nsb_fail(e, NSB_STAGE_CONFIG, ERANGE,
                             "%slimits.wall_time: above this service's ceiling (--max-wall-time %s)", where,
                             o->max_wall_arg);
        else if (o->max_wall_ms && timeout && json_is_number(timeout) &&
                 json_number_value(timeout) * 1e3 > (double) o->max_wall_ms)
                r = nsb_fail(e, NSB_STAGE_CONFIG, ERANGE, "%stimeout: %g s is above this service's ceiling "
                             "(--max-wall-time %s)", where, json_number_value(timeout), o->max_wall_arg);
        cfg_free(&c);
        return r < 0 ? -EINVAL : 0;
}

static int ceilings(const struct serve_opts *o, const json_t *job, struct nsb_error *e)
{
        const json_t *spec = json_object_get(job, "spec");

        if (limits_within(o, json_object_get(job, "limits"), json_object_get(job, "timeout"), "", e) < 0)
                return -EINVAL;
        if (spec && json_is_object(spec) && limits_within(o, json_object_get(spec, "limits"), NULL, "spec.", e) < 0)
                return -EINVAL;
        return 0;
}

int serve_plan_v1_run(const struct serve_opts *o, const char *body, size_t len, json_int_t id, json_t **ret_job,
                      json_t **ret_client_id, unsigned *ret_profile, struct nsb_error *e)
{
        AUTO(json_decref) json_t *job = NULL;
        json_t *cid;

        *ret_job = NULL;
        *ret_client_id = NULL;
        if (load_object(body, len, &job, e) < 0 || check_spec(job, e) < 0 || ceilings(o, job, e) < 0 ||
            take_profile(o, job, true, ret_profile, e) < 0)
                return -EINVAL;
        /* The engine's id is the service's own (unique among the jobs in
         * flight); the client's comes back in its answer. */
        cid = json_object_get(job, "id");
        *ret_client_id = cid ? json_incref(cid) : NULL;
        if (json_object_set_new(job, "id", json_integer(id))) {
                json_decref(move_ptr(ret_client_id));
                return nsb_fail(e, NSB_STAGE_CONFIG, ENOMEM, "out of memory");
        }
        *ret_job = move_ptr(&job);
        return 0;
}
