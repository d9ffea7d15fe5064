/* doctor/doctor.h — `nsbox doctor`: what this host can enforce, and how to fix
 * what it cannot.
 *
 * Owns: the preflight checks (user_ns, cgroup, seccomp, no_new_privs,
 * landlock, interpreter), their status/detail/fix, and the `ready` verdict
 * for the requested isolation.
 *
 * Split:
 *   - doctor_plan.c is pure: a struct doc_facts (fabricated by the unit
 *     tests) in, a struct doc_report out, plus its JSON and human renderings;
 *   - doctor_probe.c gathers the facts: /proc/sys files (through an
 *     injectable root), a forked child that tries unshare(CLONE_NEWUSER),
 *     writes its uid_map and uses the namespace (unshare, a private mount),
 *     prctl, cg_obtain, ll_abi_version and
 *     profile_add_python_uncached. It changes nothing on the host that
 *     outlives it: the probe child's namespaces die with it, and no file or
 *     sysctl is written; where nsbox would ask systemd for a delegated scope
 *     (cg_obtain), doctor asks too, so that its verdict is what a run gets,
 *     and that scope goes away with doctor (it is never prepared: no leaf).
 *
 * Test hooks (only when the build has NSBOX_TEST_HOOKS=1):
 *   NSBOX_DOCTOR_PROC_SYS=DIR   read sysctls from DIR instead of /proc/sys (doctor,
 *                               and a failed run explaining itself: doctor_aa_gather)
 *   NSBOX_DOCTOR_FAKE_USERNS=0|1  skip the probe child, pretend it failed/worked
 *                               (and skip the warm probe, which runs sandboxes)
 *
 * The warm check (not part of `ready`: a job that cannot start warm runs
 * cold and says why) runs two one-line jobs through this very binary's
 * `batch --warm -j 1` and asks: both warm, PID 2, and distinct random
 * values (the zygote's generator re-seeded in each job).
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "cgroup/cgroup.h"
#include "config/config.h"
#include "frame/frame.h"
#include "util/error.h"

#define DOCTOR_SCHEMA "nsbox.doctor/1"

enum doc_status { DOC_OK = 0, DOC_DEGRADED, DOC_UNAVAILABLE };
enum doc_probe { DOC_PROBE_UNKNOWN = 0, DOC_PROBE_OK, DOC_PROBE_FAILED };

#define DOC_SYSCTL_MAX 64
#define DOC_AA_LABEL_MAX 256
#define DOC_PATH_MAX 1024

/* Where the nsbox package and `meson install` put nsbox's AppArmor profile
 * (its source: apparmor/nsbox.in). */
#define DOC_AA_PROFILE "/etc/apparmor.d/nsbox"

/* AppArmor's restriction of unprivileged user namespaces (Ubuntu 23.10 and
 * later): with kernel.apparmor_restrict_unprivileged_userns=1 a program that
 * no AppArmor profile grants `userns` still gets its user namespace, but
 * without any capability in it, so sethostname, mount and pivot_root fail
 * with EPERM. It does not bind root (CAP_SYS_ADMIN). Plain data. */
struct doc_aa {
        bool root;                              /* euid 0 */
        char restrict_sysctl[DOC_SYSCTL_MAX];   /* kernel/apparmor_restrict_unprivileged_userns; "" absent */
        char self_exe[DOC_PATH_MAX];            /* this nsbox binary ("" unknown) */
        char bindir[DOC_PATH_MAX];              /* where `meson install` puts nsbox (this build's prefix) */
        char build_dir[DOC_PATH_MAX];           /* self_exe's directory when it is a meson build dir, else "" */
        bool profile_present;                   /* DOC_AA_PROFILE exists */
        bool profile_names_self;                /* ... and names self_exe */
        /* This process's AppArmor label (/proc/self/attr/apparmor/current:
         * "unconfined", "nsbox (unconfined)", "unprivileged_userns (enforce)");
         * "" where AppArmor does not run. A profile in enforce mode that is
         * not nsbox's own confines it: on a kernel without Ubuntu's sysctl
         * (mainline, Debian) this label is what names the cause. */
        char label[DOC_AA_LABEL_MAX];
};

/* Everything doctor_plan() needs. Plain data; "" = the file was absent. */
struct doc_facts {
        bool root;                                      /* euid 0 */

        /* user namespaces */
        char userns_clone[DOC_SYSCTL_MAX];              /* kernel/unprivileged_userns_clone (Debian/Ubuntu) */
        char max_user_ns[DOC_SYSCTL_MAX];               /* user/max_user_namespaces */
        struct doc_aa aa;                               /* AppArmor's userns restriction */
        enum doc_probe userns_probe;
        bool userns_created;                            /* the probe's unshare(CLONE_NEWUSER) worked */
        char userns_step[32];                           /* failed step: "unshare", "uid_map", ... */
        int userns_errno;

        /* cgroup: cg_detect + cg_choose */
        bool cg_detected;                               /* false: cg_detect failed (cg_errno) */
        int cg_errno;
        enum cg_backend cg_backend;
        char cg_reason[CG_REASON_MAX];
        bool cg_v2_mounted;
        bool cg_v1_mounted;                             /* memory and pids v1 hierarchies */
        int clone3_errno;                               /* ENOSYS: clone3 refused (a seccomp profile) */
        enum cg_origin cg_origin;                       /* how the cgroup was obtained (cg_obtain) */
        char cg_origin_detail[CG_REASON_MAX + 256];     /* cg_obtained.detail */
        char cg_fix[CG_REASON_MAX];                     /* origin none: what would help on this host */
        bool cg_refused;                                /* --cgroup-parent refused */
        char cg_refusal[NSB_ERROR_MSG_MAX];             /* why */

        /* seccomp / no_new_privs */
        int seccomp_mode;                               /* prctl(PR_GET_SECCOMP), or -errno */
        char seccomp_actions[256];                      /* kernel/seccomp/actions_avail */
        int seccomp_filter_err;                         /* seccomp(SECCOMP_GET_ACTION_AVAIL) of the
                                                         * kill_process and errno actions: 0, or errno */
        int nnp;                                        /* prctl(PR_GET_NO_NEW_PRIVS), or -errno */

        int landlock_abi;                               /* ll_abi_version(): >= 1, or -errno */
        char lsm[256];                                  /* /sys/kernel/security/lsm ("" unreadable) */

        /* interpreter */
        char interpreter[DOC_PATH_MAX];                 /* as asked */
        bool interpreter_default;                       /* not given with --interpreter */
        bool interpreter_ok;
        char interpreter_real[DOC_PATH_MAX];            /* resolved binary */
        char interpreter_error[NSB_ERROR_MSG_MAX + 64]; /* why it did not resolve */
        char interpreter_hint[DOC_PATH_MAX];            /* a script's #! python binary, or "" */

        /* warm starts: two jobs of `nsbox batch --warm` run on this binary */
        enum doc_probe warm_probe;                      /* UNKNOWN: not tried (a check above failed) */
        char warm_error[NSB_ERROR_MSG_MAX];             /* FAILED: why */
};

#define DOC_DETAIL_MAX 768
#define DOC_FIX_MAX 1024
#define DOC_MAX_CHECKS 8

struct doc_check {
        const char *name;               /* "user_ns", "cgroup", ... (static) */
        const char *origin;             /* cgroup only: cg_origin_name() (static), else NULL */
        enum doc_status status;
        char detail[DOC_DETAIL_MAX];
        char fix[DOC_FIX_MAX];          /* "" when there is nothing to fix */
};

struct doc_report {
        enum nsb_isolation isolation;
        bool ready;                     /* the requested isolation can be provided */
        bool warm;                      /* `batch --warm` / `judge --warm` start jobs warm here */
        char warm_reason[DOC_DETAIL_MAX];   /* !warm: why (a job then runs cold and says so) */
        struct doc_check checks[DOC_MAX_CHECKS];
        size_t n_checks;
};

/* Pure: the checks and the verdict. Strict is ready when user_ns, seccomp,
 * no_new_privs, landlock and interpreter are ok and cgroup is ok or degraded
 * (rlimit is a labelled mechanism). Reduced also accepts a missing Landlock
 * (reported as degraded). */
void doctor_plan(const struct doc_facts *f, enum nsb_isolation iso, struct doc_report *ret);

/* Pure: the contract's JSON object (NULL on allocation failure), and the human
 * text (malloc'd, NULL on allocation failure). */
json_t *doctor_to_json(const struct doc_report *r);
char *doctor_to_text(const struct doc_report *r);

const char *doctor_status_name(enum doc_status s);

/* Pure: AppArmor's restriction applies to this nsbox (on, and not root). */
bool doctor_aa_restricts(const struct doc_aa *aa);
/* Pure: an AppArmor profile other than nsbox's own confines this nsbox and
 * may deny what the sandbox needs (its label names a profile in a mode that
 * denies: not "unconfined", not "(unconfined)", not "(complain)"). Ubuntu's
 * unprivileged_userns profile, entered with aa-exec or inherited from a
 * confined parent, is one: `userns` allowed, every capability denied. */
bool doctor_aa_confined(const struct doc_aa *aa);
/* Pure: the fix when doctor_aa_confined(): run nsbox outside that profile
 * (never "turn AppArmor off"). */
void doctor_aa_confined_fix(const struct doc_aa *aa, char *buf, size_t size);
/* Pure: the exact command that lets this nsbox have user namespaces under
 * the restriction: load the profile shipped with nsbox (installing it first
 * where it is missing or names another binary), never "turn AppArmor off". */
void doctor_aa_fix(const struct doc_aa *aa, char *buf, size_t size);
/* Pure: when a foreign profile confines this nsbox (doctor_aa_confined) or
 * the restriction applies, and @e is the sandbox's failure to make or use its
 * new namespaces (EPERM/EACCES in the clone, userns, net or mount stage), say
 * so in @e (the cause, then the fix, then the step that failed) and return
 * true; else leave @e alone and return false. */
bool doctor_aa_explain(const struct doc_aa *aa, struct nsb_error *e);

/* Syscalls: the AppArmor facts (reads one sysctl under @proc_sys, this
 * binary's path, DOC_AA_PROFILE and this process's label; changes nothing). */
void doctor_aa_gather(const char *proc_sys, struct doc_aa *ret);
/* "/proc/sys", or, in a build with test hooks, NSBOX_DOCTOR_PROC_SYS. */
const char *doctor_proc_sys(void);

/* Syscalls: gather the facts. @proc_sys: normally "/proc/sys". Fails only on
 * allocation failure; everything the host lacks is a fact. */
int doctor_gather(const char *proc_sys, int fake_userns, const char *interpreter, const char *cgroup_parent,
                  struct doc_facts *ret,
                  struct nsb_error *e);

/* `nsbox doctor`: gather, plan, print on run->out (JSON when cfg->doctor_json).
 * Returns 0 when the requested isolation can be provided, 1 when not. */
int doctor_main(const struct frame_run *run, struct nsb_error *e);
