/* util/error.h — the one error object every fallible step fills.
 *
 * Owns: struct nsb_error and the stage names of the CONTRACT's `error.stage`.
 * Rules:
 *   - a fallible function returns 0 (or a non-negative value) on success and
 *     -errno on failure, and fills the caller's struct nsb_error;
 *   - the leaf calls nsb_fail(); each caller on the way up calls
 *     nsb_error_prefix() to prepend its context and returns its result unchanged;
 *   - an error the code makes up itself carries an explicit code (EINVAL, ...),
 *     never whatever errno holds;
 *   - the struct is fixed-size and pointer-free, so it can be built in a child
 *     after clone() and sent whole to the supervisor (see supervisor/wire.h).
 * No function here logs or prints.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>

enum nsb_stage {
        NSB_STAGE_NONE = 0,
        NSB_STAGE_USAGE,      /* command line */
        NSB_STAGE_CONFIG,     /* profile / spec / values */
        NSB_STAGE_PREPARE,    /* host-side preparation: interpreter, files */
        NSB_STAGE_CGROUP,
        NSB_STAGE_CLONE,      /* creating the namespaces */
        NSB_STAGE_USERNS,     /* uid/gid maps */
        NSB_STAGE_MOUNT,
        NSB_STAGE_NET,
        NSB_STAGE_RLIMIT,
        NSB_STAGE_CAPS,
        NSB_STAGE_NNP,
        NSB_STAGE_LANDLOCK,
        NSB_STAGE_SECCOMP,
        NSB_STAGE_EXEC,
        NSB_STAGE_SUPERVISE,
        NSB_STAGE_OUTPUT,
        NSB_STAGE__MAX,
};

#define NSB_ERROR_MSG_MAX 480

struct nsb_error {
        int stage;                      /* enum nsb_stage, int for a fixed wire layout */
        int errnum;                     /* positive errno; 0 when not from a syscall */
        char msg[NSB_ERROR_MSG_MAX];    /* context, outermost first, without strerror */
};

/* Fill @e (stage, errnum, formatted message) and return -errnum (or -EINVAL
 * when errnum is 0, so a failure is never mistaken for success). */
int nsb_fail(struct nsb_error *e, enum nsb_stage stage, int errnum, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Prepend "context: " to e->msg. Returns -e->errnum (-EINVAL if 0), so a caller
 * may write `return nsb_error_prefix(e, "...")`. */
int nsb_error_prefix(struct nsb_error *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

const char *nsb_stage_name(enum nsb_stage stage);

/* "msg: strerror(errnum)" (or just msg) into buf; returns buf. A usage or
 * config error with EINVAL, ERANGE or EDOM (a bad value nsbox refused, whose
 * message says what is allowed) gets no strerror. */
const char *nsb_error_describe(const struct nsb_error *e, char *buf, size_t len);

void nsb_error_clear(struct nsb_error *e);
