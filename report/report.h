/* report/report.h — `nsbox report RESULTS.jsonl...`: what many results say.
 *
 * Owns: reading batch result lines and judge verdicts (JSON Lines, one object
 * a line), the aggregates a person reads (counts per status, outcome, limit,
 * verdict and start; the slowest jobs; errors grouped by stage and message;
 * histograms of wall time and peak memory), their terminal and HTML
 * renderings, and the JUnit XML of `nsbox judge --junit` / `nsbox test --junit`.
 *
 * Invariants:
 *   - input is streamed: memory holds the aggregates (every table bounded),
 *     a bounded top-k and one line, never the lines read so far; the HTML
 *     table of failed jobs goes through an unlinked temporary file;
 *   - a line that is not a result or verdict object is a bad line, named
 *     FILE:LINE, counted and reported; it is fatal only when no line at all
 *     was valid;
 *   - every text taken from a result (ids, messages, stderr) is escaped for
 *     the page it goes into; nothing in a result becomes markup or script.
 * Layers: report_agg.c, report_text.c, report_html.c, junit.c are pure
 * (allocation and stdio streams given by the caller); report_run.c opens the
 * files.
 */
#pragma once

#include <stdio.h>

#include "config/config.h"
#include "frame/frame.h"
#include "util/error.h"

#define REPORT_EXIT_OK NSB_EXIT_OK
#define REPORT_EXIT_BAD NSB_EXIT_FAIL           /* no valid line at all */
#define REPORT_EXIT_SETUP NSB_EXIT_FAILURE      /* usage, unreadable input, unwritable output */

/* The whole command: read every cfg->argv file ("-" = stdin) in order, print
 * the summary on run->out, write cfg->html_path if set. Returns the exit status;
 * @e is filled for REPORT_EXIT_SETUP and REPORT_EXIT_BAD (the caller prints it). */
int report_main(const struct frame_run *run, struct nsb_error *e);
