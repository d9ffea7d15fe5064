/* platform/posix/platform_posix.c — platform.h for any POSIX system, in
 * POSIX.1-2008 calls only. */
#include "platform/platform.h"
#include "util/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char plat_name[] = "posix";
const char plat_reduced_banner[] = "the posix platform has no namespaces, seccomp or Landlock; the program runs "
                                   "as you (nobody, for root) and can read and write whatever that user can, reach "
                                   "the network and see every process, bounded only by rlimits, a process group "
                                   "and a private working directory (docs/platforms.md)";

/* The write end a signal handler can reach: the one piece of file-scope
 * state here (a handler takes no argument). Set once, before the handler. */
static int cancel_wfd = -1;

static void on_cancel_signal(int sig)
{
        const int saved = errno;
        const char c = (char) sig;

        (void) !write(cancel_wfd, &c, 1);   /* full pipe: already readable */
        errno = saved;
}

static int set_cloexec(int fd)
{
        int fl = fcntl(fd, F_GETFD);

        return fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0 ? -1 : 0;
}

int plat_pipe_cloexec(int p[2])
{
        if (pipe(p) < 0)
                return -1;
        if (set_cloexec(p[0]) < 0 || set_cloexec(p[1]) < 0) {
                const int saved = errno;
                close(p[0]);
                close(p[1]);
                errno = saved;
                return -1;
        }
        return 0;
}

int plat_cancel_fd(void)
{
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
        struct sigaction sa;
        int p[2];

        /* A closed stdout must not kill nsbox mid-run (the program resets it). */
        signal(SIGPIPE, SIG_IGN);
        if (plat_pipe_cloexec(p) < 0)
                return -1;
        /* Never blocks a handler; the byte stays unread, so the read end is
         * readable from then on in this process and every child. */
        if (fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK) < 0 ||
            fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK) < 0) {
                close(p[0]);
                close(p[1]);
                return -1;
        }
        cancel_wfd = p[1];
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_cancel_signal;
        sa.sa_flags = SA_RESTART;
        sigfillset(&sa.sa_mask);
        for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
                if (sigaction(sigs[i], &sa, NULL) < 0)
                        return -1;
        return p[0];
}

void plat_signals_reset(void)
{
        sigset_t none;

        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* 1..64 covers every platform's classic signals; SIG_DFL of a number
         * that is none fails harmlessly (EINVAL). */
        for (int sig = 1; sig < 65; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        signal(sig, SIG_DFL);
}

unsigned plat_cpu_count(void)
{
#ifdef _SC_NPROCESSORS_ONLN
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        if (n > 0)
                return (unsigned) n;
#endif
        return 1;
}

int plat_die_with_parent(pid_t parent)
{
        /* POSIX has no parent-death signal: a worker whose batch was
         * SIGKILLed ends with its job (docs/platforms.md). */
        return getppid() == parent ? 0 : -1;
}

int plat_anon_fd(const char *name)
{
        const char *base = getenv("TMPDIR");
        char path[PATH_MAX];
        int fd;

        if (!base || base[0] != '/')
                base = "/tmp";
        if ((size_t) snprintf(path, sizeof path, "%s/%s.XXXXXX", base, name) >= sizeof path) {
                errno = ENAMETOOLONG;
                return -1;
        }
        fd = mkstemp(path);
        if (fd < 0)
                return -1;
        /* Nameless from here on, as a memfd is. */
        if (unlink(path) < 0 || set_cloexec(fd) < 0) {
                const int saved = errno;
                (void) unlink(path);
                close(fd);
                errno = saved;
                return -1;
        }
        return fd;
}

/* Each directory of @path opened with O_NOFOLLOW from the last: a symlink
 * anywhere fails with ELOOP (EMLINK on FreeBSD). Directories are opened for
 * reading, so one that may only be searched (mode --x) is refused too. */
int plat_open_no_symlinks(const char *path, int flags, mode_t mode)
{
        char buf[PATH_MAX], *p, *slash;
        int dfd, fd, saved;

        if ((size_t) snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) {
                errno = ENAMETOOLONG;
                return -1;
        }
        dfd = open(buf[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        p = buf;
        while (dfd >= 0 && *p == '/')
                p++;
        while (dfd >= 0 && (slash = strchr(p, '/'))) {
                int next;
                *slash = '\0';
                next = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                saved = errno;
                close(dfd);
                errno = saved;
                dfd = next;
                for (p = slash + 1; *p == '/'; p++)
                        ;
        }
        if (dfd < 0)
                return -1;
        fd = openat(dfd, *p ? p : ".", flags | O_NOFOLLOW, mode);
        saved = errno;
        close(dfd);
        errno = saved;
        return fd;
}

int plat_python_host(struct host_set *set, const char *interpreter, struct nsb_error *e)
{
        (void) set;
        (void) interpreter;
        (void) e;
        return 0;   /* no mount or Landlock rule is built from it here */
}
