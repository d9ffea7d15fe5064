"""The Debian package, end to end (as root; CI is a fresh Debian 12).

A copy of the source builds the .deb with `DEB_BUILD_OPTIONS=nocheck
dpkg-buildpackage -us -uc -b`; lintian must report no error; the packages
are installed with apt-get, the README's example runs with /usr/bin/nsbox
(as root and as uid 65534), so do nsbox test (the packaged runner) and the
packaged client; /usr/share/doc/nsbox holds README.md and docs/ with no
link to a file it lacks, and examples/, on which every `--help` example
runs as written; then both packages are purged and the machine must be as
before: the same installed packages, no file of nsbox's left.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

from srccopy import copy_source
from test_docs import dangling_links

SOURCE = os.environ["NSBOX_SOURCE"]
VERSION = os.environ["NSBOX_VERSION"]
APT = ["apt-get", "-o", "DPkg::Lock::Timeout=900", "-y", "--no-install-recommends"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# what the packages put on the machine, and what dh_apparmor's and our
# maintainer scripts add (local include, disable link)
WATCHED = ["/usr/bin/nsbox", "/usr/share/nsbox", "/etc/nsbox", "/etc/apparmor.d/nsbox",
           "/etc/apparmor.d/local/nsbox", "/etc/apparmor.d/disable/nsbox",
           "/usr/lib/python3/dist-packages/nsbox_client", "/usr/share/man/man1/nsbox.1.gz",
           "/usr/share/doc/nsbox", "/usr/share/doc/python3-nsbox"]


def run(argv, **kw):
    kw.setdefault("timeout", 900)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def installed_packages():
    out = run(["dpkg-query", "-W", "-f=${Package}:${Architecture} ${Version} ${db:Status-Abbrev}\n"]).stdout
    return sorted(line for line in out.splitlines() if line.split()[-1].startswith("i"))


def state():
    apparmor = sorted(os.listdir("/etc/apparmor.d")) if os.path.isdir("/etc/apparmor.d") else None
    return installed_packages(), {p: os.path.lexists(p) for p in WATCHED}, apparmor


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            if os.environ.get("NSBOX_TESTS_MUST_RUN") == "1":
                raise AssertionError("installing a package needs root (CI runs as root)")
            raise unittest.SkipTest("installing a package needs root (CI runs as root)")
        cls.top = tempfile.mkdtemp(prefix="nsbox-deb.", dir="/var/tmp")
        os.chmod(cls.top, 0o755)
        cls.src = os.path.join(cls.top, "nsbox-" + VERSION)
        copy_source(SOURCE, cls.src)
        env = dict(os.environ, DEB_BUILD_OPTIONS="nocheck parallel=%d" % (os.cpu_count() or 1))
        cls.build = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=cls.src, env=env)
        arch = run(["dpkg", "--print-architecture"]).stdout.strip()
        cls.debs = [os.path.join(cls.top, "nsbox_%s_%s.deb" % (VERSION, arch)),
                    os.path.join(cls.top, "python3-nsbox_%s_all.deb" % VERSION)]
        cls.changes = os.path.join(cls.top, "nsbox_%s_%s.changes" % (VERSION, arch))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.top, ignore_errors=True)

    def test_package(self):
        self.assertEqual(self.build.returncode, 0, self.build.stdout[-6000:])
        for deb in self.debs:
            self.assertTrue(os.path.isfile(deb), deb)

        lint = run(["lintian", "--fail-on", "error", self.changes])
        self.assertEqual(lint.returncode, 0, lint.stdout)
        self.assertEqual([l for l in lint.stdout.splitlines() if l.startswith("E:")], [], lint.stdout)

        files = run(["dpkg-deb", "-c", self.debs[0]]).stdout
        for path in ("./usr/bin/nsbox", "./etc/apparmor.d/nsbox", "./usr/share/nsbox/harness/nsbox_test_runner.py",
                     "./usr/share/nsbox/harness/nsbox_runner/main.py", "./usr/share/man/man1/nsbox.1.gz", "./usr/share/man/man5/nsbox-profile.5.gz",
                     "./usr/share/bash-completion/completions/nsbox",
                     "./usr/share/zsh/vendor-completions/_nsbox", "./etc/nsbox/profiles/",
                     # the README uncompressed with docs/ beside it, and the
                     # examples every --help names
                     "./usr/share/doc/nsbox/README.md", "./usr/share/doc/nsbox/docs/contract.md",
                     "./usr/share/doc/nsbox/docs/install.md", "./usr/share/doc/nsbox/examples/hello.py",
                     "./usr/share/doc/nsbox/examples/judge-spec.json"):
            self.assertIn(" " + path + "\n", files + "\n")
        self.assertIn("/nsbox_client/__init__.py", run(["dpkg-deb", "-c", self.debs[1]]).stdout)
        profile = run(["sh", "-c", 'dpkg-deb --fsys-tarfile "$1" | tar -xO ./etc/apparmor.d/nsbox', "sh",
                       self.debs[0]]).stdout
        self.assertIn("profile nsbox /usr/bin/nsbox flags=(unconfined) {", profile)
        with tempfile.TemporaryDirectory() as ctrl:
            subprocess.run(["dpkg-deb", "-e", self.debs[0], ctrl], check=True)
            with open(os.path.join(ctrl, "postinst")) as f:
                self.assertIn('apparmor_parser -r -T -W "$APP_PROFILE"', f.read())
            with open(os.path.join(ctrl, "postrm")) as f:
                self.assertIn('rm -f "/etc/apparmor.d/local/nsbox"', f.read())

        installed = installed_packages()
        self.assertFalse([p for p in installed if p.split(":")[0] in ("nsbox", "python3-nsbox")],
                         "nsbox is already installed on this machine: not touching it")
        before = state()
        try:
            r = run(APT + ["install"] + self.debs, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
            self.assertEqual(r.returncode, 0, r.stdout)
            self.check_installed()
        finally:
            r = run(APT + ["purge", "nsbox", "python3-nsbox"], env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(state(), before)

    def nsbox(self, *args, user=None):
        argv = (NOBODY if user == "nobody" else []) + ["/usr/bin/nsbox", *args]
        return run(argv, cwd=self.src, timeout=120,
                   env={"PATH": "/usr/bin:/bin", "HOME": "/tmp" if user else os.environ.get("HOME", "/root")})

    def check_installed(self):
        self.assertTrue(os.path.isfile("/etc/apparmor.d/local/nsbox"), "dh_apparmor's postinst made no local include")
        if not os.path.exists("/etc/apparmor.d/abi/4.0"):
            self.assertEqual(os.readlink("/etc/apparmor.d/disable/nsbox"), "../nsbox")
        for user in ("root", "nobody"):
            with self.subTest(user=user):
                # the README's example, with the installed binary
                r = self.nsbox("python", "examples/hello.py", user=user)
                self.assertEqual(r.returncode, 0, r.stdout)
                self.assertTrue(r.stdout.strip(), r.stdout)
                r = self.nsbox("python", "--json", "--memory", "128M", "--wall-time", "2s", "-c",
                               "print(sum(range(10**6)))", user=user)
                self.assertEqual((r.returncode, json.loads(r.stdout)["stdout"]["text"]), (0, "499999500000\n"))
                r = self.nsbox("doctor", "--json", user=user)
                self.assertEqual(json.loads(r.stdout)["warm"], {"available": True, "reason": None}, r.stdout)
                r = self.nsbox("run", "--json", "--", "/bin/echo", "hi", user=user)
                self.assertEqual((r.returncode, json.loads(r.stdout)["stdout"]["text"]), (0, "hi\n"))
                r = self.nsbox("profile", "show", "python", user=user)
                self.assertEqual(r.returncode, 0, r.stdout)
                with open("/usr/share/nsbox/profiles/python.ini") as f:
                    self.assertEqual(r.stdout, f.read())
        # nsbox test with the packaged runner, against the bundled course
        r = self.nsbox("test", "--json", "--harness", "examples/course/harness",
                       "--workspace", "examples/course/workspace")
        self.assertEqual((r.returncode, json.loads(r.stdout)["verdict"]), (0, "pass"), r.stdout)
        r = run(["/usr/bin/python3", "-c", "import nsbox_client, sys\n"
                 "assert nsbox_client.__file__.startswith('/usr/lib/python3/dist-packages/')\n"
                 "print(nsbox_client.run_code('print(1)').status)"],
                cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/root"})
        self.assertEqual((r.returncode, r.stdout), (0, "pass\n"))
        r = run(["man", "-w", "nsbox"], env={"PATH": "/usr/bin:/bin", "MANPATH": "/usr/share/man"})
        self.assertEqual(r.stdout.strip(), "/usr/share/man/man1/nsbox.1.gz")
        self.check_docs_and_examples()

    def check_docs_and_examples(self):
        """/usr/share/doc/nsbox: its Markdown links only to files it holds,
        and every --help example runs there as written, on the packaged
        examples/."""
        doc = "/usr/share/doc/nsbox"
        self.assertEqual(dangling_links(doc), [])
        examples = []
        for cmd in ("run", "python", "judge", "batch", "test", "report", "doctor", "profile", "serve"):
            r = self.nsbox(cmd, "--help")
            examples += re.findall(r"^Example:\n  (.*)$", r.stdout, re.M)
        named = [e for e in examples if "examples/" in e]
        # run in a copy: `nsbox test` writes into its workspace, and the
        # package's folder must be as dpkg left it for the purge check
        copy = os.path.join(self.top, "doc-copy")
        shutil.copytree(os.path.join(doc, "examples"), os.path.join(copy, "examples"))
        self.assertGreaterEqual(len(named), 4, examples)
        for example in named:
            with self.subTest(example=example):
                argv = shlex.split(example.split(" > ")[0])
                for word in argv:
                    if word.startswith("examples/"):
                        self.assertTrue(os.path.exists(os.path.join(doc, word)), word)
                self.assertEqual(argv[0], "nsbox")
                r = run(["/usr/bin/nsbox", *argv[1:]], cwd=copy, timeout=300,
                        env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")})
                self.assertEqual(r.returncode, 0, r.stdout[-3000:])


if __name__ == "__main__":
    unittest.main()
