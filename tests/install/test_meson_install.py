"""meson install, then the installed tree alone.

A copy of the source is configured with its own prefix (PREFIX, under a
temporary directory), built, and installed with `meson install --destdir D`.
The test checks every file in D, moves D's tree to PREFIX (as a package
manager would), deletes the copied source and build trees, and runs every
command — run, python, judge, test, batch, doctor, profile show — and the
Python client from the installed files only: the runner of `nsbox test` must
come from PREFIX/share/nsbox/harness, named profiles from the configured
system directory. When run as root, the commands run again as uid 65534.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from srccopy import copy_source

SOURCE = os.environ["NSBOX_SOURCE"]
CLIENT_PKG = os.path.join(SOURCE, "client", "python", "nsbox_client")
RUNNER_PKG = os.path.join(SOURCE, "harness", "nsbox_runner")
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def sh(*argv, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(argv), r.returncode, r.stdout[-4000:]))
    return r.stdout


class InstalledTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # not under /tmp: every sandbox gets its own /tmp, so a command there
        # could not be mounted into it
        cls.top = tempfile.mkdtemp(prefix="nsbox-install.", dir="/var/tmp")
        os.chmod(cls.top, 0o755)
        cls.prefix = os.path.join(cls.top, "usr")
        cls.sysprofiles = os.path.join(cls.prefix, "etc", "nsbox", "profiles")
        src, build, dest = (os.path.join(cls.top, n) for n in ("src", "build", "dest"))
        try:
            copy_source(SOURCE, src)
            sh("meson", "setup", build, src, "--prefix=" + cls.prefix, "-Dtests=false",
               "-Dsystem_profile_dir=" + cls.sysprofiles)
            sh("ninja", "-C", build)
            sh("meson", "install", "-C", build, "--no-rebuild", "--destdir", dest)
            cls.dest = dest
            cls.staged = dest + cls.prefix
            cls.pyver = "%d.%d" % sys.version_info[:2]
            cls.listing = sorted(os.path.relpath(os.path.join(d, f), dest)
                                 for d, _, fs in os.walk(dest) for f in fs)
            cls.emptydirs = sorted(os.path.relpath(d, dest) for d, ds, fs in os.walk(dest) if not ds and not fs)
            with open(os.path.join(dest, "etc", "apparmor.d", "nsbox"), encoding="utf-8") as f:
                cls.apparmor = f.read()
            # out of reach: the installed tree moves to its prefix, and the
            # source and build trees it was made from are gone
            os.rename(cls.staged, cls.prefix)
            shutil.rmtree(src)
            shutil.rmtree(build)
        except BaseException:
            shutil.rmtree(cls.top, ignore_errors=True)
            raise
        cls.nsbox = os.path.join(cls.prefix, "bin", "nsbox")
        cls.work = os.path.join(cls.top, "work")
        cls.make_inputs()
        subprocess.run(["chmod", "-R", "a+rX", cls.top], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.top, ignore_errors=True)

    @classmethod
    def make_inputs(cls):
        w = cls.work
        os.makedirs(os.path.join(w, "harness"))
        os.makedirs(os.path.join(w, "workspace"))
        files = {
            "hello.py": "import sys\nprint('hello from', sys.argv[1])\n",
            "harness/test_add.py": "from add import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            "workspace/add.py": "def add(a, b):\n    return a + b\n",
            "spec.json": json.dumps({"program": {"source": "print(int(input()) * 2)"},
                                     "cases": [{"name": "double", "stdin": "21\n",
                                                "expect": {"stdout": {"equals": "42\n"}}}]}),
            "jobs.jsonl": json.dumps({"id": "a", "kind": "python", "code": "def f(x):\n    return x + 1",
                                      "test_code": "assert f(1) == 2"}) + "\n"
                          + json.dumps({"id": "b", "kind": "run", "argv": ["/bin/echo", "b"]}) + "\n",
        }
        for name, text in files.items():
            with open(os.path.join(w, name), "w", encoding="utf-8") as f:
                f.write(text)
        os.makedirs(cls.sysprofiles, exist_ok=True)
        with open(os.path.join(cls.sysprofiles, "course.ini"), "w", encoding="utf-8") as f:
            f.write("[limits]\nwall_time = 3s\nmemory = 96M\n")

    def nsbox_cmd(self, *args, user=None, env=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("NSBOX")}
        e.update({"HOME": self.work, "PATH": "/usr/bin:/bin"}, **(env or {}))
        argv = (NOBODY if user == "nobody" else []) + [self.nsbox, *args]
        return subprocess.run(argv, cwd=self.work, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=120)

    # -- what meson install put in DESTDIR ---------------------------------

    def test_installed_files(self):
        p = os.path.relpath(self.prefix, "/")
        want = ["bin/nsbox",
                "share/nsbox/harness/nsbox_test_runner.py",
                "share/nsbox/profiles/python.ini",
                "share/nsbox/profiles/minimal.ini",
                "share/man/man1/nsbox.1",
                "share/man/man5/nsbox-profile.5",
                "share/man/man5/nsbox-judge.5",
                "share/man/man5/nsbox-batch.5",
                "share/bash-completion/completions/nsbox",
                "share/zsh/site-functions/_nsbox",
                "lib/python%s/dist-packages/nsbox_client/py.typed" % self.pyver]
        # the zygote's code (--warm), in the configured LIBDIR
        warm = [f for f in self.listing if f.endswith("/nsbox/libnsbox_warm.so") or f.endswith("/nsbox/zygote.py")]
        self.assertEqual(len(warm), 2, warm)
        # nsbox serve's program, beside them, and its systemd user units
        self.assertEqual(len([f for f in self.listing if f.endswith("/nsbox/nsbox-serve")]), 1)
        want += ["lib/systemd/user/nsbox.socket", "lib/systemd/user/nsbox.service"]
        # every module of the runner's package and of the client's
        want += ["share/nsbox/harness/nsbox_runner/%s" % m for m in sorted(os.listdir(RUNNER_PKG)) if m.endswith(".py")]
        want += ["lib/python%s/dist-packages/nsbox_client/%s" % (self.pyver, m)
                 for m in sorted(os.listdir(CLIENT_PKG)) if m.endswith(".py")]
        for f in want:
            self.assertIn(os.path.join(p, f), self.listing)
        self.assertIn("etc/apparmor.d/nsbox", self.listing)
        self.assertIn(os.path.relpath(self.sysprofiles, "/"), self.emptydirs)

    def test_serve_finds_its_program_in_the_install(self):
        # nsbox serve execs LIBDIR/nsbox/nsbox-serve (docs/serve.md)
        r = self.nsbox_cmd("serve", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("POST /run_code", r.stdout)

    def test_apparmor_profile_names_the_installed_binary(self):
        self.assertIn("\nprofile nsbox %s flags=(unconfined) {\n" % self.nsbox, self.apparmor)

    def test_man_pages_render_from_the_install(self):
        for page in glob.glob(os.path.join(self.prefix, "share", "man", "man*", "nsbox*")):
            r = subprocess.run(["man", "--warnings", "-l", page], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, MANWIDTH="80"))
            self.assertEqual((r.returncode, r.stderr), (0, ""), page)
            self.assertIn("nsbox", r.stdout)

    # -- every command, from the installed files only ------------------------

    def users(self):
        return ["self", "nobody"] if os.geteuid() == 0 else ["self"]

    def test_run_and_python(self):
        for user in self.users():
            with self.subTest(user=user):
                r = self.nsbox_cmd("run", "--json", "--", "/bin/echo", "hi", user=user)
                res = json.loads(r.stdout)
                self.assertEqual((r.returncode, res["status"], res["stdout"]["text"]), (0, "exited", "hi\n"), r.stderr)
                r = self.nsbox_cmd("python", "hello.py", "installed", user=user)
                self.assertEqual((r.returncode, r.stdout), (0, "hello from installed\n"), r.stderr)

    def test_named_profile_from_the_configured_system_dir(self):
        for user in self.users():
            with self.subTest(user=user):
                r = self.nsbox_cmd("profile", "show", "course", user=user)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("wall_time = 3s", r.stdout)
                self.assertIn("memory = 96M", r.stdout)
                r = self.nsbox_cmd("python", "--profile", "course", "-c", "print(7)", user=user)
                self.assertEqual((r.returncode, r.stdout), (0, "7\n"), r.stderr)

    def test_profile_show_matches_the_installed_builtin_copies(self):
        for name in ("python", "minimal"):
            r = self.nsbox_cmd("profile", "show", name)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(self.prefix, "share", "nsbox", "profiles", name + ".ini"), encoding="utf-8") as f:
                self.assertEqual(f.read(), r.stdout)

    def test_judge(self):
        for user in self.users():
            with self.subTest(user=user):
                r = self.nsbox_cmd("judge", "--json", "spec.json", user=user)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertEqual(json.loads(r.stdout)["verdict"], "pass")

    def test_test_finds_the_installed_runner(self):
        for user in self.users():
            with self.subTest(user=user):
                r = self.nsbox_cmd("test", "--json", "--harness", "harness", "--workspace", "workspace", user=user)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertEqual(json.loads(r.stdout)["verdict"], "pass", r.stdout)

    def test_test_without_the_installed_runner_says_where_it_belongs(self):
        """The runner comes from PREFIX/share/nsbox/harness and nowhere else:
        taken away, nsbox test fails (125) naming that directory."""
        harness = os.path.join(self.prefix, "share", "nsbox", "harness")
        os.rename(harness, harness + ".away")
        try:
            r = self.nsbox_cmd("test", "--json", "--harness", "harness", "--workspace", "workspace")
        finally:
            os.rename(harness + ".away", harness)
        self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
        self.assertIn("cannot find nsbox_test_runner.py", r.stderr + r.stdout)
        self.assertIn(harness, r.stderr + r.stdout)

    def test_batch(self):
        for user in self.users():
            with self.subTest(user=user):
                r = self.nsbox_cmd("batch", "-j", "2", "jobs.jsonl", user=user)
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = {j["id"]: j for j in map(json.loads, r.stdout.splitlines())}
                self.assertEqual(lines["a"]["outcome"], "pass", lines["a"])
                self.assertEqual(lines["b"]["stdout"]["text"], "b\n", lines["b"])

    def test_batch_warm(self):
        """The installed binary finds the installed zygote code: python
        jobs start warm, a run job runs cold and says why."""
        for user in self.users():
            with self.subTest(user=user):
                r = self.nsbox_cmd("batch", "--warm", "-j", "2", "jobs.jsonl", user=user)
                self.assertEqual(r.returncode, 0, r.stderr)
                lines = {j["id"]: j for j in map(json.loads, r.stdout.splitlines())}
                self.assertEqual((lines["a"]["outcome"], lines["a"]["start"]), ("pass", "warm"), lines["a"])
                self.assertEqual((lines["b"]["start"], lines["b"]["start_reason"]), ("cold", "not a python job"),
                                 lines["b"])
                r = self.nsbox_cmd("doctor", "--json", user=user)
                self.assertEqual(json.loads(r.stdout)["warm"], {"available": True, "reason": None}, r.stdout)

    def test_doctor(self):
        for user in self.users():
            with self.subTest(user=user):
                r = self.nsbox_cmd("doctor", "--json", user=user)
                report = json.loads(r.stdout)
                self.assertEqual(report["schema"], "nsbox.doctor/1")
                self.assertEqual((r.returncode, report["ready"]), (0, True), r.stdout)

    def test_python_client_from_the_install(self):
        site = os.path.join(self.prefix, "lib", "python" + self.pyver, "dist-packages")
        code = ("import nsbox_client, sys\n"
                "assert nsbox_client.__file__.startswith(sys.argv[1]), nsbox_client.__file__\n"
                "r = nsbox_client.run_code('def f(x):\\n    return x + 1', test_code='assert f(1) == 2')\n"
                "print(r.status, r.label)\n")
        for user in self.users():
            with self.subTest(user=user):
                argv = (NOBODY if user == "nobody" else []) + ["/usr/bin/python3", "-c", code, site]
                r = subprocess.run(argv, cwd=self.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=120, env={"PATH": os.path.dirname(self.nsbox) + ":/usr/bin:/bin",
                                                     "PYTHONPATH": site, "HOME": self.work})
                self.assertEqual((r.returncode, r.stdout), (0, "pass 1\n"), r.stderr)

    def test_bash_completion_from_the_install(self):
        script = ('source "$1"; COMP_WORDS=(nsbox python --profile c); COMP_CWORD=3; _nsbox; '
                  'printf "%s\\n" "${COMPREPLY[@]}"')
        r = subprocess.run(["bash", "--norc", "-c", script, "bash",
                            os.path.join(self.prefix, "share", "bash-completion", "completions", "nsbox")],
                           cwd=self.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={"HOME": self.work, "PATH": "/usr/bin:/bin"})
        # course.ini is in the configured system profile directory
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "course\n", ""))


class BuildTreeRunner(unittest.TestCase):
    """The source tree's harness/ is the build tree's binary's alone: a copy
    of that binary anywhere else looks only in the configured data dir."""

    def nsbox_test(self, nsbox, user=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("NSBOX")}
        env.update(HOME="/tmp", PATH="/usr/bin:/bin")
        argv = (NOBODY if user == "nobody" else []) + [
            nsbox, "test", "--json", "--harness", os.path.join(SOURCE, "examples", "course", "harness"),
            "--workspace", os.path.join(SOURCE, "examples", "course", "workspace")]
        return subprocess.run(argv, env=env, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=120)

    def test_build_tree_binary_uses_the_source_runner(self):
        r = self.nsbox_test(os.environ["NSBOX"])
        self.assertEqual((r.returncode, json.loads(r.stdout)["verdict"]), (0, "pass"), r.stderr)

    def test_a_copy_elsewhere_does_not(self):
        datadir = os.environ["NSBOX_DATADIR"]
        if os.path.exists(os.path.join(datadir, "harness", "nsbox_test_runner.py")):
            self.skipTest("%s/harness holds a runner (an installed nsbox): a copy would rightly use it" % datadir)
        with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
            os.chmod(d, 0o755)
            copy = shutil.copy2(os.environ["NSBOX"], os.path.join(d, "nsbox"))
            r = self.nsbox_test(copy)
        self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
        self.assertIn("cannot find nsbox_test_runner.py: it is installed in %s/harness" % datadir, r.stderr)


if __name__ == "__main__":
    unittest.main()
