/* supervisor/stdin_pump.h — `--stdin -` from a terminal: nsbox's own stdin
 * copied into a pipe the program reads.
 *
 * Owns: one pipe and a small buffer. A terminal is never handed into the
 * sandbox (TIOCSTI/TIOCLINUX on it could type into the caller's shell, and
 * it would be a way back out): the program gets the read end of a pipe, and
 * the supervisor's poll loop copies what the caller types into it, line by
 * line as the terminal delivers it. End of input (Ctrl-D) closes the pipe;
 * a program that closed its stdin (EPIPE) stops the copy. The caller's
 * descriptor is never closed. Single-threaded: driven by sbx's poll loop.
 * SIGPIPE must be ignored (plat_cancel_fd does, for every command that runs
 * something): a closed reader is EPIPE.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

struct stdin_pump {
        int src;                /* nsbox's stdin (not owned); -1 = at its end */
        int dst;                /* write end of the program's stdin pipe (owned, nonblocking); -1 = closed */
        char buf[4096];
        size_t off, len;        /* unwritten bytes: buf[off, len) */
};

/* A pipe for @src: *ret_read_fd (CLOEXEC) becomes the program's stdin. */
int stdin_pump_open(struct stdin_pump *p, int src, int *ret_read_fd, struct nsb_error *e);

/* The descriptor and events to poll now; false when there is nothing to do. */
bool stdin_pump_want(const struct stdin_pump *p, int *ret_fd, short *ret_events);

/* Called when that descriptor polled ready: one read or one write. */
void stdin_pump_step(struct stdin_pump *p);

void stdin_pump_close(struct stdin_pump *p);
