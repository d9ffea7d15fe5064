/* supervisor/child.c — the sandbox init and the program's last steps.
 * Runs in the cloned child (separate memory, single thread). Only
 * async-signal-safe-in-spirit work: no locks held by another thread can exist
 * since the supervisor is single-threaded. */
#include "supervisor/child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/openat2.h>
#include <time.h>
#include <unistd.h>

#include "caps/caps.h"
#include "cgroup/cgroup.h"
#include "landlock/landlock.h"
#include "net/net.h"
#include "platform/platform.h"
#include "ns/ns.h"
#include "seccomp/filter.h"
#include "supervisor/reduced.h"
#include "supervisor/fetch_plan.h"
#include "supervisor/wire.h"
#include "util/cmdline.h"
#include "util/sys.h"
#include "util/cleanup.h"
#include "util/readfile.h"
#include "util/rlimit.h"

static void send_msg(int sock, enum wire_kind kind, const struct nsb_error *err, const struct nsb_ledger *l,
                     int wait_status, uint32_t cpu_prof_ms)
{
        struct wire_msg m;

        memset(&m, 0, sizeof m);
        m.version = WIRE_VERSION;
        m.kind = kind;
        m.pid = (int32_t) getpid();
        m.wait_status = wait_status;
        m.cpu_prof_ms = cpu_prof_ms;
        if (err)
                m.error = *err;
        if (l)
                m.ledger = *l;
        while (send(sock, &m, sizeof m, MSG_NOSIGNAL) < 0 && errno == EINTR)
                ;
}

__attribute__((noreturn)) void child_fail_exit(struct child_ctx *c, struct nsb_error *e)
{
        send_msg(c->sock, WIRE_ERROR, e, &c->ledger, 0, 0);
        _exit(127);
}
#define fail_exit child_fail_exit

static int test_hook(struct child_ctx *c, enum nsb_stage stage, struct nsb_error *e)
{
        if (c->fail_stage == (int) stage)
                return nsb_fail(e, stage, EPERM, "forced failure of the %s step (NSBOX_TEST_FAIL_STEP)",
                                nsb_stage_name(stage));
        return 0;
}

/* ---- the program's steps, in order -------------------------------------- */

static int step_rlimits(struct child_ctx *c, struct nsb_error *e)
{
        struct rlimit fsize = { c->cfg->file_size_bytes, c->cfg->file_size_bytes };
        struct rlimit core = { 0, 0 };
        int r = test_hook(c, NSB_STAGE_RLIMIT, e);

        if (r < 0)
                return r;
        /* Files larger than the limit get SIGXFSZ (or EFBIG when ignored). */
        if (setrlimit(RLIMIT_FSIZE, &fsize) < 0)
                return nsb_fail(e, NSB_STAGE_RLIMIT, errno, "RLIMIT_FSIZE");
        ledger_set(&c->ledger, PROT_FILE_SIZE, "rlimit");
        if (setrlimit(RLIMIT_CORE, &core) < 0)
                return nsb_fail(e, NSB_STAGE_RLIMIT, errno, "RLIMIT_CORE");
        /* No real-time scheduling and no nice below the caller's: a caller
         * with a real-time budget (limits.conf's rtprio, systemd's
         * LimitRTPRIO=) would otherwise let SCHED_FIFO spinners starve the
         * init, nsbox and the host's ordinary tasks until the wall time. */
        if ((r = rlimit_lower(RLIMIT_RTPRIO, "RLIMIT_RTPRIO", 0, e)) < 0 ||
            (r = rlimit_lower(RLIMIT_NICE, "RLIMIT_NICE", 0, e)) < 0)
                return r;
        /* Pending signals, message-queue bytes and SHM_LOCK'd memory are
         * counted per user up the user-namespace chain, and the levels above
         * this sandbox's are shared: the caller's (a cold run), or the warm
         * zygote's, whose rlimits are every job's parent-level maximum. This
         * sandbox's hard limits, set now that its namespace exists, are its
         * share: it can neither fill those levels for the others nor meet
         * their use there (ns/ucount.h). Lowered only, never raised. */
        if ((r = ucount_apply_rlimits(&c->ucounts, e)) < 0)
                return r;
        if (c->rlimit_cpu) {
                /* Without cgroup CPU accounting each process gets the whole
                 * budget. Soft = hard: the kernel then sends SIGKILL at the
                 * limit (never SIGXCPU), so a program that catches SIGXCPU
                 * gains no extra second, and a SIGXCPU death is never ours. */
                rlim_t s = (rlim_t) child_cpu_rlimit_s(c->cfg);
                struct rlimit cpu = { s, s };
                if (setrlimit(RLIMIT_CPU, &cpu) < 0)
                        return nsb_fail(e, NSB_STAGE_RLIMIT, errno, "RLIMIT_CPU");
        }
        return 0;
}

static int step_caps(struct child_ctx *c, struct nsb_error *e)
{
        int r = test_hook(c, NSB_STAGE_CAPS, e);

        if (r < 0)
                return r;
        /* Without a user namespace there is nothing of ours to drop: check
         * that nothing is held (the bounding set stays the host's). */
        return c->reduced ? caps_verify_none_held(&c->ledger, e) : caps_drop_all(&c->ledger, e);
}

static int step_nnp(struct child_ctx *c, struct nsb_error *e)
{
        int r = test_hook(c, NSB_STAGE_NNP, e);

        if (r < 0)
                return r;
        /* Required by landlock_restrict_self and seccomp without
         * CAP_SYS_ADMIN, and closes setuid/file-capability gains on exec. */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return nsb_fail(e, NSB_STAGE_NNP, errno, "PR_SET_NO_NEW_PRIVS");
        if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
                return nsb_fail(e, NSB_STAGE_NNP, EPERM, "no_new_privs did not stick");
        ledger_set(&c->ledger, PROT_NO_NEW_PRIVS, "enforced");
        return 0;
}

static int step_landlock(struct child_ctx *c, struct nsb_error *e)
{
        int r = test_hook(c, NSB_STAGE_LANDLOCK, e);

        if (r < 0)
                return r;
        /* Reduced isolation runs on kernels without Landlock too (doctor says
         * so); the ledger then says "unavailable" for it and for the file tree.
         * A Landlock that exists but fails is an error in every mode. */
        if (c->reduced && ll_abi_version() < 0)
                return 0;
        r = ll_apply(c->landlock, &c->ledger, e);
        if (r == 0 && c->reduced)
                ledger_set(&c->ledger, PROT_ROOTFS, "landlock");
        return r;
}

static int step_seccomp(struct child_ctx *c, struct nsb_error *e)
{
        int r = test_hook(c, NSB_STAGE_SECCOMP, e);
        return r < 0 ? r : filter_load(c->filter, &c->ledger, e);
}

const struct child_step child_program_steps[] = {
        CHILD_STEP(NSB_STAGE_RLIMIT, step_rlimits),     /* needs nothing; inherited by every child */
        CHILD_STEP(NSB_STAGE_CAPS, step_caps),          /* bounding, ambient, permitted, effective; securebits locked */
        CHILD_STEP(NSB_STAGE_NNP, step_nnp),            /* before landlock_restrict_self and seccomp */
        CHILD_STEP(NSB_STAGE_LANDLOCK, step_landlock),  /* after the mount tree is final: rules name its paths */
        CHILD_STEP(NSB_STAGE_SECCOMP, step_seccomp),    /* last: the filter need not allow any setup syscall */
};
const unsigned child_program_n_steps = ARRAY_SIZE(child_program_steps);

/* execve through the sandbox PATH when the path has no slash. */
static int exec_program(struct child_ctx *c, struct nsb_error *e)
{
        const char *path = c->exec_path;
        int err = ENOENT;

        if (strchr(path, '/')) {
                execve(path, c->argv, c->envp);
                return nsb_fail(e, NSB_STAGE_EXEC, errno, "execve '%s'", path);
        }
        for (const char *dir = "/usr/local/bin:/usr/bin:/bin"; dir && *dir;) {
                const char *colon = strchr(dir, ':');
                char full[4096];
                snprintf(full, sizeof full, "%.*s/%s", (int) (colon ? colon - dir : (long) strlen(dir)), dir, path);
                execve(full, c->argv, c->envp);
                if (errno != ENOENT && errno != ENOTDIR)
                        err = errno;
                dir = colon ? colon + 1 : NULL;
        }
        return nsb_fail(e, NSB_STAGE_EXEC, err, "execve '%s' (searched the sandbox PATH)", path);
}

/* Close every fd from @first up, except @keep. */
static int close_from_except(unsigned first, int keep)
{
        if (keep >= (int) first && keep > 0) {
                if ((unsigned) keep > first && sys_close_range(first, (unsigned) keep - 1, 0) < 0)
                        return -errno;
                first = (unsigned) keep + 1;
        }
        return sys_close_range(first, ~0U, 0) < 0 ? -errno : 0;
}

/* What every program process does before its protections: its own session,
 * its stdio, nothing else open. A cold program then execs, so its signal
 * dispositions are reset and its fds marked close-on-exec; a warm one
 * returns into the zygote's interpreter, whose dispositions are a fresh
 * interpreter's already, and closes now what it must not hold (everything
 * but 0-2 and the socket, closed after READY). */
static void program_preamble(struct child_ctx *c)
{
        struct nsb_error e;
        int r;

        nsb_error_clear(&e);
        /* The supervisor blocks SIGINT/SIGTERM (for its signalfd); a blocked
         * mask and ignored signals survive execve, so reset both. */
        if (!c->warm)
                plat_signals_reset();
        /* Its own session and process group: no controlling terminal can be
         * reached (TIOCSTI needs one too) and the group can be killed whole. */
        if (setsid() < 0) {
                nsb_fail(&e, NSB_STAGE_EXEC, errno, "setsid");
                fail_exit(c, &e);
        }
        ledger_set(&c->ledger, PROT_SESSION, "setsid");
        if (c->reduced) {
                /* Dies with its reduced init, even after execve. */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1) {
                        nsb_fail(&e, NSB_STAGE_EXEC, errno, "PR_SET_PDEATHSIG");
                        fail_exit(c, &e);
                }
                if (chdir(c->workdir) < 0) {
                        nsb_fail(&e, NSB_STAGE_EXEC, errno, "chdir '%s'", c->workdir);
                        fail_exit(c, &e);
                }
        }
        for (int i = 0; i < 3; i++)
                if (dup2(c->stdio[i], i) < 0) {
                        nsb_fail(&e, NSB_STAGE_EXEC, errno, "dup2 fd %d", i);
                        fail_exit(c, &e);
                }
        if (c->channel_fd >= 0 && dup2(c->channel_fd, 3) < 0) {
                nsb_fail(&e, NSB_STAGE_EXEC, errno, "dup2 the results channel to fd 3");
                fail_exit(c, &e);
        }
        /* Everything but 0-2 (and 3 when it is the results channel) goes at
         * exec; the socket is CLOEXEC already. */
        r = c->warm ? close_from_except(3, c->sock)
                    : sys_close_range(c->channel_fd >= 0 ? 4 : 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0 ? -errno : 0;
        if (r < 0) {
                nsb_fail(&e, NSB_STAGE_EXEC, -r, "close_range");
                fail_exit(c, &e);
        }
        ledger_set(&c->ledger, PROT_FDS, "closed");
        ledger_set(&c->ledger, PROT_ENV, "scrubbed");
}

static void program_steps(struct child_ctx *c)
{
        struct nsb_error e;
        const struct child_step *steps = c->program_steps ? c->program_steps : child_program_steps;
        unsigned n = c->program_steps ? c->n_program_steps : child_program_n_steps;

        nsb_error_clear(&e);
        if (child_run_steps(c, steps, n, &e) < 0)
                fail_exit(c, &e);
        send_msg(c->sock, WIRE_READY, NULL, &c->ledger, 0, 0);
}

__attribute__((noreturn)) static void program_main(struct child_ctx *c)
{
        struct nsb_error e;

        nsb_error_clear(&e);
        program_preamble(c);
        program_steps(c);
        exec_program(c, &e);
        fail_exit(c, &e);
}

/* A warm job's program: the same preamble and steps as a cold one, then
 * back into Python (the caller sees c->warm_job). Dumpable again, as an
 * exec would have made it: its own /proc files are its uid's, as a cold
 * program's are; the init above it stays not dumpable. */
static void warm_job_main(struct child_ctx *c)
{
        struct nsb_error e;

        nsb_error_clear(&e);
        program_preamble(c);
        if (prctl(PR_SET_DUMPABLE, 1) < 0) {
                nsb_fail(&e, NSB_STAGE_EXEC, errno, "PR_SET_DUMPABLE");
                fail_exit(c, &e);
        }
        program_steps(c);
        close(c->sock);
        c->sock = -1;
        c->warm_job = true;
}

/* Forks the program; in the init, keeps nothing the program could use. */
static pid_t init_fork_program(struct child_ctx *c, struct nsb_error *e)
{
        pid_t prog = fork();

        if (prog < 0)
                return nsb_fail(e, NSB_STAGE_EXEC, errno, "fork the program");
        if (prog == 0)
                program_main(c);
        for (int i = 0; i < 3; i++)
                close(c->stdio[i]);
        if (c->channel_fd >= 0)
                close(c->channel_fd);
        return prog;
}

unsigned long child_cpu_rlimit_s(const struct nsb_config *cfg)
{
        return (unsigned long) ((cfg_cpu_time_ms(cfg) + 999) / 1000);
}

/* The CPU time of @pid (ours to wait for, not yet reaped) as RLIMIT_CPU
 * counts it: the process's PROF clock, user+system as ticked, which can run
 * ahead of the rusage we get after the reap. In ms, 0 if unreadable. */
static uint32_t prof_ms(pid_t pid)
{
        /* MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_PROF) of the kernel's ABI */
        clockid_t clk = (clockid_t) ((~(unsigned) pid) << 3);
        struct timespec ts;
        uint64_t ms;

        if (clock_gettime(clk, &ts) < 0)
                return 0;
        ms = (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
        return ms > UINT32_MAX ? UINT32_MAX : (uint32_t) ms;
}

/* The program has ended (seen with WNOWAIT): reap it and report its status. */
static void report_program(struct child_ctx *c, pid_t prog)
{
        uint32_t cpu = prof_ms(prog);
        int status = 0;

        while (waitpid(prog, &status, __WALL) < 0)
                if (errno != EINTR)
                        _exit(127);
        send_msg(c->sock, WIRE_EXIT, NULL, NULL, status, cpu);
}

/* Reaps whatever ends until the program does, then reports its status. */
static void init_wait_program(struct child_ctx *c, pid_t prog)
{
        for (;;) {
                siginfo_t si;
                memset(&si, 0, sizeof si);
                if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT | __WALL) < 0) {
                        if (errno == EINTR)
                                continue;
                        _exit(127);
                }
                if (si.si_pid == prog) {
                        report_program(c, prog);
                        return;
                }
                while (waitpid(si.si_pid, NULL, __WALL) < 0 && errno == EINTR)
                        ;
        }
}

/* ---- files read back after the run (fetch_plan.h) --------------------------- */

/* @name under the workspace @ws, never through a symbolic link (any
 * component) nor out of it; @flags as open's. */
static int open_beneath(int ws, const char *name, int flags)
{
        /* openat2 refuses O_PATH with any flag it ignores (O_NOCTTY) */
        struct open_how how = { .flags = (uint64_t) flags | O_NOFOLLOW | O_CLOEXEC | ((flags & O_PATH) ? 0 : O_NOCTTY),
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                                           RESOLVE_NO_XDEV };

        return (int) syscall(SYS_openat2, ws, name, &how, sizeof how);
}

/* One file's record into @out. Looked at first through an O_PATH handle
 * (which opens nothing: a FIFO's open would block, a device's may act), and
 * opened only when it is a regular file within the bounds; the opened file
 * must be that one (a host --workspace has other writers). */
static void fetch_one(int ws, const char *name, int out, uint64_t *left)
{
        struct fetch_head h = { 0 };
        struct stat st, st2;
        AUTOCLOSE int p = open_beneath(ws, name, O_PATH);
        AUTOCLOSE int fd = -1;
        AUTOFREE char *buf = NULL;
        size_t n = 0;
        struct nsb_error e;
        int r;

        if (p < 0 || fstat(p, &st) < 0)
                h.err = (uint32_t) errno;
        else if (S_ISLNK(st.st_mode))
                h.err = ELOOP;
        else if (!S_ISREG(st.st_mode))
                h.err = EINVAL;
        else if ((uint64_t) st.st_size > FETCH_FILE_MAX || (uint64_t) st.st_size > *left)
                h.err = EFBIG;
        else if ((fd = open_beneath(ws, name, O_RDONLY | O_NONBLOCK)) < 0 || fstat(fd, &st2) < 0)
                h.err = (uint32_t) errno;
        else if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino || !S_ISREG(st2.st_mode))
                h.err = EINVAL;
        else if ((r = read_fd(fd, name, (size_t) st.st_size, &buf, &n, &e)) < 0)
                h.err = (uint32_t) -r;   /* EFBIG: it grew since */
        h.len = h.err ? 0 : (uint64_t) n;
        if (!h.err)
                *left -= h.len;
        if (write_all(out, &h, sizeof h) < 0 || (h.len && write_all(out, buf, (size_t) h.len) < 0))
                _exit(127);
}

/* After the run, every process of the job gone: the plan's fetch names,
 * read from /workspace into a memfd sent to the supervisor. A failure to
 * make or send it leaves the result without "files" (the supervisor's
 * side says nothing was read). */
static void send_fetched(struct child_ctx *c)
{
        AUTOCLOSE int ws = -1, out = -1;
        uint64_t left = FETCH_TOTAL_MAX;
        struct wire_msg m;

        if (!c->mounts || c->mounts->n_fetch == 0)
                return;
        ws = open("/workspace", O_PATH | O_DIRECTORY | O_CLOEXEC);
        out = memfd_create("nsbox-fetch", MFD_CLOEXEC);
        if (ws < 0 || out < 0)
                return;
        for (size_t i = 0; i < c->mounts->n_fetch; i++)
                fetch_one(ws, c->mounts->fetch[i], out, &left);
        memset(&m, 0, sizeof m);
        m.version = WIRE_VERSION;
        m.kind = WIRE_FILES;
        (void) wire_send_fds(c->sock, &m, &out, 1);
}

/* v1 late join: the supervisor made the run's cgroups while this process
 * built the file tree, and sends the "tasks" fds it opened (v1 checks the
 * opener's credentials, so they work here as they would have at clone). */
static int join_cgroup_late(struct child_ctx *c, struct nsb_error *e)
{
        struct wire_msg m;
        int fds[WIRE_MAX_FDS];
        size_t n_fds = 0, k = 0;
        ssize_t n = wire_recv_fds(c->sock, &m, fds, WIRE_MAX_FDS, &n_fds);

        if (n == 0)
                _exit(127);             /* the supervisor is gone */
        if (n != (ssize_t) sizeof m || m.version != WIRE_VERSION || m.kind != WIRE_CGROUP)
                return nsb_fail(e, NSB_STAGE_CGROUP, n < 0 ? (int) -n : EPROTO,
                                "malformed cgroup record from the supervisor");
        for (size_t i = 0; i < CG_RUN_DIRS; i++) {
                if (!(m.slots & (1u << i)))
                        continue;
                if (k >= n_fds)
                        return nsb_fail(e, NSB_STAGE_CGROUP, EPROTO, "cgroup record lacks the fd of slot %zu", i);
                c->cg_run->join_fds[i] = fds[k++];
        }
        if (k == 0 || k != n_fds)
                return nsb_fail(e, NSB_STAGE_CGROUP, EPROTO, "cgroup record carries %zu fds for %zu slots", n_fds, k);
        return c->cg_ops->child_join(c->cg_run, c->cg_spec, e);
}

/* ---- the init's steps ---------------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
        int x = *(const int *) a, y = *(const int *) b;
        return (x > y) - (x < y);
}

/* The fds an init works with, all of the supervisor's making: the socket,
 * the program's three ends and results channel, the mount slots, the run
 * cgroup's fds. Into @keep (sized by init_drop_caller_fds); their count. */
static size_t init_fds(const struct child_ctx *c, int *keep)
{
        size_t n = 0;

        keep[n++] = c->sock;
        for (int i = 0; i < 3; i++)
                keep[n++] = c->stdio[i];
        keep[n++] = c->channel_fd;
        for (unsigned i = 0; c->slot_fds && c->mounts && i < c->mounts->n_slots; i++)
                keep[n++] = c->slot_fds[i];
        if (c->cg_run) {
                keep[n++] = c->cg_run->clone_fd;
                keep[n++] = c->cg_run->tree_clock_fd;
                for (size_t i = 0; i < CG_RUN_DIRS; i++) {
                        keep[n++] = c->cg_run->join_fds[i];
                        keep[n++] = c->cg_run->parent_fds[i];
                        keep[n++] = c->cg_run->dir_fds[i];
                }
                for (size_t i = 0; i < CG_U__MAX; i++)
                        keep[n++] = c->cg_run->usage_fds[i];
        }
        return n;
}

/* Right after the cgroup join: the init holds none of the caller's
 * descriptions. It was cloned from the supervisor, whose 0-2 are the
 * caller's terminal, pipe or file and which inherited whatever else the
 * caller left open (a `5>>file`, a `7<file`): the init would keep them for
 * the whole run, and it is the one process above the program (docs/
 * security.md, "The init"). Everything from 3 up goes but the fds it works
 * with (init_fds), and /dev/null takes 0-2 (the init never writes there:
 * errors travel whole on the socket) unless one of its own ends is there.
 * The supervisor keeps its own 0-2 and fds. */
static int init_drop_caller_fds(struct child_ctx *c, struct nsb_error *e)
{
        size_t max = 5 + 2 + 3 * CG_RUN_DIRS + CG_U__MAX + (c->slot_fds && c->mounts ? c->mounts->n_slots : 0);
        int *keep = malloc(max * sizeof *keep);
        unsigned lo = 3;
        bool low_kept[3] = { false, false, false };
        size_t n;
        int null;

        if (!keep)
                return nsb_fail(e, NSB_STAGE_CLONE, ENOMEM, "out of memory");
        n = init_fds(c, keep);
        qsort(keep, n, sizeof *keep, cmp_int);
        for (size_t i = 0; i < n; i++) {
                if (keep[i] >= 0 && keep[i] < 3)
                        low_kept[keep[i]] = true;
                if (keep[i] < (int) lo)
                        continue;
                if ((unsigned) keep[i] > lo && sys_close_range(lo, (unsigned) keep[i] - 1, 0) < 0) {
                        free(keep);
                        return nsb_fail(e, NSB_STAGE_CLONE, errno, "close_range the caller's fds");
                }
                lo = (unsigned) keep[i] + 1;
        }
        free(keep);
        if (sys_close_range(lo, ~0U, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "close_range the caller's fds");
        if ((null = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY)) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "open /dev/null for the init's 0-2");
        for (int i = 0; i < 3; i++)
                if (!low_kept[i] && null != i && dup2(null, i) < 0)
                        return nsb_fail(e, NSB_STAGE_CLONE, errno, "/dev/null on the init's fd %d", i);
        if (null > 2)
                close(null);
        return 0;
}

/* Before the program exists: /proc/1/cmdline would show nsbox's. */
static int init_hide_cmdline(struct child_ctx *c, struct nsb_error *e)
{
        cmdline_hide();
        return 0;
}

/* v2 (already inside by CLONE_INTO_CGROUP) and rlimit: first of all. v1
 * joins late (init_join_cgroup_late). */
static int init_join_cgroup(struct child_ctx *c, struct nsb_error *e)
{
        int r;

        if (c->cg_join_late || !c->cg_ops || !c->cg_ops->child_join)
                return 0;
        if ((r = c->cg_ops->child_join(c->cg_run, c->cg_spec, e)) < 0)
                return r;
        ledger_set(&c->ledger, PROT_MEMORY, c->cg_ops->label);
        ledger_set(&c->ledger, PROT_PIDS, c->cg_ops->label);
        return 0;
}

/* Wait for the id maps. EOF means the supervisor is gone. */
static int init_wait_go(struct child_ctx *c, struct nsb_error *e)
{
        struct wire_msg go;
        ssize_t n;

        do
                n = recv(c->sock, &go, sizeof go, 0);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t) sizeof go)
                _exit(127);
        return 0;
}

/* Take the in-sandbox identity. The credentials a process had when it
 * entered the namespace stay what they were (for a root caller: host uid 0,
 * unmapped here); only now are they the mapped ids. The caps of this
 * namespace survive: the namespace has no uid 0, so the setuid rules of
 * capabilities(7) clear nothing. */
static int init_take_sandbox_ids(struct child_ctx *c, struct nsb_error *e)
{
        if (setresgid(NS_SANDBOX_GID, NS_SANDBOX_GID, NS_SANDBOX_GID) < 0 ||
            setresuid(NS_SANDBOX_UID, NS_SANDBOX_UID, NS_SANDBOX_UID) < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "take the sandbox uid/gid %u/%u", NS_SANDBOX_UID,
                                NS_SANDBOX_GID);
        return 0;
}

/* A supervisor that died before PR_SET_PDEATHSIG was armed has closed its
 * socket end: see it now rather than run without one. */
static void exit_if_supervisor_gone(struct child_ctx *c)
{
        struct pollfd pf = { c->sock, POLLRDHUP, 0 };

        if (poll(&pf, 1, 0) != 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)))
                _exit(127);
}

/* The sandbox dies with nsbox: if the supervisor goes, so does the init, and
 * with it the whole pid namespace. After the uid change, which clears it
 * (prctl(2)). */
static int init_die_with_parent(struct child_ctx *c, struct nsb_error *e)
{
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "PR_SET_PDEATHSIG");
        exit_if_supervisor_gone(c);
        return 0;
}

/* Not dumpable from here on: the program, which shares our uid, can neither
 * ptrace the init nor open its /proc/1/{mem,fd,environ}. Only now, because
 * it makes /proc/<pid>/uid_map root-owned. */
static int init_not_dumpable(struct child_ctx *c, struct nsb_error *e)
{
        if (prctl(PR_SET_DUMPABLE, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "PR_SET_DUMPABLE");
        return 0;
}

static int init_session_and_hostname(struct child_ctx *c, struct nsb_error *e)
{
        if (setsid() < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "setsid");
        if (sethostname("nsbox", 5) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "sethostname");
        return 0;
}

static int init_network(struct child_ctx *c, struct nsb_error *e)
{
        int r;

        if (c->cfg->network != NSB_NETWORK_LOOPBACK) {
                ledger_set(&c->ledger, PROT_NET, "empty-netns");
                return 0;
        }
        if ((r = test_hook(c, NSB_STAGE_NET, e)) < 0)
                return r;
        return net_loopback_up(&c->ledger, e);
}

/* A private proc's /proc/sys/user, opened while a fully visible proc is
 * still in our mount namespace (the new one needs it: mount_too_revealing),
 * written by init_ucount_max once the init has made its last namespace. */
static int init_ucount_open(struct child_ctx *c, struct nsb_error *e)
{
        c->ucount_dirfd = -1;
        return ucount_open_sysctl(&c->ucounts, &c->ucount_dirfd, e);
}

/* Our user namespace's max_* (namespaces, inotify, fanotify): its own level
 * of those per-user counters. After init_cgroup_v1's unshare (a 0 would
 * refuse it), before the program exists; with CAP_SYS_RESOURCE in our
 * namespace, which only the program drops. The fd goes before the fork. */
static int init_ucount_max(struct child_ctx *c, struct nsb_error *e)
{
        int r = ucount_apply_max(c->ucount_dirfd, &c->ucounts, e);

        if (c->ucount_dirfd >= 0)
                close(c->ucount_dirfd);
        c->ucount_dirfd = -1;
        return r;
}

static int init_mounts(struct child_ctx *c, struct nsb_error *e)
{
        int r = test_hook(c, NSB_STAGE_MOUNT, e);

        return r < 0 ? r : mnt_plan_apply(c->mounts, c->slot_fds, &c->ledger, e);
}

/* v1: before the fork, so the program is bounded from its first instruction.
 * Only this init, running nsbox's own code, was outside the run's cgroups,
 * while it built the file tree. Then cgroup v1 has no CLONE_INTO_CGROUP:
 * clone made the cgroup namespace at the supervisor's cgroups, so
 * /proc/self/cgroup would show /nsbox-<supervisor's host pid>-N; a second
 * namespace, made here, is rooted at the run cgroups. */
static int init_cgroup_v1(struct child_ctx *c, struct nsb_error *e)
{
        int r;

        if (c->cg_join_late) {
                if ((r = join_cgroup_late(c, e)) < 0)
                        return r;
                ledger_set(&c->ledger, PROT_MEMORY, c->cg_ops->label);
                ledger_set(&c->ledger, PROT_PIDS, c->cg_ops->label);
        }
        /* (The late v1 join fills in this copy's cg_run only now, so ask both.) */
        if ((c->cg_join_late || (c->cg_run && c->cg_run->backend == CG_BACKEND_V1)) && unshare(CLONE_NEWCGROUP) < 0)
                return nsb_fail(e, NSB_STAGE_CGROUP, errno, "a cgroup namespace rooted at the run cgroups");
        return 0;
}

/* Fork the program, reap whatever ends until it does, report it. Exiting as
 * PID 1 would make the kernel SIGKILL every process left in the namespace,
 * but it reaps them with SIGCHLD ignored, so their CPU time never reaches our
 * rusage (the rlimit backend's only account of it). Kill and reap them here
 * instead; exiting still takes down anything that slipped through. */
static int init_run_program(struct child_ctx *c, struct nsb_error *e)
{
        pid_t prog = init_fork_program(c, e);

        if (prog < 0)
                return prog;
        init_wait_program(c, prog);
        (void) kill(-1, SIGKILL);
        while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
                ;
        send_fetched(c);
        return 0;
}

/* Everything a cold init does before it forks its program: the zygote's
 * sandbox runs the same list (warm starts). */
#define COLD_INIT_SANDBOX_STEPS                                                                         \
        CHILD_STEP(NSB_STAGE_CLONE, init_hide_cmdline),         /* before the program exists */        \
        CHILD_STEP(NSB_STAGE_CGROUP, init_join_cgroup),         /* v2/rlimit: before anything else runs */ \
        CHILD_STEP(NSB_STAGE_CLONE, init_drop_caller_fds),      /* next: none of the caller's held */  \
        CHILD_STEP(NSB_STAGE_USERNS, init_wait_go),             /* the supervisor wrote the id maps */ \
        CHILD_STEP(NSB_STAGE_USERNS, init_take_sandbox_ids),    /* only now are they the mapped ids */ \
        CHILD_STEP(NSB_STAGE_CLONE, init_die_with_parent),      /* after the uid change, which clears it */ \
        CHILD_STEP(NSB_STAGE_CLONE, init_not_dumpable),         /* after the maps: it makes uid_map root's */ \
        CHILD_STEP(NSB_STAGE_CLONE, init_session_and_hostname),                                         \
        CHILD_STEP(NSB_STAGE_NET, init_network),                                                        \
        CHILD_STEP(NSB_STAGE_USERNS, init_ucount_open),         /* before the pivot: a new proc needs the old */ \
        CHILD_STEP(NSB_STAGE_MOUNT, init_mounts),               /* the tree the Landlock rules name */ \
        CHILD_STEP(NSB_STAGE_CGROUP, init_cgroup_v1),           /* v1: late join, then its own cgroupns */ \
        CHILD_STEP(NSB_STAGE_USERNS, init_ucount_max)           /* after our last unshare, before the program */

const struct child_step child_init_steps[] = {
        COLD_INIT_SANDBOX_STEPS,
        CHILD_STEP(NSB_STAGE_EXEC, init_run_program),           /* last: fork, wait, reap */
};
const unsigned child_init_n_steps = ARRAY_SIZE(child_init_steps);

/* ---- warm starts: the zygote's sandbox, and each warm job's init -------------- */

const struct child_step child_zygote_program_steps[] = {
        CHILD_STEP(NSB_STAGE_RLIMIT, step_rlimits),     /* core 0; the keeper's limits are the ranges' tops; the
                                                           per-user budgets stay the caller's: they are each job's
                                                           parent-level maximum (ucount_plan_zygote) */
        CHILD_STEP(NSB_STAGE_CAPS, step_caps),          /* none: each job's init gets its own namespace's */
        CHILD_STEP(NSB_STAGE_NNP, step_nnp),            /* inherited by every job */
};
const unsigned child_zygote_program_n_steps = ARRAY_SIZE(child_zygote_program_steps);

/* The zygote must not be PID 2: every job's python is PID 2 of its own
 * namespace, and code that keys on os.getpid() (tempfile's sequence, fork
 * detection in libraries) would see no change. A throwaway child takes 2. */
static int init_run_zygote(struct child_ctx *c, struct nsb_error *e)
{
        pid_t t = fork();

        if (t < 0)
                return nsb_fail(e, NSB_STAGE_EXEC, errno, "fork");
        if (t == 0)
                _exit(0);
        while (waitpid(t, NULL, 0) < 0 && errno == EINTR)
                ;
        c->program_steps = child_zygote_program_steps;
        c->n_program_steps = child_zygote_program_n_steps;
        return init_run_program(c, e);
}

/* Each job's init writes its own id maps in /proc (only a process in the
 * job's user namespace or its parent's may), and the cold plan made /proc
 * read-only with the rest. Writable here, in the zygote's sandbox only: no
 * job sees this /proc (each mounts its own, read-only, over it). */
static int zygote_proc_writable(struct child_ctx *c, struct nsb_error *e)
{
        struct mount_attr attr = { .attr_clr = MOUNT_ATTR_RDONLY };

        if (sys_mount_setattr(AT_FDCWD, "/proc", 0, &attr) < 0)
                return nsb_fail(e, NSB_STAGE_MOUNT, errno, "make the zygote's /proc writable for its jobs' id maps");
        return 0;
}

const struct child_step child_zygote_init_steps[] = {
        COLD_INIT_SANDBOX_STEPS,
        CHILD_STEP(NSB_STAGE_MOUNT, zygote_proc_writable),      /* after the tree: the jobs map their ids there */
        CHILD_STEP(NSB_STAGE_EXEC, init_run_zygote),            /* last: fork the zygote, wait, reap */
};
const unsigned child_zygote_init_n_steps = ARRAY_SIZE(child_zygote_init_steps);

/* The zygote ignores SIGCHLD (its job inits are reaped by the kernel); this
 * init waits for its job, so it must not. */
static int job_default_sigchld(struct child_ctx *c, struct nsb_error *e)
{
        if (signal(SIGCHLD, SIG_DFL) == SIG_ERR)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "SIGCHLD");
        return 0;
}

/* A job's user namespace is nested in the zygote's sandbox's: its init maps
 * the sandbox ids onto themselves (a process may map its own ids, with
 * setgroups denied), so no round trip is needed. Dumpable only for these
 * writes (the kernel refuses them otherwise); init_not_dumpable follows. */
static int job_map_ids(struct child_ctx *c, struct nsb_error *e)
{
        struct ns_idmap map;
        int r = test_hook(c, NSB_STAGE_USERNS, e);

        if (r < 0)
                return r;
        /* the sandbox ids of the zygote's namespace, onto themselves */
        ns_idmap_plan(NS_SANDBOX_UID, NS_SANDBOX_GID, &map);
        if (prctl(PR_SET_DUMPABLE, 1) < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "PR_SET_DUMPABLE");
        if ((r = ns_idmap_apply_self(&map, e)) < 0)
                return r;
        if (getuid() != NS_SANDBOX_UID || getgid() != NS_SANDBOX_GID)
                return nsb_fail(e, NSB_STAGE_USERNS, EPERM, "the job's ids are %u/%u after mapping, not %u/%u",
                                (unsigned) getuid(), (unsigned) getgid(), NS_SANDBOX_UID, NS_SANDBOX_GID);
        return 0;
}

/* The zygote's empty network namespace serves every job of its generation
 * (docs/security.md: what keeps them apart in it). */
static int job_shared_network(struct child_ctx *c, struct nsb_error *e)
{
        ledger_set(&c->ledger, PROT_NET, "shared-empty");
        return 0;
}

/* The job's own mounts on a copy of the zygote's finished tree, which was
 * built by the cold plan (so the root is what a cold run's is). */
static int job_mounts(struct child_ctx *c, struct nsb_error *e)
{
        int r = init_mounts(c, e);

        if (r == 0)
                ledger_set(&c->ledger, PROT_ROOTFS, "tmpfs-readonly");
        return r;
}

/* getrusage of every process of the job, all reaped: the supervisor is not
 * their parent's parent and cannot wait for them. */
static void report_usage(struct child_ctx *c)
{
        struct rusage ru;
        struct wire_msg m;

        if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
                return;
        memset(&m, 0, sizeof m);
        m.version = WIRE_VERSION;
        m.kind = WIRE_USAGE;
        m.cpu_us = (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
                   (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        m.maxrss_kb = (uint64_t) ru.ru_maxrss;
        while (send(c->sock, &m, sizeof m, MSG_NOSIGNAL) < 0 && errno == EINTR)
                ;
}

static volatile int warm_init_sock = -1;

/* SIGIO on the supervisor's socket: data, or its close. Closed both ways
 * (POLLHUP: the supervisor's process is gone, not a half shutdown): end
 * the init, and with it every process of its pid namespace. */
static void warm_init_on_sigio(int sig)
{
        struct pollfd p = { .fd = warm_init_sock, .events = 0 };

        (void) sig;
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR)))
                _exit(127);
}

/* A warm job's init is the zygote's child, not its supervisor's, so
 * PR_SET_PDEATHSIG does not tie it to the supervisor (a batch's worker):
 * when that dies mid-job, nothing would enforce the job's wall time, and
 * the batch would wait for the zygote's last job at its end (#28 review).
 * The kernel signals the socket's close (O_ASYNC: SIGIO to us), without a
 * thread, a process or a poll loop next to the waitid. Set after the fork:
 * the job inherits neither the handler nor the socket. */
static void init_watch_supervisor(struct child_ctx *c)
{
        struct sigaction sa = { .sa_handler = warm_init_on_sigio, .sa_flags = SA_RESTART };
        sigset_t io;
        int fl;

        warm_init_sock = c->sock;
        sigemptyset(&sa.sa_mask);
        sigemptyset(&io);
        sigaddset(&io, SIGIO);
        if (sigaction(SIGIO, &sa, NULL) < 0 || fcntl(c->sock, F_SETOWN, getpid()) < 0 ||
            (fl = fcntl(c->sock, F_GETFL)) < 0 || fcntl(c->sock, F_SETFL, fl | O_ASYNC) < 0)
                return;   /* as before: the job's wall time then needs its supervisor */
        sigprocmask(SIG_UNBLOCK, &io, NULL);
        warm_init_on_sigio(SIGIO);   /* gone before the watch began */
}

/* Fork the job (glibc's fork: the job's libc is consistent, its at-fork
 * handlers run); it returns from here into Python with c->warm_job set.
 * Then wait, report, kill and reap exactly as init_run_program does. */
static int init_run_warm_job(struct child_ctx *c, struct nsb_error *e)
{
        pid_t prog = fork();

        if (prog < 0)
                return nsb_fail(e, NSB_STAGE_EXEC, errno, "fork the program");
        if (prog == 0) {
                warm_job_main(c);
                return 0;
        }
        for (int i = 0; i < 3; i++)
                close(c->stdio[i]);
        init_watch_supervisor(c);
        init_wait_program(c, prog);
        (void) kill(-1, SIGKILL);
        while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
                ;
        send_fetched(c);
        report_usage(c);
        return 0;
}

const struct child_step child_warm_job_init_steps[] = {
        CHILD_STEP(NSB_STAGE_CLONE, job_default_sigchld),       /* before any child exists */
        CHILD_STEP(NSB_STAGE_USERNS, job_map_ids),              /* its own maps: no supervisor round trip */
        CHILD_STEP(NSB_STAGE_CGROUP, init_join_cgroup),         /* rlimit: before anything else runs */
        CHILD_STEP(NSB_STAGE_CLONE, init_die_with_parent),      /* dies with the zygote; EOF = supervisor gone */
        CHILD_STEP(NSB_STAGE_CLONE, init_not_dumpable),         /* after the maps, as a cold init */
        CHILD_STEP(NSB_STAGE_CLONE, init_session_and_hostname),
        CHILD_STEP(NSB_STAGE_NET, job_shared_network),
        CHILD_STEP(NSB_STAGE_USERNS, init_ucount_open),         /* before its mounts, as a cold init */
        CHILD_STEP(NSB_STAGE_MOUNT, job_mounts),                /* /proc, /tmp, /workspace, /program */
        CHILD_STEP(NSB_STAGE_CGROUP, init_cgroup_v1),           /* v1/v2: the job's cgroup by fd, then its cgroupns */
        CHILD_STEP(NSB_STAGE_USERNS, init_ucount_max),          /* its own namespace's maxima, as a cold init */
        CHILD_STEP(NSB_STAGE_CLONE, init_wait_go),              /* the supervisor attached the tree's clock */
        CHILD_STEP(NSB_STAGE_EXEC, init_run_warm_job),          /* last: fork the job, wait, reap */
};
const unsigned child_warm_job_init_n_steps = ARRAY_SIZE(child_warm_job_init_steps);

/* ---- reduced isolation's init -------------------------------------------- */

static volatile pid_t reduced_group;   /* the program's pid = its process group */

static void reduced_on_parent_death(int sig)
{
        (void) sig;
        if (reduced_group > 0)
                (void) kill(-reduced_group, SIGKILL);
        _exit(127);
}

static int reduced_take_identity(struct child_ctx *c, struct nsb_error *e)
{
        const gid_t g = REDUCED_NOBODY_GID;

        if (!c->drop_to_nobody)
                return 0;
        if (setgroups(1, &g) < 0 || setresgid(g, g, g) < 0 ||
            setresuid(REDUCED_NOBODY_UID, REDUCED_NOBODY_UID, REDUCED_NOBODY_UID) < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "take the uid/gid %u/%u of nobody", REDUCED_NOBODY_UID,
                                REDUCED_NOBODY_GID);
        return 0;
}

/* Out of nsbox's session: a terminal's Ctrl-C reaches nsbox, which decides;
 * orphans of the program's group come back to us. */
static int reduced_session_subreaper(struct child_ctx *c, struct nsb_error *e)
{
        if (setsid() < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "setsid / PR_SET_CHILD_SUBREAPER");
        return 0;
}

/* nsbox's death (or its stop_signal) makes this init kill the group. */
static int reduced_parent_death(struct child_ctx *c, struct nsb_error *e)
{
        struct sigaction sa;
        sigset_t term;

        memset(&sa, 0, sizeof sa);
        sa.sa_handler = reduced_on_parent_death;
        sigfillset(&sa.sa_mask);
        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        if (sigaction(SIGTERM, &sa, NULL) < 0 || sigprocmask(SIG_UNBLOCK, &term, NULL) < 0 ||
            prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
                return nsb_fail(e, NSB_STAGE_CLONE, errno, "parent-death signal");
        exit_if_supervisor_gone(c);
        ledger_set(&c->ledger, PROT_NET, "seccomp");
        return 0;
}

/* What strict isolation gets from the pid namespace: nobody of the group
 * outlives the program. Its end is seen without reaping it, so the zombie
 * still holds the group's id while the group is killed (a reaped, empty
 * group's id could already name someone else's); then everything is reaped
 * (ours, as the subreaper). */
static int reduced_run_program(struct child_ctx *c, struct nsb_error *e)
{
        sigset_t term;
        siginfo_t si;
        pid_t prog;

        sigemptyset(&term);
        sigaddset(&term, SIGTERM);
        /* The handler must not run in the program before program_main resets
         * it, nor here before we know the group: held until both are true. */
        sigprocmask(SIG_BLOCK, &term, NULL);
        prog = init_fork_program(c, e);
        if (prog < 0)
                return prog;
        reduced_group = prog;
        sigprocmask(SIG_UNBLOCK, &term, NULL);
        while (waitid(P_PID, (id_t) prog, &si, WEXITED | WNOWAIT) < 0)
                if (errno != EINTR)
                        _exit(127);
        (void) kill(-prog, SIGKILL);
        reduced_group = 0;
        report_program(c, prog);
        while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
                ;
        return 0;
}

const struct child_step child_reduced_init_steps[] = {
        CHILD_STEP(NSB_STAGE_CGROUP, init_join_cgroup),         /* before anything else runs */
        CHILD_STEP(NSB_STAGE_CLONE, init_drop_caller_fds),      /* next: none of the caller's held */
        CHILD_STEP(NSB_STAGE_USERNS, reduced_take_identity),    /* root caller: nobody */
        CHILD_STEP(NSB_STAGE_CLONE, reduced_session_subreaper),
        CHILD_STEP(NSB_STAGE_CLONE, reduced_parent_death),      /* after the identity, which would clear it */
        CHILD_STEP(NSB_STAGE_CLONE, init_wait_go),              /* the supervisor attached the tree's clock */
        CHILD_STEP(NSB_STAGE_CLONE, init_not_dumpable),         /* the program has our uid, and no pid ns */
        CHILD_STEP(NSB_STAGE_EXEC, reduced_run_program),        /* last: fork, wait, kill the group, reap */
};
const unsigned child_reduced_init_n_steps = ARRAY_SIZE(child_reduced_init_steps);

/* ---- running a step list -------------------------------------------------- */

int child_run_steps(struct child_ctx *c, const struct child_step *steps, unsigned n, struct nsb_error *e)
{
        for (unsigned i = 0; i < n; i++) {
                int r = steps[i].fn(c, e);
                if (r < 0) {
                        if (e->stage == NSB_STAGE_NONE)
                                e->stage = steps[i].stage;
                        return r;
                }
        }
        return 0;
}

__attribute__((noreturn)) void child_run_init(struct child_ctx *c, const struct child_step *steps, unsigned n)
{
        struct nsb_error e;

        nsb_error_clear(&e);
        if (child_run_steps(c, steps, n, &e) < 0)
                fail_exit(c, &e);
        _exit(0);
}
