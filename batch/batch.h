/* batch/batch.h — `nsbox batch`: many jobs, one fresh sandbox each, JSON Lines out.
 *
 * Owns: the job line format (CONTRACT "Batch"), the coarse python outcome
 * (pass/fail/timeout/error and its label), the output line, sharding,
 * resuming, the progress line, and the driver that runs up to -j jobs at once.
 *
 * Invariants:
 *   - one job, one worker process, one sbx_run() (or one judge run): no two
 *     jobs share a sandbox, a cgroup or a process;
 *   - only the parent writes stdout, one whole line per write loop, flushed
 *     as each job completes; a job cancelled by SIGINT/SIGTERM writes nothing,
 *     so the output stays valid JSON Lines and --resume reruns that job;
 *   - a bad line is an output line (status error, naming the line number),
 *     never the end of the batch; nor is a failing job.
 * Layers: batch_parse.c is pure (jobs, lines, outcome, progress text);
 * batch_run.c forks the workers, polls them and writes the lines.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "frame/frame.h"
#include "judge/judge.h"
#include "mount/mnt.h"
#include "result/result.h"
#include "util/error.h"

#define BATCH_EXIT_OK NSB_EXIT_OK                /* every job taken produced its line, none was a bad line */
#define BATCH_EXIT_BAD_LINES NSB_EXIT_BAD_LINES  /* the same, but some lines could not become jobs (their error
                                                    lines are in the output): a caller's mistake, never a program's */
#define BATCH_EXIT_SETUP NSB_EXIT_FAILURE        /* usage, unreadable input or --resume file, stdout closed */
#define BATCH_EXIT_CANCELLED NSB_EXIT_CANCELLED  /* SIGINT/SIGTERM/SIGHUP: the lines so far are whole */

enum batch_kind { BATCH_PYTHON = 0, BATCH_JUDGE, BATCH_RUN, BATCH_TEST };

/* Coarse outcome of a python job, for reward code (label 1 only for pass). */
enum batch_outcome { OUTCOME_PASS = 0, OUTCOME_FAIL, OUTCOME_TIMEOUT, OUTCOME_ERROR, OUTCOME__MAX };

struct batch_job {
        size_t line;                 /* 1-based line of the input */
        json_t *id;                  /* string or integer, as given (a reference) */
        enum batch_kind kind;
        char *program;               /* python: code, "\n", test_code; placed at /program/main.py;
                                        test: the code alone (batch/batch_tests.h) */
        size_t program_len;
        char *tests;                 /* test: test_code, never placed in a file */
        size_t tests_len;
        char *entry_point;           /* test: the function check(candidate) is given; NULL = none */
        char **argv;                 /* run: the command (NULL-terminated) */
        size_t argc;
        char *stdin_data;            /* python/run "stdin"; NULL = empty */
        size_t stdin_len;
        struct nsb_config limits;    /* overlay: the fields named in limits_set */
        uint32_t limits_set;         /* enum cfg_field bits of the limits it names */
        struct judge_spec spec;      /* judge */
        struct mnt_file *files;      /* python/run "files": placed in the fresh /workspace (names and
                                        data owned; data decoded from base64) */
        size_t n_files;
        char **fetch;                /* python/run "fetch_files": read back after the run */
        size_t n_fetch;
        char *image;                 /* python/run "image": a REF, over --image; NULL = none */
};

/* A job's "files" at most, all together (decoded): the rest of the
 * workspace's room (its tmpfs, --tmp-size) is the program's. */
#define BATCH_FILES_MAX_BYTES (16u << 20)

/* Parse one input line (pure). @jobs_path locates a judge spec's relative
 * program.path (NULL: the current directory). Keys are checked per kind; an
 * error is -EINVAL, stage config, "line N: ...". On error ret->id may still
 * hold the line's id (for the error line); free with batch_job_free. */
int batch_job_parse(const char *text, size_t len, size_t line, const char *jobs_path, struct batch_job *ret,
                    struct nsb_error *e);
void batch_job_free(struct batch_job *job);

/* Whether @job's files fit its fresh workspace (a tmpfs of @cli's tmp size,
 * or the job's own limits.tmp_size), each file taking whole pages (pure).
 * -EFBIG, stage config, "line N: ...", when they cannot: a bad line (which
 * nsbox serve answers 400) rather than the init's ENOSPC once it runs (a
 * sandbox error). */
int batch_files_fit(const struct nsb_config *cli, const struct batch_job *job, struct nsb_error *e);

/* pass = exited 0; timeout = stopped by wall_time or cpu_time; error = the
 * sandbox failed or the run was cancelled; fail = anything else (nonzero
 * exit, a signal, the memory/pids/output/file_size limits). */
enum batch_outcome batch_outcome_of(const struct run_result *r);
const char *batch_outcome_name(enum batch_outcome o);

/* The whole command: read cli->input_path (NULL or "-": stdin), run the jobs
 * with cli->jobs workers (0: one per CPU), write lines to run->out_fd. Progress
 * goes to run->progress (NULL: none), the closing summary line to run->summary
 * (NULL: none). Input whose first non-blank line is not a JSON object line
 * is refused (125) before any job runs. Returns a BATCH_EXIT_* status; on
 * 125 @e says why. */
int batch_main(const struct frame_run *run, struct nsb_error *e);
