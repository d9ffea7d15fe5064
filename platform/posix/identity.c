/* platform/posix/identity.c — a root caller's program runs as nobody.
 *
 * The one file of the posix platform that leaves POSIX: setgroups() (4.4BSD,
 * on every Unix nsbox targets, but in no POSIX edition) is what drops root's
 * supplementary groups, and without it the program would keep group 0. So
 * the build's -D_POSIX_C_SOURCE is undone here, and each libc shows its
 * default (BSD-inclusive) interface. */
#undef _POSIX_C_SOURCE
#undef _XOPEN_SOURCE

#include "platform/posix/posix.h"

#include <errno.h>
#include <grp.h>
#include <unistd.h>

#include "supervisor/reduced.h"

int px_become_nobody(struct nsb_error *e)
{
        const gid_t g = REDUCED_NOBODY_GID;

        /* groups, then gid, then uid: each needs the privilege the next drops */
        if (setgroups(1, &g) < 0 || setgid(g) < 0 || setuid(REDUCED_NOBODY_UID) < 0)
                return nsb_fail(e, NSB_STAGE_USERNS, errno, "take the uid/gid %u/%u of nobody", REDUCED_NOBODY_UID,
                                REDUCED_NOBODY_GID);
        /* setuid as root sets all three uids; check none can come back */
        if (setuid(0) == 0 || getuid() != REDUCED_NOBODY_UID || geteuid() != REDUCED_NOBODY_UID)
                return nsb_fail(e, NSB_STAGE_USERNS, EPERM, "root could be regained after dropping to nobody");
        return 0;
}
