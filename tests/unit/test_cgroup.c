/* Unit tests for cgroup/: parsers from literals, backend choice over
 * fabricated facts, the v2 backend end to end against a fake tree (built with
 * mkdtemp in setup; a setup failure fails the test), the v1 backend for real
 * (root with a writable v1 memory hierarchy; else skipped, or failed under
 * NSBOX_TESTS_MUST_RUN=1 as root), and the rlimit backend in a forked child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cg_internal.h"
#include "cgroup/cgroup.h"
#include "util/cleanup.h"
#include "tests/unit/must_run.h"

#define L(s) (s), (sizeof(s) - 1)

/* ---------------------------------------------------------------- parsers */

static const char hybrid_self[] =
        "9:name=systemd:/\n"
        "8:pids:/\n"
        "4:memory:/process_api/e4b91a93\n"
        "3:cpuset:/cs\n"
        "2:cpuacct:/\n"
        "1:cpu:/\n"
        "0::/\n";

static void test_parse_proc_cgroup(void **state)
{
        struct cg_self *s = calloc(1, sizeof *s);

        (void) state;
        assert_non_null(s);
        assert_int_equal(cg_parse_proc_cgroup(L(hybrid_self), s), 0);
        assert_true(s->has_v2);
        assert_string_equal(s->v2_path, "/");
        assert_true(s->v1[CG_V1_MEMORY].found);
        assert_string_equal(s->v1[CG_V1_MEMORY].path, "/process_api/e4b91a93");
        assert_int_equal(s->v1[CG_V1_MEMORY].hierarchy_id, 4);
        assert_int_equal(s->v1[CG_V1_PIDS].hierarchy_id, 8);
        /* "cpuset" is not "cpuacct", and "cpu" alone is not "cpuacct" */
        assert_int_equal(s->v1[CG_V1_CPUACCT].hierarchy_id, 2);
        assert_string_equal(s->v1[CG_V1_CPUACCT].path, "/");

        /* co-mounted cpu,cpuacct; a path with ':' in it; pure v2 */
        assert_int_equal(cg_parse_proc_cgroup(L("3:cpu,cpuacct:/a:b\n5:memory,pids:/m\n"), s), 0);
        assert_false(s->has_v2);
        assert_string_equal(s->v1[CG_V1_CPUACCT].path, "/a:b");
        assert_int_equal(s->v1[CG_V1_MEMORY].hierarchy_id, s->v1[CG_V1_PIDS].hierarchy_id);
        assert_int_equal(cg_parse_proc_cgroup(L("0::/user.slice/user@1000.service/app.slice/x.scope"), s), 0);
        assert_string_equal(s->v2_path, "/user.slice/user@1000.service/app.slice/x.scope");
        assert_false(s->v1[CG_V1_MEMORY].found);
        /* only cpuset: no cpuacct */
        assert_int_equal(cg_parse_proc_cgroup(L("3:cpuset:/x\n"), s), 0);
        assert_false(s->v1[CG_V1_CPUACCT].found);

        assert_true(cg_parse_proc_cgroup(L("garbage\n"), s) < 0);
        assert_true(cg_parse_proc_cgroup(L("x::/\n"), s) < 0);
        assert_true(cg_parse_proc_cgroup(L("0::relative\n"), s) < 0);
        free(s);
}

static const char hybrid_mountinfo[] =
        "22 1 254:1 / / rw,relatime - ext4 /dev/vda rw\n"
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,nosuid,memory\n"
        "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
        "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
        "50 22 0:32 /docker /mnt/other\\040cg rw - cgroup cgroup rw,memory\n";

static void test_parse_mountinfo(void **state)
{
        struct cg_mounts *m = calloc(1, sizeof *m);

        (void) state;
        assert_non_null(m);
        assert_int_equal(cg_parse_mountinfo(L(hybrid_mountinfo), "/sys/fs/cgroup", m), 0);
        assert_true(m->v2.found);
        assert_string_equal(m->v2.rel, "unified");
        assert_string_equal(m->v2.root, "/");
        assert_string_equal(m->v1[CG_V1_MEMORY].rel, "memory");    /* not the one outside */
        assert_string_equal(m->v1[CG_V1_PIDS].rel, "pids");
        /* cpuset came first and must not match; the co-mount carries cpuacct */
        assert_string_equal(m->v1[CG_V1_CPUACCT].rel, "cpu,cpuacct");

        /* pure v2, and an escaped mount point outside the prefix */
        assert_int_equal(cg_parse_mountinfo(L("30 1 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 "
                                              "rw,nsdelegate,memory_recursiveprot\n"
                                              "50 22 0:32 /docker /mnt/other\\040cg rw - cgroup cgroup rw,memory\n"),
                                            "/sys/fs/cgroup", m),
                         0);
        assert_true(m->v2.found);
        assert_string_equal(m->v2.rel, "");
        assert_false(m->v1[CG_V1_MEMORY].found);
        assert_int_equal(cg_parse_mountinfo(L("50 22 0:32 /docker /mnt/other\\040cg rw - cgroup cgroup rw,memory\n"),
                                            "/mnt/other cg", m),
                         0);
        assert_string_equal(m->v1[CG_V1_MEMORY].rel, "");
        assert_string_equal(m->v1[CG_V1_MEMORY].root, "/docker");
        /* a sibling with the prefix as a string prefix is not under it */
        assert_int_equal(cg_parse_mountinfo(L("30 1 0:26 / /sys/fs/cgroupfoo rw - cgroup2 cgroup2 rw\n"),
                                            "/sys/fs/cgroup", m),
                         0);
        assert_false(m->v2.found);
        /* a cgroup1 mount with no controller we use ("cpuset" is not "cpu...") */
        assert_int_equal(cg_parse_mountinfo(L("34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"),
                                            "/sys/fs/cgroup", m),
                         0);
        assert_false(m->v1[CG_V1_CPUACCT].found);
        assert_true(cg_parse_mountinfo(L("1 2 3\n"), "/sys/fs/cgroup", m) < 0);
        assert_true(cg_parse_mountinfo(L("1 2 0:1 / /x rw no-separator cgroup2\n"), "/sys/fs/cgroup", m) < 0);
        free(m);
}

static void test_tokens(void **state)
{
        (void) state;
        assert_false(cg_has_token(L("rw,cpuset"), ',', "cpu"));
        assert_true(cg_has_token(L("rw,cpu,cpuacct"), ',', "cpu"));
        assert_true(cg_has_token(L("rw,cpu,cpuacct"), ',', "cpuacct"));
        assert_false(cg_has_token(L("rw,cpu,cpuacct"), ',', "acct"));
        assert_false(cg_has_token(L("rw,name=systemd"), ',', "systemd"));
        assert_int_equal(cg_parse_controllers(L("cpuset cpu io memory hugetlb pids rdma misc\n")),
                         CG_CTRL_MEMORY | CG_CTRL_PIDS | CG_CTRL_CPU);
        assert_int_equal(cg_parse_controllers(L("cpuset io hugetlb\n")), 0);
        assert_int_equal(cg_parse_controllers(L("memoryx xpids cpu.max\n")), 0);
        assert_int_equal(cg_parse_controllers(L("\n")), 0);
        assert_int_equal(cg_parse_controllers(L("memory\tpids")), CG_CTRL_MEMORY | CG_CTRL_PIDS);
}

static void test_parse_kv(void **state)
{
        static const char events[] = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 2\noom_group_kill 0\n";
        static const char cpu[] = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n"
                                  "core_sched.force_idle_usec 0\nnr_periods 0\n";
        static const char oomctl[] = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        uint64_t v = 99;

        (void) state;
        assert_int_equal(cg_parse_kv(L(events), "max", &v), 0);
        assert_int_equal(v, 12);
        assert_int_equal(cg_parse_kv(L(events), "oom", &v), 0);     /* not "oom_kill" */
        assert_int_equal(v, 1);
        assert_int_equal(cg_parse_kv(L(events), "oom_kill", &v), 0);
        assert_int_equal(v, 2);
        assert_int_equal(cg_parse_kv(L(cpu), "usage_usec", &v), 0);
        assert_int_equal(v, 123456);
        assert_int_equal(cg_parse_kv(L(oomctl), "oom_kill", &v), 0);
        assert_int_equal(v, 3);
        assert_int_equal(cg_parse_kv(L("max.imposed 7\nmax 0\n"), "max", &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(cg_parse_kv(L(cpu), "usage", &v), -ENOENT);
        assert_int_equal(cg_parse_kv(L(""), "max", &v), -ENOENT);
        assert_int_equal(cg_parse_kv(L("max abc\n"), "max", &v), -EINVAL);
        assert_int_equal(cg_parse_kv(L("max\n"), "max", &v), -EINVAL);
        assert_int_equal(cg_parse_kv(L("max 99999999999999999999999\n"), "max", &v), -ERANGE);
        /* not NUL-terminated: the length bounds the scan */
        assert_int_equal(cg_parse_kv("max 5max 6", 5, "max", &v), 0);
        assert_int_equal(v, 5);
}

static void test_parse_u64(void **state)
{
        uint64_t v;

        (void) state;
        assert_int_equal(cg_parse_u64(L("268435456\n"), &v), 0);
        assert_int_equal(v, 268435456);
        assert_int_equal(cg_parse_u64(L("max\n"), &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(cg_parse_u64(L("9223372036854771712\n"), &v), 0);
        assert_true(v == 9223372036854771712ULL);
        assert_true(cg_parse_u64(L(""), &v) < 0);
        assert_true(cg_parse_u64(L("\n"), &v) < 0);
        assert_true(cg_parse_u64(L("12a\n"), &v) < 0);
        assert_true(cg_parse_u64(L("1 2\n"), &v) < 0);
        assert_true(cg_parse_u64(L("-1\n"), &v) < 0);
        assert_true(cg_parse_u64(L("18446744073709551616"), &v) < 0);
}

static void test_parse_procs_and_names(void **state)
{
        pid_t pids[4], pid = 0;
        size_t n = 9, others = 9;

        (void) state;
        assert_int_equal(cg_parse_procs(L("10\n20\n30\n40\n50\n"), 20, pids, 4, &n, &others), 0);
        assert_int_equal(n, 5);
        assert_int_equal(others, 4);
        assert_int_equal(pids[3], 40);
        assert_int_equal(cg_parse_procs(L(""), 20, NULL, 0, &n, &others), 0);
        assert_int_equal(n, 0);
        assert_true(cg_parse_procs(L("12\nx\n"), 1, NULL, 0, &n, NULL) < 0);
        assert_true(cg_parse_procs(L("0\n"), 1, NULL, 0, &n, NULL) < 0);

        assert_int_equal(cg_parse_name("nsbox-1234-0", &pid), CG_NAME_RUN);
        assert_int_equal(pid, 1234);
        assert_int_equal(cg_parse_name("nsbox-sup-77", &pid), CG_NAME_SUP);
        assert_int_equal(pid, 77);
        static const char *const other[] = {
                "nsbox", "nsbox-", "nsbox-12", "nsbox-12-", "nsbox--1", "nsbox-0-1", "nsbox-01-1",
                "nsbox-1-2-3", "nsbox-sup-", "nsbox-sup-x", "nsbox-sup-1-2", "nsbox-a-1", "xnsbox-1-1",
                "nsbox-99999999999-1", "nsbox-1-x", "user.slice",
        };
        for (size_t i = 0; i < ARRAY_SIZE(other); i++)
                if (cg_parse_name(other[i], &pid) != CG_NAME_OTHER)
                        fail_msg("'%s' parsed as ours", other[i]);

        char buf[40];
        assert_int_equal(cg_format_run_name(4242, 7, buf, sizeof buf), 0);
        assert_string_equal(buf, "nsbox-4242-7");
        assert_int_equal(cg_parse_name(buf, &pid), CG_NAME_RUN);
        assert_int_equal(cg_format_sup_name(4242, buf, sizeof buf), 0);
        assert_string_equal(buf, "nsbox-sup-4242");
        assert_int_equal(cg_format_run_name(4242, 7, buf, 8), -ENAMETOOLONG);
}

static void test_own_rel(void **state)
{
        struct cg_mount m = { .found = true };
        char buf[CG_PATH_MAX];

        (void) state;
        strcpy(m.rel, "memory");
        strcpy(m.root, "/");
        assert_int_equal(cg_own_rel(&m, "/process_api/abc", buf, sizeof buf), 0);
        assert_string_equal(buf, "memory/process_api/abc");
        assert_int_equal(cg_own_rel(&m, "/", buf, sizeof buf), 0);
        assert_string_equal(buf, "memory");
        strcpy(m.rel, "");
        assert_int_equal(cg_own_rel(&m, "/", buf, sizeof buf), 0);
        assert_string_equal(buf, ".");
        assert_int_equal(cg_own_rel(&m, "/user.slice/a.scope", buf, sizeof buf), 0);
        assert_string_equal(buf, "user.slice/a.scope");
        /* a mount of a sub-tree (container): own path must lie inside it */
        strcpy(m.root, "/docker/abc");
        assert_int_equal(cg_own_rel(&m, "/docker/abc/x", buf, sizeof buf), 0);
        assert_string_equal(buf, "x");
        assert_int_equal(cg_own_rel(&m, "/docker/abc", buf, sizeof buf), 0);
        assert_string_equal(buf, ".");
        assert_int_equal(cg_own_rel(&m, "/docker/abcd", buf, sizeof buf), -ENOENT);
        assert_int_equal(cg_own_rel(&m, "/other", buf, sizeof buf), -ENOENT);
        strcpy(m.root, "/");
        assert_int_equal(cg_own_rel(&m, "/a/../../etc", buf, sizeof buf), -EINVAL);
        assert_int_equal(cg_own_rel(&m, "/a//b", buf, sizeof buf), -EINVAL);
        m.found = false;
        assert_int_equal(cg_own_rel(&m, "/", buf, sizeof buf), -ENOENT);
}

static void test_plan(void **state)
{
        struct cg_spec spec = { .memory_bytes = 256ULL << 20, .pids_max = 64 };
        struct cg_plan p;
        struct nsb_error e;

        (void) state;
        assert_int_equal(cg_plan_limits(CG_BACKEND_V2, &spec, &p, &e), 0);
        assert_int_equal(p.n, 3);
        assert_string_equal(p.w[0].file, "memory.max");
        assert_string_equal(p.w[0].value, "268435456");
        assert_false(p.w[0].optional);
        assert_string_equal(p.w[1].file, "memory.swap.max");
        assert_string_equal(p.w[1].value, "0");
        assert_true(p.w[1].optional);
        assert_string_equal(p.w[2].file, "pids.max");
        assert_string_equal(p.w[2].value, "64");

        assert_int_equal(cg_plan_limits(CG_BACKEND_V1, &spec, &p, &e), 0);
        assert_int_equal(p.n, 3);
        /* RAM limit strictly before RAM+swap: memsw must never be below it */
        assert_string_equal(p.w[0].file, "memory.limit_in_bytes");
        assert_int_equal(p.w[0].ctrl, CG_V1_MEMORY);
        assert_string_equal(p.w[1].file, "memory.memsw.limit_in_bytes");
        assert_string_equal(p.w[1].value, "268435456");
        assert_true(p.w[1].optional);
        assert_string_equal(p.w[2].file, "pids.max");
        assert_int_equal(p.w[2].ctrl, CG_V1_PIDS);

        spec.memory_bytes = 0;
        spec.pids_max = UINT64_MAX;
        assert_int_equal(cg_plan_limits(CG_BACKEND_V2, &spec, &p, &e), 0);
        assert_string_equal(p.w[0].value, "max");
        assert_string_equal(p.w[2].value, "max");
        assert_int_equal(cg_plan_limits(CG_BACKEND_V1, &spec, &p, &e), 0);
        assert_string_equal(p.w[0].value, "-1");
        spec.pids_max = 1ULL << 40;     /* above PID_MAX_LIMIT: no real bound */
        assert_int_equal(cg_plan_limits(CG_BACKEND_V1, &spec, &p, &e), 0);
        assert_string_equal(p.w[2].value, "max");

        assert_int_equal(cg_plan_limits(CG_BACKEND_RLIMIT, &spec, &p, &e), 0);
        assert_int_equal(p.n, 0);
        assert_true(cg_plan_limits(CG_BACKEND_NONE, &spec, &p, &e) < 0);
        assert_int_equal(e.stage, NSB_STAGE_CGROUP);
}

/* What os.cpu_count() says inside (the mount plan's /sys/devices/system/cpu
 * files): a quarter of the tasks, at least one, never more than the host
 * has; the host's own count without a pids limit. */
static void test_cpu_count(void **state)
{
        (void) state;
        assert_int_equal(cg_cpu_count(64, 512), 16);    /* a 512-CPU host at the default limit */
        assert_int_equal(cg_cpu_count(64, 2), 2);       /* never more than the host */
        assert_int_equal(cg_cpu_count(6, 512), 1);
        assert_int_equal(cg_cpu_count(4, 512), 1);
        assert_int_equal(cg_cpu_count(1, 512), 1);
        assert_int_equal(cg_cpu_count(8, 512), 2);
        assert_int_equal(cg_cpu_count(0, 512), 512);    /* no pids limit */
        assert_int_equal(cg_cpu_count(UINT64_MAX, 512), 512);
        assert_int_equal(cg_cpu_count(64, 0), 1);       /* a probe that failed */
        assert_int_equal(cg_cpu_count(1ull << 40, 512), 512);
}

/* Under the rlimit backend, RLIMIT_AS leaves room for the stacks of the
 * threads the pids limit allows, never more than 32 of them: 16 threads of
 * 8 MiB stacks did not fit under the default 256M. */
static void test_rlimit_as_room(void **state)
{
        struct cg_spec spec = { .memory_bytes = 256ULL << 20, .pids_max = 64 };

        (void) state;
        /* 32 stacks are 258 MiB: capped at the limit itself */
        assert_int_equal(cg_rlimit_as_bytes(&spec), 512ULL << 20);
        spec.memory_bytes = 1ULL << 30;
        assert_int_equal(cg_rlimit_as_bytes(&spec), (1ULL << 30) + 32 * CG_AS_STACK_BYTES);
        spec.memory_bytes = 256ULL << 20;
        spec.pids_max = 4;
        assert_int_equal(cg_rlimit_as_bytes(&spec), (256ULL << 20) + 4 * CG_AS_STACK_BYTES);
        spec.pids_max = 0;      /* no pids limit: still at most 32 (and the cap) */
        assert_int_equal(cg_rlimit_as_bytes(&spec), 512ULL << 20);
        spec.memory_bytes = 64ULL << 20;        /* the room never exceeds the limit itself */
        assert_int_equal(cg_rlimit_as_bytes(&spec), 128ULL << 20);
        spec.memory_bytes = 0;  /* no memory limit stays none */
        assert_int_equal(cg_rlimit_as_bytes(&spec), 0);
        spec.memory_bytes = UINT64_MAX - 5;
        assert_int_equal(cg_rlimit_as_bytes(&spec), UINT64_MAX - 1);
}

/* ---------------------------------------------------------------- choice */

static void facts_pure_v2(struct cg_facts *f)
{
        memset(f, 0, sizeof *f);
        f->v2_mounted = f->v2_member = f->v2_base_found = f->v2_writable = true;
        strcpy(f->v2_own_path, "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope");
        strcpy(f->v2_base_rel, f->v2_own_path + 1);
        f->v2_controllers = CG_CTRL_MEMORY | CG_CTRL_PIDS | CG_CTRL_CPU;
}

static void facts_hybrid(struct cg_facts *f, bool root)
{
        memset(f, 0, sizeof *f);
        f->v2_mounted = f->v2_member = f->v2_base_found = true;
        f->v2_base_is_root = true;
        f->v2_writable = root;
        strcpy(f->v2_base_rel, "unified");
        for (int c = 0; c < CG_V1__MAX; c++) {
                f->v1[c].mounted = f->v1[c].found = true;
                f->v1[c].writable = root;
                f->v1[c].hierarchy_id = c + 2;
        }
}

static void test_choose(void **state)
{
        struct cg_facts f;
        const char *why = NULL;

        (void) state;
        facts_pure_v2(&f);
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_V2);
        assert_non_null(why);

        /* our cgroup lacks memory/pids in subtree_control and holds others */
        f.v2_other_procs = 2;
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_RLIMIT);
        assert_non_null(strstr(cg_v2_unusable(&f), "no-internal-processes"));
        f.v2_subtree = CG_CTRL_MEMORY | CG_CTRL_PIDS;       /* already enabled: fine */
        assert_int_equal(cg_choose(&f, NULL), CG_BACKEND_V2);
        f.v2_subtree = 0;
        f.v2_base_is_root = true;                           /* the real root is exempt */
        assert_int_equal(cg_choose(&f, NULL), CG_BACKEND_V2);

        facts_pure_v2(&f);
        f.v2_controllers = CG_CTRL_MEMORY;                  /* pids not delegated */
        cg_facts_explain(&f);                               /* as cg_detect does */
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_RLIMIT);
        assert_non_null(strstr(why, "cgroup v2: pids controller not available"));
        assert_non_null(strstr(why, "cgroup v1: no v1 memory hierarchy"));
        facts_pure_v2(&f);
        f.v2_writable = false;
        cg_facts_explain(&f);
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_RLIMIT);
        assert_non_null(strstr(why, "Delegate=yes"));

        /* this host: hybrid, controllers on v1 */
        facts_hybrid(&f, true);
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_V1);
        assert_non_null(strstr(why, "memory controller not available"));
        cg_facts_explain(&f);
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_V1);
        assert_ptr_equal(why, f.reason);
        assert_non_null(strstr(why, "cgroup v1: usable"));
        facts_hybrid(&f, false);
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_RLIMIT);
        assert_non_null(strstr(why, "not writable"));
        facts_hybrid(&f, true);
        f.v1[CG_V1_CPUACCT].mounted = false;                /* cpuacct is optional */
        assert_int_equal(cg_choose(&f, NULL), CG_BACKEND_V1);
        f.v1[CG_V1_PIDS].mounted = false;
        assert_int_equal(cg_choose(&f, NULL), CG_BACKEND_RLIMIT);

        memset(&f, 0, sizeof f);
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_RLIMIT);

        assert_null(cg_ops_for(CG_BACKEND_NONE));
        assert_string_equal(cg_ops_for(CG_BACKEND_V2)->label, "cgroup2");
        assert_string_equal(cg_ops_for(CG_BACKEND_V1)->label, "cgroup1");
        assert_string_equal(cg_ops_for(CG_BACKEND_RLIMIT)->label, "rlimit");
}

/* ---------------------------------------------- obtaining a cgroup (pure) */

static void test_scope_names_and_paths(void **state)
{
        char buf[CG_PATH_MAX];
        pid_t pid;

        (void) state;
        assert_int_equal(cg_format_scope_name(1234, 0xabcdefULL, buf, sizeof buf), 0);
        assert_string_equal(buf, "nsbox-scope-1234-abcdef.scope");
        assert_int_equal(cg_parse_scope_name(buf), 1234);
        /* never mistaken for a run or sup cgroup, which the reaper removes */
        assert_int_equal(cg_parse_name(buf, &pid), CG_NAME_OTHER);
        assert_int_equal(cg_parse_scope_name("nsbox-scope-1234-abcdef"), 0);
        assert_int_equal(cg_parse_scope_name("nsbox-scope-1234-.scope"), 0);
        assert_int_equal(cg_parse_scope_name("nsbox-scope-x-1.scope"), 0);
        assert_int_equal(cg_parse_scope_name("nsbox-scope-12-1-2.scope"), 0);
        assert_int_equal(cg_parse_scope_name("nsbox-scope-12-zz.scope"), 0);
        assert_int_equal(cg_parse_scope_name("run-r1.scope"), 0);

        assert_null(cg_parent_rel("/sys/fs/cgroup/a//b/", "/sys/fs/cgroup", buf, sizeof buf));
        assert_string_equal(buf, "a/b");
        assert_null(cg_parent_rel("/sys/fs/cgroup", "/sys/fs/cgroup", buf, sizeof buf));
        assert_string_equal(buf, ".");
        assert_non_null(strstr(cg_parent_rel("/sys/fs/cgroup/a/../b", "/sys/fs/cgroup", buf, sizeof buf), ".."));
        assert_non_null(strstr(cg_parent_rel("/sys/fs/cgroupx/a", "/sys/fs/cgroup", buf, sizeof buf), "not under"));
        assert_non_null(strstr(cg_parent_rel("/tmp/a", "/sys/fs/cgroup", buf, sizeof buf), "not under"));
        assert_non_null(strstr(cg_parent_rel("sys/fs/cgroup/a", "/sys/fs/cgroup", buf, sizeof buf), "absolute"));

        cg_common_ancestor("a/b/c", "a/b/d", buf, sizeof buf);
        assert_string_equal(buf, "a/b");
        cg_common_ancestor("x/ab", "x/abc", buf, sizeof buf);       /* whole components */
        assert_string_equal(buf, "x");
        cg_common_ancestor("a/b", "a/b/c", buf, sizeof buf);
        assert_string_equal(buf, "a/b");
        cg_common_ancestor("a", "b", buf, sizeof buf);
        assert_string_equal(buf, ".");
        cg_common_ancestor(".", "b/c", buf, sizeof buf);
        assert_string_equal(buf, ".");
}

/* A learner's laptop: pure v2, the shell shares nsbox's session scope. */
static void facts_shared_scope(struct cg_facts *f, struct cg_manager_facts *m)
{
        facts_pure_v2(f);
        f->v2_other_procs = 1;
        f->v2_root_has_controllers = true;
        memset(m, 0, sizeof *m);
        m->have_sd_bus = true;
        m->self = 4321;
        m->runtime_dir = "/run/user/1000";
        m->runtime_bus_exists = true;
}

static void test_obtain_plan(void **state)
{
        struct cg_facts f;
        struct cg_manager_facts m;
        struct cg_obtain_plan p;

        (void) state;
        /* usable as it is: nothing to ask */
        facts_shared_scope(&f, &m);
        f.v2_other_procs = 0;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        assert_int_equal(p.origin, CG_ORIGIN_DELEGATED);
        assert_string_equal(cg_origin_name(p.origin), "delegated");

        /* in the scope this very process asked for (or its leaf): once per
         * process, so a later run asks nothing */
        snprintf(f.v2_base_rel, sizeof f.v2_base_rel, "user.slice/u/app.slice/nsbox-scope-4321-1f.scope");
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        assert_int_equal(p.origin, CG_ORIGIN_SCOPE);
        m.self = 999;                           /* another nsbox's scope is just delegated to us */
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.origin, CG_ORIGIN_DELEGATED);

        /* the shell shares our scope: ask the user manager, on the bus the
         * environment names, else $XDG_RUNTIME_DIR/bus */
        facts_shared_scope(&f, &m);
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_ASK_SYSTEMD);
        assert_int_equal(p.origin, CG_ORIGIN_SCOPE);
        assert_true(p.user_manager);
        assert_string_equal(p.bus_address, "unix:path=/run/user/1000/bus");
        assert_non_null(strstr(p.reason, "no-internal-processes"));
        m.session_bus = "unix:path=/run/user/1000/bus,guid=ab";
        cg_obtain_plan(&f, &m, &p);
        assert_string_equal(p.bus_address, "unix:path=/run/user/1000/bus,guid=ab");

        /* no user bus: the fallback, and what would help here */
        facts_shared_scope(&f, &m);
        m.runtime_bus_exists = false;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        assert_int_equal(p.origin, CG_ORIGIN_NONE);
        assert_non_null(strstr(p.reason, "$XDG_RUNTIME_DIR/bus does not exist"));
        assert_non_null(strstr(p.fix, "dbus-user-session"));
        assert_non_null(strstr(p.fix, "systemd-run --user --scope -p Delegate=yes"));
        m.runtime_dir = NULL;
        cg_obtain_plan(&f, &m, &p);
        assert_non_null(strstr(p.reason, "not a login session"));
        assert_non_null(strstr(p.fix, "loginctl enable-linger"));

        /* root: the system manager, on the system bus */
        facts_shared_scope(&f, &m);
        m.root = true;
        m.system_bus_exists = true;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_ASK_SYSTEMD);
        assert_false(p.user_manager);
        assert_string_equal(p.bus_address, "unix:path=/run/dbus/system_bus_socket");
        m.system_bus = "unix:path=/elsewhere";
        cg_obtain_plan(&f, &m, &p);
        assert_string_equal(p.bus_address, "unix:path=/elsewhere");
        m.system_bus = NULL;
        m.system_bus_exists = false;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.origin, CG_ORIGIN_NONE);
        assert_non_null(strstr(p.fix, "systemd-run --scope -p Delegate=yes"));

        /* built without libsystemd */
        facts_shared_scope(&f, &m);
        m.have_sd_bus = false;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.origin, CG_ORIGIN_NONE);
        assert_non_null(strstr(p.reason, "without libsystemd"));

        /* hybrid (this CI host) as a user: no scope could carry memory and
         * pids, so none is asked for; root has v1 */
        facts_hybrid(&f, false);
        f.v2_member = f.v2_mounted = true;
        memset(&m, 0, sizeof m);
        m.have_sd_bus = true;
        m.session_bus = "unix:path=/run/user/1000/bus";
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        assert_int_equal(p.origin, CG_ORIGIN_NONE);
        assert_non_null(strstr(p.reason, "hybrid"));
        assert_non_null(strstr(p.fix, "run nsbox as root"));
        facts_hybrid(&f, true);
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        assert_int_equal(p.origin, CG_ORIGIN_DELEGATED);

        /* no cgroup2 at all */
        memset(&f, 0, sizeof f);
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.origin, CG_ORIGIN_NONE);
        assert_non_null(strstr(p.fix, "cgroup2"));
}

static void test_obtain_plan_parent(void **state)
{
        struct cg_facts f;
        struct cg_manager_facts m;
        struct cg_obtain_plan p;

        (void) state;
        facts_shared_scope(&f, &m);
        f.parent_given = true;
        f.v2_other_procs = 0;
        f.v2_self_outside = true;
        f.v2_ancestor_writable = true;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        assert_int_equal(p.origin, CG_ORIGIN_PARENT);
        assert_int_equal(cg_choose(&f, NULL), CG_BACKEND_V2);

        /* each refusal, never a fallback to a scope or rlimit */
        f.v2_ancestor_writable = false;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_REFUSE);
        assert_non_null(strstr(p.reason, "meet at a cgroup whose cgroup.procs this user cannot write"));
        f.v2_self_outside = false;                  /* inside it: no ancestor to cross */
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        f.v2_writable = false;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_REFUSE);
        assert_non_null(strstr(p.reason, "not writable by this user"));
        f.v2_writable = true;
        f.v2_controllers = CG_CTRL_MEMORY;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_REFUSE);
        assert_non_null(strstr(p.reason, "memory and pids are not both"));
        f.v2_controllers = CG_CTRL_MEMORY | CG_CTRL_PIDS;
        f.v2_other_procs = 3;
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_REFUSE);
        assert_non_null(strstr(p.reason, "holds processes other than nsbox"));
        f.v2_subtree = CG_CTRL_MEMORY | CG_CTRL_PIDS;  /* already enabled: its processes sit in leaves */
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_USE);
        f.v2_base_found = false;
        cg_obtain_plan(&f, &m, &p);
        assert_string_equal(p.reason, "no such cgroup");
        f.parent_error = "not on the cgroup2 hierarchy (a cgroup v1 directory, or not a cgroup)";
        cg_obtain_plan(&f, &m, &p);
        assert_int_equal(p.action, CG_OBTAIN_REFUSE);
        assert_non_null(strstr(p.reason, "not on the cgroup2 hierarchy"));
        f.v2_mounted = false;
        cg_obtain_plan(&f, &m, &p);
        assert_non_null(strstr(p.reason, "needs cgroup v2"));
        cg_facts_explain(&f);
        assert_non_null(strstr(f.reason, "--cgroup-parent: "));
}

/* ------------------------------------------------------- fake v2 tree */

#define BASE "user.slice/user-1000.slice/user@1000.service/app.slice/nsbox.scope"

static const char *const fake_files[] = {
        "cgroup.procs", "cgroup.kill", "cgroup.type", "cgroup.controllers", "cgroup.subtree_control",
        "memory.max", "memory.swap.max", "memory.peak", "memory.current", "memory.events",
        "pids.max", "pids.events", "cpu.stat", NULL,
};
static const char *const fake_files_old[] = {   /* no swap accounting, no memory.peak (< 5.19) */
        "cgroup.procs", "cgroup.kill", "cgroup.type", "memory.max", "memory.current",
        "memory.events", "pids.max", "pids.events", "cpu.stat", NULL,
};

struct fake {
        char root[64];
        int proc_fd, sys_fd;
        struct cg_env env;
};

static int put(int dirfd, const char *rel, const char *content)
{
        int fd = openat(dirfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        size_t len = strlen(content);
        bool ok;

        if (fd < 0)
                return -1;
        ok = write(fd, content, len) == (ssize_t) len;
        close(fd);
        return ok ? 0 : -1;
}

static char *get(int dirfd, const char *rel)
{
        static char buf[4096];
        ssize_t n = cg_read_at(dirfd, rel, buf, sizeof buf);

        return n < 0 ? NULL : buf;
}

static bool exists(int dirfd, const char *rel)
{
        return faccessat(dirfd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static int mkdir_p(int dirfd, const char *rel)
{
        char path[CG_PATH_MAX];

        snprintf(path, sizeof path, "%s", rel);
        for (char *p = path + 1;; p++) {
                if (*p == '/' || *p == '\0') {
                        char c = *p;
                        *p = '\0';
                        if (mkdirat(dirfd, path, 0755) < 0 && errno != EEXIST)
                                return -1;
                        if (c == '\0')
                                return 0;
                        *p = c;
                }
        }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void) st;
        (void) flag;
        (void) ftw;
        return remove(path);
}

/* Write self/cgroup; base files; proc/<our pid> so we count as alive. */
static int fake_populate(struct fake *fk, const char *self_path, const char *subtree, const char *procs)
{
        char buf[256];

        snprintf(buf, sizeof buf, "0::%s\n", self_path);
        if (put(fk->proc_fd, "self/cgroup", buf) < 0 || mkdir_p(fk->sys_fd, BASE) < 0)
                return -1;
        if (put(fk->sys_fd, BASE "/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n") < 0 ||
            put(fk->sys_fd, BASE "/cgroup.subtree_control", subtree) < 0 ||
            put(fk->sys_fd, BASE "/cgroup.procs", procs) < 0 ||
            put(fk->sys_fd, BASE "/cgroup.type", "domain\n") < 0)
                return -1;
        return 0;
}

static int fake_setup(void **state)
{
        struct fake *fk = calloc(1, sizeof *fk);
        char buf[64];

        if (!fk)
                return -1;
        *state = fk;
        fk->proc_fd = fk->sys_fd = -1;
        strcpy(fk->root, "/tmp/nsbox-cgtest-XXXXXX");
        if (!mkdtemp(fk->root))
                return -1;
        if (chdir(fk->root) < 0 || mkdir("proc", 0755) < 0 || mkdir("proc/self", 0755) < 0 ||
            mkdir("sys", 0755) < 0)
                return -1;
        snprintf(buf, sizeof buf, "proc/%d", (int) getpid());
        if (mkdir(buf, 0755) < 0)
                return -1;
        fk->proc_fd = open("proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        fk->sys_fd = open("sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (chdir("/") < 0 || fk->proc_fd < 0 || fk->sys_fd < 0)
                return -1;
        if (put(fk->proc_fd, "self/mountinfo",
                "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
                "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
                "rw,nsdelegate,memory_recursiveprot\n"
                "31 22 0:5 / /proc rw,nosuid - proc proc rw\n") < 0)
                return -1;
        snprintf(buf, sizeof buf, "%d\n", (int) getpid());
        if (fake_populate(fk, "/" BASE, "\n", buf) < 0)
                return -1;
        fk->env.proc_fd = fk->proc_fd;
        fk->env.sys_cgroup_fd = fk->sys_fd;
        fk->env.fake_files = fake_files;
        return 0;
}

static int fake_teardown(void **state)
{
        struct fake *fk = *state;

        if (!fk)
                return 0;
        if (fk->proc_fd >= 0)
                close(fk->proc_fd);
        if (fk->sys_fd >= 0)
                close(fk->sys_fd);
        if (fk->root[0] && strcmp(fk->root, "/tmp/nsbox-cgtest-XXXXXX") != 0)
                nftw(fk->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(fk);
        return 0;
}

/* --cgroup-parent, from outside: runs go into the given cgroup; nothing of
 * ours moves, and controllers are enabled there directly. */
#define PARENT "system.slice/isolate.service/box"

static int fake_parent(struct fake *fk, const char *procs, const char *controllers)
{
        if (mkdir_p(fk->sys_fd, PARENT) < 0 ||
            put(fk->sys_fd, PARENT "/cgroup.controllers", controllers) < 0 ||
            put(fk->sys_fd, PARENT "/cgroup.subtree_control", "\n") < 0 ||
            put(fk->sys_fd, PARENT "/cgroup.procs", procs) < 0 || put(fk->sys_fd, PARENT "/cgroup.type", "domain\n") < 0 ||
            put(fk->sys_fd, "cgroup.procs", "1\n") < 0)
                return -1;
        fk->env.parent_path = "/sys/fs/cgroup/" PARENT;
        return 0;
}

static void test_v2_cgroup_parent(void **state)
{
        struct fake *fk = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V2);
        struct cg_spec spec = { .memory_bytes = 64ULL << 20, .pids_max = 16, .serial = 3 };
        struct cg_facts f;
        struct cg_obtained got;
        struct cg_run run;
        struct nsb_error e;
        char file[CG_PATH_MAX + 64];

        assert_int_equal(fake_parent(fk, "", "memory pids\n"), 0);
        if (cg_obtain(&fk->env, true, &f, &got, &e) < 0)
                fail_msg("obtain: %s", e.msg);
        assert_int_equal(got.origin, CG_ORIGIN_PARENT);
        assert_int_equal(got.backend, CG_BACKEND_V2);
        assert_false(got.asked_systemd);
        assert_true(f.v2_self_outside);
        assert_string_equal(f.v2_base_rel, PARENT);
        /* enabled in the parent at once; we did not move (no leaf anywhere) */
        assert_string_equal(get(fk->sys_fd, PARENT "/cgroup.subtree_control"), "+memory +pids");
        snprintf(file, sizeof file, PARENT "/nsbox-sup-%d", (int) getpid());
        assert_false(exists(fk->sys_fd, file));
        snprintf(file, sizeof file, BASE "/nsbox-sup-%d", (int) getpid());
        assert_false(exists(fk->sys_fd, file));

        put(fk->sys_fd, PARENT "/cgroup.subtree_control", "memory pids\n");  /* as the kernel shows it */
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        if (ops->create(&fk->env, &f, &spec, &run, &e) < 0)
                fail_msg("create: %s", e.msg);
        snprintf(file, sizeof file, PARENT "/nsbox-%d-3/memory.max", (int) getpid());
        assert_string_equal(get(fk->sys_fd, file), "67108864");
        snprintf(file, sizeof file, PARENT "/nsbox-%d-3/pids.max", (int) getpid());
        assert_string_equal(get(fk->sys_fd, file), "16");
        ops->destroy(&run);
        snprintf(file, sizeof file, PARENT "/nsbox-%d-3", (int) getpid());
        assert_false(exists(fk->sys_fd, file));
}

static void test_v2_cgroup_parent_refused(void **state)
{
        struct fake *fk = *state;
        struct cg_facts f;
        struct cg_obtained got;
        struct nsb_error e;

        /* memory and pids not delegated to it */
        assert_int_equal(fake_parent(fk, "", "cpu io\n"), 0);
        nsb_error_clear(&e);
        assert_int_equal(cg_obtain(&fk->env, true, &f, &got, &e), -EINVAL);
        assert_int_equal(e.stage, NSB_STAGE_CGROUP);
        assert_non_null(strstr(e.msg, "--cgroup-parent /sys/fs/cgroup/" PARENT ": memory and pids are not both"));
        /* nothing was written */
        assert_string_equal(get(fk->sys_fd, PARENT "/cgroup.subtree_control"), "\n");

        /* someone else's processes in it */
        assert_int_equal(fake_parent(fk, "77\n78\n", "memory pids\n"), 0);
        nsb_error_clear(&e);
        assert_int_equal(cg_obtain(&fk->env, true, &f, &got, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "holds processes other than nsbox"));

        /* missing, and not a cgroup path at all */
        fk->env.parent_path = "/sys/fs/cgroup/" PARENT "/nope";
        assert_int_equal(cg_obtain(&fk->env, true, &f, &got, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "no such cgroup"));
        fk->env.parent_path = "/var/lib/box";
        assert_int_equal(cg_obtain(&fk->env, true, &f, &got, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "not under the cgroup filesystem"));
}

/* Without --cgroup-parent, on a usable own cgroup: cg_obtain prepares it
 * once (our leaf, controllers), so forked workers find it ready. */
static void test_v2_obtain_prepares(void **state)
{
        struct fake *fk = *state;
        struct cg_facts f;
        struct cg_obtained got;
        struct nsb_error e;
        char file[CG_PATH_MAX + 64];

        if (cg_obtain(&fk->env, true, &f, &got, &e) < 0)
                fail_msg("obtain: %s", e.msg);
        assert_int_equal(got.origin, CG_ORIGIN_DELEGATED);
        assert_int_equal(got.backend, CG_BACKEND_V2);
        snprintf(file, sizeof file, BASE "/nsbox-sup-%d/cgroup.procs", (int) getpid());
        assert_string_equal(get(fk->sys_fd, file), "0");
        assert_string_equal(get(fk->sys_fd, BASE "/cgroup.subtree_control"), "+memory +pids");
        assert_non_null(strstr(got.detail, "delegated"));
}

static void test_v2_detect(void **state)
{
        struct fake *fk = *state;
        struct cg_facts f;
        struct nsb_error e;
        const char *why;

        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_true(f.v2_mounted);
        assert_true(f.v2_member);
        assert_true(f.v2_base_found);
        assert_string_equal(f.v2_base_rel, BASE);
        assert_false(f.v2_in_sup_leaf);
        assert_false(f.v2_base_is_root);
        assert_int_equal(f.v2_controllers, CG_CTRL_MEMORY | CG_CTRL_PIDS | CG_CTRL_CPU);
        assert_int_equal(f.v2_subtree, 0);
        assert_int_equal(f.v2_other_procs, 0);
        assert_true(f.v2_writable);
        assert_false(f.v1[CG_V1_MEMORY].mounted);
        assert_int_equal(cg_choose(&f, &why), CG_BACKEND_V2);
        assert_non_null(strstr(why, "cgroup v2: usable"));
        assert_non_null(strstr(why, "cgroup v1: no v1 memory hierarchy"));
}

static void test_v2_create_usage_kill_destroy(void **state)
{
        struct fake *fk = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V2);
        struct cg_spec spec = { .memory_bytes = 256ULL << 20, .pids_max = 64, .serial = 7 };
        struct cg_facts f;
        struct cg_run run;
        struct cg_usage u;
        struct nsb_error e;
        struct stat st1, st2;
        char run_rel[CG_PATH_MAX], sup_rel[CG_PATH_MAX], file[CG_PATH_MAX + 32];

        snprintf(run_rel, sizeof run_rel, BASE "/nsbox-%d-7", (int) getpid());
        snprintf(sup_rel, sizeof sup_rel, BASE "/nsbox-sup-%d", (int) getpid());
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_int_equal(cg_reap_stale(&fk->env, &f), 0);
        if (ops->create(&fk->env, &f, &spec, &run, &e) < 0)
                fail_msg("create: %s", e.msg);
        assert_int_equal(run.backend, CG_BACKEND_V2);

        /* no-internal-processes: we moved ourselves into a leaf first, then
         * enabled the controllers for our children */
        snprintf(file, sizeof file, "%s/cgroup.procs", sup_rel);
        assert_string_equal(get(fk->sys_fd, file), "0");
        assert_string_equal(get(fk->sys_fd, BASE "/cgroup.subtree_control"), "+memory +pids");

        /* the limits, in the run cgroup */
        snprintf(file, sizeof file, "%s/memory.max", run_rel);
        assert_string_equal(get(fk->sys_fd, file), "268435456");
        snprintf(file, sizeof file, "%s/memory.swap.max", run_rel);
        assert_string_equal(get(fk->sys_fd, file), "0");
        snprintf(file, sizeof file, "%s/pids.max", run_rel);
        assert_string_equal(get(fk->sys_fd, file), "64");
        /* clone_fd is the run cgroup itself; v2 has nothing for the child to join */
        assert_true(run.clone_fd >= 0);
        assert_int_equal(fstat(run.clone_fd, &st1), 0);
        assert_int_equal(fstatat(fk->sys_fd, run_rel, &st2, 0), 0);
        assert_true(S_ISDIR(st1.st_mode));
        assert_true(st1.st_ino == st2.st_ino && st1.st_dev == st2.st_dev);
        for (size_t i = 0; i < CG_RUN_DIRS; i++)
                assert_int_equal(run.join_fds[i], -1);
        assert_int_equal(fcntl(run.clone_fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);

        /* nothing happened yet */
        memset(&u, 0, sizeof u);
        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_false(u.oom_killed || u.memory_limit_hit || u.pids_limit_hit || u.cpu_known || u.peak_known);

        /* the kernel's counters, as the test writes them */
        snprintf(file, sizeof file, "%s/memory.events", run_rel);
        assert_int_equal(put(fk->sys_fd, file, "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n"), 0);
        snprintf(file, sizeof file, "%s/pids.events", run_rel);
        assert_int_equal(put(fk->sys_fd, file, "max 3\n"), 0);
        snprintf(file, sizeof file, "%s/cpu.stat", run_rel);
        assert_int_equal(put(fk->sys_fd, file, "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n"), 0);
        snprintf(file, sizeof file, "%s/memory.peak", run_rel);
        assert_int_equal(put(fk->sys_fd, file, "268431360\n"), 0);
        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_true(u.oom_killed);
        assert_true(u.memory_limit_hit);
        assert_true(u.pids_limit_hit);
        assert_true(u.cpu_known);
        assert_int_equal(u.cpu_usec, 1234567);
        assert_true(u.peak_known);
        assert_int_equal(u.peak_memory_bytes, 268431360);

        /* reached the limit but nothing was killed, no fork refused */
        snprintf(file, sizeof file, "%s/memory.events", run_rel);
        assert_int_equal(put(fk->sys_fd, file, "low 0\nhigh 0\nmax 2\noom 0\noom_kill 0\n"), 0);
        snprintf(file, sizeof file, "%s/pids.events", run_rel);
        assert_int_equal(put(fk->sys_fd, file, "max 0\n"), 0);
        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_false(u.oom_killed);
        assert_true(u.memory_limit_hit);
        assert_false(u.pids_limit_hit);

        /* a second run in the same process: controllers already on, no new move */
        {
                struct cg_run run2;
                struct cg_spec spec2 = spec;
                char rel2[CG_PATH_MAX];

                spec2.serial = 8;
                snprintf(file, sizeof file, "%s/cgroup.procs", sup_rel);
                assert_int_equal(put(fk->sys_fd, file, "untouched"), 0);
                assert_int_equal(put(fk->sys_fd, BASE "/cgroup.subtree_control", "memory pids\n"), 0);
                if (ops->create(&fk->env, &f, &spec2, &run2, &e) < 0)
                        fail_msg("create #2: %s", e.msg);
                assert_string_equal(get(fk->sys_fd, file), "untouched");
                snprintf(rel2, sizeof rel2, BASE "/nsbox-%d-8", (int) getpid());
                assert_true(exists(fk->sys_fd, rel2));
                ops->destroy(&run2);
                assert_false(exists(fk->sys_fd, rel2));
        }

        assert_int_equal(ops->kill_all(&run, &e), 0);
        snprintf(file, sizeof file, "%s/cgroup.kill", run_rel);
        assert_string_equal(get(fk->sys_fd, file), "1");

        ops->destroy(&run);
        assert_false(exists(fk->sys_fd, run_rel));
        assert_int_equal(run.clone_fd, -1);
        ops->destroy(&run);                                 /* idempotent */
        assert_int_equal(ops->kill_all(&run, &e), 0);       /* and harmless after */
        assert_true(exists(fk->sys_fd, sup_rel));           /* we still live in it */
}

static void test_v2_child_join_closes(void **state)
{
        struct fake *fk = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V2);
        struct cg_spec spec = { .memory_bytes = 1 << 20, .pids_max = 4, .serial = 1 };
        struct cg_facts f;
        struct cg_run run, copy;
        struct nsb_error e;

        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        if (ops->create(&fk->env, &f, &spec, &run, &e) < 0)
                fail_msg("create: %s", e.msg);
        copy = run;
        /* as the child would, on its copy; here the fds are shared, so the
         * parent's handle must not use them afterwards */
        assert_int_equal(ops->child_join(&copy, &spec, &e), 0);
        assert_int_equal(copy.clone_fd, -1);
        for (size_t i = 0; i < CG_U__MAX; i++)
                assert_int_equal(copy.usage_fds[i], -1);
        assert_int_equal(fcntl(run.clone_fd, F_GETFD), -1);         /* closed */
        assert_int_equal(fcntl(run.usage_fds[CG_U_MEM_EVENTS], F_GETFD), -1);
        cg_run_init(&run);   /* the fds are gone; leave the dir to teardown */
}

static void test_v2_old_kernel_files(void **state)
{
        struct fake *fk = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V2);
        struct cg_spec spec = { .memory_bytes = 64 << 20, .pids_max = 0, .serial = 3 };
        struct cg_facts f;
        struct cg_run run;
        struct cg_usage u;
        struct nsb_error e;
        char run_rel[CG_PATH_MAX], file[CG_PATH_MAX + 32];

        fk->env.fake_files = fake_files_old;
        snprintf(run_rel, sizeof run_rel, BASE "/nsbox-%d-3", (int) getpid());
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        if (ops->create(&fk->env, &f, &spec, &run, &e) < 0)
                fail_msg("create: %s", e.msg);
        snprintf(file, sizeof file, "%s/memory.swap.max", run_rel);
        assert_false(exists(fk->sys_fd, file));             /* optional: skipped, not created */
        snprintf(file, sizeof file, "%s/pids.max", run_rel);
        assert_string_equal(get(fk->sys_fd, file), "max");

        /* no memory.peak: the peak is the largest memory.current polled,
         * remembered by the run (the caller may pass a fresh struct each time) */
        memset(&u, 0xff, sizeof u);
        snprintf(file, sizeof file, "%s/memory.current", run_rel);
        assert_int_equal(put(fk->sys_fd, file, "1000\n"), 0);
        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_int_equal(u.peak_memory_bytes, 1000);
        assert_int_equal(put(fk->sys_fd, file, "500\n"), 0);
        memset(&u, 0xff, sizeof u);
        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_int_equal(u.peak_memory_bytes, 1000);
        assert_int_equal(put(fk->sys_fd, file, "3000\n"), 0);
        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_int_equal(u.peak_memory_bytes, 3000);
        assert_true(u.peak_known);

        ops->destroy(&run);
        assert_false(exists(fk->sys_fd, run_rel));
}

static void test_v2_refusals(void **state)
{
        struct fake *fk = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V2);
        struct cg_spec spec = { .memory_bytes = 1 << 20, .pids_max = 4, .serial = 1 };
        struct cg_facts f;
        struct cg_run run;
        struct nsb_error e;
        char procs[64];

        /* another process shares our cgroup: controllers cannot be enabled */
        snprintf(procs, sizeof procs, "%d\n1\n", (int) getpid());
        assert_int_equal(put(fk->sys_fd, BASE "/cgroup.procs", procs), 0);
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_int_equal(f.v2_other_procs, 1);
        assert_int_not_equal(cg_choose(&f, NULL), CG_BACKEND_V2);
        assert_int_equal(ops->create(&fk->env, &f, &spec, &run, &e), -EOPNOTSUPP);
        assert_int_equal(e.stage, NSB_STAGE_CGROUP);
        assert_non_null(strstr(e.msg, "no-internal-processes"));
        ops->destroy(&run);
        assert_true(exists(fk->sys_fd, BASE));

        /* pids not delegated to us */
        assert_int_equal(put(fk->sys_fd, BASE "/cgroup.controllers", "cpu io memory\n"), 0);
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_non_null(strstr(cg_v2_unusable(&f), "pids controller"));
        /* no cgroup2 mount at all */
        assert_int_equal(put(fk->proc_fd, "self/mountinfo", "22 1 254:1 / / rw - ext4 /dev/vda rw\n"), 0);
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_false(f.v2_mounted);
        assert_int_equal(cg_choose(&f, NULL), CG_BACKEND_RLIMIT);
}

static void test_v2_in_sup_leaf(void **state)
{
        struct fake *fk = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V2);
        struct cg_spec spec = { .memory_bytes = 1 << 20, .pids_max = 4, .serial = 5 };
        struct cg_facts f;
        struct cg_run run;
        struct nsb_error e;
        char self[CG_PATH_MAX], rel[CG_PATH_MAX];

        /* a later detect, after an earlier create moved us into our leaf */
        snprintf(self, sizeof self, "/" BASE "/nsbox-sup-%d", (int) getpid());
        assert_int_equal(fake_populate(fk, self, "memory pids\n", ""), 0);
        assert_int_equal(mkdir_p(fk->sys_fd, self + 1), 0);
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_true(f.v2_in_sup_leaf);
        assert_string_equal(f.v2_base_rel, BASE);           /* runs go next to the leaf */
        assert_int_equal(f.v2_subtree, CG_CTRL_MEMORY | CG_CTRL_PIDS);
        assert_int_equal(cg_choose(&f, NULL), CG_BACKEND_V2);
        if (ops->create(&fk->env, &f, &spec, &run, &e) < 0)
                fail_msg("create: %s", e.msg);
        snprintf(rel, sizeof rel, BASE "/nsbox-%d-5", (int) getpid());
        assert_true(exists(fk->sys_fd, rel));
        assert_string_equal(get(fk->sys_fd, BASE "/cgroup.subtree_control"), "memory pids\n");
        ops->destroy(&run);
        assert_false(exists(fk->sys_fd, rel));
}

/* #28: a warm generation's run cgroup made a parent (make_parent: its init
 * in a leaf, memory and pids on for its children, its own usage from the
 * leaf), and a job's run cgroup made inside it (cg_spec.in_run) only once
 * it is ready, with its clone fd for the zygote and its join fd as the
 * fallback; before, as ever, in the base. */
static void test_v2_warm_parent(void **state)
{
        struct fake *fk = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V2);
        struct cg_spec zspec = { .memory_bytes = 1ULL << 40, .pids_max = 4096, .serial = 1000000 };
        struct cg_spec jspec = { .memory_bytes = 64ULL << 20, .pids_max = 17, .serial = 3, .join_by_fd = true,
                                 .procs_owner = (uid_t) -1, .procs_group = (gid_t) -1 };
        struct cg_facts f;
        struct cg_run zr, jr;
        struct cg_usage u;
        struct nsb_error e;
        struct stat st1, st2;
        char zname[40], zrel[CG_PATH_MAX], jrel[CG_PATH_MAX + 48], file[CG_PATH_MAX + 96];

        assert_int_equal(put(fk->sys_fd, BASE "/cgroup.subtree_control", "memory pids\n"), 0);
        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_int_equal(cg_format_run_name(getpid(), 1000000, zname, sizeof zname), 0);
        snprintf(zrel, sizeof zrel, BASE "/%s", zname);
        if (ops->create(&fk->env, &f, &zspec, &zr, &e) < 0)
                fail_msg("create the zygote's: %s", e.msg);
        assert_false(zr.in_run || zr.is_parent);

        /* not a parent yet: the job's cgroup goes into the base, joined by fd */
        jspec.in_run = zname;
        if (ops->create(&fk->env, &f, &jspec, &jr, &e) < 0)
                fail_msg("create a job's: %s", e.msg);
        assert_false(jr.in_run);
        assert_int_equal(jr.clone_fd, -1);
        assert_true(jr.join_fds[0] >= 0);
        snprintf(jrel, sizeof jrel, BASE "/nsbox-%d-3", (int) getpid());
        assert_true(exists(fk->sys_fd, jrel));
        ops->destroy(&jr);
        assert_false(exists(fk->sys_fd, jrel));

        /* the one move: the init into the leaf, then the controllers */
        assert_int_equal(ops->make_parent(&zr, 4242, (uid_t) -1, (gid_t) -1, &e), 0);
        assert_true(zr.is_parent);
        snprintf(file, sizeof file, "%s/" CG_V2_RUN_LEAF "/cgroup.procs", zrel);
        assert_string_equal(get(fk->sys_fd, file), "4242");
        snprintf(file, sizeof file, "%s/cgroup.subtree_control", zrel);
        assert_string_equal(get(fk->sys_fd, file), "+memory +pids");
        assert_int_equal(ops->make_parent(&zr, 4242, (uid_t) -1, (gid_t) -1, &e), -EINVAL);   /* once */

        /* its own usage is its leaf's: a job's OOM kill, counted in the
         * parent's hierarchical memory.events, is not the zygote's */
        snprintf(file, sizeof file, "%s/memory.events", zrel);
        assert_int_equal(put(fk->sys_fd, file, "max 1\noom 1\noom_kill 1\n"), 0);
        assert_int_equal(ops->read_usage(&zr, &u, &e), 0);
        assert_false(u.oom_killed || u.memory_limit_hit);
        snprintf(file, sizeof file, "%s/" CG_V2_RUN_LEAF "/memory.events", zrel);
        assert_int_equal(put(fk->sys_fd, file, "max 0\noom 0\noom_kill 1\n"), 0);
        assert_int_equal(ops->read_usage(&zr, &u, &e), 0);
        assert_true(u.oom_killed);

        /* ready (the kernel lists the controllers without '+'): the job's
         * cgroup inside, with its limits, its clone fd, its join fd, and
         * its cgroup.procs chowned to the given owner (ours here) */
        snprintf(file, sizeof file, "%s/cgroup.subtree_control", zrel);
        assert_int_equal(put(fk->sys_fd, file, "memory pids\n"), 0);
        jspec.procs_owner = getuid();
        jspec.procs_group = getgid();
        if (ops->create(&fk->env, &f, &jspec, &jr, &e) < 0)
                fail_msg("create a job's inside: %s", e.msg);
        assert_true(jr.in_run);
        snprintf(jrel, sizeof jrel, "%s/nsbox-%d-3", zrel, (int) getpid());
        snprintf(file, sizeof file, "%s/memory.max", jrel);
        assert_string_equal(get(fk->sys_fd, file), "67108864");
        snprintf(file, sizeof file, "%s/pids.max", jrel);
        assert_string_equal(get(fk->sys_fd, file), "17");
        assert_true(jr.clone_fd >= 0 && jr.join_fds[0] >= 0);
        assert_int_equal(fstat(jr.clone_fd, &st1), 0);
        assert_int_equal(fstatat(fk->sys_fd, jrel, &st2, 0), 0);
        assert_true(st1.st_ino == st2.st_ino && st1.st_dev == st2.st_dev);
        ops->destroy(&jr);
        assert_false(exists(fk->sys_fd, jrel));

        /* only a run cgroup's name is entered, never a path or another name */
        jspec.in_run = CG_V2_RUN_LEAF;
        if (ops->create(&fk->env, &f, &jspec, &jr, &e) < 0)
                fail_msg("create a job's beside: %s", e.msg);
        assert_false(jr.in_run);
        ops->destroy(&jr);
        jspec.in_run = "../nsbox-1-1";
        if (ops->create(&fk->env, &f, &jspec, &jr, &e) < 0)
                fail_msg("create a job's beside: %s", e.msg);
        assert_false(jr.in_run);
        ops->destroy(&jr);

        /* the parent's destroy removes its leaf first */
        ops->destroy(&zr);
        assert_false(exists(fk->sys_fd, zrel));
}

static int make_fake_cgroup(int sys_fd, const char *name)
{
        char rel[CG_PATH_MAX];

        snprintf(rel, sizeof rel, BASE "/%s", name);
        if (mkdirat(sys_fd, rel, 0755) < 0)
                return -1;
        for (size_t i = 0; fake_files[i]; i++) {
                char file[CG_PATH_MAX + 32];
                snprintf(file, sizeof file, "%s/%s", rel, fake_files[i]);
                if (put(sys_fd, file, "") < 0)
                        return -1;
        }
        return 0;
}

static void test_reap_stale(void **state)
{
        struct fake *fk = *state;
        struct cg_facts f;
        struct nsb_error e;
        char name[64], rel[CG_PATH_MAX];
        /* pid_max is at most 4194304: no process has this pid, and the fake
         * /proc has no entry for it */
        const int dead = 9999999, live_other = 4194000;

        snprintf(rel, sizeof rel, "%d", live_other);
        assert_int_equal(mkdirat(fk->proc_fd, rel, 0755), 0);
        snprintf(name, sizeof name, "nsbox-%d-0", dead);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, name), 0);
        /* a dead keeper's warm generation: its leaf and a job's cgroup inside */
        snprintf(name, sizeof name, "nsbox-%d-1000000", dead);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, name), 0);
        snprintf(name, sizeof name, "nsbox-%d-1000000/" CG_V2_RUN_LEAF, dead);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, name), 0);
        snprintf(name, sizeof name, "nsbox-%d-1000000/nsbox-%d-5", dead, dead);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, name), 0);
        snprintf(name, sizeof name, "nsbox-sup-%d", dead);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, name), 0);
        snprintf(name, sizeof name, "nsbox-%d-3", (int) getpid());
        assert_int_equal(make_fake_cgroup(fk->sys_fd, name), 0);
        snprintf(name, sizeof name, "nsbox-%d-1", live_other);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, name), 0);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, "unrelated"), 0);
        assert_int_equal(make_fake_cgroup(fk->sys_fd, "nsbox-12x-1"), 0);

        assert_int_equal(cg_detect(&fk->env, &f, &e), 0);
        assert_int_equal(cg_reap_stale(&fk->env, &f), 3);

        snprintf(rel, sizeof rel, BASE "/nsbox-%d-0", dead);
        assert_false(exists(fk->sys_fd, rel));
        snprintf(rel, sizeof rel, BASE "/nsbox-%d-1000000", dead);
        assert_false(exists(fk->sys_fd, rel));
        snprintf(rel, sizeof rel, BASE "/nsbox-sup-%d", dead);
        assert_false(exists(fk->sys_fd, rel));
        snprintf(rel, sizeof rel, BASE "/nsbox-%d-3", (int) getpid());
        assert_true(exists(fk->sys_fd, rel));
        snprintf(rel, sizeof rel, BASE "/nsbox-%d-1", live_other);
        assert_true(exists(fk->sys_fd, rel));
        assert_true(exists(fk->sys_fd, BASE "/unrelated"));
        assert_true(exists(fk->sys_fd, BASE "/nsbox-12x-1"));
        assert_int_equal(cg_reap_stale(&fk->env, &f), 0);
}

/* ------------------------------------------------------- v1, for real */

static bool must_run(void)
{
        return tests_must_run() && geteuid() == 0;
}

struct real {
        struct cg_env env;
        struct cg_facts f;
};

static int real_setup(void **state)
{
        struct real *r = calloc(1, sizeof *r);
        struct nsb_error e;

        if (!r)
                return -1;
        *state = r;
        r->env.proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        r->env.sys_cgroup_fd = open("/sys/fs/cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (r->env.proc_fd < 0)
                return -1;
        if (r->env.sys_cgroup_fd < 0)
                return 0;       /* no cgroupfs: the test decides skip or fail */
        return cg_detect(&r->env, &r->f, &e) < 0 ? -1 : 0;
}

static int real_teardown(void **state)
{
        struct real *r = *state;

        if (!r)
                return 0;
        if (r->env.proc_fd >= 0)
                close(r->env.proc_fd);
        if (r->env.sys_cgroup_fd >= 0)
                close(r->env.sys_cgroup_fd);
        free(r);
        return 0;
}

/* skip, or fail under NSBOX_TESTS_MUST_RUN=1 as root when a v1 memory
 * hierarchy exists but cannot be used (a pure-v2 host has none to test). */
static bool v1_available(struct real *r)
{
        const char *why = r->env.sys_cgroup_fd < 0 ? "no /sys/fs/cgroup" : cg_v1_unusable(&r->f);

        if (!why && geteuid() == 0)
                return true;
        if (!why)
                why = "not root";
        if (must_run() && r->f.v1[CG_V1_MEMORY].mounted)
                fail_msg("cgroup v1 backend cannot be tested: %s", why);
        print_message("skipping: cgroup v1: %s\n", why);
        return false;
}

static bool v1_dir_exists(struct real *r, int ctrl, const char *name)
{
        char rel[CG_PATH_MAX + 64];

        snprintf(rel, sizeof rel, "%s/%s", r->f.v1[ctrl].own_rel, name);
        return exists(r->env.sys_cgroup_fd, rel);
}

static const char *v1_file(struct real *r, int ctrl, const char *name, const char *file)
{
        char rel[CG_PATH_MAX + 128];

        snprintf(rel, sizeof rel, "%s/%s/%s", r->f.v1[ctrl].own_rel, name, file);
        return get(r->env.sys_cgroup_fd, rel);
}

static void test_v1_oom(void **state)
{
        struct real *r = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V1);
        struct cg_spec spec = { .memory_bytes = 32ULL << 20, .pids_max = 16, .serial = 900 };
        struct cg_run run;
        struct cg_usage u;
        struct nsb_error e;
        int status;
        pid_t pid;

        if (!v1_available(r)) {
                skip();
                return;
        }
        assert_true(cg_reap_stale(&r->env, &r->f) >= 0);
        if (ops->create(&r->env, &r->f, &spec, &run, &e) < 0)
                fail_msg("create: %s", e.msg);
        assert_string_equal(v1_file(r, CG_V1_MEMORY, run.name, "memory.limit_in_bytes"), "33554432\n");
        if (v1_dir_exists(r, CG_V1_MEMORY, run.name) &&
            exists(run.dir_fds[run.ctrl_dir[CG_V1_MEMORY]], "memory.memsw.limit_in_bytes"))
                assert_string_equal(v1_file(r, CG_V1_MEMORY, run.name, "memory.memsw.limit_in_bytes"),
                                    "33554432\n");
        assert_string_equal(v1_file(r, CG_V1_PIDS, run.name, "pids.max"), "16\n");
        assert_int_equal(run.clone_fd, -1);
        assert_true(run.join_fds[0] >= 0);
        /* The child joins through "tasks" (no global threadgroup lock, no RCU
         * grace period per join), never through cgroup.procs. */
        for (size_t i = 0; i < CG_RUN_DIRS; i++) {
                char link[64], target[CG_PATH_MAX + 64];
                ssize_t n;
                if (run.join_fds[i] < 0)
                        continue;
                snprintf(link, sizeof link, "/proc/self/fd/%d", run.join_fds[i]);
                n = readlink(link, target, sizeof target - 1);
                assert_true(n > 6);
                target[n] = '\0';
                assert_string_equal(target + n - 6, "/tasks");
        }

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct nsb_error ce;
                size_t total = 256u << 20;
                char *p;

                if (ops->child_join(&run, &spec, &ce) < 0)
                        _exit(3);
                p = malloc(total);
                if (!p)
                        _exit(4);
                for (size_t off = 0; off < total; off += 4096)
                        p[off] = 1;     /* touch: charged to the memory cgroup */
                _exit(0);               /* survived 256M under a 32M limit: wrong */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
                fail_msg("child was not OOM-killed: status 0x%x", status);

        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_true(u.oom_killed);
        assert_true(u.memory_limit_hit);
        assert_true(u.peak_known);
        assert_true(u.peak_memory_bytes >= (16u << 20) && u.peak_memory_bytes <= (33u << 20));
        assert_false(u.pids_limit_hit);
        if (run.ctrl_dir[CG_V1_CPUACCT] >= 0) {
                assert_true(u.cpu_known);
                assert_true(u.cpu_usec > 0);
        }

        assert_int_equal(ops->kill_all(&run, &e), 0);
        {
                char name[40];
                strcpy(name, run.name);
                ops->destroy(&run);
                for (int c = 0; c < CG_V1__MAX; c++)
                        if (r->f.v1[c].writable)
                                assert_false(v1_dir_exists(r, c, name));
        }
        ops->destroy(&run);
}

static void test_v1_pids_and_kill(void **state)
{
        struct real *r = *state;
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_V1);
        struct cg_spec spec = { .memory_bytes = 64ULL << 20, .pids_max = 6, .serial = 901 };
        struct cg_run run;
        struct cg_usage u;
        struct nsb_error e;
        char name[40], procs[CG_PATH_MAX + 64];
        int pfd[2], status, forked = -1;
        pid_t pid;

        if (!v1_available(r)) {
                skip();
                return;
        }
        /* a dead supervisor's leftovers, in every hierarchy: reaped */
        for (int c = 0; c < CG_V1__MAX; c++) {
                char rel[CG_PATH_MAX + 64];
                if (!r->f.v1[c].writable)
                        continue;
                snprintf(rel, sizeof rel, "%s/nsbox-9999999-0", r->f.v1[c].own_rel);
                if (mkdirat(r->env.sys_cgroup_fd, rel, 0755) < 0 && errno != EEXIST)
                        fail_msg("mkdir %s: %s", rel, strerror(errno));
        }
        assert_true(cg_reap_stale(&r->env, &r->f) >= 2);
        for (int c = 0; c < CG_V1__MAX; c++)
                if (r->f.v1[c].writable)
                        assert_false(v1_dir_exists(r, c, "nsbox-9999999-0"));

        /* ... but one that still holds a task is left alone, never killed */
        {
                char rel[CG_PATH_MAX + 64], procs_rel[CG_PATH_MAX + 96];
                int sync_fd[2];
                char c;
                pid_t busy;

                snprintf(rel, sizeof rel, "%s/nsbox-9999998-0", r->f.v1[CG_V1_PIDS].own_rel);
                snprintf(procs_rel, sizeof procs_rel, "%s/cgroup.procs", rel);
                assert_int_equal(mkdirat(r->env.sys_cgroup_fd, rel, 0755), 0);
                assert_int_equal(pipe2(sync_fd, O_CLOEXEC), 0);
                busy = fork();
                assert_true(busy >= 0);
                if (busy == 0) {
                        if (cg_write_at(r->env.sys_cgroup_fd, procs_rel, "0") < 0)
                                _exit(1);
                        if (write(sync_fd[1], "j", 1) != 1)
                                _exit(1);
                        pause();
                        _exit(0);
                }
                close(sync_fd[1]);
                assert_int_equal(read(sync_fd[0], &c, 1), 1);
                close(sync_fd[0]);
                assert_true(cg_reap_stale(&r->env, &r->f) >= 0);
                assert_true(exists(r->env.sys_cgroup_fd, rel));
                assert_int_equal(kill(busy, 0), 0);             /* still alive */
                assert_int_equal(kill(busy, SIGKILL), 0);
                assert_int_equal(waitpid(busy, &status, 0), busy);
                assert_true(cg_reap_stale(&r->env, &r->f) >= 1);
                assert_false(exists(r->env.sys_cgroup_fd, rel));
        }

        if (ops->create(&r->env, &r->f, &spec, &run, &e) < 0)
                fail_msg("create: %s", e.msg);
        strcpy(name, run.name);
        assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct nsb_error ce;
                int n = 0;

                close(pfd[0]);
                if (ops->child_join(&run, &spec, &ce) < 0)
                        _exit(3);
                for (; n < 20; n++) {
                        pid_t c = fork();
                        if (c == 0) {
                                pause();
                                _exit(0);
                        }
                        if (c < 0)
                                break;  /* EAGAIN from pids.max */
                }
                if (write(pfd[1], &n, sizeof n) != sizeof n)
                        _exit(5);
                pause();
                _exit(0);
        }
        close(pfd[1]);
        assert_int_equal(read(pfd[0], &forked, sizeof forked), (ssize_t) sizeof forked);
        close(pfd[0]);
        assert_int_equal(forked, 5);    /* 6 tasks: the child and 5 of its own */

        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_true(u.pids_limit_hit);
        assert_false(u.oom_killed);

        /* every task of the run dies, including the grandchildren we never saw */
        if (ops->kill_all(&run, &e) < 0)
                fail_msg("kill_all: %s", e.msg);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        snprintf(procs, sizeof procs, "%s/%s/cgroup.procs", r->f.v1[CG_V1_MEMORY].own_rel, name);
        assert_string_equal(get(r->env.sys_cgroup_fd, procs), "");

        ops->destroy(&run);
        for (int c = 0; c < CG_V1__MAX; c++)
                if (r->f.v1[c].writable)
                        assert_false(v1_dir_exists(r, c, name));
}

/* ------------------------------------------------------- rlimit */

static void test_rlimit_child(void **state)
{
        const struct cg_ops *ops = cg_ops_for(CG_BACKEND_RLIMIT);
        struct cg_spec spec = { .memory_bytes = 512ULL << 20, .pids_max = 32, .serial = 0 };
        struct cg_run run;
        struct cg_usage u;
        struct nsb_error e;
        int status;
        pid_t pid;

        (void) state;
        assert_int_equal(ops->create(NULL, NULL, &spec, &run, &e), 0);
        assert_int_equal(run.backend, CG_BACKEND_RLIMIT);
        assert_int_equal(run.clone_fd, -1);
        memset(&u, 0xff, sizeof u);
        assert_int_equal(ops->read_usage(&run, &u, &e), 0);
        assert_false(u.cpu_known);
        assert_false(u.peak_known);
        assert_false(u.oom_killed || u.memory_limit_hit || u.pids_limit_hit);
        assert_int_equal(ops->kill_all(&run, &e), 0);

        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                struct rlimit as, np;
                struct nsb_error ce;

                if (ops->child_join(&run, &spec, &ce) < 0)
                        _exit(2);
                if (getrlimit(RLIMIT_AS, &as) < 0 || getrlimit(RLIMIT_NPROC, &np) < 0)
                        _exit(3);
                /* the memory limit plus room for the thread stacks (cg_rlimit_as_bytes) */
                if (as.rlim_cur != cg_rlimit_as_bytes(&spec) || as.rlim_cur <= (512ULL << 20) ||
                    as.rlim_max != as.rlim_cur)
                        _exit(4);
                if (np.rlim_cur != 32 || np.rlim_max != 32)
                        _exit(5);
                /* the program cannot raise them back */
                as.rlim_max = RLIM_INFINITY;
                if (geteuid() != 0 && setrlimit(RLIMIT_AS, &as) == 0)
                        _exit(6);
                _exit(0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        ops->destroy(&run);
        ops->destroy(&run);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_proc_cgroup),
                cmocka_unit_test(test_parse_mountinfo),
                cmocka_unit_test(test_tokens),
                cmocka_unit_test(test_parse_kv),
                cmocka_unit_test(test_parse_u64),
                cmocka_unit_test(test_parse_procs_and_names),
                cmocka_unit_test(test_own_rel),
                cmocka_unit_test(test_plan),
                cmocka_unit_test(test_rlimit_as_room),
                cmocka_unit_test(test_cpu_count),
                cmocka_unit_test(test_choose),
                cmocka_unit_test(test_scope_names_and_paths),
                cmocka_unit_test(test_obtain_plan),
                cmocka_unit_test(test_obtain_plan_parent),
                cmocka_unit_test_setup_teardown(test_v2_cgroup_parent, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_cgroup_parent_refused, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_obtain_prepares, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_detect, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_create_usage_kill_destroy, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_child_join_closes, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_old_kernel_files, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_refusals, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_in_sup_leaf, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v2_warm_parent, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_reap_stale, fake_setup, fake_teardown),
                cmocka_unit_test_setup_teardown(test_v1_oom, real_setup, real_teardown),
                cmocka_unit_test_setup_teardown(test_v1_pids_and_kill, real_setup, real_teardown),
                cmocka_unit_test(test_rlimit_child),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
