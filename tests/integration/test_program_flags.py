"""Every command that builds a python program, against every flag that shapes it.

python, judge, batch python jobs, batch judge jobs and test all build the
program's request through one builder (program/program.h). Each is run here
with each of --interpreter, --interpreter-args, --env, --stdin, --package and
a profile's [python] keys, and the program reports what it was given; a
command that built its own argv (batch once ran `python3 -I -B` whatever the
flags said) fails the row of that flag.
"""
import json
import os
import shutil
import tempfile

from nsbtest import NSBOX, SandboxTest

ALT_INTERPRETER = "/usr/bin/python3.11"

# What the program sees. The package's parent directory is put on sys.path
# by the program itself (a package outside dist-packages needs that, see
# docs/profiles.md); it imports only when --package mounted it.
PROBE = r'''
import json, os, sys
sys.path.insert(0, %(pkg_parent)r)
try:
    import nsbprobe_pkg
    pkg = nsbprobe_pkg.VALUE
except ImportError:
    pkg = None
print(json.dumps({"dev_mode": bool(sys.flags.dev_mode), "argv0": sys.orig_argv[0],
                  "env": os.environ.get("NSB_PROBE"), "stdin": sys.stdin.read(), "pkg": pkg}))
'''


class ProgramFlags(SandboxTest):
    def setUp(self):
        super().setUp()
        if not os.path.exists(ALT_INTERPRETER):
            self.skipTest("no %s to name as another interpreter" % ALT_INTERPRETER)
        # not under /tmp: the sandbox owns /tmp, so a package there cannot be
        # mounted at its own path
        self.dir = tempfile.mkdtemp(dir="/var/tmp", prefix="nsbox-progflags.")
        self.addCleanup(shutil.rmtree, self.dir)
        os.chmod(self.dir, 0o755)
        self.pkg_parent = os.path.join(self.dir, "site")
        self.pkg = os.path.join(self.pkg_parent, "nsbprobe_pkg")
        os.makedirs(self.pkg)
        with open(os.path.join(self.pkg, "__init__.py"), "w") as f:
            f.write("VALUE = 'mounted'\n")
        self.code = PROBE % {"pkg_parent": self.pkg_parent}
        self.stdin_file = self.write("stdin.txt", "from-stdin-file\n")
        self.profile = self.write(
            "p.ini", "[python]\ninterpreter = %s\nargs = -I -B -X dev\npackages = %s\n" % (ALT_INTERPRETER, self.pkg))

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    # ---- one way per command to run the probe and read what it printed ----

    def parse(self, proc, what):
        try:
            return json.loads(proc.stdout)
        except ValueError:
            self.fail("%s: no JSON (exit %d): %r %r" % (what, proc.returncode, proc.stdout[:500], proc.stderr[:1000]))

    def seen(self, result, what):
        self.assertEqual(result["status"], "exited", "%s: %r" % (what, result.get("error") or result["stderr"]))
        self.assertEqual(result["exit_code"], 0, "%s: %r" % (what, result["stderr"]["text"][-1500:]))
        return json.loads(result["stdout"]["text"])

    def spec(self):
        return {"program": {"source": self.code}, "cases": [{"name": "probe", "expect": {"exit_code": 0}}]}

    def via_python(self, flags):
        script = self.write("probe.py", self.code)
        p = self.nsbox("python", "--json", *flags, script)
        return self.seen(self.parse(p, "python"), "python")

    def via_judge(self, flags):
        spec = self.write("spec.json", json.dumps(self.spec()))
        p = self.nsbox("judge", "--json", *flags, spec)
        verdict = self.parse(p, "judge")
        return self.seen(verdict["cases"][0]["result"], "judge")

    def batch_line(self, flags, job):
        jobs = self.write("jobs.jsonl", json.dumps(job) + "\n")
        p = self.nsbox("batch", "--quiet", *flags, jobs, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-1500:])
        lines = p.stdout.decode().splitlines()
        self.assertEqual(len(lines), 1, p.stdout[:1000])
        return json.loads(lines[0])

    def via_batch_python(self, flags):
        line = self.batch_line(flags, {"id": "py", "kind": "python", "code": self.code})
        return self.seen(line, "batch python job")

    def via_batch_judge(self, flags):
        line = self.batch_line(flags, {"id": "j", "kind": "judge", "spec": self.spec()})
        return self.seen(line["cases"][0]["result"], "batch judge job")

    def via_test(self, flags):
        harness = os.path.join(self.dir, "harness")
        workspace = os.path.join(self.dir, "workspace")
        os.makedirs(harness, exist_ok=True)
        os.makedirs(workspace, exist_ok=True)
        os.chmod(harness, 0o755)
        os.chmod(workspace, 0o777)
        # the test fails on purpose: its message carries what the runner's
        # interpreter saw
        body = "def test_probe():\n" + "".join("    " + l + "\n" for l in
                                                self.code.replace("print(", "raise AssertionError(").splitlines())
        with open(os.path.join(harness, "test_probe.py"), "w") as f:
            f.write(body)
        p = self.nsbox("test", "--json", *flags, "--harness", harness, "--workspace", workspace, timeout=120)
        report = self.parse(p, "test")
        tests = report["tests"]
        self.assertEqual(len(tests), 1, report)
        self.assertEqual(tests[0]["outcome"], "failed", report)
        msg = tests[0]["message"]
        return json.loads(msg[msg.index("{"):msg.rindex("}") + 1])

    COMMANDS = ("python", "judge", "batch_python", "batch_judge", "test")

    def each_command(self, flags, check):
        for cmd in self.COMMANDS:
            with self.subTest(command=cmd, flags=flags):
                seen = getattr(self, "via_" + cmd)(flags)
                check(cmd, seen)

    # ---- the flags ----------------------------------------------------------

    def test_baseline(self):
        def check(cmd, seen):
            self.assertFalse(seen["dev_mode"])
            self.assertEqual(seen["argv0"], "python3")
            self.assertIsNone(seen["env"])
            self.assertIsNone(seen["pkg"])
            if cmd != "test":
                self.assertEqual(seen["stdin"], "")
        self.each_command([], check)

    def test_interpreter_args(self):
        self.each_command(["--interpreter-args", "-I -B -X dev"],
                          lambda cmd, seen: self.assertTrue(seen["dev_mode"], cmd))

    def test_interpreter(self):
        self.each_command(["--interpreter", ALT_INTERPRETER],
                          lambda cmd, seen: self.assertEqual(seen["argv0"], ALT_INTERPRETER, cmd))

    def test_env(self):
        self.each_command(["--env", "NSB_PROBE=yes"], lambda cmd, seen: self.assertEqual(seen["env"], "yes", cmd))

    def test_stdin(self):
        self.each_command(["--stdin", self.stdin_file],
                          lambda cmd, seen: self.assertEqual(seen["stdin"], "from-stdin-file\n", cmd))

    def test_package(self):
        self.each_command(["--package", self.pkg], lambda cmd, seen: self.assertEqual(seen["pkg"], "mounted", cmd))

    def test_profile_python_keys(self):
        def check(cmd, seen):
            self.assertEqual(seen["argv0"], ALT_INTERPRETER, cmd)
            self.assertTrue(seen["dev_mode"], cmd)
            self.assertEqual(seen["pkg"], "mounted", cmd)
        self.each_command(["--profile", self.profile], check)


if __name__ == "__main__":
    import unittest
    unittest.main()
