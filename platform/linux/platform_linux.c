/* platform/linux/platform_linux.c — platform.h on Linux. */
#include "platform/platform.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

const char plat_name[] = "linux";
const char plat_reduced_banner[] = "no namespaces; the program shares this host's file tree, network and process "
                                   "table, narrowed by Landlock, seccomp and limits only (docs/security.md)";

int plat_cancel_fd(void)
{
        sigset_t set;

        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        sigprocmask(SIG_BLOCK, &set, NULL);
        /* A closed stdout must not kill nsbox mid-run (the child resets it). */
        signal(SIGPIPE, SIG_IGN);
        return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

void plat_signals_reset(void)
{
        sigset_t none;

        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        signal(sig, SIG_DFL);
}

unsigned plat_cpu_count(void)
{
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
                return (unsigned) CPU_COUNT(&set);
        return 1;
}

int plat_die_with_parent(pid_t parent)
{
        /* checked after: the parent may already be gone */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                return -1;
        return 0;
}

int plat_pipe_cloexec(int p[2])
{
        return pipe2(p, O_CLOEXEC);
}

int plat_anon_fd(const char *name)
{
        return memfd_create(name, MFD_CLOEXEC);
}

/* No symlink in any component. Kernels without openat2 (< 5.6) still get
 * O_NOFOLLOW on the last component. */
int plat_open_no_symlinks(const char *path, int flags, mode_t mode)
{
        struct open_how how = { .flags = (unsigned) flags, .mode = mode, .resolve = RESOLVE_NO_SYMLINKS };
        long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);

        if (fd < 0 && errno == ENOSYS)
                fd = open(path, flags | O_NOFOLLOW, mode);
        return (int) fd;
}

int plat_python_host(struct host_set *set, const char *interpreter, struct nsb_error *e)
{
        return profile_add_python(set, interpreter, NULL, e);
}
