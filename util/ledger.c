/* util/ledger.c — see ledger.h. Pure. */
#include "util/ledger.h"

#include <stdio.h>
#include <string.h>

static const char *const names[PROT__MAX] = {
        [PROT_USER_NS] = "user_ns",       [PROT_MOUNT_NS] = "mount_ns",
        [PROT_PID_NS] = "pid_ns",         [PROT_NET] = "net",
        [PROT_IPC_NS] = "ipc_ns",         [PROT_UTS_NS] = "uts_ns",
        [PROT_CGROUP_NS] = "cgroup_ns",   [PROT_ROOTFS] = "rootfs",
        [PROT_ENV] = "env",               [PROT_FDS] = "fds",
        [PROT_SESSION] = "session",       [PROT_WALL_TIME] = "wall_time",
        [PROT_CPU_TIME] = "cpu_time",     [PROT_MEMORY] = "memory",
        [PROT_PIDS] = "pids",             [PROT_OUTPUT] = "output",
        [PROT_FILE_SIZE] = "file_size",   [PROT_TMP_SIZE] = "tmp_size",
        [PROT_NO_NEW_PRIVS] = "no_new_privs", [PROT_CAPS] = "caps",
        [PROT_SECCOMP] = "seccomp",       [PROT_LANDLOCK] = "landlock",
};

void ledger_init(struct nsb_ledger *l)
{
        memset(l, 0, sizeof *l);
}

void ledger_set(struct nsb_ledger *l, enum nsb_prot p, const char *mechanism)
{
        if ((int) p < 0 || p >= PROT__MAX)
                return;
        snprintf(l->val[p], sizeof l->val[p], "%s", mechanism);
}

const char *ledger_get(const struct nsb_ledger *l, enum nsb_prot p)
{
        if ((int) p < 0 || p >= PROT__MAX || l->val[p][0] == '\0')
                return "unavailable";
        return l->val[p];
}

const char *prot_name(enum nsb_prot p)
{
        if ((int) p < 0 || p >= PROT__MAX)
                return "unknown";
        return names[p];
}
