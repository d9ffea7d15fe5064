/* supervisor/warm_spec.h — what a warm job's init needs, as one flat buffer.
 *
 * Owns: the job spec the supervisor (a batch worker, or judge) writes into a
 * sealed memfd and the zygote reads after receiving it: the limits the job's
 * steps apply, its cgroup backend, the seccomp program and the Landlock
 * rules the supervisor compiled for it (the same as a cold run's), and its
 * init's mount plan (mnt_plan_build_warm_job), the program file included.
 * The zygote, a fresh process image, holds none of the supervisor's memory:
 * everything it needs crosses here, and nothing of the job's reaches it
 * before the fork but this buffer, unread by Python.
 *
 * Invariants: fixed-width little-endian fields, a magic and a version;
 * every length is checked against the buffer before it is used, so a
 * truncated or foreign buffer is an error, never a read past its end.
 * Pure: no syscalls.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/cgroup.h"
#include "config/config.h"
#include "landlock/landlock.h"
#include "mount/mnt.h"
#include "ns/ucount.h"
#include "seccomp/filter.h"
#include "util/error.h"

#define WARM_SPEC_MAGIC 0x5753424eu      /* "NBSW" */
#define WARM_SPEC_VERSION 3u      /* 2: the job's ucount share; 3: the plan's fetch names */

/* What the job's steps read of the configuration and cgroup. */
struct warm_limits {
        uint64_t wall_time_ms, cpu_time_ms, memory_bytes, pids_max, file_size_bytes;
        int32_t backend;                 /* enum cg_backend */
        uint8_t rlimit_cpu;              /* RLIMIT_CPU per process (no cgroup CPU clock) */
        uint8_t join_late;               /* the cgroup join fds arrive over the job socket */
        int32_t fail_stage;              /* NSBOX_TEST_FAIL_STEP, or 0 */
        uint64_t cg_memory_bytes, cg_pids_max;   /* the cg_spec the rlimit backend applies */
        struct ucount_share ucounts;     /* the job's share of the per-user budgets (ns/ucount.h) */
};

/* The decoded spec: strings and the program point into the buffer, which
 * must outlive it; the rules, ops and filter are allocated (warm_job_free). */
struct warm_job {
        struct warm_limits lim;
        struct nsb_config cfg;           /* zeroed but for the limits above */
        struct cg_spec cg_spec;
        struct filter_prog filter;
        struct ll_path_rule *rules;
        struct ll_spec landlock;
        struct mnt_plan plan;
        char **argv;                     /* the job's whole argv, NULL-terminated (allocated) */
        size_t argc;
        size_t script;                   /* argv[script] is the program's path: before it, the
                                            interpreter and its arguments (the zygote's own) */
};

/* Encode into a malloc'd buffer (*ret, *ret_len). -ENOMEM. */
int warm_spec_encode(const struct warm_limits *lim, const struct filter_prog *filter, const struct ll_spec *landlock,
                     const struct mnt_plan *plan, char *const *argv, size_t argc, size_t script, char **ret,
                     size_t *ret_len, struct nsb_error *e);

/* Decode @buf (borrowed for the life of @ret). -EPROTO with what was wrong. */
int warm_spec_decode(const char *buf, size_t len, struct warm_job *ret, struct nsb_error *e);
void warm_job_free(struct warm_job *j);
