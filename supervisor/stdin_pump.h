/* supervisor/stdin_pump.h — the program's standard input, built so that it
 * never holds a file description the caller opened (stdin_plan.h says why
 * and decides how), and the pump that streams one into a fresh pipe.
 *
 * Owns: the sealed memfd of a copied file or of a run's own stdin bytes,
 * and for a streamed input one pipe, a small buffer and (a large file named
 * by --stdin) the supervisor's own read descriptor of that file. What is
 * streamed — a pipe, a terminal (TIOCSTI/TIOCLINUX on it could type into
 * the caller's shell), a socket (it could be written back through), a FIFO,
 * a device, a file above STDIN_COPY_MAX — reaches the program as the read
 * end of a pipe; a small child of the supervisor (the pump process:
 * stdin_pump.c says why not the supervisor itself) copies into it as the
 * input comes (a terminal: line by line as it delivers them). End of input
 * (a terminal's Ctrl-D) closes the pipe; a program that closed its stdin
 * (EPIPE) stops the copy; the run's end kills the pump. The caller's
 * descriptor is never closed, and its flags (O_NONBLOCK included) are
 * never changed. SIGPIPE must be ignored (plat_cancel_fd does, for every
 * command that runs something): a closed reader is EPIPE.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"
#include "util/error.h"

struct stdin_pump {
        int src;                /* what is copied: nsbox's stdin, or the pump's own; -1 = none */
        bool src_owned;         /* src is the pump's (a file by name): closed with it */
        int dst;                /* write end of the program's stdin pipe until the pump starts; -1 */
        pid_t pid;              /* the pump process, once started; 0 = none */
};

/* The program's stdin for @cfg's --stdin (none: /dev/null): *ret_fd, a new
 * CLOEXEC descriptor that is /dev/null opened anew, a sealed memfd, or the
 * read end of a pipe @p then feeds (else @p stays idle). A regular file
 * given as `-` is copied from nsbox's offset, which then moves to its end
 * (as a reader of all of it would leave it). -errno: refused (stage usage,
 * see stdin_plan.h), or the file could not be read (prepare). */
int stdin_open(struct stdin_pump *p, const struct nsb_config *cfg, int *ret_fd, struct nsb_error *e);

/* A run's own stdin bytes (a judge case's, a batch job's): a sealed,
 * read-only, non-executable memfd holding them, in *ret_fd (CLOEXEC). */
int stdin_memfd(const char *data, size_t len, int *ret_fd, struct nsb_error *e);

/* A pipe for @src (not owned): *ret_read_fd (CLOEXEC) becomes the
 * program's stdin. */
int stdin_pump_open(struct stdin_pump *p, int src, int *ret_read_fd, struct nsb_error *e);

/* Start the pump, if stdin_open made one: a child of the caller (the
 * supervisor) that copies src into the pipe with blocking reads and writes
 * until src's end, an error, or the program's closed stdin (EPIPE); the
 * supervisor's copies of the write end (and of a file by name) are closed.
 * After the sandbox's clone, so the init never holds the write end. */
int stdin_pump_start(struct stdin_pump *p, struct nsb_error *e);

/* The run is over: the pump is killed (a read blocked on the caller's
 * terminal or pipe included) and reaped, and what it owned closed. Input
 * it read that the program never consumed is lost, as any reader's is. */
void stdin_pump_end(struct stdin_pump *p);

/* Closes what the pump owns, nothing more (in a child too: the init must
 * hold neither the write end nor the file). */
void stdin_pump_close(struct stdin_pump *p);
