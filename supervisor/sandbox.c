/* supervisor/sandbox.c — one run, from plans to result.
 *
 * Order (why, at each step below):
 *   plans (pure) -> cgroup (limits exist before the program does; v1's are
 *   made just after clone3, while the init builds its tree) -> fds ->
 *   clone3 into new namespaces [-> CLONE_INTO_CGROUP on v2] -> id maps ->
 *   "go" -> supervise (poll: socket, pidfd, pipes, timers, cancel) ->
 *   kill what is left -> accounting -> remove the cgroup -> result.
 * The supervisor is single-threaded: no thread may exist next to clone().
 */
#include "supervisor/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/hints.h"
#include "cgroup/cgroup.h"
#include "config/policy.h"
#include "doctor/doctor.h"
#include "supervisor/stdin_pump.h"
#include "landlock/landlock.h"
#include "image/image.h"
#include "mount/mnt.h"
#include "ns/ns.h"
#include "platform/platform.h"
#include "profile/profile.h"
#include "seccomp/filter.h"
#include "supervisor/capture.h"
#include "supervisor/child.h"
#include "supervisor/env_plan.h"
#include "supervisor/fetch_plan.h"
#include "supervisor/outcome.h"
#include "supervisor/sbx_internal.h"
#include "supervisor/run_io.h"
#include "supervisor/wire.h"
#include "util/cleanup.h"
#include "util/exitcode.h"
#include "util/readfile.h"
#include "util/sys.h"

#include "nsbox-config.h"

#define DRAIN_AFTER_EXIT_MS 2000

/* ---- plans --------------------------------------------------------------- */

/* The command could not be run (timeout(1)'s rule): 127 when it does not
 * exist, 126 when it exists but cannot be executed (no x bit, a directory,
 * not an executable format); 0 for any other errno (ENOMEM: not its fault). */
static int command_exit_of(int err)
{
        switch (err) {
        case ENOENT:
                return NSB_EXIT_NOT_FOUND;
        case EACCES: case EPERM: case EISDIR: case ENOTDIR: case ENOEXEC: case ELOOP: case ETXTBSY:
        case ENAMETOOLONG: case E2BIG: case ELIBBAD:
                return NSB_EXIT_NOT_EXECUTABLE;
        default:
                return 0;
        }
}

/* A failure to find or open the command: stage exec, as its execve failing
 * inside would be, and its 126/127. */
static int command_failed(struct sbx *s, int r, struct nsb_error *e)
{
        s->res->command_exit = command_exit_of(-r);
        if (s->res->command_exit)
                e->stage = NSB_STAGE_EXEC;
        return r;
}

/* --image (docs/images.md): the root's entries instead of the host's, and
 * for `run` the command found on the image's PATH, inside the image. */
static int image_tree(struct sbx *s, const char *command, struct nsb_error *e)
{
        const struct nsb_config *cfg = s->cfg;
        struct img_root root = { .ref = cfg->image, .rootfs = cfg->image_rootfs, .env = cfg->image_env,
                                 .n_env = cfg->n_image_env, .lock_fd = -1 };
        int r = img_host_set(&root, &s->host, e);

        if (r == 0 && command)
                r = img_which(&root, command, img_env_path(&root), &s->exec_path, e);
        return r;
}

static int plan_all(struct sbx *s, struct nsb_error *e)
{
        const struct sbx_request *req = s->req;
        const struct nsb_config *cfg = s->cfg;
        int r;

        if (req->argc == 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "empty command");
        if ((r = run_check_dir("--workspace", cfg->workspace, e)) < 0 ||
            (r = run_check_dir("--harness", cfg->harness, e)) < 0)
                return r;
        /* A missing bind source is named with its flag, not as a failed
         * mount step (a profile's sources were checked with their line). */
        for (size_t i = 0; i < cfg->n_binds; i++) {
                struct stat st;
                if (stat(cfg->binds[i].src, &st) < 0)
                        return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s '%s'",
                                        cfg->binds[i].read_only ? "--ro-bind" : "--bind", cfg->binds[i].src);
        }
        if (s->mode->check && (r = s->mode->check(s, e)) < 0)
                return r;
        if (req->python) {
                const char *interp = cfg_interpreter(cfg);

                /* The parsers refuse it first; this catches a limit from a
                 * profile that a spec file names: never a run that cannot start. */
                if ((r = cfg_check_python_memory(cfg->memory_bytes, e)) < 0) {
                        e->stage = NSB_STAGE_CONFIG;
                        return r;
                }
                /* The caller may have resolved the interpreter once for
                 * many runs: start from its copy. A built tree has them.
                 * An image's root is the image's files, and nothing else. */
                r = cfg->image_rootfs      ? image_tree(s, NULL, e)
                    : s->mode->tree_is_built ? 0
                    : req->python_host     ? host_set_add_all(&s->host, req->python_host, e)
                                           : profile_add_python(&s->host, interp, NULL, e);
                if (r < 0)
                        return r;
                /* A venv's pyvenv.cfg, and the package dirs the profile names:
                 * nothing else of site-packages is visible. */
                if (!s->mode->tree_is_built && !cfg->image_rootfs)
                        r = profile_add_python_extras(&s->host, interp, cfg->packages, cfg->n_packages, e);
                if (r < 0)
                        return r;
                /* The host path of the interpreter exists inside too (its
                 * symlinks are mirrored), so CPython finds its prefix. */
                if (!(s->exec_path = strdup(interp)))
                        return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        } else if (cfg->image_rootfs) {
                if ((r = image_tree(s, req->argv[0], e)) < 0)
                        return command_failed(s, r, e);
        } else {
                const char *path = getenv("PATH");
                r = profile_which(req->argv[0], path ? path : "/usr/local/bin:/usr/bin:/bin", &s->exec_path, e);
                if (r < 0)
                        return command_failed(s, r, e);
                if (s->mode->command_outside_reserved && path_is_reserved(s->exec_path))
                        return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL,
                                        "command '%s' lies under a path the sandbox owns (/tmp, /workspace, "
                                        "/proc, /dev, ...); run it from another directory",
                                        s->exec_path);
                /* a script brings its #! interpreter (and env's target); a
                 * python interpreter its standard library */
                r = profile_add_command(&s->host, s->exec_path, SBX_PROGRAM_PATH, e);
                if (r < 0)
                        return command_failed(s, r, e);
                /* --package / packages under run: mounted all the same */
                r = profile_add_python_extras(&s->host, NULL, cfg->packages, cfg->n_packages, e);
                if (r < 0)
                        return r;
        }
        return s->mode->plan(s, e);
}

/* After setup_cgroup: which backend holds the memory limit shapes the filter. */
static int compile_filter(struct sbx *s, struct nsb_error *e)
{
        const struct nsb_config *cfg = s->cfg;
        struct filter_spec fspec = {
                .allow_inet = cfg->network == NSB_NETWORK_LOOPBACK,
                .reduced = s->mode->no_namespaces,
                .rlimit_memory = s->cg_ops->per_process,
                .extra_deny = cfg->seccomp_deny,
                .n_extra_deny = cfg->n_seccomp_deny,
        };

        return filter_compile(&fspec, &s->filter, e);
}

/* ---- cgroup -------------------------------------------------------------- */

int sbx_create_cgroup(struct sbx *s, struct nsb_error *e)
{
        int r = s->cg_ops->create(&s->cg_env, &s->cg_facts, &s->cg_spec, &s->cg_run, e);

        if (r < 0)
                return r;
        s->cg_created = true;
        return 0;
}

int sbx_obtain_cgroup(const struct nsb_config *cfg, struct cg_obtained *ret, struct nsb_error *e)
{
        struct cg_env env = { .proc_fd = -1, .sys_cgroup_fd = -1, .parent_path = cfg->cgroup_parent };
        struct cg_facts *f = calloc(1, sizeof *f);
        int r;

        if (!f)
                return nsb_fail(e, NSB_STAGE_CGROUP, ENOMEM, "cgroup facts");
        env.proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        env.sys_cgroup_fd = open("/sys/fs/cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = env.proc_fd < 0 ? nsb_fail(e, NSB_STAGE_CGROUP, errno, "open /proc")
                            : cg_obtain(&env, true, f, ret, e);
        close_fd(&env.proc_fd);
        close_fd(&env.sys_cgroup_fd);
        free(f);
        return r;
}

/* What the first run of this process found (a batch worker runs its
 * slot's jobs one after another, a judge its cases): the host's cgroup
 * facts and the backend, and the stale groups reaped then. A later run of
 * the same process with the same --cgroup-parent starts from them instead
 * of reading /proc/self/cgroup, mountinfo and the hierarchies again and
 * listing every parent directory (about 70 system calls a run; #28). A
 * forked child finds its parent's entry and makes its own (the pid). */
static struct {
        pid_t pid;                      /* 0: nothing known */
        char *parent;                   /* the --cgroup-parent it was found for (NULL: none) */
        struct cg_facts facts;
        enum cg_backend backend;
} cg_known;

static bool cg_known_for(const struct nsb_config *cfg)
{
        const char *p = cfg->cgroup_parent;

        return cg_known.pid == getpid() &&
               (p ? cg_known.parent && strcmp(p, cg_known.parent) == 0 : !cg_known.parent);
}

static void cg_remember(const struct nsb_config *cfg, const struct cg_facts *f, enum cg_backend b)
{
        char *parent = cfg->cgroup_parent ? strdup(cfg->cgroup_parent) : NULL;

        if (cfg->cgroup_parent && !parent)
                return;   /* not remembered: the next run finds them again */
        if (cg_known.pid == getpid())
                free(cg_known.parent);   /* (a parent's copy is its own: never freed here) */
        cg_known.pid = getpid();
        cg_known.parent = parent;
        cg_known.facts = *f;
        cg_known.backend = b;
}

static int setup_cgroup(struct sbx *s, struct nsb_error *e)
{
        struct cg_obtained obtained;
        enum cg_backend b;
        bool known;
        int r;

        s->cg_env.proc_fd = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        s->cg_env.sys_cgroup_fd = open("/sys/fs/cgroup", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (s->cg_env.proc_fd < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "open /proc");
        s->cg_env.parent_path = s->cfg->cgroup_parent;
        known = cg_known_for(s->cfg);
        if (known) {
                s->cg_facts = cg_known.facts;
                b = cg_known.backend;
        } else {
                /* Once per process in effect: after the first run's request, our
                 * scope (or its leaf) is found usable and systemd is not asked again. */
                r = cg_obtain(&s->cg_env, true, &s->cg_facts, &obtained, e);
                if (r < 0)
                        return r;
                b = obtained.backend;
        }
#if NSBOX_BENCH_HOOKS
        /* Bench-only builds (-Dbench_hooks=true): the same run with its limits
         * held by rlimits, to measure what the cgroup costs. The ledger then
         * says "rlimit", as for any rlimit run. */
        {
                const char *force = getenv("NSBOX_BENCH_CG_BACKEND");
                if (force && strcmp(force, "rlimit") == 0)
                        b = CG_BACKEND_RLIMIT;
        }
#endif
        s->cg_ops = cg_ops_for(b);
        s->cg_backend = b;
        if (!s->cg_ops)
                return nsb_fail(e, NSB_STAGE_CGROUP, ENOTSUP, "no mechanism can enforce the memory and pids limits: %s",
                                s->cg_facts.reason);
        if (!known) {
                (void) cg_reap_stale(&s->cg_env, &s->cg_facts);
                cg_remember(s->cfg, &s->cg_facts, b);
        }
        s->cg_spec.memory_bytes = s->cfg->memory_bytes;
        /* --pids counts the program's tasks; the init (nsbox's own, one
         * thread) is one task of the run's cgroup and of its uid too. */
        s->cg_spec.pids_max = s->cfg->pids_max + 1;
        if (s->mode->cg_spec_adjust)
                s->mode->cg_spec_adjust(s);
        s->cg_spec.serial = s->req->serial;
        s->cg_spec.join_by_fd = s->mode->cg_join_by_fd;
        cg_run_init(&s->cg_run);
        /* v1 cgroups are joined by the child through fds, so they can be made
         * while the child builds its file tree (~0.3 ms of mkdir and writes
         * off the critical path); see create_cgroup_late(). v2 needs the
         * cgroup before clone3 (CLONE_INTO_CGROUP); rlimit makes nothing. */
        if (b == CG_BACKEND_V1 && s->mode->cg_late_ok) {
                s->cg_late = true;
                return 0;
        }
        return sbx_create_cgroup(s, e);
}

/* v1, after clone3 and "go": make the cgroups, then hand the child the fds
 * it joins through, just before it forks the program. */
int sbx_create_cgroup_late(struct sbx *s, struct nsb_error *e)
{
        int r = sbx_create_cgroup(s, e);

        return r < 0 ? r : sbx_send_cgroup_fds(s, e);
}

int sbx_send_cgroup_fds(struct sbx *s, struct nsb_error *e)
{
        struct wire_msg m;
        int fds[WIRE_MAX_FDS];
        size_t n = 0;
        int r;

        _Static_assert(CG_RUN_DIRS <= WIRE_MAX_FDS, "a record carries every join fd");
        memset(&m, 0, sizeof m);
        m.version = WIRE_VERSION;
        m.kind = WIRE_CGROUP;
        for (size_t i = 0; i < CG_RUN_DIRS; i++)
                if (s->cg_run.join_fds[i] >= 0) {
                        m.slots |= 1u << i;
                        fds[n++] = s->cg_run.join_fds[i];
                }
        if (n == 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, EINVAL, "cgroup run %s has no join fd", s->cg_run.name);
        r = wire_send_fds(s->sock[0], &m, fds, n);
        /* A child that already failed has closed its end; its error record is
         * queued for supervise(), which reports it. */
        if (r < 0 && r != -EPIPE && r != -ECONNRESET)
                return nsb_fail(e, NSB_STAGE_CGROUP, -r, "send the cgroup fds to the sandbox init");
        return 0;
}

/* ---- fds ----------------------------------------------------------------- */

static int open_stdin(struct sbx *s, struct nsb_error *e)
{
        const struct sbx_request *req = s->req;

        /* Never a description the caller opened (stdin_plan.h): a run's
         * own bytes or a copied file in a sealed memfd, /dev/null anew, or
         * a pipe the supervisor feeds. */
        if (req->stdin_data)
                return stdin_memfd(req->stdin_data, req->stdin_len, &s->stdin_fd, e);
        return stdin_open(&s->pump, s->cfg, &s->stdin_fd, e);
}

/* A profile source, opened by a root supervisor: with root's reach, so no
 * symlink may be followed on the way (the profile's paths are symlink-free
 * by construction, profile/profile.h): one swapped into a directory a user
 * can write would otherwise hand the sandbox any host file. AT_RECURSIVE as
 * the init's own open (mount/mnt_apply.c). */
static int preopen_as_root(const char *src, struct nsb_error *e)
{
        AUTOCLOSE int fd = plat_open_no_symlinks(src, O_PATH | O_CLOEXEC, 0);
        int r;

        if (fd < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "open '%s'", src);
        r = sys_open_tree(fd, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "open '%s'", src);
        return r;
}

static int open_fds(struct sbx *s, struct nsb_error *e)
{
        int r;

        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s->sock) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "socketpair");
        if (pipe2(s->out, O_CLOEXEC) < 0 || pipe2(s->err, O_CLOEXEC) < 0)
                return nsb_fail(e, NSB_STAGE_PREPARE, errno, "pipe");
        r = open_stdin(s, e);
        if (r < 0)
                return r;
        s->slot_fds = malloc((s->mounts.n_slots + 1) * sizeof *s->slot_fds);
        if (!s->slot_fds)
                return nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
        for (unsigned i = 0; i < s->mounts.n_slots; i++)
                s->slot_fds[i] = -1;
        /* A built tree (a warm job's: its zygote's) mounts no source of the
         * plan: its init gets no slot. Opening them anyway cost a warm job
         * seven detached mount clones, each closed unused, and each close an
         * expedited RCU grace period (docs/performance.md, #28). */
        if (s->mode->tree_is_built)
                return 0;
        /* Root callers: open the user's sources here, with the caller's own
         * rights (the sandbox's host uid may not read them), idmapped so that
         * the sandbox user writes as the owner of each source. */
        for (size_t i = 0; i < s->mounts.n_ops; i++) {
                const struct mnt_op *op = &s->mounts.ops[i];
                if (op->kind != MNT_OPEN_TREE)
                        continue;
                /* The profile's host files (interpreter, libraries, stdlib,
                 * packages) are read-only and need no idmap, but a root
                 * caller's may lie under a directory only root can search
                 * (/root/.pyenv, a venv in a 0700 directory): the init, by
                 * then the mapped unprivileged uid, could not open them.
                 * Open them here, as the caller, like the zygote's code. */
                if (!s->mounts.slot_preopened[op->slot] && s->idmap.idmap_user_sources) {
                        r = preopen_as_root(op->src, e);
                        if (r < 0)
                                return r;
                        s->slot_fds[op->slot] = r;
                        continue;
                }
                if (!s->mounts.slot_preopened[op->slot])
                        continue;
                if (op->slot == s->mounts.plain_slot) {
                        r = sys_open_tree(AT_FDCWD, op->src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
                        if (r < 0)
                                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "open '%s'", op->src);
                        s->slot_fds[op->slot] = r;
                        continue;
                }
                r = ns_open_idmapped(op->src, &s->idmap, true, &s->slot_fds[op->slot], e);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- clone --------------------------------------------------------------- */

static int spawn(struct sbx *s, struct child_ctx *c, struct nsb_error *e)
{
        struct clone_args args;

        if (s->mode->spawn)
                return s->mode->spawn(s, c, e);
        memset(&args, 0, sizeof args);
        args.flags = s->mode->clone_flags | CLONE_PIDFD;
        args.pidfd = (uint64_t) (uintptr_t) &s->pidfd;
        args.exit_signal = SIGCHLD;
        if (s->cg_run.clone_fd >= 0) {
                /* cgroup v2: born inside its cgroup, never runs outside it. */
                args.flags |= CLONE_INTO_CGROUP;
                args.cgroup = (uint64_t) s->cg_run.clone_fd;
        }
        clock_gettime(CLOCK_MONOTONIC, &s->start);
        s->pid = sys_clone3(&args);
        if (s->pid < 0 && errno == ENOSYS && !(args.flags & CLONE_INTO_CGROUP))
                s->pid = sys_clone_legacy(args.flags | (unsigned long) args.exit_signal, &s->pidfd);
        if (s->pid < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "clone (%s)", s->mode->clone_what);
        if (s->pid == 0) {
                /* The init must hold no copy of the supervisor's end: if nsbox
                 * dies before the init has armed PR_SET_PDEATHSIG, that end's
                 * last close is how the init learns it (EOF on the "go" recv,
                 * POLLRDHUP after the prctl); a copy here would keep the socket
                 * open and the sandbox alive without its supervisor. */
                close(s->sock[0]);
                /* Nor the write end of a streamed stdin's pipe, nor the file
                 * it is read from (stdin_pump.h): the init outlives the
                 * program's reads, and while it held a copy the program
                 * never saw the end of its input. */
                stdin_pump_close(&s->pump);
                child_run_init(c, s->mode->init_steps, *s->mode->n_init_steps);   /* never returns */
        }
        /* The init waits for "go" (strict and reduced) and is still dumpable: a backend
         * without a group clock may open the tree's own now. */
        if (s->cg_created && s->cg_ops->attach && !s->mode->tree_holds_other_runs)
                s->cg_ops->attach(&s->cg_run, s->pid);
        close_fd(&s->sock[1]);
        close_fd(&s->out[1]);
        close_fd(&s->err[1]);
        close_fd(&s->stdin_fd);
        if (s->req->give_channel && s->req->channel_fd > 2)
                close(s->req->channel_fd);
        return s->mode->after_clone(s, e);
}

/* ---- supervision --------------------------------------------------------- */

static void arm_timer(int tfd, uint64_t ms)
{
        struct itimerspec its = { 0 };
        if (ms == 0)
                ms = 1;
        its.it_value.tv_sec = (time_t) (ms / 1000);
        its.it_value.tv_nsec = (long) (ms % 1000) * 1000000L;
        (void) timerfd_settime(tfd, 0, &its, NULL);
}

static void kill_tree(struct sbx *s, enum kill_reason why)
{
        struct nsb_error ignored;

        if (s->obs.killed == KILL_NONE)
                s->obs.killed = why;
        /* A backend without a group counter reads the tree while it exists
         * (cgroup.h: before_kill). */
        if (s->cg_ops && s->cg_ops->before_kill)
                s->cg_ops->before_kill(&s->cg_run, s->cg_env.proc_fd, s->pid);

        /* SIGKILL to the init ends the pid namespace: the kernel kills every
         * process in it. The cgroup kill catches anything that raced.
         * Without a pid namespace the mode's stop signal asks the init to
         * do it (sbx_modes.c). */
        if (s->pidfd >= 0)
                (void) sys_pidfd_send_signal(s->pidfd, s->mode->stop_signal);
        if (s->cg_created && s->cg_ops->kill_all)
                (void) s->cg_ops->kill_all(&s->cg_run, &ignored);
}

static int read_stream(struct sbx *s, int *fd, struct run_stream *st, int relay_fd)
{
        int r = run_read_stream(fd, st, s->cfg->output_limit_bytes, s->req->relay ? relay_fd : -1, s->res);

        if (r > 0)
                kill_tree(s, KILL_OUTPUT);
        return r < 0 ? r : 0;
}

/* After the program's start: looks 2 ms, then EARLY_LOOKS times every
 * EARLY_LOOK_MS, then every watch_period_ms (about 0.1 ms each). */
#define EARLY_LOOKS 4u
#define EARLY_LOOK_MS 4u

static void check_cpu(struct sbx *s)
{
        struct cg_usage u;
        struct nsb_error ignored;
        uint64_t limit_us = cfg_cpu_time_ms(s->cfg) * 1000;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

        if (s->cg_ops->watch) {
                /* No group limit to rely on: the backend watches the tree,
                 * its memory and its CPU time (each process's rlimits hold
                 * it meanwhile). */
                struct cg_watch_limits lim = {
                        .memory_bytes = s->cfg->memory_bytes,
                        .cpu_usec = s->mode->tree_holds_other_runs ? 0 : limit_us,
                };
                unsigned over = s->cg_ops->watch(&s->cg_run, s->cg_env.proc_fd, s->pid, &lim);

                if (over & CG_WATCH_CPU)
                        s->obs.cpu_over = true;
                if (over & CG_WATCH_MEMORY)
                        kill_tree(s, KILL_MEMORY);
                else if (over & CG_WATCH_CPU)
                        kill_tree(s, KILL_CPU_TIME);
                else if (s->early_looks > 0) {
                        s->early_looks--;
                        arm_timer(s->cpu_tfd, EARLY_LOOK_MS);
                } else  /* a costly look (a large tree) asks for a longer period */
                        arm_timer(s->cpu_tfd, s->cg_run.watch_next_ms ? s->cg_run.watch_next_ms
                                                                      : s->cg_ops->watch_period_ms);
                return;
        }
        if (!s->cg_created || s->cg_ops->read_usage(&s->cg_run, &u, &ignored) < 0 || !u.cpu_known)
                return;
        if (u.cpu_usec >= limit_us) {
                s->obs.cpu_over = true;
                kill_tree(s, KILL_CPU_TIME);
                return;
        }
        /* The soonest the limit can be reached is when every CPU runs the
         * tree; check again then (at least every 5 ms, at most 250 ms). */
        {
                uint64_t ms = (limit_us - u.cpu_usec) / 1000 / (uint64_t) (ncpu > 0 ? ncpu : 1);
                arm_timer(s->cpu_tfd, ms < 5 ? 5 : ms > 250 ? 250 : ms);
        }
}

void sbx_handle_msg(struct sbx *s, const struct wire_msg *m, ssize_t n)
{
        if (n != (ssize_t) sizeof *m || m->version != WIRE_VERSION) {
                struct nsb_error e;
                nsb_fail(&e, NSB_STAGE_SUPERVISE, EPROTO, "malformed record from the sandbox");
                run_take_error(s->res, &s->obs.setup_error, &e);
                return;
        }
        switch (m->kind) {
        case WIRE_READY:
                s->obs.program_started = true;
                run_take_ledger(s->res, &m->ledger);
                /* A watching backend looks now, while the init is known to
                 * be alive (its own size is what tells the job's peak from
                 * the copies of nsbox in the rusage: account()), then a few
                 * times at a short period from just after the program's
                 * execve, so a short program is seen. */
                if (s->cg_ops && s->cg_ops->watch && s->cg_created && s->cpu_tfd >= 0) {
                        check_cpu(s);
                        s->early_looks = EARLY_LOOKS;
                        if (s->obs.killed == KILL_NONE)
                                arm_timer(s->cpu_tfd, 2);
                }
                break;
        case WIRE_ERROR: {
                bool first = !s->obs.setup_error;

                run_take_error(s->res, &s->obs.setup_error, &m->error);
                /* After READY the only step left is execve: the command
                 * itself could not be run. */
                if (first && s->obs.program_started)
                        s->res->command_exit = command_exit_of(m->error.errnum);
                break;
        }
        case WIRE_EXIT:
                s->obs.got_exit = true;
                s->obs.wait_status = m->wait_status;
                s->prog_cpu_prof_ms = m->cpu_prof_ms;
                break;
        case WIRE_USAGE:
                s->res->cpu_ms = (double) m->cpu_us / 1e3;
                s->res->peak_memory_bytes = m->maxrss_kb * 1024;
                s->res->peak_memory_known = true;
                break;
        default:
                break;
        }
}

/* One recvmsg without blocking; a descriptor attached (a FILES record's
 * memfd) in *@ret_fd, -1 when none (more than one: all closed). */
static ssize_t recv_once(int fd, struct wire_msg *m, int *ret_fd)
{
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } ctl;
        struct iovec iov = { m, sizeof *m };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf };
        ssize_t k = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

        *ret_fd = -1;
        for (struct cmsghdr *cm = k >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm; cm = CMSG_NXTHDR(&mh, cm))
                if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                    cm->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(ret_fd, CMSG_DATA(cm), sizeof(int));
        return k;
}

/* One record, without blocking. An init that exits with a record of ours
 * still unread (the v1 cgroup fds, sent while it was failing) leaves
 * ECONNRESET pending on our end, and the kernel reports that error before the
 * records the init queued for us (__skb_try_recv_datagram checks sk_err
 * first): take the error, then read on, or its ERROR record would be lost. */
static ssize_t recv_record(int fd, struct wire_msg *m, int *ret_fd)
{
        ssize_t k = recv_once(fd, m, ret_fd);

        if (k < 0 && errno == ECONNRESET)
                k = recv_once(fd, m, ret_fd);
        return k;
}

/* A FILES record's memfd: the fetched files into the result (fetch_plan.h).
 * The plan that named them is the job init's (warm) or the run's. */
static void take_fetched(struct sbx *s, const struct wire_msg *m, ssize_t n, int fd)
{
        const struct mnt_plan *pl = s->job_mounts.n_fetch ? &s->job_mounts : &s->mounts;
        AUTOCLOSE int owned = fd;
        AUTOFREE char *buf = NULL;
        size_t len = 0;
        struct nsb_error e;
        json_t *o;

        if (fd < 0 || n != (ssize_t) sizeof *m || m->kind != WIRE_FILES || pl->n_fetch == 0 || s->res->fetched)
                return;
        if (lseek(fd, 0, SEEK_SET) < 0 ||
            read_fd(fd, "the fetched files", FETCH_TOTAL_MAX + pl->n_fetch * sizeof(struct fetch_head), &buf, &len,
                    &e) < 0)
                return;
        if (!(o = json_object()))
                return;
        if (fetch_render(buf, len, pl->fetch, pl->n_fetch, o, &e) < 0) {
                json_decref(o);
                return;
        }
        s->res->fetched = o;
}

/* The plan's fetch names, taken from it (cleanup frees the plans before
 * the outcome is decided, which fetched_or_why_not needs). */
static char **take_fetch_names(struct sbx *s, size_t *ret_n)
{
        struct mnt_plan *pl = s->job_mounts.n_fetch ? &s->job_mounts : &s->mounts;
        char **names = pl->fetch;

        *ret_n = pl->n_fetch;
        pl->fetch = NULL;
        pl->n_fetch = 0;
        return names;
}

/* Names to fetch and no record back from an init that was not stopped
 * with the job (it ran out of memory reading them: the workspace's tmpfs is
 * charged to the job): each name in files_refused with why, as for a name
 * the init refused, never silently absent. Frees @names. */
static void fetched_or_why_not(char **names, size_t n, struct run_result *ret)
{
        const char *why = n && !ret->fetched ? fetch_unread_reason(ret) : NULL;
        json_t *o = NULL;

        if (why && (o = json_object())) {
                if (fetch_render_unread(names, n, why, o) == 0)
                        ret->fetched = o;
                else
                        json_decref(o);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
}

static int supervise(struct sbx *s, struct nsb_error *e)
{
        bool init_alive = true;
        double drain_deadline = 0;
        int r;

        s->wall_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        s->cpu_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        if (s->wall_tfd < 0 || s->cpu_tfd < 0)
                return nsb_fail(e, NSB_STAGE_SUPERVISE, errno, "timerfd");
        arm_timer(s->wall_tfd, s->cfg->wall_time_ms);
        /* A streamed --stdin: its own process, so no read of the caller's
         * description can block this loop (stdin_pump.c). */
        if ((r = stdin_pump_start(&s->pump, e)) < 0)
                return r;
        /* a watching backend's first look after one period, so a short run pays none */
        arm_timer(s->cpu_tfd, s->cg_ops->watch ? s->cg_ops->watch_period_ms : 5);
        ledger_set(&s->res->ledger, PROT_WALL_TIME, "supervisor");
        ledger_set(&s->res->ledger, PROT_OUTPUT, "supervisor");

        while (init_alive || s->out[0] >= 0 || s->err[0] >= 0) {
                struct pollfd p[8];
                int n = 0, i_sock = -1, i_pid = -1, i_out = -1, i_err = -1, i_wall = -1, i_cpu = -1, i_cancel = -1;
                int timeout = -1;

                if (s->sock[0] >= 0)
                        p[i_sock = n++] = (struct pollfd){ s->sock[0], POLLIN, 0 };
                if (init_alive)
                        p[i_pid = n++] = (struct pollfd){ s->pidfd, POLLIN, 0 };
                if (s->out[0] >= 0)
                        p[i_out = n++] = (struct pollfd){ s->out[0], POLLIN, 0 };
                if (s->err[0] >= 0)
                        p[i_err = n++] = (struct pollfd){ s->err[0], POLLIN, 0 };
                if (init_alive) {
                        p[i_wall = n++] = (struct pollfd){ s->wall_tfd, POLLIN, 0 };
                        p[i_cpu = n++] = (struct pollfd){ s->cpu_tfd, POLLIN, 0 };
                        if (s->req->cancel_fd >= 0)
                                p[i_cancel = n++] = (struct pollfd){ s->req->cancel_fd, POLLIN, 0 };
                } else {
                        double left = drain_deadline - run_elapsed_ms(&s->start);
                        if (left <= 0)
                                break;   /* a writer outlived the namespace: stop waiting */
                        timeout = (int) left + 1;
                }
                r = poll(p, (nfds_t) n, timeout);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return nsb_fail(e, NSB_STAGE_SUPERVISE, errno, "poll");

                if (i_sock >= 0 && p[i_sock].revents) {
                        struct wire_msg m;
                        int fd;
                        ssize_t k = recv_record(s->sock[0], &m, &fd);
                        take_fetched(s, &m, k, fd);
                        if (k > 0)
                                sbx_handle_msg(s, &m, k);
                        else if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
                                close_fd(&s->sock[0]);
                }
                if (i_out >= 0 && p[i_out].revents && read_stream(s, &s->out[0], &s->res->out, STDOUT_FILENO) < 0)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "capturing stdout");
                if (i_err >= 0 && p[i_err].revents && read_stream(s, &s->err[0], &s->res->err, STDERR_FILENO) < 0)
                        return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "capturing stderr");
                if (i_wall >= 0 && p[i_wall].revents) {
                        uint64_t x;
                        (void) !read(s->wall_tfd, &x, sizeof x);
                        kill_tree(s, KILL_WALL_TIME);
                }
                if (i_cpu >= 0 && p[i_cpu].revents) {
                        uint64_t x;
                        (void) !read(s->cpu_tfd, &x, sizeof x);
                        check_cpu(s);
                }
                if (i_cancel >= 0 && p[i_cancel].revents)
                        kill_tree(s, KILL_CANCEL);
                if (i_pid >= 0 && p[i_pid].revents) {
                        init_alive = false;
                        stdin_pump_end(&s->pump);   /* nobody reads the input any more */
                        s->res->wall_ms = run_elapsed_ms(&s->start);
                        if (s->mode->init_not_ours) {
                                /* Reaped by its own parent; a report it did not
                                 * send means it was killed. */
                                s->obs.init_status = SIGKILL;
                                s->obs.warm = true;
                        } else {
                                struct rusage ru;
                                int status = 0;
                                pid_t w;
                                do
                                        w = wait4(s->pid, &status, 0, &ru);
                                while (w < 0 && errno == EINTR);
                                s->obs.init_status = status;
                                s->res->cpu_ms = (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
                                                 (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
                                s->res->peak_memory_bytes = (uint64_t) ru.ru_maxrss * 1024;
                                s->res->peak_memory_known = true;
                        }
                        drain_deadline = run_elapsed_ms(&s->start) + DRAIN_AFTER_EXIT_MS;
                        /* Records sent just before the exit are still queued. */
                        while (s->sock[0] >= 0) {
                                struct wire_msg m;
                                int fd;
                                ssize_t k = recv_record(s->sock[0], &m, &fd);
                                take_fetched(s, &m, k, fd);
                                if (k <= 0) {
                                        close_fd(&s->sock[0]);
                                        break;
                                }
                                sbx_handle_msg(s, &m, k);
                        }
                }
        }
        return 0;
}

/* Room for what the program touches between its fork and its execve
 * (nsbox's code: the filter, the rules, the stack), above the init's size. */
#define PRE_EXEC_SLACK_BYTES (2ull << 20)

/* Per-process backends: the peak is the job's own. The rusage's ru_maxrss
 * is the largest resident size of the init or of any process it waited for
 * over its whole life, and a process's life starts as a fork: the init is a
 * copy of the supervisor (which may be large: a batch worker that read a
 * big job), and the program a copy of the init until its execve. So the
 * rusage is taken only when it is above the init's own size (then some
 * process of the job reached it after its execve); otherwise the tree's
 * looks (the job's processes only) say. A warm job's processes never
 * exec: the job itself is a fork of the zygote's interpreter (its
 * rusage excludes the init), and counts as the job's, less the zygote's
 * pages it shared at its birth (cg_run.shared_at_birth). */
static void account_own_peak(struct sbx *s, const struct cg_usage *u)
{
        uint64_t rusage = s->res->peak_memory_known ? s->res->peak_memory_bytes : 0;

        if (!s->mode->init_not_ours && (u->init_hwm_bytes == 0 || rusage <= u->init_hwm_bytes + PRE_EXEC_SLACK_BYTES))
                rusage = 0;
        /* a warm job's resident size counts the zygote's pages it shares */
        rusage = rusage > s->cg_run.shared_at_birth ? rusage - s->cg_run.shared_at_birth : 0;
        s->res->peak_memory_bytes = rusage > u->tree_peak_bytes ? rusage : u->tree_peak_bytes;
        s->res->peak_memory_known = s->res->peak_memory_bytes > 0;
}

static void account(struct sbx *s)
{
        struct cg_usage u;
        struct nsb_error ignored;

        if (!s->cg_created || s->cg_ops->read_usage(&s->cg_run, &u, &ignored) < 0)
                return;
        if (u.cpu_known) {
                s->res->cpu_ms = (double) u.cpu_usec / 1e3;
                if (u.cpu_usec >= cfg_cpu_time_ms(s->cfg) * 1000)
                        s->obs.cpu_over = true;
        }
        if (u.peak_known) {
                s->res->peak_memory_bytes = u.peak_memory_bytes;
                s->res->peak_memory_known = true;
        }
        if ((double) u.tree_cpu_usec / 1e3 > s->res->cpu_ms)
                s->res->cpu_ms = (double) u.tree_cpu_usec / 1e3;
        if (s->cg_ops->per_process)
                account_own_peak(s, &u);
        else if (u.tree_peak_bytes > s->res->peak_memory_bytes)
                s->res->peak_memory_bytes = u.tree_peak_bytes;
        s->obs.oom_killed = u.oom_killed;
        s->obs.memory_limit_hit = u.memory_limit_hit;
        s->obs.pids_limit_hit = u.pids_limit_hit;
}

static void cleanup(struct sbx *s)
{
        if (s->pid > 0 && s->pidfd >= 0) {
                /* Never leave a sandbox behind, whatever happened above.
                 * A mode whose init kills the group itself gets the time to. */
                if (s->mode->stop_waits) {
                        struct pollfd p = { s->pidfd, POLLIN, 0 };
                        (void) sys_pidfd_send_signal(s->pidfd, s->mode->stop_signal);
                        while (poll(&p, 1, 2000) < 0 && errno == EINTR)
                                ;
                }
                (void) sys_pidfd_send_signal(s->pidfd, SIGKILL);
                if (s->mode->init_not_ours) {
                        /* its parent reaps it; its end is seen on the pidfd */
                        struct pollfd p = { s->pidfd, POLLIN, 0 };
                        while (poll(&p, 1, 5000) < 0 && errno == EINTR)
                                ;
                } else {
                        while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
                                ;
                }
        }
        if (s->cg_created) {
                struct nsb_error ignored;
                if (s->cg_ops->kill_all)
                        (void) s->cg_ops->kill_all(&s->cg_run, &ignored);
                s->cg_ops->destroy(&s->cg_run);
        }
        close_fd(&s->cg_env.proc_fd);
        close_fd(&s->cg_env.sys_cgroup_fd);
        close_fd(&s->sock[0]);
        close_fd(&s->sock[1]);
        close_fd(&s->out[0]);
        close_fd(&s->out[1]);
        close_fd(&s->err[0]);
        close_fd(&s->err[1]);
        close_fd(&s->stdin_fd);
        stdin_pump_end(&s->pump);
        close_fd(&s->pidfd);
        close_fd(&s->wall_tfd);
        close_fd(&s->cpu_tfd);
        if (s->slot_fds)
                for (unsigned i = 0; i < s->mounts.n_slots; i++)
                        close_fd(&s->slot_fds[i]);
        free(s->slot_fds);
        host_set_free(&s->host);
        mnt_plan_free(&s->mounts);
        free(s->ll_rules);
        mnt_plan_free(&s->job_mounts);
        env_free(s->envp);
        free(s->exec_path);
        filter_prog_free(&s->filter);
        if (s->mode->cleanup)
                s->mode->cleanup(s);   /* every process of the run is gone by now */
}

/* A strict run that could not use its new namespaces on a host where
 * AppArmor restricts them says so, and how to fix it, rather than leaving a
 * bare "sethostname: EPERM" or "mount: EPERM" (doctor/doctor.h). Read only on
 * failure: one sysctl, this binary's path, the profile file. */
static void explain_host_refusal(const struct sbx *s, struct run_result *ret)
{
        struct doc_aa aa;

        if (!s->mode->explain_refusal || ret->status != RUN_ERROR)
                return;
        doctor_aa_gather(doctor_proc_sys(), &aa);
        (void) doctor_aa_explain(&aa, &ret->error);
}

int sbx_run(const struct sbx_request *req, struct run_result *ret)
{
        struct sbx s = {
                .req = req, .cfg = req->cfg, .res = ret,
                .sock = { -1, -1 }, .out = { -1, -1 }, .err = { -1, -1 },
                .stdin_fd = -1, .pump = { .src = -1, .dst = -1 }, .pidfd = -1, .wall_tfd = -1, .cpu_tfd = -1,
        };
        struct child_ctx c;
        struct nsb_error *e = &ret->error;
        int fail_stage = run_test_fail_stage();
        int r;
        char **fetch;
        size_t n_fetch;

        memset(ret, 0, sizeof *ret);
        ret->isolation = req->cfg->isolation;
        ret->warm = req->start == SBX_WARM;
        s.mode = sbx_mode_for(req->cfg->isolation, req->start);
        s.argv = req->argv;
        cfg_policy_sha256(req->cfg, ret->policy_sha256);
        if (req->cfg->image_digest) {
                snprintf(ret->image_ref, sizeof ret->image_ref, "%s", req->cfg->image);
                snprintf(ret->image_digest, sizeof ret->image_digest, "%s", req->cfg->image_digest);
        }
        if (req->program_sha256)
                snprintf(ret->program_sha256, sizeof ret->program_sha256, "%s", req->program_sha256);
        ledger_init(&ret->ledger);
        cg_run_init(&s.cg_run);
        s.cg_env.proc_fd = s.cg_env.sys_cgroup_fd = -1;
        clock_gettime(CLOCK_MONOTONIC, &s.start);
        if (fail_stage == NSB_STAGE_CLONE && !(s.mode->clone_flags & CLONE_NEWUSER))
                fail_stage = 0;   /* the hook fakes a host without user namespaces: this mode needs none */
        if (fail_stage == NSB_STAGE_CGROUP || fail_stage == NSB_STAGE_CLONE) {
                /* Test hook: as if the host had no usable cgroup, or no user
                 * namespaces (clone3 refused). */
                nsb_fail(e, (enum nsb_stage) fail_stage, EPERM, "forced failure of the %s step (NSBOX_TEST_FAIL_STEP)",
                         nsb_stage_name((enum nsb_stage) fail_stage));
                goto fail;
        }
        r = plan_all(&s, e);
        /* The command as it runs (the mode may have rewritten its argv),
         * reported even when the plan failed. */
        if (run_copy_command(ret, s.argv, req->argc) < 0) {
                nsb_fail(e, NSB_STAGE_PREPARE, ENOMEM, "out of memory");
                goto fail;
        }
        if (r < 0)
                goto fail;
        r = setup_cgroup(&s, e);
        if (r < 0)
                goto fail;
        r = compile_filter(&s, e);
        if (r < 0)
                goto fail;
        r = open_fds(&s, e);
        if (r < 0)
                goto fail;

        c = (struct child_ctx){
                .sock = s.sock[1],
                .stdio = { s.stdin_fd, s.out[1], s.err[1] },
                .channel_fd = req->channel_fd > 2 ? req->channel_fd : -1,
                .cfg = s.cfg,
                .mounts = &s.mounts,
                .slot_fds = s.slot_fds,
                .exec_path = s.exec_path,
                .argv = s.argv,
                .envp = s.envp,
                .filter = &s.filter,
                .landlock = &s.landlock,
                .cg_ops = s.cg_ops,
                .cg_run = &s.cg_run,
                .cg_spec = &s.cg_spec,
                .rlimit_cpu = s.cg_ops->per_process,
                .cg_join_late = s.cg_late,
                .fail_stage = fail_stage,
                .reduced = s.mode->no_namespaces,
                .drop_to_nobody = s.drop_to_nobody,
                .workdir = s.workdir,
                .ucount_dirfd = -1,
        };
        sbx_ucount_share(&s, &c.ucounts);
        ledger_init(&c.ledger);
        r = spawn(&s, &c, e);
        if (r < 0)
                goto fail;
        r = supervise(&s, e);
        if (r < 0)
                goto fail;
        ledger_set(&ret->ledger, PROT_CPU_TIME, s.cg_ops->label);
        account(&s);
        /* Whatever measured it (cgroup or rusage), CPU use at the limit makes
         * a SIGXCPU/SIGKILL death a cpu_time stop. */
        if (ret->cpu_ms >= (double) cfg_cpu_time_ms(s.cfg))
                s.obs.cpu_over = true;
        /* Without cgroup accounting, the kernel's RLIMIT_CPU check is the
         * only judge, and it reads the program's PROF clock, which the
         * rusage we get can read well short of on a loaded host. The init read that clock before the reap: a SIGKILL (what
         * the check sends, soft = hard) or SIGXCPU death with the clock at
         * the limit is the limit's; one before it came from the program. */
        if (s.cg_ops->per_process && s.obs.got_exit && WIFSIGNALED(s.obs.wait_status) &&
            (WTERMSIG(s.obs.wait_status) == SIGXCPU || WTERMSIG(s.obs.wait_status) == SIGKILL) &&
            s.prog_cpu_prof_ms >= (uint64_t) child_cpu_rlimit_s(s.cfg) * 1000)
                s.obs.cpu_over = true;
        if (s.cg_ops->per_process && ret->peak_memory_known) {
                s.obs.peak_memory_bytes = ret->peak_memory_bytes;
                s.obs.peak_limit_bytes = s.cfg->memory_bytes;
        }
        fetch = take_fetch_names(&s, &n_fetch);   /* cleanup frees the plans */
        cleanup(&s);
        outcome_decide(&s.obs, ret);
        /* the value that stopped it, for every front end's message (config/hints.h) */
        if (ret->status == RUN_LIMIT)
                (void) cfg_limit_value(s.cfg, run_limit_name(ret->limit), ret->limit_value, sizeof ret->limit_value);
        fetched_or_why_not(fetch, n_fetch, ret);
        explain_host_refusal(&s, ret);
        return 0;
fail:
        if (!ret->command)
                (void) run_copy_command(ret, s.argv, req->argc);
        if (s.pidfd >= 0)
                kill_tree(&s, KILL_NONE);
        if (ret->wall_ms == 0)
                ret->wall_ms = run_elapsed_ms(&s.start);
        cleanup(&s);
        if (s.warm_not_taken) {
                /* The zygote ended before it took the job: nothing of it ran.
                 * It runs cold, and says so (the caller's pool starts a new
                 * zygote for the next one). */
                struct sbx_request cold = *req;

                cold.start = SBX_COLD;
                run_result_free(ret);
                sbx_run(&cold, ret);
                snprintf(ret->start_reason, sizeof ret->start_reason, "the zygote ended before it took this job");
                return 0;
        }
        ret->status = RUN_ERROR;
        if (ret->error.stage == NSB_STAGE_NONE)
                ret->error.stage = NSB_STAGE_SUPERVISE;
        explain_host_refusal(&s, ret);
        return 0;
}
