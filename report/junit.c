/* report/junit.c — JUnit XML rendering. Pure. */
#include "report/junit.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/portable.h"
#include "util/textsafe.h"

/* Attribute values (all of them are quoted with "): util/textsafe.h's XML
 * encoder, which shows the characters XML 1.0 forbids (and the rest of the
 * unsafe set) as visible escapes, so the file always parses. */
static void esc(FILE *out, const char *s)
{
        textsafe_xml(out, s ? s : "", s ? strlen(s) : 0, true);
}

/* A stream, bounded, as character data (cut on a character). */
static void stream(FILE *out, const char *tag, const char *s, size_t len)
{
        size_t keep;

        if (!s || !len)
                return;
        keep = textsafe_cut(s, len, JUNIT_STREAM_MAX);
        fprintf(out, "    <%s>", tag);
        textsafe_xml(out, s, keep, false);
        if (keep < len)
                fprintf(out, "\n[... %zu more bytes]", len - keep);
        fprintf(out, "</%s>\n", tag);
}

/* message="...": the reason's first line, clipped (the body has it all). */
static void message_attr(FILE *out, const char *m)
{
        size_t len = m ? strcspn(m, "\n") : 0, keep = m ? textsafe_cut(m, len, JUNIT_MESSAGE_MAX) : 0;

        fputs(" message=\"", out);
        textsafe_xml(out, m ? m : "", keep, true);
        fputs(keep < len || (m && m[len]) ? "...\"" : "\"", out);
}

static void testcase(FILE *out, const struct junit_case *c)
{
        static const char *const tag[] = { NULL, "failure", "error", "skipped" };

        fputs("  <testcase name=\"", out);
        esc(out, c->name);
        fputs("\" classname=\"", out);
        esc(out, c->classname);
        fprintf(out, "\" time=\"%.3f\">\n", c->time_s >= 0 ? c->time_s : 0.0);
        if (c->kind == JUNIT_SKIPPED) {
                fputs("    <skipped", out);
                message_attr(out, c->message);
                fputs("/>\n", out);
        } else if (c->kind != JUNIT_PASS) {
                fprintf(out, "    <%s", tag[c->kind]);
                message_attr(out, c->message);
                fprintf(out, " type=\"%s\">", c->kind == JUNIT_FAILURE ? "fail" : "undetermined");
                /* the reason in the body: what CI pages show when opened */
                textsafe_xml(out, c->message ? c->message : "", c->message ? strlen(c->message) : 0, false);
                if (c->detail && c->detail_len) {
                        fputs("\n\n", out);
                        textsafe_xml(out, c->detail, c->detail_len, false);
                }
                fprintf(out, "</%s>\n", tag[c->kind]);
        }
        stream(out, "system-out", c->out, c->out_len);
        stream(out, "system-err", c->err, c->err_len);
        fputs("  </testcase>\n", out);
}

int junit_render(FILE *out, const char *suite, const struct junit_case *cases, size_t n, double time_s,
                 const struct junit_case *run)
{
        size_t count[4] = { 0 };

        for (size_t i = 0; i < n; i++)
                count[cases[i].kind]++;
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n<testsuite name=\"", out);
        esc(out, suite);
        fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n", n,
                count[JUNIT_FAILURE], count[JUNIT_ERROR], count[JUNIT_SKIPPED], time_s >= 0 ? time_s : 0.0);
        for (size_t i = 0; i < n; i++)
                testcase(out, &cases[i]);
        if (run) {
                stream(out, "system-out", run->out, run->out_len);
                stream(out, "system-err", run->err, run->err_len);
        }
        fputs("</testsuite>\n</testsuites>\n", out);
        return ferror(out) ? -EIO : 0;
}

char *junit_classname(const char *prefix, const char *name, const char **ret_test)
{
        const char *sep = strstr(name, "::"), *base, *end, *last;
        char *out = NULL, *dot;
        size_t stem;

        if (ret_test)
                *ret_test = name;
        if (sep) {
                /* FILE.py::[Class::]test: the module, dotted, and the class */
                stem = (size_t) (sep - name);
                if (stem > 3 && strncmp(sep - 3, ".py", 3) == 0)
                        stem -= 3;
                last = sep;
                for (const char *p = sep; (p = strstr(p + 2, "::")); )
                        last = p;
                if (ret_test)
                        *ret_test = last + 2;
                if (nsb_asprintf(&out, "%s%s%.*s%s%.*s", prefix ? prefix : "", prefix ? "." : "", (int) stem, name,
                                 last > sep ? "." : "", last > sep ? (int) (last - sep - 2) : 0, sep + 2) < 0)
                        return NULL;
        } else {
                /* a path: its file name without the extension */
                base = strrchr(name, '/');
                base = base ? base + 1 : name;
                end = strrchr(base, '.');
                stem = end && end > base ? (size_t) (end - base) : strlen(base);
                if (nsb_asprintf(&out, "%s%s%.*s", prefix ? prefix : "", prefix ? "." : "", (int) stem, base) < 0)
                        return NULL;
        }
        /* a module path "dir/test_x" reads as a package: dots */
        for (dot = out; (dot = strchr(dot, '/')); )
                *dot = '.';
        return out;
}

char *junit_suite_name(const char *path)
{
        size_t end = strlen(path), start;
        char *out;

        while (end > 1 && path[end - 1] == '/')
                end--;
        start = end;
        while (start > 0 && path[start - 1] != '/')
                start--;
        if (start == end)       /* "/" itself */
                start = 0;
        out = malloc(end - start + 1);
        if (!out)
                return NULL;
        memcpy(out, path + start, end - start);
        out[end - start] = '\0';
        return out;
}
