"""Tests for harness/nsbox_test_runner.py (stdlib unittest).

    /usr/bin/python3 -m unittest discover -s tests/python

Each test writes a harness and a workspace into temporary directories, runs the
runner as a subprocess the way nsbox does (python3 -I -B, cwd = workspace, the
results channel a pipe on fd 3) and checks the JSON Lines it wrote there.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "harness", "nsbox_test_runner.py")
COURSE = os.path.join(ROOT, "examples", "course")
PYTHON = sys.executable or "/usr/bin/python3"


class Run:
    def __init__(self, proc, stdout, stderr, channel, elapsed):
        self.rc = proc.returncode
        self.stdout, self.stderr = stdout, stderr
        self.raw_channel = channel
        self.events = [json.loads(line) for line in channel.decode("ascii").splitlines()]
        self.elapsed = elapsed

    def tests(self):
        return {e["name"]: e for e in self.events if e["event"] == "test"}

    def outcomes(self):
        return {name: e["outcome"] for name, e in self.tests().items()}

    def done(self):
        done = [e for e in self.events if e["event"] == "done"]
        return done[0] if done else None


def run_runner(harness, workspace, budget=10, test_budget=None, channel=True, extra=()):
    argv = [PYTHON, "-I", "-B", RUNNER, "--harness", harness, "--workspace", workspace,
            "--budget", str(budget)]
    if test_budget is not None:
        argv += ["--test-budget", str(test_budget)]
    argv += list(extra)
    read_end, write_end = os.pipe()

    def put_channel_on_fd3():
        # the fd layout nsbox gives the runner: the channel's write end is fd 3
        os.dup2(write_end, 3)  # inheritable; the original pipe fds are close-on-exec

    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=workspace, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            close_fds=False,
                            preexec_fn=put_channel_on_fd3 if channel else None)
    os.close(write_end)
    chunks = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(read_end, 65536), b"")))
    reader.start()
    try:
        stdout, stderr = proc.communicate(timeout=budget + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(30)
    os.close(read_end)
    return Run(proc, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"),
               b"".join(chunks), time.monotonic() - started)


def snapshot(directory):
    state = {}
    for base, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(base, name)
            st = os.lstat(path)
            content = None
            if os.path.isfile(path):
                with open(path, "rb") as handle:
                    content = handle.read()
            state[os.path.relpath(path, directory)] = (st.st_mode, st.st_mtime_ns, content)
    return state


class RunnerTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="nsbox-runner-test-")
        self.harness = os.path.join(self.tmp, "harness")
        self.workspace = os.path.join(self.tmp, "workspace")
        os.mkdir(self.harness)
        os.mkdir(self.workspace)
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, directory, name, text):
        with open(os.path.join(directory, name), "w") as handle:
            handle.write(textwrap.dedent(text))

    def run_here(self, **kwargs):
        return run_runner(self.harness, self.workspace, **kwargs)

    def assertCleanRun(self, run):
        """The channel ends with a `done` that accounts for every test event."""
        self.assertEqual(run.events[0]["event"], "start", run.raw_channel)
        self.assertEqual(run.events[0]["protocol"], 1)
        done = run.done()
        self.assertIsNotNone(done, run.stderr)
        self.assertEqual(run.events[-1], done)
        tests = [e for e in run.events if e["event"] == "test"]
        self.assertEqual(done["collected"], len(tests))
        self.assertEqual([e["name"] for e in tests], run.events[0]["tests"])
        for event in tests:
            self.assertEqual(set(event) - {"import_error"}, {"event", "name", "outcome", "message", "traceback",
                                                             "duration_ms", "stdout", "stderr", "stdout_bytes",
                                                             "stderr_bytes"})


ARITH_TESTS = """
    import unittest
    from solution import add, divide

    def test_add_small():
        assert add(2, 3) == 5

    def test_add_negative():
        assert add(-2, -3) == -5, "negative numbers"

    def test_divide():
        assert divide(7, 2) == 3.5

    class TestMore(unittest.TestCase):
        def test_add_zero(self):
            self.assertEqual(add(0, 0), 0)

        def test_divide_by_one(self):
            self.assertEqual(divide(9, 1), 9)
"""

ARITH_OK = """
    def add(a, b):
        return a + b

    def divide(a, b):
        return a / b
"""


class TestOutcomes(RunnerTestCase):
    def test_correct_solution_passes_everything(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", ARITH_OK)
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.rc, 0, run.stderr)
        self.assertEqual(set(run.outcomes().values()), {"passed"})
        self.assertEqual(list(run.outcomes()), [
            "test_arith.py::test_add_small", "test_arith.py::test_add_negative",
            "test_arith.py::test_divide", "test_arith.py::TestMore::test_add_zero",
            "test_arith.py::TestMore::test_divide_by_one"])
        self.assertEqual(run.done()["counts"], {"passed": 5, "failed": 0, "error": 0, "skipped": 0})

    def test_wrong_solution_fails_exactly_the_right_tests_with_both_values(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", """
            def add(a, b):
                return a + b + 1 if a > 0 else a + b

            def divide(a, b):
                return a // b
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.rc, 1)
        self.assertEqual(run.outcomes(), {
            "test_arith.py::test_add_small": "failed",
            "test_arith.py::test_add_negative": "passed",
            "test_arith.py::test_divide": "failed",
            "test_arith.py::TestMore::test_add_zero": "passed",
            "test_arith.py::TestMore::test_divide_by_one": "passed"})
        tests = run.tests()
        self.assertEqual(tests["test_arith.py::test_add_small"]["message"].splitlines()[0],
                         "assert 6 == 5")
        self.assertIn("where 6 = add(2, 3)", tests["test_arith.py::test_add_small"]["message"])
        self.assertEqual(tests["test_arith.py::test_divide"]["message"].splitlines()[0],
                         "assert 3 == 3.5")

    def test_user_message_and_other_comparisons(self):
        self.write(self.harness, "test_msgs.py", """
            from solution import items

            def test_with_message():
                assert len(items()) == 3, "expected three items"

            def test_membership():
                assert 4 in items()

            def test_truthiness():
                assert items() == [] or False

            def test_chained():
                assert 0 < len(items()) < 2

            def test_long_values_are_clipped():
                assert "x" * 1000 == "x" * 999 + "y"
        """)
        self.write(self.workspace, "solution.py", """
            def items():
                return [1, 2]
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        messages = {n.split("::")[-1]: e["message"] for n, e in run.tests().items()}
        self.assertEqual(set(run.outcomes().values()), {"failed"})
        self.assertEqual(messages["test_with_message"].splitlines()[:2],
                         ["expected three items", "assert 2 == 3"])
        self.assertEqual(messages["test_membership"].splitlines()[0], "assert 4 in [1, 2]")
        self.assertTrue(messages["test_truthiness"].startswith("assert items() == [] or False"))
        self.assertTrue(messages["test_chained"].startswith("assert 0 < len(items()) < 2"))
        first = messages["test_long_values_are_clipped"].splitlines()[0]
        self.assertLess(len(first), 2 * 200 + 20)
        self.assertIn("first difference at index 999", messages["test_long_values_are_clipped"])

    def test_errors_skips_and_unittest_outcomes(self):
        self.write(self.harness, "test_kinds.py", """
            import unittest
            from solution import ratio

            def test_error_is_not_a_failure():
                ratio(1, 0)

            def test_skip_in_function():
                raise unittest.SkipTest("not today")

            def test_sys_exit_is_an_error():
                import sys
                sys.exit(0)

            def test_fixture_arguments_are_refused(tmp_path):
                pass

            class TestCaseKinds(unittest.TestCase):
                def test_fails(self):
                    self.assertEqual(ratio(1, 2), 0.25)

                def test_errors(self):
                    {}["missing"]

                @unittest.skip("skipped by decorator")
                def test_skipped(self):
                    pass

                def test_subtests(self):
                    for n in (1, 2, 4):
                        with self.subTest(n=n):
                            self.assertEqual(ratio(n, n), 1)

                @unittest.expectedFailure
                def test_expected_failure(self):
                    self.assertEqual(1, 2)
        """)
        self.write(self.workspace, "solution.py", """
            def ratio(a, b):
                return a / b
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.rc, 1)
        tests = {n.split("::")[-1]: e for n, e in run.tests().items()}
        outcomes = {n: e["outcome"] for n, e in tests.items()}
        self.assertEqual(outcomes, {
            "test_error_is_not_a_failure": "error", "test_skip_in_function": "skipped",
            "test_sys_exit_is_an_error": "error", "test_fixture_arguments_are_refused": "error",
            "test_fails": "failed", "test_errors": "error", "test_skipped": "skipped",
            "test_subtests": "passed", "test_expected_failure": "passed"})
        self.assertEqual(tests["test_error_is_not_a_failure"]["message"],
                         "ZeroDivisionError: division by zero")
        self.assertEqual(tests["test_skip_in_function"]["message"], "not today")
        self.assertEqual(tests["test_sys_exit_is_an_error"]["message"], "SystemExit: 0")
        self.assertIn("fixtures are not supported", tests["test_fixture_arguments_are_refused"]["message"])
        self.assertEqual(tests["test_fails"]["message"], "0.5 != 0.25")
        self.assertEqual(tests["test_errors"]["message"], "KeyError: 'missing'")
        self.assertEqual(tests["test_skipped"]["message"], "skipped by decorator")

    def test_tests_are_isolated_from_each_other(self):
        self.write(self.harness, "test_state.py", """
            import solution

            def test_first_mutates_module_state():
                solution.STATE.append(1)
                assert solution.STATE == [1]

            def test_second_sees_fresh_state():
                solution.STATE.append(2)
                assert solution.STATE == [2]
        """)
        self.write(self.workspace, "solution.py", "STATE = []\n")
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(set(run.outcomes().values()), {"passed"})


class TestLearnerMisbehaviour(RunnerTestCase):
    def test_infinite_loop_times_out_and_the_others_still_run(self):
        self.write(self.harness, "test_loop.py", """
            from solution import spin, one

            def test_before():
                assert one() == 1

            def test_spins():
                spin()

            def test_after():
                assert one() == 1
        """)
        self.write(self.workspace, "solution.py", """
            import os

            def one():
                return 1

            def spin():
                if os.fork() == 0:   # a grandchild in the same process group spins too
                    while True:
                        pass
                while True:
                    pass
        """)
        run = self.run_here(budget=6, test_budget=1)
        self.assertCleanRun(run)
        tests = run.tests()
        self.assertEqual(run.outcomes(), {"test_loop.py::test_before": "passed",
                                          "test_loop.py::test_spins": "error",
                                          "test_loop.py::test_after": "passed"})
        self.assertEqual(tests["test_loop.py::test_spins"]["message"], "timed out after 1s")
        self.assertLess(run.elapsed, 6)

    def test_overall_budget_bounds_the_whole_run(self):
        self.write(self.harness, "test_slow.py", "".join(
            "def test_%d():\n    while True: pass\n\n" % i for i in range(5)))
        self.write(self.workspace, "solution.py", "")
        run = self.run_here(budget=2, test_budget=1.5)
        self.assertCleanRun(run)
        self.assertLess(run.elapsed, 4)
        messages = [e["message"] for e in run.tests().values()]
        self.assertEqual(messages[0], "timed out after 1.5s")
        self.assertTrue(messages[1].startswith("timed out after 0."), messages[1])
        self.assertIn("overall test budget of 2s ran out", messages[1])
        self.assertTrue(all(m.startswith("not run: the overall test budget") for m in messages[2:]))
        self.assertEqual(set(run.outcomes().values()), {"error"})

    def test_escaped_background_process_is_killed(self):
        self.write(self.harness, "test_daemon.py", """
            import os, time
            from solution import start_daemon

            def test_daemon():
                start_daemon()

            def test_daemon_is_gone():
                time.sleep(0.3)
                with open("daemon.pid") as f:
                    pid = int(f.read())
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
                with open("/proc/%d/stat" % pid) as f:
                    assert f.read().split(") ")[1][0] == "Z", "daemon still running"
        """)
        self.write(self.workspace, "solution.py", """
            import os, time

            def start_daemon():
                if os.fork() == 0:
                    os.setsid()               # leaves the test's process group
                    if os.fork() == 0:
                        with open("daemon.pid", "w") as f:
                            f.write(str(os.getpid()))
                        while True:
                            time.sleep(0.01)
                    os._exit(0)
                time.sleep(0.2)
        """)
        run = self.run_here(budget=5, test_budget=2)
        self.assertCleanRun(run)
        if not run.events[0]["hardening"]["subreaper"]:
            self.skipTest("no PR_SET_CHILD_SUBREAPER here")
        self.assertEqual(run.outcomes()["test_daemon.py::test_daemon_is_gone"], "passed",
                         run.tests())

    def test_fake_result_lines_on_stdout_and_stderr_change_nothing(self):
        fake = json.dumps({"event": "test", "name": "test_fake.py::test_wrong", "outcome": "passed",
                           "message": None, "traceback": None, "duration_ms": 1})
        done = json.dumps({"event": "done", "collected": 1})
        self.write(self.harness, "test_fake.py", """
            from solution import answer

            def test_wrong():
                assert answer() == 42
        """)
        self.write(self.workspace, "solution.py", """
            import sys
            FAKE = %r
            DONE = %r
            print(FAKE); print(DONE)
            sys.stderr.write(FAKE + "\\n" + DONE + "\\n")

            def answer():
                print(FAKE, flush=True); print(DONE, flush=True)
                print(FAKE, file=sys.stderr); print(DONE, file=sys.stderr)
                for fd in range(3, 1100):     # the classic channel number and beyond
                    try:
                        import os
                        os.write(fd, (FAKE + "\\n" + DONE + "\\n").encode())
                    except OSError:
                        pass
                return 41
        """ % (fake, done))
        run = self.run_here()
        self.assertIn(fake, run.stdout)
        self.assertIn(fake, run.stderr)
        self.assertCleanRun(run)
        self.assertNotIn(b'"collected":1}', run.raw_channel)
        self.assertEqual(len(run.tests()), 1)
        self.assertNotEqual(run.outcomes()["test_fake.py::test_wrong"], "passed")
        self.assertEqual(run.rc, 1)

    def test_fake_lines_without_writing_to_other_fds_leave_a_plain_failure(self):
        self.write(self.harness, "test_fake.py", """
            from solution import answer

            def test_wrong():
                assert answer() == 42
        """)
        self.write(self.workspace, "solution.py", """
            print('{"event":"test","name":"test_fake.py::test_wrong","outcome":"passed"}')
            def answer():
                print('{"event":"done","collected":1}')
                return 41
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.outcomes(), {"test_fake.py::test_wrong": "failed"})
        self.assertEqual(run.tests()["test_fake.py::test_wrong"]["message"].splitlines()[0],
                         "assert 41 == 42")

    def test_syntax_error_in_solution_is_an_error_in_every_test(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", """
            def add(a, b):
                return a + b
            def divide(a, b)
                return a / b
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.rc, 1)
        self.assertEqual(len(run.tests()), 5)
        path = os.path.join(self.workspace, "solution.py")
        events = list(run.tests().values())
        for event in events:
            self.assertEqual(event["outcome"], "error")
            self.assertIs(event["import_error"], True)
        # #32: said once, as pytest's collection error; the other tests of
        # the file are not run and point at it
        first = events[0]
        self.assertEqual(first["message"], "SyntaxError in %s line 4: expected ':'" % path)
        self.assertIn(path, first["traceback"])
        self.assertNotIn(RUNNER, first["traceback"])
        for event in events[1:]:
            self.assertEqual(event["message"], "not run: test_arith.py could not be imported (see %s)"
                             % first["name"])
            self.assertIsNone(event["traceback"])

    def test_what_a_test_printed_is_in_its_event(self):
        """#32: pytest's "Captured stdout": each test's own output, bounded,
        in its event; still passed on to the runner's streams."""
        self.write(self.harness, "test_print.py", """
            import sys
            def test_a():
                print("hello from a")
                sys.stderr.write("warn a\\n")
                assert False
            def test_b():
                print("x" * 20000)
            def test_c():
                pass
        """)
        run = self.run_here()
        tests = run.tests()
        a, b, c = (tests["test_print.py::test_%s" % n] for n in "abc")
        self.assertEqual((a["stdout"], a["stderr"]), ("hello from a\n", "warn a\n"))
        self.assertTrue(b["stdout"].startswith("x" * 8192 + "\n... (11809 more bytes not kept)"), b["stdout"][-80:])
        self.assertEqual((c["stdout"], c["stderr"]), (None, None))
        self.assertIn("hello from a", run.stdout)
        # every byte its sys streams wrote, kept or not (#32 follow-up: nsbox test
        # tells the run's fd-level output apart with them)
        self.assertEqual([(t["stdout_bytes"], t["stderr_bytes"]) for t in (a, b, c)], [(13, 7), (20001, 0), (0, 0)])

    def test_missing_solution_module(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        run = self.run_here()
        self.assertCleanRun(run)
        first = list(run.tests().values())[0]
        self.assertEqual(first["outcome"], "error")
        self.assertEqual(first["message"], "ModuleNotFoundError: No module named 'solution' "
                                           "(while importing test_arith.py)")
        for event in list(run.tests().values())[1:]:
            self.assertEqual((event["outcome"], event["import_error"]), ("error", True))
            self.assertTrue(event["message"].startswith("not run: test_arith.py could not be imported"))

    def test_exception_at_import_names_the_learner_line(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", "x = 1\ny = x / 0\n")
        run = self.run_here()
        path = os.path.join(self.workspace, "solution.py")
        self.assertEqual(list(run.tests().values())[0]["message"],
                         "ZeroDivisionError: division by zero (while importing test_arith.py, at %s line 2)" % path)

    def test_os_exit_at_import_is_an_error(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", "import os\nos._exit(0)\n")
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.rc, 1)
        for event in run.tests().values():
            self.assertEqual(event["outcome"], "error")
            self.assertIn("exited with status 0", event["message"])
            self.assertIn("before reporting a result", event["message"])

    def test_crash_by_signal_is_an_error(self):
        self.write(self.harness, "test_crash.py", """
            from solution import crash

            def test_crash():
                crash()
        """)
        self.write(self.workspace, "solution.py", """
            import os, signal

            def crash():
                os.kill(os.getpid(), signal.SIGSEGV)
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        event = run.tests()["test_crash.py::test_crash"]
        self.assertEqual(event["outcome"], "error")
        self.assertIn("SIGSEGV", event["message"])

    def test_traceback_shows_learner_frames_not_the_runner(self):
        self.write(self.harness, "test_deep.py", """
            from solution import outer

            def test_deep():
                assert outer(3) == 3
        """)
        self.write(self.workspace, "solution.py", """
            def inner(x):
                return {}[x]

            def outer(x):
                return inner(x)
        """)
        run = self.run_here()
        event = run.tests()["test_deep.py::test_deep"]
        self.assertEqual(event["outcome"], "error")
        self.assertEqual(event["message"], "KeyError: 3")
        trace = event["traceback"]
        self.assertTrue(trace.startswith("Traceback (most recent call last):\n  File \"%s\""
                                         % os.path.join(self.harness, "test_deep.py")), trace)
        self.assertIn(os.path.join(self.workspace, "solution.py"), trace)
        self.assertIn("in inner", trace)
        self.assertNotIn("nsbox_test_runner", trace)
        self.assertNotIn("nsbox_runner", trace)
        self.assertNotIn("importlib", trace)

    def test_workspace_modules_named_like_the_runners_parts_are_the_workspaces(self):
        # The runner is a package (harness/nsbox_runner): a learner's main.py
        # or child.py is imported as theirs, never as a part of the runner.
        self.write(self.harness, "test_names.py",
                   "import base, child, main\n\n"
                   "def test_names():\n"
                   "    assert (base.WHO, child.WHO, main.WHO) == ('learner',) * 3\n")
        for name in ("base", "child", "main"):
            self.write(self.workspace, name + ".py", "WHO = 'learner'\n")
        run = self.run_here()
        self.assertEqual(run.outcomes(), {"test_names.py::test_names": "passed"}, run.stderr)

    def test_workspace_is_not_modified(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", ARITH_OK)
        self.write(self.workspace, "helper.py", "VALUE = 1\n")
        before = snapshot(self.workspace)
        run = self.run_here()
        self.assertEqual(run.rc, 0)
        self.assertEqual(snapshot(self.workspace), before)  # no __pycache__, nothing rewritten

    def test_workspace_cannot_shadow_harness_helpers(self):
        self.write(self.harness, "course_helpers.py", "def expected():\n    return 5\n")
        self.write(self.harness, "test_helpers.py", """
            from course_helpers import expected
            from solution import add

            def test_add():
                assert add(2, 3) == expected()
        """)
        self.write(self.workspace, "solution.py", ARITH_OK)
        self.write(self.workspace, "course_helpers.py", "def expected():\n    return 99\n")
        run = self.run_here()
        self.assertEqual(run.outcomes(), {"test_helpers.py::test_add": "passed"})


class TestDocumentedLimits(RunnerTestCase):
    """What harness/README.md says learner code can still do: keep the docs honest."""

    def test_learner_can_forge_only_its_own_test(self):
        self.write(self.harness, "test_forge.py", """
            from solution import answer, other

            def test_forged():
                assert answer() == 42

            def test_not_forged():
                assert other() == 42
        """)
        self.write(self.workspace, "solution.py", """
            import os

            def answer():
                # find this test's report pipe and write a report for it
                for name in os.listdir("/proc/self/fd"):
                    fd = int(name)
                    try:
                        if fd > 2 and os.readlink("/proc/self/fd/%d" % fd).startswith("pipe:"):
                            os.write(fd, b'{"outcome": "passed", "message": null, "traceback": null}\\n')
                            os._exit(0)
                    except OSError:
                        pass
                return 0

            def other():
                return 0
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.outcomes(), {"test_forge.py::test_forged": "passed",
                                          "test_forge.py::test_not_forged": "failed"})

    def test_forged_report_followed_by_the_real_one_is_an_error(self):
        self.write(self.harness, "test_forge.py", """
            from solution import answer

            def test_forged():
                assert answer() == 42
        """)
        self.write(self.workspace, "solution.py", """
            import os

            def answer():
                for name in os.listdir("/proc/self/fd"):
                    fd = int(name)
                    try:
                        if fd > 2 and os.readlink("/proc/self/fd/%d" % fd).startswith("pipe:"):
                            os.write(fd, b'{"outcome": "passed", "message": null, "traceback": null}\\n')
                    except OSError:
                        pass
                return 0
        """)
        run = self.run_here()
        self.assertCleanRun(run)
        event = run.tests()["test_forge.py::test_forged"]
        self.assertEqual(event["outcome"], "error")
        self.assertIn("malformed result report", event["message"])

    def test_killing_the_runner_leaves_no_done_event(self):
        self.write(self.harness, "test_kill.py", """
            from solution import answer

            def test_a():
                assert answer() == 1

            def test_b():
                assert answer() == 2
        """)
        self.write(self.workspace, "solution.py", """
            import os, signal
            CALLS = "calls"

            def answer():
                if os.path.exists(CALLS):
                    os.kill(os.getppid(), signal.SIGKILL)
                open(CALLS, "w").close()
                return 1
        """)
        run = self.run_here()
        self.assertEqual(run.rc, -9)
        self.assertIsNone(run.done())
        self.assertEqual(run.outcomes(), {"test_kill.py::test_a": "passed"})

    def test_hidden_tests_are_readable_by_the_code_under_test(self):
        self.write(self.harness, "test_peek.py", """
            from solution import secret

            def test_peek():
                assert "SECRET-EXPECTED-VALUE" in secret()
        """)
        self.write(self.workspace, "solution.py", """
            import sys

            def secret():
                with open(sys.modules["test_peek"].__file__) as f:
                    return f.read()
        """)
        run = self.run_here()
        self.assertEqual(run.outcomes(), {"test_peek.py::test_peek": "passed"})

    def test_huge_messages_are_clipped(self):
        self.write(self.harness, "test_big.py", """
            from solution import big

            def test_big():
                assert big() == 0, "m" * 1000000

            def test_big_error():
                raise ValueError("v" * 1000000)
        """)
        self.write(self.workspace, "solution.py", "def big():\n    return list(range(100000))\n")
        run = self.run_here()
        self.assertCleanRun(run)
        for event in run.tests().values():
            self.assertIn(event["outcome"], ("failed", "error"))
            self.assertLess(len(event["message"]), 5000)
            self.assertLess(len(event["traceback"]), 13000)
        self.assertLess(len(run.raw_channel), 100000)


class TestRunnerItself(RunnerTestCase):
    def test_channel_absent_exits_2(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", ARITH_OK)
        argv = [PYTHON, "-I", "-B", RUNNER, "--harness", self.harness, "--workspace", self.workspace,
                "--channel-fd", "987"]
        proc = subprocess.run(argv, cwd=self.workspace, capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("results channel (fd 987) is not open", proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_broken_harness_file_is_a_collect_error(self):
        self.write(self.harness, "test_broken.py", "def test_x(:\n    pass\n")
        self.write(self.harness, "test_fine.py", "def test_ok():\n    assert True\n")
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.rc, 3)
        errors = [e for e in run.events if e["event"] == "collect_error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["file"], "test_broken.py")
        self.assertTrue(errors[0]["message"].startswith("SyntaxError in "))
        self.assertEqual(run.done()["collect_errors"], 1)
        self.assertEqual(run.outcomes(), {"test_fine.py::test_ok": "passed"})

    def test_no_tests_exits_3(self):
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.rc, 3)
        self.assertEqual(run.done()["collected"], 0)

    def test_discovery_is_static_and_ordered(self):
        self.write(self.harness, "test_b.py", """
            import unittest
            raise RuntimeError("importing me must not happen in the parent")

            def test_z(): pass
            def helper(): pass
            def test_a(): pass

            class Base(unittest.TestCase):
                def test_base(self): pass

            class Derived(Base):
                def test_derived(self): pass

            class NotATestCase:
                def test_ignored(self): pass
        """)
        self.write(self.harness, "test_a.py", "def test_only():\n    pass\n")
        self.write(self.harness, "helpers.py", "def test_not_collected():\n    pass\n")
        run = self.run_here()
        self.assertCleanRun(run)
        self.assertEqual(run.events[0]["tests"], [
            "test_a.py::test_only", "test_b.py::test_z", "test_b.py::test_a",
            "test_b.py::Base::test_base", "test_b.py::Derived::test_derived",
            "test_b.py::Derived::test_base"])
        self.assertEqual(run.outcomes()["test_a.py::test_only"], "passed")
        for name, event in run.tests().items():
            if name.startswith("test_b.py"):
                self.assertEqual(event["outcome"], "error")
                # the import error once (#32), the rest point at it
                self.assertIn("RuntimeError: importing me must not happen" if name == "test_b.py::test_z"
                              else "could not be imported (see test_b.py::test_z)", event["message"])

    def test_summary_on_stderr(self):
        self.write(self.harness, "test_arith.py", ARITH_TESTS)
        self.write(self.workspace, "solution.py", ARITH_OK.replace("a / b", "a // b"))
        run = self.run_here(extra=["--summary"])
        self.assertIn("PASS  test_arith.py::test_add_small", run.stderr)
        self.assertIn("FAIL  test_arith.py::test_divide", run.stderr)
        self.assertIn("== 4 passed, 1 failed in ", run.stderr)
        self.assertEqual(run.stdout, "")


class TestExampleCourse(unittest.TestCase):
    def run_course(self, workspace):
        # work on a copy so the checked-in example is never touched
        tmp = tempfile.mkdtemp(prefix="nsbox-course-")
        self.addCleanup(shutil.rmtree, tmp, True)
        copy = os.path.join(tmp, "workspace")
        shutil.copytree(os.path.join(COURSE, workspace), copy)
        return run_runner(os.path.join(COURSE, "harness"), copy)

    def test_correct_solution(self):
        run = self.run_course("workspace")
        self.assertEqual(run.rc, 0, run.raw_channel)
        self.assertEqual(len(run.tests()), 5)
        self.assertEqual(set(run.outcomes().values()), {"passed"})

    def test_wrong_solution(self):
        run = self.run_course("workspace-wrong")
        self.assertEqual(run.rc, 1)
        failed = {n: e["message"] for n, e in run.tests().items() if e["outcome"] != "passed"}
        self.assertEqual(sorted(failed), ["test_solution.py::TestPunctuation::test_strips_punctuation",
                                          "test_solution.py::test_ignores_case"])
        self.assertIn("assert {'Go': 1, 'go': 1, 'GO': 1} == {'go': 3}",
                      failed["test_solution.py::test_ignores_case"])
        self.assertIn("{'Hello,': 1, 'world!': 1, 'Hello.': 1} != {'hello': 2, 'world': 1}",
                      failed["test_solution.py::TestPunctuation::test_strips_punctuation"])

    def test_hello_example(self):
        proc = subprocess.run([PYTHON, "-I", "-B", os.path.join(ROOT, "examples", "hello.py")],
                              capture_output=True, text=True, timeout=30)
        self.assertEqual(proc.returncode, 0)
        self.assertIn("primes below 50: 2 3 5 7 11 13 17 19 23 29 31 37 41 43 47", proc.stdout)


if __name__ == "__main__":
    unittest.main()
