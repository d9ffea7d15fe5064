/* report/report_internal.h — the pure pieces of `nsbox report`, checked one
 * by one by tests/unit/test_report.c. Not for other modules.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define REPORT_TABLE_MAX 32       /* distinct keys kept per count table; the rest count as "(other)" */
#define REPORT_KEY_MAX 64         /* bytes of a key kept (status, outcome, ...) */
#define REPORT_GROUPS_MAX 256     /* distinct (stage, message) error groups kept */
#define REPORT_MSG_MAX 240        /* bytes of an error message kept in its group */
#define REPORT_TOP_K 10           /* slowest jobs kept */
#define REPORT_BAD_KEEP 20        /* bad lines described; the rest only counted */
#define REPORT_ID_MAX 96          /* bytes of a job id shown */
#define REPORT_WHERE_MAX 160      /* "FILE:LINE" */
#define REPORT_REASON_MAX 512
#define REPORT_STDERR_HEAD 1024   /* bytes of stderr shown for a failed job */
#define REPORT_HIST_BUCKETS 40    /* log2 buckets, see report_hist_bucket */
#define REPORT_FGROUPS_MAX 256    /* distinct failure reasons kept (Space-Saving beyond) */
#define REPORT_CASES_MAX 64       /* distinct judge case names kept; the rest count as "(other)" */

struct report_count {
        char key[REPORT_KEY_MAX];
        uint64_t n;
};

/* Counts per key, in first-seen order; at most REPORT_TABLE_MAX keys, the
 * rest in `other` (input decides the keys, so they are bounded). */
struct report_table {
        struct report_count v[REPORT_TABLE_MAX];
        size_t n;
        uint64_t other;
};

struct report_group {
        char stage[REPORT_KEY_MAX];
        char message[REPORT_MSG_MAX];
        uint64_t n;
        uint64_t over;                    /* n may be this much too high (0: exact) */
        char first_id[REPORT_ID_MAX];     /* the first job that had it (since it was kept) */
};

/* Failed or erred jobs with the same reason, normalised (report_normalize):
 * for a program, the last line of its stderr (where Python puts the
 * exception), else why it stopped; for a verdict, its first failing case's. */
struct report_fgroup {
        char key[REPORT_MSG_MAX];         /* the normalised reason */
        char example[REPORT_MSG_MAX];     /* one of them as it was */
        char example_id[REPORT_ID_MAX];   /* ... and its job */
        uint64_t n;
        uint64_t over;                    /* n may be this much too high (0: exact) */
        uint64_t erred;                   /* of n: errors (nsbox could not decide), not failures */
};

/* A judge case (by name) over every verdict: how often it ran and failed. */
struct report_case_stat {
        char name[REPORT_KEY_MAX];
        uint64_t runs, failed, undetermined;
};

struct report_slow {
        char id[REPORT_ID_MAX];
        char where[REPORT_WHERE_MAX];
        double wall_ms;
};

struct report_bad {
        char where[REPORT_WHERE_MAX];
        char why[REPORT_REASON_MAX];
};

/* Log2 histogram: bucket 0 holds values < 1 unit, bucket i (i >= 1) values
 * in [2^(i-1), 2^i) units, the last bucket everything above. */
struct report_hist {
        uint64_t b[REPORT_HIST_BUCKETS];
        uint64_t n;
        double min, max, sum;
};

struct report_agg {
        uint64_t lines;               /* lines read, blank ones included */
        uint64_t valid;               /* result or verdict objects */
        uint64_t results, verdicts;
        uint64_t bad;
        struct report_bad bad_kept[REPORT_BAD_KEEP];
        size_t n_bad_kept;

        struct report_table status;   /* results: status */
        struct report_table outcome;  /* results: outcome (python jobs) */
        struct report_table limit;    /* results and judge cases: the limit that stopped them */
        struct report_table verdict;  /* verdicts: verdict */
        struct report_table start;    /* every job: "start", or "cold/unknown" */

        struct report_group groups[REPORT_GROUPS_MAX];
        size_t n_groups;
        uint64_t errors;              /* status error results (judge cases included) */
        uint64_t errors_ungrouped;    /* counted in groups since replaced (more than REPORT_GROUPS_MAX) */

        struct report_slow slow[REPORT_TOP_K];   /* a min-heap on wall_ms */
        size_t n_slow;

        struct report_hist wall_ms;   /* per job: its wall time (a verdict: the sum of its cases) */
        struct report_hist mem_mib;   /* per job: peak memory in MiB (a verdict: the largest case) */

        uint64_t failed;              /* jobs that failed or erred (rows of the HTML table) */

        struct report_fgroup fgroups[REPORT_FGROUPS_MAX];
        size_t n_fgroups;
        uint64_t fgroups_replaced;    /* counted in groups since replaced (more than REPORT_FGROUPS_MAX) */

        struct report_case_stat cases[REPORT_CASES_MAX];
        size_t n_cases;
        uint64_t cases_other;         /* case runs whose name did not fit */
};

/* One valid line, as the aggregates and the HTML table see it. Pointers
 * borrow from `root` (released by report_job_clear). */
struct report_job {
        json_t *root;
        char id[REPORT_ID_MAX];
        char where[REPORT_WHERE_MAX];
        bool is_verdict;
        const char *status;           /* result: status; verdict: verdict */
        const char *outcome;          /* NULL: none */
        bool has_wall, has_mem;
        double wall_ms, peak_mem_bytes;
        bool failed;                  /* failed or erred: a row of the table */
        bool erred;                   /* status error, outcome error, verdict undetermined */
        char reason[REPORT_REASON_MAX];
        const char *stderr_text;      /* of the result, or of the first failing case; NULL: none */
        char why[REPORT_MSG_MAX];     /* what its failure group is made of (not normalised yet) */
        bool why_quotes;              /* a judge reason: fold its quoted excerpts too */
};

void report_agg_init(struct report_agg *a);

/* One input line. 1: a valid line, aggregated, *ret_job filled (release
 * it with report_job_clear); 0: blank (only spaces, tabs, CR), skipped;
 * -EINVAL: a bad line, counted and kept (the first REPORT_BAD_KEEP) in @a.
 * @file and @line name it. */
int report_add_line(struct report_agg *a, const char *file, uint64_t line, const char *text, size_t len,
                    struct report_job *ret_job);

/* A file of whole JSON documents one after the other, as `nsbox judge
 * --json` and `--result` write them (indented, over many lines): each
 * document is a "line" named by the line it starts on. Valid ones go to
 * @each (may be NULL; its negative return stops and is returned) after
 * they are aggregated. A document that is not JSON ends the file: it and
 * the rest count as one bad entry. 0, or what @each returned. */
int report_add_documents(struct report_agg *a, const char *file, const char *text, size_t len,
                         int (*each)(const struct report_job *j, void *ctx), void *ctx);

/* A line that could not even be read (over the size limit). */
void report_add_bad(struct report_agg *a, const char *file, uint64_t line, const char *why);

void report_job_clear(struct report_job *j);

/* The bucket of @v in a report_hist, and the lower bound of bucket @i. */
size_t report_hist_bucket(double v);
double report_hist_lower(size_t i);

/* The kept slowest jobs, slowest first, into @ret (REPORT_TOP_K entries);
 * returns how many. */
size_t report_slowest(const struct report_agg *a, struct report_slow *ret);

/* The keys of @t, most frequent first (ties by key), into @ret
 * (REPORT_TABLE_MAX entries); returns how many. */
size_t report_table_sorted(const struct report_table *t, struct report_count *ret);

/* The kept error groups, most frequent first, into @ret (REPORT_GROUPS_MAX
 * entries); returns how many. */
size_t report_groups_sorted(const struct report_agg *a, struct report_group *ret);

/* @len bytes of @s normalised into @out (NUL-terminated, at most @size):
 * what differs between two instances of the same failure folded, so that
 * they group: a path (a word starting with '/') is "<path>", a hex id
 * (0x..., or 8 or more hex digits with a digit and a letter) "<id>", a
 * number "N" (not inside a name: "test_2" stays); with @quotes, a quoted
 * excerpt ('...') is '…'. Runs of spaces become one; cut on a character. */
void report_normalize(const char *s, size_t len, bool quotes, char *out, size_t size);

/* The last line of @s that is not blank, trimmed, into @out; "" if none. */
void report_last_line(const char *s, char *out, size_t size);

/* Count failed job @j in its failure group (j->why normalised), and a
 * judge case's run (its @verdict) under @name. report_group.c. */
void report_fgroup_add(struct report_agg *a, const struct report_job *j);
void report_case_add(struct report_agg *a, const char *name, const char *verdict);

/* The failure groups, largest first (ties by key), into @ret
 * (REPORT_FGROUPS_MAX entries); returns how many. */
size_t report_fgroups_sorted(const struct report_agg *a, struct report_fgroup *ret);

/* The judge cases, most failed (failed + undetermined) first, into @ret
 * (REPORT_CASES_MAX entries); returns how many. */
size_t report_cases_sorted(const struct report_agg *a, struct report_case_stat *ret);

/* Renderings. Each returns 0 or -errno (a write error on @out). */
int report_render_text(const struct report_agg *a, FILE *out);
/* One row of the HTML table of failed jobs, written to @rows as it comes. */
int report_html_row(FILE *rows, const struct report_job *j);
/* The whole page; @rows (rewound, may be NULL) holds the rows written so far. */
int report_render_html(const struct report_agg *a, FILE *rows, FILE *out);
