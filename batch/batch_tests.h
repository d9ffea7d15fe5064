/* batch/batch_tests.h — `test` jobs of `nsbox batch` (docs/batch.md, "Test
 * jobs"): the keys of a job line, the package the split harness
 * (harness/nsbox_split.py) reads on its stdin, and the verdict from the
 * report its test process writes. Pure.
 *
 * Invariants:
 *   - the package puts the tests part (the report key, then test_code) after
 *     everything the code's process is given, so the harness can fork the
 *     code's process before the tests are read;
 *   - only report lines that start with the run's key count; `pass` needs a
 *     complete report (start, one passed event per announced test, done) and
 *     a test process that exited 0; everything else the code can cause is
 *     `fail`; `error` only when the sandbox failed (or the run was cancelled).
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "batch/batch.h"

#define BATCH_ENTRY_MAX 100     /* entry_point: a Python identifier this long at most */
#define BATCH_TEST_KEY_LEN 32   /* hex digits of the report key */
/* The harness's exit status when it could not set up (before the fork, so
 * before any of the code ran): nsbox's failure, outcome error. */
#define BATCH_TEST_SETUP_FAILED 3

/* code, test_code (required, no NUL), entry_point (optional identifier) into
 * @job (program = code). -errno, stage config. */
int batch_test_parse(const json_t *root, struct batch_job *job, struct nsb_error *e);

/* The harness's own time budget for a wall-time limit: the limit minus a
 * margin (a tenth, at most 1 s), so a hang is reported by the harness. */
uint64_t batch_test_budget_ms(uint64_t wall_ms);

/* The package: header line, code, the code's stdin, KEY "\n", test_code.
 * malloc'd (NUL-terminated, not counted). -ENOMEM, -EINVAL. */
int batch_test_package(const struct batch_job *job, uint64_t budget_ms, const char *key, char **ret, size_t *ret_len);

/* {"tests": [{name, outcome, duration_ms, message}], "counts": {passed,
 * failed, total}, "score"} from the run's stdout (@out, @len) and @r; the
 * outcome in *ret_outcome. NULL on ENOMEM. */
json_t *batch_test_verdict(const char *out, size_t len, const char *key, const struct run_result *r,
                           enum batch_outcome *ret_outcome);
