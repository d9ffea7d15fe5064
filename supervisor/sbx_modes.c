/* supervisor/sbx_modes.c — strict and reduced isolation as struct sbx_mode
 * (sbx_internal.h): everything sandbox.c does differently for the two, here
 * and nowhere else. */
#include "supervisor/sbx_internal.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "supervisor/env_plan.h"
#include "supervisor/run_io.h"
#include "supervisor/wire.h"
#include "util/cleanup.h"

/* The namespace walls in the ledger: all up, or all down. */
void sbx_ledger_walls(struct sbx *s, const char *how)
{
        static const enum nsb_prot walls[] = { PROT_USER_NS, PROT_MOUNT_NS, PROT_PID_NS,
                                               PROT_IPC_NS,  PROT_UTS_NS,   PROT_CGROUP_NS };

        for (size_t i = 0; i < ARRAY_SIZE(walls); i++)
                ledger_set(&s->res->ledger, walls[i], how);
}

/* ---- strict: namespaces, a mount plan, Landlock from the plan -------------- */

struct mnt_input sbx_mount_input(const struct sbx *s)
{
        const struct sbx_request *req = s->req;
        long host_cpus = sysconf(_SC_NPROCESSORS_ONLN);     /* bare os.cpu_count()'s answer */

        return (struct mnt_input){
                .user = cfg_mounts(s->cfg),
                .host = &s->host,
                .program_name = req->program_name,
                .program_data = req->program_data,
                .program_len = req->program_len,
                .sandbox_uid = NS_SANDBOX_UID,
                .sandbox_gid = NS_SANDBOX_GID,
                .runner_dir = req->runner_dir,
                .runner_dst = req->start == SBX_ZYGOTE ? WARM_ZYGOTE_CODE_DIR : NULL,
                .preopen_user_sources = s->idmap.idmap_user_sources,
                .workdir = req->workdir,
                .files = req->files,
                .n_files = req->n_files,
                .fetch = req->fetch,
                .n_fetch = req->n_fetch,
                .cpus = cg_cpu_count(s->cfg->pids_max, host_cpus > 0 ? (unsigned) host_cpus : 1),
        };
}

int sbx_strict_plan(struct sbx *s, struct nsb_error *e)
{
        struct mnt_input in;
        int r;

        /* what a killed reduced run left: the next run of any kind reaps it
         * (a warm job's zygote did, when it started) */
        if (!s->mode->tree_is_built)
                reduced_reap_stale();
        ns_idmap_plan(geteuid(), getegid(), &s->idmap);
        in = sbx_mount_input(s);
        if ((r = mnt_plan_build(&in, &s->mounts, e)) < 0 ||
            (r = env_build(s->cfg, NULL, &s->envp, e)) < 0)
                return r;
        /* The Landlock rules are the mount plan's, so the two cannot disagree
         * about where the program may write. */
        if ((r = mnt_plan_landlock(&s->mounts, &s->ll_rules, &s->landlock.n_rules, e)) < 0)
                return r;
        s->landlock.rules = s->ll_rules;
        s->landlock.allow_tcp = s->cfg->network == NSB_NETWORK_LOOPBACK;
        return 0;
}

/* The walls are up; write the id maps, release the init ("go"), and, for
 * v1, make the cgroups while it builds its tree. */
int sbx_strict_after_clone(struct sbx *s, struct nsb_error *e)
{
        struct wire_msg go;
        int r;

        sbx_ledger_walls(s, "enforced");
        for (unsigned i = 0; i < s->mounts.n_slots; i++)
                close_fd(&s->slot_fds[i]);
        if ((r = ns_idmap_apply(s->pid, &s->idmap, e)) < 0)
                return r;
        memset(&go, 0, sizeof go);
        go.version = WIRE_VERSION;
        if (send(s->sock[0], &go, sizeof go, MSG_NOSIGNAL) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "release the sandbox init");
        return s->cg_late ? sbx_create_cgroup_late(s, e) : 0;
}

/* Every namespace at once: the child is never visible outside them. SIGKILL
 * to the init ends the pid namespace, and the kernel kills every process in
 * it. */
static const struct sbx_mode strict_mode = {
        .name = "strict",
        .command_outside_reserved = true,
        .plan = sbx_strict_plan,
        .cg_late_ok = true,
        .clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                       CLONE_NEWCGROUP,
        .clone_what = "with new user, mount, pid, net, ipc, uts and cgroup namespaces",
        .init_steps = child_init_steps,
        .n_init_steps = &child_init_n_steps,
        .after_clone = sbx_strict_after_clone,
        .stop_signal = SIGKILL,
        .explain_refusal = true,
};

/* ---- reduced: no namespaces; a private directory and Landlock (reduced.h) -- */

static int reduced_mode_check(struct sbx *s, struct nsb_error *e)
{
        return reduced_check(s->cfg, s->req->runner_dir, e);
}

static int reduced_mode_plan(struct sbx *s, struct nsb_error *e)
{
        const struct sbx_request *req = s->req;
        const char *extra[1];
        size_t n_extra = 0;
        int r;

        r = reduced_prepare(&s->red, s->cfg, req->program_name, req->program_data, req->program_len, e);
        if (r < 0)
                return r;
        s->drop_to_nobody = s->red.drop_to_nobody;
        s->workdir = s->red.workdir;
        /* The loader's cache: without it ld.so still searches the default
         * directories, but every run would pay for the misses. */
        if (access("/etc/ld.so.cache", R_OK) == 0)
                extra[n_extra++] = "/etc/ld.so.cache";
        r = reduced_rules(&s->red, s->cfg, &s->host, extra, n_extra, e);
        if (r < 0)
                return r;
        s->landlock.rules = s->red.rules;
        s->landlock.n_rules = s->red.n_rules;
        s->landlock.allow_tcp = false;
        r = reduced_argv(&s->red, req->program_name, req->argv, req->argc, &s->red_argv, e);
        if (r < 0)
                return r;
        s->argv = s->red_argv;
        return env_build(s->cfg, s->red.tmpdir, &s->envp, e);
}

/* The host counts every task of the user against RLIMIT_NPROC. */
static void reduced_cg_spec_adjust(struct sbx *s)
{
        unsigned long tasks = 0;

        if (!s->cg_ops->per_process || !s->cfg->pids_max)
                return;
        (void) reduced_count_tasks(s->drop_to_nobody ? REDUCED_NOBODY_UID : getuid(), &tasks);
        s->cg_spec.pids_max += tasks;
}

/* No pid namespace hides nsbox from the program, which (an unprivileged
 * caller's) has nsbox's uid: not dumpable, its /proc/<pid>/{mem,environ,fd}
 * are root's and ptrace is refused, also on a kernel without Landlock to
 * scope them. After the clone: the init's own step does the same for it,
 * and nsbox never needs its own /proc files opened by anyone else. */
static int reduced_after_clone(struct sbx *s, struct nsb_error *e)
{
        struct wire_msg go;

        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "PR_SET_DUMPABLE (nsbox, reduced isolation)");
        sbx_ledger_walls(s, "disabled");
        /* No id maps to write, but the init waits for "go" all the same:
         * the tree's clock (cg_ops.attach, just done) must be on it before
         * it makes itself not dumpable and forks the program, or the
         * program's tree has no clock (1 run in 3 missed it). */
        memset(&go, 0, sizeof go);
        go.version = WIRE_VERSION;
        /* An init that failed a step before it waits has gone: its ERROR
         * record, read by the supervision, is the result's, not this. */
        if (send(s->sock[0], &go, sizeof go, MSG_NOSIGNAL) < 0 && errno != EPIPE && errno != ECONNRESET &&
            errno != ECONNREFUSED)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "release the sandbox init (reduced isolation)");
        return 0;
}

static void reduced_mode_cleanup(struct sbx *s)
{
        reduced_argv_free(s->red_argv);
        s->red_argv = NULL;
        reduced_cleanup(&s->red);
}

/* No namespace kills the program's process group: SIGTERM makes the init
 * kill it (the group cannot be left) and exit. Only the init, which has not
 * reaped the program, may name that group, so cleanup gives it the time. */
static const struct sbx_mode reduced_mode = {
        .name = "reduced",
        .check = reduced_mode_check,
        .plan = reduced_mode_plan,
        .cg_spec_adjust = reduced_cg_spec_adjust,
        .no_namespaces = true,
        .clone_flags = 0,
        .clone_what = "reduced isolation, no namespaces",
        .init_steps = child_reduced_init_steps,
        .n_init_steps = &child_reduced_init_n_steps,
        .after_clone = reduced_after_clone,
        .stop_signal = SIGTERM,
        .stop_waits = true,
        .cleanup = reduced_mode_cleanup,
};

const struct sbx_mode *sbx_mode_for(enum nsb_isolation isolation, enum sbx_start start)
{
        if (isolation == NSB_ISOLATION_REDUCED)
                return &reduced_mode;   /* the callers never ask it warm (warm/warm_pool.h) */
        switch (start) {
        case SBX_ZYGOTE:
                return &sbx_zygote_mode;
        case SBX_WARM:
                return &sbx_warm_job_mode;
        default:
                return &strict_mode;
        }
}

void sbx_ucount_share(const struct sbx *s, struct ucount_share *ret)
{
        struct ucount_budget b;

        /* The zygote creates each job's user namespace: its rlimits are
         * the parent-level maximum of every job it serves at once, so it
         * keeps the caller's whole budget, and its namespace's max_* (it
         * must still make user, pid, mount, ... namespaces). */
        if (s->req->start == SBX_ZYGOTE) {
                ucount_plan_zygote(ret);
                return;
        }
        ucount_budget_read(&b);
        /* --pids: each of its tasks can add standard signals past the share */
        ucount_plan_sandbox(&b, s->cfg->jobs ? s->cfg->jobs : 1, s->cfg->pids_max, ret);
}
