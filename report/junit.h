/* report/junit.h — JUnit XML for `nsbox judge --junit FILE` and
 * `nsbox test --junit FILE`, the format CI systems render as test results.
 *
 * One <testsuite> with one <testcase> per judge case or harness test. A case
 * that failed on evidence is a <failure>; one nsbox could not decide (a
 * sandbox error, undetermined) is an <error>, never a <failure>; one that did
 * not run is <skipped>. Messages carry the verdict's reason.
 *
 * The XML is always well-formed: text goes through textsafe_xml
 * (util/textsafe.h): & < > " ' as references, the characters XML 1.0 does not
 * allow (C0 but TAB/LF/CR, U+FFFE/F), the other unsafe ones (DEL, C1, bidi
 * controls, line separators) and bytes that are not UTF-8 shown as visible
 * escapes (\x1b, \u009b, \xff), whatever the program printed. junit_render is pure; junit_write opens the file with the
 * rules of --result (util/resultfile.h).
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include "util/error.h"

enum junit_kind { JUNIT_PASS = 0, JUNIT_FAILURE, JUNIT_ERROR, JUNIT_SKIPPED };

struct junit_case {
        const char *name;
        const char *classname;  /* the suite's file: the spec, the harness */
        double time_s;          /* < 0: not given */
        enum junit_kind kind;
        const char *message;    /* the reason; NULL for a pass */
        const char *detail;     /* longer text in the element's body (stderr, traceback); may be NULL */
        size_t detail_len;
};

int junit_render(FILE *out, const char *suite, const struct junit_case *cases, size_t n, double time_s);

/* junit_render into the pinned @path (result_path_pin), truncating it. */
int junit_write(const char *path, const char *suite, const struct junit_case *cases, size_t n, double time_s,
                struct nsb_error *e);
