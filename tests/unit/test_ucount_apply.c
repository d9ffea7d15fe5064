/* Unit tests for ns/ucount_apply.c: the share applied to the calling
 * process (rlimits lowered, never raised) and a user namespace's maxima
 * written through a private proc, with the kernel then refusing at that
 * level. Each test forks; the namespace test enters a new user, mount and
 * pid namespace (no root needed). Without unprivileged user namespaces it
 * is skipped, unless NSBOX_TESTS_MUST_RUN=1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ns/ucount.h"
#include "tests/unit/must_run.h"
#include "tests/unit/child_check.h"

static int child_rlimits(char *msg, size_t len)
{
        struct rlimit low = { 10, 10 }, rl;
        struct ucount_share s;
        struct nsb_error e;

        memset(&s, 0, sizeof s);
        s.rlimit[UCOUNT_RL_SIGPENDING] = 1024;          /* above what we have: stays 10 */
        s.rlimit[UCOUNT_RL_MSGQUEUE] = UCOUNT_KEEP;     /* untouched */
        s.rlimit[UCOUNT_RL_MEMLOCK] = 4096;             /* lowered, soft = hard */
        CHECK(setrlimit(RLIMIT_SIGPENDING, &low) == 0, "setrlimit: %s", strerror(errno));
        CHECK(getrlimit(RLIMIT_MSGQUEUE, &low) == 0, "getrlimit");
        nsb_error_clear(&e);
        CHECK(ucount_apply_rlimits(&s, &e) == 0, "apply: %s", e.msg);
        CHECK(getrlimit(RLIMIT_SIGPENDING, &rl) == 0 && rl.rlim_cur == 10 && rl.rlim_max == 10,
              "SIGPENDING raised to %llu/%llu", (unsigned long long) rl.rlim_cur, (unsigned long long) rl.rlim_max);
        CHECK(getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur == 4096 && rl.rlim_max == 4096,
              "MEMLOCK %llu/%llu", (unsigned long long) rl.rlim_cur, (unsigned long long) rl.rlim_max);
        CHECK(getrlimit(RLIMIT_MSGQUEUE, &rl) == 0 && rl.rlim_cur == low.rlim_cur && rl.rlim_max == low.rlim_max,
              "MSGQUEUE changed");
        return 0;
}

static void test_rlimits_lowered_never_raised(void **state)
{
        (void) state;
        run_in_child(child_rlimits);
}

/* PID 1 of the new pid namespace: open, write, read back, and meet the
 * kernel's refusal at this level. */
static int pid1_maxima(char *msg, size_t len)
{
        struct ucount_share s;
        struct nsb_error e;
        char buf[32] = "";
        int dir = -1, fd;
        ssize_t n;

        ucount_plan_zygote(&s);
        nsb_error_clear(&e);
        CHECK(ucount_open_sysctl(&s, &dir, &e) == 0 && dir == -1, "the zygote's plan opened something");
        memset(&s, 0, sizeof s);
        s.set_max = 1;
        s.max[UCOUNT_MAX_INOTIFY_INSTANCES] = 0;
        CHECK(ucount_open_sysctl(&s, &dir, &e) == 0 && dir >= 0, "open: %s", e.msg);
        CHECK(ucount_apply_max(dir, &s, &e) == 0, "apply: %s", e.msg);
        fd = openat(dir, "max_user_namespaces", O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0, "reopen: %s", strerror(errno));
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
        close(dir);
        CHECK(n > 0 && strcmp(buf, "0\n") == 0, "max_user_namespaces reads '%s'", buf);
        /* the kernel's own count now says no at this level */
        CHECK(unshare(CLONE_NEWUSER) < 0 && errno == ENOSPC, "unshare(CLONE_NEWUSER) after max 0: %s",
              strerror(errno));
        CHECK(unshare(CLONE_NEWUTS) < 0 && errno == ENOSPC, "unshare(CLONE_NEWUTS) after max 0: %s",
              strerror(errno));
        return 0;
}

static int child_maxima(char *msg, size_t len)
{
        int status;
        pid_t pid;

        if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) < 0) {
                int err = errno;
                snprintf(msg, len, "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID): %s", strerror(err));
                return err == EPERM || err == EUSERS || err == ENOSPC || err == EINVAL || err == ENOSYS ? CHILD_SKIP : 1;
        }
        pid = fork();
        CHECK(pid >= 0, "fork: %s", strerror(errno));
        if (pid == 0)
                _exit(pid1_maxima(msg, len));
        CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void test_namespace_maxima(void **state)
{
        (void) state;
        run_in_child(child_maxima);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rlimits_lowered_never_raised),
                cmocka_unit_test(test_namespace_maxima),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
