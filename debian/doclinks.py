#!/usr/bin/python3
"""The links of the docs the nsbox package ships, made to point only at
what it ships (debian/rules runs it on debian/nsbox/usr/share/doc/nsbox).

README.md and docs/*.md link to one another, which the package ships as
they are (README.md, docs/), and to files of the source tree it does not
ship (harness/README.md, bench/, the client's README, ...). Each link whose
target is not in the installed folder becomes its text, with the path it
named in the source tree after it; LICENSE becomes Debian's `copyright`.
tests/install/test_docs.py and test_deb.py check that no link dangles."""
import os
import re
import sys

LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
RENAMED = {"LICENSE": "copyright"}   # a source file -> the package's file in its place


def fix(path, top):
    here = os.path.dirname(path)

    def one(m):
        bang, text, target = m.groups()
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        file, _, anchor = target.partition("#")
        if os.path.exists(os.path.normpath(os.path.join(here, file))):
            return m.group(0)
        source_path = os.path.normpath(os.path.relpath(os.path.join(here, file), top))
        if source_path in RENAMED:
            return "%s[%s](%s)" % (bang, text, os.path.relpath(os.path.join(top, RENAMED[source_path]), here))
        if source_path in text:
            return text
        return "%s (nsbox's source: `%s`)" % (text, source_path)

    with open(path, encoding="utf-8") as f:
        text = f.read()
    fixed = LINK.sub(one, text)
    if fixed != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(fixed)


def main(top):
    for d, _, files in os.walk(top):
        for name in sorted(files):
            if name.endswith(".md"):
                fix(os.path.join(d, name), top)


if __name__ == "__main__":
    main(sys.argv[1])
