/* Unit tests for caps/ (and net/, which needs the same setting: a user
 * namespace whose capabilities we hold).
 *
 * Each test forks; the child enters a new user namespace (no root needed),
 * runs the step on itself, checks the result against the kernel's own view
 * (/proc/self/status, prctl, SIOCGIFFLAGS) and reports through a pipe. If
 * unprivileged user namespaces are unavailable the test is skipped, unless
 * NSBOX_TESTS_MUST_RUN=1, which turns the skip into a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cap-ng.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "caps/caps.h"
#include "net/net.h"
#include "util/cleanup.h"
#include "tests/unit/must_run.h"
#include "tests/unit/child_check.h"

static int enter_userns(int extra_flags, char *msg, size_t len)
{
        if (unshare(CLONE_NEWUSER | extra_flags) < 0) {
                int err = errno;
                snprintf(msg, len, "unshare(CLONE_NEWUSER%s): %s", extra_flags ? "|..." : "", strerror(err));
                /* Only "user namespaces are not available" is a skip. */
                if (err == EPERM || err == EUSERS || err == ENOSPC || err == EINVAL || err == ENOSYS)
                        return CHILD_SKIP;
                return 1;
        }
        return 0;
}

/* "CapEff:\t0000000000000000" → value; -1 if absent. */
static long long status_caps(const char *field)
{
        char line[256];
        long long v = -1;
        size_t flen = strlen(field);
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return -1;
        while (fgets(line, sizeof line, f))
                if (strncmp(line, field, flen) == 0 && line[flen] == ':')
                        v = strtoll(line + flen + 1, NULL, 16);
        fclose(f);
        return v;
}

static int child_drop_all(char *msg, size_t len)
{
        static const char *const fields[] = { "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
        struct nsb_ledger ledger;
        struct nsb_error e;
        int r, bits;

        r = enter_userns(0, msg, len);
        if (r)
                return r;
        /* The starting point the sandbox has: every capability of the userns. */
        CHECK(status_caps("CapEff") > 0, "no effective capabilities in the new user namespace");
        ledger_init(&ledger);
        r = caps_drop_all(&ledger, &e);
        CHECK(r == 0, "caps_drop_all: %s (errno %d)", e.msg, e.errnum);
        CHECK(strcmp(ledger_get(&ledger, PROT_CAPS), "dropped") == 0, "ledger says '%s'",
              ledger_get(&ledger, PROT_CAPS));
        for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
                CHECK(status_caps(fields[i]) == 0, "%s is %llx after caps_drop_all", fields[i],
                      status_caps(fields[i]));
        bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        CHECK(bits >= 0 && (bits & CAPS_SECUREBITS) == CAPS_SECUREBITS, "securebits 0x%x", bits);
        CHECK(bits & SECBIT_NOROOT_LOCKED && bits & SECBIT_NO_SETUID_FIXUP_LOCKED && bits & SECBIT_KEEP_CAPS_LOCKED
              && bits & SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED && !(bits & SECBIT_KEEP_CAPS),
              "securebits 0x%x not locked as expected", bits);
        /* Locked means locked: clearing them is refused. */
        CHECK(prctl(PR_SET_SECUREBITS, 0, 0, 0, 0) < 0 && errno == EPERM, "securebits could be cleared");
        /* And the capabilities are gone, not just invisible. */
        CHECK(unshare(CLONE_NEWNS) < 0 && errno == EPERM, "unshare(CLONE_NEWNS) still works after the drop");
        CHECK(prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_ADMIN, 0, 0) < 0, "ambient raise still works");
        return 0;
}

static void test_drop_all(void **state)
{
        (void) state;
        run_in_child(child_drop_all);
}

/* Without CAP_SETPCAP the securebits cannot be locked: fail, claim nothing. */
static int child_drop_without_setpcap(char *msg, size_t len)
{
        struct nsb_ledger ledger;
        struct nsb_error e;
        int r;

        r = enter_userns(0, msg, len);
        if (r)
                return r;
        capng_clear(CAPNG_SELECT_CAPS);
        CHECK(capng_apply(CAPNG_SELECT_CAPS) == 0, "could not drop capabilities for the test");
        ledger_init(&ledger);
        nsb_error_clear(&e);
        r = caps_drop_all(&ledger, &e);
        CHECK(r == -EPERM, "caps_drop_all without CAP_SETPCAP returned %d", r);
        CHECK(e.stage == NSB_STAGE_CAPS, "stage %d", e.stage);
        CHECK(strstr(e.msg, "PR_SET_SECUREBITS") != NULL, "message '%s' names no syscall", e.msg);
        CHECK(strcmp(ledger_get(&ledger, PROT_CAPS), "unavailable") == 0, "ledger claims '%s'",
              ledger_get(&ledger, PROT_CAPS));
        return 0;
}

static void test_drop_fails_closed(void **state)
{
        (void) state;
        run_in_child(child_drop_without_setpcap);
}

static int lo_flags(void)
{
        struct ifreq ifr = { 0 };
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int r;

        if (fd < 0)
                return -errno;
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
        r = ioctl(fd, SIOCGIFFLAGS, &ifr);
        (void) close(fd);
        return r < 0 ? -errno : ifr.ifr_flags;
}

static int child_loopback(char *msg, size_t len)
{
        struct nsb_ledger ledger;
        struct nsb_error e;
        int r, flags;

        r = enter_userns(CLONE_NEWNET, msg, len);
        if (r)
                return r;
        flags = lo_flags();
        CHECK(flags >= 0 && !(flags & IFF_UP), "lo in a new netns: flags %d", flags);
        ledger_init(&ledger);
        r = net_loopback_up(&ledger, &e);
        CHECK(r == 0, "net_loopback_up: %s (errno %d)", e.msg, e.errnum);
        flags = lo_flags();
        CHECK(flags >= 0 && (flags & IFF_UP), "lo still down: flags %d", flags);
        CHECK(strcmp(ledger_get(&ledger, PROT_NET), "loopback") == 0, "ledger says '%s'",
              ledger_get(&ledger, PROT_NET));
        return 0;
}

static void test_loopback_up(void **state)
{
        (void) state;
        run_in_child(child_loopback);
}

/* After the capability drop the same call must fail, with context. */
static int child_loopback_without_caps(char *msg, size_t len)
{
        struct nsb_ledger ledger;
        struct nsb_error e;
        int r;

        r = enter_userns(CLONE_NEWNET, msg, len);
        if (r)
                return r;
        ledger_init(&ledger);
        CHECK(caps_drop_all(&ledger, &e) == 0, "caps_drop_all: %s", e.msg);
        nsb_error_clear(&e);
        r = net_loopback_up(&ledger, &e);
        CHECK(r < 0, "net_loopback_up succeeded without CAP_NET_ADMIN");
        CHECK(e.stage == NSB_STAGE_NET && e.errnum == EPERM, "stage %d errno %d: %s", e.stage, e.errnum, e.msg);
        CHECK(strstr(e.msg, "'lo'") != NULL, "message '%s' does not name the interface", e.msg);
        CHECK(strcmp(ledger_get(&ledger, PROT_NET), "unavailable") == 0, "ledger claims '%s'",
              ledger_get(&ledger, PROT_NET));
        return 0;
}

static void test_loopback_fails_closed(void **state)
{
        (void) state;
        run_in_child(child_loopback_without_caps);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_drop_all),
                cmocka_unit_test(test_drop_fails_closed),
                cmocka_unit_test(test_loopback_up),
                cmocka_unit_test(test_loopback_fails_closed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
