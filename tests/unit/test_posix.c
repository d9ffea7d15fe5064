/* Unit tests for the posix platform's pure code: what it refuses (strict
 * first), its rlimit plan, and doctor's verdict. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <sys/resource.h>

#include "platform/posix/posix.h"

static void defaults(struct nsb_config *c)
{
        memset(c, 0, sizeof *c);
        c->wall_time_ms = 10000;
        c->memory_bytes = 256u << 20;
        c->pids_max = 64;
        c->output_limit_bytes = 1u << 20;
        c->file_size_bytes = 16u << 20;
}

static void test_check(void **state)
{
        struct nsb_config c;
        struct nsb_error e;
        struct nsb_bind ro = { "/srv", "/srv", true }, rw = { "/srv", "/srv", false };
        char *pkg = "/usr/lib/python3/dist-packages/x", *deny = "ptrace";

        (void) state;
        defaults(&c);
        nsb_error_clear(&e);
        /* strict, the default, fails closed and says what and how */
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), -ENOTSUP);
        assert_int_equal(e.stage, NSB_STAGE_CLONE);
        assert_non_null(strstr(e.msg, "posix"));
        assert_non_null(strstr(e.msg, "Plan9"));
        assert_non_null(strstr(e.msg, "namespaces"));
        assert_non_null(strstr(e.msg, "seccomp"));
        assert_non_null(strstr(e.msg, "Landlock"));
        assert_non_null(strstr(e.msg, "--isolation reduced"));

        c.isolation = NSB_ISOLATION_REDUCED;
        nsb_error_clear(&e);
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), 0);
        /* a writable bind only says where the program may write anyway */
        c.binds = &rw;
        c.n_binds = 1;
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), 0);
        c.binds = &ro;
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), -EINVAL);
        assert_non_null(strstr(e.msg, "--ro-bind /srv cannot be enforced"));
        c.n_binds = 0;
        c.packages = &pkg;
        c.n_packages = 1;
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), -EINVAL);
        assert_non_null(strstr(e.msg, "read-only"));
        c.n_packages = 0;
        c.seccomp_deny = &deny;
        c.n_seccomp_deny = 1;
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), -EINVAL);
        assert_non_null(strstr(e.msg, "no seccomp"));
        c.n_seccomp_deny = 0;
        c.cgroup_parent = (char *) "/sys/fs/cgroup/course";
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), -EINVAL);
        assert_non_null(strstr(e.msg, "no cgroups"));
        c.cgroup_parent = NULL;
        /* what reduced refuses everywhere */
        c.network = NSB_NETWORK_LOOPBACK;
        assert_int_equal(px_check(&c, NULL, "Plan9", &e), -EINVAL);
        c.network = NSB_NETWORK_NONE;
        assert_int_equal(px_check(&c, "/runner", "Plan9", &e), -EINVAL);
        assert_non_null(strstr(e.msg, "strict isolation"));
}

static const struct px_rlimit *find(const struct px_rlimit_plan *p, int resource)
{
        for (size_t i = 0; i < p->n; i++)
                if (p->v[i].resource == resource)
                        return &p->v[i];
        return NULL;
}

static void test_rlimits(void **state)
{
        struct nsb_config c;
        struct px_rlimit_plan p;
        const struct px_rlimit *x;

        (void) state;
        defaults(&c);
        c.cpu_time_ms = 1500;
        px_rlimits_plan(&c, 10, &p);
        assert_int_equal(find(&p, RLIMIT_CPU)->value, 2);   /* rounded up */
        assert_int_equal(find(&p, RLIMIT_CPU)->hard, 3);    /* SIGKILL a second after SIGXCPU */
        assert_int_equal(find(&p, RLIMIT_FSIZE)->hard, 16u << 20);
        assert_int_equal(find(&p, RLIMIT_CPU)->prot, PROT_CPU_TIME);
        assert_int_equal(find(&p, RLIMIT_FSIZE)->value, 16u << 20);
        assert_int_equal(find(&p, RLIMIT_FSIZE)->prot, PROT_FILE_SIZE);
        assert_int_equal(find(&p, RLIMIT_CORE)->value, 0);
        x = find(&p, RLIMIT_NOFILE);
        assert_true(x->lower_only);
        assert_int_equal(x->value, PX_NOFILE_MAX);
        assert_int_equal(find(&p, RLIMIT_AS)->value, 256u << 20);
        assert_int_equal(find(&p, RLIMIT_AS)->prot, PROT_MEMORY);
#ifdef RLIMIT_NPROC
        /* the 10 tasks the user already has come on top of --pids */
        assert_int_equal(find(&p, RLIMIT_NPROC)->value, 64 + 10);
        assert_int_equal(find(&p, RLIMIT_NPROC)->prot, PROT_PIDS);
        /* uncountable: no limit, so pids stays unavailable */
        px_rlimits_plan(&c, -1, &p);
        assert_null(find(&p, RLIMIT_NPROC));
#endif
        /* cpu_time unset: the wall time */
        c.cpu_time_ms = 0;
        c.wall_time_ms = 2001;
        c.memory_bytes = 0;
        px_rlimits_plan(&c, 0, &p);
        assert_int_equal(find(&p, RLIMIT_CPU)->value, 3);
        assert_null(find(&p, RLIMIT_AS));
}

static const struct doc_check *check(const struct doc_report *r, const char *name)
{
        for (size_t i = 0; i < r->n_checks; i++)
                if (strcmp(r->checks[i].name, name) == 0)
                        return &r->checks[i];
        return NULL;
}

static void test_doctor(void **state)
{
        struct px_doc_facts f;
        struct doc_report r;

        (void) state;
        memset(&f, 0, sizeof f);
        strcpy(f.sysname, "Plan9");
        strcpy(f.release, "4");
        f.nproc_defined = f.tasks_countable = true;
        f.user_tasks = 3;
        strcpy(f.interpreter, "/usr/bin/python3");
        f.interpreter_ok = true;

        px_doctor_plan(&f, NSB_ISOLATION_STRICT, &r);
        assert_false(r.ready);
        assert_int_equal(check(&r, "platform")->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(check(&r, "platform")->detail, "Plan9"));
        assert_non_null(strstr(check(&r, "platform")->fix, "--isolation reduced"));

        px_doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        assert_true(r.ready);
        assert_int_equal(check(&r, "platform")->status, DOC_DEGRADED);
        assert_int_equal(check(&r, "rlimits")->status, DOC_OK);

        f.tasks_countable = false;
        px_doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        assert_true(r.ready);
        assert_int_equal(check(&r, "rlimits")->status, DOC_DEGRADED);
        assert_non_null(strstr(check(&r, "rlimits")->detail, "not bounded"));

        f.interpreter_ok = false;
        strcpy(f.interpreter_error, "No such file or directory");
        px_doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        assert_false(r.ready);
        assert_int_equal(check(&r, "interpreter")->status, DOC_UNAVAILABLE);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_check),
                cmocka_unit_test(test_rlimits),
                cmocka_unit_test(test_doctor),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
