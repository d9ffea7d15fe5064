/* util/textsafe.h — text nsbox did not write (a program's output, an
 * exception message, a test name, a results file, a spec, a host path) shown
 * to a person: the one definition of the characters that must never reach a
 * screen raw, and one encoder per output kind.
 *
 * Unsafe (textsafe_classify):
 *   - C0 U+0000..U+001F and DEL U+007F: ESC starts terminal sequences (erase
 *     a line, move the cursor, set the title), CR returns to column 0 and
 *     lets the next text overwrite the line, BS steps back over it;
 *   - C1 U+0080..U+009F: U+009B is an 8-bit CSI, U+0085 (NEL) a newline, to a
 *     terminal that reads them;
 *   - the bidirectional controls U+061C, U+200E, U+200F, U+202A..U+202E,
 *     U+2066..U+2069: a line that reads in another order than it is written;
 *   - U+2028, U+2029: line and paragraph separators, a line break to some
 *     viewers (a browser, an editor) and not to others;
 *   - U+FFFE, U+FFFF: not characters (not allowed in XML);
 *   - bytes that are not UTF-8 (overlong forms, surrogates, > U+10FFFF, a cut
 *     sequence).
 * Each is shown as a visible escape: `\t` `\n` `\r` for TAB, LF, CR (where
 * the context does not keep them), `\xNN` for any other C0 and DEL, `\uNNNN`
 * for a code point of the other classes (`\u009b`, `\u202e`), and `\xNN`
 * (NN >= 80) for each byte that is not UTF-8. The backslash itself is not
 * escaped: the escapes mark what was unsafe, they are not a reversible
 * encoding (the JSON outputs carry the exact text), and an encoder applied
 * twice changes nothing. Quotes are not escaped for a terminal.
 *
 * Encoders: terminal (one line, or several lines with LF and TAB kept and a
 * prefix on each line), HTML, XML 1.0 (text or attribute), JSON. A JSON
 * string carries the exact text (textsafe_exact_append only makes a C string
 * of it: valid UTF-8, no NUL); jansson escapes C0 but writes DEL, C1, the
 * bidi controls, U+2028/9 and U+FFFE/F raw, so every JSON document nsbox
 * writes goes through textsafe_json_dumps/_dumpf, which write those as
 * \uXXXX: the same JSON text, and safe on a terminal. A CR is kept only
 * before a LF (a CRLF line end, which overwrites nothing) in the multi-line
 * kinds.
 *
 * Terminal wrapping. A terminal wraps a row longer than its width, and the
 * next screen row then starts at column 0 with whatever text follows: outside
 * text padded to the width could put a line of its own ("== 1 passed ==") at
 * the start of a row. The terminal encoders that take a continuation prefix
 * (textsafe_term_wrap, textsafe_term_lines) hard-wrap the text themselves
 * before a row would pass TEXTSAFE_ROW_COLS columns, and start every row they
 * begin with the caller's prefix. A column count is an upper bound: an ASCII
 * byte (an escape is ASCII) is 1 column and any other code point 2 (no code
 * point takes more on a terminal; a combining or zero-width one takes less,
 * which only wraps earlier). On a terminal narrower than TEXTSAFE_ROW_COLS
 * the terminal still wraps rows itself (docs/security.md).
 *
 * Pure: allocates (open_memstream, the JSON texts), writes only to the streams given.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* The widest screen row (prefix included) the wrapping encoders write: under
 * 80, the narrowest common terminal. */
#define TEXTSAFE_ROW_COLS 76

enum textsafe_class {
        TEXTSAFE_PLAIN = 0,   /* shown as it is */
        TEXTSAFE_TAB,         /* U+0009 */
        TEXTSAFE_LF,          /* U+000A */
        TEXTSAFE_CR,          /* U+000D */
        TEXTSAFE_C0,          /* any other U+0000..U+001F */
        TEXTSAFE_DEL,         /* U+007F */
        TEXTSAFE_C1,          /* U+0080..U+009F */
        TEXTSAFE_BIDI,        /* U+061C, U+200E/F, U+202A..E, U+2066..9 */
        TEXTSAFE_LINESEP,     /* U+2028, U+2029 */
        TEXTSAFE_NONCHAR,     /* U+FFFE, U+FFFF */
        TEXTSAFE_INVALID,     /* a byte that is not UTF-8 (textsafe_next only) */
};

/* The class of one code point (@cp <= U+10FFFF, not a surrogate). */
enum textsafe_class textsafe_classify(uint32_t cp);

/* The unit at @s (@len > 0 bytes left): its length in bytes (1..4), code
 * point and class. A byte that does not start a valid UTF-8 sequence
 * (overlong, surrogate, above U+10FFFF, cut short, a stray continuation) is
 * one unit of class TEXTSAFE_INVALID, *ret_cp its byte value. */
size_t textsafe_next(const char *s, size_t len, uint32_t *ret_cp, enum textsafe_class *ret_class);

/* How many of @s's @len bytes to show when at most @max may be: @max, or
 * less so as not to end inside a valid UTF-8 character (it backs up over at
 * most 3 continuation bytes: a stream of stray continuation bytes, which
 * are shown one escape each, is still shown up to the bound). */
size_t textsafe_cut(const char *s, size_t len, size_t max);

enum textsafe_lines {
        TEXTSAFE_ONE_LINE = 0,  /* TAB, LF, CR shown as \t \n \r: one line stays one line */
        TEXTSAFE_MULTI_LINE,    /* TAB and LF kept, CR only before LF */
};

/* Terminal text. 0, or -EIO on a write error. */
int textsafe_term(FILE *out, const char *s, size_t len, enum textsafe_lines lines);

/* The columns @s (@len bytes) takes at most on a terminal: 1 an ASCII byte,
 * 2 any other unit (for nsbox's own prefixes and marks). */
size_t textsafe_cols(const char *s, size_t len);

/* Terminal text, one line, wrapped: written from screen column *@col (what
 * the caller already wrote on the row, textsafe_cols); before a unit would
 * take the row past TEXTSAFE_ROW_COLS, a newline and @cont (nsbox's
 * continuation mark, at most 16 columns) start the next row. *@col is the
 * column after the text. No newline at the end. 0, or -EIO. */
int textsafe_term_wrap(FILE *out, const char *s, size_t len, const char *cont, size_t *col);

/* Several lines, each written after @prefix (so that no line the text
 * contains can pass for one of nsbox's own), wrapped as textsafe_term_wrap
 * with @cont on each continuation row (so that no screen row starts with the
 * text either), ending with a newline. */
int textsafe_term_lines(FILE *out, const char *s, size_t len, const char *prefix, const char *cont);

/* Terminal text, one line, appended to the C string in @buf (@size bytes in
 * all): at most @max bytes of @s are read; "..." marks a cut, never inside a
 * character or an escape. For messages built in fixed buffers. */
void textsafe_term_append(char *buf, size_t size, const char *s, size_t len, size_t max);

/* HTML element content or a quoted attribute value: & < > " ' as
 * references, TAB and LF kept, the unsafe set shown visibly. */
int textsafe_html(FILE *out, const char *s, size_t len);

/* XML 1.0 character data (@attr false) or a quoted attribute value (@attr
 * true: TAB, LF, CR as references, which a parser would otherwise turn into
 * spaces). C0 other than TAB/LF/CR may not appear even as a reference: it is
 * shown visibly, like the rest of the unsafe set, so the file always parses. */
int textsafe_xml(FILE *out, const char *s, size_t len, bool attr);

/* The exact text for JSON, as a C string: at most @max bytes of @s appended
 * to @buf, valid UTF-8 (a byte that is not, and NUL, become U+FFFD), cut on a
 * character boundary with "..." after a cut. Nothing is escaped: the
 * renderers do that, each for its output. */
void textsafe_exact_append(char *buf, size_t size, const char *s, size_t len, size_t max);

/* json_dumps(@j, @flags), then each DEL, C1, bidi control, U+2028/9 and
 * U+FFFE/F in it written as \uXXXX: the same JSON value, no byte of it
 * unsafe on a terminal. malloc'd; NULL on error (as json_dumps). */
char *textsafe_json_dumps(const json_t *j, size_t flags);

/* The same to @out (as json_dumpf: 0, or -1 on an error). */
int textsafe_json_dumpf(const json_t *j, FILE *out, size_t flags);
