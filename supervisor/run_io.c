/* supervisor/run_io.c — see run_io.h. */
#include "supervisor/run_io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/capture.h"

#include "nsbox-config.h"
#include "util/cleanup.h"

double run_elapsed_ms(const struct timespec *start)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double) (now.tv_sec - start->tv_sec) * 1e3 + (double) (now.tv_nsec - start->tv_nsec) / 1e6;
}

int run_copy_command(struct run_result *r, char *const *argv, size_t argc)
{
        r->command = calloc(argc + 1, sizeof *r->command);
        if (!r->command)
                return -ENOMEM;
        for (size_t i = 0; i < argc; i++) {
                if (!(r->command[i] = strdup(argv[i])))
                        return -ENOMEM;
                r->command_len = i + 1;
        }
        return 0;
}

/* 0, or the errno of a failed write (the rest of @buf is dropped: the
 * capture goes on, the caller keeps the first failure). */
static int relay(int fd, const char *buf, size_t n)
{
        while (n > 0) {
                ssize_t w = write(fd, buf, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return w < 0 ? errno : EIO;
                buf += w;
                n -= (size_t) w;
        }
        return 0;
}

int run_read_stream(int *fd, struct run_stream *st, uint64_t limit, int relay_fd, const struct run_result *r)
{
        char buf[65536];
        ssize_t n = read(*fd, buf, sizeof buf);
        long kept;

        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return 0;
        if (n <= 0) {
                close_fd(fd);
                return 0;
        }
        kept = capture_feed(st, limit, buf, (size_t) n);
        if (kept < 0)
                return -ENOMEM;
        if (relay_fd >= 0 && kept > 0 && !st->relay_errno)
                st->relay_errno = relay(relay_fd, buf, (size_t) kept);
        return capture_over_limit(r->out.bytes + r->err.bytes, limit) ? 1 : 0;
}

void run_take_ledger(struct run_result *r, const struct nsb_ledger *l)
{
        for (int p = 0; p < PROT__MAX; p++)
                if (l->val[p][0])
                        ledger_set(&r->ledger, (enum nsb_prot) p, l->val[p]);
}

void run_take_error(struct run_result *r, bool *setup_error, const struct nsb_error *e)
{
        if (*setup_error)
                return;
        *setup_error = true;
        r->error = *e;
        r->error.msg[NSB_ERROR_MSG_MAX - 1] = '\0';
}

int run_check_dir(const char *option, const char *path, struct nsb_error *e)
{
        struct stat st;

        if (!path)
                return 0;
        if (stat(path, &st) < 0)
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s '%s'", option, path);
        if (!S_ISDIR(st.st_mode))
                return nsb_fail(e, NSB_STAGE_CONFIG, EINVAL, "%s '%s' is not a directory", option, path);
        if (access(path, X_OK) < 0)     /* the program could not enter it */
                return nsb_fail(e, NSB_STAGE_CONFIG, errno, "%s '%s'", option, path);
        return 0;
}

int run_test_fail_stage(void)
{
#if NSBOX_TEST_HOOKS
        const char *v = getenv("NSBOX_TEST_FAIL_STEP");
        for (int st = 1; v && st < NSB_STAGE__MAX; st++)
                if (strcmp(v, nsb_stage_name((enum nsb_stage) st)) == 0)
                        return st;
#endif
        return 0;
}
