/* testcmd/testcmd_internal.h — pure pieces of `nsbox test` that the driver
 * composes and the unit tests check one by one. Not for other modules.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "result/result.h"
#include "testcmd/testcmd.h"

enum tc_outcome { TC_PASSED = 0, TC_FAILED, TC_ERROR, TC_SKIPPED, TC_NOT_RUN };
enum tc_verdict { TC_PASS = 0, TC_FAIL, TC_UNDETERMINED };

#define TC_REASON_MAX 512

struct tc_test {
        char *name;
        enum tc_outcome outcome;     /* TC_NOT_RUN until its event arrives */
        char *message;               /* NULL or text */
        char *traceback;
        double duration_ms;
        char *out, *err;             /* what the test printed (the runner keeps the head); NULL = nothing */
        uint64_t out_bytes, err_bytes; /* all its sys.stdout/sys.stderr wrote (stdout_bytes; else strlen) */
        bool import_error;           /* its module could not be imported (the runner says it once) */
};

struct tc_collect_error {
        char *file;                  /* may be NULL */
        char *message;
};

/* What the channel said. */
struct tc_report {
        struct tc_test *tests;       /* as announced by `start`, in order */
        size_t n_tests;
        size_t n_reported;           /* test events accepted */
        struct tc_collect_error *collect_errors;
        size_t n_collect_errors;
        bool started, done;
        bool trusted;                /* every line parsed and the order held */
        bool in_order;               /* trusted up to its last line, a done event or not: the first
                                        test without an event was the one running */
        long long collected;         /* from done, -1 until then */
        double duration_ms;          /* from done, or the run's wall time */
        char problem[TC_REASON_MAX]; /* first reason the channel is not trusted */

        enum tc_verdict verdict;
        char reason[TC_REASON_MAX];
};

/* Parse the channel's bytes (JSON Lines) into @rep. Never fails on bad input
 * (that only makes the channel untrusted); returns -ENOMEM on allocation failure. */
int tc_channel_parse(const char *buf, size_t len, struct tc_report *rep);

/* Apply the verdict rules to the channel and what the sandbox observed; marks
 * tests without an event `error` "not run: ...". Fills rep->verdict/reason. */
void tc_decide(struct tc_report *rep, const struct run_result *r);

/* The `nsbox.tests/1` object; @result is stolen (may be NULL -> null). */
json_t *tc_report_to_json(const struct tc_report *rep, json_t *result);

/* The human summary (malloc'd): a mark per test, the failures, the counts and
 * the verdict; @r adds the sandbox's reason when it matters. */
char *tc_summary_text(const struct tc_report *rep, const struct run_result *r);

/* Bytes of the run's stream @s (its stdout, or stderr when @err) that no
 * test's sys.stdout/sys.stderr wrote: what went to fd 1/2 directly
 * (os.write, a subprocess, C code) or came from the runner itself. The
 * runner captures per test at the sys level only (a test that kills it must
 * not take its output along: harness/README.md), so this is shown apart. */
uint64_t tc_unattributed(const struct tc_report *rep, const struct run_stream *s, bool err);

const char *tc_outcome_name(enum tc_outcome o);
const char *tc_verdict_name(enum tc_verdict v);
int tc_exit_code(enum tc_verdict v);
void tc_report_free(struct tc_report *rep);
