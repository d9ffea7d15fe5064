"""A learner's folder is a program (issue #26).

A script inside --workspace runs from there as `python main.py` runs it:
/workspace/REL/NAME is the interpreter's script path, its folder leads
sys.path (a sibling module imports), and the working directory is the
caller's, mapped into /workspace (a relative file opens). Each run is
compared with bare python on the same folder (`cd DIR && python3 -E -s -B
main.py`, the paths mapped), cold (`nsbox python`, `nsbox judge`) and warm
(`nsbox judge --warm`). A script outside the workspace runs as before, from
/program. Also: `nsbox test` without --workspace refuses, naming
`--workspace .`, and a program whose input() meets EOF at a terminal gets a
note saying how to give it input.
"""
import hashlib
import json
import os
import pty
import shutil
import subprocess
import tempfile

from nsbtest import NSBOX, SandboxTest

# What the program reports of itself, host paths left as they are (the test
# maps the project folder to /workspace).
MAIN = r'''
import json, os, sys
import helper
try:
    with open("data.txt") as f:
        data = f.read().strip()
except OSError as e:
    data = type(e).__name__
print(json.dumps({"helper": helper.VALUE, "data": data, "cwd": os.getcwd(), "path0": sys.path[0],
                  "file": __file__, "argv0": sys.argv[0], "args": sys.argv[1:],
                  "isolated": sys.flags.isolated, "safe_path": getattr(sys.flags, "safe_path", None),
                  "no_user_site": sys.flags.no_user_site, "ignore_environment": sys.flags.ignore_environment}))
'''

BARE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


class LearnerFolder(SandboxTest):
    def setUp(self):
        super().setUp()
        # not under /tmp: the sandbox owns its /tmp
        self.dir = tempfile.mkdtemp(dir="/var/tmp", prefix="nsbox-folder.")
        self.addCleanup(shutil.rmtree, self.dir)
        os.chmod(self.dir, 0o755)
        self.ws = os.path.join(self.dir, "project")
        for rel, text in (("main.py", MAIN), ("helper.py", "VALUE = 'sibling'\n"), ("data.txt", "top\n"),
                          ("sub/data.txt", "in sub\n"), ("pkg/main.py", MAIN),
                          ("pkg/helper.py", "VALUE = 'pkg sibling'\n")):
            self.write(os.path.join(self.ws, rel), text)
        self.outside = self.write(os.path.join(self.dir, "elsewhere", "main.py"), MAIN)
        self.write(os.path.join(self.dir, "elsewhere", "helper.py"), "VALUE = 'outside'\n")

    def write(self, path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def mapped(self, report):
        """The bare report with the project folder seen as /workspace."""
        out = dict(report)
        for k in ("cwd", "path0", "file", "argv0"):
            v = os.path.normpath(os.path.join(out["cwd"] if k in ("file", "argv0") else "/", out[k]))
            if v == self.ws or v.startswith(self.ws + "/"):
                v = "/workspace" + v[len(self.ws):]
            out[k] = v
        return out

    def bare(self, cwd, script, *args):
        p = subprocess.run(["/usr/bin/python3", "-E", "-s", "-B", script, *args], cwd=cwd, env=BARE_ENV,
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return self.mapped(json.loads(p.stdout))

    def cold(self, cwd, *args):
        p, res = self.run_json("python", *args, cwd=cwd)
        return res, self.observed(res)

    def judge(self, cwd, program, warm, cases=2):
        spec = self.write(os.path.join(self.dir, "spec.json"), json.dumps({
            "program": {"path": program},
            "cases": [{"name": "c%d" % i, "args": ["x%d" % i], "expect": {"exit_code": 0}} for i in range(cases)]}))
        p = self.nsbox("judge", "--json", *(["--warm"] if warm else []), "--workspace", self.ws, spec, cwd=cwd,
                       timeout=120)
        try:
            v = json.loads(p.stdout)
        except ValueError:
            self.fail("no verdict (exit %d): %r" % (p.returncode, p.stderr[-2000:]))
        return v

    # -- nsbox python ------------------------------------------------------

    def test_folder_runs_as_python_main_py(self):
        # the issue's `cd project && nsbox python --workspace . main.py`
        res, got = self.cold(self.ws, "--workspace", ".", "main.py", "a")
        self.assertEqual(res["command"], ["python3", "-E", "-s", "-B", "/workspace/main.py", "a"])
        want = self.bare(self.ws, "main.py", "a")
        want["argv0"] = "/workspace/main.py"    # the interpreter is given the path inside
        self.assertEqual(got, want)
        self.assertEqual(got["helper"], "sibling")
        self.assertEqual(got["data"], "top")
        with open(os.path.join(self.ws, "main.py"), "rb") as f:
            self.assertEqual(res["program_sha256"], hashlib.sha256(f.read()).hexdigest())

    def test_caller_cwd_inside_the_workspace_is_kept(self):
        sub = os.path.join(self.ws, "sub")
        res, got = self.cold(sub, "--workspace", "..", "../main.py")
        want = self.bare(sub, "../main.py")
        want["argv0"] = "/workspace/main.py"
        self.assertEqual(got, want)
        self.assertEqual((got["cwd"], got["data"]), ("/workspace/sub", "in sub"))

    def test_script_in_a_subfolder(self):
        res, got = self.cold(self.ws, "--workspace", ".", "pkg/main.py")
        want = self.bare(self.ws, "pkg/main.py")
        want["argv0"] = "/workspace/pkg/main.py"
        self.assertEqual(got, want)
        self.assertEqual((got["path0"], got["helper"], got["cwd"]), ("/workspace/pkg", "pkg sibling", "/workspace"))

    def test_caller_outside_the_workspace_runs_at_its_top(self):
        res, got = self.cold(self.dir, "--workspace", self.ws, os.path.join(self.ws, "pkg", "main.py"))
        self.assertEqual((got["cwd"], got["path0"], got["data"]), ("/workspace", "/workspace/pkg", "top"))

    def test_script_outside_the_workspace_runs_from_program(self):
        p, res = self.run_json("python", "--workspace", self.ws, self.outside, cwd=self.ws)
        self.assertEqual(res["command"], ["python3", "-I", "-B", "/program/main.py"])
        self.assertIn("ModuleNotFoundError: No module named 'helper'", res["stderr"]["text"])

    def test_symlink_leading_out_of_the_workspace_is_refused(self):
        # named in the learner's folder, it must be the folder's own file: nsbox
        # (perhaps root) never reads, hashes or runs what a link there leads to
        secret = self.write(os.path.join(self.dir, "course", "reference.py"), "print('reference')\n")
        os.chmod(secret, 0o600)
        link = os.path.join(self.ws, "link.py")
        os.symlink(secret, link)
        p = self.nsbox("python", "--workspace", self.ws, link, cwd=self.ws)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"leads out of it", p.stderr)
        self.assertNotIn(b"reference", p.stdout)
        spec = self.write(os.path.join(self.dir, "spec.json"), json.dumps({
            "program": {"path": link}, "cases": [{"name": "c", "expect": {"stdout": {"equals": "reference\n"}}}]}))
        p = self.nsbox("judge", "--json", "--workspace", self.ws, spec, cwd=self.ws)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"program.path", p.stderr)
        self.assertNotIn(b'"pass"', p.stdout)

    def test_absolute_symlink_in_the_workspace_runs_its_file(self):
        # the link's text names a host path the sandbox does not hold: the
        # file it leads to runs, from its own folder, cold and warm
        link = os.path.join(self.ws, "abs.py")
        os.symlink(os.path.join(self.ws, "pkg", "main.py"), link)
        res, got = self.cold(self.ws, "--workspace", ".", "abs.py")
        self.assertEqual(res["status"], "exited", res["stderr"]["text"])
        self.assertEqual(res["command"], ["python3", "-E", "-s", "-B", "/workspace/pkg/main.py"])
        self.assertEqual((got["helper"], got["path0"]), ("pkg sibling", "/workspace/pkg"))
        for warm in (False, True):
            v = self.judge(self.ws, link, warm, cases=1)
            self.assertEqual(v["verdict"], "pass", v)

    def test_a_fifo_in_the_workspace_is_refused(self):
        fifo = os.path.join(self.ws, "fifo.py")
        os.mkfifo(fifo)
        p = self.nsbox("python", "--workspace", self.ws, fifo, cwd=self.ws, timeout=30)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"not a regular file", p.stderr)

    def test_reduced_isolation_takes_a_relative_workspace(self):
        p = self.nsbox("python", "--isolation", "reduced", "--workspace", ".", "-c",
                       "import os; print(sorted(os.listdir('.')))", cwd=self.ws)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"'main.py'", p.stdout)

    # -- nsbox judge, cold and warm ------------------------------------------

    def test_judge_cold_and_warm(self):
        want = self.bare(self.ws, "main.py", "x0")
        want["argv0"] = "/workspace/main.py"
        for warm in (False, True):
            v = self.judge(self.ws, os.path.join(self.ws, "main.py"), warm)
            self.assertEqual(v["verdict"], "pass", v)
            self.assertEqual(v.get("start"), "warm" if warm else "cold", v.get("start_reason"))
            for i, c in enumerate(v["cases"]):
                r = c["result"]
                self.assertEqual(r["command"], ["python3", "-E", "-s", "-B", "/workspace/main.py", "x%d" % i])
                got = json.loads(r["stdout"]["text"])
                self.assertEqual(got, dict(want, args=["x%d" % i]), "warm" if warm else "cold")

    def test_judge_warm_keeps_the_callers_folder(self):
        sub = os.path.join(self.ws, "sub")
        want = self.bare(sub, "../pkg/main.py", "x0")
        want["argv0"] = "/workspace/pkg/main.py"
        for warm in (False, True):
            v = self.judge(sub, os.path.join(self.ws, "pkg", "main.py"), warm, cases=1)
            self.assertEqual(v.get("start"), "warm" if warm else "cold", v.get("start_reason"))
            self.assertEqual(json.loads(v["cases"][0]["result"]["stdout"]["text"]), want, v)

    def test_batch_judge_job(self):
        # a judge job's program.path (relative to the jobs file) in the workspace
        jobs = self.write(os.path.join(self.dir, "jobs.jsonl"), json.dumps({
            "id": "j", "kind": "judge", "spec": {"program": {"path": "project/main.py"},
                                                 "cases": [{"name": "c", "expect": {"exit_code": 0}}]}}) + "\n")
        p = self.nsbox("batch", "--workspace", ".", jobs, cwd=self.ws, timeout=120)
        line = json.loads(p.stdout.splitlines()[0])
        r = line["cases"][0]["result"]
        self.assertEqual((line["verdict"], r["command"]), ("pass", ["python3", "-E", "-s", "-B", "/workspace/main.py"]),
                         r["stderr"]["text"])
        want = self.bare(self.ws, "main.py")
        want["argv0"] = "/workspace/main.py"
        self.assertEqual(json.loads(r["stdout"]["text"]), want)

    # -- nsbox test ----------------------------------------------------------

    def test_test_without_workspace_refuses(self):
        h = self.write(os.path.join(self.dir, "h", "test_a.py"), "def test_a():\n    pass\n")
        p = self.nsbox("test", "--harness", os.path.dirname(h), cwd=self.ws)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"--workspace .", p.stderr)
        self.assertEqual(p.stdout, b"")

    # -- input() at a terminal -----------------------------------------------

    def test_input_at_a_terminal_says_how(self):
        master, slave = pty.openpty()
        self.addCleanup(os.close, master)
        try:
            p = subprocess.run([NSBOX, "python", "-c", "print(input())"], stdin=slave, capture_output=True,
                               timeout=60)
        finally:
            os.close(slave)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn(b"EOFError", p.stderr)
        self.assertIn(b"--stdin -", p.stderr.splitlines()[-1])
        # a failure that is not the end of input gets no such note
        master3, slave3 = pty.openpty()
        self.addCleanup(os.close, master3)
        try:
            p = subprocess.run([NSBOX, "python", "-c", "1/0"], stdin=slave3, capture_output=True, timeout=60)
        finally:
            os.close(slave3)
        self.assertIn(b"ZeroDivisionError", p.stderr)
        self.assertNotIn(b"--stdin -", p.stderr)
        # given --stdin -, the terminal is read (through a pipe): what is typed arrives
        master2, slave2 = pty.openpty()
        self.addCleanup(os.close, master2)
        os.write(master2, b"typed\n\x04")
        try:
            p = subprocess.run([NSBOX, "python", "--stdin", "-", "-c", "print(input())"], stdin=slave2,
                               capture_output=True, timeout=60)
        finally:
            os.close(slave2)
        self.assertEqual((p.returncode, p.stdout), (0, b"typed\n"), p.stderr)


if __name__ == "__main__":
    import unittest
    unittest.main()
