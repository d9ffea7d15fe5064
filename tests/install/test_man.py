"""The man pages against the tables they document, and their rendering.

Every option of config/cli_parse.c's option table must appear in nsbox(1),
every command too, and every key of the profile key table in
nsbox-profile(5), read from the tables themselves (dist/tables.c prints
them; TABLES is its output). Each page must render with `man -l` and with
groff's warnings on without a single warning.
"""
import os
import re
import subprocess
import tempfile
import unittest

TABLES = os.environ["NSBOX_TABLES"]
MANDIR = os.environ["NSBOX_MANDIR"]
PAGES = ["nsbox.1", "nsbox-profile.5", "nsbox-judge.5", "nsbox-batch.5"]


def tables():
    with open(TABLES, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    return ([r[1] for r in rows if r[0] == "command"],
            [(r[1], r[2]) for r in rows if r[0] == "option"],
            [(r[1], r[2]) for r in rows if r[0] == "key"])


def render(page, mandir=MANDIR):
    """The page as plain ASCII text, one paragraph per line (very wide lines,
    no hyphenation), so a name is never split across lines."""
    out = subprocess.run(["groff", "-man", "-Tascii", "-rLL=2000n", "-P-cbou", os.path.join(mandir, page)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True, text=True)
    return out.stdout


def undocumented(text, options):
    """The options of the table that do not appear in rendered @text."""
    return [o for o, _ in options if not re.search(r"(?<![\w-])--%s(?![\w-])" % re.escape(o), text)]


class ManPages(unittest.TestCase):
    def test_tables_are_read(self):
        commands, options, keys = tables()
        # the table dump is what the other checks rely on: not empty, and
        # holding rows every build has
        self.assertIn("run", commands)
        self.assertIn("wall-time", [o for o, _ in options])
        self.assertIn(("limits", "memory"), keys)

    def test_every_option_and_command_in_nsbox_1(self):
        commands, options, _ = tables()
        text = render("nsbox.1")
        self.assertEqual(undocumented(text, options), [], "options of the option table missing from nsbox(1)")
        section = text[re.search(r"(?m)^COMMANDS$", text).end():re.search(r"(?m)^OPTIONS$", text).start()]
        missing = [c for c in commands if not re.search(r"^ {7}%s\b" % re.escape(c), section, re.M)]
        self.assertEqual(missing, [], "commands missing from nsbox(1)'s COMMANDS")
        for head in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES",
                     "EXAMPLES", "SEE ALSO"):
            self.assertRegex(text, r"(?m)^%s$" % head)

    def test_every_option_has_an_entry_with_its_value(self):
        """Not just mentioned somewhere: each option heads an entry, with its
        value's name when it takes one."""
        _, options, _ = tables()
        text = render("nsbox.1")
        for name, metavar in options:
            head = r"(?m)^ {7}(?:.*, )?--%s" % re.escape(name)
            if metavar != "-":
                head += r"[ =]"
            with self.subTest(option=name):
                self.assertRegex(text, head)

    def test_every_profile_key_in_nsbox_profile_5(self):
        _, _, keys = tables()
        text = render("nsbox-profile.5")
        for section, key in keys:
            with self.subTest(key=key):
                self.assertRegex(text, r"(?m)^ +\[%s\]$" % section)
                part = text[text.index("[%s]" % section):]
                self.assertRegex(part, r"(?m)^ {7}%s(?: |$)" % re.escape(key))
        for head in ("SEARCH PATH", "PRECEDENCE"):
            self.assertRegex(text, r"(?m)^%s$" % head)

    def test_pages_render_without_warnings(self):
        for page in PAGES:
            path = os.path.join(MANDIR, page)
            with self.subTest(page=page):
                r = subprocess.run(["groff", "-ww", "-man", "-z", path], stderr=subprocess.PIPE, text=True)
                self.assertEqual((r.returncode, r.stderr), (0, ""))
                r = subprocess.run(["man", "--warnings", "-l", path], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True,
                                   env=dict(os.environ, MANWIDTH="80", MAN_KEEP_FORMATTING="", PAGER="cat"))
                self.assertEqual((r.returncode, r.stderr), (0, ""))
                self.assertGreater(len(r.stdout), 500)

    def test_pages_carry_the_project_version(self):
        """.TH names the version meson.build gives, so a release cannot ship
        pages of an older one."""
        for page in PAGES:
            with open(os.path.join(MANDIR, page), encoding="utf-8") as f:
                th = [line for line in f if line.startswith(".TH ")]
            self.assertEqual(len(th), 1, page)
            self.assertIn('"nsbox %s"' % os.environ["NSBOX_VERSION"], th[0], page)

    def test_the_check_catches_an_undocumented_option(self):
        """The check itself: nsbox(1) with --shard's entry renamed lacks --shard."""
        _, options, _ = tables()
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(MANDIR, "nsbox.1"), encoding="utf-8") as f:
                src = f.read()
            changed = src.replace("\\-\\-shard", "\\-\\-shrd")
            self.assertNotEqual(changed, src)
            with open(os.path.join(d, "nsbox.1"), "w", encoding="utf-8") as f:
                f.write(changed)
            self.assertEqual(undocumented(render("nsbox.1", d), options), ["shard"])


if __name__ == "__main__":
    unittest.main()
