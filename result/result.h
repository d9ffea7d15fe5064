/* result/result.h — the outcome of one sandboxed run, and its pure mappings.
 *
 * Owns: struct run_result (what the supervisor observed), its rendering as the
 * CONTRACT's `nsbox.result/1` object, and the process exit code it maps to.
 * The program's outcome (exited, signaled, limit, cancelled) and a sandbox
 * failure (error) are separate statuses; nothing is encoded in-band.
 * Pure: no syscalls.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/error.h"
#include "util/ledger.h"

enum run_status { RUN_EXITED = 0, RUN_SIGNALED, RUN_LIMIT, RUN_CANCELLED, RUN_ERROR };

enum run_limit {
        LIMIT_NONE = 0,
        LIMIT_WALL_TIME,
        LIMIT_CPU_TIME,
        LIMIT_MEMORY,
        LIMIT_PIDS,
        LIMIT_OUTPUT,
        LIMIT_FILE_SIZE,
        LIMIT__MAX,
};

#define RUN_TAIL_MAX 4096

struct run_stream {
        char *text;          /* the first `kept` bytes the program wrote (raw, not NUL-safe) */
        size_t kept;
        uint64_t bytes;      /* everything the program wrote to the stream */
        bool truncated;      /* bytes > kept */
        char tail[RUN_TAIL_MAX]; /* the last tail_len bytes, when truncated */
        size_t tail_len;
        int relay_errno;     /* the first failure copying it on to nsbox's own stream (0: none) */
};

struct run_result {
        enum run_status status;
        enum run_limit limit;        /* when status == RUN_LIMIT */
        unsigned limits_hit;         /* bit (1u << enum run_limit) per limit reached */
        int exit_code;               /* when RUN_EXITED */
        int signal;                  /* when RUN_SIGNALED (or the signal that ended a limit run) */
        double wall_ms;
        double cpu_ms;
        uint64_t peak_memory_bytes;
        bool peak_memory_known;
        struct run_stream out, err;
        enum nsb_isolation isolation;
        struct nsb_ledger ledger;
        char **command;              /* the argv that ran (or was to run) */
        size_t command_len;
        char program_sha256[65];     /* "" when there is no program file */
        char policy_sha256[65];      /* "" until profiles compute it */
        char image_ref[512];         /* --image as given, "" without one */
        char image_digest[72];       /* "sha256:HEX" of the image that ran, "" without one */
        struct nsb_error error;      /* when RUN_ERROR */
        bool warm;                   /* started from a zygote (`"start": "warm"`), else cold */
        char start_reason[160];      /* cold although --warm was asked: why ("" = not asked) */
        char limit_value[48];        /* RUN_LIMIT: the limit's value as its flag takes it ("" = not known) */
        json_t *fetched;             /* the files read back from /workspace: {"files": {name: base64},
                                        "files_refused": {name: why}} merged into the result object
                                        (supervisor/fetch_plan.h); NULL: none asked, or the run
                                        ended before they could be read */
        int command_exit;            /* RUN_ERROR because the command itself could not be run:
                                        127 not found, 126 found but not executable (as
                                        timeout(1) and shells say); 0 otherwise */
};

const char *run_status_name(enum run_status s);
const char *run_limit_name(enum run_limit l);   /* NULL for LIMIT_NONE */

/* The CONTRACT's result object. @output_limit bounds `tail` (never more than
 * the limit). A stream's `text` or `tail` that is not valid UTF-8 also comes
 * as `text_base64`/`tail_base64`, the exact bytes. Returns a new reference,
 * NULL on allocation failure. */
json_t *result_to_json(const struct run_result *r, uint64_t output_limit);

/* Exit status of nsbox run/python: the program's exit code; 128+N for signal
 * N; 124 for a limit; 130 for cancelled; 127/126 when the command does not
 * exist / cannot be executed; 125 for any other nsbox failure. */
int result_exit_code(const struct run_result *r);

/* Are these @len bytes valid UTF-8 (NUL included)? */
bool result_utf8_valid(const char *s, size_t len);

/* Valid UTF-8 copy of @len bytes, invalid sequences replaced with U+FFFD. */
char *result_utf8_sanitize(const char *s, size_t len);
/* The same, with its length in *ret_len (a NUL byte is kept). */
char *result_utf8_sanitize_len(const char *s, size_t len, size_t *ret_len);

void run_result_free(struct run_result *r);
