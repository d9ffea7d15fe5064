/* report/junit.c — JUnit XML rendering. Pure. */
#include "report/junit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at @p (at most @n bytes), 0 if invalid;
 * *ret the code point. Overlong forms and surrogates are invalid. */
static size_t utf8_seq(const unsigned char *p, size_t n, uint32_t *ret)
{
        size_t len;
        uint32_t c, min;

        if (p[0] < 0x80) {
                *ret = p[0];
                return 1;
        }
        if ((p[0] & 0xe0) == 0xc0)
                len = 2, c = p[0] & 0x1f, min = 0x80;
        else if ((p[0] & 0xf0) == 0xe0)
                len = 3, c = p[0] & 0x0f, min = 0x800;
        else if ((p[0] & 0xf8) == 0xf0)
                len = 4, c = p[0] & 0x07, min = 0x10000;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (p[i] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret = c;
        return len;
}

/* @attr: inside an attribute value, where a parser normalizes a literal
 * tab or newline to a space: they are written as character references. */
static int escape(FILE *out, const char *text, size_t len, bool attr)
{
        const unsigned char *p = (const unsigned char *) text;
        size_t i = 0;

        while (i < len) {
                uint32_t c;
                size_t k = utf8_seq(p + i, len - i, &c);

                if (k == 0) {
                        fputs("\xef\xbf\xbd", out);     /* U+FFFD */
                        i++;
                        continue;
                }
                /* XML 1.0 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF] */
                if ((c < 0x20 && c != 0x9 && c != 0xa && c != 0xd) || c == 0xfffe || c == 0xffff) {
                        i += k;
                        continue;
                }
                switch (c) {
                case '&': fputs("&amp;", out); break;
                case '<': fputs("&lt;", out); break;
                case '>': fputs("&gt;", out); break;
                case '"': fputs("&quot;", out); break;
                case '\'': fputs("&apos;", out); break;
                case '\r': fputs("&#13;", out); break;  /* kept: a bare CR would read back as LF */
                case '\n': fputs(attr ? "&#10;" : "\n", out); break;
                case '\t': fputs(attr ? "&#9;" : "\t", out); break;
                default: fwrite(p + i, 1, k, out);
                }
                i += k;
        }
        return ferror(out) ? -EIO : 0;
}

int junit_escape(FILE *out, const char *text, size_t len)
{
        return escape(out, text, len, false);
}

/* Attribute values (all of them are quoted with "). */
static void esc(FILE *out, const char *s)
{
        escape(out, s ? s : "", s ? strlen(s) : 0, true);
}

int junit_render(FILE *out, const char *suite, const struct junit_case *cases, size_t n, double time_s)
{
        size_t count[4] = { 0 };

        for (size_t i = 0; i < n; i++)
                count[cases[i].kind]++;
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"", out);
        esc(out, suite);
        fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\"", n, count[JUNIT_FAILURE],
                count[JUNIT_ERROR], count[JUNIT_SKIPPED]);
        if (time_s >= 0)
                fprintf(out, " time=\"%.3f\"", time_s);
        fputs(">\n", out);
        for (size_t i = 0; i < n; i++) {
                const struct junit_case *c = &cases[i];
                static const char *const tag[] = { NULL, "failure", "error", "skipped" };

                fputs("  <testcase name=\"", out);
                esc(out, c->name);
                fputs("\" classname=\"", out);
                esc(out, c->classname);
                fputc('"', out);
                if (c->time_s >= 0)
                        fprintf(out, " time=\"%.3f\"", c->time_s);
                if (c->kind == JUNIT_PASS) {
                        fputs("/>\n", out);
                        continue;
                }
                fprintf(out, ">\n    <%s message=\"", tag[c->kind]);
                esc(out, c->message);
                fputc('"', out);
                if (c->kind != JUNIT_SKIPPED)
                        fprintf(out, " type=\"%s\"", c->kind == JUNIT_FAILURE ? "fail" : "undetermined");
                if (c->detail && c->detail_len) {
                        fputc('>', out);
                        junit_escape(out, c->detail, c->detail_len);
                        fprintf(out, "</%s>\n", tag[c->kind]);
                } else {
                        fputs("/>\n", out);
                }
                fputs("  </testcase>\n", out);
        }
        fputs("</testsuite>\n</testsuites>\n", out);
        return ferror(out) ? -EIO : 0;
}
