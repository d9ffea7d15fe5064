/* config/stdin_plan.c — see stdin_plan.h. Pure. */
#include "config/stdin_plan.h"

#include <stddef.h>
#include <sys/stat.h>

static const char *what_it_is(const struct stdin_src *src)
{
        mode_t mode = src->mode;

        if (S_ISDIR(mode))
                return "a directory";
        if (S_ISFIFO(mode))   /* an anonymous pipe is streamed where it can be told apart */
                return src->pipe_known ? "a FIFO (named pipe)" : "a FIFO or a pipe";
        if (S_ISSOCK(mode))
                return "a socket";
        if (S_ISCHR(mode))
                return "a character device other than /dev/null";
        if (S_ISBLK(mode))
                return "a block device";
        return "not a regular file";
}

enum stdin_how stdin_plan(const struct stdin_src *src, const char **ret_why)
{
        *ret_why = NULL;
        if (!src->given || (S_ISCHR(src->mode) && src->is_null && !src->tty))
                return STDIN_EMPTY;
        if (S_ISREG(src->mode))
                return src->size <= STDIN_COPY_MAX ? STDIN_COPY : STDIN_PUMP;
        if (S_ISDIR(src->mode)) {
                *ret_why = what_it_is(src);
                return STDIN_REFUSE;
        }
        /* nsbox's own stdin is already open: reading it has no effect an
         * open by name would have, and the program only ever sees the
         * pipe the supervisor feeds (a terminal included: TIOCSTI). An
         * anonymous pipe by path likewise: its open wakes no writer and
         * it is no host file (the supervisor opens it nonblocking). */
        if (src->dash || (S_ISFIFO(src->mode) && src->anon_pipe))
                return STDIN_PUMP;
        *ret_why = what_it_is(src);
        return STDIN_REFUSE;
}
