"""Human summary (reference rendering; the nsbox binary prints its own)."""

from .base import OUTCOMES, _seconds


_MARKS = {"passed": "PASS ", "failed": "FAIL ", "error": "ERROR", "skipped": "SKIP "}


def render_summary(results, collect_errors, seconds):
    lines = []
    for event in results:
        lines.append("%s %s" % (_MARKS[event["outcome"]], event["name"]))
    bad = [e for e in results if e["outcome"] in ("failed", "error")]
    if bad or collect_errors:
        lines.append("")
        lines.append("---- failures ----")
        for error in collect_errors:
            lines.append("HARNESS %s - %s" % (error["file"], error["message"]))
        for event in bad:
            lines.append("%s %s" % (_MARKS[event["outcome"]].strip(), event["name"]))
            for text in (event["message"] or "").splitlines():
                lines.append("    " + text)
    counts = [(sum(1 for e in results if e["outcome"] == o), o) for o in OUTCOMES]
    summary = ", ".join("%d %s" % (n, o) for n, o in counts if n) or "no tests"
    lines.append("")
    lines.append("== %s in %s ==" % (summary, _seconds(seconds)))
    return "\n".join(lines) + "\n"
