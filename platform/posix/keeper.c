/* platform/posix/keeper.c — the keeper and the program's last steps before
 * exec (see posix.h). Runs in forked children of a single-threaded nsbox. */
#include "platform/posix/posix.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>   /* PR_SET_DUMPABLE: Linux's, absent elsewhere (then not dumpable is not said) */
#endif

#include "platform/platform.h"

static void send_record(int fd, const struct px_record *m)
{
        const char *p = (const char *) m;
        size_t left = sizeof *m;

        while (left > 0) {
                ssize_t n = write(fd, p, left);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return;   /* nsbox is gone: nobody to tell */
                p += n;
                left -= (size_t) n;
        }
}

static void init_record(struct px_record *m, enum px_kind kind)
{
        memset(m, 0, sizeof *m);
        m->version = PX_WIRE_VERSION;
        m->kind = kind;
        m->pid = (int32_t) getpid();
}

__attribute__((noreturn)) static void program_fail(const struct px_child *c, const struct nsb_error *e,
                                                   const struct nsb_ledger *l)
{
        struct px_record m;

        init_record(&m, PX_ERROR);
        m.error = *e;
        m.ledger = *l;
        send_record(c->status_fd, &m);
        _exit(127);
}

static int test_hook(const struct px_child *c, enum nsb_stage stage, struct nsb_error *e)
{
        if (c->fail_stage == (int) stage)
                return nsb_fail(e, stage, EPERM, "forced failure of the %s step (NSBOX_TEST_FAIL_STEP)",
                                nsb_stage_name(stage));
        return 0;
}

static int apply_rlimits(const struct px_child *c, struct nsb_ledger *l, struct nsb_error *e)
{
        int r = test_hook(c, NSB_STAGE_RLIMIT, e);

        if (r < 0)
                return r;
        for (size_t i = 0; i < c->rlimits->n; i++) {
                const struct px_rlimit *x = &c->rlimits->v[i];
                struct rlimit lim = { (rlim_t) x->value, (rlim_t) x->hard };

                if (x->lower_only) {
                        struct rlimit cur;
                        if (getrlimit(x->resource, &cur) < 0)
                                return nsb_fail(e, NSB_STAGE_RLIMIT, errno, "%s", x->name);
                        if (cur.rlim_max != RLIM_INFINITY && cur.rlim_max < lim.rlim_max)
                                lim.rlim_cur = lim.rlim_max = cur.rlim_max;
                }
                if (setrlimit(x->resource, &lim) < 0)
                        return nsb_fail(e, NSB_STAGE_RLIMIT, errno, "%s = %llu", x->name,
                                        (unsigned long long) x->value);
                if (x->prot >= 0)
                        ledger_set(l, (enum nsb_prot) x->prot, "rlimit");
        }
        return 0;
}

/* Every fd but 0-2 (and 3, the results channel) closed at exec: listed in
 * /dev/fd where the system has it, else every number below the limit. */
static int close_other_fds(int first, struct nsb_error *e)
{
        DIR *d = opendir("/dev/fd");
        struct dirent *de;
        long max;

        if (d) {
                int self = dirfd(d);
                while ((de = readdir(d))) {
                        char *end;
                        long fd = strtol(de->d_name, &end, 10);
                        if (*end || end == de->d_name || fd < first || fd == self)
                                continue;
                        if (fcntl((int) fd, F_SETFD, FD_CLOEXEC) < 0 && errno != EBADF)
                                return nsb_fail(e, NSB_STAGE_EXEC, errno, "close-on-exec fd %ld", fd);
                }
                closedir(d);
                return 0;
        }
        max = sysconf(_SC_OPEN_MAX);
        for (long fd = first; fd < (max > 0 ? max : 1024); fd++)
                (void) fcntl((int) fd, F_SETFD, FD_CLOEXEC);
        return 0;
}

static bool kept(int fd, const int *keep, size_t n_keep)
{
        for (size_t i = 0; i < n_keep; i++)
                if (keep[i] == fd)
                        return true;
        return false;
}

/* Every fd from 3 up closed but @keep: listed in /dev/fd where the system
 * has it (collected first, closed after the listing, and listed again until
 * nothing is left), else every number below the limit. */
static void close_all_but(const int *keep, size_t n_keep)
{
        long max;

        for (;;) {
                DIR *d = opendir("/dev/fd");
                struct dirent *de;
                int found[128];
                size_t n = 0;

                if (!d)
                        break;
                while (n < sizeof found / sizeof found[0] && (de = readdir(d))) {
                        char *end;
                        long fd = strtol(de->d_name, &end, 10);
                        if (*end || end == de->d_name || fd < 3 || fd == dirfd(d) || kept((int) fd, keep, n_keep))
                                continue;
                        found[n++] = (int) fd;
                }
                closedir(d);
                if (n == 0)
                        return;
                for (size_t i = 0; i < n; i++)
                        (void) close(found[i]);
        }
        max = sysconf(_SC_OPEN_MAX);
        for (long fd = 3; fd < (max > 0 ? max : 1024); fd++)
                if (!kept((int) fd, keep, n_keep))
                        (void) close((int) fd);
}

/* The keeper's first step. It runs as the program's user (for an
 * unprivileged caller) for the whole run, so whatever it holds the program
 * could take from it (pidfd_getfd, a reopen of /proc/<ppid>/fd/N): it keeps
 * only its pipes to nsbox, the program's three stdio ends and the results
 * channel (closed once the program is forked), never nsbox's 0-2 (the
 * caller's terminal, pipe or file) nor any other descriptor nsbox inherited
 * (a caller's `5>>file`). It never writes to a terminal: 0-2 are /dev/null,
 * only so that a number below 3 cannot be reused by a pipe. And it is not
 * dumpable where the system can say so (nsbox already made itself so,
 * sandbox_posix.c; fork keeps it, said again here for the record): then
 * the program's user cannot ptrace it nor open its /proc entries. */
static void keeper_fds(const struct px_child *c)
{
        const int keep[] = { c->status_fd, c->life_fd, c->stdio[0], c->stdio[1], c->stdio[2], c->channel_fd };
        int null;

#ifdef PR_SET_DUMPABLE
        (void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
#endif
        close_all_but(keep, sizeof keep / sizeof keep[0]);
        /* Each kept end is above 2 (nsbox holds 0-2 from its start:
         * nsbox.c hold_std_fds), so none is overwritten here. */
        null = open("/dev/null", O_RDWR | O_NOCTTY);
        for (int i = 0; i < 3; i++)
                (void) (null >= 0 ? dup2(null, i) : close(i));
        if (null > 2)
                (void) close(null);
}

__attribute__((noreturn)) static void program_main(const struct px_child *c)
{
        struct nsb_ledger l;
        struct nsb_error e;
        struct px_record m;

        ledger_init(&l);
        nsb_error_clear(&e);
        /* nsbox's cancel handler and masks must not reach the program. */
        plat_signals_reset();
        /* Its own session and process group, killed whole at the end; no
         * controlling terminal. Nothing stops a descendant from leaving it
         * with setsid() here (no seccomp): docs/platforms.md. */
        if (setsid() < 0) {
                nsb_fail(&e, NSB_STAGE_EXEC, errno, "setsid");
                program_fail(c, &e, &l);
        }
        ledger_set(&l, PROT_SESSION, "setsid");
        if (c->drop_to_nobody && px_become_nobody(&e) < 0)
                program_fail(c, &e, &l);
        if (chdir(c->workdir) < 0) {
                nsb_fail(&e, NSB_STAGE_EXEC, errno, "chdir '%s'", c->workdir);
                program_fail(c, &e, &l);
        }
        for (int i = 0; i < 3; i++)
                if (dup2(c->stdio[i], i) < 0) {
                        nsb_fail(&e, NSB_STAGE_EXEC, errno, "dup2 fd %d", i);
                        program_fail(c, &e, &l);
                }
        if (c->channel_fd >= 0 && dup2(c->channel_fd, 3) < 0) {
                nsb_fail(&e, NSB_STAGE_EXEC, errno, "dup2 the results channel to fd 3");
                program_fail(c, &e, &l);
        }
        if (close_other_fds(c->channel_fd >= 0 ? 4 : 3, &e) < 0)
                program_fail(c, &e, &l);
        ledger_set(&l, PROT_FDS, "closed");
        /* After the identity change: lowering needs no privilege, and the
         * per-user process count is then nobody's. */
        if (apply_rlimits(c, &l, &e) < 0)
                program_fail(c, &e, &l);
        ledger_set(&l, PROT_ENV, "scrubbed");
        init_record(&m, PX_READY);
        m.ledger = l;
        send_record(c->status_fd, &m);
        /* No shell, no PATH search: exec_path is absolute. */
        execve(c->exec_path, c->argv, c->envp);
        nsb_fail(&e, NSB_STAGE_EXEC, errno, "execve '%s'", c->exec_path);
        program_fail(c, &e, &l);
}

static void on_sigchld(int sig)
{
        (void) sig;   /* only interrupts pselect */
}

/* Until the program ends (0) or nsbox says stop / is gone (1). SIGCHLD is
 * blocked outside pselect, so an exit between the check and the wait is
 * never missed. */
static int wait_end_or_stop(const struct px_child *c, pid_t prog, const sigset_t *wait_mask)
{
        for (;;) {
                siginfo_t si;
                fd_set rd;

                memset(&si, 0, sizeof si);
                if (waitid(P_PID, (id_t) prog, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == prog)
                        return 0;
                FD_ZERO(&rd);
                FD_SET(c->life_fd, &rd);
                if (pselect(c->life_fd + 1, &rd, NULL, NULL, NULL, wait_mask) > 0 && FD_ISSET(c->life_fd, &rd))
                        return 1;
        }
}

/* The process's own CPU clock, read while it is an unreaped zombie, in µs:
 * it holds what the program used up to a kill that gave it no chance to be
 * waited for by its children. 0 where the system has no clock for another
 * process (POSIX's optional Process CPU-Time Clocks, which macOS lacks). */
static uint64_t zombie_cpu_us(pid_t pid)
{
#if defined(_POSIX_CPUTIME) && _POSIX_CPUTIME >= 0
        clockid_t clk;
        struct timespec ts;

        if (clock_getcpuclockid(pid, &clk) != 0 || clock_gettime(clk, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
#else
        (void) pid;
        return 0;
#endif
}

__attribute__((noreturn)) void px_keeper_main(const struct px_child *c)
{
        struct sigaction sa;
        sigset_t chld, wait_mask;
        struct px_record m;
        struct rusage ru;
        pid_t prog;
        uint64_t cpu_us, ru_us;
        int status = 0;

        /* Out of nsbox's session: a terminal's Ctrl-C reaches nsbox, which
         * decides. Its cancel handler is nsbox's, not ours. */
        plat_signals_reset();
        keeper_fds(c);
        (void) setsid();
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigchld;
        sigemptyset(&sa.sa_mask);
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        if (sigaction(SIGCHLD, &sa, NULL) < 0 || sigprocmask(SIG_BLOCK, &chld, &wait_mask) < 0)
                _exit(127);
        sigdelset(&wait_mask, SIGCHLD);
        prog = fork();
        if (prog < 0) {
                struct nsb_ledger l;
                struct nsb_error e;
                ledger_init(&l);
                nsb_fail(&e, NSB_STAGE_EXEC, errno, "fork the program");
                program_fail(c, &e, &l);
        }
        if (prog == 0)
                program_main(c);
        for (int i = 0; i < 3; i++)
                close(c->stdio[i]);
        if (c->channel_fd >= 0)
                close(c->channel_fd);
        (void) wait_end_or_stop(c, prog, &wait_mask);
        /* Ended or told to stop: the group goes whole. The program is not
         * reaped yet, so its zombie still holds the group's id, which can
         * name no one else's group. */
        (void) kill(-prog, SIGKILL);
        {
                siginfo_t si;
                while (waitid(P_PID, (id_t) prog, &si, WEXITED | WNOWAIT) < 0)
                        if (errno != EINTR)
                                _exit(127);
        }
        cpu_us = zombie_cpu_us(prog);
        while (waitpid(prog, &status, 0) < 0)
                if (errno != EINTR)
                        _exit(127);
        /* The program and every child it reaped in turn. */
        if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
                ru_us = (uint64_t) ru.ru_utime.tv_sec * 1000000u + (uint64_t) ru.ru_utime.tv_usec +
                        (uint64_t) ru.ru_stime.tv_sec * 1000000u + (uint64_t) ru.ru_stime.tv_usec;
                if (ru_us > cpu_us)
                        cpu_us = ru_us;
        } else {
                memset(&ru, 0, sizeof ru);
        }
        init_record(&m, PX_EXIT);
        m.pid = (int32_t) prog;
        m.wait_status = status;
        m.cpu_us = cpu_us;
        /* ru_maxrss is in KiB on Linux and the BSDs (bytes on macOS: docs/platforms.md) */
        m.peak_rss_bytes = (uint64_t) ru.ru_maxrss * 1024u;
        send_record(c->status_fd, &m);
        _exit(0);
}
