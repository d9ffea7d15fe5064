"""Human summary (reference rendering; the nsbox binary prints its own).

nsbox never shows this text: it reads the channel (exact JSON) and renders
with util/textsafe.h, the one definition of the characters that must not
reach a person's screen raw. This summary is for a course author running the
runner by hand, and it shows the same characters the same way: ``_shown``
below is that definition's Python twin (tests/integration/test_text_safety.py
checks the two agree on every code point through ``nsbox report``).
"""

from .base import OUTCOMES, _seconds


_MARKS = {"passed": "PASS ", "failed": "FAIL ", "error": "ERROR", "skipped": "SKIP "}

# util/textsafe.c, textsafe_classify: C0, DEL, C1, the bidi controls, the line
# separators and the two non-characters.
_BIDI = {0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}


def _unsafe(cp):
    return cp < 0x20 or 0x7F <= cp <= 0x9F or cp in _BIDI or cp in (0x2028, 0x2029, 0xFFFE, 0xFFFF)


def _shown(text):
    """One line: every unsafe character as \\t \\n \\r \\xNN or \\uNNNN."""
    out = []
    for ch in text:
        cp = ord(ch)
        if not _unsafe(cp):
            out.append(ch)
        elif ch in "\t\n\r":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[ch])
        elif cp < 0x80:
            out.append("\\x%02x" % cp)
        else:
            out.append("\\u%04x" % cp)
    return "".join(out)


# util/textsafe.h, "Terminal wrapping": a row is wrapped before 76 columns
# (ASCII 1, any other code point 2, an upper bound) and goes on after the
# continuation mark, so that a line padded to the terminal's width cannot
# start a screen row with its own text.
_ROW_COLS = 76
_CONT = "  \u21aa "


def _wrapped(line):
    """The screen rows of one line already shown (_shown after a lead)."""
    rows, row, col = [], "", 0
    for ch in line:
        w = 1 if ord(ch) < 0x80 else 2
        if col + w > _ROW_COLS and col > 0:
            rows.append(row)
            row, col = _CONT, 5
        row += ch
        col += w
    rows.append(row)
    return rows


def render_summary(results, collect_errors, seconds):
    lines = []
    for event in results:
        lines.append("%s %s" % (_MARKS[event["outcome"]], _shown(event["name"])))
    bad = [e for e in results if e["outcome"] in ("failed", "error")]
    if bad or collect_errors:
        lines.append("")
        lines.append("---- failures ----")
        for error in collect_errors:
            lines.append("HARNESS %s - %s" % (_shown(error["file"] or ""), _shown(error["message"] or "")))
        for event in bad:
            lines.append("%s %s" % (_MARKS[event["outcome"]].strip(), _shown(event["name"])))
            # split on LF only: str.splitlines() would also break at U+0085,
            # U+2028 and the like, which are shown instead
            for text in (event["message"] or "").split("\n"):
                lines.append("    " + _shown(text))
    counts = [(sum(1 for e in results if e["outcome"] == o), o) for o in OUTCOMES]
    summary = ", ".join("%d %s" % (n, o) for n, o in counts if n) or "no tests"
    lines.append("")
    lines.append("== %s in %s ==" % (summary, _seconds(seconds)))
    return "\n".join(row for line in lines for row in _wrapped(line)) + "\n"
