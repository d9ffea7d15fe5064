/* judge/judge_render.c — the verdict as `nsbox.verdict/1` JSON and as a
 * human summary. Pure: allocation only (open_memstream writes to memory).
 */
#include "judge/judge_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/cleanup.h"
#include "util/json_cleanup.h"
#include "util/textsafe.h"

/* json_object_set_new that reports a NULL value (allocation failure). */
static int set(json_t *obj, const char *key, json_t *v)
{
        if (!v)
                return -1;
        return json_object_set_new(obj, key, v);
}

static json_t *case_json(const struct judge_case_report *c, uint64_t output_limit,
                         json_t *(*render_result)(const struct run_result *r, uint64_t output_limit))
{
        AUTO(json_decref) json_t *o = json_object();

        if (!o)
                return NULL;
        /* Names come from JSON (valid UTF-8, no NUL); reasons are built from
         * exact excerpts made valid UTF-8: both are valid JSON strings, and
         * the exact text (jansson escapes what JSON needs). */
        if (set(o, "name", json_string(c->name ? c->name : "")) < 0 ||
            set(o, "verdict", json_string(judge_verdict_name(c->verdict))) < 0 ||
            set(o, "reason", json_string(c->reason)) < 0 ||
            set(o, "weight", json_real(c->weight > 0 ? c->weight : 1)) < 0)
                return NULL;
        /* The recorded result object the verdict was read from, as it is. */
        if (set(o, "result", c->result_json ? json_incref(c->result_json) :
                             c->ran ? render_result(&c->result, output_limit) : json_null()) < 0)
                return NULL;
        if (c->observation_id[0] && set(o, "observation_id", json_string(c->observation_id)) < 0)
                return NULL;
        return move_ptr(&o);
}

/* "warm" when every case that ran started warm, else "cold" (a cold case's
 * result says why, when --warm was asked). */
const char *judge_report_start(const struct judge_report *rep)
{
        size_t ran = 0;

        for (size_t i = 0; i < rep->n_cases; i++) {
                if (!rep->cases[i].ran)
                        continue;
                ran++;
                if (!rep->cases[i].result.warm)
                        return "cold";
        }
        return ran ? "warm" : "cold";
}

/* ", score 0.7143": four decimals, trailing zeros dropped; a score below 1
 * never reads "1" (a failed case beside a heavy passed one), one above 0
 * never "0" (the JSON has the exact value). */
static void score_text(FILE *f, double score)
{
        char num[32];
        size_t n;

        if (score > 0 && score < 0.0001)
                score = 0.0001;
        else if (score < 1 && score > 0.9999)
                score = 0.9999;
        n = (size_t) snprintf(num, sizeof num, "%.4f", score);
        while (n > 0 && num[n - 1] == '0')
                num[--n] = '\0';
        if (n > 0 && num[n - 1] == '.')
                num[--n] = '\0';
        fprintf(f, ", score %s", num);
}

void judge_tally(const struct judge_report *rep, struct judge_tally *ret)
{
        double passed = 0, total = 0;
        bool unknown = false;

        memset(ret, 0, sizeof *ret);
        for (size_t i = 0; i < rep->n_cases; i++) {
                const struct judge_case_report *c = &rep->cases[i];
                double w = c->weight > 0 ? c->weight : 1;

                if ((unsigned) c->verdict > JUDGE_NOT_RUN)
                        continue;
                ret->count[c->verdict]++;
                total += w;
                if (c->verdict == JUDGE_PASS)
                        passed += w;
                /* nsbox could not look at it: it must not lower the score
                 * (undetermined, or not run because of a cancel, even after
                 * a failure). A case --fail-fast skipped (the suite failed
                 * on evidence) is not passed. */
                if (c->verdict == JUDGE_UNDETERMINED ||
                    (c->verdict == JUDGE_NOT_RUN && (rep->verdict != JUDGE_FAIL || c->status == RUN_CANCELLED)))
                        unknown = true;
        }
        ret->scored = !unknown && total > 0;
        ret->score = ret->scored ? passed / total : 0;
}

static json_t *counts_json(const struct judge_tally *t)
{
        return json_pack("{s:I,s:I,s:I,s:I}", "pass", (json_int_t) t->count[JUDGE_PASS], "fail",
                         (json_int_t) t->count[JUDGE_FAIL], "undetermined", (json_int_t) t->count[JUDGE_UNDETERMINED],
                         "not_run", (json_int_t) t->count[JUDGE_NOT_RUN]);
}

json_t *judge_report_to_json(const struct judge_report *rep,
                             json_t *(*render_result)(const struct run_result *r, uint64_t output_limit))
{
        AUTO(json_decref) json_t *root = json_object();
        struct judge_tally t;
        json_t *cases;

        if (!root)
                return NULL;
        judge_tally(rep, &t);
        if (set(root, "schema", json_string(JUDGE_SCHEMA)) < 0 ||
            set(root, "verdict", json_string(judge_verdict_name(rep->verdict))) < 0 ||
            set(root, "counts", counts_json(&t)) < 0 ||
            set(root, "score", t.scored ? json_real(t.score) : json_null()) < 0 ||
            set(root, "program_sha256", json_string(rep->program_sha256)) < 0 ||
            (rep->replayed && set(root, "replayed", json_true()) < 0) ||
            set(root, "start", json_string(judge_report_start(rep))) < 0 ||
            (strcmp(judge_report_start(rep), "cold") == 0 && rep->start_reason[0] &&
             set(root, "start_reason", json_string(rep->start_reason)) < 0) ||
            set(root, "cases", json_array()) < 0)
                return NULL;
        cases = json_object_get(root, "cases");
        for (size_t i = 0; i < rep->n_cases; i++)
                if (json_array_append_new(cases, case_json(&rep->cases[i], rep->output_limit, render_result)) < 0)
                        return NULL;
        return move_ptr(&root);
}

static const char *mark(enum judge_verdict v)
{
        switch (v) {
        case JUDGE_PASS:
                return "\u2713";   /* ✓ */
        case JUDGE_FAIL:
                return "\u2717";   /* ✗ */
        case JUDGE_NOT_RUN:
                return "-";
        default:
                return "?";
        }
}

/* The mark that starts a screen row continuing a long line. */
#define CONT "  \u21aa "

char *judge_summary_text(const struct judge_report *rep)
{
        struct judge_tally t;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        if (!f)
                return NULL;
        for (size_t i = 0; i < rep->n_cases; i++) {
                const struct judge_case_report *c = &rep->cases[i];
                char name[256] = "";
                size_t col = 0;

                /* One line per case, whatever the name and the reason quote
                 * (a newline, ESC, CSI, a bidi override), wrapped before the
                 * terminal would wrap it, so that no screen row starts with
                 * the program's output (an excerpt in the reason padded to
                 * the width): util/textsafe.h. */
                if (c->name)
                        textsafe_term_append(name, sizeof name, c->name, strlen(c->name), 120);
                textsafe_term_wrap(f, mark(c->verdict), strlen(mark(c->verdict)), CONT, &col);
                textsafe_term_wrap(f, " ", 1, CONT, &col);
                textsafe_term_wrap(f, name, strlen(name), CONT, &col);
                textsafe_term_wrap(f, " \u2014 ", strlen(" \u2014 "), CONT, &col);
                textsafe_term_wrap(f, c->reason, strlen(c->reason), CONT, &col);
                fputc('\n', f);
        }
        judge_tally(rep, &t);
        fprintf(f, "verdict: %s (%zu passed, %zu failed, %zu undetermined", judge_verdict_name(rep->verdict),
                t.count[JUDGE_PASS], t.count[JUDGE_FAIL], t.count[JUDGE_UNDETERMINED]);
        if (t.count[JUDGE_NOT_RUN])
                fprintf(f, ", %zu not run", t.count[JUDGE_NOT_RUN]);
        fputc(')', f);
        if (t.scored)
                score_text(f, t.score);
        else
                fputs(", no score (a case could not be judged)", f);
        fprintf(f, "%s\n", rep->replayed ? ", replayed from stored observations: no sandbox ran" : "");
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}
