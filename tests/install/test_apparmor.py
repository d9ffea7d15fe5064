"""The AppArmor profile (dist/apparmor/nsbox.in, configured into the build).

Debian 12's apparmor_parser (3.0) knows neither the 4.0 abi nor the userns
rule, so those two lines are checked for exactly the form Ubuntu's own
profiles for bwrap and the browsers use (`abi <abi/4.0>,` and `  userns,` in a
`profile NAME PATH flags=(unconfined)` block), and the rest of the profile,
without them, is parsed by apparmor_parser -Q -K (no kernel, no cache needed).
Also: the profile attaches to the configured bindir's nsbox and grants
nothing else, and -Dapparmor=disabled leaves it out of meson install.
"""
import json
import os
import re
import subprocess
import tempfile
import unittest

PROFILE = os.environ["NSBOX_APPARMOR_PROFILE"]
BINDIR = os.environ["NSBOX_BINDIR"]
SOURCE = os.environ["NSBOX_SOURCE"]
BUILD = os.environ["NSBOX_BUILD"]
PARSER = "/sbin/apparmor_parser"


def rules(text):
    """The profile's lines without comments and blank lines."""
    return [line for line in (re.sub(r"#.*", "", raw).rstrip() for raw in text.split("\n")) if line.strip()]


def parse(text):
    with tempfile.NamedTemporaryFile("w", suffix=".nsbox", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        return subprocess.run([PARSER, "-Q", "-K", f.name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)


def without_4_0_lines(text):
    return "\n".join(line for line in text.split("\n") if line not in ("abi <abi/4.0>,", "  userns,"))


class Profile(unittest.TestCase):
    def setUp(self):
        with open(PROFILE, encoding="utf-8") as f:
            self.text = f.read()

    def test_shape_is_ubuntus(self):
        self.assertEqual(rules(self.text), [
            "abi <abi/4.0>,",
            "include <tunables/global>",
            "profile nsbox %s/nsbox flags=(unconfined) {" % BINDIR,
            "  userns,",
            "  include if exists <local/nsbox>",
            "}",
        ])

    def test_names_the_configured_binary(self):
        self.assertTrue(BINDIR.startswith("/"))
        self.assertRegex(self.text, r"\nprofile nsbox %s/nsbox " % re.escape(BINDIR))

    def test_rest_parses_with_apparmor_parser(self):
        if not os.access(PARSER, os.X_OK):
            if os.environ.get("NSBOX_TESTS_MUST_RUN") == "1":
                self.fail("apparmor_parser is missing (package apparmor; scripts/deps installs it)")
            self.skipTest("apparmor_parser is missing (package apparmor)")
        stripped = without_4_0_lines(self.text)
        self.assertEqual(len(stripped.split("\n")), len(self.text.split("\n")) - 2)
        r = parse(stripped)
        self.assertEqual(r.returncode, 0, r.stderr)
        version = subprocess.run([PARSER, "--version"], stdout=subprocess.PIPE, text=True).stdout
        if not re.search(r"version [0-3]\.", version):
            # a parser that knows AppArmor 4 reads the whole profile
            r = parse(self.text)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_parser_rejects_a_broken_profile(self):
        """The parse above is a real check: a bad flag is refused."""
        if not os.access(PARSER, os.X_OK):
            self.skipTest("apparmor_parser is missing")
        r = parse(without_4_0_lines(self.text).replace("flags=(unconfined)", "flags=(unconfinedx)"))
        self.assertNotEqual(r.returncode, 0)


class MesonOption(unittest.TestCase):
    def installed(self, build):
        out = subprocess.run(["meson", "introspect", "--installed", build], stdout=subprocess.PIPE, check=True,
                             text=True).stdout
        return set(json.loads(out).values())

    def test_installed_by_default_and_left_out_when_disabled(self):
        self.assertIn("/etc/apparmor.d/nsbox", self.installed(BUILD))
        with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
            subprocess.run(["meson", "setup", d, SOURCE, "-Dtests=false", "-Dapparmor=disabled"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)
            installed = self.installed(d)
        self.assertNotIn("/etc/apparmor.d/nsbox", installed)
        self.assertIn("/usr/local/bin/nsbox", installed)


if __name__ == "__main__":
    unittest.main()
