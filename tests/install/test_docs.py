"""docs/install.md against what it describes:
- its apt-get line of build dependencies is debian/control's Build-Depends
  (debhelper-compat as debhelper, python3:any as python3, versions dropped,
  plus build-essential), the same set: a package added to one and not the
  other fails here (libsystemd-dev was missing from the docs);
- its table of what `meson install` puts where has a row for every file
  the build installs (`meson introspect --installed` of $NSBOX_BUILD: the
  warm library, the zygote, nsbox-serve and the systemd units were missing);
- every file a --help example names is in examples/, which the package
  ships (debian/nsbox.examples);
- the installed docs' links (debian/doclinks.py, run by debian/rules on the
  package's /usr/share/doc/nsbox): on a copy of README.md and docs/, every
  relative link left points to a file that is there."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["NSBOX_SOURCE"]
BUILD = os.environ.get("NSBOX_BUILD")
INSTALL_MD = os.path.join(SOURCE, "docs", "install.md")
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def control_build_depends(text):
    """Build-Depends of debian/control as package names."""
    m = re.search(r"^Build-Depends:(.*?)(?=^\S)", text, re.M | re.S)
    names = set()
    for item in m.group(1).replace("\n", " ").split(","):
        item = item.strip()
        if not item:
            continue
        name = re.split(r"[\s(\[<]", item, 1)[0].split(":")[0]
        names.add("debhelper" if name == "debhelper-compat" else name)
    return names


def docs_build_depends(text):
    """The packages of install.md's `sudo apt-get install` line(s) that
    build the Debian package."""
    section = text[text.index("## The Debian package"):]
    m = re.search(r"sudo apt-get install --no-install-recommends ((?:[^\n]*\\\n)*[^\n]*)", section)
    words = m.group(1).replace("\\\n", " ").split()
    return {w for w in words if not w.startswith("-")}


def table_paths(text):
    """install.md's meson table: each row's install paths as regexes (a
    relative one is beside the row's previous path; 3.X is any minor)."""
    section = text[text.index("What goes where"):text.index("## The Debian package")]
    out = []
    for row in re.findall(r"^\|([^|\n]*)\|([^|\n]*)\|$", section, re.M):
        prev = None
        for path in re.findall(r"`([^`]+)`", row[1]):
            if path.startswith("-D") or path.count("/") < 2 and path.startswith("/"):
                continue   # an option, or a prefix named in passing (`/usr`)
            if not (path.startswith("/") or path.split("/")[0] in ("PREFIX", "DATADIR", "LIBDIR")):
                if prev is None:
                    continue
                path = os.path.join(os.path.dirname(prev.rstrip("/")), path)
            prev = path
            out.append(path)
    return out


class BuildDepends(unittest.TestCase):
    def test_docs_line_is_debian_control(self):
        control = control_build_depends(read(os.path.join(SOURCE, "debian", "control")))
        docs = docs_build_depends(read(INSTALL_MD))
        self.assertIn("libsystemd-dev", control)
        self.assertEqual(sorted(docs - {"build-essential"}), sorted(control),
                         "docs/install.md's apt-get line and debian/control's Build-Depends differ")
        self.assertIn("build-essential", docs)


class FileTable(unittest.TestCase):
    def test_every_installed_file_has_a_row(self):
        if not BUILD or not os.path.exists(os.path.join(BUILD, "meson-info")):
            self.fail("NSBOX_BUILD (a configured build directory) is needed: %r" % BUILD)
        r = subprocess.run(["meson", "introspect", BUILD, "--installed"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        installed = sorted(set(json.loads(r.stdout).values()))
        info = json.loads(read(os.path.join(BUILD, "meson-info", "intro-buildoptions.json")))
        opt = {o["name"]: o["value"] for o in info}
        prefix = opt["prefix"]
        subst = {"DATADIR": os.path.join(prefix, opt["datadir"]), "LIBDIR": os.path.join(prefix, opt["libdir"]),
                 "PREFIX": prefix}
        patterns = []
        for path in table_paths(read(INSTALL_MD)):
            for key, value in subst.items():
                if path.startswith(key + "/"):
                    path = value + path[len(key):]
            patterns.append(re.compile(re.escape(path.rstrip("/")).replace(r"3\.X", r"3\.\d+") + r"(/.*)?$"))
        self.assertGreater(len(installed), 10)
        missing = [p for p in installed if not any(pat.match(p) for pat in patterns)]
        self.assertEqual(missing, [], "installed by meson, without a row in docs/install.md's table")


def dangling_links(top):
    """(file, target) of every relative link under @top's .md files whose
    target is not there."""
    out = []
    for d, _, files in os.walk(top):
        for name in files:
            if not name.endswith(".md"):
                continue
            path = os.path.join(d, name)
            for _, _, target in LINK.findall(read(path)):
                if re.match(r"[a-z]+:", target) or target.startswith("#"):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(d, target.split("#")[0]))):
                    out.append((os.path.relpath(path, top), target))
    return out


class HelpExamples(unittest.TestCase):
    def test_every_help_example_file_exists_and_is_packaged(self):
        """Each `examples/...` a --help example names is in the source's
        examples/, which debian/nsbox.examples ships whole (test_deb.py runs
        the examples on the installed package)."""
        named = set()
        for cmd in ("run", "python", "judge", "batch", "test", "report", "doctor", "profile"):
            r = subprocess.run([os.environ["NSBOX"], cmd, "--help"], capture_output=True, text=True, timeout=60)
            for line in re.findall(r"^Example:\n  (.*)$", r.stdout, re.M):
                named.update(re.findall(r"(examples/[^\s]+)", line))
        self.assertGreaterEqual(len(named), 5, named)
        for path in sorted(named):
            self.assertTrue(os.path.exists(os.path.join(SOURCE, path)), path)
        self.assertEqual(read(os.path.join(SOURCE, "debian", "nsbox.examples")).split(), ["examples/*"])


class PackagedDocLinks(unittest.TestCase):
    def test_doclinks_leaves_no_dangling_link(self):
        with tempfile.TemporaryDirectory() as top:
            shutil.copy(os.path.join(SOURCE, "README.md"), top)
            shutil.copytree(os.path.join(SOURCE, "docs"), os.path.join(top, "docs"))
            shutil.copytree(os.path.join(SOURCE, "examples"), os.path.join(top, "examples"))
            shutil.copy(os.path.join(SOURCE, "debian", "copyright"), top)   # as dh_installdocs does
            before = dangling_links(top)
            self.assertTrue(before, "the source docs link outside README.md and docs/ (else nothing to test)")
            r = subprocess.run([sys.executable, os.path.join(SOURCE, "debian", "doclinks.py"), top],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(dangling_links(top), [])
            readme = read(os.path.join(top, "README.md"))
            self.assertIn("](docs/contract.md)", readme)   # a shipped doc stays a link
            self.assertIn("](copyright)", readme)           # LICENSE: Debian's copyright file


if __name__ == "__main__":
    unittest.main()
