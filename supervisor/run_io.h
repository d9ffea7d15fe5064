/* supervisor/run_io.h — what both platforms' supervisors (supervisor/sandbox.c
 * on Linux, platform/posix/sandbox_posix.c) do alike around a run: read a
 * program's stream into its bounded capture and relay it, time the run,
 * record the command, take the records the sandbox sends, close descriptors,
 * and the fail-step test hook.
 * Portable (POSIX); no state. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "result/result.h"

/* Milliseconds since @start (CLOCK_MONOTONIC). */
double run_elapsed_ms(const struct timespec *start);

/* r->command = a copy of @argv. 0, or -ENOMEM. */
int run_copy_command(struct run_result *r, char *const *argv, size_t argc);

/* One read of *fd into @st under @limit (capture_feed), the kept bytes
 * copied to @relay_fd when it is >= 0 (until a write fails: its errno in
 * st->relay_errno); *fd closed at end of file. 1 when
 * @written_before plus this read put both streams past the point where the
 * output limit stops the run, 0 otherwise, -ENOMEM. */
int run_read_stream(int *fd, struct run_stream *st, uint64_t limit, int relay_fd, const struct run_result *r);

/* A READY record: the ledger entries the program's steps set, over @r's. */
void run_take_ledger(struct run_result *r, const struct nsb_ledger *l);

/* A setup error (an ERROR record, or a malformed one): the first one is the
 * run's; *setup_error says one was taken. */
void run_take_error(struct run_result *r, bool *setup_error, const struct nsb_error *e);

/* --workspace and --harness (@option) name directories the program can
 * enter (and the workspace is its working directory): say so before
 * anything runs, rather than let the attach or chdir fail later with a bare
 * "Invalid argument". 0 when @path is NULL. */
int run_check_dir(const char *option, const char *path, struct nsb_error *e);

/* NSBOX_TEST_FAIL_STEP's stage (enum nsb_stage) in a build with test
 * hooks, else 0. */
int run_test_fail_stage(void);
