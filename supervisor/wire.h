/* supervisor/wire.h — the records the sandbox sends to the supervisor.
 *
 * One SOCK_SEQPACKET socketpair, CLOEXEC on both ends, so every record arrives
 * whole and a successful execve closes the program's copy. Fixed layout with
 * a version, no pointers; the sizes are checked at compile time.
 *   READY  the program process applied every protection and is about to
 *          execve; carries the ledger (init's steps + the program's own) and
 *          its pid as the sender sees it (for diagnostics only: the
 *          supervisor never signals by pid, which could be reused).
 *   ERROR  a setup step failed: the whole struct nsb_error, stage included.
 *   EXIT   the init saw the program end: its wait status, and its CPU time
 *          as RLIMIT_CPU counts it (the process's PROF clock, read before
 *          the init reaped it).
 *   USAGE  (a warm job's init, which the supervisor cannot reap) after every
 *          process of the job is gone: their CPU time and largest RSS.
 *   SPAWNED (the zygote, on a warm job's socket) the job's init exists; its
 *          pidfd attached; born_in_cgroup says whether it was cloned into
 *          the job's cgroup (then nothing is sent for it to join).
 *   FILES  (an init whose plan names files to fetch, after every process of
 *          the job is gone) a memfd of fetch_plan.h's records attached.
 * Between a warm supervisor and the zygote (its control socket, fd 3):
 *   HELLO  the zygote is ready (once, after it loaded nsbox's code);
 *   JOB    one job: its socket, stdin, stdout, stderr and spec (warm_spec.h)
 *          attached, in that order; on cgroup v2, when the job's cgroup lies
 *          in the generation's (cg_spec.in_run), its directory (O_PATH) last,
 *          for the zygote's clone3(CLONE_INTO_CGROUP).
 * And the other way, supervisor to init:
 *   (kind 0) "go": the id maps are written.
 *   CGROUP the run's cgroup v1 join fds, as SCM_RIGHTS, in slot order;
 *          `slots` holds the bitmask of the join_fds slots they fill.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"
#include "util/ledger.h"

#define WIRE_VERSION 3u

enum wire_kind { WIRE_READY = 1, WIRE_ERROR = 2, WIRE_EXIT = 3, WIRE_CGROUP = 4, WIRE_USAGE = 5, WIRE_SPAWNED = 6,
                 WIRE_HELLO = 7, WIRE_JOB = 8, WIRE_FILES = 9 };

struct wire_msg {
        uint32_t version;
        uint32_t kind;
        int32_t wait_status;
        union {
                int32_t pid;            /* READY */
                uint32_t slots;         /* CGROUP */
                uint32_t born_in_cgroup; /* SPAWNED: 1 = the init was cloned into the job's
                                            cgroup (CLONE_INTO_CGROUP), 0 = it joins by fd */
        };
        uint32_t cpu_prof_ms;           /* EXIT */
        uint64_t cpu_us;                /* USAGE */
        uint64_t maxrss_kb;             /* USAGE */
        struct nsb_error error;
        struct nsb_ledger ledger;
};

_Static_assert(sizeof(struct nsb_error) == 8 + NSB_ERROR_MSG_MAX, "nsb_error must stay pointer-free and packed");
_Static_assert(sizeof(struct wire_msg) == 40 + sizeof(struct nsb_error) + sizeof(struct nsb_ledger),
               "wire_msg layout changed: bump WIRE_VERSION");

/* Descriptors one record may carry (the v1 cgroup join fds, a warm job's five or six). */
#define WIRE_MAX_FDS 6

/* Send @m with @fds[0..n_fds) attached (1..WIRE_MAX_FDS). 0 or -errno. */
int wire_send_fds(int sock, const struct wire_msg *m, const int *fds, size_t n_fds);
/* Receive one record into @m and up to @cap attached fds (received CLOEXEC).
 * Returns the record's length (0: the peer is gone) or -errno; -EPROTO when
 * more fds came than @cap or the control data was cut. */
ssize_t wire_recv_fds(int sock, struct wire_msg *m, int *fds, size_t cap, size_t *ret_n_fds);
