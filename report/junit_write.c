/* report/junit_write.c — the --junit FILE, opened as --result is. */
#include "report/junit.h"

#include <errno.h>
#include <unistd.h>

#include "util/cleanup.h"
#include "util/resultfile.h"

int junit_write(const char *path, const char *suite, const struct junit_case *cases, size_t n, double time_s,
                const struct junit_case *run,
                struct nsb_error *e)
{
        AUTO(fclose) FILE *f = NULL;
        int fd = result_file_open_as(path, false, "--junit", e);

        if (fd < 0)
                return fd;
        if (!(f = fdopen(fd, "w"))) {
                close(fd);
                return nsb_fail(e, NSB_STAGE_OUTPUT, ENOMEM, "--junit '%s'", path);
        }
        errno = 0;
        if (junit_render(f, suite, cases, n, time_s, run) < 0 || fflush(f) != 0)
                return result_file_fail(f, e, "--junit: writing '%s'", path);
        return 0;
}
