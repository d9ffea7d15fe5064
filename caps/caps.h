/* caps/caps.h — drop every capability, for good.
 *
 * Owns: the securebits lock and the five capability sets (bounding, ambient,
 * inheritable, permitted, effective) of the sandbox's init.
 *
 * Ordering rules:
 *   - runs inside the sandbox's user namespace, where the process holds every
 *     capability *of that namespace*; after all steps that need one (mounts,
 *     pivot_root, bringing up lo, hostname) and before no_new_privs, Landlock
 *     and seccomp (none of which needs a capability);
 *   - inside caps_drop_all(): securebits first and the bounding set second,
 *     because both need CAP_SETPCAP, which the last step removes.
 *
 * Records PROT_CAPS "dropped" only after reading every set back from the
 * kernel and finding it empty.
 */
#pragma once

#include <linux/securebits.h>

#include "util/error.h"
#include "util/ledger.h"

/* The securebits caps_drop_all() sets and locks: root gains nothing from uid
 * 0 or from setuid transitions, no capability can be kept across setuid or
 * raised into the ambient set, and none of that can be undone. */
#define CAPS_SECUREBITS (SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |                         \
                         SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |       \
                         SECBIT_KEEP_CAPS_LOCKED |                                      \
                         SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED)

int caps_drop_all(struct nsb_ledger *ledger, struct nsb_error *e);

/* Reduced isolation (no user namespace): an unprivileged process holds no
 * capability but cannot empty its bounding set or lock securebits (both need
 * CAP_SETPCAP in the init namespace). Clears the ambient set, then checks that
 * the effective, permitted, inheritable and ambient sets are empty; with
 * no_new_privs no execve can add to them. Records PROT_CAPS "none-held" (not
 * "dropped": the bounding set is the host's). */
int caps_verify_none_held(struct nsb_ledger *ledger, struct nsb_error *e);
