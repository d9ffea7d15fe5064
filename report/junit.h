/* report/junit.h — JUnit XML for `nsbox judge --junit FILE` and
 * `nsbox test --junit FILE`, the format CI systems render as test results.
 *
 * One <testsuite> with one <testcase> per judge case or harness test. A case
 * that failed on evidence is a <failure>; one nsbox could not decide (a
 * sandbox error, undetermined) is an <error>, never a <failure>; one that did
 * not run is <skipped>. Messages carry the verdict's reason, and the body
 * the whole of it; each case carries what the program printed.
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

/* Bytes of each captured stream written in <system-out>/<system-err>; the
 * rest is said cut ("[... N more bytes]"). CI pages show these per case. */
#define JUNIT_STREAM_MAX (64u * 1024u)
/* Bytes of the reason in the message="..." attribute (its first line, cut
 * on a character); the whole reason is in the element's body. */
#define JUNIT_MESSAGE_MAX 300

struct junit_case {
        const char *name;
        const char *classname;  /* a dotted class ("test_x.TestAdd", "judge.spec"): junit_classname() */
        double time_s;          /* < 0: unknown, written as 0 (every case has a time) */
        enum junit_kind kind;
        const char *message;    /* the reason; NULL for a pass */
        const char *detail;     /* more text after the reason in the body (a traceback); may be NULL */
        size_t detail_len;
        const char *out, *err;  /* the captured streams (<system-out>, <system-err>); may be NULL */
        size_t out_len, err_len;
};

/* The document: <testsuites> holding one <testsuite name=@suite> (tests,
 * failures, errors, skipped, time) with one <testcase> per case (name,
 * classname, time); a failure, error or skip as <failure|error
 * message="FIRST LINE" type="..">REASON\n\nDETAIL</failure|error> or
 * <skipped message=".."/>, then <system-out>/<system-err> when captured.
 * Checked against the element and attribute list of the Jenkins JUnit
 * plugin's schema (tests/integration/junit_min.xsd). */
int junit_render(FILE *out, const char *suite, const struct junit_case *cases, size_t n, double time_s,
                 const struct junit_case *run);
/* @run (may be NULL): only its out/err, written as the <testsuite>'s own
 * <system-out>/<system-err> after the cases: output of the whole run that
 * belongs to no one case (nsbox test: what went to fd 1/2 directly). */

/* A dotted classname from a path-like name: "test_x.py::TestAdd::test_a"
 * gives "test_x.TestAdd" (and *ret_test "test_a"), "test_x.py::test_f"
 * gives "test_x" ("test_f"); a spec path "/a/b/hw1.json" with @prefix
 * "judge" gives "judge.hw1". malloc'd; NULL on ENOMEM. */
char *junit_classname(const char *prefix, const char *name, const char **ret_test);

/* The testsuite's name for a spec or harness @path: its last component
 * (trailing slashes ignored: "/srv/course/harness/" gives "harness"), never
 * the host path a CI page may show to a learner. malloc'd; NULL on ENOMEM. */
char *junit_suite_name(const char *path);

/* junit_render into the pinned @path (result_path_pin), truncating it. */
int junit_write(const char *path, const char *suite, const struct junit_case *cases, size_t n, double time_s,
                const struct junit_case *run, struct nsb_error *e);
