/* tests/unit/test_serve.c — the pure half of `nsbox serve`: options,
 * routes, the token, SandboxFusion and native requests into job lines, and
 * result lines into answers (the mapping table of docs/serve.md). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <string.h>

#include "serve/serve.h"

static int parse(const char *xdg, struct serve_opts *o, struct nsb_error *e, ...)
{
        char *argv[32] = { (char *) "serve", (char *) "--engine", (char *) "/x/nsbox" };
        int argc = 3;
        va_list ap;
        const char *a;

        va_start(ap, e);
        while ((a = va_arg(ap, const char *)))
                argv[argc++] = (char *) a;
        va_end(ap);
        nsb_error_clear(e);
        return serve_opts_parse(argc, argv, xdg, false, o, e);
}

static void opts_default_socket(void **state)
{
        struct serve_opts o;
        struct nsb_error e;

        (void) state;
        assert_int_equal(parse("/run/user/1000", &o, &e, NULL), 0);
        assert_int_equal(o.listen_kind, SERVE_LISTEN_UNIX);
        assert_string_equal(o.unix_path, "/run/user/1000/nsbox/nsbox.sock");
        assert_true(o.unix_default);
        assert_true(o.warm);
        assert_int_equal(o.queue, SERVE_DEFAULT_QUEUE);
        assert_int_equal(o.read_deadline_s, SERVE_DEFAULT_READ_DEADLINE_S);
        assert_int_equal(o.engine_rotate, SERVE_DEFAULT_ENGINE_ROTATE);
        serve_opts_free(&o);
}

static void opts_no_xdg_names_the_flag(void **state)
{
        struct serve_opts o;
        struct nsb_error e;

        (void) state;
        assert_int_equal(parse(NULL, &o, &e, NULL), -EINVAL);
        assert_non_null(strstr(e.msg, "XDG_RUNTIME_DIR"));
        assert_non_null(strstr(e.msg, "--listen unix:PATH"));
        serve_opts_free(&o);
        /* an explicit socket needs no XDG_RUNTIME_DIR */
        assert_int_equal(parse(NULL, &o, &e, "--listen", "unix:/tmp/s.sock", NULL), 0);
        assert_false(o.unix_default);
        serve_opts_free(&o);
}

static void opts_tcp_needs_token(void **state)
{
        struct serve_opts o;
        struct nsb_error e;

        (void) state;
        assert_int_equal(parse(NULL, &o, &e, "--listen", "tcp:127.0.0.1:8080", NULL), -EINVAL);
        assert_non_null(strstr(e.msg, "--token-file"));
        serve_opts_free(&o);
        assert_int_equal(parse(NULL, &o, &e, "--listen=tcp:[::1]:0", "--token-file", "/t", "-j", "3", "--profile", "a",
                               "--profile=b", "--", "--memory", "1G", NULL), 0);
        assert_int_equal(o.n_profiles, 2);
        assert_string_equal(o.profiles[1], "b");
        assert_string_equal(o.tcp_host, "::1");
        assert_string_equal(o.tcp_port, "0");
        assert_int_equal(o.jobs, 3);
        assert_int_equal(o.n_engine_args, 2);
        assert_string_equal(o.engine_args[0], "--memory");
        serve_opts_free(&o);
}

static void opts_refusals(void **state)
{
        /* each row ends in NULL: parse() reads its arguments up to one */
        static const char *const bad[][4] = {
                { "--listen", "tcp:127.0.0.1", NULL }, { "--listen", "udp:x", NULL }, { "--listen", "unix:rel", NULL },
                { "--listen", "tcp:h:99999", NULL },   { "-j", "0", NULL },           { "--queue", "-1", NULL },
                { "--max-body", "10", NULL },          { "--memory", "1G", NULL },    { "-j", NULL, NULL },
                { "--read-deadline", "0", NULL },      { "--read-deadline", "9999", NULL },
                { "--header-deadline", "0", NULL },    { "--queue-full-status", "200", NULL },
                { "--max-memory", "lots", NULL },      { "--per-ip-connections", "x", NULL },
                { "--engine-rotate", "x", NULL },      { "--profile", "", NULL },
                { "--profile", "a", "--profile" },
        };
        struct serve_opts o;
        struct nsb_error e;

        (void) state;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                assert_int_equal(parse("/run/u", &o, &e, bad[i][0], bad[i][1], bad[i][2], bad[i][3]), -EINVAL);
                assert_int_equal(e.stage, NSB_STAGE_USAGE);
                serve_opts_free(&o);
        }
}

static void activation(void **state)
{
        struct serve_opts o;
        struct nsb_error e;
        char *argv[] = { (char *) "serve", (char *) "--engine", (char *) "/x", (char *) "--listen", (char *) "unix:/s" };

        (void) state;
        assert_int_equal(serve_activation_count(NULL, NULL, 7), 0);
        assert_int_equal(serve_activation_count("7", "1", 7), 1);
        assert_int_equal(serve_activation_count("8", "1", 7), 0);   /* another process's */
        assert_int_equal(serve_activation_count("x", "1", 7), -EINVAL);
        assert_int_equal(serve_activation_count("7", "1x", 7), -EINVAL);
        nsb_error_clear(&e);
        /* activated: no XDG_RUNTIME_DIR needed, and no --listen allowed */
        assert_int_equal(serve_opts_parse(3, argv, NULL, true, &o, &e), 0);
        assert_int_equal(o.listen_kind, SERVE_LISTEN_INHERITED);
        assert_null(o.unix_path);
        serve_opts_free(&o);
        assert_int_equal(serve_opts_parse(5, argv, NULL, true, &o, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "socket activation"));
        serve_opts_free(&o);
}

static void routes(void **state)
{
        enum serve_route r;
        const char *allow;

        (void) state;
        assert_int_equal(serve_route_of("POST", "/run_code", &r, &allow), 200);
        assert_int_equal(r, ROUTE_RUN_CODE);
        assert_int_equal(serve_route_of("POST", "/v1/run", &r, &allow), 200);
        assert_int_equal(r, ROUTE_V1_RUN);
        assert_int_equal(serve_route_of("GET", "/v1/health", &r, &allow), 200);
        assert_int_equal(serve_route_of("GET", "/metrics", &r, &allow), 200);
        assert_int_equal(r, ROUTE_METRICS);
        assert_int_equal(serve_route_of("POST", "/v1/batch", &r, &allow), 200);
        assert_int_equal(r, ROUTE_V1_BATCH);
        assert_int_equal(serve_route_of("GET", "/run_code", &r, &allow), 405);
        assert_string_equal(allow, "POST");
        assert_int_equal(serve_route_of("POST", "/v1/health", &r, &allow), 405);
        assert_string_equal(allow, "GET");
        assert_int_equal(serve_route_of("POST", "/v1/runx", &r, &allow), 404);
        assert_int_equal(serve_route_of("POST", "/", &r, &allow), 404);
}

static void token(void **state)
{
        static const char t[] = "0123456789abcdefXYZ";
        const char *path;

        (void) state;
        assert_true(serve_token_equal(t, strlen(t), t, strlen(t)));
        assert_false(serve_token_equal(t, strlen(t), t, strlen(t) - 1));
        assert_false(serve_token_equal(t, strlen(t), "0123456789abcdefXYz", strlen(t)));
        assert_false(serve_token_equal("", 0, "", 0));   /* an empty token opens nothing */
        assert_true(serve_authorized(NULL, 0, NULL, "/run_code", &path));
        assert_string_equal(path, "/run_code");
        assert_true(serve_authorized(t, strlen(t), "Bearer 0123456789abcdefXYZ", "/run_code", &path));
        assert_string_equal(path, "/run_code");
        assert_true(serve_authorized(t, strlen(t), NULL, "/0123456789abcdefXYZ/run_code", &path));
        assert_string_equal(path, "/run_code");
        assert_false(serve_authorized(t, strlen(t), "Bearer wrong", "/run_code", &path));
        assert_false(serve_authorized(t, strlen(t), NULL, "/run_code", &path));
        assert_false(serve_authorized(t, strlen(t), NULL, "/0123456789abcdefXYZ", &path));
        assert_false(serve_authorized(t, strlen(t), "Basic 0123456789abcdefXYZ", "/x/run_code", &path));
}

static const struct serve_opts no_profiles;

static json_t *plan_ok(const char *body)
{
        json_t *job = NULL;
        struct nsb_error e;
        unsigned prof = 9;

        nsb_error_clear(&e);
        if (serve_plan_run_code(&no_profiles, body, strlen(body), 42, &job, &prof, &e) < 0)
                fail_msg("refused: %s", e.msg);
        return job;
}

static void plan_err(const char *body, const char *needle)
{
        json_t *job = NULL;
        struct nsb_error e;

        nsb_error_clear(&e);
        unsigned prof;

        assert_int_equal(serve_plan_run_code(&no_profiles, body, strlen(body), 1, &job, &prof, &e), -EINVAL);
        assert_null(job);
        if (!strstr(e.msg, needle))
                fail_msg("message '%s' lacks '%s'", e.msg, needle);
}

static void run_code_verl_request(void **state)
{
        /* exactly what verl's SandboxFusion caller sends */
        json_t *job = plan_ok("{\"compile_timeout\": 10, \"run_timeout\": 2.5, \"code\": \"print(input())\", "
                              "\"stdin\": \"hi\\n\", \"language\": \"python\", \"files\": {}, \"fetch_files\": [], "
                              "\"memory_limit_MB\": 256}");
        char *text = json_dumps(job, JSON_COMPACT);

        (void) state;
        assert_string_equal(text, "{\"id\":42,\"kind\":\"python\",\"code\":\"print(input())\",\"stdin\":\"hi\\n\","
                                  "\"timeout\":2.5,\"limits\":{\"memory\":\"256M\"}}");
        free(text);
        json_decref(job);
        /* files and fetch_files become the job's own keys (the engine checks the names) */
        job = plan_ok("{\"code\": \"x\", \"language\": \"python\", \"files\": {\"a/b\": \"eA==\"}, \"fetch_files\": [\"o\"]}");
        text = json_dumps(job, JSON_COMPACT);
        assert_non_null(strstr(text, "\"files\":{\"a/b\":\"eA==\"},\"fetch_files\":[\"o\"]"));
        free(text);
        json_decref(job);
        job = plan_ok("{\"code\": \"pass\", \"language\": \"python\", \"memory_limit_MB\": -1, \"stdin\": null}");
        assert_null(json_object_get(job, "limits"));
        assert_null(json_object_get(job, "stdin"));
        assert_null(json_object_get(job, "timeout"));
        json_decref(job);
}

static void run_code_refusals(void **state)
{
        (void) state;
        plan_err("{\"code\": \"x\"", "not JSON");
        plan_err("[1]", "not a JSON object");
        plan_err("{\"code\": \"x\", \"language\": \"python\", \"colour\": 1}", "unknown key \"colour\"");
        plan_err("{\"code\": \"x\", \"language\": \"cpp\"}", "language \"cpp\" is not supported");
        plan_err("{\"code\": \"x\"}", "language: missing");
        plan_err("{\"language\": \"python\"}", "code: missing");
        plan_err("{\"code\": \"x\", \"language\": \"python\", \"run_timeout\": 0}", "run_timeout");
        plan_err("{\"code\": \"x\", \"language\": \"python\", \"run_timeout\": \"1\"}", "run_timeout");
        plan_err("{\"code\": \"x\", \"language\": \"python\", \"memory_limit_MB\": 1.5}", "memory_limit_MB");
        plan_err("{\"code\": \"x\", \"language\": \"python\", \"stdin\": 3}", "stdin");
        plan_err("{\"code\": \"x\", \"language\": \"python\", \"files\": [\"a\"]}", "files: an object");
        plan_err("{\"code\": \"x\", \"language\": \"python\", \"fetch_files\": \"a\"}", "fetch_files: an array");
        plan_err("{\"code\": \"x\", \"code\": \"y\", \"language\": \"python\"}", "duplicate");
}

static void v1_run(void **state)
{
        static const char body[] = "{\"id\": \"mine\", \"kind\": \"python\", \"code\": \"print(1)\"}";
        json_t *job = NULL, *cid = NULL;
        struct nsb_error e;
        unsigned prof = 9;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(serve_plan_v1_run(&no_profiles, body, strlen(body), 7, &job, &cid, &prof, &e), 0);
        assert_int_equal(prof, 0);
        assert_int_equal(json_integer_value(json_object_get(job, "id")), 7);
        assert_string_equal(json_string_value(cid), "mine");
        json_decref(job);
        json_decref(cid);
        /* a request never names a host file */
        {
                static const char path[] = "{\"id\":1,\"kind\":\"judge\",\"spec\":{\"program\":{\"path\":\"/etc/shadow\"},"
                                           "\"cases\":[{\"name\":\"a\"}]}}";
                static const char profile[] = "{\"id\":1,\"kind\":\"judge\",\"spec\":{\"profile\":\"/tmp/p.ini\","
                                           "\"program\":{\"source\":\"\"},\"cases\":[{\"name\":\"a\"}]}}";
                assert_int_equal(serve_plan_v1_run(&no_profiles, path, strlen(path), 1, &job, &cid, &prof, &e), -EINVAL);
                assert_non_null(strstr(e.msg, "program.path"));
                assert_int_equal(serve_plan_v1_run(&no_profiles, profile, strlen(profile), 1, &job, &cid, &prof, &e), -EINVAL);
                assert_non_null(strstr(e.msg, "spec.profile"));
        }
}

/* The operator's ceilings (--max-memory, --max-wall-time): a request may
 * lower a limit, never raise it; over is refused naming key and ceiling. */
static void ceilings(void **state)
{
        static const struct { const char *body; int v1; const char *needle; } cases[] = {
                { "{\"code\":\"x\",\"language\":\"python\",\"memory_limit_MB\":1048576}", 0,
                  "memory_limit_MB: 1048576 is above this service's ceiling (--max-memory 512M)" },
                { "{\"code\":\"x\",\"language\":\"python\",\"run_timeout\":86400}", 0,
                  "run_timeout: 86400 s is above this service's ceiling (--max-wall-time 30s)" },
                { "{\"kind\":\"python\",\"code\":\"x\",\"limits\":{\"memory\":\"1G\"}}", 1,
                  "limits.memory: above this service's ceiling (--max-memory 512M)" },
                { "{\"kind\":\"python\",\"code\":\"x\",\"limits\":{\"wall_time\":\"1h\"}}", 1,
                  "limits.wall_time: above this service's ceiling (--max-wall-time 30s)" },
                { "{\"kind\":\"python\",\"code\":\"x\",\"timeout\":31}", 1,
                  "timeout: 31 s is above this service's ceiling (--max-wall-time 30s)" },
                { "{\"kind\":\"judge\",\"spec\":{\"program\":{\"source\":\"\"},\"limits\":{\"memory\":\"2G\"},"
                  "\"cases\":[]}}", 1, "spec.limits.memory: above this service's ceiling" },
        };
        static const char *const ok[] = {
                "{\"code\":\"x\",\"language\":\"python\",\"memory_limit_MB\":512,\"run_timeout\":30}",
                "{\"code\":\"x\",\"language\":\"python\",\"memory_limit_MB\":-1}",
        };
        static const char *const ok_v1 = "{\"kind\":\"python\",\"code\":\"x\",\"timeout\":2,"
                                         "\"limits\":{\"memory\":\"128M\"}}";
        struct serve_opts o;
        struct nsb_error e;
        json_t *job = NULL, *cid = NULL;
        unsigned prof;

        (void) state;
        assert_int_equal(parse("/run/u", &o, &e, "--max-memory", "512M", "--max-wall-time", "30s", NULL), 0);
        assert_true(o.max_memory_bytes == 512ull << 20);
        assert_true(o.max_wall_ms == 30000);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                const char *b = cases[i].body;
                int r;

                nsb_error_clear(&e);
                r = cases[i].v1 ? serve_plan_v1_run(&o, b, strlen(b), 1, &job, &cid, &prof, &e)
                                : serve_plan_run_code(&o, b, strlen(b), 1, &job, &prof, &e);
                assert_int_equal(r, -EINVAL);
                if (!strstr(e.msg, cases[i].needle))
                        fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].needle);
                assert_int_equal(e.stage, NSB_STAGE_CONFIG);
        }
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
                nsb_error_clear(&e);
                if (serve_plan_run_code(&o, ok[i], strlen(ok[i]), 1, &job, &prof, &e) < 0)
                        fail_msg("'%s' refused: %s", ok[i], e.msg);
                json_decref(job);
        }
        nsb_error_clear(&e);
        assert_int_equal(serve_plan_v1_run(&o, ok_v1, strlen(ok_v1), 1, &job, &cid, &prof, &e), 0);
        json_decref(job);
        json_decref(cid);
        serve_opts_free(&o);
        /* without ceilings the same requests pass, as before */
        assert_int_equal(serve_plan_run_code(&no_profiles, cases[0].body, strlen(cases[0].body), 1, &job, &prof, &e), 0);
        json_decref(job);
        assert_int_equal(parse("/run/u", &o, &e, "--max-memory", "0", NULL), -EINVAL);
        serve_opts_free(&o);
        assert_int_equal(parse("/run/u", &o, &e, "--max-wall-time", "soon", NULL), -EINVAL);
        serve_opts_free(&o);
        assert_int_equal(parse("/run/u", &o, &e, NULL), 0);
        assert_int_equal(o.per_ip, SERVE_DEFAULT_PER_IP);
        assert_int_equal(o.queue_full_status, 503);
        assert_int_equal(o.header_deadline_s, SERVE_DEFAULT_HEADER_DEADLINE_S);
        assert_int_equal(o.write_deadline_s, SERVE_DEFAULT_WRITE_DEADLINE_S);
        serve_opts_free(&o);
        assert_int_equal(parse("/run/u", &o, &e, "--write-deadline", "5", NULL), 0);
        assert_int_equal(o.write_deadline_s, 5);
        serve_opts_free(&o);
        assert_int_equal(parse("/run/u", &o, &e, "--write-deadline", "0", NULL), -EINVAL);
        serve_opts_free(&o);
        assert_int_equal(parse("/run/u", &o, &e, "--queue-full-status", "504", NULL), 0);
        assert_int_equal(o.queue_full_status, 504);
        serve_opts_free(&o);
        assert_int_equal(parse("/run/u", &o, &e, "--queue-full-status", "500", NULL), -EINVAL);
        serve_opts_free(&o);
        assert_int_equal(parse("/run/u", &o, &e, "--per-ip-connections", "0", NULL), 0);
        assert_int_equal(o.per_ip, 0);
        serve_opts_free(&o);
}

static json_t *map(const char *line)
{
        json_t *l = json_loads(line, 0, NULL), *r;

        assert_non_null(l);
        r = serve_map_run_code(l);
        json_decref(l);
        assert_non_null(r);
        return r;
}

static const char *rr(const json_t *resp, const char *key)
{
        return json_string_value(json_object_get(json_object_get(resp, "run_result"), key));
}

#define LINE(status_and_more)                                                                                         \
        "{\"id\":1,\"schema\":\"nsbox.result/1\"," status_and_more ",\"wall_ms\":1500.0,"                              \
        "\"stdout\":{\"text\":\"out\"},\"stderr\":{\"text\":\"err\"},\"batch\":{\"line\":1,\"start_ms\":0,\"end_ms\":1}}"

/* docs/serve.md's mapping table, row by row. */
static void mapping_table(void **state)
{
        json_t *r;

        (void) state;
        r = map(LINE("\"status\":\"exited\",\"exit_code\":0"));
        assert_string_equal(json_string_value(json_object_get(r, "status")), "Success");
        assert_string_equal(rr(r, "status"), "Finished");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "run_result"), "return_code")), 0);
        assert_true(json_real_value(json_object_get(json_object_get(r, "run_result"), "execution_time")) == 1.5);
        assert_string_equal(rr(r, "stdout"), "out");
        assert_string_equal(rr(r, "stderr"), "err");
        assert_true(json_is_null(json_object_get(r, "compile_result")));
        json_decref(r);

        r = map(LINE("\"status\":\"exited\",\"exit_code\":3"));
        assert_string_equal(json_string_value(json_object_get(r, "status")), "Failed");
        assert_string_equal(rr(r, "status"), "Finished");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "run_result"), "return_code")), 3);
        json_decref(r);

        r = map(LINE("\"status\":\"signaled\",\"signal\":9,\"signal_name\":\"SIGKILL\""));
        assert_string_equal(json_string_value(json_object_get(r, "status")), "Failed");
        assert_string_equal(rr(r, "status"), "Finished");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "run_result"), "return_code")), 137);
        json_decref(r);

        for (int i = 0; i < 2; i++) {
                r = map(i ? LINE("\"status\":\"limit\",\"limit\":\"cpu_time\"") : LINE("\"status\":\"limit\",\"limit\":\"wall_time\""));
                assert_string_equal(json_string_value(json_object_get(r, "status")), "Failed");   /* a limit is never Success */
                assert_string_equal(rr(r, "status"), "TimeLimitExceeded");
                assert_true(json_is_null(json_object_get(json_object_get(r, "run_result"), "return_code")));
                json_decref(r);
        }
        r = map(LINE("\"status\":\"limit\",\"limit\":\"memory\""));
        assert_string_equal(json_string_value(json_object_get(r, "status")), "Failed");
        assert_string_equal(rr(r, "status"), "Error");
        assert_non_null(strstr(json_string_value(json_object_get(r, "message")), "memory"));
        json_decref(r);
        /* the value and the flag, as the CLI says it (config/hints.h) */
        r = map(LINE("\"status\":\"limit\",\"limit\":\"memory\",\"limit_value\":\"256M\""));
        assert_string_equal(json_string_value(json_object_get(r, "message")),
                            "stopped by the memory limit (256M; raise it with memory_limit_MB)");
        json_decref(r);
        /* a /run_code caller has no flags: its request's key, or none (review of the #32 follow-up) */
        r = map(LINE("\"status\":\"limit\",\"limit\":\"wall_time\",\"limit_value\":\"10s\""));
        assert_string_equal(json_string_value(json_object_get(r, "message")),
                            "stopped by the wall_time limit (10s; raise it with run_timeout)");
        json_decref(r);
        r = map(LINE("\"status\":\"limit\",\"limit\":\"pids\",\"limit_value\":\"64\""));
        assert_string_equal(json_string_value(json_object_get(r, "message")), "stopped by the pids limit (64)");
        json_decref(r);
        r = map(LINE("\"status\":\"limit\",\"limit\":\"cpu_time\""));
        assert_string_equal(json_string_value(json_object_get(r, "message")), "stopped by the cpu_time limit");
        json_decref(r);

        /* a sandbox failure is never Failed */
        r = map(LINE("\"status\":\"error\",\"error\":{\"stage\":\"mount\",\"message\":\"boom\"}"));
        assert_string_equal(json_string_value(json_object_get(r, "status")), "SandboxError");
        assert_true(json_is_null(json_object_get(r, "run_result")));
        assert_non_null(strstr(json_string_value(json_object_get(r, "message")), "mount"));
        json_decref(r);
        r = map(LINE("\"status\":\"cancelled\""));
        assert_string_equal(json_string_value(json_object_get(r, "status")), "SandboxError");
        json_decref(r);
        r = map(LINE("\"status\":\"weird\""));
        assert_string_equal(json_string_value(json_object_get(r, "status")), "SandboxError");
        json_decref(r);
}

static void bad_request_lines(void **state)
{
        json_t *bad = json_loads("{\"id\":1,\"status\":\"error\",\"error\":{\"stage\":\"config\",\"message\":\"m\"},"
                                 "\"batch\":{\"line\":4}}", 0, NULL);
        json_t *ran = json_loads(LINE("\"status\":\"error\",\"error\":{\"stage\":\"mount\",\"message\":\"m\"}"), 0, NULL);
        json_t *cid = json_string("c"), *v1;

        (void) state;
        assert_true(serve_line_is_bad_request(bad));
        assert_string_equal(serve_bad_request_message(bad), "m");
        assert_false(serve_line_is_bad_request(ran));
        v1 = serve_map_v1_run(ran, cid);
        assert_null(json_object_get(v1, "batch"));
        assert_string_equal(json_string_value(json_object_get(v1, "id")), "c");
        json_decref(v1);
        v1 = serve_map_v1_run(ran, NULL);
        assert_null(json_object_get(v1, "id"));
        json_decref(v1);
        json_decref(bad);
        json_decref(ran);
        json_decref(cid);
}

static void batch_lines(void **state)
{
        json_t *ran = json_loads(LINE("\"status\":\"exited\",\"exit_code\":0"), 0, NULL);
        json_t *cid = json_string("c"), *l;

        (void) state;
        l = serve_map_batch_line(ran, cid, 9);
        assert_string_equal(json_string_value(json_object_get(l, "id")), "c");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "batch"), "line")), 9);
        assert_null(json_object_get(json_object_get(l, "batch"), "start_ms"));
        json_decref(l);
        l = serve_batch_error_line(NULL, 4, "cancelled", "supervise", "cancelled: stopped");
        assert_null(json_object_get(l, "id"));   /* absent, not null (docs/serve.md) */
        assert_string_equal(json_string_value(json_object_get(l, "status")), "cancelled");
        assert_string_equal(json_string_value(json_object_get(l, "outcome")), "error");
        assert_int_equal(json_integer_value(json_object_get(l, "label")), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(l, "error"), "stage")), "supervise");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(l, "batch"), "line")), 4);
        json_decref(l);
        l = serve_batch_error_line(cid, 5, "error", "config", "line 5: x");
        assert_string_equal(json_string_value(json_object_get(l, "id")), "c");
        assert_string_equal(json_object_iter_key(json_object_iter(l)), "id");   /* first, as in result lines */
        json_decref(l);
        json_decref(ran);
        json_decref(cid);
}

static void profiles(void **state)
{
        struct serve_opts o = { .profiles = { "python", "course" }, .n_profiles = 2 };
        static const char v1[] = "{\"kind\":\"python\",\"code\":\"1\",\"profile\":\"course\"}";
        static const char sf[] = "{\"code\":\"1\",\"language\":\"python\",\"profile\":\"course\"}";
        static const char bad[] = "{\"code\":\"1\",\"language\":\"python\",\"profile\":\"/etc/x.ini\"}";
        json_t *job = NULL, *cid = NULL;
        struct nsb_error e;
        unsigned prof = 9;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(serve_plan_v1_run(&o, v1, strlen(v1), 3, &job, &cid, &prof, &e), 0);
        assert_int_equal(prof, 1);
        assert_null(json_object_get(job, "profile"));   /* the engine is the profile: batch has no such key */
        json_decref(job);
        assert_int_equal(serve_plan_run_code(&o, sf, strlen(sf), 3, &job, &prof, &e), 0);
        assert_int_equal(prof, 1);
        assert_null(json_object_get(job, "profile"));
        json_decref(job);
        assert_int_equal(serve_plan_run_code(&o, bad, strlen(bad), 3, &job, &prof, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "not one of this service's (python, course)"));
        assert_int_equal(serve_plan_run_code(&no_profiles, sf, strlen(sf), 3, &job, &prof, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "without --profile"));
}

static void metrics(void **state)
{
        struct serve_metrics m;
        json_t *pass = json_loads(LINE("\"status\":\"exited\",\"exit_code\":0,\"outcome\":\"pass\""), 0, NULL);
        json_t *tle = json_loads(LINE("\"status\":\"limit\",\"limit\":\"wall_time\",\"outcome\":\"timeout\",\"start\":\"warm\""), 0, NULL);
        json_t *verdict = json_loads("{\"schema\":\"nsbox.verdict/1\",\"verdict\":\"fail\"}", 0, NULL);
        char *text;

        (void) state;
        memset(&m, 0, sizeof m);
        serve_metrics_job(&m, pass, 0.02);
        serve_metrics_job(&m, tle, 2.0);
        serve_metrics_job(&m, verdict, 100.0);
        m.refused[REFUSE_QUEUE_FULL] = 2;
        m.warm_slots = 2;
        text = serve_metrics_render(&m, 3, 66, 2, false);
        assert_non_null(text);
        assert_non_null(strstr(text, "nsbox_serve_jobs_total{status=\"exited\"} 1\n"));
        assert_non_null(strstr(text, "nsbox_serve_jobs_total{status=\"limit\"} 1\n"));
        assert_non_null(strstr(text, "nsbox_serve_jobs_total{status=\"fail\"} 1\n"));
        assert_non_null(strstr(text, "nsbox_serve_python_outcomes_total{outcome=\"timeout\"} 1\n"));
        /* cumulative buckets; 100 s lands only in +Inf */
        assert_non_null(strstr(text, "nsbox_serve_job_seconds_bucket{le=\"0.01\"} 0\n"));
        assert_non_null(strstr(text, "nsbox_serve_job_seconds_bucket{le=\"0.025\"} 1\n"));
        assert_non_null(strstr(text, "nsbox_serve_job_seconds_bucket{le=\"2.5\"} 2\n"));
        assert_non_null(strstr(text, "nsbox_serve_job_seconds_bucket{le=\"30\"} 2\n"));
        assert_non_null(strstr(text, "nsbox_serve_job_seconds_bucket{le=\"+Inf\"} 3\n"));
        assert_non_null(strstr(text, "nsbox_serve_job_seconds_count 3\n"));
        assert_non_null(strstr(text, "nsbox_serve_refusals_total{reason=\"queue_full\"} 2\n"));
        assert_non_null(strstr(text, "nsbox_serve_in_flight 3\n"));
        assert_non_null(strstr(text, "nsbox_serve_capacity 66\n"));
        assert_non_null(strstr(text, "nsbox_serve_starts_total{start=\"warm\"} 1\n"));
        assert_non_null(strstr(text, "nsbox_serve_warm_slots 2\n"));
        assert_non_null(strstr(text, "nsbox_serve_refusals_total{reason=\"slow_reader\"} 0\n"));
        free(text);
        json_decref(pass);
        json_decref(tle);
        json_decref(verdict);
}

/* A message cut inside a UTF-8 character ("unknown key \"%.64s\"" of a
 * key with a two-byte character at byte 64) is still an error body, the key
 * named: before, json_pack refused it and the client got 500 "out of memory". */
static void error_body_cut_utf8(void **state)
{
        static const char cut[] = "unknown key \"aaa\xc3\"";   /* the first byte of \u00e9, then a quote */
        json_t *b = serve_error_body(400, cut), *sf = serve_map_run_code_error(cut);

        (void) state;
        assert_non_null(b);
        assert_non_null(strstr(json_string_value(json_object_get(json_object_get(b, "error"), "message")),
                               "unknown key \"aaa"));
        assert_non_null(sf);
        assert_string_equal(json_string_value(json_object_get(sf, "status")), "SandboxError");
        json_decref(b);
        json_decref(sf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(opts_default_socket), cmocka_unit_test(opts_no_xdg_names_the_flag),
                cmocka_unit_test(opts_tcp_needs_token), cmocka_unit_test(opts_refusals),
                cmocka_unit_test(activation),           cmocka_unit_test(routes),               cmocka_unit_test(token),
                cmocka_unit_test(run_code_verl_request), cmocka_unit_test(run_code_refusals),
                cmocka_unit_test(v1_run),               cmocka_unit_test(mapping_table),
                cmocka_unit_test(bad_request_lines),    cmocka_unit_test(metrics),
                cmocka_unit_test(batch_lines), cmocka_unit_test(ceilings),          cmocka_unit_test(profiles),
                cmocka_unit_test(error_body_cut_utf8),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
