/* supervisor/fetch_plan.h — the files a job's init reads back from its
 * /workspace after the run (a batch job's "fetch_files"), as they cross
 * from the init to the supervisor, and as the result shows them.
 *
 * Owns: the record layout the init writes into a memfd (one per name, in
 * the plan's order: a header, then the bytes), its bounds, and the JSON the
 * result carries: "files" {name: base64} and, for names not fetched,
 * "files_refused" {name: why}.
 *
 * Invariants: the supervisor trusts nothing of the buffer (the init wrote
 * it after the program ran): every length is checked against the buffer
 * and the bounds, and a record for a name is matched by position only.
 * Pure: no syscalls.
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "result/result.h"
#include "util/error.h"

#define FETCH_FILE_MAX (8u << 20)       /* one fetched file at most; a larger one is refused (EFBIG) */
#define FETCH_TOTAL_MAX (16u << 20)     /* all of a job's fetched files together */

struct fetch_head {
        uint32_t err;                   /* 0: @len bytes follow; else the errno why not (none follow) */
        uint32_t pad;
        uint64_t len;
};

/* Why a name was not fetched, for the result: "a symbolic link: not
 * followed", "not a regular file (a FIFO, device, socket or directory)",
 * "larger than 8 MiB", "no such file", or strerror's. */
const char *fetch_refusal(int err);

/* The buffer @buf (@len bytes) for the @n names @names into "files" and
 * "files_refused" set on @result (the run's result object). -EPROTO when it
 * is malformed or past the bounds (nothing set), -ENOMEM. */
int fetch_render(const char *buf, size_t len, char *const *names, size_t n, json_t *result, struct nsb_error *e);

/* Why no record came back for a job that named files to fetch (@r its
 * result, decided), for a job whose result has the keys (one that exited,
 * died of a signal or of a limit other than time): the memory limit was
 * reached (the workspace's tmpfs pages and the init's reading of them count
 * against it), else the init sent none. NULL for a job stopped by a time
 * limit, cancelled or failed: its init was stopped with it, and its result
 * has neither key (contract.md). */
const char *fetch_unread_reason(const struct run_result *r);

/* Every one of the @n names @names in "files_refused" (@why), "files"
 * empty, set on @result. -ENOMEM. */
int fetch_render_unread(char *const *names, size_t n, const char *why, json_t *result);
