/* config/stdin_plan.c — see stdin_plan.h. Pure. */
#include "config/stdin_plan.h"

#include <stddef.h>
#include <sys/stat.h>

static const char *what_it_is(mode_t mode)
{
        if (S_ISDIR(mode))
                return "a directory";
        if (S_ISFIFO(mode))
                return "a FIFO (named pipe)";
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
                *ret_why = what_it_is(src->mode);
                return STDIN_REFUSE;
        }
        /* nsbox's own stdin is already open: reading it has no effect an
         * open by name would have, and the program only ever sees the
         * pipe the supervisor feeds (a terminal included: TIOCSTI). */
        if (src->dash)
                return STDIN_PUMP;
        *ret_why = what_it_is(src->mode);
        return STDIN_REFUSE;
}
