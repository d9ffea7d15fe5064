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

/* @limit's value under @cfg as its flag takes it ("256M", "300ms"), the
 * result's `limit_value`; false for a name without a flag. */
bool cfg_limit_value(const struct nsb_config *cfg, const char *limit, char *buf, size_t size);

/* The one wording for every front end (CLI, judge, serve, report): "the
 * memory limit (256M; raise it with --memory SIZE)" from a result's `limit`
 * and `limit_value` (NULL, "" or not a short unit-suffixed number: left
 * out). False, and "the NAME limit" in @buf, for a name without a flag
 * (a caller showing a name read from a file quotes it its own way). */
bool cfg_limit_describe(const char *limit, const char *value, char *buf, size_t size);

/* As cfg_limit_describe, but raised by @raise, said after "raise it with "
 * ("run_timeout", "the spec's limits.memory"); "": no way to raise it is
 * said (a /run_code caller cannot: "the pids limit (64)"); NULL: the flag. */
bool cfg_limit_describe_by(const char *limit, const char *value, const char *raise, char *buf, size_t size);

/* @limit's key in a judge spec's or batch job's "limits" ("memory",
 * "output_limit" for "output"); NULL for a name without one. */
const char *cfg_limit_key(const char *limit);
