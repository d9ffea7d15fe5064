/* caps/caps_apply.c — see caps.h. Syscalls: prctl, capset, capget. */
#include "caps/caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The highest capability number any kernel could know: PR_CAPBSET_READ
 * answers EINVAL past the running kernel's last one, which ends the loops. */
#define CAPS_SCAN_MAX 64

/* Direct syscalls, not libcap-ng: libcap-ng reads /proc/self/status around
 * each apply (four reads, ~0.2 ms of a run), and these steps need nothing
 * it adds. Version 3: two 32-bit words per set. */
static int caps_get(struct __user_cap_data_struct data[2])
{
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        return (int) syscall(SYS_capget, &hdr, data);
}

static int caps_set_empty(void)
{
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
        return (int) syscall(SYS_capset, &hdr, data);
}

static int drop_bounding_and_ambient(struct nsb_error *e)
{
        /* Bounding set: the ceiling on what any later execve can grant, even
         * to a file with capabilities or to uid 0. PR_CAPBSET_DROP needs
         * CAP_SETPCAP, so this precedes emptying the effective set. */
        for (int cap = 0; cap < CAPS_SCAN_MAX; cap++) {
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
                        continue;
                if (errno == EINVAL)
                        break;          /* past the kernel's last capability */
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_CAPBSET_DROP, %d)", cap);
        }

        /* Ambient set: capabilities that survive execve of an ordinary file.
         * Lowering permitted would clear it too; clear it explicitly anyway. */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_CAP_AMBIENT_CLEAR_ALL)");
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

/* Effective, permitted, inheritable, read back from the kernel. */
static int check_sets_empty(struct nsb_error *e, const char *what)
{
        /* Zeroed: capget through syscall() fills it, which valgrind cannot see. */
        struct __user_cap_data_struct data[2] = { { 0, 0, 0 }, { 0, 0, 0 } };

        if (caps_get(data) < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "capget");
        for (int i = 0; i < 2; i++)
                if (data[i].effective || data[i].permitted || data[i].inheritable)
                        return nsb_fail(e, NSB_STAGE_CAPS, EPERM, "%s", what);
        return 0;
}

static int verify_empty(struct nsb_error *e)
{
        int secbits, r;

        /* Read back from the kernel, not from what we asked for. */
        r = check_sets_empty(e, "effective/permitted/inheritable set not empty after dropping");
        if (r < 0)
                return r;
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
         * process that regained CAP_SETPCAP, can turn them off. */
        if (prctl(PR_SET_SECUREBITS, CAPS_SECUREBITS, 0, 0, 0) < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "prctl(PR_SET_SECUREBITS, 0x%x)",
                                (unsigned) CAPS_SECUREBITS);

        /* 2. Bounding and ambient sets (bounding needs CAP_SETPCAP: before 3). */
        r = drop_bounding_and_ambient(e);
        if (r < 0)
                return r;

        /* 3. Effective, permitted, inheritable: capset() to empty. Dropping
         * needs no capability, and afterwards no path leads back. */
        if (caps_set_empty() < 0)
                return nsb_fail(e, NSB_STAGE_CAPS, errno, "capset(effective/permitted/inheritable = none)");

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
        r = check_sets_empty(e, "the program would hold capabilities (effective/permitted/inheritable not empty)");
        if (r == 0)
                r = check_ambient_empty(e);
        if (r < 0)
                return r;
        ledger_set(ledger, PROT_CAPS, "none-held");
        return 0;
}
