/* Unit tests for util/textsafe.c: the one definition of the characters that
 * must not reach a person's screen raw, and each encoder (terminal one line,
 * terminal lines, HTML, XML, exact-for-JSON). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "util/textsafe.h"

/* The encoders' output for @s (@len bytes), malloc'd. */
enum kind { TERM, TERM_LINES, LINES_PREFIXED, HTML, XML_TEXT, XML_ATTR };

static char *enc(enum kind k, const char *s, size_t len)
{
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);

        assert_non_null(f);
        switch (k) {
        case TERM: assert_int_equal(textsafe_term(f, s, len, TEXTSAFE_ONE_LINE), 0); break;
        case TERM_LINES: assert_int_equal(textsafe_term(f, s, len, TEXTSAFE_MULTI_LINE), 0); break;
        case LINES_PREFIXED: assert_int_equal(textsafe_term_lines(f, s, len, "  | ", "  |>"), 0); break;
        case HTML: assert_int_equal(textsafe_html(f, s, len), 0); break;
        case XML_TEXT: assert_int_equal(textsafe_xml(f, s, len, false), 0); break;
        case XML_ATTR: assert_int_equal(textsafe_xml(f, s, len, true), 0); break;
        }
        assert_int_equal(fclose(f), 0);
        return buf;
}

#define ENC(k, lit) enc(k, lit, sizeof lit - 1)

/* No byte of the output is a C0 other than TAB/LF (and a CR before LF when
 * @crlf), DEL, nor the start of an unsafe code point. */
static void assert_safe(const char *out, bool lines)
{
        size_t len = strlen(out);

        for (size_t i = 0; i < len;) {
                enum textsafe_class c;
                uint32_t cp;
                size_t n = textsafe_next(out + i, len - i, &cp, &c);

                if (lines && (c == TEXTSAFE_TAB || c == TEXTSAFE_LF ||
                              (c == TEXTSAFE_CR && out[i + 1] == '\n')))
                        c = TEXTSAFE_PLAIN;
                if (c != TEXTSAFE_PLAIN)
                        fail_msg("unsafe unit U+%04x (class %d) at byte %zu of '%s'", cp, c, i, out);
                i += n;
        }
}

static void test_classify(void **state)
{
        (void) state;
        for (uint32_t cp = 0; cp < 0x20; cp++) {
                enum textsafe_class want = cp == 9 ? TEXTSAFE_TAB : cp == 10 ? TEXTSAFE_LF : cp == 13 ? TEXTSAFE_CR
                                                                                                   : TEXTSAFE_C0;
                assert_int_equal(textsafe_classify(cp), want);
        }
        for (uint32_t cp = 0x20; cp < 0x7f; cp++)
                assert_int_equal(textsafe_classify(cp), TEXTSAFE_PLAIN);
        assert_int_equal(textsafe_classify(0x7f), TEXTSAFE_DEL);
        for (uint32_t cp = 0x80; cp <= 0x9f; cp++)
                assert_int_equal(textsafe_classify(cp), TEXTSAFE_C1);
        assert_int_equal(textsafe_classify(0xa0), TEXTSAFE_PLAIN);
        {
                const uint32_t bidi[] = { 0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
                                          0x2066, 0x2067, 0x2068, 0x2069 };
                for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++)
                        assert_int_equal(textsafe_classify(bidi[i]), TEXTSAFE_BIDI);
        }
        assert_int_equal(textsafe_classify(0x2028), TEXTSAFE_LINESEP);
        assert_int_equal(textsafe_classify(0x2029), TEXTSAFE_LINESEP);
        assert_int_equal(textsafe_classify(0xfffe), TEXTSAFE_NONCHAR);
        assert_int_equal(textsafe_classify(0xffff), TEXTSAFE_NONCHAR);
        /* ordinary text stays: accents, the marks nsbox prints, CJK, emoji, ZWJ */
        {
                const uint32_t plain[] = { 0xe9, 0x2713, 0x2717, 0x2014, 0x4e2d, 0x1f600, 0x200d, 0x2065, 0x206a,
                                           0x202f, 0x2027, 0xfffd, 0x10ffff };
                for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
                        assert_int_equal(textsafe_classify(plain[i]), TEXTSAFE_PLAIN);
        }
}

static void test_next_invalid(void **state)
{
        static const char *const bad[] = {
                "\xc0\x80",             /* overlong NUL */
                "\xc1\xbf",             /* overlong */
                "\xe0\x80\xaf",         /* overlong '/' */
                "\xe0\x82\x9b",         /* overlong U+009B */
                "\xf0\x80\x80\x80",     /* overlong */
                "\xed\xa0\x80",         /* surrogate U+D800 */
                "\xf4\x90\x80\x80",     /* U+110000 */
                "\xf8\x88\x80\x80\x80", /* 5-byte form */
                "\x80",                 /* stray continuation */
                "\xff",
                "\xe2\x80",             /* cut short */
        };
        enum textsafe_class c;
        uint32_t cp;

        (void) state;
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                assert_int_equal(textsafe_next(bad[i], strlen(bad[i]), &cp, &c), 1);
                assert_int_equal(c, TEXTSAFE_INVALID);
                assert_int_equal(cp, (unsigned char) bad[i][0]);
        }
        assert_int_equal(textsafe_next("\xc2\x9b", 2, &cp, &c), 2);
        assert_int_equal(cp, 0x9b);
        assert_int_equal(c, TEXTSAFE_C1);
        assert_int_equal(textsafe_next("\xf0\x9f\x98\x80", 4, &cp, &c), 4);
        assert_int_equal(cp, 0x1f600);
        assert_int_equal(c, TEXTSAFE_PLAIN);
}

/* Every C0, DEL and C1 code point, every bidi control, U+2028/9, U+FFFE/F
 * and invalid bytes: none reaches any encoder's output raw. */
static void test_every_unsafe_escaped(void **state)
{
        static const enum kind kinds[] = { TERM, TERM_LINES, LINES_PREFIXED, HTML, XML_TEXT, XML_ATTR };

        (void) state;
        for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
                char s[8];
                size_t n;

                if ((cp >= 0xd800 && cp <= 0xdfff) || (cp > 0x9f && cp < 0x600) || (cp > 0x700 && cp < 0x2000) ||
                    (cp > 0x2100 && cp < 0xfff0) || cp > 0xffff)
                        continue;       /* a sample: every class is in what is left */
                if (cp < 0x80)
                        s[0] = (char) cp, n = 1;
                else if (cp < 0x800)
                        s[0] = (char) (0xc0 | (cp >> 6)), s[1] = (char) (0x80 | (cp & 0x3f)), n = 2;
                else
                        s[0] = (char) (0xe0 | (cp >> 12)), s[1] = (char) (0x80 | ((cp >> 6) & 0x3f)),
                        s[2] = (char) (0x80 | (cp & 0x3f)), n = 3;
                for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
                        char *out = enc(kinds[k], s, n);

                        if (cp == 0)
                                assert_true(strlen(out) > 0);
                        assert_safe(out, kinds[k] != TERM && kinds[k] != XML_ATTR);
                        free(out);
                }
        }
}

static void test_term_one_line(void **state)
{
        char *out;

        (void) state;
        out = ENC(TERM, "a\x1b[2Kb\rc\nd\te\x7f\x01");
        assert_string_equal(out, "a\\x1b[2Kb\\rc\\nd\\te\\x7f\\x01");
        free(out);
        out = ENC(TERM, "\xc2\x9b" "31m \xc2\x85 \xe2\x80\xae \xe2\x81\xa6 \xe2\x80\x8f \xd8\x9c \xe2\x80\xa8 \xef\xbf\xbe");
        assert_string_equal(out, "\\u009b31m \\u0085 \\u202e \\u2066 \\u200f \\u061c \\u2028 \\ufffe");
        free(out);
        /* invalid UTF-8: each byte as \xNN (NN >= 80), never passed on */
        out = ENC(TERM, "x\xff\xc0\x80\xe0\x80\xafy");
        assert_string_equal(out, "x\\xff\\xc0\\x80\\xe0\\x80\\xafy");
        free(out);
        /* ordinary text and quotes unchanged; a backslash is not doubled */
        out = ENC(TERM, "it's \"caf\xc3\xa9\" \xe2\x9c\x93 C:\\dir \xf0\x9f\x98\x80");
        assert_string_equal(out, "it's \"caf\xc3\xa9\" \xe2\x9c\x93 C:\\dir \xf0\x9f\x98\x80");
        free(out);
        /* twice is once */
        {
                char *twice;

                out = ENC(TERM, "a\x1b\xc2\x9b\xff\n");
                twice = enc(TERM, out, strlen(out));
                assert_string_equal(out, twice);
                free(twice);
                free(out);
        }
        out = enc(TERM, "a\0b", 3);
        assert_string_equal(out, "a\\x00b");
        free(out);
}

static void test_term_lines(void **state)
{
        char *out;

        (void) state;
        /* LF and TAB kept; CR only before LF; a fake summary line stays a line
         * but cannot erase the one before it */
        out = ENC(TERM_LINES, "one\ttwo\r\nthree\rfake\n\x1b[2K\xe2\x9c\x93 5 passed\n");
        assert_string_equal(out, "one\ttwo\r\nthree\\rfake\n\\x1b[2K\xe2\x9c\x93 5 passed\n");
        free(out);
        out = ENC(LINES_PREFIXED, "boom\n\xe2\x9c\x93 5 passed\r\nx\ry");
        assert_string_equal(out, "  | boom\n  | \xe2\x9c\x93 5 passed\r\n  | x\\ry\n");
        free(out);
        out = ENC(LINES_PREFIXED, "a\tb\n");
        assert_string_equal(out, "  | a\\tb\n");
        free(out);
        out = ENC(LINES_PREFIXED, "");
        assert_string_equal(out, "");
        free(out);
}

static void test_html(void **state)
{
        char *out;

        (void) state;
        out = ENC(HTML, "<script>&'\"</script>\x1b[31m\xc2\x9b\xe2\x80\xae\t\n\rx\r\n\xff it's");
        assert_string_equal(out, "&lt;script&gt;&amp;&#39;&quot;&lt;/script&gt;\\x1b[31m\\u009b\\u202e\t\n\\rx\r\n\\xff it&#39;s");
        free(out);
}

static void test_xml(void **state)
{
        char *out;

        (void) state;
        out = ENC(XML_TEXT, "a<b>&'\"\x01\x1b\x7f\xc2\x85\xe2\x81\xa9\xef\xbf\xbf\xff\t\n\r\nx\ry");
        assert_string_equal(out, "a&lt;b&gt;&amp;&apos;&quot;\\x01\\x1b\\x7f\\u0085\\u2069\\uffff\\xff\t\n&#13;\nx\\ry");
        free(out);
        out = ENC(XML_ATTR, "a\tb\nc\r\nd");
        assert_string_equal(out, "a&#9;b&#10;c&#13;&#10;d");
        free(out);
        out = enc(XML_TEXT, "\0", 1);
        assert_string_equal(out, "\\x00");
        free(out);
}

static void test_term_append(void **state)
{
        char buf[64] = "got '";

        (void) state;
        textsafe_term_append(buf, sizeof buf, "a\nb\x1b'c", 6, 80);
        assert_string_equal(buf, "got 'a\\nb\\x1b'c");
        /* clipped to @max bytes of input, never inside a character */
        buf[0] = '\0';
        textsafe_term_append(buf, sizeof buf, "\xc3\xa9\xc3\xa9\xc3\xa9", 6, 3);
        assert_string_equal(buf, "\xc3\xa9...");
        /* clipped by the buffer, never inside an escape */
        {
                char small[10] = "";

                textsafe_term_append(small, sizeof small, "ab\x1b\x1b\x1b", 5, 80);
                assert_string_equal(small, "ab\\x1b...");
        }
}

static void test_exact_append(void **state)
{
        char buf[64] = "";

        (void) state;
        /* exact: control characters, C1, bidi, quotes all kept */
        textsafe_exact_append(buf, sizeof buf, "a\x1b\n'\xc2\x9b\xe2\x80\xae", 9, 80);
        assert_string_equal(buf, "a\x1b\n'\xc2\x9b\xe2\x80\xae");
        /* but a C string of valid UTF-8: NUL and invalid bytes as U+FFFD */
        buf[0] = '\0';
        textsafe_exact_append(buf, sizeof buf, "a\0b\xff", 4, 80);
        assert_string_equal(buf, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
        buf[0] = '\0';
        textsafe_exact_append(buf, sizeof buf, "0123456789", 10, 4);
        assert_string_equal(buf, "0123...");
}

/* Each screen row of @out (rows end at LF) starts with @prefix or @cont and
 * takes at most TEXTSAFE_ROW_COLS columns (ASCII 1, any other code point 2);
 * the text after the prefixes, joined, is @want. */
static void assert_rows(const char *out, const char *prefix, const char *cont, const char *want)
{
        char joined[4096] = "";
        const char *p = out;

        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t) (nl - p) : strlen(p);
                const char *lead = strncmp(p, prefix, strlen(prefix)) == 0 ? prefix : cont;

                if (strncmp(p, lead, strlen(lead)) != 0)
                        fail_msg("a row starts with neither prefix: '%.*s'", (int) n, p);
                if (textsafe_cols(p, n) > TEXTSAFE_ROW_COLS)
                        fail_msg("a row of %zu columns: '%.*s'", textsafe_cols(p, n), (int) n, p);
                strncat(joined, p + strlen(lead), n - strlen(lead));
                p += n + (nl ? 1 : 0);
        }
        assert_string_equal(joined, want);
}

static char *lines(const char *s, const char *prefix, const char *cont)
{
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);

        assert_non_null(f);
        assert_int_equal(textsafe_term_lines(f, s, strlen(s), prefix, cont), 0);
        assert_int_equal(fclose(f), 0);
        return buf;
}

/* A line padded to the width of the terminal cannot start a screen row with
 * its own text: the encoder wraps first, and the row starts with nsbox's
 * continuation mark (util/textsafe.h "Terminal wrapping"). */
static void test_term_wrap(void **state)
{
        char pad[256], want[512];
        char *out;
        size_t col;

        (void) state;
        memset(pad, ' ', 72);
        strcpy(pad + 72, "== 1 passed ==");
        out = lines(pad, "  | ", "  |\u21aa");
        snprintf(want, sizeof want, "  | %.*s\n  |\u21aa== 1 passed ==\n", 72, pad);
        assert_string_equal(out, want);
        free(out);
        /* 200 ASCII: rows of 72 after a 4-column prefix, 71 after the
         * continuation (5 columns counted: the arrow is not ASCII) */
        memset(pad, 'x', 200);
        pad[200] = '\0';
        out = lines(pad, "  | ", "  |\u21aa");
        assert_rows(out, "  | ", "  |\u21aa", pad);
        free(out);
        /* wide characters count 2 columns: 36 a row after 4 columns */
        out = lines("\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad"
                    "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad"
                    "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad"
                    "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad"
                    "\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad",
                    "    ", "  > ");
        assert_int_equal(strchr(out, '\n') - out, 4 + 36 * 3);
        free(out);
        /* an escape is never cut: 71 columns then ESC (4) starts a new row */
        memset(pad, 'a', 71);
        strcpy(pad + 71, "\x1b[2Kz\nshort\r\n");
        out = lines(pad, "    ", "  > ");
        snprintf(want, sizeof want, "    %.*s\n  > \\x1b[2Kz\n    short\r\n", 71, pad);
        assert_string_equal(out, want);
        free(out);
        /* one line after nsbox's own lead: from its column */
        {
                char *buf = NULL;
                size_t n = 0;
                FILE *f = open_memstream(&buf, &n);

                col = 70;
                assert_int_equal(textsafe_term_wrap(f, "abcdefghij", 10, "  > ", &col), 0);
                assert_int_equal(fclose(f), 0);
                assert_string_equal(buf, "abcdef\n  > ghij");
                assert_int_equal(col, 8);
                free(buf);
        }
}

/* Every JSON nsbox writes: DEL, C1, bidi, line separators, non-characters
 * as \uXXXX; ordinary non-ASCII raw; the same value read back. */
/* textsafe_cut: a valid character across the bound is not split; stray
 * continuation bytes do not make it back up further than one character. */
static void test_cut(void **state)
{
        char junk[100];

        (void) state;
        assert_int_equal(textsafe_cut("abc", 3, 10), 3);
        assert_int_equal(textsafe_cut("ab\xe2\x82\xac", 5, 3), 2);      /* € from byte 2 */
        assert_int_equal(textsafe_cut("ab\xe2\x82\xac", 5, 4), 2);
        assert_int_equal(textsafe_cut("ab\xe2\x82\xacx", 6, 5), 5);
        assert_int_equal(textsafe_cut("a\xf0\x9f\x98\x80", 5, 4), 1);  /* 4-byte emoji */
        memset(junk, 0x80, sizeof junk);
        assert_int_equal(textsafe_cut(junk, sizeof junk, 50), 50);
        assert_int_equal(textsafe_cut("ab\xe2\x82x", 5, 3), 3);          /* invalid: cut anywhere */
}

static void test_json_dumps(void **state)
{
        static const char text[] = "a\x7f" "b\xc2\x9b" "c\xc2\x85" "d\xe2\x80\xae" "e\xe2\x80\xa8" "f\xef\xbf\xbe"
                                   "g\xd8\x9c" "h\xe2\x81\xa6" "\0\x1b" "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80";
        static const size_t flags[] = { JSON_COMPACT, JSON_INDENT(2) | JSON_PRESERVE_ORDER, JSON_COMPACT | JSON_ENSURE_ASCII };
        json_t *v = json_object();
        char *out;

        (void) state;
        assert_int_equal(json_object_set_new(v, "text", json_stringn(text, sizeof text - 1)), 0);
        assert_int_equal(json_object_set_new(v, "k\xe2\x80\xae" "ey\x7f", json_integer(1)), 0);
        assert_int_equal(json_object_set_new(v, "list", json_pack("[s, f, n]", "\xc2\x9f", 1.5)), 0);
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
                json_t *back;
                json_error_t err;

                out = textsafe_json_dumps(v, flags[i]);
                assert_non_null(out);
                assert_safe(out, true);
                if (!(flags[i] & JSON_ENSURE_ASCII)) {
                        assert_non_null(strstr(out, "a\\u007fb\\u009bc\\u0085d\\u202ee\\u2028f\\ufffeg\\u061ch\\u2066"
                                                    "\\u0000\\u001B\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80"));
                        assert_non_null(strstr(out, "\"k\\u202eey\\u007f\""));
                }
                back = json_loads(out, JSON_ALLOW_NUL, &err);
                if (!back)
                        fail_msg("does not parse: %s: %s", err.text, out);
                assert_true(json_equal(back, v));
                json_decref(back);
                free(out);
        }
        /* a C1 alone; and nothing to rewrite: json_dumps' own text */
        out = textsafe_json_dumps(json_object_get(v, "list"), JSON_COMPACT);
        assert_string_equal(out, "[\"\\u009f\",1.5,null]");
        free(out);
        json_decref(v);
        v = json_pack("[s]", "\xc3\xa9 \\ \"");
        out = textsafe_json_dumps(v, JSON_COMPACT);
        assert_string_equal(out, "[\"\xc3\xa9 \\\\ \\\"\"]");
        free(out);
        json_decref(v);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify),
                cmocka_unit_test(test_cut),
                cmocka_unit_test(test_next_invalid),
                cmocka_unit_test(test_every_unsafe_escaped),
                cmocka_unit_test(test_term_one_line),
                cmocka_unit_test(test_term_lines),
                cmocka_unit_test(test_html),
                cmocka_unit_test(test_xml),
                cmocka_unit_test(test_term_append),
                cmocka_unit_test(test_exact_append),
                cmocka_unit_test(test_term_wrap),
                cmocka_unit_test(test_json_dumps),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
