/* config/hints.h — hints for the terminal: bubblewrap habits, limits. Pure.
 *
 * Owns: the table of bwrap options nsbox does not take, each with nsbox's
 * equivalent, and the recognition of a two-word bind. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* The hint for bwrap option --@name (@len bytes, without the dashes), or
 * NULL when it is not one of bwrap's that nsbox lacks. */
const char *cfg_bwrap_option_hint(const char *name, size_t len);

/* When @cfg looks like bwrap's `--ro-bind SRC DST` (or --bind) typed as two
 * words (a bind without DST, then an absolute word not below it) and
 * @error, the message of nsbox's own failure, quotes that word ('WORD': the
 * script, command or input nsbox could not use): the hint in @buf, true.
 * The shape is legal: a program's own exit status, or a failure that names
 * something else, gets no hint. Valid on a configuration whose parse failed
 * too (the binds parsed so far). */
bool cfg_bwrap_pair_hint(const struct nsb_config *cfg, const char *error, char *buf, size_t size);

/* "the memory limit (256M; raise it with --memory SIZE)" for the limit a
 * result names (run_limit_name(): "memory", "wall_time", "output", ...),
 * with the value @cfg ran under; false for a name without a flag. */
bool cfg_limit_hint(const struct nsb_config *cfg, const char *limit, char *buf, size_t size);
