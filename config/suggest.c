/* config/suggest.c — "did you mean": the closest of a few known names to a
 * mistyped one. Pure.
 *
 * Distance: Levenshtein with adjacent transpositions counted as one edit
 * (optimal string alignment), so "pyhton" is one edit from "python" and
 * "wall-tme" one from "wall-time". A name counts as close when it is at most
 * a third of its length away (at least one edit, at most three), or when the
 * typed word is the start of exactly that name and at least three characters
 * long ("--mem" for --memory). Letter case is ignored ("--MEMORY",
 * "[Limits]"): every name nsbox knows is lower case. Ties go to the first
 * candidate. @names holds each name once. */
#include "config/config.h"

#include <string.h>
#include <strings.h>

#define WORD_MAX 64

static char lower(char c)
{
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

static size_t min3(size_t a, size_t b, size_t c)
{
        size_t m = a < b ? a : b;
        return m < c ? m : c;
}

size_t cfg_edit_distance(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        size_t d[WORD_MAX + 1][WORD_MAX + 1];

        if (la > WORD_MAX || lb > WORD_MAX)
                return (size_t) -1;
        for (size_t i = 0; i <= la; i++)
                d[i][0] = i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = j;
        for (size_t i = 1; i <= la; i++)
                for (size_t j = 1; j <= lb; j++) {
                        size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
                        d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
                        if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                            lower(a[i - 2]) == lower(b[j - 1]) &&
                            d[i - 2][j - 2] + 1 < d[i][j])
                                d[i][j] = d[i - 2][j - 2] + 1;
                }
        return d[la][lb];
}

const char *cfg_closest(const char *word, const char *const *names, size_t n)
{
        const char *best = NULL, *prefix_of = NULL;
        size_t best_d = (size_t) -1, wlen = strlen(word), n_prefix = 0;

        for (size_t i = 0; i < n; i++) {
                size_t d = cfg_edit_distance(word, names[i]), len = strlen(names[i]);
                size_t allowed = len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : len / 3;

                if (wlen >= 3 && wlen < len && strncasecmp(word, names[i], wlen) == 0) {
                        prefix_of = names[i];
                        n_prefix++;
                }
                if (d <= allowed && d < best_d) {
                        best = names[i];
                        best_d = d;
                }
        }
        if (best)
                return best;
        return n_prefix == 1 ? prefix_of : NULL;
}
