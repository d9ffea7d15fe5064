/* caps/caps_apply.c — see caps.h. Syscalls: prctl, capset (through libcap-ng), capget. */
#include "caps/caps.h"

#include <cap-ng.h>
#include <errno.h>
#include <sys/prctl.h>

/* The highest capability number any kernel could know: PR_CAPBSET_READ
 * answers EINVAL past the running kernel's last one, which ends the loops. */
#define CAPS_SCAN_MAX 64

/* libcap-ng reports failures as small negative codes; the prctl or capset
 * underneath leaves errno. Use it when it is there, EPERM otherwise. */
static int capng_errno(int saved_errno)
{
        return saved_errno > 0 ? saved_errno : EPERM;
}

static int drop_bounding_and_ambient(struct nsb_error *e)
{
        int r;

        /* The state libcap-ng applies from: every set empty. */
        capng_clear(CAPNG_SELECT_ALL);

        /* Bounding set: the ceiling on what any later execve can grant, even
         * to a file with capabilities or to uid 0. PR_CAPBSET_DROP needs
         * CAP_SETPCAP, so this precedes emptying the effective set. */
        errno = 0;
        r = capng_apply(CAPNG_SELECT_BOUNDS);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, capng_errno(errno),
                                "capng_apply(bounding set) returned %d", r);

        /* Ambient set: capabilities that survive execve of an ordinary file.
         * Lowering permitted would clear it too; clear it explicitly anyway. */
        errno = 0;
        r = capng_apply(CAPNG_SELECT_AMBIENT);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, capng_errno(errno), "capng_apply(ambient set) returned %d", r);
        return 0;
}

static int check_ambient_empty(struct nsb_error *e)
{
        for (int cap = 0; cap < CAPS_SCAN_MAX; cap++) {
                int in = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0);
                if (in < 0 && errno == EINVAL)
                        break;  /* past the kernel's last capability */
                if (in < 0)
                        return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_CAP_AMBIENT_IS_SET, %d)", cap);
                if (in)
                        return nsb_fail(e, NSB_STAGE_CAPS, EPERM, "capability %d still in the ambient set", cap);
        }
        return 0;
}

static int verify_empty(struct nsb_error *e)
{
        int secbits, r;

        /* Read back from the kernel, not from libcap-ng's idea of the state. */
        if (capng_get_caps_process() < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, capng_errno(errno), "capng_get_caps_process");
        if (capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE)
                return nsb_fail(e, NSB_STAGE_CAPS, EPERM,
                                "effective/permitted/inheritable set not empty after dropping");
        for (int cap = 0; cap < CAPS_SCAN_MAX; cap++) {
                int in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
                if (in < 0 && errno == EINVAL)
                        break;          /* past the kernel's last capability */
                if (in < 0)
                        return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_CAPBSET_READ, %d)", cap);
                if (in)
                        return nsb_fail(e, NSB_STAGE_CAPS, EPERM, "capability %d still in the bounding set", cap);
        }
        r = check_ambient_empty(e);
        if (r < 0)
                return r;
        secbits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        if (secbits < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_GET_SECUREBITS)");
        if ((secbits & CAPS_SECUREBITS) != CAPS_SECUREBITS)
                return nsb_fail(e, NSB_STAGE_CAPS, EPERM, "securebits 0x%x lack 0x%x", (unsigned) secbits,
                                (unsigned) CAPS_SECUREBITS);
        return 0;
}

int caps_drop_all(struct nsb_ledger *ledger, struct nsb_error *e)
{
        int r;

        /* 1. Securebits, while CAP_SETPCAP is still ours (it is checked in our
         * user namespace). NOROOT: a later execve as uid 0 is not handed the
         * full set; NO_SETUID_FIXUP: uid changes do not touch capabilities;
         * KEEP_CAPS off and locked; NO_CAP_AMBIENT_RAISE: the ambient set
         * stays empty. Each with its _LOCKED bit so that nothing, not even a
         * process that regained CAP_SETPCAP, can turn them off. libcap-ng's
         * capng_lock() sets only the first two, so this is a direct prctl. */
        if (prctl(PR_SET_SECUREBITS, CAPS_SECUREBITS, 0, 0, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_SET_SECUREBITS, 0x%x)",
                                (unsigned) CAPS_SECUREBITS);

        /* 2. Bounding and ambient sets (bounding needs CAP_SETPCAP: before 3). */
        r = drop_bounding_and_ambient(e);
        if (r < 0)
                return r;

        /* 3. Effective, permitted, inheritable: capset() to empty. Dropping
         * needs no capability, and afterwards no path leads back. */
        errno = 0;
        r = capng_apply(CAPNG_SELECT_CAPS);
        if (r < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, capng_errno(errno),
                                "capng_apply(effective/permitted/inheritable) returned %d", r);

        /* 4. Claim nothing we have not read back. */
        r = verify_empty(e);
        if (r < 0)
                return nsb_error_prefix(e, "verify dropped capabilities");
        ledger_set(ledger, PROT_CAPS, "dropped");
        return 0;
}

int caps_verify_none_held(struct nsb_ledger *ledger, struct nsb_error *e)
{
        int r;

        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
        if (capng_get_caps_process() < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, capng_errno(errno), "capng_get_caps_process");
        if (capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE)
                return nsb_fail(e, NSB_STAGE_CAPS, EPERM,
                                "the program would hold capabilities (effective/permitted/inheritable not empty)");
        r = check_ambient_empty(e);
        if (r < 0)
                return r;
        ledger_set(ledger, PROT_CAPS, "none-held");
        return 0;
}
