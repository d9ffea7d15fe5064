/* batch/batch_internal.h — pure pieces of the batch driver, checked one by
 * one by the unit tests. Not for other modules.
 */
#pragma once

#include "batch/batch.h"

/* Every input line is either taken by this shard or not: (line-1) % count ==
 * index. count 0 means no sharding. Physical line numbers, blank lines
 * included, so every shard agrees on the split whatever the content. */
bool batch_shard_takes(unsigned index, unsigned count, size_t line);

/* Only blanks (space, tab, CR): skipped silently, like a trailing newline. */
bool batch_line_blank(const char *text, size_t len);

/* The identity of an id: its compact JSON text ("\"j1\"", "7"), so "7" and 7
 * are different jobs. malloc'd; NULL on ENOMEM or when @id is NULL. */
char *batch_id_key(const json_t *id);

/* One line of an earlier results file: add its id's key to @set (a JSON
 * object used as a set). Lines that are not objects with an id (a cut last
 * line after a crash, an error line without id) are ignored. */
void batch_resume_add(json_t *set, const char *text, size_t len);

/* An output line: {"id": ..., BODY's members..., ["outcome", "label"],
 * "batch": {"line", "start_ms", "end_ms"}}. @body is a result or a verdict
 * (stolen); @outcome < 0: no outcome/label (run and judge jobs). Times are
 * ms since the batch started; < 0 leaves them out. NULL on ENOMEM. */
json_t *batch_line_render(const json_t *id, size_t line, json_t *body, int outcome, double start_ms,
                          double end_ms);

/* The line for input that could not become a job (or a worker that died):
 * a `status: error` result naming the line, with outcome error, label 0. */
json_t *batch_error_line(const json_t *id, size_t line, const struct nsb_error *err);

/* judge verdicts counted with the same outcomes: undetermined is error. */
enum batch_outcome batch_verdict_outcome(enum judge_verdict v);

struct batch_progress {
        size_t total;                /* lines this shard takes; 0 = unknown (a pipe) */
        size_t done;                 /* lines written */
        size_t skipped;              /* --resume: already in the results file */
        size_t count[OUTCOME__MAX];
        double elapsed_ms;
};

/* "[#####.....]  412/1000  37.1/s  ETA 16s  pass 390 fail 20 timeout 1 error 1"
 * into @buf (always NUL-terminated). */
void batch_progress_text(const struct batch_progress *p, char *buf, size_t size);
