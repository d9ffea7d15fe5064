/* util/sys.h — thin wrappers for syscalls glibc 2.36 does not wrap (or wraps
 * in headers that clash with <linux/mount.h>). Each returns what the kernel
 * returns: -1 with errno set on failure. */
#pragma once

#include <linux/mount.h>
#include <linux/sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

static inline int sys_open_tree(int dfd, const char *path, unsigned flags)
{
        return (int) syscall(SYS_open_tree, dfd, path, flags);
}

static inline int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags)
{
        return (int) syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr)
{
        return (int) syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof *attr);
}

static inline int sys_pivot_root(const char *new_root, const char *put_old)
{
        return (int) syscall(SYS_pivot_root, new_root, put_old);
}

static inline pid_t sys_clone3(struct clone_args *args)
{
        return (pid_t) syscall(SYS_clone3, args, sizeof *args);
}

/* clone(2) the old way, as fork does, with the pidfd at @pidfd (CLONE_PIDFD);
 * for where clone3 is refused with ENOSYS (Docker's default seccomp profile
 * does, so that glibc falls back). x86_64 and aarch64 both take the parent
 * tid pointer third; the child tid and tls are unused. */
static inline pid_t sys_clone_legacy(unsigned long flags, int *pidfd)
{
        return (pid_t) syscall(SYS_clone, flags, NULL, pidfd, NULL, 0UL);
}

static inline int sys_pidfd_send_signal(int pidfd, int sig)
{
        return (int) syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static inline int sys_close_range(unsigned first, unsigned last, unsigned flags)
{
        return (int) syscall(SYS_close_range, first, last, flags);
}
