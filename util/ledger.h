/* util/ledger.h — the protection ledger: what was actually enforced.
 *
 * Each setup step records a protection only *after* the syscall that applies
 * it succeeded. The result's `protections` object is rendered from the ledger,
 * never from the configuration. The struct is fixed-size and pointer-free so
 * the child can send it whole to the supervisor.
 *
 * Values: a mechanism ("enforced", "cgroup2", "cgroup1", "rlimit", "landlock",
 * "seccomp", ...), or "unavailable" / "disabled". An entry never set renders
 * as "unavailable".
 */
#pragma once

enum nsb_prot {
        PROT_USER_NS = 0,
        PROT_MOUNT_NS,
        PROT_PID_NS,
        PROT_NET,
        PROT_IPC_NS,
        PROT_UTS_NS,
        PROT_CGROUP_NS,
        PROT_ROOTFS,        /* tmpfs root, read-only, old root detached */
        PROT_ENV,           /* scrubbed environment */
        PROT_FDS,           /* only 0-2 inherited */
        PROT_SESSION,       /* new session, no controlling terminal */
        PROT_WALL_TIME,
        PROT_CPU_TIME,
        PROT_MEMORY,
        PROT_PIDS,
        PROT_OUTPUT,
        PROT_FILE_SIZE,
        PROT_TMP_SIZE,
        PROT_NO_NEW_PRIVS,
        PROT_CAPS,
        PROT_SECCOMP,
        PROT_LANDLOCK,
        PROT__MAX,
};

#define LEDGER_VALUE_MAX 24

struct nsb_ledger {
        char val[PROT__MAX][LEDGER_VALUE_MAX];
};

void ledger_init(struct nsb_ledger *l);
void ledger_set(struct nsb_ledger *l, enum nsb_prot p, const char *mechanism);
const char *ledger_get(const struct nsb_ledger *l, enum nsb_prot p);
const char *prot_name(enum nsb_prot p);
