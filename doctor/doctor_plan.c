/* doctor/doctor_plan.c — see doctor.h. Pure: facts in, checks out; it only
 * formats into the report's fixed buffers and allocates for the renderings. */
#include "doctor/doctor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/portable.h"
#include "util/cleanup.h"
#include "util/textsafe.h"

static const char *const status_names[] = {
        [DOC_OK] = "ok", [DOC_DEGRADED] = "degraded", [DOC_UNAVAILABLE] = "unavailable",
};

const char *doctor_status_name(enum doc_status s)
{
        return (unsigned) s < ARRAY_SIZE(status_names)? status_names[s] : "unknown";
}

static struct doc_check *add_check(struct doc_report *r, const char *name)
{
        struct doc_check *c = &r->checks[r->n_checks++];

        c->name = name;
        c->status = DOC_OK;
        c->detail[0] = c->fix[0] = '\0';
        return c;
}

/* Texts in fixed buffers, truncated silently (sized for the longest we write). */
#define DETAIL(c, ...) nsb_appendf((c)->detail, sizeof (c)->detail, __VA_ARGS__)
#define FIX(c, ...) nsb_appendf((c)->fix, sizeof (c)->fix, __VA_ARGS__)

static void fix_sep(struct doc_check *c)
{
        if (c->fix[0])
                FIX(c, "; ");
}

/* ---- user namespaces ------------------------------------------------------- */

#define FIX_USERNS_CLONE "sudo sysctl -w kernel.unprivileged_userns_clone=1"
#define FIX_MAX_USERNS "sudo sysctl -w user.max_user_namespaces=15000"

/* ---- AppArmor's restriction of unprivileged user namespaces ----------------- */

bool doctor_aa_restricts(const struct doc_aa *aa)
{
        return !aa->root && aa->restrict_sysctl[0] && strcmp(aa->restrict_sysctl, "0") != 0;
}

#define AA_LOAD "sudo apparmor_parser -r " DOC_AA_PROFILE

static bool ends_with(const char *s, const char *tail)
{
        size_t n = strlen(s), t = strlen(tail);
        return n >= t && strcmp(s + n - t, tail) == 0;
}

bool doctor_aa_confined(const struct doc_aa *aa)
{
        /* "nsbox (unconfined)": nsbox's own profile, which confines nothing;
         * complain mode logs and denies nothing */
        return aa->label[0] && strcmp(aa->label, "unconfined") != 0 && !ends_with(aa->label, " (unconfined)") &&
               !ends_with(aa->label, " (complain)");
}

void doctor_aa_confined_fix(const struct doc_aa *aa, char *buf, size_t size)
{
        /* The label came from the process that started nsbox (aa-exec, a
         * confined shell or service, an exec rule of its profile): only
         * starting it elsewhere helps; nsbox's own profile attaches to it
         * when an unconfined process runs it. */
        buf[0] = '\0';
        nsb_appendf(buf, size, "run nsbox from a process AppArmor does not confine, not under the profile `%s` "
                               "(it comes from what started nsbox: aa-exec, a confined shell or service); there the "
                               "profile nsbox ships (" DOC_AA_PROFILE ") applies",
                    aa->label);
}

void doctor_aa_fix(const struct doc_aa *aa, char *buf, size_t size)
{
        char installed[DOC_PATH_MAX + 8];
        bool is_installed;

        buf[0] = '\0';
        snprintf(installed, sizeof installed, "%s/nsbox", aa->bindir);
        is_installed = aa->self_exe[0] && strcmp(aa->self_exe, installed) == 0;
        if (aa->profile_present && aa->profile_names_self) {
                /* installed, not loaded (AppArmor started before it came) */
                nsb_appendf(buf, size, AA_LOAD);
        } else if (aa->build_dir[0]) {
                /* a profile names one binary path: this build's stays unconfined */
                nsb_appendf(buf, size, "sudo meson install -C %s && " AA_LOAD ", then run %s (the profile names "
                                       "that binary, not %s)", aa->build_dir, installed, aa->self_exe);
        } else if (is_installed && strcmp(aa->bindir, "/usr/bin") == 0) {
                /* The profile is a conffile: dpkg keeps a deleted conffile
                 * deleted on a plain --reinstall; force-confmiss restores it. */
                nsb_appendf(buf, size, "sudo apt-get install --reinstall -o Dpkg::Options::=--force-confmiss nsbox "
                                       "(the package ships %s), then " AA_LOAD, DOC_AA_PROFILE);
        } else if (is_installed) {
                nsb_appendf(buf, size, "run sudo meson install again from nsbox's build directory (it installs %s), "
                                       "then " AA_LOAD, DOC_AA_PROFILE);
        } else {
                nsb_appendf(buf, size, "install nsbox with its AppArmor profile (the nsbox package, or sudo meson install "
                                       "from its build directory, which installs %s naming %s), then " AA_LOAD
                                       ", and run that nsbox",
                            DOC_AA_PROFILE, installed);
        }
        if (aa->profile_present && !aa->profile_names_self)
                nsb_appendf(buf, size, " (%s is there, but names another nsbox binary than %s)", DOC_AA_PROFILE,
                            aa->self_exe[0] ? aa->self_exe : "this one");
}

bool doctor_aa_explain(const struct doc_aa *aa, struct nsb_error *e)
{
        char fix[DOC_FIX_MAX];

        if ((!doctor_aa_restricts(aa) && !doctor_aa_confined(aa)) || (e->errnum != EPERM && e->errnum != EACCES))
                return false;
        if (e->stage != NSB_STAGE_CLONE && e->stage != NSB_STAGE_USERNS && e->stage != NSB_STAGE_MOUNT &&
            e->stage != NSB_STAGE_NET)
                return false;
        if (doctor_aa_confined(aa)) {
                /* The more specific fact: a profile confines nsbox itself
                 * (with or without Ubuntu's sysctl). Shorter than doctor's
                 * fix: the message has NSB_ERROR_MSG_MAX bytes, and the
                 * failed step must fit after it. */
                nsb_error_prefix(e, "the AppArmor profile `%s` confines this nsbox and denied its sandbox a user "
                                    "namespace or the capabilities in it; fix: run nsbox from an unconfined process "
                                    "(not under aa-exec or a confined service), where its own profile applies; "
                                    "failed step",
                                 aa->label);
                return true;
        }
        doctor_aa_fix(aa, fix, sizeof fix);
        nsb_error_prefix(e, "AppArmor's restriction of unprivileged user namespaces "
                            "(kernel.apparmor_restrict_unprivileged_userns=%s) left the sandbox's namespace "
                            "without capabilities (no profile grants this nsbox userns); fix: %s; failed step",
                         aa->restrict_sysctl, fix);
        return true;
}

/* ---- user namespaces ------------------------------------------------------- */

#define FIX_USERNS_CLONE "sudo sysctl -w kernel.unprivileged_userns_clone=1"
#define FIX_MAX_USERNS "sudo sysctl -w user.max_user_namespaces=15000"

/* The probe made its user namespace, and then could not use it: no
 * capability in it (AppArmor's restriction, or another LSM's policy). */
static bool userns_without_caps(const struct doc_facts *f)
{
        return f->userns_probe == DOC_PROBE_FAILED && f->userns_created &&
               (f->userns_errno == EPERM || f->userns_errno == EACCES);
}

static void plan_userns(const struct doc_facts *f, enum nsb_isolation iso, struct doc_report *r)
{
        struct doc_check *c = add_check(r, "user_ns");
        /* The two "unprivileged" switches do not apply to a process holding
         * CAP_SYS_ADMIN (root); a limit of 0 namespaces applies to everyone. */
        bool clone_off = !f->root && strcmp(f->userns_clone, "0") == 0;
        bool max_zero = strcmp(f->max_user_ns, "0") == 0;
        bool aa_on = doctor_aa_restricts(&f->aa);
        bool no_caps = userns_without_caps(f);
        /* A foreign AppArmor profile confines nsbox itself and the probe was
         * refused (EACCES: no `userns` rule; EPERM: no capability in it). */
        bool confined = doctor_aa_confined(&f->aa) && f->userns_probe == DOC_PROBE_FAILED && !clone_off &&
                        !max_zero && (f->userns_errno == EPERM || f->userns_errno == EACCES);
        bool blocked = clone_off || max_zero || aa_on || confined;

        if (f->userns_probe == DOC_PROBE_OK) {
                DETAIL(c, "unprivileged user namespaces work (probe: unshare(CLONE_NEWUSER), uid_map, namespaces, "
                          "a private mount)");
        } else if (confined) {
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "the AppArmor profile `%s` confines this nsbox and %s (probe: %s failed: %s)", f->aa.label,
                       no_caps ? "its user namespace comes up without capabilities"
                               : "it may not create a user namespace",
                       f->userns_step[0] ? f->userns_step : "?", strerror(f->userns_errno));
        } else if (f->userns_probe == DOC_PROBE_FAILED && aa_on && !clone_off && !max_zero) {
                /* One line that names the cause: the restriction. */
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "AppArmor restricts unprivileged user namespaces on this host "
                          "(kernel.apparmor_restrict_unprivileged_userns=%s) and no AppArmor profile grants this "
                          "nsbox `userns`, so its namespaces come up without capabilities (probe: %s failed",
                       f->aa.restrict_sysctl, f->userns_step[0] ? f->userns_step : "?");
                if (f->userns_errno > 0)
                        DETAIL(c, ": %s", strerror(f->userns_errno));
                DETAIL(c, ")");
        } else if (f->userns_probe == DOC_PROBE_FAILED) {
                c->status = DOC_UNAVAILABLE;
                if (no_caps)
                        DETAIL(c, "a user namespace is created but comes up without capabilities: ");
                else
                        DETAIL(c, "cannot create a user namespace: ");
                DETAIL(c, "the probe failed at %s", f->userns_step[0] ? f->userns_step : "?");
                if (f->userns_errno > 0)
                        DETAIL(c, " (%s)", strerror(f->userns_errno));
        } else {
                c->status = blocked ? DOC_UNAVAILABLE : DOC_OK;
                DETAIL(c, "not probed; judged from the sysctls alone");
        }

        if (f->userns_clone[0])
                DETAIL(c, "; kernel.unprivileged_userns_clone=%s%s", f->userns_clone,
                       clone_off ? " (disables them for non-root users)" : "");
        if (f->max_user_ns[0])
                DETAIL(c, "; user.max_user_namespaces=%s%s", f->max_user_ns, max_zero ? " (none may be created)" : "");
        if (f->aa.restrict_sysctl[0] && (c->status == DOC_OK || clone_off || max_zero || !aa_on || confined))
                DETAIL(c, "; kernel.apparmor_restrict_unprivileged_userns=%s%s", f->aa.restrict_sysctl,
                       !aa_on ? "" : c->status == DOC_OK ? " (an AppArmor profile grants nsbox userns)"
                                                         : " (AppArmor gives unconfined programs' namespaces no capabilities)");

        if (c->status == DOC_OK)
                return;
        if (iso == NSB_ISOLATION_REDUCED) {
                /* Reduced isolation uses no namespace: say what is missing, but
                 * it does not block (the results label every wall "disabled"). */
                c->status = DOC_DEGRADED;
                DETAIL(c, "; reduced isolation runs without namespaces (labelled in results)");
        }
        if (clone_off) {
                fix_sep(c);
                FIX(c, FIX_USERNS_CLONE);
        }
        if (max_zero) {
                fix_sep(c);
                FIX(c, FIX_MAX_USERNS);
        }
        if (clone_off || max_zero)
                FIX(c, " (persist it in /etc/sysctl.d/99-nsbox.conf)");
        if (confined) {
                char fix[DOC_FIX_MAX];
                fix_sep(c);
                doctor_aa_confined_fix(&f->aa, fix, sizeof fix);
                FIX(c, "%s", fix);
        } else if (aa_on) {
                /* Keep AppArmor's restriction; give nsbox the profile it ships. */
                char fix[DOC_FIX_MAX];
                fix_sep(c);
                doctor_aa_fix(&f->aa, fix, sizeof fix);
                FIX(c, "%s", fix);
        }
        if (blocked)
                return;
        /* No sysctl explains it. */
        if (f->userns_errno == ENOSPC)
                FIX(c, "the user namespace limit is exhausted: " FIX_MAX_USERNS);
        else if (f->userns_errno == EINVAL || f->userns_errno == ENOSYS)
                FIX(c, "use a kernel built with CONFIG_USER_NS=y");
        else
                FIX(c, "if nsbox runs in a container, its seccomp or LSM policy forbids %s: "
                       "run nsbox on the host, or allow user namespaces in the container (e.g. podman, or "
                       "docker --security-opt seccomp=unconfined --security-opt apparmor=unconfined); "
                       "otherwise check `sysctl user.max_user_namespaces` (" FIX_MAX_USERNS ")",
                    no_caps ? "the use of a new user namespace (mount, unshare)" : "unshare(CLONE_NEWUSER)");
}

/* ---- cgroup ------------------------------------------------------------------ */

static void plan_cgroup(const struct doc_facts *f, struct doc_report *r)
{
        struct doc_check *c = add_check(r, "cgroup");

        if (!f->cg_detected) {
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "cannot inspect cgroups: /proc unreadable (%s)", strerror(f->cg_errno > 0 ? f->cg_errno : EIO));
                FIX(c, "mount procfs at /proc (mount -t proc proc /proc)");
                return;
        }
        c->origin = cg_origin_name(f->cg_origin);
        if (f->cg_refused) {
                c->status = DOC_UNAVAILABLE;
                c->origin = cg_origin_name(CG_ORIGIN_PARENT);
                DETAIL(c, "%s", f->cg_refusal);
                FIX(c, "give --cgroup-parent a cgroup v2 directory delegated to this user (memory and pids in its "
                       "cgroup.controllers; it, its cgroup.procs and cgroup.subtree_control writable; no other "
                       "processes in it), or leave the option out");
                return;
        }
        switch (f->cg_backend) {
        case CG_BACKEND_V2:
                DETAIL(c, "cgroup v2 (memory, pids, cpu accounting), obtained %s: %s", f->cg_origin_detail,
                       f->cg_reason);
                if (f->clone3_errno == ENOSYS) {
                        /* nsbox falls back to clone(2) where clone3 is refused,
                         * but a v2 run is born in its cgroup: CLONE_INTO_CGROUP. */
                        c->status = DOC_UNAVAILABLE;
                        DETAIL(c, "; but clone3 is refused (ENOSYS, a seccomp profile's doing), and a cgroup v2 run "
                                  "starts inside its cgroup through clone3's CLONE_INTO_CGROUP");
                        FIX(c, "allow clone3 to nsbox: run it on the host, or start its container with "
                               "--security-opt seccomp=unconfined");
                }
                return;
        case CG_BACKEND_V1:
                DETAIL(c, "cgroup v1, own cgroups writable (memory, pids), obtained %s: %s", f->cg_origin_detail,
                       f->cg_reason);
                return;
        case CG_BACKEND_RLIMIT:
                c->status = DOC_DEGRADED;
                DETAIL(c, "no usable cgroup, not delegated: memory and tasks bounded by the rlimit fallback "
                          "(RLIMIT_AS per process, RLIMIT_NPROC per user; weaker, labelled `rlimit` in results): %s",
                       f->cg_reason);
                if (f->cg_origin_detail[0])
                        DETAIL(c, "; obtained %s", f->cg_origin_detail);
                if (f->cg_fix[0])               /* what the obtain plan found would help on this host */
                        FIX(c, "%s", f->cg_fix);
                else if (f->cg_v1_mounted && !f->root)      /* hybrid: memory and pids live on v1 */
                        FIX(c, "run nsbox as root (cgroup v1 directories belong to root), or use a pure cgroup v2 "
                               "host with systemd-run --user --scope -p Delegate=yes nsbox …");
                else if (f->cg_v2_mounted)
                        FIX(c, f->root ? "sudo systemd-run --scope -p Delegate=yes nsbox … (nsbox in its own delegated cgroup)"
                                       : "systemd-run --user --scope -p Delegate=yes nsbox … (nsbox in its own delegated cgroup)");
                else
                        FIX(c, "mount a writable cgroup2 at /sys/fs/cgroup (containers: a private, delegated cgroup "
                               "namespace, e.g. docker run --cgroupns=private), then "
                               "systemd-run --user --scope -p Delegate=yes nsbox …");
                return;
        default:
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "no mechanism can bound memory and tasks: %s", f->cg_reason);
                FIX(c, "systemd-run --user --scope -p Delegate=yes nsbox …, or run nsbox as root");
                return;
        }
}

/* ---- seccomp, no_new_privs ------------------------------------------------------- */

static bool has_word(const char *list, const char *word)
{
        size_t n = strlen(word);

        for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
                if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
                        return true;
        return false;
}

static void plan_seccomp(const struct doc_facts *f, struct doc_report *r)
{
        struct doc_check *c = add_check(r, "seccomp");

        if (f->seccomp_mode < 0) {
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "prctl(PR_GET_SECCOMP) failed (%s): the kernel has no seccomp", strerror(-f->seccomp_mode));
                FIX(c, "use a kernel built with CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y");
                return;
        }
        if (f->seccomp_filter_err) {
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "seccomp(SECCOMP_GET_ACTION_AVAIL) for the kill_process and errno actions failed (%s): "
                          "no filter can be loaded", strerror(f->seccomp_filter_err));
                if (f->seccomp_filter_err == EOPNOTSUPP)
                        FIX(c, "use Linux >= 4.14 (the kill_process action)");
                else if (f->seccomp_filter_err == EINVAL || f->seccomp_filter_err == ENOSYS)
                        FIX(c, "use Linux >= 4.14 built with CONFIG_SECCOMP_FILTER=y");
                else
                        FIX(c, "nsbox runs under a policy that refuses seccomp() (a container's seccomp profile or "
                               "an LSM): run nsbox on the host, or start the container with "
                               "--security-opt seccomp=unconfined");
                return;
        }
        if (f->seccomp_actions[0] &&
            (!has_word(f->seccomp_actions, "kill_process") || !has_word(f->seccomp_actions, "errno"))) {
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "the filter needs the kill_process and errno actions; kernel.seccomp.actions_avail = %s",
                       f->seccomp_actions);
                FIX(c, "use Linux >= 4.14 built with CONFIG_SECCOMP_FILTER=y");
                return;
        }
        DETAIL(c, "seccomp filters available");
        if (f->seccomp_actions[0])
                DETAIL(c, " (actions: %s)", f->seccomp_actions);
        if (f->seccomp_mode == 2)
                DETAIL(c, "; nsbox already runs under a filter (a container's?): nsbox's filter stacks on it");
}

static void plan_nnp(const struct doc_facts *f, struct doc_report *r)
{
        struct doc_check *c = add_check(r, "no_new_privs");

        if (f->nnp < 0) {
                c->status = DOC_UNAVAILABLE;
                DETAIL(c, "prctl(PR_GET_NO_NEW_PRIVS) failed (%s)", strerror(-f->nnp));
                FIX(c, "use Linux >= 3.5");
                return;
        }
        DETAIL(c, "PR_SET_NO_NEW_PRIVS available%s", f->nnp == 1 ? " (already set on nsbox, inherited)" : "");
}

/* ---- landlock ---------------------------------------------------------------- */

static void plan_landlock(const struct doc_facts *f, enum nsb_isolation iso, struct doc_report *r)
{
        struct doc_check *c = add_check(r, "landlock");

        if (f->landlock_abi >= 1) {
                DETAIL(c, "Landlock ABI %d", f->landlock_abi);
                if (f->landlock_abi < 4)
                        DETAIL(c, "; TCP bind/connect not restricted by Landlock (ABI >= 4; the empty network namespace still applies)");
                if (f->landlock_abi < 6)
                        DETAIL(c, "; no abstract-unix-socket/signal scoping (ABI >= 6)");
                return;
        }
        c->status = iso == NSB_ISOLATION_REDUCED ? DOC_DEGRADED : DOC_UNAVAILABLE;
        if (f->landlock_abi == -EOPNOTSUPP) {
                DETAIL(c, "Landlock is built into the kernel but not enabled");
                FIX(c, "boot with landlock in the LSM list: add ");
        } else {
                DETAIL(c, "the kernel has no Landlock (%s)", strerror(f->landlock_abi < 0 ? -f->landlock_abi : ENOSYS));
                FIX(c, "use Linux >= 5.13 built with CONFIG_SECURITY_LANDLOCK=y, booted with landlock in the LSM list: add ");
        }
        /* The LSMs this host runs, landlock first: a fixed list would switch
         * off the ones it leaves out (SELinux, say). */
        FIX(c, "lsm=landlock");
        if (f->lsm[0]) {
                char list[sizeof f->lsm];
                snprintf(list, sizeof list, "%s", f->lsm);
                for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                        if (strcmp(tok, "landlock") != 0)
                                FIX(c, ",%s", tok);
        } else {
                FIX(c, ",lockdown,yama,integrity,apparmor,bpf (Debian's list: keep every LSM the running kernel "
                       "has, see `cat /sys/kernel/security/lsm`)");
        }
        FIX(c, " to GRUB_CMDLINE_LINUX in /etc/default/grub, sudo update-grub, reboot");
        if (iso == NSB_ISOLATION_STRICT)
                FIX(c, " (or accept weaker filesystem isolation with --isolation reduced)");
        else
                DETAIL(c, "; reduced isolation runs without it (labelled in results)");
}

/* ---- interpreter --------------------------------------------------------------- */

static void plan_interpreter(const struct doc_facts *f, struct doc_report *r)
{
        struct doc_check *c = add_check(r, "interpreter");

        if (f->interpreter_ok) {
                DETAIL(c, "%s", f->interpreter);
                if (f->interpreter_real[0] && strcmp(f->interpreter_real, f->interpreter) != 0)
                        DETAIL(c, " -> %s", f->interpreter_real);
                DETAIL(c, " (binary, libraries and standard library resolved)");
                return;
        }
        c->status = DOC_UNAVAILABLE;
        DETAIL(c, "%s does not resolve: %s", f->interpreter, f->interpreter_error[0] ? f->interpreter_error : "unknown error");
        if (f->interpreter_hint[0])
                FIX(c, "--interpreter %s (the Python binary the script's #! line runs)", f->interpreter_hint);
        else if (f->interpreter_default)
                FIX(c, "sudo apt-get install python3");
        else
                FIX(c, "pass an existing interpreter with --interpreter PATH, or sudo apt-get install python3");
}

/* Warm starts need strict isolation, Landlock's scopes (ABI 6) and a probe
 * that worked. */
static void plan_warm(const struct doc_facts *f, enum nsb_isolation iso, struct doc_report *ret)
{
        char *why = ret->warm_reason;
        size_t n = sizeof ret->warm_reason;
        bool strict_ok = true;

        for (size_t i = 0; i < ret->n_checks; i++)
                if (ret->checks[i].status == DOC_UNAVAILABLE)
                        strict_ok = false;
        ret->warm = false;
        why[0] = '\0';
        if (iso == NSB_ISOLATION_REDUCED)
                snprintf(why, n, "isolation reduced: warm starts need strict isolation");
        else if (!strict_ok)
                snprintf(why, n, "strict isolation is not available here (see above)");
        else if (f->landlock_abi < 6)
                snprintf(why, n, "Landlock ABI %d < 6: no abstract-socket and signal scoping between jobs",
                         f->landlock_abi);
        else if (f->warm_probe == DOC_PROBE_FAILED)
                snprintf(why, n, "%s", f->warm_error[0] ? f->warm_error : "the probe failed");
        else if (f->warm_probe != DOC_PROBE_OK)
                snprintf(why, n, "not probed");
        else
                ret->warm = true;
}

void doctor_plan(const struct doc_facts *f, enum nsb_isolation iso, struct doc_report *ret)
{
        memset(ret, 0, sizeof *ret);
        ret->isolation = iso;
        plan_userns(f, iso, ret);
        plan_cgroup(f, ret);
        plan_seccomp(f, ret);
        plan_nnp(f, ret);
        plan_landlock(f, iso, ret);
        plan_interpreter(f, ret);

        /* cgroup "degraded" (rlimit) is a labelled mechanism, so it does not
         * block; landlock "degraded" only occurs under reduced isolation. */
        ret->ready = true;
        for (size_t i = 0; i < ret->n_checks; i++)
                if (ret->checks[i].status == DOC_UNAVAILABLE)
                        ret->ready = false;
        plan_warm(f, iso, ret);
}

/* ---- renderings ------------------------------------------------------------------ */

json_t *doctor_to_json(const struct doc_report *r)
{
        json_t *checks = json_array();
        json_t *o;

        if (!checks)
                return NULL;
        for (size_t i = 0; i < r->n_checks; i++) {
                const struct doc_check *c = &r->checks[i];
                json_t *jc = json_pack("{s:s, s:s, s:s, s:s}", "name", c->name, "status",
                                       doctor_status_name(c->status), "detail", c->detail, "fix", c->fix);
                if (jc && c->origin && json_object_set_new(jc, "origin", json_string(c->origin)) < 0) {
                        json_decref(jc);
                        jc = NULL;
                }
                if (json_array_append_new(checks, jc) < 0) {
                        json_decref(checks);
                        return NULL;
                }
        }
        o = json_pack("{s:s, s:s, s:b, s:o, s:{s:b, s:s?}}", "schema", DOCTOR_SCHEMA, "isolation",
                      r->isolation == NSB_ISOLATION_REDUCED ? "reduced" : "strict", "ready", r->ready, "checks", checks,
                      "warm", "available", r->warm, "reason", r->warm ? NULL : r->warm_reason);
        return o;
}

char *doctor_to_text(const struct doc_report *r)
{
        static const char *const marks[] = { [DOC_OK] = "✓", [DOC_DEGRADED] = "!", [DOC_UNAVAILABLE] = "✗" };
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);

        if (!m)
                return NULL;
        /* Details quote the host (paths, mount options, a file's content, a
         * kernel's message): shown on their line with the unsafe characters
         * of util/textsafe.h visible. */
        for (size_t i = 0; i < r->n_checks; i++) {
                const struct doc_check *c = &r->checks[i];
                fprintf(m, "%s %-13s %s%s", marks[c->status], c->name,
                        c->status == DOC_OK ? "" : doctor_status_name(c->status), c->status == DOC_OK ? "" : ": ");
                textsafe_term(m, c->detail, strlen(c->detail), TEXTSAFE_ONE_LINE);
                fputc('\n', m);
                if (c->fix[0]) {
                        fprintf(m, "  %-13s fix: ", "");
                        textsafe_term(m, c->fix, strlen(c->fix), TEXTSAFE_ONE_LINE);
                        fputc('\n', m);
                }
        }
        fprintf(m, "ready for %s isolation: %s\n", r->isolation == NSB_ISOLATION_REDUCED ? "reduced" : "strict",
                r->ready ? "yes" : "no");
        if (r->warm)
                fprintf(m, "warm starts (batch --warm, judge --warm): available\n");
        else {
                fputs("warm starts (batch --warm, judge --warm): unavailable: ", m);
                textsafe_term(m, r->warm_reason, strlen(r->warm_reason), TEXTSAFE_ONE_LINE);
                fputs("; jobs run cold and say why\n", m);
        }
        if (fclose(m) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
