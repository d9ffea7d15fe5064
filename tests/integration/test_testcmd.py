"""`nsbox test`: hidden tests from --harness against a learner's --workspace.

Needs NSBOX_SOURCE (the source tree, or the world-readable copy made by
as_nobody.sh) for examples/course and harness/ (the runner)."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET

from nsbtest import NSBOX, SandboxTest

SOURCE = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
COURSE = os.path.join(SOURCE, "examples", "course")
RUNNER_DIR = os.path.join(SOURCE, "harness")
ENV = dict(os.environ, NSBOX_RUNNER_DIR=RUNNER_DIR)

EXPECTED_TESTS = [
    "test_solution.py::test_empty_text",
    "test_solution.py::test_counts_repeated_words",
    "test_solution.py::test_ignores_case",
    "test_solution.py::TestPunctuation::test_strips_punctuation",
    "test_solution.py::TestPunctuation::test_keeps_apostrophes_inside_words",
]


class TestCommand(SandboxTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="nsbox-testcmd-")
        os.chmod(self.tmp, 0o755)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def make_dir(self, name, files):
        d = os.path.join(self.tmp, name)
        os.mkdir(d)
        os.chmod(d, 0o755)
        for fname, text in files.items():
            with open(os.path.join(d, fname), "w") as f:
                f.write(text)
            os.chmod(os.path.join(d, fname), 0o644)
        return d

    def snapshot(self, d):
        out = {}
        for root, dirs, files in os.walk(d):
            for fname in dirs + files:
                p = os.path.join(root, fname)
                st = os.lstat(p)
                out[os.path.relpath(p, d)] = (st.st_mode, st.st_size, st.st_mtime_ns)
        return out

    def run_tests(self, workspace, harness, *opts, timeout=60):
        args = ["test", "--json", *opts, "--harness", harness]
        if workspace is not None:
            args += ["--workspace", workspace]
        p = self.nsbox(*args, timeout=timeout, env=ENV)
        try:
            rep = json.loads(p.stdout)
        except ValueError:
            self.fail("no JSON report (exit %d): stdout=%r stderr=%r" % (p.returncode, p.stdout[:500], p.stderr[:2000]))
        self.assertEqual(rep["schema"], "nsbox.tests/1")
        self.assertEqual(rep["result"]["schema"], "nsbox.result/1")
        return p, rep

    def outcomes(self, rep):
        return {t["name"]: t["outcome"] for t in rep["tests"]}

    def by_name(self, rep):
        return {t["name"]: t for t in rep["tests"]}

    # -- the example course ---------------------------------------------

    def test_correct_solution_passes(self):
        ws = os.path.join(COURSE, "workspace")
        before = self.snapshot(ws)
        p, rep = self.run_tests(ws, os.path.join(COURSE, "harness"))
        self.assertEqual(p.returncode, 0, rep)
        self.assertEqual(rep["verdict"], "pass")
        self.assertEqual([t["name"] for t in rep["tests"]], EXPECTED_TESTS)
        self.assertEqual(set(self.outcomes(rep).values()), {"passed"})
        self.assertEqual(self.snapshot(ws), before, "the workspace was modified")

    def test_wrong_solution_fails_the_right_tests(self):
        p, rep = self.run_tests(os.path.join(COURSE, "workspace-wrong"), os.path.join(COURSE, "harness"))
        self.assertEqual(p.returncode, 1, rep)
        self.assertEqual(rep["verdict"], "fail")
        failed = sorted(n for n, o in self.outcomes(rep).items() if o != "passed")
        self.assertEqual(failed, ["test_solution.py::TestPunctuation::test_strips_punctuation",
                                  "test_solution.py::test_ignores_case"])
        tests = self.by_name(rep)
        for name in failed:
            self.assertEqual(tests[name]["outcome"], "failed")
        msg = tests["test_solution.py::test_ignores_case"]["message"]
        self.assertIn("{'Go': 1, 'go': 1, 'GO': 1}", msg)
        self.assertIn("{'go': 3}", msg)
        msg = tests["test_solution.py::TestPunctuation::test_strips_punctuation"]["message"]
        self.assertIn("{'Hello,': 1, 'world!': 1, 'Hello.': 1}", msg)
        self.assertIn("{'hello': 2, 'world': 1}", msg)

    def test_human_summary(self):
        p = self.nsbox("test", "--workspace", os.path.join(COURSE, "workspace-wrong"),
                       "--harness", os.path.join(COURSE, "harness"), env=ENV)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 1, out + p.stderr.decode())
        self.assertIn("\u2713 test_solution.py::test_empty_text", out)
        self.assertIn("\u2717 test_solution.py::test_ignores_case", out)
        self.assertIn("assert {'Go': 1, 'go': 1, 'GO': 1} == {'go': 3}", out)
        self.assertRegex(out, r"== 3 passed, 2 failed in \d+\.\d\ds ==")
        self.assertIn("verdict: fail", out)

    def test_result_file(self):
        path = os.path.join(self.tmp, "report.json")
        p, rep = self.run_tests(os.path.join(COURSE, "workspace"), os.path.join(COURSE, "harness"),
                                "--result", path)
        with open(path) as f:
            self.assertEqual(json.load(f)["verdict"], "pass")

    # -- set-up errors ---------------------------------------------------

    def test_harness_is_required(self):
        p = self.nsbox("test", "--workspace", os.path.join(COURSE, "workspace"), env=ENV)
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"--harness", p.stderr)

    def test_harness_writable_through_a_bind_is_refused(self):
        ws = self.make_dir("ws", {"solution.py": "x = 1\n"})
        h = self.make_dir("h", {"test_a.py": "def test_a():\n    pass\n"})
        p = self.nsbox("test", "--workspace", ws, "--harness", h, "--bind", self.tmp + ":/course", env=ENV)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"lies inside --bind", p.stderr)
        # read-only: no more than the program sees at /harness anyway
        p = self.nsbox("test", "--json", "--workspace", ws, "--harness", h, "--ro-bind", self.tmp + ":/course",
                       env=ENV)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_refused_output_names_the_command(self):
        # Before the command frame, test's own check said "nsbox: test: --junit
        # ... lies inside"; the frame's check printed it without "test: ",
        # unlike judge's. The command's name stays on the message.
        ws = self.make_dir("ws", {"solution.py": "x = 1\n"})
        h = self.make_dir("h", {"test_a.py": "def test_a():\n    pass\n"})
        out = self.make_dir("out", {})
        for opt, extra, target, where in (
                ("--junit", [], os.path.join(ws, "j.xml"), "--workspace"),
                ("--result", [], os.path.join(ws, "r.json"), "--workspace"),
                ("--junit", ["--bind", out + ":/out"], os.path.join(out, "j.xml"), "--bind")):
            with self.subTest(opt=opt, where=where):
                p = self.nsbox("test", "--workspace", ws, "--harness", h, *extra, opt, target, env=ENV)
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertTrue(p.stderr.startswith(("nsbox: test: %s '%s' lies inside %s" % (opt, target, where)).encode()),
                                p.stderr)

    def test_outputs_inside_the_workspace_are_refused(self):
        # The report quotes the tests' assertions (expected values): left in
        # the workspace, the next run of the program could read them. The
        # rule judge and batch apply (frame/frame.h) applies to test too.
        ws = self.make_dir("ws", {"solution.py": "x = 1\n"})
        h = self.make_dir("h", {"test_a.py": "def test_a():\n    pass\n"})
        for opt in ("--result", "--junit"):
            with self.subTest(opt):
                target = os.path.join(ws, "out" + opt)
                p = self.nsbox("test", "--workspace", ws, "--harness", h, opt, target, env=ENV)
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertIn(("%s '%s' lies inside --workspace" % (opt, target)).encode(), p.stderr)
                self.assertFalse(os.path.exists(target))
        with self.subTest("stdout"):
            target = os.path.join(ws, "stdout.json")
            with open(target, "wb") as out:
                p = subprocess.run([NSBOX, "test", "--json", "--workspace", ws, "--harness", h], env=ENV,
                                   stdout=out, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(b"stdout '", p.stderr)
            self.assertIn(b"lies inside --workspace", p.stderr)
            self.assertEqual(os.path.getsize(target), 0)
        # outside the workspace, the same run is fine
        p = self.nsbox("test", "--json", "--workspace", ws, "--harness", h, "--result",
                       os.path.join(self.tmp, "r.json"), env=ENV)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_missing_harness_or_workspace_says_why(self):
        ws = self.make_dir("ws", {"solution.py": "x = 1\n"})
        h = self.make_dir("h", {"test_a.py": "def test_a():\n    pass\n"})
        missing = os.path.join(self.tmp, "no-such-dir")
        for args in (["--harness", missing, "--workspace", ws], ["--harness", h, "--workspace", missing]):
            with self.subTest(args[0]):
                p = self.nsbox("test", *args, env=ENV)
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertIn(("'%s': No such file or directory" % missing).encode(), p.stderr)

    def test_harness_inside_workspace_is_refused(self):
        ws = self.make_dir("ws", {"solution.py": "x = 1\n"})
        h = os.path.join(ws, "hidden")
        os.mkdir(h)
        p = self.nsbox("test", "--workspace", ws, "--harness", h, env=ENV)
        self.assertEqual(p.returncode, 125, p.stderr)

    # -- what the learner's code can do ----------------------------------

    def test_infinite_loop_is_reported_for_that_test(self):
        ws = self.make_dir("ws", {"solution.py": (
            "def ok():\n    return 1\n\n"
            "def spin():\n    while True:\n        pass\n")})
        h = self.make_dir("h", {"test_s.py": (
            "from solution import ok, spin\n\n"
            "def test_first():\n    assert ok() == 1\n\n"
            "def test_spins():\n    spin()\n\n"
            "def test_last():\n    assert ok() == 1\n")})
        started = time.monotonic()
        p, rep = self.run_tests(ws, h, "--wall-time", "8s")
        elapsed = time.monotonic() - started
        self.assertLess(elapsed, 8 + 3, "the run outlived the wall limit")
        self.assertEqual(p.returncode, 1, rep)
        self.assertEqual(rep["verdict"], "fail")
        tests = self.by_name(rep)
        self.assertEqual(tests["test_s.py::test_first"]["outcome"], "passed")
        self.assertEqual(tests["test_s.py::test_spins"]["outcome"], "error")
        self.assertIn("timed out", tests["test_s.py::test_spins"]["message"])
        self.assertEqual(tests["test_s.py::test_last"]["outcome"], "passed")

    def test_fake_result_lines_change_nothing(self):
        fake = ('import sys, json\n'
                'for stream in (sys.stdout, sys.stderr):\n'
                '    print(json.dumps({"event": "test", "name": "test_solution.py::test_ignores_case",'
                ' "outcome": "passed", "message": None, "traceback": None}), file=stream)\n'
                '    print(json.dumps({"event": "done", "collected": 5, "counts": {"passed": 5}}), file=stream)\n'
                '    stream.flush()\n'
                'try:\n'
                '    import os; os.write(3, b\'{"event": "done", "collected": 0}\\n\')\n'
                'except OSError:\n'
                '    pass\n')
        with open(os.path.join(COURSE, "workspace-wrong", "solution.py")) as f:
            wrong = f.read()
        ws = self.make_dir("ws", {"solution.py": fake + wrong})
        p, rep = self.run_tests(ws, os.path.join(COURSE, "harness"))
        self.assertEqual(p.returncode, 1, rep)
        self.assertEqual(rep["verdict"], "fail")
        failed = sorted(n for n, o in self.outcomes(rep).items() if o != "passed")
        self.assertEqual(failed, ["test_solution.py::TestPunctuation::test_strips_punctuation",
                                  "test_solution.py::test_ignores_case"])
        self.assertIn('"event"', rep["result"]["stdout"]["text"])

    def test_syntax_error_fails_with_its_message(self):
        ws = self.make_dir("ws", {"solution.py": "def word_count(text)\n    return {}\n"})
        p, rep = self.run_tests(ws, os.path.join(COURSE, "harness"))
        self.assertEqual(p.returncode, 1, rep)
        self.assertEqual(rep["verdict"], "fail")
        self.assertEqual(len(rep["tests"]), 5)
        for t in rep["tests"]:
            self.assertEqual((t["outcome"], t.get("import_error")), ("error", True), t)
        # #32: the SyntaxError once, as pytest's collection error; the other
        # tests of the file point at it
        first = rep["tests"][0]
        self.assertIn("SyntaxError", first["message"])
        self.assertIn("/workspace/solution.py line 1", first["message"])
        for t in rep["tests"][1:]:
            self.assertIn("could not be imported (see %s)" % first["name"], t["message"])
        p = self.nsbox("test", "--workspace", ws, "--harness", os.path.join(COURSE, "harness"), env=ENV)
        out = p.stdout.decode()
        self.assertEqual(out.count("SyntaxError"), 1, out)
        self.assertIn("! ERROR collecting test_solution.py (5 tests could not run)\n    SyntaxError", out)
        self.assertIn("verdict: fail", out)

    def test_failing_test_shows_what_the_code_printed(self):
        """#32: pytest's "Captured stdout": under a failing test, what the
        code printed, escaped (an ESC is shown, not sent) and bounded."""
        harness = self.make_dir("h", {"test_p.py": (
            "from solution import f\n"
            "def test_loud():\n    assert f(2) == 5\n"
            "def test_flood():\n    print('y' * 50000)\n    assert False\n"
            "def test_quiet_pass():\n    assert f(1) == 2\n")})
        ws = self.make_dir("ws", {"solution.py": (
            "import sys\n"
            "def f(x):\n    print('debug: x =', x, '\\x1b[2J')\n"
            "    print('oops on stderr', file=sys.stderr)\n    return x * 2\n")})
        p = self.nsbox("test", "--workspace", ws, "--harness", harness, env=ENV)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 1, out + p.stderr.decode())
        loud = out[out.index("FAIL test_p.py::test_loud"):]
        self.assertIn("    ---- captured stdout ----\n    | debug: x = 2 \\x1b[2J\n", loud)
        self.assertIn("    ---- captured stderr ----\n    | oops on stderr\n", loud)
        self.assertNotIn("\x1b", out)
        self.assertNotIn("debug: x = 1", out)   # a passing test's output is not shown
        flood = out[out.index("FAIL test_p.py::test_flood"):]
        self.assertIn("more bytes: --json has them)", flood)
        self.assertLess(len(out), 12000)
        p, rep = self.run_tests(ws, harness)
        t = self.by_name(rep)
        self.assertIn("test_p.py::test_loud", t, json.dumps(rep)[-3000:])
        self.assertEqual(t["test_p.py::test_loud"]["stdout"], "debug: x = 2 \x1b[2J\n")
        self.assertEqual(t["test_p.py::test_quiet_pass"]["stderr"], "oops on stderr\n")

    def test_output_straight_to_fd_1_and_2_is_not_lost(self):
        """#32 follow-up: per test, the runner captures sys.stdout and sys.stderr
        (text, --json, JUnit <system-out>/<system-err>); what a failing test
        writes to fd 1/2 directly (os.write, a subprocess) cannot be
        attributed to it (harness/README.md says why), and was shown
        nowhere but --json's result: it is now under the failures as the
        run's own stream, and in JUnit as the suite's streams; never under
        another test."""
        harness = self.make_dir("h", {"test_fd.py": (
            "import os, subprocess, sys\n"
            "def test_a_quiet_pass():\n    print('PASS-PRINT')\n"
            "def test_writes_fds():\n"
            "    print('SYS-OUT')\n    print('SYS-ERR', file=sys.stderr)\n"
            "    os.write(1, b'FD1-RAW\\n')\n    os.write(2, b'FD2-RAW\\n')\n"
            "    subprocess.run([sys.executable, '-c', 'import sys; print(\"SUB-OUT\"); "
            "print(\"SUB-ERR\", file=sys.stderr)'])\n"
            "    assert False, 'boom'\n")})
        ws = self.make_dir("ws", {"solution.py": ""})
        out_dir = tempfile.mkdtemp(prefix="nsbox-fd-")
        try:
            os.chmod(out_dir, 0o777)
            junit = os.path.join(out_dir, "j.xml")
            p = self.nsbox("test", "--workspace", ws, "--harness", harness, "--junit", junit, env=ENV)
            out = p.stdout.decode()
            self.assertEqual(p.returncode, 1, out + p.stderr.decode())
            failing = out[out.index("FAIL test_fd.py::test_writes_fds"):]
            self.assertIn("    ---- captured stdout ----\n    | SYS-OUT\n", failing)
            self.assertIn("    ---- captured stderr ----\n    | SYS-ERR\n", failing)
            runs_out = failing[failing.index("---- the run's stdout (last lines): 16 bytes of it went to fd 1"):]
            runs_err = failing[failing.index("---- the run's stderr (last lines): 16 bytes of it went to fd 2"):]
            for word in ("FD1-RAW", "SUB-OUT"):
                self.assertIn("  | " + word + "\n", runs_out[:runs_out.index("---- the run's stderr")])
            for word in ("FD2-RAW", "SUB-ERR"):
                self.assertIn("  | " + word + "\n", runs_err)
            with open(junit, encoding="utf-8") as f:
                suite = ET.parse(f).getroot().find("testsuite")
            case = {c.get("name"): c for c in suite.findall("testcase")}["test_writes_fds"]
            self.assertEqual((case.find("system-out").text, case.find("system-err").text), ("SYS-OUT\n", "SYS-ERR\n"))
            self.assertIn("FD1-RAW\n", suite.find("system-out").text)
            self.assertIn("SUB-ERR\n", suite.find("system-err").text)
        finally:
            shutil.rmtree(out_dir)
        p, rep = self.run_tests(ws, harness)
        t = self.by_name(rep)
        self.assertEqual((t["test_fd.py::test_writes_fds"]["stdout"], t["test_fd.py::test_writes_fds"]["stderr"]),
                         ("SYS-OUT\n", "SYS-ERR\n"))
        self.assertEqual(t["test_fd.py::test_a_quiet_pass"]["stderr"], None)
        self.assertIn("FD1-RAW", rep["result"]["stdout"]["text"])
        self.assertIn("SUB-ERR", rep["result"]["stderr"]["text"])

    def test_fd_output_shown_when_another_test_closed_its_fd_1(self):
        """Review of the #32 follow-up: a test that closes (or redirects) fd 1 and then
        prints had those bytes counted as its own, though they reached no
        stream: the count then covered another test's os.write output,
        which the report no longer showed anywhere but --json."""
        harness = self.make_dir("h", {"test_fd.py": (
            "import os\n"
            "def test_a_writes_fd1():\n    os.write(1, b'FD1-RAW\\n')\n    assert False\n"
            "def test_b_closes_fd1():\n    os.close(1)\n    print('x' * 300)\n"
            "def test_c_silences_fd2():\n"
            "    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)\n    import sys\n    print('y' * 300, file=sys.stderr)\n"
            "def test_d_writes_fd2():\n    os.write(2, b'FD2-RAW\\n')\n    assert False\n")})
        ws = self.make_dir("ws", {"solution.py": ""})
        p = self.nsbox("test", "--workspace", ws, "--harness", harness, env=ENV)
        out = p.stdout.decode()
        self.assertEqual(p.returncode, 1, out + p.stderr.decode())
        self.assertIn("---- the run's stdout (last lines)", out)
        self.assertIn("  | FD1-RAW\n", out)
        self.assertIn("  | FD2-RAW\n", out)

    def test_harness_is_read_only_and_not_in_workspace(self):
        ws = self.make_dir("ws", {"solution.py": (
            "import os\n\n"
            "def try_write():\n"
            "    try:\n"
            "        with open('/harness/test_h.py', 'a') as f:\n"
            "            f.write('# tampered\\n')\n"
            "    except OSError as exc:\n"
            "        return exc.strerror\n"
            "    return 'written'\n\n"
            "def listing():\n"
            "    out = []\n"
            "    for root, dirs, files in os.walk('/workspace'):\n"
            "        out += [os.path.join(root, n) for n in dirs + files]\n"
            "    return sorted(out)\n")})
        h = self.make_dir("h", {"test_h.py": (
            "from solution import try_write, listing\n\n"
            "def test_write():\n    assert try_write() == 'Read-only file system'\n\n"
            "def test_listing():\n    assert listing() == ['/workspace/solution.py']\n")})
        with open(os.path.join(h, "test_h.py")) as f:
            original = f.read()
        p, rep = self.run_tests(ws, h)
        self.assertEqual(p.returncode, 0, rep)
        self.assertEqual(set(self.outcomes(rep).values()), {"passed"}, rep["tests"])
        with open(os.path.join(h, "test_h.py")) as f:
            self.assertEqual(f.read(), original)
        self.assertEqual(os.listdir(ws), ["solution.py"])

    def test_broken_harness_is_undetermined(self):
        ws = self.make_dir("ws", {"solution.py": "x = 1\n"})
        h = self.make_dir("h", {"test_b.py": "def test_x(:\n    pass\n"})
        p, rep = self.run_tests(ws, h)
        self.assertEqual(p.returncode, 3, rep)
        self.assertEqual(rep["verdict"], "undetermined")
        self.assertEqual(len(rep["collect_errors"]), 1)

    def test_killed_runner_is_not_a_pass(self):
        ws = self.make_dir("ws", {"solution.py": (
            "import os, signal\n\n"
            "def kill_runner():\n    os.kill(os.getppid(), signal.SIGKILL)\n")})
        h = self.make_dir("h", {"test_k.py": (
            "from solution import kill_runner\n\n"
            "def test_a():\n    pass\n\n"
            "def test_kill():\n    kill_runner()\n\n"
            "def test_z():\n    pass\n")})
        p, rep = self.run_tests(ws, h)
        self.assertNotEqual(rep["verdict"], "pass", rep)
        self.assertEqual(p.returncode, 3, rep)
        self.assertEqual(self.by_name(rep)["test_k.py::test_z"]["outcome"], "error")

    def test_code_that_skips_every_test_is_not_a_pass(self):
        ws = self.make_dir("ws", {"solution.py": (
            "import unittest\n\n"
            "def f(x):\n    raise unittest.SkipTest('later')\n")})
        h = self.make_dir("h", {"test_s.py": (
            "import unittest\nfrom solution import f\n\n"
            "def test_one():\n    assert f(1) == 2\n\n"
            "class T(unittest.TestCase):\n    def test_two(self):\n        self.assertEqual(f(2), 4)\n")})
        p, rep = self.run_tests(ws, h)
        self.assertEqual(set(self.outcomes(rep).values()), {"skipped"}, rep)
        self.assertEqual((rep["verdict"], p.returncode), ("undetermined", 3), rep)
        self.assertIn("every test was skipped", rep["reason"])

    def test_output_flood_is_a_fail(self):
        ws = self.make_dir("ws", {"solution.py": (
            "import sys\n\n"
            "def flood():\n    while True:\n        sys.stdout.write('x' * 65536)\n")})
        h = self.make_dir("h", {"test_f.py": (
            "from solution import flood\n\n"
            "def test_flood():\n    flood()\n")})
        p, rep = self.run_tests(ws, h, "--output-limit", "64K")
        self.assertEqual(p.returncode, 1, rep)
        self.assertEqual(rep["verdict"], "fail")
        self.assertEqual(rep["result"]["status"], "limit")


if __name__ == "__main__":
    unittest.main()
