/* report/report_text.c — the terminal summary. Pure (writes to a stream).
 *
 * Ids, messages and file names come from the input: a control character in
 * them would reach the reader's terminal as an escape sequence, so every such
 * text goes through put_safe() (util/textsafe.h).
 */
#include "report/report_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/textsafe.h"

/* @s on its line, with the unsafe characters of util/textsafe.h (C0, DEL,
 * C1, bidi controls, line separators, bytes not UTF-8) shown as escapes. */
static void put_safe(FILE *out, const char *s)
{
        textsafe_term(out, s, strlen(s), TEXTSAFE_ONE_LINE);
}

static void table_line(FILE *out, const char *title, const struct report_table *t, uint64_t total)
{
        struct report_count v[REPORT_TABLE_MAX];
        size_t n = report_table_sorted(t, v);

        fprintf(out, "  %-12s", title);
        if (n == 0 && t->other == 0) {
                fprintf(out, " (none)\n");
                return;
        }
        for (size_t i = 0; i < n; i++) {
                fputc(' ', out);
                put_safe(out, v[i].key);
                fprintf(out, " %llu", (unsigned long long) v[i].n);
                if (total)
                        fprintf(out, " (%.1f%%)", 100.0 * (double) v[i].n / (double) total);
                fputs(i + 1 < n || t->other ? "," : "", out);
        }
        if (t->other)
                fprintf(out, " (other values) %llu", (unsigned long long) t->other);
        fputc('\n', out);
}

static void fmt_ms(char *buf, size_t size, double ms)
{
        if (ms < 1000)
                snprintf(buf, size, "%.1f ms", ms);
        else if (ms < 120000)
                snprintf(buf, size, "%.2f s", ms / 1000);
        else
                snprintf(buf, size, "%.1f min", ms / 60000);
}

static void hist_line(FILE *out, const char *title, const struct report_hist *h, bool ms)
{
        char lo[32], mean[32], hi[32];

        if (h->n == 0) {
                fprintf(out, "  %-12s (none recorded)\n", title);
                return;
        }
        if (ms) {
                fmt_ms(lo, sizeof lo, h->min);
                fmt_ms(mean, sizeof mean, h->sum / (double) h->n);
                fmt_ms(hi, sizeof hi, h->max);
        } else {
                snprintf(lo, sizeof lo, "%.1f MiB", h->min);
                snprintf(mean, sizeof mean, "%.1f MiB", h->sum / (double) h->n);
                snprintf(hi, sizeof hi, "%.1f MiB", h->max);
        }
        fprintf(out, "  %-12s min %s, mean %s, max %s (%llu jobs)\n", title, lo, mean, hi,
                (unsigned long long) h->n);
}

#define GROUPS_SHOWN 20
#define CASES_SHOWN 15

/* Failed or erred jobs by reason, largest first: count, share of the
 * failed jobs, the reason (normalised) and one example as it was. */
static void failure_groups(const struct report_agg *a, FILE *out)
{
        AUTOFREE struct report_fgroup *g = malloc(sizeof *g * REPORT_FGROUPS_MAX);
        size_t n;

        if (!a->failed)
                return;
        if (!g) {
                fputs("\nfailures by reason: out of memory\n", out);
                return;
        }
        n = report_fgroups_sorted(a, g);
        fprintf(out, "\nfailures by reason (%llu jobs failed or erred, %zu reasons)\n", (unsigned long long) a->failed, n);
        for (size_t i = 0; i < n && i < GROUPS_SHOWN; i++) {
                char count[32];

                snprintf(count, sizeof count, "%s%llu", g[i].over ? "~" : "", (unsigned long long) g[i].n);
                fprintf(out, "  %8s %5.1f%%  ", count, 100.0 * (double) g[i].n / (double) a->failed);
                put_safe(out, g[i].key);
                if (g[i].erred)
                        fprintf(out, "  [%llu erred]", (unsigned long long) g[i].erred);
                fputs("\n                  e.g. ", out);
                put_safe(out, g[i].example_id);
                fputs(": ", out);
                put_safe(out, g[i].example);
                fputc('\n', out);
        }
        if (n > GROUPS_SHOWN)
                fprintf(out, "  ... %zu more reasons (--html lists them all)\n", n - GROUPS_SHOWN);
        if (a->fgroups_replaced)
                fprintf(out, "  (over %d distinct reasons: the most frequent are kept; ~N is at most N)\n",
                        REPORT_FGROUPS_MAX);
}

/* Judge cases, the most failed first: which cases fail most. */
static void case_breakdown(const struct report_agg *a, FILE *out)
{
        struct report_case_stat c[REPORT_CASES_MAX];
        size_t n = report_cases_sorted(a, c);

        if (!n)
                return;
        fprintf(out, "\njudge cases, most failed first (%zu cases)\n", n);
        for (size_t i = 0; i < n && i < CASES_SHOWN; i++) {
                fprintf(out, "  %8llu of %-8llu %5.1f%% failed", (unsigned long long) c[i].failed,
                        (unsigned long long) c[i].runs, c[i].runs ? 100.0 * (double) c[i].failed / (double) c[i].runs : 0);
                if (c[i].undetermined)
                        fprintf(out, ", %llu undetermined or not run", (unsigned long long) c[i].undetermined);
                fputs("  ", out);
                put_safe(out, c[i].name);
                fputc('\n', out);
        }
        if (n > CASES_SHOWN)
                fprintf(out, "  ... %zu more cases\n", n - CASES_SHOWN);
        if (a->cases_other)
                fprintf(out, "  (over %d case names: %llu runs of the others not broken down)\n", REPORT_CASES_MAX,
                        (unsigned long long) a->cases_other);
}

int report_render_text(const struct report_agg *a, FILE *out)
{
        struct report_slow slow[REPORT_TOP_K];
        struct report_group groups[REPORT_GROUPS_MAX];
        size_t n_slow = report_slowest(a, slow), n_groups = report_groups_sorted(a, groups);

        fprintf(out, "nsbox report: %llu jobs (%llu results, %llu verdicts), %llu failed or erred; %llu bad lines\n",
                (unsigned long long) a->valid, (unsigned long long) a->results, (unsigned long long) a->verdicts,
                (unsigned long long) a->failed, (unsigned long long) a->bad);
        fprintf(out, "\ncounts\n");
        table_line(out, "status", &a->status, a->results);
        table_line(out, "outcome", &a->outcome, a->results);
        table_line(out, "verdict", &a->verdict, a->verdicts);
        table_line(out, "limit", &a->limit, 0);
        table_line(out, "start", &a->start, a->valid);
        hist_line(out, "wall time", &a->wall_ms, true);
        hist_line(out, "peak memory", &a->mem_mib, false);

        if (n_slow) {
                fprintf(out, "\nslowest jobs\n");
                for (size_t i = 0; i < n_slow; i++) {
                        char t[32];

                        fmt_ms(t, sizeof t, slow[i].wall_ms);
                        fprintf(out, "  %12s  ", t);
                        put_safe(out, slow[i].id);
                        fputs("  (", out);
                        put_safe(out, slow[i].where);
                        fputs(")\n", out);
                }
        }
        failure_groups(a, out);
        case_breakdown(a, out);
        if (a->errors) {
                fprintf(out, "\nerrors by stage and message (%llu)\n", (unsigned long long) a->errors);
                for (size_t i = 0; i < n_groups && i < 20; i++) {
                        char count[32];

                        snprintf(count, sizeof count, "%s%llu", groups[i].over ? "~" : "",
                                 (unsigned long long) groups[i].n);
                        fprintf(out, "  %8s  ", count);
                        put_safe(out, groups[i].stage);
                        fputs(": ", out);
                        put_safe(out, groups[i].message);
                        fputs("  (first: ", out);
                        put_safe(out, groups[i].first_id);
                        fputs(")\n", out);
                }
                if (n_groups > 20)
                        fprintf(out, "  ... %zu more groups\n", n_groups - 20);
                if (a->errors_ungrouped)
                        fprintf(out, "  (over %d distinct groups: the most frequent are kept; ~N is at most N)\n",
                                REPORT_GROUPS_MAX);
        }
        if (a->bad) {
                fprintf(out, "\nbad lines (%llu)\n", (unsigned long long) a->bad);
                for (size_t i = 0; i < a->n_bad_kept; i++) {
                        fputs("  ", out);
                        put_safe(out, a->bad_kept[i].where);
                        fputs(": ", out);
                        put_safe(out, a->bad_kept[i].why);
                        fputc('\n', out);
                }
                if (a->bad > a->n_bad_kept)
                        fprintf(out, "  ... and %llu more\n", (unsigned long long) (a->bad - a->n_bad_kept));
        }
        return ferror(out) ? -EIO : 0;
}
