/* util/textsafe.c — the unsafe characters and the encoders of
 * util/textsafe.h. Pure.
 */
#include "util/textsafe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum textsafe_class textsafe_classify(uint32_t cp)
{
        if (cp == '\t')
                return TEXTSAFE_TAB;
        if (cp == '\n')
                return TEXTSAFE_LF;
        if (cp == '\r')
                return TEXTSAFE_CR;
        if (cp < 0x20)
                return TEXTSAFE_C0;
        if (cp == 0x7f)
                return TEXTSAFE_DEL;
        if (cp >= 0x80 && cp <= 0x9f)
                return TEXTSAFE_C1;
        if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
            (cp >= 0x2066 && cp <= 0x2069))
                return TEXTSAFE_BIDI;
        if (cp == 0x2028 || cp == 0x2029)
                return TEXTSAFE_LINESEP;
        if (cp == 0xfffe || cp == 0xffff)
                return TEXTSAFE_NONCHAR;
        return TEXTSAFE_PLAIN;
}

size_t textsafe_next(const char *s, size_t len, uint32_t *ret_cp, enum textsafe_class *ret_class)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t n;
        uint32_t cp, min;

        if (p[0] < 0x80)
                n = 1, cp = p[0], min = 0;
        else if (p[0] >= 0xc0 && p[0] < 0xe0)
                n = 2, cp = p[0] & 0x1fu, min = 0x80;
        else if (p[0] >= 0xe0 && p[0] < 0xf0)
                n = 3, cp = p[0] & 0x0fu, min = 0x800;
        else if (p[0] >= 0xf0 && p[0] < 0xf8)
                n = 4, cp = p[0] & 0x07u, min = 0x10000;
        else
                goto invalid;
        if (n > len)
                goto invalid;
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        goto invalid;
                cp = (cp << 6) | (p[i] & 0x3fu);
        }
        /* overlong (C0 80 for NUL, E0 80 AF for '/'), surrogates, beyond Unicode */
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                goto invalid;
        *ret_cp = cp;
        *ret_class = textsafe_classify(cp);
        return n;
invalid:
        *ret_cp = p[0];
        *ret_class = TEXTSAFE_INVALID;
        return 1;
}

size_t textsafe_cut(const char *s, size_t len, size_t max)
{
        size_t lead = max;
        uint32_t cp;
        enum textsafe_class c;

        if (len <= max)
                return len;
        /* the unit that holds byte @max starts at most 3 bytes before it */
        while (lead > 0 && max - lead < 3 && ((unsigned char) s[lead] & 0xc0) == 0x80)
                lead--;
        if (lead < max && lead + textsafe_next(s + lead, len - lead, &cp, &c) > max)
                return lead;    /* a valid character across the bound: not split */
        return max;
}

/* The visible escape of one unit into @buf (at least 8 bytes): its length. */
static size_t visible(uint32_t cp, enum textsafe_class c, char *buf)
{
        switch (c) {
        case TEXTSAFE_TAB:
                return (size_t) snprintf(buf, 8, "\\t");
        case TEXTSAFE_LF:
                return (size_t) snprintf(buf, 8, "\\n");
        case TEXTSAFE_CR:
                return (size_t) snprintf(buf, 8, "\\r");
        case TEXTSAFE_C0:
        case TEXTSAFE_DEL:
        case TEXTSAFE_INVALID:
                return (size_t) snprintf(buf, 8, "\\x%02x", (unsigned) cp);
        default:
                return (size_t) snprintf(buf, 8, "\\u%04x", (unsigned) cp);
        }
}

/* Is the unit at @s kept as it is in a multi-line text? TAB, LF, and a CR
 * that a LF follows. */
static bool kept_in_lines(enum textsafe_class c, const char *s, size_t left)
{
        return c == TEXTSAFE_PLAIN || c == TEXTSAFE_TAB || c == TEXTSAFE_LF ||
               (c == TEXTSAFE_CR && left > 1 && s[1] == '\n');
}

int textsafe_term(FILE *out, const char *s, size_t len, enum textsafe_lines lines)
{
        for (size_t i = 0; i < len;) {
                enum textsafe_class c;
                uint32_t cp;
                size_t n = textsafe_next(s + i, len - i, &cp, &c);
                char esc[8];

                if (c == TEXTSAFE_PLAIN || (lines == TEXTSAFE_MULTI_LINE && kept_in_lines(c, s + i, len - i)))
                        fwrite(s + i, 1, n, out);
                else
                        fwrite(esc, 1, visible(cp, c, esc), out);
                i += n;
        }
        return ferror(out) ? -EIO : 0;
}

size_t textsafe_cols(const char *s, size_t len)
{
        size_t cols = 0;

        for (size_t i = 0; i < len;) {
                enum textsafe_class c;
                uint32_t cp;

                i += textsafe_next(s + i, len - i, &cp, &c);
                cols += cp < 0x80 && c != TEXTSAFE_INVALID ? 1 : 2;
        }
        return cols;
}

int textsafe_term_wrap(FILE *out, const char *s, size_t len, const char *cont, size_t *col)
{
        for (size_t i = 0; i < len;) {
                enum textsafe_class c;
                uint32_t cp;
                size_t n = textsafe_next(s + i, len - i, &cp, &c);
                char esc[8];
                const char *unit = esc;
                size_t bytes, w;

                if (c == TEXTSAFE_PLAIN) {
                        unit = s + i, bytes = n;
                        w = cp < 0x80 ? 1 : 2;  /* no code point takes more */
                } else {
                        bytes = w = visible(cp, c, esc);        /* ASCII */
                }
                /* Wrap before the terminal would: its next row would start at
                 * column 0 with this text, which could pass for nsbox's. */
                if (*col + w > TEXTSAFE_ROW_COLS && *col > 0) {
                        fputc('\n', out);
                        fputs(cont, out);
                        *col = textsafe_cols(cont, strlen(cont));
                }
                fwrite(unit, 1, bytes, out);
                *col += w;
                i += n;
        }
        return ferror(out) ? -EIO : 0;
}

int textsafe_term_lines(FILE *out, const char *s, size_t len, const char *prefix, const char *cont)
{
        size_t i = 0, prefix_cols = textsafe_cols(prefix, strlen(prefix));

        while (i < len) {
                const char *nl = memchr(s + i, '\n', len - i);
                size_t n = nl ? (size_t) (nl - (s + i)) : len - i, col = prefix_cols;

                fputs(prefix, out);
                /* one line at a time: a CR ending it (CRLF) is kept, as it
                 * overwrites nothing */
                if (n > 0 && s[i + n - 1] == '\r' && nl) {
                        textsafe_term_wrap(out, s + i, n - 1, cont, &col);
                        fputc('\r', out);
                } else {
                        textsafe_term_wrap(out, s + i, n, cont, &col);
                }
                fputc('\n', out);
                i += n + (nl ? 1 : 0);
        }
        return ferror(out) ? -EIO : 0;
}

/* Append @n bytes to the string in @buf when they and room for "..." fit. */
static bool append_unit(char *buf, size_t size, size_t *used, const char *unit, size_t n)
{
        if (*used + n + 4 > size)
                return false;
        memcpy(buf + *used, unit, n);
        *used += n;
        buf[*used] = '\0';
        return true;
}

static void append_cut(char *buf, size_t size, size_t *used)
{
        if (*used + 4 <= size) {
                memcpy(buf + *used, "...", 4);
                *used += 3;
        }
}

/* The one loop of the two appenders: each unit of @s within @max bytes is
 * appended as @exact says (exact: the bytes, with NUL and what is not UTF-8
 * as U+FFFD; else the terminal's visible escapes), then "..." where it
 * stops short. */
static void append_text(char *buf, size_t size, const char *s, size_t len, size_t max, bool exact)
{
        size_t used;

        if (size == 0 || (used = strnlen(buf, size)) >= size)
                return;
        for (size_t i = 0; i < len;) {
                enum textsafe_class c;
                uint32_t cp;
                size_t n = textsafe_next(s + i, len - i, &cp, &c);
                char esc[8];
                bool fits = i + n <= max;

                if (fits && exact && (c == TEXTSAFE_INVALID || cp == 0))
                        fits = append_unit(buf, size, &used, "\xef\xbf\xbd", 3);   /* U+FFFD */
                else if (fits && !exact && c != TEXTSAFE_PLAIN)
                        fits = append_unit(buf, size, &used, esc, visible(cp, c, esc));
                else if (fits)
                        fits = append_unit(buf, size, &used, s + i, n);
                if (!fits) {
                        append_cut(buf, size, &used);
                        return;
                }
                i += n;
        }
}

void textsafe_term_append(char *buf, size_t size, const char *s, size_t len, size_t max)
{
        append_text(buf, size, s, len, max, false);
}

void textsafe_exact_append(char *buf, size_t size, const char *s, size_t len, size_t max)
{
        append_text(buf, size, s, len, max, true);
}

/* The entity HTML (@xml false) or XML writes for one of the five markup
 * characters, or NULL: the one table both encoders share. */
static const char *markup_entity(uint32_t cp, bool xml)
{
        switch (cp) {
        case '&':
                return "&amp;";
        case '<':
                return "&lt;";
        case '>':
                return "&gt;";
        case '"':
                return "&quot;";
        case '\'':
                return xml ? "&apos;" : "&#39;";
        default:
                return NULL;
        }
}

int textsafe_html(FILE *out, const char *s, size_t len)
{
        for (size_t i = 0; i < len;) {
                enum textsafe_class c;
                uint32_t cp;
                size_t n = textsafe_next(s + i, len - i, &cp, &c);
                const char *ent;
                char esc[8];

                if (c != TEXTSAFE_PLAIN && !kept_in_lines(c, s + i, len - i))
                        fwrite(esc, 1, visible(cp, c, esc), out);
                else if ((ent = markup_entity(cp, false)))
                        fputs(ent, out);
                else
                        fwrite(s + i, 1, n, out);
                i += n;
        }
        return ferror(out) ? -EIO : 0;
}

int textsafe_xml(FILE *out, const char *s, size_t len, bool attr)
{
        for (size_t i = 0; i < len;) {
                enum textsafe_class c;
                uint32_t cp;
                size_t n = textsafe_next(s + i, len - i, &cp, &c);
                const char *ent;
                char esc[8];

                if (c != TEXTSAFE_PLAIN && !kept_in_lines(c, s + i, len - i))
                        fwrite(esc, 1, visible(cp, c, esc), out);
                else if (cp == '\r')
                        fputs("&#13;", out);    /* a bare CR would read back as LF */
                else if (cp == '\n')
                        fputs(attr ? "&#10;" : "\n", out);
                else if (cp == '\t')
                        fputs(attr ? "&#9;" : "\t", out);
                else if ((ent = markup_entity(cp, true)))
                        fputs(ent, out);
                else
                        fwrite(s + i, 1, n, out);
                i += n;
        }
        return ferror(out) ? -EIO : 0;
}

/* The \uXXXX for the unit at @p in a JSON text, or 0 when it is kept. */
static size_t json_escape(const char *p, size_t left, size_t *ret_n, char esc[8])
{
        enum textsafe_class c;
        uint32_t cp;

        *ret_n = textsafe_next(p, left, &cp, &c);
        if (c != TEXTSAFE_DEL && c != TEXTSAFE_C1 && c != TEXTSAFE_BIDI && c != TEXTSAFE_LINESEP &&
            c != TEXTSAFE_NONCHAR)
                return 0;
        return (size_t) snprintf(esc, 8, "\\u%04x", (unsigned) cp);     /* all in the BMP */
}

/* Why a rewrite of the bytes is sound: outside its strings, a JSON text
 * jansson writes is ASCII structure, numbers, literals and whitespace, none of
 * it DEL; so every DEL and every non-ASCII byte of the text is inside a
 * string (a key or a value), where \uXXXX is the same character. jansson
 * writes C0, quote and backslash escaped already; C0 is not rewritten here. */
char *textsafe_json_dumps(const json_t *j, size_t flags)
{
        char *text = json_dumps(j, flags), *out, esc[8];
        size_t len, grow = 0, o = 0, n;

        if (!text)
                return NULL;
        len = strlen(text);
        for (size_t i = 0; i < len; i += n) {
                size_t e = json_escape(text + i, len - i, &n, esc);

                grow += e ? e - n : 0;
        }
        if (grow == 0)
                return text;
        out = malloc(len + grow + 1);
        for (size_t i = 0; out && i < len; i += n) {
                size_t e = json_escape(text + i, len - i, &n, esc);

                memcpy(out + o, e ? esc : text + i, e ? e : n);
                o += e ? e : n;
        }
        if (out)
                out[o] = '\0';
        free(text);
        return out;
}

int textsafe_json_dumpf(const json_t *j, FILE *out, size_t flags)
{
        char *text = textsafe_json_dumps(j, flags);
        int r = 0;

        if (!text)
                return -1;
        if (fputs(text, out) == EOF)
                r = -1;
        free(text);
        return r;
}
