/* tests/unit/child_check.h — a check that runs in a forked child.
 *
 * The child runs fn(msg, len) and exits with its result: 0 pass, 1 fail
 * (with @msg), CHILD_SKIP when what it needs is missing (e.g. no user
 * namespace); run_in_child turns that into cmocka's pass, failure or
 * skip_or_fail. CHECK(cond, fmt, ...) inside such a fn fails it with a
 * message. Include after <cmocka.h> and must_run.h.
 */
#pragma once

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_SKIP 77

typedef int (*child_fn)(char *msg, size_t len);

static inline void run_in_child(child_fn fn)
{
        char msg[512] = "";
        int fds[2], status;
        ssize_t got;
        pid_t pid;

        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int r;
                (void) close(fds[0]);
                r = fn(msg, sizeof msg);
                (void) !write(fds[1], msg, strnlen(msg, sizeof msg - 1));
                _exit(r);
        }
        (void) close(fds[1]);
        got = read(fds[0], msg, sizeof msg - 1);
        msg[got > 0 ? got : 0] = '\0';
        (void) close(fds[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
                fail_msg("child killed by signal %d (%s)", WTERMSIG(status), msg);
        if (WEXITSTATUS(status) == CHILD_SKIP)
                skip_or_fail("%s", msg);
        if (WEXITSTATUS(status) != 0)
                fail_msg("%s", msg);
}

#define CHECK(cond, ...)                                                        \
        do {                                                                    \
                if (!(cond)) {                                                  \
                        snprintf(msg, len, __VA_ARGS__);                        \
                        return 1;                                               \
                }                                                               \
        } while (0)
