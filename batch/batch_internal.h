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
/* 3 when @text starts with a UTF-8 byte order mark (which editors on
 * Windows and PowerShell's redirection put before the first line), else 0. */
size_t batch_bom_len(const char *text, size_t len);

/* The identity of an id: its compact JSON text ("\"j1\"", "7"), so "7" and 7
 * are different jobs. malloc'd; NULL on ENOMEM or when @id is NULL. */
char *batch_id_key(const json_t *id);

/* One line of an earlier results file: add its id's key to @set (a JSON
 * object used as a set). Lines that are not objects with an id (a cut last
 * line after a crash, an error line without id) are ignored. */
void batch_resume_add(json_t *set, const char *text, size_t len);

/* A cancel line, {"cancel": ID} (docs/batch.md "Cancelling one job"): 1 with
 * *ret_key the id's key (malloc'd, as batch_id_key); 0 when the line is
 * not one (a job line: parse it as such); -EINVAL when it names "cancel"
 * with other keys or an id that is not a string or an integer. Pure. */
int batch_cancel_parse(const char *text, size_t len, char **ret_key);

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
        size_t bad_lines;            /* lines that could not become a job (counted as error too) */
        size_t first_bad_line;       /* 1-based; 0 = none */
        double elapsed_ms;
};

/* "[#####.....]  412/1000  37.1/s  ETA 16s  pass 390 fail 20 timeout 1 error 1"
 * into @buf (always NUL-terminated). */
void batch_progress_text(const struct batch_progress *p, char *buf, size_t size);

/* The first non-blank line of the input decides whether it is JSON Lines at
 * all: NULL when it is a JSON object line that could be a job; else the
 * refusal (what it looks like, and how to convert it) in @buf. @text holds
 * that line (@line_len bytes) and whatever of the input follows it in
 * memory (@avail bytes in all: a pretty-printed object continues there);
 * @input names the input (NULL: stdin) in the message and the conversion
 * hint. Pure. */
const char *batch_input_refusal(const char *text, size_t line_len, size_t avail, const char *input, char *buf,
                                size_t size);

/* batch_input_refusal for a first line longer than nsbox reads, from the
 * @len bytes of its head: NULL when it starts like a job object (it is then
 * one bad line); else the refusal (binary data, a JSON array, text). Pure. */
const char *batch_long_line_refusal(const char *head, size_t len, const char *input, char *buf, size_t size);

/* The line stderr gets when a batch ends: "nsbox batch: 12 lines in 3.4s:
 * pass 9 fail 1 timeout 1 error 1; bad lines 1 (first: line 7); skipped 2".
 * Always NUL-terminated. Pure. */
void batch_summary_text(const struct batch_progress *p, bool cancelled, char *buf, size_t size);
