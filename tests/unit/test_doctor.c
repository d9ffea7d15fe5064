/* Unit tests for doctor/: the checks and the verdict from fabricated facts,
 * and the renderings. Pure code only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>

#include "doctor/doctor.h"

/* free() the text when the test ends */
#define AUTOFREE_TEXT __attribute__((cleanup(free_text)))
static void free_text(char **p)
{
        free(*p);
}

/* A host where everything works: what a good CI runner looks like. */
static void good_host(struct doc_facts *f)
{
        memset(f, 0, sizeof *f);
        strcpy(f->userns_clone, "1");
        strcpy(f->max_user_ns, "63414");
        strcpy(f->aa.restrict_sysctl, "0");
        strcpy(f->aa.bindir, "/usr/local/bin");
        f->userns_probe = DOC_PROBE_OK;
        f->cg_detected = true;
        f->cg_backend = CG_BACKEND_V2;
        f->cg_v2_mounted = true;
        strcpy(f->cg_reason, "cgroup v2: usable");
        f->seccomp_mode = 0;
        strcpy(f->seccomp_actions, "kill_process kill_thread trap errno user_notif trace log allow");
        f->nnp = 0;
        f->landlock_abi = 4;
        strcpy(f->interpreter, "/usr/bin/python3");
        f->interpreter_default = true;
        f->interpreter_ok = true;
        strcpy(f->interpreter_real, "/usr/bin/python3.11");
}

/* The probe failed at @step with @err; @created: after its user namespace
 * was made (the namespace then had no capabilities). */
static void probe_failed(struct doc_facts *f, const char *step, int err, bool created)
{
        f->userns_probe = DOC_PROBE_FAILED;
        f->userns_created = created;
        f->userns_errno = err;
        snprintf(f->userns_step, sizeof f->userns_step, "%s", step);
}

static const struct doc_check *find(const struct doc_report *r, const char *name)
{
        for (size_t i = 0; i < r->n_checks; i++)
                if (strcmp(r->checks[i].name, name) == 0)
                        return &r->checks[i];
        fail_msg("no check %s", name);
        return NULL;
}

static void plan(const struct doc_facts *f, struct doc_report *r)
{
        doctor_plan(f, NSB_ISOLATION_STRICT, r);
}

static void test_good_host_ready(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        static const char *const names[] = { "user_ns", "cgroup", "seccomp", "no_new_privs", "landlock", "interpreter" };

        (void) state;
        good_host(&f);
        plan(&f, &r);
        assert_true(r.ready);
        assert_int_equal(r.n_checks, 6);
        for (size_t i = 0; i < 6; i++) {
                assert_string_equal(r.checks[i].name, names[i]);
                assert_int_equal(r.checks[i].status, DOC_OK);
                assert_string_equal(r.checks[i].fix, "");
                assert_true(r.checks[i].detail[0] != '\0');
        }
        assert_non_null(strstr(find(&r, "landlock")->detail, "ABI 4"));
        assert_non_null(strstr(find(&r, "interpreter")->detail, "/usr/bin/python3.11"));
}

static void test_userns_clone_sysctl(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;

        (void) state;
        good_host(&f);
        f.userns_probe = DOC_PROBE_FAILED;
        f.userns_errno = EPERM;
        strcpy(f.userns_step, "unshare(CLONE_NEWUSER)");
        strcpy(f.userns_clone, "0");
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(c->fix, "sudo sysctl -w kernel.unprivileged_userns_clone=1"));
        assert_null(strstr(c->fix, "max_user_namespaces"));
        assert_null(strstr(c->fix, "apparmor"));
        assert_non_null(strstr(c->detail, "kernel.unprivileged_userns_clone=0"));
        assert_false(r.ready);

        /* Reduced isolation needs no namespace: still told, with the fix, but ready. */
        doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_DEGRADED);
        assert_non_null(strstr(c->detail, "reduced isolation runs without namespaces"));
        assert_non_null(strstr(c->fix, "sudo sysctl -w kernel.unprivileged_userns_clone=1"));
        assert_true(r.ready);
}

static void test_max_user_namespaces_sysctl(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;

        (void) state;
        good_host(&f);
        f.userns_probe = DOC_PROBE_FAILED;
        f.userns_errno = ENOSPC;
        strcpy(f.userns_step, "unshare(CLONE_NEWUSER)");
        strcpy(f.max_user_ns, "0");
        f.root = true;  /* the limit applies to root too */
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(c->fix, "sudo sysctl -w user.max_user_namespaces=15000"));
        assert_null(strstr(c->fix, "unprivileged_userns_clone"));
        assert_false(r.ready);
}

/* Ubuntu 23.10+: the namespace is made, without capabilities. One line
 * says so; the fix loads the profile nsbox ships, never turns AppArmor off. */
static void test_apparmor_restriction(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;
        AUTOFREE_TEXT char *text = NULL;

        (void) state;
        good_host(&f);
        probe_failed(&f, "mount", EPERM, true);
        strcpy(f.aa.restrict_sysctl, "1");
        strcpy(f.aa.self_exe, "/usr/local/bin/nsbox");
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_false(r.ready);
        assert_ptr_equal(strstr(c->detail, "AppArmor restricts unprivileged user namespaces on this host "
                                           "(kernel.apparmor_restrict_unprivileged_userns=1)"), c->detail);
        assert_non_null(strstr(c->detail, "without capabilities (probe: mount failed: Operation not permitted)"));
        assert_null(strchr(c->detail, '\n'));
        /* installed by meson install, profile missing: install it again, load it */
        assert_string_equal(c->fix, "run sudo meson install again from nsbox's build directory (it installs "
                                    "/etc/apparmor.d/nsbox), then sudo apparmor_parser -r /etc/apparmor.d/nsbox");
        /* a copied binary: the installed one, with its profile */
        strcpy(f.aa.self_exe, "/opt/x/nsbox");
        plan(&f, &r);
        assert_string_equal(find(&r, "user_ns")->fix,
                            "install nsbox with its AppArmor profile (the nsbox package, or sudo meson install from "
                            "its build directory, which installs /etc/apparmor.d/nsbox naming /usr/local/bin/nsbox), "
                            "then sudo apparmor_parser -r /etc/apparmor.d/nsbox, and run that nsbox");
        /* never "turn the restriction off" */
        assert_null(strstr(find(&r, "user_ns")->fix, "sysctl"));
        assert_null(strstr(find(&r, "user_ns")->fix, "disable"));
        assert_null(strstr(find(&r, "user_ns")->fix, "=0"));

        /* the profile is installed and names this binary: load it */
        f.aa.profile_present = f.aa.profile_names_self = true;
        plan(&f, &r);
        assert_string_equal(find(&r, "user_ns")->fix, "sudo apparmor_parser -r /etc/apparmor.d/nsbox");

        /* run from a build directory: install it, then run the installed one */
        f.aa.profile_present = f.aa.profile_names_self = false;
        strcpy(f.aa.self_exe, "/home/u/nsbox/build/nsbox");
        strcpy(f.aa.build_dir, "/home/u/nsbox/build");
        plan(&f, &r);
        assert_string_equal(find(&r, "user_ns")->fix,
                            "sudo meson install -C /home/u/nsbox/build && sudo apparmor_parser -r "
                            "/etc/apparmor.d/nsbox, then run /usr/local/bin/nsbox (the profile names that binary, "
                            "not /home/u/nsbox/build/nsbox)");
        /* a profile for another binary is there: say so */
        f.aa.profile_present = true;
        plan(&f, &r);
        assert_non_null(strstr(find(&r, "user_ns")->fix, "(/etc/apparmor.d/nsbox is there, but names another "
                                                         "nsbox binary than /home/u/nsbox/build/nsbox)"));

        /* the package's binary, its profile gone: reinstall the package */
        memset(&f.aa, 0, sizeof f.aa);
        strcpy(f.aa.restrict_sysctl, "1");
        strcpy(f.aa.bindir, "/usr/bin");
        strcpy(f.aa.self_exe, "/usr/bin/nsbox");
        plan(&f, &r);
        /* a plain --reinstall leaves a deleted conffile deleted */
        assert_string_equal(find(&r, "user_ns")->fix, "sudo apt-get install --reinstall -o "
                                                      "Dpkg::Options::=--force-confmiss nsbox (the package ships "
                                                      "/etc/apparmor.d/nsbox), then sudo apparmor_parser -r "
                                                      "/etc/apparmor.d/nsbox");

        /* the text says it in one line, with the fix under it */
        text = doctor_to_text(&r);
        assert_non_null(strstr(text, "✗ user_ns       unavailable: AppArmor restricts unprivileged user namespaces"));
        assert_non_null(strstr(text, "fix: sudo apt-get install --reinstall -o Dpkg::Options::=--force-confmiss "
                                     "nsbox"));

        /* reduced runs without namespaces: degraded, still with the fix */
        doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        assert_int_equal(find(&r, "user_ns")->status, DOC_DEGRADED);
        assert_true(r.ready);

        /* the profile works: the probe succeeds, nothing to fix */
        f.userns_probe = DOC_PROBE_OK;
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_OK);
        assert_non_null(strstr(c->detail, "kernel.apparmor_restrict_unprivileged_userns=1 (an AppArmor profile grants nsbox userns)"));
        assert_string_equal(c->fix, "");

        /* root: the restriction does not bind it */
        f.userns_probe = DOC_PROBE_FAILED;
        f.aa.root = true;
        f.root = true;
        plan(&f, &r);
        assert_null(strstr(find(&r, "user_ns")->detail, "AppArmor restricts"));
        assert_null(strstr(find(&r, "user_ns")->fix, "apparmor_parser"));
}

/* The symptom without the sysctl: a namespace without capabilities, said
 * as such (another LSM, a container's policy). */
static void test_userns_without_caps(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;

        (void) state;
        good_host(&f);
        probe_failed(&f, "unshare(namespaces)", EPERM, true);
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(c->detail, "a user namespace is created but comes up without capabilities: the probe "
                                          "failed at unshare(namespaces) (Operation not permitted)"));
        assert_non_null(strstr(c->fix, "the use of a new user namespace"));
        assert_null(strstr(c->fix, "apparmor_parser"));
        /* not made at all: said differently */
        probe_failed(&f, "unshare(CLONE_NEWUSER)", EPERM, false);
        plan(&f, &r);
        assert_non_null(strstr(find(&r, "user_ns")->detail, "cannot create a user namespace"));
}

/* A strict run's failure in its new namespace, explained. */
static void test_aa_explain(void **state)
{
        struct doc_aa aa;
        struct nsb_error e;

        (void) state;
        memset(&aa, 0, sizeof aa);
        strcpy(aa.restrict_sysctl, "1");
        strcpy(aa.bindir, "/usr/bin");
        strcpy(aa.self_exe, "/usr/bin/nsbox");
        aa.profile_present = aa.profile_names_self = true;
        nsb_fail(&e, NSB_STAGE_MOUNT, EPERM, "mount step 0 (/): make / private");
        assert_true(doctor_aa_explain(&aa, &e));
        assert_int_equal(e.stage, NSB_STAGE_MOUNT);
        assert_int_equal(e.errnum, EPERM);
        assert_string_equal(e.msg, "AppArmor's restriction of unprivileged user namespaces "
                                   "(kernel.apparmor_restrict_unprivileged_userns=1) left the sandbox's namespace "
                                   "without capabilities (no profile grants this nsbox userns); fix: sudo "
                                   "apparmor_parser -r /etc/apparmor.d/nsbox; failed step: mount step 0 (/): make / "
                                   "private");
        /* the longest fix (a build directory) still leaves room for the step */
        aa.profile_present = aa.profile_names_self = false;
        strcpy(aa.self_exe, "/home/learner/src/nsbox/build/nsbox");
        strcpy(aa.build_dir, "/home/learner/src/nsbox/build");
        nsb_fail(&e, NSB_STAGE_CLONE, EPERM, "sethostname");
        assert_true(doctor_aa_explain(&aa, &e));
        assert_non_null(strstr(e.msg, "fix: sudo meson install -C /home/learner/src/nsbox/build && sudo "
                                      "apparmor_parser -r /etc/apparmor.d/nsbox, then run /usr/bin/nsbox"));
        assert_non_null(strstr(e.msg, "; failed step: sethostname"));

        /* not this cause: left alone */
        nsb_fail(&e, NSB_STAGE_MOUNT, ENOENT, "open '/srv/x'");
        assert_false(doctor_aa_explain(&aa, &e));
        assert_string_equal(e.msg, "open '/srv/x'");
        nsb_fail(&e, NSB_STAGE_SECCOMP, EPERM, "load");
        assert_false(doctor_aa_explain(&aa, &e));
        nsb_fail(&e, NSB_STAGE_MOUNT, EPERM, "x");
        strcpy(aa.restrict_sysctl, "0");
        assert_false(doctor_aa_explain(&aa, &e));
        strcpy(aa.restrict_sysctl, "");
        assert_false(doctor_aa_explain(&aa, &e));
        strcpy(aa.restrict_sysctl, "1");
        aa.root = true;
        assert_false(doctor_aa_explain(&aa, &e));
        assert_string_equal(e.msg, "x");
}

/* A real AppArmor kernel without Ubuntu's sysctl (Debian 13's 6.12, seen in
 * the vm-apparmor test): nsbox confined by unprivileged_userns under aa-exec.
 * Doctor names the profile from its label and never blames a container. */
static void test_aa_confined(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;
        struct nsb_error e;

        (void) state;
        good_host(&f);
        strcpy(f.aa.restrict_sysctl, "");
        strcpy(f.aa.label, "unprivileged_userns (enforce)");
        probe_failed(&f, "setgroups", EACCES, true);
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_string_equal(c->detail, "the AppArmor profile `unprivileged_userns (enforce)` confines this nsbox and its "
                                       "user namespace comes up without capabilities (probe: setgroups failed: "
                                       "Permission denied); kernel.unprivileged_userns_clone=1; "
                                       "user.max_user_namespaces=63414");
        assert_non_null(strstr(c->fix, "not under the profile `unprivileged_userns (enforce)`"));
        assert_null(strstr(c->fix, "container"));
        assert_null(strstr(c->fix, "unconfined"));
        /* a profile without `userns`: the namespace is not made */
        probe_failed(&f, "unshare(CLONE_NEWUSER)", EACCES, false);
        plan(&f, &r);
        assert_non_null(strstr(find(&r, "user_ns")->detail, "confines this nsbox and it may not create a user namespace"));
        /* with Ubuntu's sysctl too: the profile is the more specific cause */
        strcpy(f.aa.restrict_sysctl, "1");
        probe_failed(&f, "unshare(namespaces)", EPERM, true);
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_non_null(strstr(c->detail, "`unprivileged_userns (enforce)` confines this nsbox"));
        assert_null(strstr(c->fix, "apparmor_parser"));
        /* nsbox's own profile, unconfined and complain mode confine nothing */
        for (const char *l = "nsbox (unconfined)"; l; l = strcmp(l, "nsbox (unconfined)") == 0 ? "unconfined"
                                                          : strcmp(l, "unconfined") == 0 ? "x (complain)" : NULL) {
                strcpy(f.aa.label, l);
                assert_false(doctor_aa_confined(&f.aa));
                plan(&f, &r);
                assert_null(strstr(find(&r, "user_ns")->detail, "confines this nsbox"));
        }
        strcpy(f.aa.restrict_sysctl, "");
        strcpy(f.aa.label, "");
        plan(&f, &r);
        assert_non_null(strstr(find(&r, "user_ns")->fix, "container"));

        /* a strict run's failure: the profile, the fix, then the step */
        strcpy(f.aa.label, "unprivileged_userns (enforce)");
        nsb_fail(&e, NSB_STAGE_CLONE, EPERM, "clone (with new user, mount, pid, net, ipc, uts and cgroup namespaces)");
        assert_true(doctor_aa_explain(&f.aa, &e));
        assert_string_equal(e.msg, "the AppArmor profile `unprivileged_userns (enforce)` confines this nsbox and denied "
                                   "its sandbox a user namespace or the capabilities in it; fix: run nsbox from an "
                                   "unconfined process (not under aa-exec or a confined service), where its own "
                                   "profile applies; failed step: clone (with new user, mount, pid, net, ipc, uts and "
                                   "cgroup namespaces)");
        nsb_fail(&e, NSB_STAGE_SECCOMP, EPERM, "load");
        assert_false(doctor_aa_explain(&f.aa, &e));
        strcpy(f.aa.label, "nsbox (unconfined)");
        nsb_fail(&e, NSB_STAGE_CLONE, EPERM, "clone");
        assert_false(doctor_aa_explain(&f.aa, &e));
}

static void test_userns_all_three_and_unexplained(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;

        (void) state;
        good_host(&f);
        f.userns_probe = DOC_PROBE_FAILED;
        f.userns_errno = EPERM;
        strcpy(f.userns_clone, "0");
        strcpy(f.max_user_ns, "0");
        strcpy(f.aa.restrict_sysctl, "1");
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_non_null(strstr(c->fix, "unprivileged_userns_clone=1"));
        assert_non_null(strstr(c->fix, "max_user_namespaces=15000"));
        assert_non_null(strstr(c->fix, "sudo apparmor_parser -r /etc/apparmor.d/nsbox"));
        assert_null(strstr(c->fix, "apparmor_restrict_unprivileged_userns=0"));

        /* no sysctl explains it: a container's policy */
        good_host(&f);
        f.userns_probe = DOC_PROBE_FAILED;
        f.userns_errno = EPERM;
        plan(&f, &r);
        c = find(&r, "user_ns");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(c->fix, "container"));

        /* the probe is the truth: the switch does not bind root */
        good_host(&f);
        f.root = true;
        strcpy(f.userns_clone, "0");
        plan(&f, &r);
        assert_int_equal(find(&r, "user_ns")->status, DOC_OK);

        /* not probed: the sysctls decide */
        good_host(&f);
        f.userns_probe = DOC_PROBE_UNKNOWN;
        strcpy(f.userns_clone, "0");
        plan(&f, &r);
        assert_int_equal(find(&r, "user_ns")->status, DOC_UNAVAILABLE);
}

static void test_cgroup_backends(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;

        (void) state;
        good_host(&f);
        f.cg_backend = CG_BACKEND_V1;
        f.cg_v2_mounted = false;
        f.cg_v1_mounted = true;
        plan(&f, &r);
        assert_int_equal(find(&r, "cgroup")->status, DOC_OK);
        assert_non_null(strstr(find(&r, "cgroup")->detail, "cgroup v1"));

        /* v2 host, shell shares the scope: rlimit, degraded, still ready */
        good_host(&f);
        f.cg_backend = CG_BACKEND_RLIMIT;
        strcpy(f.cg_reason, "cgroup v2: other processes share our cgroup; cgroup v1: not mounted");
        plan(&f, &r);
        c = find(&r, "cgroup");
        assert_int_equal(c->status, DOC_DEGRADED);
        assert_non_null(strstr(c->fix, "systemd-run --user --scope -p Delegate=yes nsbox"));
        assert_non_null(strstr(c->detail, "other processes share our cgroup"));
        assert_true(r.ready);

        /* root on v2: same fix without --user */
        f.root = true;
        plan(&f, &r);
        c = find(&r, "cgroup");
        assert_non_null(strstr(c->fix, "systemd-run --scope -p Delegate=yes"));
        assert_null(strstr(c->fix, "--user"));

        /* hybrid host, unprivileged user: run as root */
        good_host(&f);
        f.cg_backend = CG_BACKEND_RLIMIT;
        f.cg_v2_mounted = false;
        f.cg_v1_mounted = true;
        plan(&f, &r);
        c = find(&r, "cgroup");
        assert_int_equal(c->status, DOC_DEGRADED);
        assert_non_null(strstr(c->fix, "as root"));
        assert_true(r.ready);

        /* cg_detect failed: the sandbox cannot start */
        good_host(&f);
        f.cg_detected = false;
        f.cg_errno = ENOENT;
        plan(&f, &r);
        assert_int_equal(find(&r, "cgroup")->status, DOC_UNAVAILABLE);
        assert_false(r.ready);

        /* clone3 refused: runs fall back to clone(2), except a v2 one, which
         * needs CLONE_INTO_CGROUP */
        good_host(&f);
        f.clone3_errno = ENOSYS;
        plan(&f, &r);
        c = find(&r, "cgroup");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(c->fix, "--security-opt seccomp=unconfined"));
        assert_false(r.ready);
        f.cg_backend = CG_BACKEND_V1;
        plan(&f, &r);
        assert_int_equal(find(&r, "cgroup")->status, DOC_OK);
        assert_true(r.ready);
}

/* How the cgroup was obtained, and the host-specific fix of the obtain plan. */
static void test_cgroup_origin(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;
        json_t *j, *checks;
        const char *origin = NULL;

        (void) state;
        good_host(&f);
        f.cg_origin = CG_ORIGIN_SCOPE;
        strcpy(f.cg_origin_detail, "systemd-scope (asked the systemd user manager, Delegate=yes): nsbox-scope-9-1.scope");
        plan(&f, &r);
        c = find(&r, "cgroup");
        assert_int_equal(c->status, DOC_OK);
        assert_string_equal(c->origin, "systemd-scope");
        assert_non_null(strstr(c->detail, "obtained systemd-scope (asked the systemd user manager"));
        j = doctor_to_json(&r);
        checks = json_object_get(j, "checks");
        for (size_t i = 0; i < json_array_size(checks); i++)
                if (strcmp(json_string_value(json_object_get(json_array_get(checks, i), "name")), "cgroup") == 0)
                        origin = json_string_value(json_object_get(json_array_get(checks, i), "origin"));
        assert_non_null(origin);
        assert_string_equal(origin, "systemd-scope");
        json_decref(j);

        /* none: the plan's fix for this host replaces the generic one */
        good_host(&f);
        f.cg_backend = CG_BACKEND_RLIMIT;
        f.cg_origin = CG_ORIGIN_NONE;
        strcpy(f.cg_origin_detail, "none (no usable cgroup, and no systemd user manager to ask for one)");
        strcpy(f.cg_fix, "start nsbox from a login session (pam_systemd starts the user manager)");
        plan(&f, &r);
        c = find(&r, "cgroup");
        assert_int_equal(c->status, DOC_DEGRADED);
        assert_string_equal(c->origin, "none");
        assert_string_equal(c->fix, "start nsbox from a login session (pam_systemd starts the user manager)");
        assert_non_null(strstr(c->detail, "obtained none (no usable cgroup, and no systemd user manager"));

        /* --cgroup-parent refused: the sandbox cannot start */
        good_host(&f);
        f.cg_refused = true;
        strcpy(f.cg_refusal, "--cgroup-parent /sys/fs/cgroup/x: not writable by this user");
        plan(&f, &r);
        c = find(&r, "cgroup");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_string_equal(c->origin, "cgroup-parent");
        assert_non_null(strstr(c->detail, "not writable by this user"));
        assert_non_null(strstr(c->fix, "delegated to this user"));
        assert_false(r.ready);
}

static void test_landlock(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;

        (void) state;
        good_host(&f);
        f.landlock_abi = -EOPNOTSUPP;
        plan(&f, &r);
        c = find(&r, "landlock");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(c->fix, "lsm=landlock"));
        assert_false(r.ready);

        f.landlock_abi = -ENOSYS;
        plan(&f, &r);
        c = find(&r, "landlock");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_non_null(strstr(c->fix, "lsm=landlock"));
        assert_false(r.ready);

        /* the LSMs this host runs are kept, not replaced by a fixed list */
        strcpy(f.lsm, "capability,lockdown,yama,selinux,bpf");
        plan(&f, &r);
        assert_non_null(strstr(find(&r, "landlock")->fix,
                               "booted with landlock in the LSM list: add lsm=landlock,capability,lockdown,yama,"
                               "selinux,bpf to GRUB_CMDLINE_LINUX in /etc/default/grub, sudo update-grub, reboot"));
        f.landlock_abi = -EOPNOTSUPP;
        strcpy(f.lsm, "capability,landlock,apparmor");
        plan(&f, &r);
        assert_non_null(strstr(find(&r, "landlock")->fix, "add lsm=landlock,capability,apparmor to GRUB"));
        f.landlock_abi = -ENOSYS;

        /* reduced isolation runs without it */
        doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        assert_int_equal(find(&r, "landlock")->status, DOC_DEGRADED);
        assert_true(r.ready);

        f.landlock_abi = 1;
        plan(&f, &r);
        assert_int_equal(find(&r, "landlock")->status, DOC_OK);
        assert_non_null(strstr(find(&r, "landlock")->detail, "ABI 1"));
        assert_true(r.ready);
}

static void test_seccomp_nnp_interpreter(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        const struct doc_check *c;

        (void) state;
        good_host(&f);
        f.seccomp_mode = -EINVAL;
        plan(&f, &r);
        assert_int_equal(find(&r, "seccomp")->status, DOC_UNAVAILABLE);
        assert_false(r.ready);

        good_host(&f);
        strcpy(f.seccomp_actions, "kill trap errno trace allow");  /* no kill_process: < 4.14 */
        plan(&f, &r);
        assert_int_equal(find(&r, "seccomp")->status, DOC_UNAVAILABLE);

        good_host(&f);
        f.seccomp_actions[0] = '\0';    /* file absent: the prctl and the probe decide */
        f.seccomp_mode = 2;             /* already filtered (a container) */
        plan(&f, &r);
        assert_int_equal(find(&r, "seccomp")->status, DOC_OK);
        assert_true(r.ready);

        /* PR_GET_SECCOMP answers, the sysctl reads well, but seccomp() itself
         * refuses: no filter can be loaded, in either isolation. */
        good_host(&f);
        f.seccomp_filter_err = EINVAL;
        plan(&f, &r);
        c = find(&r, "seccomp");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_string_equal(c->fix, "use Linux >= 4.14 built with CONFIG_SECCOMP_FILTER=y");
        assert_false(r.ready);
        doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        assert_false(r.ready);
        f.seccomp_filter_err = EPERM;
        plan(&f, &r);
        assert_non_null(strstr(find(&r, "seccomp")->fix, "--security-opt seccomp=unconfined"));

        good_host(&f);
        f.nnp = -EINVAL;
        plan(&f, &r);
        assert_int_equal(find(&r, "no_new_privs")->status, DOC_UNAVAILABLE);
        assert_false(r.ready);

        good_host(&f);
        f.interpreter_ok = false;
        strcpy(f.interpreter_error, "/usr/bin/python3: No such file or directory");
        plan(&f, &r);
        c = find(&r, "interpreter");
        assert_int_equal(c->status, DOC_UNAVAILABLE);
        assert_string_equal(c->fix, "sudo apt-get install python3");
        assert_false(r.ready);
        doctor_plan(&f, NSB_ISOLATION_REDUCED, &r);
        assert_false(r.ready);

        /* a script: the fix names the binary its #! line runs */
        strcpy(f.interpreter, "/usr/bin/pydoc3");
        f.interpreter_default = false;
        strcpy(f.interpreter_hint, "/usr/bin/python3.11");
        plan(&f, &r);
        assert_string_equal(find(&r, "interpreter")->fix,
                            "--interpreter /usr/bin/python3.11 (the Python binary the script's #! line runs)");
}

static void test_renderings(void **state)
{
        struct doc_facts f;
        struct doc_report r;
        json_t *j, *checks;
        char *text;

        (void) state;
        good_host(&f);
        f.cg_backend = CG_BACKEND_RLIMIT;
        f.landlock_abi = -EOPNOTSUPP;
        plan(&f, &r);

        j = doctor_to_json(&r);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "schema")), "nsbox.doctor/1");
        assert_string_equal(json_string_value(json_object_get(j, "isolation")), "strict");
        assert_true(json_is_false(json_object_get(j, "ready")));
        checks = json_object_get(j, "checks");
        assert_int_equal(json_array_size(checks), r.n_checks);
        assert_string_equal(json_string_value(json_object_get(json_array_get(checks, 0), "name")), "user_ns");
        assert_string_equal(json_string_value(json_object_get(json_array_get(checks, 1), "status")), "degraded");
        assert_non_null(json_object_get(json_array_get(checks, 0), "fix"));
        json_decref(j);

        text = doctor_to_text(&r);
        assert_non_null(text);
        assert_non_null(strstr(text, "✓ user_ns"));
        assert_non_null(strstr(text, "! cgroup"));
        assert_non_null(strstr(text, "✗ landlock"));
        assert_non_null(strstr(text, "fix: systemd-run --user --scope -p Delegate=yes nsbox"));
        assert_non_null(strstr(text, "ready for strict isolation: no\n"));
        free(text);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_good_host_ready),
                cmocka_unit_test(test_userns_clone_sysctl),
                cmocka_unit_test(test_max_user_namespaces_sysctl),
                cmocka_unit_test(test_apparmor_restriction),
                cmocka_unit_test(test_userns_without_caps),
                cmocka_unit_test(test_aa_explain),
                cmocka_unit_test(test_aa_confined),
                cmocka_unit_test(test_userns_all_three_and_unexplained),
                cmocka_unit_test(test_cgroup_backends),
                cmocka_unit_test(test_cgroup_origin),
                cmocka_unit_test(test_landlock),
                cmocka_unit_test(test_seccomp_nnp_interpreter),
                cmocka_unit_test(test_renderings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
