/* supervisor/sbx_warm.c — the two warm modes (struct sbx_mode): the zygote's
 * sandbox, and a job forked from it. Everything else of a run — plans,
 * cgroup, filter, fds, supervision, accounting, cleanup — is sandbox.c's,
 * the same as a cold run's (docs/warm-start.md).
 */
#include "supervisor/sbx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "profile/profile.h"
#include "supervisor/run_io.h"
#include "util/cleanup.h"
#include "util/readfile.h"
#include "util/sys.h"
#include "supervisor/warm_spec.h"

#include "nsbox-config.h"

/* How long a job waits for its zygote to fork it: the zygote forks one job
 * at a time, in about a millisecond; this is for a zygote that hangs. */
#define SPAWN_TIMEOUT_MS 30000

/* ---- the zygote's sandbox: a cold strict sandbox whose program is the zygote */

static int zygote_plan(struct sbx *s, struct nsb_error *e)
{
        int r;

        if (!s->req->warm_lib)
                return nsb_fail(e, NSB_STAGE_PREPARE, EINVAL, "no warm library for the zygote");
        /* nsbox's code for the zygote: its directory is the runner directory
         * (read-only at WARM_ZYGOTE_CODE_DIR, under /program, which each job
         * covers), its shared libraries at their host paths, as the
         * interpreter's are; not its own host path (no job may learn where
         * nsbox lives on the host). */
        if ((r = profile_add_libraries_of(&s->host, s->req->warm_lib, e)) < 0)
                return r;
        return sbx_strict_plan(s, e);
}

/* The id a root caller's sandbox runs as on the host (ns.h), when it is not
 * ours: the zygote, which clones each job's init into its cgroup, needs
 * write access to cgroup.procs where a user's zygote has it by ownership. */
static uid_t sandbox_owner(const struct sbx *s)
{
        return s->idmap.host_uid != geteuid() ? s->idmap.host_uid : (uid_t) -1;
}

static gid_t sandbox_group(const struct sbx *s)
{
        return s->idmap.host_uid != geteuid() ? s->idmap.host_gid : (gid_t) -1;
}

/* cgroup v2: the zygote's run cgroup becomes its generation's parent (#28).
 * clone3 put the init there with a new cgroup namespace, which the kernel
 * rooted at it (cgroup_post_fork); the init is moved into a leaf below it,
 * and every job's cgroup is made beside that leaf (cg_spec.in_run). So both
 * lie inside the zygote's cgroup namespace, as nsdelegate requires of a
 * CLONE_INTO_CGROUP caller, and the zygote clones each job's init straight
 * into its cgroup: no job writes cgroup.procs (a write takes
 * cgroup_threadgroup_rwsem for writing, an RCU grace period of ~15 ms when
 * writes are sparse). Best effort: when this fails, nothing is claimed; the
 * jobs' cgroups go into the base and their inits join by fd, as before. */
static int zygote_after_clone(struct sbx *s, struct nsb_error *e)
{
        struct nsb_error ignored;

        if (s->cg_created && s->cg_ops->make_parent)
                (void) s->cg_ops->make_parent(&s->cg_run, s->pid, sandbox_owner(s), sandbox_group(s), &ignored);
        return sbx_strict_after_clone(s, e);
}

const struct sbx_mode sbx_zygote_mode = {
        .name = "zygote",
        .command_outside_reserved = true,
        .plan = zygote_plan,
        .cg_late_ok = true,
        .clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                       CLONE_NEWCGROUP,
        .clone_what = "the warm sandbox: new user, mount, pid, net, ipc, uts and cgroup namespaces",
        .init_steps = child_zygote_init_steps,
        .n_init_steps = &child_zygote_init_n_steps,
        .after_clone = zygote_after_clone,
        .tree_holds_other_runs = true,  /* its jobs' inits are its children */
        .stop_signal = SIGKILL,
        .explain_refusal = true,
};

/* ---- a warm job ------------------------------------------------------------ */

/* The cold plan without the host files (the zygote's tree holds them; the
 * Landlock rules come from what the program may write, the same paths as a
 * cold run's), and the job init's own mounts. */
static int warm_job_plan(struct sbx *s, struct nsb_error *e)
{
        struct mnt_input in;
        int r = sbx_strict_plan(s, e);

        if (r < 0)
                return r;
        in = sbx_mount_input(s);
        /* The zygote's tree holds the interpreter's closure (the job's own
         * host set stays empty): the job's fresh /tmp carries over what of
         * it lies there (a venv in /tmp), as the zygote's did. */
        if (!s->host.n && s->req->python_host)
                in.host = s->req->python_host;
        return mnt_plan_build_warm_job(&in, &s->job_mounts, e);
}

/* v2: the job's cgroup in its generation's, when that is ready (else in the
 * base, as before: v2_create decides, and says so in cg_run.in_run). */
static void warm_job_cg_spec_adjust(struct sbx *s)
{
        s->cg_spec.in_run = s->req->warm_cgroup;
        s->cg_spec.procs_owner = sandbox_owner(s);
        s->cg_spec.procs_group = sandbox_group(s);
}

/* The job's init joins its cgroup through fds sent after it started (v1's
 * "tasks", v2's cgroup.procs), unless the zygote cloned it into its v2
 * cgroup (s->cg_born); the rlimit backend's limits are its own. */
static bool joins_by_fd(const struct sbx *s)
{
        return s->cg_backend != CG_BACKEND_RLIMIT;
}

/* The job's spec in a sealed memfd: the zygote maps it, Python never sees it. */
static int spec_memfd(struct sbx *s, const struct child_ctx *c, int *ret, struct nsb_error *e)
{
        const struct nsb_config *cfg = s->cfg;
        struct warm_limits lim = {
                .wall_time_ms = cfg->wall_time_ms,
                .cpu_time_ms = cfg->cpu_time_ms,
                .memory_bytes = cfg->memory_bytes,
                .pids_max = cfg->pids_max,
                .file_size_bytes = cfg->file_size_bytes,
                .backend = (int32_t) s->cg_backend,
                .rlimit_cpu = s->cg_ops->per_process,
                .join_late = joins_by_fd(s),
                .fail_stage = c->fail_stage,
                .ucounts = c->ucounts,
                .cg_memory_bytes = s->cg_spec.memory_bytes,
                .cg_pids_max = s->cg_spec.pids_max,
        };
        AUTOFREE char *buf = NULL;
        char path[4096];
        size_t len = 0, script = 0;
        int fd, r;

        /* The program's path in the argv: what comes before it is the
         * interpreter and its arguments, the zygote's own. */
        if (s->req->script)
                snprintf(path, sizeof path, "%s", s->req->script);
        else
                snprintf(path, sizeof path, "/program/%s", s->req->program_name ? s->req->program_name : "");
        for (script = 1; script < s->req->argc && strcmp(s->argv[script], path) != 0; script++)
                ;
        if ((r = warm_spec_encode(&lim, &s->filter, &s->landlock, &s->job_mounts, s->argv, s->req->argc, script, &buf,
                                  &len, e)) < 0)
                return r;
        fd = memfd_create("nsbox-warm-job", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "memfd for the warm job spec");
        if ((r = write_all(fd, buf, len)) < 0 ||
            (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 && (r = -errno))) {
                close(fd);
                return nsb_fail(e, NSB_STAGE_PREPARE, -r, "write the warm job spec");
        }
        *ret = fd;
        return 0;
}

/* The job init's pid in our pid namespace (the rlimit backend reads its
 * tree in /proc). */
static pid_t pidfd_pid(int pidfd)
{
        char path[64], buf[512];
        AUTOCLOSE int fd = -1;
        ssize_t n;
        char *p;

        snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || (n = read(fd, buf, sizeof buf - 1)) <= 0)
                return -1;
        buf[n] = '\0';
        p = strstr(buf, "\nPid:");
        return p ? (pid_t) strtol(p + 5, NULL, 10) : -1;
}

/* Wait for the zygote's SPAWNED (the job init's pidfd); records the job
 * init sends before it are handled as the supervision loop would. */
static int await_spawned(struct sbx *s, struct nsb_error *e)
{
        for (;;) {
                struct pollfd p[2] = { { s->sock[0], POLLIN, 0 }, { s->req->cancel_fd, POLLIN, 0 } };
                struct wire_msg m;
                int fds[WIRE_MAX_FDS];
                size_t n_fds = 0;
                ssize_t k;
                int r = poll(p, s->req->cancel_fd >= 0 ? 2 : 1, SPAWN_TIMEOUT_MS);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_CLONE, errno, "poll");
                if (r == 0)
                        return nsb_fail(e, NSB_STAGE_CLONE, ETIMEDOUT,
                                        "the zygote did not start the job within %d s", SPAWN_TIMEOUT_MS / 1000);
                if (s->req->cancel_fd >= 0 && (p[1].revents & POLLIN)) {
                        s->obs.killed = KILL_CANCEL;
                        return nsb_fail(e, NSB_STAGE_CLONE, ECANCELED, "cancelled before the zygote started the job");
                }
                k = wire_recv_fds(s->sock[0], &m, fds, WIRE_MAX_FDS, &n_fds);
                if (k == 0 || (k < 0 && k != -EPROTO && k != -EAGAIN)) {
                        if (s->obs.setup_error)
                                return -EPROTO;   /* the zygote's or the init's error is the result's */
                        /* Gone before the job's program existed: nothing of it ran. */
                        s->warm_not_taken = !s->obs.program_started;
                        return nsb_fail(e, NSB_STAGE_CLONE, k == 0 ? EPIPE : (int) -k,
                                        "the zygote ended before it started the job (its generation died)");
                }
                if (k == (ssize_t) sizeof m && m.version == WIRE_VERSION && m.kind == WIRE_SPAWNED && n_fds == 1) {
                        s->pidfd = fds[0];
                        s->pid = pidfd_pid(s->pidfd);
                        s->cg_born = m.born_in_cgroup == 1 && s->cg_run.in_run;
                        return 0;
                }
                for (size_t i = 0; i < n_fds; i++)
                        close(fds[i]);
                if (k > 0)
                        sbx_handle_msg(s, &m, k);
        }
}

/* The fd the zygote clones the job's init into: the job's cgroup (v2,
 * inside its generation's), or -1. A build with test hooks sends a
 * directory that is no cgroup instead when NSBOX_TEST_WARM_CGROUP_REFUSED
 * is set, so that the kernel refuses the clone (EBADF) and the fallback
 * (the zygote clones as before, the init joins by fd) is what runs: the vm
 * suite checks the job still gets its cgroup, its limits and its own
 * cgroup namespace that way. */
static int clone_into_fd(struct sbx *s)
{
        if (!s->cg_run.in_run || s->cg_run.clone_fd < 0)
                return -1;
#if NSBOX_TEST_HOOKS
        if (getenv("NSBOX_TEST_WARM_CGROUP_REFUSED")) {
                int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

                if (fd >= 0) {
                        close_fd(&s->cg_run.clone_fd);
                        s->cg_run.clone_fd = fd;
                }
        }
#endif
        return s->cg_run.clone_fd;
}

static int warm_spawn(struct sbx *s, struct child_ctx *c, struct nsb_error *e)
{
        struct wire_msg m;
        struct nsb_error cg_e;
        int spec = -1, r, cg_r = 0;

        if ((r = spec_memfd(s, c, &spec, e)) < 0)
                return r;
        {
                /* v2, the job's cgroup in the generation's: its directory
                 * too, for the zygote's CLONE_INTO_CGROUP. O_PATH, but a
                 * directory fd still opens the files beneath it (openat):
                 * the zygote, nsbox's own code, closes it after the clone,
                 * and the job's init never holds it. */
                int fds[6] = { s->sock[1], s->stdin_fd, s->out[1], s->err[1], spec, clone_into_fd(s) };
                size_t n = fds[5] >= 0 ? 6 : 5;

                memset(&m, 0, sizeof m);
                m.version = WIRE_VERSION;
                m.kind = WIRE_JOB;
                clock_gettime(CLOCK_MONOTONIC, &s->start);
                r = wire_send_fds(s->req->warm_ctl, &m, fds, n);
        }
        close(spec);
        close_fd(&s->cg_run.clone_fd);   /* the zygote's now; ours is dir_fds[0] */
        /* The zygote holds them now (in flight or received); ours go, so an
         * ending job's EOFs reach us as a cold run's do. */
        close_fd(&s->sock[1]);
        close_fd(&s->out[1]);
        close_fd(&s->err[1]);
        close_fd(&s->stdin_fd);
        if (r < 0) {
                s->warm_not_taken = true;
                return nsb_fail(e, NSB_STAGE_CLONE, -r, "send the job to the zygote (its generation died)");
        }
        /* v1: the job's cgroups are made while the zygote clones its init
         * (they need no pid; #28: off the job's critical path, where they
         * were made after SPAWNED); a failure is reported once the init's
         * pidfd is ours, so that the run's cleanup ends it. */
        if (s->cg_late) {
                s->cg_late = false;
                cg_r = sbx_create_cgroup(s, &cg_e);
        }
        if ((r = await_spawned(s, e)) < 0)
                return r;
        if (cg_r < 0) {
                *e = cg_e;
                return cg_r;
        }
        return s->mode->after_clone(s, e);
}

/* A process's VmRSS, in bytes (0 when it cannot be read). Read from the
 * job's init before "go": a fresh copy of the zygote, every resident page
 * of it shared with the zygote (the per-process backend's sums leave them
 * out: cg_run.shared_at_birth). */
static uint64_t resident_bytes(pid_t pid)
{
        char path[64], buf[4096];
        uint64_t kb;
        ssize_t n;
        int fd;

        snprintf(path, sizeof path, "/proc/%d/status", (int) pid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                return 0;
        n = read(fd, buf, sizeof buf);
        close(fd);
        if (n <= 0 || proc_parse_status_kb(buf, (size_t) n, "VmRSS", &kb) < 0)
                return 0;
        return kb * 1024;
}

/* The job init maps its own ids; it waits for its cgroup's join fds, when
 * the backend has any and the zygote did not clone it into its cgroup
 * (s->cg_born), then for "go" before it forks the job: a backend
 * without a group clock opens the tree's own on it first (cg_ops.attach:
 * the rlimit backend's inherited perf task-clock, the only count of
 * children reaped unwaited between two looks; the zygote cloned the init
 * without waiting, so this is the moment before the job exists). We hold
 * every capability of the job's user namespace (nested in the zygote's,
 * which is ours), so its not being dumpable does not stop the attach. */
static int warm_job_after_spawn(struct sbx *s, struct nsb_error *e)
{
        struct wire_msg go;
        int r = 0;

        sbx_ledger_walls(s, "enforced");
        if (s->cg_late)
                r = sbx_create_cgroup_late(s, e);
        else if (joins_by_fd(s) && !s->cg_born)
                r = sbx_send_cgroup_fds(s, e);
        if (r < 0)
                return r;
        if (s->cg_created && s->cg_ops->attach && s->pid > 0)
                s->cg_ops->attach(&s->cg_run, s->pid);
        if (s->cg_ops->per_process && s->pid > 0)
                s->cg_run.shared_at_birth = resident_bytes(s->pid);
        memset(&go, 0, sizeof go);
        go.version = WIRE_VERSION;
        /* An init that failed a step before it waits has gone: its ERROR
         * record, read by the supervision, is the result's, not this. */
        if (send(s->sock[0], &go, sizeof go, MSG_NOSIGNAL) < 0 && errno != EPIPE && errno != ECONNRESET &&
            errno != ECONNREFUSED)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "release the warm job's init");
        return 0;
}

const struct sbx_mode sbx_warm_job_mode = {
        .name = "warm",
        .command_outside_reserved = true,
        .plan = warm_job_plan,
        .cg_spec_adjust = warm_job_cg_spec_adjust,
        .cg_late_ok = true,
        .cg_join_by_fd = true,
        .clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP,
        .clone_what = "a warm job: new user, mount, pid, ipc, uts and cgroup namespaces from the zygote",
        .spawn = warm_spawn,
        .tree_is_built = true,
        .init_not_ours = true,
        .after_clone = warm_job_after_spawn,
        .stop_signal = SIGKILL,
};
