/* util/resultfile.h — the file --result names, written after the program ran.
 *
 * The program may have written the directory that holds it (a host
 * --workspace): it can plant a symlink or a FIFO at the name, or swap a
 * directory of the path for a symlink, while it runs, and nsbox (perhaps root)
 * writes there afterwards. So the path is pinned before the run (its
 * directory resolved once, symlinks and all, as the caller meant it) and
 * opened after it without following any symlink; only a regular file (or a
 * new one) is written.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>
#include "util/error.h"
#include "util/textsafe.h"   /* every JSON nsbox writes: textsafe_json_dumps/_dumpf */

/* Before the run: @path with its directory resolved (realpath), malloc'd; a
 * copy of @path when the directory cannot be resolved (opening fails later,
 * with the reason). NULL only without memory. */
char *result_path_pin(const char *path);

/* The pinned @path opened for writing, truncated unless @append, under the
 * rules below: a file descriptor, or a negative errno with @e set. `nsbox
 * batch` opens it before any job runs and writes each result line as it
 * comes. */
int result_file_open(const char *path, bool append, struct nsb_error *e);
/* The same, its messages naming the option @what ("--junit", "--html"). */
int result_file_open_as(const char *path, bool append, const char *what, struct nsb_error *e);

/* After the run: @root (json_dumpf @flags, then a newline) written to the
 * pinned @path, truncating it; 0, or a negative errno with @e set. Refused: a
 * symlink anywhere in the path (ELOOP), a file that is not regular (EINVAL);
 * a FIFO never blocks. */
int result_file_write(const char *path, const json_t *root, size_t flags, struct nsb_error *e);

/* The same rules for a JSON Lines file (`nsbox judge --observe`): each
 * element of the array @lines on a line of its own, compact. @what names the
 * option in messages ("--observe"). */
int result_file_write_lines(const char *path, const char *what, const json_t *lines, struct nsb_error *e);

/* A file nsbox reads or writes, named by the option (or operand) that gave it. */
struct result_file_role {
        const char *what;       /* "--junit", "the spec", ... */
        const char *path;       /* NULL: not given */
};

/* Before anything runs or is written: 0 when each of the @n_out files nsbox
 * will write differs from every other one and from each of the @n_in files it
 * reads, and can be written (result_file_precheck, in the order given); else
 * -EINVAL with @e naming both ("--junit and --result name the same file 'P'
 * ..."): one would overwrite the other, or the evidence or the spec; or
 * result_file_precheck's error. The same file is the same inode (a hard
 * link, another spelling of the path), or, for a file not there yet, the same
 * pinned path. */
int result_files_check(const struct result_file_role *outs, size_t n_out,
                       const struct result_file_role *ins, size_t n_in, struct nsb_error *e);

/* A write to @f (a file opened by result_file_open*) failed: @f truncated to
 * nothing, so no half-written file is left that reads as the start of a whole
 * one, and @e set to the formatted message with errno's reason (ENOSPC,
 * EFBIG; EIO when errno says nothing). Returns a negative errno. */
int result_file_fail(FILE *f, struct nsb_error *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Before the run: 0 when @path (pinned; NULL: not given) can be written
 * afterwards as far as can be told now: an existing regular file we may
 * write, or a new name in a directory we may write. Else -errno with @e
 * ("@what: cannot create 'P': No such file or directory"), so that a
 * long run is not made only to find its output cannot be kept. The write
 * after the run still checks everything again. */
int result_file_precheck(const char *what, const char *path, struct nsb_error *e);
