/* Unit tests for the mount plan: its order invariants and its validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <linux/mount.h>

#include "config/config.h"
#include "mount/mnt.h"
#include "util/cleanup.h"

static struct host_entry python_entries[] = {
        { "/usr/bin/python3", HOST_SYMLINK, "python3.11" },
        { "/usr/bin/python3.11", HOST_FILE, NULL },
        { "/lib64", HOST_SYMLINK, "usr/lib64" },
        { "/usr/lib64/ld-linux-x86-64.so.2", HOST_SYMLINK, "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" },
        { "/lib", HOST_SYMLINK, "usr/lib" },
        { "/usr/lib/x86_64-linux-gnu/libc.so.6", HOST_FILE, NULL },
        { "/usr/lib/python3.11", HOST_DIR, NULL },
        { "/usr/lib/python3.11/lib-dynload/x.so", HOST_FILE, NULL },  /* covered by the dir */
};
static const struct host_set python_set = { .v = python_entries, .n = ARRAY_SIZE(python_entries) };

static void base_cfg(struct nsb_config *cfg)
{
        cfg_defaults(cfg, NSB_CMD_PYTHON);
}

static ssize_t find_op(const struct mnt_plan *p, enum mnt_kind kind, const char *dst)
{
        for (size_t i = 0; i < p->n_ops; i++)
                if (p->ops[i].kind == kind && (!dst || (p->ops[i].dst && strcmp(p->ops[i].dst, dst) == 0)))
                        return (ssize_t) i;
        return -1;
}

static int build(struct nsb_config *cfg, struct mnt_plan *plan, struct nsb_error *e)
{
        struct mnt_input in = {
                .user = cfg_mounts(cfg), .host = &python_set, .program_name = "main.py",
                .program_data = "print(1)\n", .program_len = 9, .sandbox_uid = 1000, .sandbox_gid = 1000,
        };
        return mnt_plan_build(&in, plan, e);
}

static void test_order_invariants(void **state)
{
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        ssize_t priv, root, proc, pivot, detach, ro, tmp, ws, chdir_op, last_open = -1, first_attach = -1;

        (void) state;
        base_cfg(&cfg);
        cfg.harness = strdup("/srv/harness");
        assert_int_equal(build(&cfg, &p, &e), 0);

        priv = find_op(&p, MNT_MAKE_PRIVATE, NULL);
        root = find_op(&p, MNT_ROOT_TMPFS, NULL);
        proc = find_op(&p, MNT_PROC, "/proc");
        pivot = find_op(&p, MNT_PIVOT, NULL);
        detach = find_op(&p, MNT_DETACH_OLD, NULL);
        ro = find_op(&p, MNT_READONLY_ALL, NULL);
        tmp = find_op(&p, MNT_TMPFS, "/tmp");
        ws = find_op(&p, MNT_TMPFS, "/workspace");
        chdir_op = find_op(&p, MNT_CHDIR, "/workspace");
        assert_int_equal(priv, 0);
        for (size_t i = 0; i < p.n_ops; i++) {
                if (p.ops[i].kind == MNT_OPEN_TREE)
                        last_open = (ssize_t) i;
                if (p.ops[i].kind == MNT_ATTACH && first_attach < 0)
                        first_attach = (ssize_t) i;
        }
        /* every source is opened before the new root can hide it */
        assert_true(last_open < root);
        assert_true(root < first_attach);
        /* proc while the host's proc is visible; pivot; detach; read-only */
        assert_true(proc < pivot);
        assert_int_equal(detach, pivot + 1);
        assert_true(detach < ro);
        /* writable mounts only after the recursive read-only step */
        assert_true(ro < tmp && ro < ws);
        assert_int_equal(chdir_op, (ssize_t) p.n_ops - 1);
        for (size_t i = 0; i < p.n_ops; i++) {
                const struct mnt_op *op = &p.ops[i];
                if (op->kind == MNT_ATTACH && (ssize_t) i > ro)
                        /* nothing attached after the read-only step lacks nosuid */
                        assert_true(op->attr & MOUNT_ATTR_NOSUID);
                if (op->kind == MNT_ATTACH && op->dst && strcmp(op->dst, "/harness") == 0)
                        assert_true((ssize_t) i < ro);   /* the harness is read-only */
                if (op->kind == MNT_ATTACH && op->dst && strncmp(op->dst, "/dev/", 5) == 0)
                        assert_true(op->attr & MOUNT_ATTR_NOEXEC);
        }
        /* the lib-dynload file is covered by its directory's bind */
        assert_int_equal(find_op(&p, MNT_ATTACH, "/usr/lib/python3.11/lib-dynload/x.so"), -1);
        assert_true(find_op(&p, MNT_ATTACH, "/usr/lib/python3.11") >= 0);
        assert_true(find_op(&p, MNT_SYMLINK, "/lib64") >= 0);
        assert_true(find_op(&p, MNT_WRITE_FILE, "/program/main.py") >= 0);
        assert_int_equal(p.ops[find_op(&p, MNT_WRITE_FILE, "/program/main.py")].mode, 0444);
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

static void test_workspace_bind_is_writable_and_late(void **state)
{
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        ssize_t ws, ro;

        (void) state;
        base_cfg(&cfg);
        cfg.workspace = strdup("/home/learner/ws");
        assert_int_equal(build(&cfg, &p, &e), 0);
        ws = find_op(&p, MNT_ATTACH, "/workspace");
        ro = find_op(&p, MNT_READONLY_ALL, NULL);
        assert_true(ws > ro);
        assert_true(p.ops[ws].attr & MOUNT_ATTR_NODEV);
        assert_int_equal(find_op(&p, MNT_TMPFS, "/workspace"), -1);
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

static void test_bad_binds_rejected(void **state)
{
        static const struct { const char *src, *dst; const char *needle; } cases[] = {
                { "/a", "../x", "not absolute" },
                { "/a", "/x/../../etc", "'..'" },
                { "/a", "/proc/1", "sandbox owns" },
                { "/a", "/tmp/x", "sandbox owns" },
                { "/a", "/workspace", "sandbox owns" },
                { "/a", "/", "sandbox root" },
                { "rel", "/data", "not absolute" },
                { "/a", "/usr/bin/python3.11", "provided by the profile" },
                /* over or into what the profile provides: python would start
                 * without it and fail as if the program were wrong */
                { "/a", "/usr/lib/python3.11/encodings", "lies inside '/usr/lib/python3.11'" },
                { "/a", "/usr/lib/x86_64-linux-gnu", "would hide '/usr/lib/x86_64-linux-gnu/libc.so.6'" },
                { "/a", "//usr/bin/", "would hide '/usr/bin/python3'" },
                { "/a", "/usr/bin/python3.11/x", "lies inside '/usr/bin/python3.11'" },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct nsb_config cfg;
                struct mnt_plan p;
                struct nsb_error e;
                struct nsb_bind bind = { strdup(cases[i].src), strdup(cases[i].dst), true };

                base_cfg(&cfg);
                cfg.binds = malloc(sizeof bind);
                cfg.binds[0] = bind;
                cfg.n_binds = 1;
                nsb_error_clear(&e);
                assert_true(build(&cfg, &p, &e) < 0);
                if (!strstr(e.msg, cases[i].needle))
                        fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].needle);
                assert_int_equal(e.stage, NSB_STAGE_CONFIG);
                assert_null(p.ops);
                cfg_free(&cfg);
        }
}

/* A host path bound onto itself shows the same files: it may sit around the
 * profile's paths; a bind may go through a profile symlink (/lib). */
static void test_binds_beside_the_profile(void **state)
{
        static const struct { const char *src, *dst; } ok[] = {
                { "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu" },
                { "/usr/lib/python3.11/json/", "/usr/lib/python3.11/json" },
                { "/usr", "/usr" },
                { "/srv/data", "/lib/data" },
                { "/srv/data", "/usr/share/data" },
        };
        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                struct nsb_config cfg;
                struct mnt_plan p;
                struct nsb_error e;

                base_cfg(&cfg);
                cfg.binds = malloc(sizeof *cfg.binds);
                cfg.binds[0] = (struct nsb_bind){ strdup(ok[i].src), strdup(ok[i].dst), true };
                cfg.n_binds = 1;
                nsb_error_clear(&e);
                if (build(&cfg, &p, &e) < 0)
                        fail_msg("case %zu: %s", i, e.msg);
                mnt_plan_free(&p);
                cfg_free(&cfg);
        }
}

/* A bind inside another is attached after it, whatever order they were
 * given in (or the outer one would hide it); a read-only bind inside a
 * read-write one cannot be, and is refused. */
static void test_nested_binds(void **state)
{
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;

        (void) state;
        base_cfg(&cfg);
        cfg.binds = calloc(3, sizeof *cfg.binds);
        cfg.binds[0] = (struct nsb_bind){ strdup("/srv/deeper"), strdup("/data/x/y"), true };
        cfg.binds[1] = (struct nsb_bind){ strdup("/srv/inner"), strdup("/data/x"), true };
        cfg.binds[2] = (struct nsb_bind){ strdup("/srv/outer"), strdup("/data"), true };
        cfg.n_binds = 3;
        assert_int_equal(build(&cfg, &p, &e), 0);
        assert_true(find_op(&p, MNT_ATTACH, "/data") < find_op(&p, MNT_ATTACH, "/data/x"));
        assert_true(find_op(&p, MNT_ATTACH, "/data/x") < find_op(&p, MNT_ATTACH, "/data/x/y"));
        mnt_plan_free(&p);
        cfg.binds[2].read_only = false;
        nsb_error_clear(&e);
        assert_true(build(&cfg, &p, &e) < 0);
        assert_non_null(strstr(e.msg, "'/data/x' lies inside the read-write bind at '/data'"));
        cfg_free(&cfg);
}

static void test_duplicate_and_program_name(void **state)
{
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        struct mnt_input in;

        (void) state;
        base_cfg(&cfg);
        cfg.binds = calloc(2, sizeof *cfg.binds);
        cfg.binds[0] = (struct nsb_bind){ strdup("/a"), strdup("/data"), true };
        cfg.binds[1] = (struct nsb_bind){ strdup("/b"), strdup("/data/"), false };
        cfg.n_binds = 2;
        assert_true(build(&cfg, &p, &e) < 0);
        assert_non_null(strstr(e.msg, "mounted twice"));
        cfg_free(&cfg);

        base_cfg(&cfg);
        in = (struct mnt_input){ .user = cfg_mounts(&cfg), .program_name = "../evil.py", .program_data = "", .program_len = 0 };
        assert_true(mnt_plan_build(&in, &p, &e) < 0);
        assert_non_null(strstr(e.msg, "plain file name"));
        cfg_free(&cfg);
}

/* The working directory: /workspace, or a workspace script's folder below
 * it (cold and warm plans alike); nothing outside the workspace mount. */
static void test_workdir(void **state)
{
        static const struct { const char *workdir, *chdir_to, *err; } cases[] = {
                { NULL, "/workspace", NULL },
                { "/workspace/a/b", "/workspace/a/b", NULL },
                { "/workspace//a/", "/workspace/a", NULL },
                { "/etc", NULL, "not in /workspace" },
                { "/workspace2", NULL, "not in /workspace" },
                { "/workspace/../etc", NULL, ".." },
        };
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
                for (int warm = 0; warm <= 1; warm++) {
                        struct mnt_input in;
                        int r;

                        base_cfg(&cfg);
                        in = (struct mnt_input){ .user = cfg_mounts(&cfg), .host = &python_set,
                                                 .sandbox_uid = 1000, .sandbox_gid = 1000,
                                                 .workdir = cases[i].workdir };
                        r = warm ? mnt_plan_build_warm_job(&in, &p, &e) : mnt_plan_build(&in, &p, &e);
                        if (cases[i].err) {
                                assert_true(r < 0);
                                assert_non_null(strstr(e.msg, cases[i].err));
                        } else {
                                assert_int_equal(r, 0);
                                assert_true(find_op(&p, MNT_CHDIR, cases[i].chdir_to) >= 0);
                                assert_int_equal(p.ops[p.n_ops - 1].kind, MNT_CHDIR);
                                mnt_plan_free(&p);
                        }
                        cfg_free(&cfg);
                }
}

/* Extra tmpfs: its mount point exists before the root goes read-only, the
 * tmpfs itself comes after (writable), sized by the entry or by --tmp-size;
 * an overlap with a bind, a profile path or the sandbox's own is refused. */
static void test_tmpfs(void **state)
{
        static const struct { const char *dst; const char *want; } bad[] = {
                { "/tmp/x", "is a path the sandbox owns" },
                { "/usr/lib/python3.11/x", "overlaps a path the profile provides" },
                { "/usr/bin", "overlaps a path the profile provides" },
                { "/data/sub", "overlaps a bind mount" },
                { "/scratch/in", "overlaps another tmpfs" },
                { "/a/../b", "has a '..' component" },
        };
        struct nsb_tmpfs t[2] = { { "/scratch", 8u << 20 }, { "/cache", 0 } };
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        ssize_t ro, mk, tm, tm2;

        (void) state;
        base_cfg(&cfg);
        cfg.tmpfs = t;
        cfg.n_tmpfs = 2;
        assert_int_equal(build(&cfg, &p, &e), 0);
        ro = find_op(&p, MNT_READONLY_ALL, NULL);
        mk = find_op(&p, MNT_MKDIR, "/scratch");
        tm = find_op(&p, MNT_TMPFS, "/scratch");
        tm2 = find_op(&p, MNT_TMPFS, "/cache");
        assert_true(mk >= 0 && mk < ro);
        assert_true(tm > ro && tm2 > ro);
        assert_int_equal(p.ops[tm].size, 8u << 20);
        assert_int_equal(p.ops[tm2].size, cfg.tmp_size_bytes);
        mnt_plan_free(&p);

        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                struct nsb_bind b = { "/srv/data", "/data", true };
                struct nsb_tmpfs tt[2] = { { "/scratch", 0 }, { (char *) bad[i].dst, 0 } };
                cfg.binds = &b;
                cfg.n_binds = 1;
                cfg.tmpfs = tt;
                cfg.n_tmpfs = 2;
                nsb_error_clear(&e);
                assert_true(build(&cfg, &p, &e) < 0);
                if (!strstr(e.msg, bad[i].want))
                        fail_msg("%s: got '%s'", bad[i].dst, e.msg);
        }
}

static const struct ll_path_rule *find_rule(const struct ll_path_rule *v, size_t n, const char *path)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i].path, path) == 0)
                        return &v[i];
        return NULL;
}

/* Landlock's rules come from the plan: writable exactly where a writable
 * mount is, with every bind and tmpfs at the limits, and nothing else. */
static void test_landlock_from_plan(void **state)
{
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        struct ll_path_rule *rules = NULL;
        size_t n = 0;
        char dst[64];

        (void) state;
        base_cfg(&cfg);
        cfg.binds = calloc(64, sizeof *cfg.binds);
        cfg.tmpfs = calloc(16, sizeof *cfg.tmpfs);
        for (size_t i = 0; i < 64; i++) {
                snprintf(dst, sizeof dst, "//data%zu/", i);         /* normalised in the rule */
                cfg.binds[i] = (struct nsb_bind){ strdup("/srv/x"), strdup(dst), i % 2 == 0 };
        }
        cfg.n_binds = 64;
        for (size_t i = 0; i < 16; i++) {
                snprintf(dst, sizeof dst, "/scratch%zu", i);
                cfg.tmpfs[i] = (struct nsb_tmpfs){ strdup(dst), 0 };
        }
        cfg.n_tmpfs = 16;
        assert_int_equal(build(&cfg, &p, &e), 0);
        assert_int_equal(mnt_plan_landlock(&p, &rules, &n, &e), 0);
        /* "/", /tmp, /workspace, 32 read-write binds, 16 tmpfs, /dev/shm,
         * /dev/pts, null/zero/full */
        assert_int_equal(n, 1 + 2 + 32 + 16 + 2 + 3);
        assert_false(find_rule(rules, n, "/")->writable);
        for (size_t i = 1; i < n; i++)
                assert_true(rules[i].writable);
        assert_non_null(find_rule(rules, n, "/tmp"));
        assert_non_null(find_rule(rules, n, "/workspace"));
        assert_non_null(find_rule(rules, n, "/dev/null"));
        assert_non_null(find_rule(rules, n, "/dev/shm"));
        assert_non_null(find_rule(rules, n, "/dev/pts"));
        assert_null(find_rule(rules, n, "/dev/urandom"));
        assert_null(find_rule(rules, n, "/etc/passwd"));  /* synthesized, read-only */
        assert_non_null(find_rule(rules, n, "/data1"));   /* read-write */
        assert_null(find_rule(rules, n, "/data0"));       /* read-only: "/" covers it */
        assert_non_null(find_rule(rules, n, "/scratch15"));
        free(rules);
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

/* What ordinary programs expect of a Linux system (mnt.h): a bounded,
 * noexec /dev/shm and a devpts on top of the read-only tree, /dev/ptmx
 * into it, the sandbox's own account files (never a host bind), UTC, and
 * the optional read-only system directories. */
static void test_system_root(void **state)
{
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        ssize_t ro_all, shm, pts, passwd, group, ptmx, tz, tz_open;

        (void) state;
        base_cfg(&cfg);
        cfg.tmp_size_bytes = 32u << 20;
        assert_int_equal(build(&cfg, &p, &e), 0);
        ro_all = find_op(&p, MNT_READONLY_ALL, "/");
        shm = find_op(&p, MNT_TMPFS, "/dev/shm");
        pts = find_op(&p, MNT_DEVPTS, "/dev/pts");
        assert_true(ro_all >= 0 && shm > ro_all && pts > ro_all);
        assert_int_equal(p.ops[shm].size, 32u << 20);       /* bounded like /tmp */
        assert_true(p.ops[shm].attr & MOUNT_ATTR_NOEXEC);
        assert_int_equal(p.ops[shm].mode, 01777);
        assert_true(p.ops[shm].writable && p.ops[pts].writable);
        ptmx = find_op(&p, MNT_SYMLINK, "/dev/ptmx");
        assert_true(ptmx >= 0);
        assert_string_equal(p.ops[ptmx].src, "pts/ptmx");
        passwd = find_op(&p, MNT_WRITE_FILE, "/etc/passwd");
        group = find_op(&p, MNT_WRITE_FILE, "/etc/group");
        assert_true(passwd >= 0 && group >= 0 && passwd < ro_all && group < ro_all);
        assert_non_null(strstr(p.ops[passwd].data, "\nsandbox:x:1000:1000:nsbox sandbox:/tmp:/bin/sh\n"));
        assert_non_null(strstr(p.ops[passwd].data, "root:x:0:0:"));
        assert_non_null(strstr(p.ops[group].data, "\nsandbox:x:1000:\n"));
        assert_int_equal(p.ops[passwd].data_len, strlen(p.ops[passwd].data));
        assert_int_equal(p.ops[passwd].mode, 0444);
        assert_false(p.ops[passwd].writable);
        assert_int_equal(find_op(&p, MNT_OPEN_TREE, NULL) >= 0, 1);
        for (size_t i = 0; i < p.n_ops; i++)
                assert_false(p.ops[i].kind == MNT_OPEN_TREE && p.ops[i].src && strncmp(p.ops[i].src, "/etc", 4) == 0);
        assert_string_equal(p.ops[find_op(&p, MNT_SYMLINK, "/etc/localtime")].src, "/usr/share/zoneinfo/Etc/UTC");
        tz = find_op(&p, MNT_ATTACH, "/usr/share/zoneinfo");
        assert_true(tz >= 0 && tz < ro_all && p.ops[tz].optional);
        tz_open = -1;
        for (size_t i = 0; i < p.n_ops; i++)
                if (p.ops[i].kind == MNT_OPEN_TREE && strcmp(p.ops[i].src, "/usr/share/zoneinfo") == 0)
                        tz_open = (ssize_t) i;
        assert_true(tz_open >= 0 && p.ops[tz_open].optional && p.ops[tz_open].slot == p.ops[tz].slot);
        assert_true(find_op(&p, MNT_ATTACH, "/usr/lib/locale/C.utf8") >= 0);
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

/* A profile that brings the host's /etc/passwd (or /etc whole) would show
 * the host's users: refused. One that brings the zoneinfo itself keeps it
 * (no second mount at the same place). */
static void test_system_root_and_profiles(void **state)
{
        struct host_entry with_passwd[] = { { "/usr/bin/python3", HOST_FILE, NULL }, { "/etc/passwd", HOST_FILE, NULL } };
        struct host_entry with_etc[] = { { "/usr/bin/python3", HOST_FILE, NULL }, { "/etc", HOST_DIR, NULL } };
        struct host_entry with_tz[] = { { "/usr/share/zoneinfo/Europe/Paris", HOST_FILE, NULL } };
        struct host_set sets[] = { { .v = with_passwd, .n = 2 }, { .v = with_etc, .n = 2 }, { .v = with_tz, .n = 1 } };
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;

        (void) state;
        base_cfg(&cfg);
        for (size_t i = 0; i < 3; i++) {
                struct mnt_input in = { .user = cfg_mounts(&cfg), .host = &sets[i], .sandbox_uid = 1000,
                                        .sandbox_gid = 1000 };
                int r = mnt_plan_build(&in, &p, &e);

                if (i < 2) {
                        assert_int_equal(r, -EINVAL);
                        assert_non_null(strstr(e.msg, "the host's is never shown"));
                        continue;
                }
                assert_int_equal(r, 0);
                assert_int_equal(find_op(&p, MNT_ATTACH, "/usr/share/zoneinfo"), -1);
                assert_true(find_op(&p, MNT_ATTACH, "/usr/share/zoneinfo/Europe/Paris") >= 0);
                mnt_plan_free(&p);
        }
        cfg_free(&cfg);
}

/* Each warm job gets its own /dev/shm and devpts (over its zygote's): no
 * semaphore or pty is shared between two jobs. */
static void test_warm_job_private_shm_pts(void **state)
{
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        struct mnt_input in;
        ssize_t shm;

        (void) state;
        base_cfg(&cfg);
        in = (struct mnt_input){ .user = cfg_mounts(&cfg), .host = &python_set, .program_name = "main.py",
                                 .program_data = "print(1)\n", .program_len = 9, .sandbox_uid = 1000,
                                 .sandbox_gid = 1000 };
        assert_int_equal(mnt_plan_build_warm_job(&in, &p, &e), 0);
        shm = find_op(&p, MNT_TMPFS, "/dev/shm");
        assert_true(shm >= 0);
        assert_true(p.ops[shm].attr & MOUNT_ATTR_NOEXEC);
        assert_int_equal(p.ops[shm].size, cfg.tmp_size_bytes);
        assert_true(find_op(&p, MNT_DEVPTS, "/dev/pts") >= 0);
        for (size_t i = 0; i < p.n_ops; i++)
                assert_true(p.ops[i].kind <= MNT_READONLY);     /* what the warm spec's decoder accepts */
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

/* os.cpu_count() is glibc's get_nprocs(), which reads
 * /sys/devices/system/cpu/online first: the plan writes it (and possible,
 * _SC_NPROCESSORS_CONF's) with the count it is given, read-only, in the
 * root before it is sealed; a warm job writes its own count in a fresh
 * tmpfs it seals, since the zygote's names the batch's. */
static void test_cpu_files(void **state)
{
        static const struct { unsigned cpus; const char *text; } cases[] = { { 1, "0\n" }, { 3, "0-2\n" },
                                                                              { 16, "0-15\n" } };
        const char *files[] = { "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible" };
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;

        (void) state;
        base_cfg(&cfg);
        for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
                struct mnt_input in = { .user = cfg_mounts(&cfg), .host = &python_set, .program_name = "main.py",
                                        .program_data = "print(1)\n", .program_len = 9, .sandbox_uid = 1000,
                                        .sandbox_gid = 1000, .cpus = cases[c].cpus };
                ssize_t ro_all, cover, seal;

                assert_int_equal(mnt_plan_build(&in, &p, &e), 0);
                ro_all = find_op(&p, MNT_READONLY_ALL, "/");
                for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
                        ssize_t i = find_op(&p, MNT_WRITE_FILE, files[f]);
                        assert_true(i >= 0 && i < ro_all);
                        assert_string_equal(p.ops[i].data, cases[c].text);
                        assert_int_equal(p.ops[i].data_len, strlen(cases[c].text));
                        assert_int_equal(p.ops[i].mode, 0444);
                        assert_false(p.ops[i].writable);
                }
                assert_true(find_op(&p, MNT_MKDIR, "/sys/devices/system/cpu") >= 0);
                mnt_plan_free(&p);

                assert_int_equal(mnt_plan_build_warm_job(&in, &p, &e), 0);
                cover = find_op(&p, MNT_TMPFS, "/sys/devices/system/cpu");
                seal = find_op(&p, MNT_READONLY, "/sys/devices/system/cpu");
                assert_true(cover >= 0 && seal > cover);
                assert_false(p.ops[cover].writable);
                for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
                        ssize_t i = find_op(&p, MNT_WRITE_FILE, files[f]);
                        assert_true(i > cover && i < seal);
                        assert_string_equal(p.ops[i].data, cases[c].text);
                }
                mnt_plan_free(&p);
        }
        /* a warm job whose batch mounts a tmpfs at /sys (or a bind inside the
         * directory) sees that mount, as cold: no cover of its own */
        {
                const char *dsts[] = { "/sys", "/sys/devices/system/cpu/online", "/sys/devices/system/cpu" };
                for (size_t k = 0; k < ARRAY_SIZE(dsts); k++) {
                        struct nsb_tmpfs t = { (char *) dsts[k], 0 };
                        struct mnt_input in = { .user = cfg_mounts(&cfg), .host = &python_set, .sandbox_uid = 1000,
                                                .sandbox_gid = 1000, .cpus = 2 };

                        in.user.tmpfs = &t;
                        in.user.n_tmpfs = 1;
                        assert_int_equal(mnt_plan_build_warm_job(&in, &p, &e), 0);
                        assert_int_equal(find_op(&p, MNT_WRITE_FILE, files[0]), -1);
                        assert_int_equal(find_op(&p, MNT_TMPFS, "/sys/devices/system/cpu") >= 0, k == 2);
                        mnt_plan_free(&p);
                }
        }
        /* no count given (a caller that does not probe): no files */
        assert_int_equal(build(&cfg, &p, &e), 0);
        assert_int_equal(find_op(&p, MNT_WRITE_FILE, files[0]), -1);
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

/* A writable tmpfs holds one inode per page of its size (each costs the
 * host's slab, uncounted under the rlimit backend: 64K of them per 64 MiB
 * mount cost ~88 MiB); the read-only root keeps one per KiB, at least
 * MNT_MIN_INODES either way. */
static void test_tmpfs_inodes(void **state)
{
        struct mnt_op op = { .kind = MNT_TMPFS, .size = 64u << 20 };

        (void) state;
        assert_int_equal(mnt_tmpfs_inodes(&op), 16384);
        op.size = 1u << 20;
        assert_int_equal(mnt_tmpfs_inodes(&op), MNT_MIN_INODES);
        op.size = 0;
        assert_int_equal(mnt_tmpfs_inodes(&op), MNT_MIN_INODES);
        op.kind = MNT_ROOT_TMPFS;
        op.size = 8u << 20;
        assert_int_equal(mnt_tmpfs_inodes(&op), 8192);
}

/* However many writable mounts a plan has, each gets its rule: no fixed
 * array that stops when full (the rules used to be copied into 88 slots). */
static void test_landlock_no_truncation(void **state)
{
        enum { N = 1000 };
        struct mnt_op *ops = calloc(N, sizeof *ops);
        struct mnt_plan p = { .ops = ops, .n_ops = N };
        struct ll_path_rule *rules = NULL;
        struct nsb_error e;
        size_t n = 0, writable = 0;

        (void) state;
        assert_non_null(ops);
        for (size_t i = 0; i < N; i++) {
                char dst[32];
                snprintf(dst, sizeof dst, "/w%zu", i);
                ops[i] = (struct mnt_op){ .kind = i % 3 ? MNT_TMPFS : MNT_ATTACH, .dst = strdup(dst),
                                          .writable = i % 5 != 0, .slot = -1 };
                writable += ops[i].writable;
        }
        assert_int_equal(mnt_plan_landlock(&p, &rules, &n, &e), 0);
        assert_int_equal(n, writable + 1);
        assert_string_equal(rules[n - 1].path, "/w999");
        free(rules);
        mnt_plan_free(&p);
}

/* A stdlib holding dist-packages: one whole bind, an empty cover over
 * dist-packages after it, a named package inside attached on top of the
 * cover (its mount point made in the cover, not in the skeleton the stdlib
 * hides), all before the root is sealed read-only; the cover is noexec,
 * 0555 and never writable (no Landlock rule). */
static void test_hidden_dir_cover_order(void **state)
{
        static struct host_entry entries[] = {
                { "/usr/bin/python3.11", HOST_FILE, NULL },
                { "/usr/lib/python3.11", HOST_DIR, NULL },
                { "/usr/lib/python3.11/dist-packages/numpy", HOST_DIR, NULL },      /* named */
                { "/usr/lib/python3.11/dist-packages/numpy/core", HOST_DIR, NULL }, /* in the named one */
                { "/usr/lib/python3.11/dist-packages/np", HOST_SYMLINK, "numpy" },
                { "/usr/lib/python3.11/json", HOST_DIR, NULL },                     /* shown by the stdlib's */
        };
        static char *hidden[] = { "/usr/lib/python3.11/dist-packages", "/opt/unmounted/site-packages" };
        const struct host_set set = { .v = entries, .n = ARRAY_SIZE(entries), .hidden = hidden, .n_hidden = 2 };
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        struct ll_path_rule *rules;
        size_t n_rules, n_attach = 0;
        ssize_t std, cover, mkpkg, pkg, link, ro;
        struct mnt_input in;

        (void) state;
        base_cfg(&cfg);
        in = (struct mnt_input){ .user = cfg_mounts(&cfg), .host = &set, .sandbox_uid = 1000, .sandbox_gid = 1000 };
        assert_int_equal(mnt_plan_build(&in, &p, &e), 0);
        std = find_op(&p, MNT_ATTACH, "/usr/lib/python3.11");
        cover = find_op(&p, MNT_TMPFS, "/usr/lib/python3.11/dist-packages");
        mkpkg = find_op(&p, MNT_MKDIR, "/usr/lib/python3.11/dist-packages/numpy");
        pkg = find_op(&p, MNT_ATTACH, "/usr/lib/python3.11/dist-packages/numpy");
        link = find_op(&p, MNT_SYMLINK, "/usr/lib/python3.11/dist-packages/np");
        ro = find_op(&p, MNT_READONLY_ALL, "/");
        assert_true(std >= 0 && cover > std && mkpkg > cover && pkg > mkpkg && link > cover && ro > pkg);
        assert_int_equal(p.ops[cover].mode, 0555);
        assert_true(p.ops[cover].attr & MOUNT_ATTR_NOEXEC);
        assert_false(p.ops[cover].writable);
        assert_true(p.ops[cover].size <= (1u << 20));
        /* the cover's root is not re-made (a chmod there would be the host's,
         * through the stdlib's bind, before the cover) */
        assert_int_equal(find_op(&p, MNT_MKDIR, "/usr/lib/python3.11/dist-packages"), -1);
        /* one mount for the named package; its inside and json come with their holders */
        for (size_t i = 0; i < p.n_ops; i++)
                n_attach += p.ops[i].kind == MNT_ATTACH && strncmp(p.ops[i].dst, "/usr/lib/python3.11", 19) == 0;
        assert_int_equal(n_attach, 2);
        assert_int_equal(find_op(&p, MNT_ATTACH, "/usr/lib/python3.11/json"), -1);
        /* a hidden directory in nothing the profile mounts: nothing to cover */
        assert_int_equal(find_op(&p, MNT_TMPFS, "/opt/unmounted/site-packages"), -1);
        assert_int_equal(mnt_plan_landlock(&p, &rules, &n_rules, &e), 0);
        for (size_t i = 0; i < n_rules; i++)
                assert_false(rules[i].writable && path_under(rules[i].path, "/usr"));
        free(rules);
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

/* The op's carried names, as a list for the assertions. */
static void assert_carried(const struct mnt_op *op, const char *want)
{
        char got[256] = "";

        for (size_t off = 0; off < op->data_len; off += strlen(op->data + off) + 1) {
                strcat(got, op->data + off);
                strcat(got, ";");
        }
        assert_string_equal(got, want);
}

/* Profile entries under /tmp (a venv made there) are carried over the
 * sandbox's fresh /tmp, cold and warm: each name directly under /tmp once;
 * nothing for a /tmp without them. */
static void test_tmp_entries_carried(void **state)
{
        static struct host_entry entries[] = {
                { "/tmp/v/bin/python3", HOST_SYMLINK, "/usr/bin/python3" },
                { "/tmp/v/pyvenv.cfg", HOST_FILE, NULL },
                { "/tmp/py", HOST_SYMLINK, "v/bin/python3" },
                { "/tmpx/lib.so", HOST_FILE, NULL },     /* not under /tmp */
                { "/usr/bin/python3", HOST_FILE, NULL },
        };
        const struct host_set set = { .v = entries, .n = ARRAY_SIZE(entries) };
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        struct mnt_input in;
        ssize_t tmp;

        (void) state;
        base_cfg(&cfg);
        in = (struct mnt_input){ .user = cfg_mounts(&cfg), .host = &set, .program_name = "main.py",
                                 .program_data = "print(1)\n", .program_len = 9, .sandbox_uid = 1000,
                                 .sandbox_gid = 1000 };
        for (int warm = 0; warm <= 1; warm++) {
                assert_int_equal((warm ? mnt_plan_build_warm_job : mnt_plan_build)(&in, &p, &e), 0);
                tmp = find_op(&p, MNT_TMPFS, "/tmp");
                assert_true(tmp >= 0);
                assert_carried(&p.ops[tmp], "v;py;");
                assert_carried(&p.ops[find_op(&p, MNT_TMPFS, "/workspace")], "");
                assert_carried(&p.ops[find_op(&p, MNT_TMPFS, "/dev/shm")], "");
                mnt_plan_free(&p);
        }
        in.host = &python_set;
        assert_int_equal(mnt_plan_build(&in, &p, &e), 0);
        assert_int_equal(p.ops[find_op(&p, MNT_TMPFS, "/tmp")].data_len, 0);
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

/* Image-root mode (host_set.root, image/image.h): each entry is opened at
 * ROOT + its path and attached at its path; symlinks are made in the
 * skeleton; nothing is opened at the sandbox path on the host; /etc's
 * entries but passwd and group come from the image, those two are nsbox's. */
static void test_image_root_mode(void **state)
{
        static struct host_entry entries[] = {
                { "/usr", HOST_DIR, NULL },
                { "/lib", HOST_SYMLINK, "usr/lib" },
                { "/etc/hostname", HOST_FILE, NULL },
                { "/etc/ssl", HOST_DIR, NULL },
        };
        char root[] = "/var/cache/nsbox/images/sha256-x/rootfs";
        const struct host_set set = { .v = entries, .n = ARRAY_SIZE(entries), .root = root };
        struct nsb_config cfg;
        struct mnt_plan p;
        struct nsb_error e;
        struct mnt_input in;
        size_t n_src = 0;

        (void) state;
        base_cfg(&cfg);
        in = (struct mnt_input){ .user = cfg_mounts(&cfg), .host = &set, .program_name = "main.py",
                                 .program_data = "print(1)\n", .program_len = 10, .sandbox_uid = 1000,
                                 .sandbox_gid = 1000 };
        assert_int_equal(mnt_plan_build(&in, &p, &e), 0);
        for (size_t i = 0; i < p.n_ops; i++) {
                const struct mnt_op *op = &p.ops[i];
                if (op->kind != MNT_OPEN_TREE || strncmp(op->src, "/dev/", 5) == 0)
                        continue;
                if (strncmp(op->src, root, strlen(root)) == 0)
                        n_src++;
                else    /* only the optional system directories come from the host */
                        assert_true(op->optional);
        }
        assert_int_equal(n_src, 3);
        assert_true(find_op(&p, MNT_ATTACH, "/usr") >= 0);
        assert_true(find_op(&p, MNT_ATTACH, "/etc/hostname") >= 0);
        assert_true(find_op(&p, MNT_SYMLINK, "/lib") >= 0);
        assert_true(find_op(&p, MNT_WRITE_FILE, "/etc/passwd") >= 0);
        assert_true(find_op(&p, MNT_READONLY_ALL, "/") > find_op(&p, MNT_ATTACH, "/usr"));
        mnt_plan_free(&p);
        cfg_free(&cfg);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order_invariants),
                cmocka_unit_test(test_workspace_bind_is_writable_and_late),
                cmocka_unit_test(test_bad_binds_rejected),
                cmocka_unit_test(test_binds_beside_the_profile),
                cmocka_unit_test(test_nested_binds),
                cmocka_unit_test(test_duplicate_and_program_name),
                cmocka_unit_test(test_workdir),
                cmocka_unit_test(test_tmpfs),
                cmocka_unit_test(test_landlock_from_plan),
                cmocka_unit_test(test_landlock_no_truncation),
                cmocka_unit_test(test_system_root),
                cmocka_unit_test(test_cpu_files),
                cmocka_unit_test(test_tmpfs_inodes),
                cmocka_unit_test(test_system_root_and_profiles),
                cmocka_unit_test(test_warm_job_private_shm_pts),
                cmocka_unit_test(test_hidden_dir_cover_order),
                cmocka_unit_test(test_tmp_entries_carried),
                cmocka_unit_test(test_image_root_mode),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
