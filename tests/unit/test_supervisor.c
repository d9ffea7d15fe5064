/* Unit tests for the supervisor's pure parts: the outcome mapping, the exit
 * codes, bounded capture, the environment and the order of the child steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/capture.h"
#include "supervisor/child.h"
#include "supervisor/env_plan.h"
#include "supervisor/fetch_plan.h"
#include "supervisor/outcome.h"
#include "cgroup/proc_tree.h"
#include "supervisor/reduced.h"
#include "supervisor/stdin_pump.h"
#include "supervisor/warm_spec.h"
#include "supervisor/wire.h"
#include "util/cleanup.h"

#define EXITED(code) ((code) << 8)
#define KILLED(sig) (sig)

static void decide(const struct observed *o, struct run_result *r)
{
        memset(r, 0, sizeof *r);
        outcome_decide(o, r);
}

static void test_outcomes(void **state)
{
        static const struct {
                struct observed o;
                enum run_status status;
                enum run_limit limit;
                unsigned hits;
                int exit_code;   /* nsbox's process exit code */
        } cases[] = {
                { { .got_exit = true, .program_started = true, .wait_status = EXITED(0) }, RUN_EXITED, LIMIT_NONE, 0, 0 },
                { { .got_exit = true, .program_started = true, .wait_status = EXITED(3) }, RUN_EXITED, LIMIT_NONE, 0, 3 },
                { { .got_exit = true, .program_started = true, .wait_status = KILLED(SIGSEGV) }, RUN_SIGNALED, LIMIT_NONE, 0, 128 + SIGSEGV },
                { { .got_exit = true, .wait_status = KILLED(SIGKILL), .oom_killed = true }, RUN_LIMIT, LIMIT_MEMORY, 1u << LIMIT_MEMORY, 124 },
                { { .got_exit = true, .wait_status = KILLED(SIGXFSZ) }, RUN_LIMIT, LIMIT_FILE_SIZE, 1u << LIMIT_FILE_SIZE, 124 },
                { { .got_exit = true, .wait_status = KILLED(SIGXCPU), .cpu_over = true }, RUN_LIMIT, LIMIT_CPU_TIME, 1u << LIMIT_CPU_TIME, 124 },
                /* a SIGXCPU the program raised itself, under the limit, is just a signal */
                { { .got_exit = true, .wait_status = KILLED(SIGXCPU) }, RUN_SIGNALED, LIMIT_NONE, 0, 128 + SIGXCPU },
                /* SIGKILL without OOM and without nsbox killing: the program's own doing */
                { { .got_exit = true, .wait_status = KILLED(SIGKILL) }, RUN_SIGNALED, LIMIT_NONE, 0, 128 + SIGKILL },
                { { .killed = KILL_WALL_TIME }, RUN_LIMIT, LIMIT_WALL_TIME, 1u << LIMIT_WALL_TIME, 124 },
                { { .killed = KILL_CPU_TIME, .cpu_over = true }, RUN_LIMIT, LIMIT_CPU_TIME, 1u << LIMIT_CPU_TIME, 124 },
                { { .killed = KILL_OUTPUT }, RUN_LIMIT, LIMIT_OUTPUT, 1u << LIMIT_OUTPUT, 124 },
                /* rlimit: the supervisor's sum of the tree's memory went past the limit */
                { { .killed = KILL_MEMORY }, RUN_LIMIT, LIMIT_MEMORY, 1u << LIMIT_MEMORY, 124 },
                /* the tree used its CPU time (per-process RLIMIT_CPU killed a child) but the
                 * wall time ended the run: both were reached */
                { { .killed = KILL_WALL_TIME, .cpu_over = true }, RUN_LIMIT, LIMIT_WALL_TIME,
                  1u << LIMIT_WALL_TIME | 1u << LIMIT_CPU_TIME, 124 },
                /* the tree's CPU time reached the limit, the program ended before the
                 * watch could stop it: the limit all the same (#27), as a peak over
                 * --memory is; never "exited" with cpu_time in limits_hit */
                { { .got_exit = true, .wait_status = EXITED(0), .cpu_over = true }, RUN_LIMIT, LIMIT_CPU_TIME,
                  1u << LIMIT_CPU_TIME, 124 },
                { { .got_exit = true, .wait_status = KILLED(SIGSEGV), .cpu_over = true }, RUN_LIMIT, LIMIT_CPU_TIME,
                  1u << LIMIT_CPU_TIME, 124 },
                /* a death another limit explains stays that limit's */
                { { .got_exit = true, .wait_status = KILLED(SIGXFSZ), .cpu_over = true }, RUN_LIMIT, LIMIT_FILE_SIZE,
                  1u << LIMIT_FILE_SIZE | 1u << LIMIT_CPU_TIME, 124 },
                { { .got_exit = true, .wait_status = KILLED(SIGKILL), .cpu_over = true, .oom_killed = true }, RUN_LIMIT,
                  LIMIT_MEMORY, 1u << LIMIT_MEMORY | 1u << LIMIT_CPU_TIME, 124 },
                { { .killed = KILL_CANCEL, .got_exit = true, .wait_status = EXITED(0) }, RUN_CANCELLED, LIMIT_NONE, 0, 130 },
                /* a sandbox failure outranks a kill and an exit */
                { { .setup_error = true, .killed = KILL_WALL_TIME }, RUN_ERROR, LIMIT_NONE, 0, 125 },
                /* a refused fork is recorded even when the program exits normally */
                { { .got_exit = true, .wait_status = EXITED(1), .pids_limit_hit = true }, RUN_EXITED, LIMIT_NONE, 1u << LIMIT_PIDS, 1 },
                { { .got_exit = true, .wait_status = EXITED(0), .memory_limit_hit = true }, RUN_EXITED, LIMIT_NONE, 1u << LIMIT_MEMORY, 0 },
                /* the init vanished without a report: a sandbox error, never an exit code */
                { { .program_started = true, .init_status = KILLED(SIGKILL) }, RUN_ERROR, LIMIT_NONE, 0, 125 },
                /* a warm job whose zygote died (its init killed with it): the same */
                { { .program_started = true, .warm = true, .init_status = KILLED(SIGKILL) }, RUN_ERROR, LIMIT_NONE, 0,
                  125 },
                { { .warm = true, .init_status = KILLED(SIGKILL) }, RUN_ERROR, LIMIT_NONE, 0, 125 },
                { { .oom_killed = true }, RUN_LIMIT, LIMIT_MEMORY, 1u << LIMIT_MEMORY, 124 },
                /* rlimit: a burst past the limit between two polls, seen only in the
                 * rusage peak: named, never "exited 0"; at the limit is not past it */
                { { .got_exit = true, .wait_status = EXITED(0), .peak_memory_bytes = 67u << 20,
                    .peak_limit_bytes = 64u << 20 }, RUN_LIMIT, LIMIT_MEMORY, 1u << LIMIT_MEMORY, 124 },
                { { .got_exit = true, .wait_status = KILLED(SIGSEGV), .peak_memory_bytes = 67u << 20,
                    .peak_limit_bytes = 64u << 20 }, RUN_LIMIT, LIMIT_MEMORY, 1u << LIMIT_MEMORY, 124 },
                { { .got_exit = true, .wait_status = EXITED(0), .peak_memory_bytes = 64u << 20,
                    .peak_limit_bytes = 64u << 20 }, RUN_EXITED, LIMIT_NONE, 0, 0 },
                { { .got_exit = true, .wait_status = EXITED(0), .peak_memory_bytes = 67u << 20 }, RUN_EXITED,
                  LIMIT_NONE, 0, 0 },   /* a cgroup backend: its own peak, its own events */
                { { .killed = KILL_WALL_TIME, .peak_memory_bytes = 67u << 20, .peak_limit_bytes = 64u << 20 },
                  RUN_LIMIT, LIMIT_WALL_TIME, 1u << LIMIT_WALL_TIME | 1u << LIMIT_MEMORY, 124 },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct run_result r;
                decide(&cases[i].o, &r);
                if (r.status != cases[i].status || r.limit != cases[i].limit || r.limits_hit != cases[i].hits ||
                    result_exit_code(&r) != cases[i].exit_code)
                        fail_msg("case %zu: status %d limit %d hits %x exit %d", i, r.status, r.limit, r.limits_hit,
                                 result_exit_code(&r));
                if (r.status == RUN_ERROR && !cases[i].o.setup_error)
                        assert_true(strlen(r.error.msg) > 0);
        }
}

static void test_capture_bounds(void **state)
{
        struct run_stream st;
        char chunk[3000];
        long kept;

        (void) state;
        memset(&st, 0, sizeof st);
        memset(chunk, 'a', sizeof chunk);
        chunk[sizeof chunk - 1] = 'Z';
        kept = capture_feed(&st, 5000, chunk, sizeof chunk);
        assert_int_equal(kept, 3000);
        assert_false(st.truncated);
        kept = capture_feed(&st, 5000, chunk, sizeof chunk);
        assert_int_equal(kept, 2000);
        assert_true(st.truncated);
        assert_int_equal(st.kept, 5000);
        assert_int_equal(st.bytes, 6000);
        for (int i = 0; i < 100; i++)
                capture_feed(&st, 5000, chunk, sizeof chunk);
        assert_int_equal(st.kept, 5000);             /* memory stays bounded */
        assert_int_equal(st.tail_len, RUN_TAIL_MAX);
        assert_int_equal(st.tail[RUN_TAIL_MAX - 1], 'Z'); /* the tail is the last bytes */
        capture_feed(&st, 5000, "end\n", 4);
        assert_memory_equal(st.tail + RUN_TAIL_MAX - 4, "end\n", 4);
        free(st.text);
        /* stopped past 4x the limit, and a huge limit never wraps to a small one */
        assert_false(capture_over_limit(4000, 1000));
        assert_true(capture_over_limit(4001, 1000));
        assert_true(capture_over_limit(1, 0));
        assert_false(capture_over_limit(2, UINT64_C(1) << 62));
        assert_false(capture_over_limit(UINT64_MAX, UINT64_MAX / 4 + 1));
        assert_true(capture_over_limit(UINT64_MAX, UINT64_MAX / 4 - 1));
}

static void test_result_json(void **state)
{
        struct run_result r;
        json_t *j;
        char bad[] = { 'o', 'k', (char) 0xff, '\n' };

        (void) state;
        memset(&r, 0, sizeof r);
        ledger_init(&r.ledger);
        ledger_set(&r.ledger, PROT_NET, "empty-netns");
        r.status = RUN_LIMIT;
        r.limit = LIMIT_WALL_TIME;
        r.limits_hit = 1u << LIMIT_WALL_TIME;
        r.signal = SIGKILL;
        r.out.text = bad;
        r.out.kept = sizeof bad;
        r.out.bytes = 100;
        r.out.truncated = true;
        memcpy(r.out.tail, "tail", 4);
        r.out.tail_len = 4;
        j = result_to_json(&r, 1024);
        assert_string_equal(json_string_value(json_object_get(j, "status")), "limit");
        assert_string_equal(json_string_value(json_object_get(j, "limit")), "wall_time");
        assert_true(json_is_null(json_object_get(j, "exit_code")));
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "stdout"), "text")), "ok\xef\xbf\xbd\n");
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "stdout"), "tail")), "tail");
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "protections"), "net")), "empty-netns");
        /* a protection never recorded is never claimed */
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "protections"), "seccomp")), "unavailable");
        assert_string_equal(json_string_value(json_array_get(json_object_get(j, "limits_hit"), 0)), "wall_time");
        json_decref(j);
        r.out.text = NULL;
}

static void test_env_scrubbed(void **state)
{
        struct nsb_config cfg;
        struct nsb_error e;
        char **envp, *adds[] = { "FOO=bar", "HOME=/workspace" };
        bool foo = false, home = false;

        (void) state;
        cfg_defaults(&cfg, NSB_CMD_RUN);
        cfg.env_add = adds;
        cfg.n_env_add = 2;
        setenv("NSBOX_SECRET_TEST", "leak", 1);
        assert_int_equal(env_build(&cfg, NULL, &envp, &e), 0);
        for (size_t i = 0; envp[i]; i++) {
                assert_null(strstr(envp[i], "NSBOX_SECRET_TEST"));
                foo = foo || strcmp(envp[i], "FOO=bar") == 0;
                if (strncmp(envp[i], "HOME=", 5) == 0) {
                        assert_string_equal(envp[i], "HOME=/workspace");   /* override, not a duplicate */
                        assert_false(home);
                        home = true;
                }
        }
        assert_true(foo && home);
        env_free(envp);
}

/* An image's Env (image/image.h): over nsbox's set, under --env; its HOME
 * and TMPDIR never replace the sandbox's writable /tmp. */
static void test_env_image_base(void **state)
{
        struct nsb_config cfg;
        struct nsb_error e;
        char *img[] = { "PATH=/opt/py/bin:/usr/bin", "HOME=/root", "TMPDIR=/var/tmp", "LANG=de_DE.UTF-8", "A=img" };
        char *adds[] = { "A=flag" };
        const char *want[] = { "PATH=/opt/py/bin:/usr/bin", "HOME=/tmp", "TMPDIR=/tmp", "LANG=de_DE.UTF-8", "A=flag" };
        char **envp;

        (void) state;
        cfg_defaults(&cfg, NSB_CMD_PYTHON);
        cfg.image_env = img;
        cfg.n_image_env = 5;
        cfg.env_add = adds;
        cfg.n_env_add = 1;
        assert_int_equal(env_build(&cfg, NULL, &envp, &e), 0);
        for (size_t w = 0; w < 5; w++) {
                size_t hits = 0, klen = strcspn(want[w], "=") + 1;
                for (size_t i = 0; envp[i]; i++)
                        if (strncmp(envp[i], want[w], klen) == 0) {
                                assert_string_equal(envp[i], want[w]);
                                hits++;
                        }
                assert_int_equal(hits, 1);
        }
        env_free(envp);
}

static int step_index(int stage)
{
        for (unsigned i = 0; i < child_program_n_steps; i++)
                if (child_program_steps[i].stage == stage)
                        return (int) i;
        return -1;
}

static void test_step_order(void **state)
{
        (void) state;
        /* seccomp is the very last step before execve */
        assert_int_equal(step_index(NSB_STAGE_SECCOMP), (int) child_program_n_steps - 1);
        /* no_new_privs before landlock_restrict_self and the filter */
        assert_true(step_index(NSB_STAGE_NNP) >= 0);
        assert_true(step_index(NSB_STAGE_NNP) < step_index(NSB_STAGE_LANDLOCK));
        assert_true(step_index(NSB_STAGE_NNP) < step_index(NSB_STAGE_SECCOMP));
        /* capabilities go before the kernel-surface filters */
        assert_true(step_index(NSB_STAGE_CAPS) < step_index(NSB_STAGE_LANDLOCK));
        for (unsigned i = 0; i < child_program_n_steps; i++)
                assert_non_null(child_program_steps[i].fn);
}

static int named_index(const struct child_step *steps, unsigned n, const char *name)
{
        for (unsigned i = 0; i < n; i++)
                if (strcmp(steps[i].name, name) == 0)
                        return (int) i;
        return -1;
}

/* The inits' tables carry the ordering rules their comments give: a table
 * reordered, or a step lost, fails here. */
static void test_init_step_order(void **state)
{
        const struct child_step *st = child_init_steps, *rd = child_reduced_init_steps;
        unsigned n = child_init_n_steps, nr = child_reduced_init_n_steps;

        (void) state;
        /* strict: the ids exist only once the maps are written; the
         * parent-death signal after the uid change that clears it; the
         * dumpable flag after the maps; the tree before the v1 join; the
         * program last */
        assert_true(named_index(st, n, "init_hide_cmdline") == 0);
        assert_true(named_index(st, n, "init_join_cgroup") < named_index(st, n, "init_wait_go"));
        /* the caller's descriptions dropped right after the cgroup join */
        assert_int_equal(named_index(st, n, "init_drop_caller_fds"), named_index(st, n, "init_join_cgroup") + 1);
        assert_true(named_index(st, n, "init_wait_go") < named_index(st, n, "init_take_sandbox_ids"));
        assert_true(named_index(st, n, "init_take_sandbox_ids") < named_index(st, n, "init_die_with_parent"));
        assert_true(named_index(st, n, "init_wait_go") < named_index(st, n, "init_not_dumpable"));
        assert_true(named_index(st, n, "init_network") >= 0);
        assert_true(named_index(st, n, "init_mounts") < named_index(st, n, "init_cgroup_v1"));
        assert_int_equal(named_index(st, n, "init_run_program"), (int) n - 1);
        /* reduced: the cgroup first, nobody's identity before the
         * parent-death signal (setresuid clears it), the program last */
        assert_int_equal(named_index(rd, nr, "init_join_cgroup"), 0);
        assert_int_equal(named_index(rd, nr, "init_drop_caller_fds"), 1);
        assert_true(named_index(rd, nr, "reduced_take_identity") < named_index(rd, nr, "reduced_parent_death"));
        assert_int_equal(named_index(rd, nr, "reduced_run_program"), (int) nr - 1);
        for (unsigned i = 0; i < n; i++)
                assert_non_null(st[i].fn);
        for (unsigned i = 0; i < nr; i++)
                assert_non_null(rd[i].fn);
}

/* The warm tables: the zygote's sandbox runs the cold init's steps, then
 * its own; a job's init maps its ids before anything needs them, dies with
 * the zygote only after that (the uid change would clear it), builds its
 * mounts before its cgroup namespace, forks the job last; the zygote's
 * program has no Landlock (it forbids the jobs' mounts) and no seccomp
 * (its namespace rules forbid the zygote's clone3). */
static void test_warm_step_order(void **state)
{
        const struct child_step *z = child_zygote_init_steps, *j = child_warm_job_init_steps;
        const struct child_step *zp = child_zygote_program_steps;
        unsigned nz = child_zygote_init_n_steps, nj = child_warm_job_init_n_steps, nzp = child_zygote_program_n_steps;

        (void) state;
        for (unsigned i = 0; i + 1 < child_init_n_steps; i++)
                assert_string_equal(z[i].name, child_init_steps[i].name);
        assert_true(named_index(z, nz, "zygote_proc_writable") > named_index(z, nz, "init_mounts"));
        assert_int_equal(named_index(z, nz, "init_run_zygote"), (int) nz - 1);
        assert_int_equal(named_index(zp, nzp, "step_landlock"), -1);
        assert_int_equal(named_index(zp, nzp, "step_seccomp"), -1);
        assert_true(named_index(zp, nzp, "step_caps") >= 0 && named_index(zp, nzp, "step_nnp") >= 0);
        assert_int_equal(named_index(j, nj, "job_default_sigchld"), 0);
        assert_true(named_index(j, nj, "job_map_ids") < named_index(j, nj, "init_die_with_parent"));
        assert_true(named_index(j, nj, "job_map_ids") < named_index(j, nj, "init_not_dumpable"));
        assert_true(named_index(j, nj, "job_mounts") < named_index(j, nj, "init_cgroup_v1"));
        assert_int_equal(named_index(j, nj, "init_run_warm_job"), (int) nj - 1);
        /* the supervisor's "go" (after it attached the tree's clock) before the job exists */
        assert_int_equal(named_index(j, nj, "init_wait_go"), (int) nj - 2);
        for (unsigned i = 0; i < nj; i++)
                assert_non_null(j[i].fn);
}

/* A warm job's spec crosses to the zygote whole, and a cut or foreign
 * buffer is refused, never read past. */
static void test_warm_spec(void **state)
{
        struct sock_filter insns[3] = { { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10, 11, 12 } };
        struct filter_prog fp = { insns, 3 };
        struct ll_path_rule rules[2] = { { "/", false }, { "/tmp", true } };
        struct ll_spec ll = { rules, 2, false };
        /* a job's files: written after /workspace is mounted; the fetch names ride in the spec */
        static const struct mnt_file files[] = { { "d/in.txt", "hi", 2 } };
        static const char *const fetch[] = { "out.txt", "d/in.txt" };
        struct mnt_input in = { .user = { .tmp_size_bytes = 1 << 20 }, .program_name = "main.py",
                                .program_data = "print(1)\n", .program_len = 9, .sandbox_uid = 1000,
                                .sandbox_gid = 1000, .files = files, .n_files = 1, .fetch = fetch, .n_fetch = 2 };
        struct mnt_plan plan;
        size_t ws = 0, wf = 0;
        struct warm_limits lim = { .wall_time_ms = 1000, .memory_bytes = 64 << 20, .pids_max = 9,
                                   .file_size_bytes = 4096, .backend = 2, .fail_stage = 0 };
        char *const argv[] = { "/usr/bin/python3", "-I", "/program/main.py", "x", NULL };
        struct warm_job j;
        struct nsb_error e;
        char *buf = NULL;
        size_t len = 0;

        (void) state;
        assert_int_equal(mnt_plan_build_warm_job(&in, &plan, &e), 0);
        assert_true(plan.starts_pivoted);
        /* a fresh /proc first; /tmp, /workspace and /program fresh; /program sealed; chdir last */
        assert_int_equal(plan.ops[0].kind, MNT_PROC);
        assert_int_equal(plan.ops[plan.n_ops - 1].kind, MNT_CHDIR);
        for (size_t i = 0; i < plan.n_ops; i++) {
                if (plan.ops[i].kind == MNT_TMPFS && strcmp(plan.ops[i].dst, "/workspace") == 0)
                        ws = i;
                if (plan.ops[i].kind == MNT_WRITE_FILE && strcmp(plan.ops[i].dst, "/workspace/d/in.txt") == 0)
                        wf = i;
        }
        assert_true(ws > 0 && wf > ws);
        assert_int_equal(plan.ops[wf - 1].kind, MNT_MKDIR);
        assert_string_equal(plan.ops[wf - 1].dst, "/workspace/d");
        assert_int_equal(plan.n_fetch, 2);
        assert_int_equal(warm_spec_encode(&lim, &fp, &ll, &plan, argv, 4, 2, &buf, &len, &e), 0);
        assert_int_equal(warm_spec_decode(buf, len, &j, &e), 0);
        assert_int_equal(j.filter.len, 3);
        assert_memory_equal(j.filter.insns, insns, sizeof insns);
        assert_int_equal(j.landlock.n_rules, 2);
        assert_string_equal(j.rules[1].path, "/tmp");
        assert_true(j.rules[1].writable);
        assert_int_equal(j.plan.n_ops, plan.n_ops);
        for (size_t i = 0; i < plan.n_ops; i++) {
                assert_int_equal(j.plan.ops[i].kind, plan.ops[i].kind);
                assert_string_equal(j.plan.ops[i].dst, plan.ops[i].dst);
                assert_int_equal(j.plan.ops[i].size, plan.ops[i].size);
        }
        assert_memory_equal(j.plan.ops[wf].data, "hi", 2);
        assert_int_equal(j.plan.n_fetch, 2);
        assert_string_equal(j.plan.fetch[1], "d/in.txt");
        assert_int_equal(j.argc, 4);
        assert_int_equal(j.script, 2);
        assert_string_equal(j.argv[3], "x");
        assert_null(j.argv[4]);
        assert_int_equal(j.cfg.pids_max, 9);
        assert_int_equal(j.cfg.file_size_bytes, 4096);
        warm_job_free(&j);
        /* every cut is refused */
        for (size_t cut = 0; cut < len; cut += 7)
                assert_int_equal(warm_spec_decode(buf, cut, &j, &e), -EPROTO);
        buf[0] ^= 1;
        assert_int_equal(warm_spec_decode(buf, len, &j, &e), -EPROTO);
        free(buf);
        /* a program file is required: the zygote's argv ends where it begins */
        assert_true(warm_spec_encode(&lim, &fp, &ll, &plan, argv, 4, 4, &buf, &len, &e) < 0);
        mnt_plan_free(&plan);
}

/* The init's fetched files, as the supervisor reads them: each record
 * matched by position, a refusal said, a record past the buffer or the
 * bounds refused whole. */
static void test_fetch_render(void **state)
{
        char buf[256];
        size_t n = 0;
        struct fetch_head h = { 0, 0, 3 }, r = { ELOOP, 0, 0 };
        char *names[] = { "a", "l" };
        json_t *o = json_object();
        struct nsb_error e;

        (void) state;
        memcpy(buf, &h, sizeof h);
        n += sizeof h;
        memcpy(buf + n, "abc", 3);
        n += 3;
        memcpy(buf + n, &r, sizeof r);
        n += sizeof r;
        assert_int_equal(fetch_render(buf, n, names, 2, o, &e), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(o, "files"), "a")), "YWJj");
        assert_non_null(strstr(json_string_value(json_object_get(json_object_get(o, "files_refused"), "l")),
                               "symbolic link"));
        json_decref(o);
        o = json_object();
        for (size_t cut = 0; cut < n; cut++)
                assert_int_equal(fetch_render(buf, cut, names, 2, o, &e), -EPROTO);
        assert_int_equal(fetch_render(buf, n + 1, names, 2, o, &e), -EPROTO);   /* bytes past the last */
        h.len = (uint64_t) FETCH_FILE_MAX + 1;
        memcpy(buf, &h, sizeof h);
        assert_int_equal(fetch_render(buf, n, names, 2, o, &e), -EPROTO);
        assert_int_equal(json_object_size(o), 0);
        json_decref(o);
}

/* No record came back from an init that was not stopped with the job (it
 * ran out of memory reading the files: a tmpfs workspace is charged to the
 * job): every name is in files_refused, saying why, and "files" is empty. Before, the result had
 * neither key, and a /run_code client got "files": {} and no reason. */
static void test_fetch_unread(void **state)
{
        char *names[] = { "a", "d/b" };
        json_t *o = json_object();
        struct run_result r;

        (void) state;
        memset(&r, 0, sizeof r);
        r.status = RUN_EXITED;
        r.limits_hit = 1u << LIMIT_MEMORY;
        assert_int_equal(fetch_render_unread(names, 2, fetch_unread_reason(&r), o), 0);
        assert_int_equal(json_object_size(json_object_get(o, "files")), 0);
        assert_non_null(strstr(json_string_value(json_object_get(json_object_get(o, "files_refused"), "d/b")),
                               "memory limit"));
        json_decref(o);
        r.status = RUN_LIMIT;
        r.limit = LIMIT_WALL_TIME;
        r.limits_hit = 1u << LIMIT_WALL_TIME;
        assert_null(fetch_unread_reason(&r));   /* its init was stopped with it: neither key */
        r.status = RUN_CANCELLED;
        assert_null(fetch_unread_reason(&r));
        r.status = RUN_LIMIT;
        r.limit = LIMIT_MEMORY;
        r.limits_hit = 1u << LIMIT_MEMORY;
        assert_non_null(strstr(fetch_unread_reason(&r), "memory limit"));
}

static int calls[4];
static int step_a(struct child_ctx *c, struct nsb_error *e) { calls[0]++; return 0; }
static int step_b(struct child_ctx *c, struct nsb_error *e) { calls[1]++; return nsb_fail(e, NSB_STAGE_NONE, EPERM, "b"); }
static int step_c(struct child_ctx *c, struct nsb_error *e) { calls[2]++; return 0; }

/* A step list runs in order, stops at the first failure, and a failure
 * without a stage takes the step's (what a warm start's parent relies on). */
static void test_run_steps(void **state)
{
        static const struct child_step steps[] = {
                CHILD_STEP(NSB_STAGE_CAPS, step_a), CHILD_STEP(NSB_STAGE_MOUNT, step_b),
                CHILD_STEP(NSB_STAGE_EXEC, step_c),
        };
        struct child_ctx c;
        struct nsb_error e;

        (void) state;
        memset(&c, 0, sizeof c);
        nsb_error_clear(&e);
        assert_true(child_run_steps(&c, steps, 3, &e) < 0);
        assert_int_equal(calls[0], 1);
        assert_int_equal(calls[1], 1);
        assert_int_equal(calls[2], 0);
        assert_int_equal(e.stage, NSB_STAGE_MOUNT);
        nsb_error_clear(&e);
        assert_int_equal(child_run_steps(&c, steps, 1, &e), 0);
        assert_int_equal(calls[0], 2);
}

/* ---- reduced isolation: the pure plan ------------------------------------ */

static void test_reduced_check(void **state)
{
        struct nsb_config cfg;
        struct nsb_error e;
        struct nsb_bind same = { "/srv/data", "/srv/data", true }, moved = { "/srv/data", "/data", true };

        (void) state;
        cfg_defaults(&cfg, NSB_CMD_PYTHON);
        assert_int_equal(reduced_check(&cfg, NULL, &e), 0);
        cfg.binds = &same;
        cfg.n_binds = 1;
        assert_int_equal(reduced_check(&cfg, NULL, &e), 0);
        cfg.binds = &moved;
        assert_true(reduced_check(&cfg, NULL, &e) < 0);
        assert_non_null(strstr(e.msg, "/srv/data:/data"));
        cfg.n_binds = 0;
        assert_true(reduced_check(&cfg, "/usr/share/nsbox", &e) < 0);
        assert_non_null(strstr(e.msg, "strict isolation"));
        cfg.network = NSB_NETWORK_LOOPBACK;
        assert_true(reduced_check(&cfg, NULL, &e) < 0);
        assert_non_null(strstr(e.msg, "loopback"));
        cfg.network = NSB_NETWORK_NONE;
        /* a private tmpfs needs a mount namespace: it was silently left out */
        cfg.tmpfs = &(struct nsb_tmpfs){ "/data", 0 };
        cfg.n_tmpfs = 1;
        assert_true(reduced_check(&cfg, NULL, &e) < 0);
        assert_non_null(strstr(e.msg, "--tmpfs /data needs a mount namespace"));
        cfg.n_tmpfs = 0;
        cfg.harness = "/h";
        assert_true(reduced_check(&cfg, NULL, &e) < 0);
        assert_non_null(strstr(e.msg, "--harness"));
}

static const struct ll_path_rule *rule_for(const struct reduced_plan *p, const char *path)
{
        for (size_t i = 0; i < p->n_rules; i++)
                if (strcmp(p->rules[i].path, path) == 0)
                        return &p->rules[i];
        return NULL;
}

static void test_reduced_rules(void **state)
{
        struct nsb_config cfg;
        struct nsb_error e;
        struct host_entry v[] = {
                { "/usr/bin/python3", HOST_SYMLINK, "python3.11" },
                { "/usr/bin/python3.11", HOST_FILE, NULL },
                { "/usr/lib/python3.11", HOST_DIR, NULL },
        };
        struct host_set host = { .v = v, .n = 3 };
        struct nsb_bind binds[] = { { "/srv/ro", "/srv/ro", true }, { "/srv/rw", "/srv/rw", false } };
        struct reduced_plan p = { .workdir = "/t/ws", .tmpdir = "/t/tmp", .program_dir = "/t/program" };
        const char *extra[] = { "/etc/ld.so.cache" };
        size_t writable = 0;

        (void) state;
        cfg_defaults(&cfg, NSB_CMD_PYTHON);
        cfg.binds = binds;
        cfg.n_binds = 2;
        assert_int_equal(reduced_rules(&p, &cfg, &host, extra, 1, &e), 0);
        /* Nothing as wide as "/": only what was named. */
        assert_null(rule_for(&p, "/"));
        assert_null(rule_for(&p, "/usr/bin/python3"));   /* a symlink: its target has the rule */
        assert_false(rule_for(&p, "/usr/bin/python3.11")->writable);
        assert_false(rule_for(&p, "/usr/lib/python3.11")->writable);
        assert_false(rule_for(&p, "/etc/ld.so.cache")->writable);
        assert_false(rule_for(&p, "/t/program")->writable);
        assert_false(rule_for(&p, "/srv/ro")->writable);
        assert_true(rule_for(&p, "/srv/rw")->writable);
        assert_true(rule_for(&p, "/t/ws")->writable);
        assert_true(rule_for(&p, "/t/tmp")->writable);
        assert_true(rule_for(&p, "/dev/null")->writable);
        assert_false(rule_for(&p, "/dev/urandom")->writable);
        for (size_t i = 0; i < p.n_rules; i++)
                writable += p.rules[i].writable;
        assert_int_equal(writable, 3 + 3);   /* rw bind, workdir, tmpdir + null, zero, full */
        free(p.rules);
}

static void test_reduced_argv(void **state)
{
        struct reduced_plan p = { .program_dir = "/t/program" };
        char *argv[] = { "python3", "-I", "-B", "/program/main.py", "/program/main.py.bak", NULL };
        char **out;
        struct nsb_error e;

        (void) state;
        assert_int_equal(reduced_argv(&p, "main.py", argv, 5, &out, &e), 0);
        assert_string_equal(out[3], "/t/program/main.py");
        assert_string_equal(out[4], "/program/main.py.bak");   /* only the exact path */
        assert_string_equal(out[0], "python3");
        assert_null(out[5]);
        reduced_argv_free(out);
        assert_int_equal(reduced_argv(&p, NULL, argv, 5, &out, &e), 0);
        assert_string_equal(out[3], "/program/main.py");
        reduced_argv_free(out);
}

/* The v1 join fds cross to the init whole: the same open files, CLOEXEC on
 * arrival, and a record with more fds than the receiver expects is refused. */
static void test_wire_fds(void **state)
{
        int sp[2], fds[2], got[WIRE_MAX_FDS];
        struct wire_msg m = { .version = WIRE_VERSION, .kind = WIRE_CGROUP, .slots = 0x5 }, r;
        size_t n = 0;
        struct stat a, b;

        (void) state;
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
        fds[0] = open("/dev/null", O_WRONLY | O_CLOEXEC);
        fds[1] = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        assert_true(fds[0] >= 0 && fds[1] >= 0);
        assert_int_equal(wire_send_fds(sp[0], &m, fds, 2), 0);
        assert_int_equal(wire_recv_fds(sp[1], &r, got, WIRE_MAX_FDS, &n), (ssize_t) sizeof r);
        assert_int_equal(n, 2);
        assert_int_equal(r.kind, WIRE_CGROUP);
        assert_int_equal(r.slots, 0x5);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(fstat(fds[i], &a), 0);
                assert_int_equal(fstat(got[i], &b), 0);
                assert_true(a.st_rdev == b.st_rdev && a.st_ino == b.st_ino);
                assert_true(fcntl(got[i], F_GETFD) & FD_CLOEXEC);
                close(got[i]);
        }
        /* more than the receiver takes: refused, not silently cut */
        assert_int_equal(wire_send_fds(sp[0], &m, fds, 2), 0);
        assert_int_equal(wire_recv_fds(sp[1], &r, got, 1, &n), -EPROTO);
        assert_int_equal(wire_send_fds(sp[0], &m, fds, 0), -EINVAL);
        /* the peer gone: 0 */
        close(sp[0]);
        assert_int_equal(wire_recv_fds(sp[1], &r, got, WIRE_MAX_FDS, &n), 0);
        close(sp[1]);
        close(fds[0]);
        close(fds[1]);
}

static void test_proc_tree_parse(void **state)
{
        /* a command name with spaces and ')' of its own: fields count from the last ')' */
        static const char stat[] = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 "
                                   "7 3 20 1 20 0 1 0 99 1000 10 18446744073709551615\n";
        static const char status[] = "Name:\tpython3\nVmPeak:\t  99 kB\nVmHWM:\t    7940 kB\nVmRSS:\t 10 kB\n";
        pid_t pids[4];
        uint64_t v = 0;

        (void) state;
        assert_int_equal(proc_parse_stat_ticks(stat, sizeof stat - 1, &v), 0);
        assert_int_equal(v, 7 + 3 + 20 + 1);
        assert_int_equal(proc_parse_stat_ticks("42 (x) S 1 2", 12, &v), -EINVAL);   /* cut short */
        assert_int_equal(proc_parse_stat_ticks("no name", 7, &v), -EINVAL);
        assert_int_equal(proc_parse_status_kb(status, sizeof status - 1, "VmHWM", &v), 0);
        assert_int_equal(v, 7940);
        assert_int_equal(proc_parse_status_kb(status, sizeof status - 1, "VmHW", &v), -ENOENT);   /* whole key */
        assert_int_equal(proc_parse_status_kb("VmHWM:\t kB\n", 11, "VmHWM", &v), -EINVAL);
        assert_int_equal(proc_parse_children("12 13 9999 ", 11, pids, 4), 3);
        assert_int_equal(pids[0], 12);
        assert_int_equal(pids[2], 9999);
        assert_int_equal(proc_parse_children("1 2 3 4 5 ", 10, pids, 4), 4);   /* capped */
        assert_int_equal(proc_parse_children("", 0, pids, 4), 0);
        assert_int_equal(proc_parse_children("12 x", 4, pids, 4), -EINVAL);
        {
                struct proc_stat st;
                /* priority and nice negative: skipped whole */
                static const char neg[] = "7 (p) Z 3 7 7 0 -1 0 0 0 0 0 5 6 70 80 -2 -20 1 0 4242 0 0\n";
                assert_int_equal(proc_parse_stat(stat, sizeof stat - 1, &st), 0);
                assert_int_equal(st.state, 'S');
                assert_int_equal(st.ppid, 1);
                assert_int_equal(st.utime + st.stime, 10);
                assert_int_equal(st.cutime + st.cstime, 21);
                assert_int_equal(st.start, 99);
                assert_int_equal(proc_parse_stat(neg, sizeof neg - 1, &st), 0);
                assert_int_equal(st.state, 'Z');
                assert_int_equal(st.ppid, 3);
                assert_int_equal(st.cutime, 70);
                assert_int_equal(st.start, 4242);
                assert_true(st.flags == 0);
                assert_true(st.arg_start == UINT64_MAX);        /* too short: unknown */
                {
                        /* field 9, the PF_* flags: a task in the middle of its exit */
                        static const char exiting[] = "7 (p) R 3 7 7 0 -1 4194372 0 0 0 0 5 6 70 80 20 0 1 0 42\n";
                        assert_int_equal(proc_parse_stat(exiting, sizeof exiting - 1, &st), 0);
                        assert_true(st.flags == 4194372);
                        assert_true((st.flags & PROC_PF_EXITING) != 0);
                        assert_int_equal(st.utime, 5);
                        assert_int_equal(st.start, 42);
                }
                {
                        /* fields 23-47 then arg_start (48) */
                        static const char full[] = "7 (p) R 3 7 7 0 -1 0 0 0 0 0 5 6 70 80 20 0 1 0 4242 "
                                                   "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 "
                                                   "140737 140800 1 2 3\n";
                        assert_int_equal(proc_parse_stat(full, sizeof full - 1, &st), 0);
                        assert_true(st.arg_start == 140737);
                }
                assert_int_equal(proc_parse_stat("7 (p) S 3 7 7 0 -1 0 0 0 0 0 5 6 70 80 -2", 41, &st), -EINVAL);
        }
}

/* One look of tree_cpu over @n processes given as {pid, start, own, kids}. */
static uint64_t look(struct tree_cpu *t, const struct tree_cpu_proc *procs, size_t n)
{
        struct tree_cpu_proc copy[8];

        assert_true(n <= 8);
        memcpy(copy, procs, n * sizeof *procs);
        assert_int_equal(tree_cpu_look(t, copy, n), 0);
        return t->total;
}

/* The tree's CPU time over looks (#27): each process counted once, whether
 * it is alive, waited for (its time moves into its parent's cutime), or
 * reaped unwaited (its time is then nowhere but in what a look saw). */
static void test_tree_cpu(void **state)
{
        struct tree_cpu t;

        (void) state;
        /* six children burning side by side: the sum, not the largest */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 2, 11, 2, 0 }, { 3, 12, 40, 0 },
                                                   { 4, 12, 40, 0 }, { 5, 12, 40, 0 }, { 6, 12, 40, 0 } };
                assert_int_equal(look(&t, a, 6), 163);
        }
        tree_cpu_free(&t);

        /* a child waited for between two looks: its time leaves it and
         * arrives in its parent's cutime; counted once, and its last ticks too */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 }, { 3, 12, 30, 0 } };
                const struct tree_cpu_proc b[] = { { 1, 10, 1, 0 }, { 2, 11, 6, 35 } };
                assert_int_equal(look(&t, a, 3), 36);
                /* 35 arrived, 30 left: the 5 more are growth nothing matched, held one look */
                assert_int_equal(look(&t, b, 2), 37);
                assert_int_equal(look(&t, b, 2), 42);
                assert_int_equal(look(&t, b, 2), 42);
        }
        tree_cpu_free(&t);

        /* reaped unwaited (SIGCHLD ignored): gone from every counter, still counted */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 }, { 3, 12, 80, 0 } };
                const struct tree_cpu_proc b[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 }, { 4, 13, 70, 0 } };
                const struct tree_cpu_proc c[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 } };
                assert_int_equal(look(&t, a, 3), 86);
                assert_int_equal(look(&t, b, 3), 156);
                assert_int_equal(look(&t, c, 2), 156);
                assert_int_equal(look(&t, c, 2), 156);
        }
        tree_cpu_free(&t);

        /* a child no look saw, waited for: its time arrives with nothing gone (one look late) */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 } };
                const struct tree_cpu_proc b[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 15 } };
                assert_int_equal(look(&t, a, 2), 6);
                assert_int_equal(look(&t, b, 2), 6);
                assert_int_equal(look(&t, b, 2), 21);
        }
        tree_cpu_free(&t);

        /* the wait landing between the parent's read and the child's: gone
         * at one look, arrived at the next; never counted twice */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 }, { 3, 12, 30, 0 } };
                const struct tree_cpu_proc b[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 } };
                const struct tree_cpu_proc c[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 30 } };
                assert_int_equal(look(&t, a, 3), 36);
                assert_int_equal(look(&t, b, 2), 36);
                assert_int_equal(look(&t, c, 2), 36);
                assert_int_equal(look(&t, c, 2), 36);
        }
        tree_cpu_free(&t);

        /* ... or its parent read after the wait, the child itself still listed */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 }, { 3, 12, 30, 0 } };
                const struct tree_cpu_proc b[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 30 }, { 3, 12, 30, 0 } };
                const struct tree_cpu_proc c[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 30 } };
                assert_int_equal(look(&t, a, 3), 36);
                assert_int_equal(look(&t, b, 3), 36);
                assert_int_equal(look(&t, c, 2), 36);
                assert_int_equal(look(&t, c, 2), 36);
        }
        tree_cpu_free(&t);

        /* a parent and its child gone together, both waited for up the chain */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 2, 11, 5, 0 }, { 3, 12, 30, 0 } };
                const struct tree_cpu_proc b[] = { { 1, 10, 1, 36 } };
                assert_int_equal(look(&t, a, 3), 36);
                assert_int_equal(look(&t, b, 1), 36);   /* the tail of 1: held one look */
                assert_int_equal(look(&t, b, 1), 37);
                assert_int_equal(look(&t, b, 1), 37);
        }
        tree_cpu_free(&t);

        /* a pid reused by another process: the first one is gone */
        memset(&t, 0, sizeof t);
        {
                const struct tree_cpu_proc a[] = { { 1, 10, 1, 0 }, { 5, 11, 50, 0 } };
                const struct tree_cpu_proc b[] = { { 1, 10, 1, 0 }, { 5, 99, 2, 0 } };
                assert_int_equal(look(&t, a, 2), 51);
                assert_int_equal(look(&t, b, 2), 53);
                assert_int_equal(look(&t, b, 2), 53);
        }
        tree_cpu_free(&t);
}

static ssize_t read_all(int fd, char *buf, size_t n)
{
        size_t got = 0;

        while (got < n) {
                ssize_t k = read(fd, buf + got, n - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                got += (size_t) k;
        }
        return (ssize_t) got;
}

/* The terminal pump, over pipes standing in for the terminal: bytes go
 * through in order, a full program pipe holds the pump (no byte lost), the
 * source's end closes the program's input, a program that closed its stdin
 * ends the pump, and the end of a run kills a pump blocked in a read of a
 * source that never delivers (the supervisor never blocks on it). */
static void test_stdin_pump(void **state)
{
        struct stdin_pump p;
        struct nsb_error e;
        int src[2], prog = -1, status;
        char buf[8];
        struct timespec t0, t1;

        (void) state;
        signal(SIGPIPE, SIG_IGN);   /* as nsbox runs (plat_cancel_fd): a closed reader is EPIPE */
        assert_int_equal(pipe2(src, O_CLOEXEC), 0);
        assert_int_equal(stdin_pump_open(&p, src[0], &prog, &e), 0);
        assert_int_equal(stdin_pump_start(&p, &e), 0);
        assert_true(p.pid > 0);
        assert_int_equal(p.dst, -1);              /* the write end is the pump's alone */
        assert_int_equal(write(src[1], "hi\n", 3), 3);
        assert_int_equal(read_all(prog, buf, 3), 3);
        assert_memory_equal(buf, "hi\n", 3);

        /* the program does not read: its pipe fills, the rest waits in the pump */
        assert_int_equal(fcntl(prog, F_SETPIPE_SZ, 4096) >= 4096, 1);
        {
                static char chunk[4096], back[65536];
                size_t sent = 0, got = 0;
                ssize_t n;
                memset(chunk, 'x', sizeof chunk);
                assert_int_equal(fcntl(src[1], F_SETFL, O_NONBLOCK), 0);
                while (sent < sizeof back && (n = write(src[1], chunk, sizeof chunk)) > 0)
                        sent += (size_t) n;
                close(src[1]);                            /* end of input while bytes are pending */
                while ((n = read(prog, back, sizeof back)) > 0)
                        got += (size_t) n;
                assert_int_equal(n, 0);                   /* the pump ended: end of input */
                assert_int_equal(got, sent);
        }
        assert_int_equal(waitpid(p.pid, &status, 0), p.pid);   /* it ended on its own */
        p.pid = 0;
        stdin_pump_end(&p);
        close(prog);
        close(src[0]);

        /* a program that closed its stdin: the pump stops on its own */
        assert_int_equal(pipe2(src, O_CLOEXEC), 0);
        assert_int_equal(stdin_pump_open(&p, src[0], &prog, &e), 0);
        close(prog);
        assert_int_equal(stdin_pump_start(&p, &e), 0);
        assert_int_equal(write(src[1], "x\n", 2), 2);
        assert_int_equal(waitpid(p.pid, &status, 0), p.pid);
        assert_true(WIFEXITED(status));
        p.pid = 0;
        stdin_pump_end(&p);
        close(src[1]);
        close(src[0]);

        /* a source that never delivers (a writer that stays, or another
         * reader that took the bytes): the pump blocks in read, and the end
         * of the run still returns at once */
        assert_int_equal(pipe2(src, O_CLOEXEC), 0);
        assert_int_equal(stdin_pump_open(&p, src[0], &prog, &e), 0);
        assert_int_equal(stdin_pump_start(&p, &e), 0);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        stdin_pump_end(&p);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_true(t1.tv_sec - t0.tv_sec < 2);
        assert_int_equal(p.pid, 0);
        assert_int_equal(read(prog, buf, sizeof buf), 0);   /* the program's input ended */
        close(prog);
        close(src[0]);
        close(src[1]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_outcomes),   cmocka_unit_test(test_capture_bounds), cmocka_unit_test(test_stdin_pump),
                cmocka_unit_test(test_result_json), cmocka_unit_test(test_env_scrubbed), cmocka_unit_test(test_env_image_base),
                cmocka_unit_test(test_step_order), cmocka_unit_test(test_wire_fds),
                cmocka_unit_test(test_init_step_order), cmocka_unit_test(test_run_steps),
                cmocka_unit_test(test_warm_step_order), cmocka_unit_test(test_warm_spec), cmocka_unit_test(test_fetch_render),
                cmocka_unit_test(test_fetch_unread),
                cmocka_unit_test(test_reduced_check), cmocka_unit_test(test_reduced_rules),
                cmocka_unit_test(test_reduced_argv), cmocka_unit_test(test_proc_tree_parse),
                cmocka_unit_test(test_tree_cpu),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
