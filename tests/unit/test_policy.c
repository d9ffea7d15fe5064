/* Unit tests for config/policy*: profile parsing (every error kind, with its
 * FILE:LINE), built-ins, the round trip of `profile show`, precedence, the
 * policy hash, and the interpreter's argv. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config/policy.h"
#include "nsbox-config.h"
#include "util/cleanup.h"

static bool fake_exists(const char *path, void *user)
{
        (void) user;
        return strncmp(path, "/nope", 5) != 0;
}

static const struct cfg_profile_opts opts = { .file = "f.ini", .exists = fake_exists };

static int parse(const char *text, struct nsb_config *cfg, struct nsb_error *e)
{
        cfg_defaults(cfg, NSB_CMD_PYTHON);
        nsb_error_clear(e);
        return cfg_profile_parse(text, strlen(text), &opts, cfg, e);
}

static char *render(const struct nsb_config *cfg)
{
        char *text = NULL;
        struct nsb_error e;
        assert_int_equal(cfg_policy_render(cfg, &text, &e), 0);
        return text;
}

static const char full[] =
        "; a course profile\n"
        "[limits]\n"
        "wall_time = 2500ms\n"
        "cpu_time = 2s\n"
        "memory = 1536K   ; inline comment\n"
        "pids = 16\n"
        "output_limit = 64K\n"
        "file_size = 1000\n"
        "tmp_size = 1G\n"
        "[sandbox]\n"
        "isolation = strict\n"
        "network = loopback\n"
        "seccomp_deny = uname\n"
        "seccomp_deny = getcpu\n"
        "[mounts]\n"
        "ro_bind = /srv/data:/data\n"
        "bind = /srv/out\n"
        "tmpfs = /scratch:8192K\n"
        "tmpfs = /cache\n"
        "[env]\n"
        "LANG = C.UTF-8\n"
        "COURSE = cs101 week 3\n"
        "[python]\n"
        "interpreter = /opt/venv/bin/python\n"
        "args = -I\n"
        "packages = /opt/venv/lib/python3.11/site-packages/numpy\n";

/* A source with ':' (the last ":/" ends it) is written so that it reads
 * back the same, also when bound at its own path (test_round_trip). */
static const char colon_binds[] = "[mounts]\nro_bind = /srv/run-12:00:/runs\nbind = /srv/a:b:/srv/a:b\n";

static void test_full_profile(void **state)
{
        struct nsb_config c;
        struct nsb_error e;

        (void) state;
        assert_int_equal(parse(full, &c, &e), 0);
        assert_int_equal(c.wall_time_ms, 2500);
        assert_int_equal(c.cpu_time_ms, 2000);
        assert_int_equal(c.memory_bytes, 1536 * 1024);
        assert_int_equal(c.pids_max, 16);
        assert_int_equal(c.output_limit_bytes, 64 * 1024);
        assert_int_equal(c.file_size_bytes, 1000);
        assert_int_equal(c.tmp_size_bytes, 1ULL << 30);
        assert_int_equal(c.network, NSB_NETWORK_LOOPBACK);
        assert_int_equal(c.n_seccomp_deny, 2);
        assert_string_equal(c.seccomp_deny[1], "getcpu");
        assert_int_equal(c.n_binds, 2);
        assert_string_equal(c.binds[0].src, "/srv/data");
        assert_string_equal(c.binds[0].dst, "/data");
        assert_true(c.binds[0].read_only);
        assert_false(c.binds[1].read_only);
        assert_int_equal(c.n_tmpfs, 2);
        assert_string_equal(c.tmpfs[0].dst, "/scratch");
        assert_int_equal(c.tmpfs[0].size_bytes, 8u << 20);
        assert_int_equal(c.tmpfs[1].size_bytes, 0);
        assert_int_equal(c.n_env_add, 2);
        assert_string_equal(c.env_add[1], "COURSE=cs101 week 3");
        assert_string_equal(c.interpreter, "/opt/venv/bin/python");
        assert_string_equal(c.interp_args, "-I");
        assert_int_equal(c.n_packages, 1);
        assert_int_equal(c.set, 0);     /* a profile is not the command line */
        cfg_free(&c);
}

static void test_errors(void **state)
{
        static const struct { const char *text, *want; } bad[] = {
                { "[limits]\nmemory = 1M\n[bogus]\n", "f.ini:3: unknown section [bogus]" },
                { "[limits]\n\n[nothing]\n[sandbox]\nnetwork = none\n", "f.ini:3: unknown section [nothing]" },
                { "[limits]\nmem = 1M\n", "f.ini:2: unknown key 'mem' in [limits]" },
                { "memory = 1M\n", "f.ini:1: key 'memory' outside any section" },
                /* what is allowed, or the closest name, or where the key belongs */
                { "[limits]\nmemroy = 1M\n", "f.ini:2: unknown key 'memroy' in [limits] (did you mean memory?)" },
                { "[limits]\nMemory = 1M\n", "f.ini:2: unknown key 'Memory' in [limits] (did you mean memory?)" },
                { "[limits]\nfoo = 1M\n", "f.ini:2: unknown key 'foo' in [limits] (expected wall_time, cpu_time, "
                                            "memory, pids, output_limit, file_size, tmp_size)" },
                { "[sandbox]\nmemory = 1M\n", "f.ini:2: key 'memory' belongs in [limits], not in [sandbox]" },
                { "memory = 1M\n", "f.ini:1: key 'memory' outside any section (it belongs in [limits])" },
                { "foo = 1\n", "f.ini:1: key 'foo' outside any section (keys follow a [section] line: [limits], "
                                "[sandbox], [mounts], [env] or [python])" },
                { "[limit]\nmemory = 1M\n", "f.ini:1: unknown section [limit] (did you mean [limits]?)" },
                { "[LIMITS]\nmemory = 1M\n", "f.ini:1: unknown section [LIMITS] (did you mean [limits]?)" },
                { "[bogus]\n", "f.ini:1: unknown section [bogus] (expected [limits], [sandbox], [mounts], [env] or "
                                "[python])" },
                { "[limits]\nmemory = 12Q\n", "f.ini:2: [limits] memory: malformed size '12Q'" },
                { "[limits]\nwall_time = soon\n", "f.ini:2: [limits] wall_time: malformed duration 'soon'" },
                { "[limits]\ncpu_time = 0s\n", "f.ini:2: [limits] cpu_time: duration '0s' must be positive" },
                { "[limits]\npids = 0\n", "f.ini:2: [limits] pids: number '0' is out of range" },
                { "[limits]\nmemory = 1M\nmemory = 2M\n", "f.ini:3: [limits] memory is given twice" },
                { "[mounts]\nro_bind = data:/data\n", "f.ini:2: [mounts] ro_bind: source 'data' is not an absolute path" },
                { "[mounts]\n\nbind = /nope/x:/x\n", "f.ini:3: [mounts] bind: source '/nope/x' does not exist" },
                { "[mounts]\nro_bind = /srv:/tmp/x\n", "f.ini:2: [mounts] ro_bind: destination '/tmp/x' is a path the sandbox owns" },
                { "[mounts]\nro_bind = /srv:/proc\n", "f.ini:2: [mounts] ro_bind: destination '/proc' is a path the sandbox owns" },
                { "[mounts]\nro_bind = /srv:data\n", "f.ini:2: [mounts] ro_bind: destination 'data' must be absolute" },
                { "[mounts]\nro_bind = /srv:/a/../tmp\n", "f.ini:2: [mounts] ro_bind: destination '/a/../tmp' must be absolute, without '..'" },
                { "[mounts]\nro_bind = /a:/data\nbind = /b:/data\n", "f.ini:3: [mounts] bind: destination '/data' is mounted twice" },
                { "[mounts]\nbind = /b:/data\ntmpfs = /data\n", "f.ini:3: [mounts] tmpfs: destination '/data' is mounted twice" },
                /* other spellings of a path the sandbox owns, of the root, of a duplicate */
                { "[mounts]\nro_bind = /srv://tmp\n", "f.ini:2: [mounts] ro_bind: destination '//tmp' is a path the sandbox owns" },
                { "[mounts]\nro_bind = /srv:/./workspace/\n", "f.ini:2: [mounts] ro_bind: destination '/./workspace/' is a path the sandbox owns" },
                { "[mounts]\nbind = /srv://\n", "f.ini:2: [mounts] bind: destination '//' is a path the sandbox owns" },
                { "[mounts]\ntmpfs = /.\n", "f.ini:2: [mounts] tmpfs: destination '/.' is a path the sandbox owns" },
                { "[mounts]\nro_bind = /a:/data\nro_bind = /b://data/\n", "f.ini:3: [mounts] ro_bind: destination '//data/' is mounted twice" },
                { "[python]\npackages = //tmp/pkg\n", "f.ini:2: [python] packages: '//tmp/pkg' lies under a path the sandbox owns" },
                { "[python]\npackages = /opt/a\npackages = /opt/a/\n", "f.ini:3: [python] packages: '/opt/a/' is named twice" },
                /* what reduced isolation cannot provide, in either order */
                { "[sandbox]\nisolation = reduced\n[mounts]\ntmpfs = /data\n",
                  "f.ini:4: [mounts] tmpfs: conflicts with isolation = reduced: --tmpfs /data needs a mount namespace" },
                { "[sandbox]\nnetwork = loopback\nisolation = reduced\n",
                  "f.ini:3: [sandbox] isolation: reduced conflicts with an earlier key: --network loopback" },
                { "[mounts]\nro_bind = /srv:/data\n[sandbox]\nisolation = reduced\n",
                  "f.ini:4: [sandbox] isolation: reduced conflicts with an earlier key: --ro-bind /srv:/data" },
                /* conflicting mounts: a tmpfs inside or above a bind or another tmpfs */
                { "[mounts]\ntmpfs = /data\nro_bind = /a:/data/x\n", "f.ini:3: [mounts] ro_bind: destination '/data/x' overlaps the tmpfs at '/data'" },
                { "[mounts]\nro_bind = /a:/data/x\ntmpfs = /data\n", "f.ini:3: [mounts] tmpfs: destination '/data' overlaps the bind at '/data/x'" },
                { "[mounts]\ntmpfs = /s\ntmpfs = /s/t:1M\n", "f.ini:3: [mounts] tmpfs: destination '/s/t' overlaps the tmpfs at '/s'" },
                { "[mounts]\ntmpfs = /workspace/x\n", "f.ini:2: [mounts] tmpfs: destination '/workspace/x' is a path the sandbox owns" },
                { "[mounts]\ntmpfs = /s:0\n", "f.ini:2: [mounts] tmpfs: '/s:0': size must be positive" },
                { "[mounts]\ntmpfs = /s:lots\n", "f.ini:2: [mounts] tmpfs: '/s:lots': malformed size" },
                { "[mounts]\ntmpfs = scratch\n", "f.ini:2: [mounts] tmpfs:" },
                { "[sandbox]\nnetwork = internet\n", "f.ini:2: [sandbox] network: 'internet': expected none or loopback" },
                { "[sandbox]\nisolation = loose\n", "f.ini:2: [sandbox] isolation:" },
                { "[sandbox]\nseccomp_deny = Not-A-Name\n", "f.ini:2: [sandbox] seccomp_deny:" },
#if NSBOX_HAVE_SECCOMP
                { "[sandbox]\nseccomp_deny = no_such_call\n", "f.ini:2: [sandbox] seccomp_deny: 'no_such_call': not a "
                                                               "system call of this architecture" },
#endif
                { "[env]\n1BAD = x\n", "f.ini:2: [env] 1BAD:" },
                { "[env]\nA = 1\nA = 2\n", "f.ini:3: [env] A is given twice" },
                { "[python]\ninterpreter = python3\n", "f.ini:2: [python] interpreter: source 'python3' is not an absolute path" },
                { "[python]\ninterpreter = /nope/python3\n", "f.ini:2: [python] interpreter: source '/nope/python3' does not exist" },
                { "[python]\npackages = numpy\n", "f.ini:2: [python] packages:" },
                { "[python]\npackages = /tmp/pkg\n", "f.ini:2: [python] packages: '/tmp/pkg' lies under a path the sandbox owns" },
                { "[python]\npackages = /opt/a\npackages = /opt/a\n", "f.ini:3: [python] packages: '/opt/a' is named twice" },
                { "[limits]\nthis line has no equals sign\n", "f.ini:2: syntax error" },
                /* the flags' ranges: zero and absurd limits, with what is allowed */
                { "[limits]\nmemory = 1k\n", "f.ini:2: [limits] memory: '1k' is out of range: allowed 1M to 1T" },
                { "[limits]\noutput_limit = 0\n", "f.ini:2: [limits] output_limit: '0' is out of range: allowed 1 to 1G" },
                { "[limits]\nwall_time = 2d\n", "f.ini:2: [limits] wall_time: malformed duration" },
                { "[limits]\nwall_time = 48h\n", "f.ini:2: [limits] wall_time: '48h' is out of range: allowed 1ms to 24h" },
                { "[env]\nA =;x\n", "f.ini:2: [env] A: a value may not begin with ';'" },
                { "[limits\nmemory = 1M\n", "f.ini:1: syntax error" },
                { "[limits]\nmemory = 1M\n[bogus]\n[limits\n", "f.ini:3: unknown section [bogus]" },
                { "[limits]\nmemory = 1M\n[limits\n[bogus]\n", "f.ini:3: syntax error" },
        };
        struct nsb_config c;
        struct nsb_error e;

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                int r = parse(bad[i].text, &c, &e);
                if (r >= 0 || strncmp(e.msg, bad[i].want, strlen(bad[i].want)) != 0)
                        fail_msg("case %zu: got %d '%s', want '%s'", i, r, e.msg, bad[i].want);
                assert_int_equal(e.stage, NSB_STAGE_CONFIG);
                cfg_free(&c);
        }
}

static void test_nul_and_long_lines(void **state)
{
        static const char with_nul[] = "[limits]\nmemory = 1M\0junk\n";
        char longline[400];
        struct nsb_config c;
        struct nsb_error e;

        (void) state;
        cfg_defaults(&c, NSB_CMD_RUN);
        assert_true(cfg_profile_parse(with_nul, sizeof with_nul - 1, &opts, &c, &e) < 0);
        assert_non_null(strstr(e.msg, "f.ini:2: NUL byte"));
        cfg_free(&c);

        snprintf(longline, sizeof longline, "[env]\nX = %0300d\nY = 1\n", 7);
        assert_true(parse(longline, &c, &e) < 0);
        assert_non_null(strstr(e.msg, "f.ini:2: line longer than"));
        cfg_free(&c);
}

/* show -> parse -> show is the identity, for built-ins and a full profile. */
static void test_round_trip(void **state)
{
        const char *inputs[] = { cfg_profile_builtin("python"), cfg_profile_builtin("minimal"), full, colon_binds };

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(inputs); i++) {
                struct nsb_config a, b;
                struct nsb_error e;
                char *ta, *tb;

                assert_non_null(inputs[i]);
                assert_int_equal(parse(inputs[i], &a, &e), 0);
                ta = render(&a);
                if (parse(ta, &b, &e) < 0)
                        fail_msg("re-parse of %zu failed: %s\n%s", i, e.msg, ta);
                tb = render(&b);
                assert_string_equal(ta, tb);
                free(ta);
                free(tb);
                cfg_free(&a);
                cfg_free(&b);
        }
}

static void test_bind_source_with_colon_parses(void **state)
{
        struct nsb_config a;
        struct nsb_error e;
        char *ta;

        (void) state;
        assert_int_equal(parse(colon_binds, &a, &e), 0);
        assert_int_equal(a.n_binds, 2);
        assert_string_equal(a.binds[0].src, "/srv/run-12:00");
        assert_string_equal(a.binds[0].dst, "/runs");
        assert_string_equal(a.binds[1].src, "/srv/a:b");
        assert_string_equal(a.binds[1].dst, "/srv/a:b");
        ta = render(&a);
        assert_non_null(strstr(ta, "ro_bind = /srv/run-12:00:/runs\nbind = /srv/a:b:/srv/a:b\n"));
        free(ta);
        cfg_free(&a);
}

/* The canonical text: largest exact unit, fixed order. */
static void test_render_canonical(void **state)
{
        struct nsb_config c;
        struct nsb_error e;
        char *t;

        (void) state;
        assert_int_equal(parse(full, &c, &e), 0);
        t = render(&c);
        assert_non_null(strstr(t, "wall_time = 2500ms\ncpu_time = 2s\nmemory = 1536K\npids = 16\n"
                                  "output_limit = 64K\nfile_size = 1000\ntmp_size = 1G\n"));
        assert_non_null(strstr(t, "ro_bind = /srv/data:/data\nbind = /srv/out\ntmpfs = /scratch:8M\ntmpfs = /cache\n"));
        assert_non_null(strstr(t, "[env]\nLANG = C.UTF-8\nCOURSE = cs101 week 3\n"));
        assert_non_null(strstr(t, "seccomp_deny = uname\nseccomp_deny = getcpu\n"));
        free(t);
        cfg_free(&c);
}

/* The built-ins say exactly cfg_defaults(); python adds the interpreter. */
static void test_builtins_match_defaults(void **state)
{
        struct nsb_config d, p;
        struct nsb_error e;
        char *td, *tp;

        (void) state;
        assert_null(cfg_profile_builtin("nope"));
        assert_int_equal(parse(cfg_profile_builtin("minimal"), &p, &e), 0);
        cfg_defaults(&d, NSB_CMD_RUN);
        td = render(&d);
        tp = render(&p);
        assert_string_equal(td, tp);
        free(td);
        free(tp);
        cfg_free(&p);
        assert_int_equal(parse(cfg_profile_builtin("python"), &p, &e), 0);
        assert_string_equal(p.interpreter, "/usr/bin/python3");
        assert_string_equal(p.interp_args, "-I -B");
        assert_int_equal(p.memory_bytes, d.memory_bytes);
        cfg_free(&p);
        assert_string_equal(cfg_profile_default(NSB_CMD_RUN), "minimal");
        assert_string_equal(cfg_profile_default(NSB_CMD_PYTHON), "python");
        assert_string_equal(cfg_profile_default(NSB_CMD_JUDGE), "python");
        assert_string_equal(cfg_profile_default(NSB_CMD_TEST), "python");
}

/* defaults < profile < explicit flag, even a flag equal to the default. */
static void test_precedence(void **state)
{
        char *argv[] = { "nsbox", "python", "--memory", "256M", "--ro-bind", "/srv/cli:/cli",
                         "--env", "LANG=en_US.UTF-8", "--interpreter", "/usr/bin/python3", "x.py", NULL };
        struct nsb_config cli, prof;
        struct nsb_error e;

        (void) state;
        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(11, argv, &cli, &e), 0);
        assert_int_equal(cli.set, CFG_F_MEMORY | CFG_F_INTERPRETER);
        assert_int_equal(parse(full, &prof, &e), 0);
        assert_int_equal(cfg_profile_overlay(&cli, &prof, &e), 0);
        cfg_free(&prof);
        assert_int_equal(cli.memory_bytes, 256ULL << 20);      /* flag (= default) over profile */
        assert_int_equal(cli.wall_time_ms, 2500);               /* profile over default */
        assert_int_equal(cli.pids_max, 16);
        assert_int_equal(cli.network, NSB_NETWORK_LOOPBACK);
        assert_string_equal(cli.interpreter, "/usr/bin/python3");
        assert_string_equal(cli.interp_args, "-I");
        assert_int_equal(cli.n_binds, 3);                        /* profile's, then the flag's */
        assert_string_equal(cli.binds[0].dst, "/data");
        assert_string_equal(cli.binds[2].dst, "/cli");
        assert_int_equal(cli.n_env_add, 2);                      /* --env LANG replaced the profile's */
        assert_string_equal(cli.env_add[0], "COURSE=cs101 week 3");
        assert_string_equal(cli.env_add[1], "LANG=en_US.UTF-8");
        cfg_free(&cli);
}

static void test_policy_hash(void **state)
{
        struct nsb_config a, b;
        struct nsb_error e;
        char ha[65], hb[65];

        (void) state;
        assert_int_equal(parse("[limits]\nmemory = 1024K\n", &a, &e), 0);
        assert_int_equal(parse("[limits]\nmemory = 1M\n", &b, &e), 0);
        cfg_policy_sha256(&a, ha);
        cfg_policy_sha256(&b, hb);
        assert_int_equal(strlen(ha), 64);
        assert_string_equal(ha, hb);                            /* one policy, two spellings */
        b.pids_max = 65;
        cfg_policy_sha256(&b, hb);
        assert_string_not_equal(ha, hb);                        /* any limit changes it */
        cfg_free(&a);
        cfg_free(&b);
}

/* [sandbox] cgroup_parent: parsed as --cgroup-parent is, the flag wins, and
 * it is placement, not policy: the hash does not change with it. */
static void test_cgroup_parent(void **state)
{
        char *argv[] = { "nsbox", "run", "--cgroup-parent", "/sys/fs/cgroup/cli", "--", "/bin/true", NULL };
        struct nsb_config cli, prof, plain;
        struct nsb_error e;
        char h1[65], h2[65];

        (void) state;
        assert_int_equal(parse("[sandbox]\ncgroup_parent = /sys/fs/cgroup/box.slice/box\n", &prof, &e), 0);
        assert_string_equal(prof.cgroup_parent, "/sys/fs/cgroup/box.slice/box");
        assert_int_equal(parse("[sandbox]\nnetwork = none\n", &plain, &e), 0);
        cfg_policy_sha256(&prof, h1);
        cfg_policy_sha256(&plain, h2);
        assert_string_equal(h1, h2);
        cfg_free(&plain);

        assert_int_equal(parse("[sandbox]\ncgroup_parent = box\n", &plain, &e), -EINVAL);
        assert_non_null(strstr(e.msg, "f.ini:2: [sandbox] cgroup_parent:"));
        assert_non_null(strstr(e.msg, "expected the absolute path of a cgroup v2 directory"));
        cfg_free(&plain);

        nsb_error_clear(&e);
        assert_int_equal(cfg_parse_cli(6, argv, &cli, &e), 0);
        assert_int_equal(cli.set, CFG_F_CGROUP_PARENT);
        assert_int_equal(cfg_profile_overlay(&cli, &prof, &e), 0);
        assert_string_equal(cli.cgroup_parent, "/sys/fs/cgroup/cli");
        cfg_free(&cli);
        cfg_free(&prof);
}

/* What a line cannot hold as it is (a control character, a blank at an end,
 * a ';' that would start a comment, a literal "\xHH") is written as \xHH and
 * read back as that byte: the value survives show -> file -> parse, and two
 * different values never share a hash. */
static void test_value_escapes(void **state)
{
        static const char *const values[] = {
                "A=tab\there", "A=lit\\x09eral", "A= lead and trail ", "A=x ;y", "A=;x", "A=\\x", "A=C:\\p\\x4",
                "A=\x7f\x01nl\nend",
                /* #27: C1, bidi controls, a line separator, a byte not UTF-8 */
                "A=csi\xc2\x9b" "2K nel\xc2\x85 rlo\xe2\x80\xae lsep\xe2\x80\xa8 bad\xff caf\xc3\xa9",
        };
        char hashes[ARRAY_SIZE(values)][65];

        (void) state;
        for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
                struct nsb_config a, b;
                struct nsb_error e;
                char *text;

                cfg_defaults(&a, NSB_CMD_RUN);
                nsb_error_clear(&e);
                assert_int_equal(cfg_set_option(&a, "env", values[i], &e), 0);
                text = render(&a);
                if (parse(text, &b, &e) < 0)
                        fail_msg("value %zu: rendered text refused: %s\n%s", i, e.msg, text);
                assert_int_equal(b.n_env_add, 1);
                if (strcmp(b.env_add[0], values[i]) != 0)
                        fail_msg("value %zu: '%s' came back as '%s'\n%s", i, values[i], b.env_add[0], text);
                /* nothing util/textsafe.h calls unsafe is written raw (the
                 * newline ending each line aside); ordinary UTF-8 is */
                assert_null(strstr(text, "\x7f"));
                assert_null(strstr(text, "\xc2\x9b"));
                assert_null(strstr(text, "\xe2\x80\xae"));
                assert_null(strstr(text, "\xff"));
                if (strstr(values[i], "caf"))
                        assert_non_null(strstr(text, "caf\xc3\xa9"));
                cfg_policy_sha256(&a, hashes[i]);
                for (size_t k = 0; k < i; k++)
                        assert_string_not_equal(hashes[k], hashes[i]);
                free(text);
                cfg_free(&a);
                cfg_free(&b);
        }
}

/* In a profile, \xHH is the byte; \x00 is refused with its line. */
static void test_escapes_in_a_file(void **state)
{
        struct nsb_config c;
        struct nsb_error e;

        (void) state;
        assert_int_equal(parse("[env]\nA = tab\\x09here\nB = tab\there\nC = x\\x5cx41\n", &c, &e), 0);
        assert_string_equal(c.env_add[0], "A=tab\there");
        assert_string_equal(c.env_add[1], "B=tab\there");
        assert_string_equal(c.env_add[2], "C=x\\x41");
        cfg_free(&c);
        assert_true(parse("[env]\nA = 1\nB = a\\x00b\n", &c, &e) < 0);
        assert_non_null(strstr(e.msg, "f.ini:3: [env] B: \\x00"));
        cfg_free(&c);
}

static void test_python_argv(void **state)
{
        char *tail[] = { "/program/main.py", "arg" };
        struct nsb_config c;
        char **v;
        size_t n;

        (void) state;
        cfg_defaults(&c, NSB_CMD_PYTHON);
        assert_int_equal(cfg_python_argv(&c, tail, 2, &v, &n), 0);
        assert_int_equal(n, 5);
        assert_string_equal(v[0], "python3");
        assert_string_equal(v[1], "-I");
        assert_string_equal(v[2], "-B");
        assert_string_equal(v[3], "/program/main.py");
        assert_null(v[5]);
        free(v);
        c.interpreter = "/opt/venv/bin/python";
        c.interp_args = "  -X  utf8 ";
        assert_int_equal(cfg_python_argv(&c, tail, 1, &v, &n), 0);
        assert_int_equal(n, 4);
        assert_string_equal(v[0], "/opt/venv/bin/python");
        assert_string_equal(v[1], "-X");
        assert_string_equal(v[2], "utf8");
        free(v);
        c.interp_args = "";
        assert_int_equal(cfg_python_argv(&c, tail, 1, &v, &n), 0);
        assert_int_equal(n, 2);
        free(v);
        /* a script in the workspace: -I without its -P, whatever else is given */
        c.script_dir_first = true;
        c.interp_args = "-X dev -I -B -IB";
        assert_int_equal(cfg_python_argv(&c, tail, 2, &v, &n), 0);
        assert_int_equal(n, 9);
        assert_string_equal(v[3], "-E");
        assert_string_equal(v[4], "-s");
        assert_string_equal(v[5], "-B");
        assert_string_equal(v[6], "-IB");
        assert_string_equal(v[7], "/program/main.py");
        assert_null(v[9]);
        free(v);
}

/* docs/profiles.md names every key the renderer writes. */
static void test_docs_list_every_key(void **state)
{
        char path[4096], *docs = NULL, *t;
        struct nsb_config c;
        struct nsb_error e;
        size_t len = 0;
        FILE *f;

        (void) state;
        snprintf(path, sizeof path, "%s/docs/profiles.md", NSBOX_SOURCE_ROOT);
        f = fopen(path, "r");
        if (!f)
                fail_msg("cannot open %s", path);
        docs = malloc(1 << 20);
        len = fread(docs, 1, (1 << 20) - 1, f);
        docs[len] = '\0';
        fclose(f);
        assert_int_equal(parse(full, &c, &e), 0);
        t = render(&c);
        for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
                char key[64], want[80];
                if (line[0] == '[') {
                        if (!strstr(docs, line))
                                fail_msg("docs/profiles.md does not mention section %s", line);
                        continue;
                }
                if (sscanf(line, "%63[a-z_] =", key) != 1 || strcmp(key, "LANG") == 0)
                        continue;
                snprintf(want, sizeof want, "`%s`", key);
                if (!strstr(docs, want))
                        fail_msg("docs/profiles.md does not document key %s", want);
        }
        free(t);
        free(docs);
        cfg_free(&c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_profile),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_nul_and_long_lines),
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_bind_source_with_colon_parses),
                cmocka_unit_test(test_render_canonical),
                cmocka_unit_test(test_value_escapes),
                cmocka_unit_test(test_escapes_in_a_file),
                cmocka_unit_test(test_builtins_match_defaults),
                cmocka_unit_test(test_precedence),
                cmocka_unit_test(test_policy_hash),
                cmocka_unit_test(test_cgroup_parent),
                cmocka_unit_test(test_python_argv),
                cmocka_unit_test(test_docs_list_every_key),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
