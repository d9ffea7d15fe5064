/* report/junit.c — JUnit XML rendering. Pure. */
#include "report/junit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/textsafe.h"

/* Attribute values (all of them are quoted with "): util/textsafe.h's XML
 * encoder, which shows the characters XML 1.0 forbids (and the rest of the
 * unsafe set) as visible escapes, so the file always parses. */
static void esc(FILE *out, const char *s)
{
        textsafe_xml(out, s ? s : "", s ? strlen(s) : 0, true);
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
                        textsafe_xml(out, c->detail, c->detail_len, false);
                        fprintf(out, "</%s>\n", tag[c->kind]);
                } else {
                        fputs("/>\n", out);
                }
                fputs("  </testcase>\n", out);
        }
        fputs("</testsuite>\n</testsuites>\n", out);
        return ferror(out) ? -EIO : 0;
}
