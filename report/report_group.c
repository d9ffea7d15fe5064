/* report/report_group.c — failures grouped by their reason, and judge
 * cases by how often they fail. Pure.
 *
 * 3000 results with 2000 failures are read as a few reasons: a learner's
 * SyntaxError in 1800 of them is one group, not 1800 rows. Two failures are
 * the same when their reasons differ only in what report_normalize folds
 * (paths, numbers, hex ids; a judge reason's quoted excerpts).
 */
#include "report/report_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static bool is_hex(char c)
{
        return isxdigit((unsigned char) c) != 0;
}

static bool is_word(char c)
{
        return isalnum((unsigned char) c) || c == '_' || (unsigned char) c >= 0x80;
}

/* A hex id at @s: "0x" and hex digits, or a run of 8+ hex digits (and '-',
 * as in a UUID) holding a digit and a letter, ending at a word boundary.
 * Its length, or 0. */
static size_t hex_id(const char *s, size_t len)
{
        size_t i = 0;
        bool digit = false, letter = false;

        if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && is_hex(s[2])) {
                for (i = 2; i < len && is_hex(s[i]); i++)
                        ;
                return i < len && is_word(s[i]) ? 0 : i;
        }
        for (; i < len && (is_hex(s[i]) || s[i] == '-'); i++) {
                digit = digit || isdigit((unsigned char) s[i]);
                letter = letter || isalpha((unsigned char) s[i]);
        }
        while (i > 0 && s[i - 1] == '-')
                i--;
        if (i < 8 || !digit || !letter || (i < len && is_word(s[i])))
                return 0;
        return i;
}

/* Append @t (@n bytes) to @out if it fits whole. */
static void put(char *out, size_t size, size_t *o, const char *t, size_t n)
{
        if (*o + n + 1 > size)
                return;
        memcpy(out + *o, t, n);
        *o += n;
}

void report_normalize(const char *s, size_t len, bool quotes, char *out, size_t size)
{
        size_t o = 0, i = 0;

        if (!size)
                return;
        while (i < len && o + 1 < size) {
                char c = s[i];
                bool boundary = i == 0 || !is_word(s[i - 1]);
                size_t n;

                if (c == '/' && (i == 0 || strchr(" \t\"'(=:,[", s[i - 1]))) {
                        /* a path: up to a space, a quote, a comma or a bracket */
                        while (i < len && !strchr(" \t\"',)]>\n", s[i]) && !(s[i] == ':' && i + 1 < len && s[i + 1] == ' '))
                                i++;
                        put(out, size, &o, "<path>", 6);
                } else if (boundary && (n = hex_id(s + i, len - i))) {
                        put(out, size, &o, "<id>", 4);
                        i += n;
                } else if (boundary && isdigit((unsigned char) c)) {
                        while (i < len && (isdigit((unsigned char) s[i]) ||
                                           (s[i] == '.' && i + 1 < len && isdigit((unsigned char) s[i + 1]))))
                                i++;
                        put(out, size, &o, "N", 1);
                } else if (quotes && c == '\'' && memchr(s + i + 1, '\'', len - i - 1)) {
                        /* judge reasons quote excerpts of the output: 'abc' */
                        const char *end = memchr(s + i + 1, '\'', len - i - 1);

                        put(out, size, &o, "'\u2026'", strlen("'\u2026'"));
                        i = (size_t) (end - s) + 1;
                } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                        if (o > 0 && out[o - 1] != ' ')
                                put(out, size, &o, " ", 1);
                        i++;
                } else {
                        /* one UTF-8 character, whole or not at all */
                        size_t k = 1;

                        while (i + k < len && ((unsigned char) s[i + k] & 0xc0) == 0x80)
                                k++;
                        if (o + k + 1 > size)
                                break;
                        put(out, size, &o, s + i, k);
                        i += k;
                }
        }
        while (o > 0 && out[o - 1] == ' ')
                o--;
        out[o] = '\0';
}

void report_last_line(const char *s, char *out, size_t size)
{
        size_t end, start;

        out[0] = '\0';
        if (!s)
                return;
        end = strlen(s);
        while (end > 0 && strchr(" \t\r\n", s[end - 1]))
                end--;
        start = end;
        while (start > 0 && s[start - 1] != '\n')
                start--;
        while (start < end && (s[start] == ' ' || s[start] == '\t'))
                start++;
        /* cut on a character */
        if (end - start >= size) {
                end = start + size - 1;
                while (end > start && ((unsigned char) s[end] & 0xc0) == 0x80)
                        end--;
        }
        memcpy(out, s + start, end - start);
        out[end - start] = '\0';
}

void report_fgroup_add(struct report_agg *a, const struct report_job *j)
{
        char key[REPORT_MSG_MAX];
        struct report_fgroup *g = NULL;

        report_normalize(j->why, strlen(j->why), j->why_quotes, key, sizeof key);
        if (!key[0])
                snprintf(key, sizeof key, "(no reason recorded)");
        for (size_t i = 0; i < a->n_fgroups && !g; i++)
                if (strcmp(a->fgroups[i].key, key) == 0)
                        g = &a->fgroups[i];
        if (!g && a->n_fgroups < REPORT_FGROUPS_MAX) {
                g = &a->fgroups[a->n_fgroups++];
                memset(g, 0, sizeof *g);
        } else if (!g) {
                /* Full: Space-Saving, as the error groups (report_agg.c): the
                 * least frequent gives its place and its count. */
                g = &a->fgroups[0];
                for (size_t i = 1; i < a->n_fgroups; i++)
                        if (a->fgroups[i].n < g->n)
                                g = &a->fgroups[i];
                a->fgroups_replaced += g->n;
                g->over = g->n;
                g->erred = 0;
                g->key[0] = '\0';
        }
        if (!g->key[0]) {
                memcpy(g->key, key, sizeof key);
                snprintf(g->example, sizeof g->example, "%s", j->why);
                snprintf(g->example_id, sizeof g->example_id, "%s", j->id);
        }
        g->n++;
        g->erred += j->erred;
}

void report_case_add(struct report_agg *a, const char *name, const char *verdict)
{
        char k[REPORT_KEY_MAX];
        struct report_case_stat *c = NULL;

        snprintf(k, sizeof k, "%s", name ? name : "(unnamed)");
        for (size_t i = 0; i < a->n_cases && !c; i++)
                if (strcmp(a->cases[i].name, k) == 0)
                        c = &a->cases[i];
        if (!c) {
                if (a->n_cases == REPORT_CASES_MAX) {
                        a->cases_other++;
                        return;
                }
                c = &a->cases[a->n_cases++];
                memset(c, 0, sizeof *c);
                memcpy(c->name, k, sizeof k);
        }
        c->runs++;
        if (verdict && strcmp(verdict, "fail") == 0)
                c->failed++;
        else if (verdict && strcmp(verdict, "pass") != 0)
                c->undetermined++;      /* undetermined, not_run */
}

static int fgroup_desc(const void *x, const void *y)
{
        const struct report_fgroup *a = x, *b = y;

        return a->n < b->n ? 1 : a->n > b->n ? -1 : strcmp(a->key, b->key);
}

size_t report_fgroups_sorted(const struct report_agg *a, struct report_fgroup *ret)
{
        memcpy(ret, a->fgroups, a->n_fgroups * sizeof *ret);
        qsort(ret, a->n_fgroups, sizeof *ret, fgroup_desc);
        return a->n_fgroups;
}

static int case_desc(const void *x, const void *y)
{
        const struct report_case_stat *a = x, *b = y;

        /* failed on evidence first: a case the sandbox could not judge is
         * not a case the programs get wrong (then, the undetermined) */
        if (a->failed != b->failed)
                return a->failed < b->failed ? 1 : -1;
        if (a->undetermined != b->undetermined)
                return a->undetermined < b->undetermined ? 1 : -1;
        return strcmp(a->name, b->name);
}

size_t report_cases_sorted(const struct report_agg *a, struct report_case_stat *ret)
{
        memcpy(ret, a->cases, a->n_cases * sizeof *ret);
        qsort(ret, a->n_cases, sizeof *ret, case_desc);
        return a->n_cases;
}
