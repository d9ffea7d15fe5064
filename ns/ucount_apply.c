/* ns/ucount_apply.c — see ucount.h. Syscall layer. */
#include "ns/ucount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/rlimit.h"

#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#define MOUNT_ATTR_NODEV 0x00000004
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif

static const int rl_resource[UCOUNT_RL_N] = {
        [UCOUNT_RL_SIGPENDING] = RLIMIT_SIGPENDING,
        [UCOUNT_RL_MSGQUEUE] = RLIMIT_MSGQUEUE,
        [UCOUNT_RL_MEMLOCK] = RLIMIT_MEMLOCK,
};

void ucount_budget_read(struct ucount_budget *ret)
{
        for (unsigned i = 0; i < UCOUNT_RL_N; i++) {
                struct rlimit rl;
                /* (unreadable: as if unlimited; the caps still bound the share) */
                if (getrlimit(rl_resource[i], &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
                        ret->rlimit[i] = UINT64_MAX;
                else
                        ret->rlimit[i] = (uint64_t) rl.rlim_cur;
        }
}

int ucount_apply_rlimits(const struct ucount_share *s, struct nsb_error *e)
{
        for (unsigned i = 0; i < UCOUNT_RL_N; i++) {
                int r;

                if (s->rlimit[i] == UCOUNT_KEEP)
                        continue;
                if ((r = rlimit_lower(rl_resource[i], ucount_rl_name(i), s->rlimit[i], e)) < 0)
                        return r;
        }
        return 0;
}

int ucount_open_sysctl(const struct ucount_share *s, int *ret_dirfd, struct nsb_error *e)
{
        AUTOCLOSE int fs = -1, mnt = -1;
        int dir;

        *ret_dirfd = -1;
        if (!s->set_max)
                return 0;
        /* A proc of our own (we hold CAP_SYS_ADMIN in the user namespace
         * that owns our pid namespace), detached: it is never attached to
         * any path, and goes when the last fd on it closes. */
        fs = (int) syscall(SYS_fsopen, "proc", FSOPEN_CLOEXEC);
        if (fs < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "fsopen(proc) for the namespace's /proc/sys/user");
        if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "create a proc instance for /proc/sys/user");
        mnt = (int) syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
        if (mnt < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "fsmount(proc) for /proc/sys/user");
        dir = openat(mnt, "sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dir < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "open /proc/sys/user of a private proc");
        *ret_dirfd = dir;
        return 0;
}

int ucount_apply_max(int dirfd, const struct ucount_share *s, struct nsb_error *e)
{
        if (!s->set_max)
                return 0;
        if (dirfd < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, EBADF, "no /proc/sys/user to write the namespace's maxima");
        for (unsigned i = 0; i < UCOUNT_MAX_N; i++) {
                char v[24];
                int n = snprintf(v, sizeof v, "%llu\n", (unsigned long long) s->max[i]);
                /* The sysctl set is the writer's own user namespace; writing
                 * needs CAP_SYS_RESOURCE in it (kernel/ucount.c set_permissions). */
                AUTOCLOSE int fd = openat(dirfd, ucount_max_name(i), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
                ssize_t w;

                if (fd < 0)
                        return nsb_fail(e, NSB_STAGE_USERNS, errno, "open /proc/sys/user/%s", ucount_max_name(i));
                if ((w = write(fd, v, (size_t) n)) != n)
                        return nsb_fail(e, NSB_STAGE_USERNS, w < 0 ? errno : EIO, "write %llu to /proc/sys/user/%s",
                                        (unsigned long long) s->max[i], ucount_max_name(i));
        }
        return 0;
}
