/* report/report_html.c — `nsbox report --html FILE`: one self-contained page.
 * Pure (writes to the streams it is given).
 *
 * The page loads nothing: styles and the filter script are inline, the
 * histograms are inline SVG, and a Content-Security-Policy of default-src
 * 'none' keeps the browser from fetching anything even if a text slipped
 * through. Every text from the input (ids, reasons, stderr, file names) is
 * escaped by textsafe_html() (util/textsafe.h: & < > " ' as references, the
 * unsafe characters shown as escapes) and only ever placed in element content
 * or a quoted attribute, never in the script.
 */
#include "report/report_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/textsafe.h"

static void esc(FILE *out, const char *s)
{
        textsafe_html(out, s ? s : "", s ? strlen(s) : 0);
}

/* At most @max bytes of @s, not cutting a UTF-8 sequence. */
static size_t utf8_head(const char *s, size_t max)
{
        return textsafe_cut(s, strlen(s), max);
}

int report_html_row(FILE *rows, const struct report_job *j)
{
        const char *kind = j->erred ? "error" : "fail";

        fprintf(rows, "<tr class=\"%s\"><td>", kind);
        esc(rows, j->id);
        fputs("</td><td>", rows);
        esc(rows, j->where);
        fputs("</td><td>", rows);
        esc(rows, j->status);
        if (j->outcome) {
                fputs(" / ", rows);
                esc(rows, j->outcome);
        }
        fputs("</td><td>", rows);
        esc(rows, j->reason);
        fputs("</td><td><pre>", rows);
        if (j->stderr_text) {
                size_t n = utf8_head(j->stderr_text, REPORT_STDERR_HEAD);

                textsafe_html(rows, j->stderr_text, n);
                if (n < strlen(j->stderr_text))
                        fputs("\n\u2026", rows);
        }
        fputs("</pre></td></tr>\n", rows);
        return ferror(rows) ? -EIO : 0;
}

static void fmt_ms(char *buf, size_t size, double ms)
{
        if (ms < 1000)
                snprintf(buf, size, "%gms", ms);
        else if (ms < 60000)
                snprintf(buf, size, "%gs", ms / 1000);
        else
                snprintf(buf, size, "%.0fmin", ms / 60000);
}

static void fmt_mib(char *buf, size_t size, double mib)
{
        if (mib < 1024)
                snprintf(buf, size, "%gM", mib);
        else
                snprintf(buf, size, "%gG", mib / 1024);
}

/* Bars from the first to the last non-empty bucket, labelled with each
 * bucket's lower bound. */
static void svg_hist(FILE *out, const char *id, const char *title, const struct report_hist *h,
                     void (*fmt)(char *, size_t, double))
{
        size_t first = REPORT_HIST_BUCKETS, last = 0, nb;
        uint64_t top = 0;
        const int W = 560, H = 180, base = 150, left = 10;
        double bw;

        fprintf(out, "<figure><figcaption>%s</figcaption>\n", title);
        if (h->n == 0) {
                fputs("<p class=\"none\">none recorded</p></figure>\n", out);
                return;
        }
        for (size_t i = 0; i < REPORT_HIST_BUCKETS; i++)
                if (h->b[i]) {
                        if (first == REPORT_HIST_BUCKETS)
                                first = i;
                        last = i;
                        if (h->b[i] > top)
                                top = h->b[i];
                }
        nb = last - first + 1;
        bw = (double) (W - 2 * left) / (double) nb;
        fprintf(out, "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                     "viewBox=\"0 0 %d %d\" role=\"img\">\n", id, W, H, W, H);
        fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", left, base, W - left, base);
        for (size_t i = first; i <= last; i++) {
                double hgt = top ? 120.0 * (double) h->b[i] / (double) top : 0;
                double x = left + bw * (double) (i - first);
                char lo[32], hi[32];

                fmt(lo, sizeof lo, report_hist_lower(i));
                fmt(hi, sizeof hi, report_hist_lower(i + 1));
                fprintf(out, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                             "<title>%s%s%s: %llu</title></rect>\n",
                        x + 1, base - hgt, bw - 2 > 1 ? bw - 2 : 1, hgt, i == 0 ? "< " : lo,
                        i == 0 ? "" : " \u2013 ", i == 0 ? hi : (i + 1 < REPORT_HIST_BUCKETS ? hi : "\u221e"),
                        (unsigned long long) h->b[i]);
                if (h->b[i])
                        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"cnt\">%llu</text>\n", x + bw / 2,
                                base - hgt - 4, (unsigned long long) h->b[i]);
                fprintf(out, "<text x=\"%.1f\" y=\"%d\" class=\"lbl\">%s</text>\n", x + bw / 2, base + 16,
                        i == 0 ? "<1" : lo);
        }
        fputs("</svg></figure>\n", out);
}

/* @total: what the percentages are of (0: none shown, as for limits, which
 * a job may have none of). */
static void count_table(FILE *out, const char *name, const struct report_table *t, uint64_t total)
{
        struct report_count v[REPORT_TABLE_MAX];
        size_t n = report_table_sorted(t, v);

        fprintf(out, "<tr><th>%s</th><td>", name);
        if (n == 0 && t->other == 0)
                fputs("<span class=\"none\">none</span>", out);
        for (size_t i = 0; i < n; i++) {
                fprintf(out, "<span class=\"chip\" id=\"%s-", name);
                esc(out, v[i].key);
                fputs("\">", out);
                esc(out, v[i].key);
                fprintf(out, " <b>%llu</b>", (unsigned long long) v[i].n);
                if (total)
                        fprintf(out, " <i class=\"pct\">%.1f%%</i>", 100.0 * (double) v[i].n / (double) total);
                fputs("</span> ", out);
        }
        if (t->other)
                fprintf(out, "<span class=\"chip\">(other values) <b>%llu</b></span>", (unsigned long long) t->other);
        fputs("</td></tr>\n", out);
}

/* Failed or erred jobs by reason, largest first: every kept group, with its
 * share of the failed jobs as a bar, the normalised reason and one example. */
static int failure_groups(const struct report_agg *a, FILE *out)
{
        struct report_fgroup *g;
        size_t n;

        if (!a->failed)
                return 0;
        if (!(g = malloc(sizeof *g * REPORT_FGROUPS_MAX)))
                return -ENOMEM;
        n = report_fgroups_sorted(a, g);
        fprintf(out, "<h2>Failures by reason (%zu reasons, %llu jobs)</h2>\n<table id=\"groups\" class=\"wide\">"
                     "<thead><tr><th>jobs</th><th>share</th><th>reason</th><th>example</th></tr></thead><tbody>\n",
                n, (unsigned long long) a->failed);
        for (size_t i = 0; i < n; i++) {
                double pct = 100.0 * (double) g[i].n / (double) a->failed;

                fprintf(out, "<tr class=\"%s\"><td class=\"num\">%s%llu</td><td class=\"num\">"
                             "<div class=\"share\" title=\"%.1f%%\"><span style=\"width:%.1f%%\"></span></div>%.1f%%</td><td>",
                        g[i].erred == g[i].n ? "grp-error" : "grp-fail", g[i].over ? "~" : "", (unsigned long long) g[i].n,
                        pct, pct, pct);
                esc(out, g[i].key);
                fputs("</td><td class=\"eg\">", out);
                esc(out, g[i].example_id);
                fputs(": ", out);
                esc(out, g[i].example);
                fputs("</td></tr>\n", out);
        }
        if (a->fgroups_replaced)
                fprintf(out, "<tr><td colspan=\"4\">(over %d distinct reasons: the most frequent are kept; "
                             "~N is at most N)</td></tr>\n", REPORT_FGROUPS_MAX);
        fputs("</tbody></table>\n", out);
        free(g);
        return 0;
}

/* Judge cases, the most failed first. */
static void case_breakdown(const struct report_agg *a, FILE *out)
{
        struct report_case_stat c[REPORT_CASES_MAX];
        size_t n = report_cases_sorted(a, c);

        if (!n)
                return;
        fprintf(out, "<h2>Judge cases, most failed first (%zu)</h2>\n<table id=\"cases\" class=\"wide\"><thead><tr>"
                     "<th>case</th><th>failed</th><th>undetermined or not run</th><th>runs</th><th>failed share</th>"
                     "</tr></thead><tbody>\n", n);
        for (size_t i = 0; i < n; i++) {
                double pct = c[i].runs ? 100.0 * (double) c[i].failed / (double) c[i].runs : 0;

                fputs("<tr><td>", out);
                esc(out, c[i].name);
                fprintf(out, "</td><td class=\"num\">%llu</td><td class=\"num\">%llu</td><td class=\"num\">%llu</td>"
                             "<td class=\"num\"><div class=\"share\"><span style=\"width:%.1f%%\"></span></div>%.1f%%</td></tr>\n",
                        (unsigned long long) c[i].failed, (unsigned long long) c[i].undetermined,
                        (unsigned long long) c[i].runs, pct, pct);
        }
        if (a->cases_other)
                fprintf(out, "<tr><td colspan=\"5\">(over %d case names: %llu runs of the others not broken down)</td></tr>\n",
                        REPORT_CASES_MAX, (unsigned long long) a->cases_other);
        fputs("</tbody></table>\n", out);
}

static const char style[] =
        "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d232a;background:#fff}"
        "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}"
        ".sum{color:#444;margin:0 0 12px}.chip{display:inline-block;background:#eef2f6;border-radius:4px;"
        "padding:1px 7px;margin:2px 4px 2px 0}.pct{color:#555;font-style:normal;font-size:12px}"
        "table{border-collapse:collapse}table.wide{width:100%;table-layout:auto}"
        "th,td{text-align:left;vertical-align:top;padding:3px 10px 3px 0;border-bottom:1px solid #e3e7eb}"
        "#failed td:nth-child(4){width:30%}#failed td:nth-child(5){width:40%}"
        "pre{margin:0;max-height:160px;overflow:auto;"
        "white-space:pre-wrap;font-size:12px;background:#f7f7f7}tr.error td:first-child{border-left:4px solid #b36b00}"
        "tr.fail td:first-child{border-left:4px solid #c0392b}figure{display:inline-block;margin:0 24px 0 0}"
        "figcaption{font-weight:600}.bar{fill:#3b7dd8}.cnt,.lbl{font-size:10px;text-anchor:middle;fill:#333}"
        ".none{color:#888}#filter{font-size:14px;padding:4px 8px;width:320px;margin-bottom:8px}"
        ".num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
        ".share{display:inline-block;vertical-align:middle;width:120px;height:10px;margin-right:6px;background:#f3dedb}"
        ".share span{display:block;height:10px;background:#c0392b;"
        "border-radius:2px}.eg{color:#555;font-size:12px}#groups td:nth-child(3){width:45%}"
        "#dists{display:flex;flex-wrap:wrap;gap:24px}#dists figure{flex:1 1 480px}#dists svg{width:100%;height:auto}";

/* Only rows are filtered; the text is read from the cells, never written
 * back as markup. A filter in the address (page.html#MemoryError) is applied
 * on load, so a filtered view can be shared as a link. */
static const char script[] =
        "(function(){var f=document.getElementById('filter'),n=document.getElementById('shown');"
        "function apply(){var q=f.value.toLowerCase(),k=0;"
        "document.querySelectorAll('#failed tbody tr').forEach(function(r){"
        "var s=r.textContent.toLowerCase().indexOf(q)>=0;r.style.display=s?'':'none';if(s)k++;});"
        "n.textContent=k;}"
        "f.addEventListener('input',apply);"
        "if(location.hash.length>1){f.value=decodeURIComponent(location.hash.slice(1));apply();}})();";

int report_render_html(const struct report_agg *a, FILE *rows, FILE *out)
{
        struct report_slow slow[REPORT_TOP_K];
        struct report_group groups[REPORT_GROUPS_MAX];
        size_t n_slow = report_slowest(a, slow), n_groups = report_groups_sorted(a, groups);
        char buf[65536];
        size_t n;

        fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
              "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
              "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
              "<title>nsbox report</title>\n<style>", out);
        fputs(style, out);
        fputs("</style></head><body>\n<h1>nsbox report</h1>\n", out);
        fprintf(out, "<p class=\"sum\" id=\"summary\"><span id=\"jobs\">%llu</span> jobs "
                     "(<span id=\"results\">%llu</span> results, <span id=\"verdicts\">%llu</span> verdicts), "
                     "<span id=\"failed-count\">%llu</span> failed or erred, "
                     "<span id=\"bad-count\">%llu</span> bad lines</p>\n",
                (unsigned long long) a->valid, (unsigned long long) a->results, (unsigned long long) a->verdicts,
                (unsigned long long) a->failed, (unsigned long long) a->bad);
        fputs("<h2>Counts</h2>\n<table id=\"counts\">\n", out);
        count_table(out, "status", &a->status, a->results);
        count_table(out, "outcome", &a->outcome, a->results);
        count_table(out, "verdict", &a->verdict, a->verdicts);
        count_table(out, "limit", &a->limit, 0);
        count_table(out, "start", &a->start, a->valid);
        fputs("</table>\n", out);
        if (failure_groups(a, out) < 0)
                return -ENOMEM;
        case_breakdown(a, out);
        fputs("<h2>Distributions</h2>\n<div id=\"dists\">\n", out);
        svg_hist(out, "hist-wall", "wall time per job", &a->wall_ms, fmt_ms);
        svg_hist(out, "hist-mem", "peak memory per job", &a->mem_mib, fmt_mib);
        fputs("</div>\n", out);

        if (n_slow) {
                fputs("<h2>Slowest jobs</h2>\n<table id=\"slowest\"><thead><tr><th>wall ms</th><th>id</th>"
                      "<th>where</th></tr></thead><tbody>\n", out);
                for (size_t i = 0; i < n_slow; i++) {
                        fprintf(out, "<tr><td class=\"num\">%.1f</td><td>", slow[i].wall_ms);
                        esc(out, slow[i].id);
                        fputs("</td><td>", out);
                        esc(out, slow[i].where);
                        fputs("</td></tr>\n", out);
                }
                fputs("</tbody></table>\n", out);
        }
        if (a->errors) {
                fprintf(out, "<h2>Errors by stage and message (%llu)</h2>\n<table id=\"errors\" class=\"wide\"><thead><tr>"
                             "<th>count</th><th>stage</th><th>message</th><th>first job</th></tr></thead><tbody>\n",
                        (unsigned long long) a->errors);
                for (size_t i = 0; i < n_groups; i++) {
                        fprintf(out, "<tr><td class=\"num\">%s%llu</td><td>", groups[i].over ? "~" : "",
                                (unsigned long long) groups[i].n);
                        esc(out, groups[i].stage);
                        fputs("</td><td>", out);
                        esc(out, groups[i].message);
                        fputs("</td><td>", out);
                        esc(out, groups[i].first_id);
                        fputs("</td></tr>\n", out);
                }
                if (a->errors_ungrouped)
                        fprintf(out, "<tr><td colspan=\"4\">(over %d distinct groups: the most frequent are kept; "
                                     "~N is at most N)</td></tr>\n", REPORT_GROUPS_MAX);
                fputs("</tbody></table>\n", out);
        }
        if (a->bad) {
                fprintf(out, "<h2>Bad lines (%llu)</h2>\n<ul id=\"bad\">\n", (unsigned long long) a->bad);
                for (size_t i = 0; i < a->n_bad_kept; i++) {
                        fputs("<li>", out);
                        esc(out, a->bad_kept[i].where);
                        fputs(": ", out);
                        esc(out, a->bad_kept[i].why);
                        fputs("</li>\n", out);
                }
                if (a->bad > a->n_bad_kept)
                        fprintf(out, "<li>\u2026 and %llu more</li>\n", (unsigned long long) (a->bad - a->n_bad_kept));
                fputs("</ul>\n", out);
        }
        fprintf(out, "<h2>Failed or erred jobs (<span id=\"shown\">%llu</span> of %llu shown)</h2>\n"
                     "<input id=\"filter\" type=\"search\" placeholder=\"filter: id, reason, stderr\u2026\" "
                     "aria-label=\"filter the failed jobs\">\n"
                     "<table id=\"failed\" class=\"wide\"><thead><tr><th>id</th><th>where</th><th>status</th><th>reason</th>"
                     "<th>stderr (head)</th></tr></thead><tbody>\n",
                (unsigned long long) a->failed, (unsigned long long) a->failed);
        if (rows) {
                rewind(rows);
                while ((n = fread(buf, 1, sizeof buf, rows)) > 0)
                        if (fwrite(buf, 1, n, out) != n)
                                break;
                if (ferror(rows))
                        return -EIO;
        }
        fputs("</tbody></table>\n<script>", out);
        fputs(script, out);
        fputs("</script>\n</body></html>\n", out);
        return ferror(out) ? -EIO : 0;
}
