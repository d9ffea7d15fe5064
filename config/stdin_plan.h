/* config/stdin_plan.h — what the program's standard input is made of.
 *
 * Owns: the decision, from what the caller named (--stdin PATH, --stdin -,
 * nothing) and what that is (its fstat), of how nsbox builds the program's
 * stdin. The rule it keeps (issue #27): the program never holds a file
 * description the caller opened, nor one of a host file the caller owns.
 * Inside the sandbox the caller's uid is the sandbox's mapped uid, so owner
 * checks pass: with the caller's description (or any description of the
 * caller's file) the program could fchmod/fchown/futimens/fsetxattr the
 * host file, set O_NONBLOCK/O_APPEND on the caller's description, hold an
 * flock or take a lease that outlive the run, and read the host path in
 * /proc/self/fd/0. So:
 *   - a regular file up to STDIN_COPY_MAX: copied into a sealed, read-only,
 *     non-executable memfd (fstat's st_size and lseek keep working);
 *   - anything nsbox's own stdin is (pipe, terminal, socket, FIFO, device,
 *     a larger file): streamed into a fresh pipe by the supervisor
 *     (supervisor/stdin_pump.h);
 *   - /dev/null (by name, or as nsbox's own stdin): /dev/null opened anew —
 *     the sandbox's own /dev/null is the host's node, which the program can
 *     open itself: a fresh description of it gives nothing more;
 *   - an anonymous pipe named by path (`--stdin <(cmd)`: /dev/fd/63):
 *     streamed like nsbox's own stdin — a fresh description nsbox opens
 *     and reads, never the program's; it has no host file to harm and no
 *     FIFO writer to wake;
 *   - a directory, FIFO, socket or device other than /dev/null named by
 *     path: refused before anything runs (opening a FIFO or a device by name
 *     has effects of its own; a directory is nobody's input).
 * Pure: no syscalls. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Above this a regular file is streamed, not copied: a memfd is memory,
 * and a multi-GB input must not cost its size before the program reads a
 * byte. The same bound as judge --observe's recorded stdin. */
#define STDIN_COPY_MAX ((uint64_t) 64 << 20)

enum stdin_how {
        STDIN_EMPTY,    /* /dev/null, opened anew by the supervisor */
        STDIN_COPY,     /* a sealed memfd holding the file's bytes */
        STDIN_PUMP,     /* a fresh pipe the supervisor feeds */
        STDIN_REFUSE,   /* a usage error, said before anything runs */
};

struct stdin_src {
        bool given;             /* --stdin given at all (else: /dev/null) */
        bool dash;              /* --stdin -: nsbox's own standard input */
        bool tty;               /* that is a terminal */
        bool is_null;           /* a character device that is /dev/null */
        bool pipe_known;        /* a FIFO's kind was looked at (Linux: its filesystem) */
        bool anon_pipe;         /* a pipe with no name (pipefs), named by its /dev/fd/N or
                                   /proc/PID/fd/N link: `--stdin <(cmd)` */
        mode_t mode;            /* its st_mode */
        uint64_t size;          /* its st_size (regular files) */
};

/* How to build the stdin for @src. STDIN_REFUSE: *ret_why says what it is
 * ("a directory", "a FIFO (named pipe)", ...), for the message. */
enum stdin_how stdin_plan(const struct stdin_src *src, const char **ret_why);
