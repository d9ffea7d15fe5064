"""Tests of nsbox_client against the built nsbox ($NSBOX), stdlib only."""
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import nsbox_client as nc  # noqa: E402

NSBOX = os.environ.get("NSBOX", "nsbox")
MUST_RUN = os.environ.get("NSBOX_TESTS_MUST_RUN") == "1"


def userns_available():
    try:
        return subprocess.run(["unshare", "--user", "--map-current-user", "true"],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _processes_with(needle):
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if needle.encode() in f.read():
                    found.append(int(pid))
        except (OSError, ValueError):
            pass
    return found


def _children_named(name):
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % pid) as f:
                comm_end = f.read()
            comm, rest = comm_end.split("(", 1)[1].rsplit(")", 1)
            if int(rest.split()[1]) == os.getpid() and comm == name:
                found.append(int(pid))
        except (OSError, ValueError, IndexError):
            pass
    return found


class WithNsbox(unittest.TestCase):
    def setUp(self):
        if not userns_available():
            if MUST_RUN:
                self.fail("unprivileged user namespaces are unavailable (NSBOX_TESTS_MUST_RUN=1)")
            raise unittest.SkipTest("unprivileged user namespaces are unavailable")
        self.client = nc.Client(NSBOX)


class RunCode(WithNsbox):
    def test_pass_with_tests(self):
        r = self.client.run_code("def f(x):\n    return x + 1\nprint('hi')", test_code="assert f(1) == 2")
        self.assertIsInstance(r, nc.RunResult)
        self.assertEqual((r.status, r.label, r.return_code, r.stdout), ("pass", 1, 0, "hi\n"))
        self.assertGreater(r.elapsed_ms, 0)
        self.assertEqual(set(r.as_dict()), {"status", "stdout", "stderr", "return_code", "elapsed_ms", "label"})

    def test_failing_test_is_fail_not_exception(self):
        r = self.client.run_code("def f(x):\n    return x", test_code="assert f(1) == 2")
        self.assertEqual((r.status, r.label, r.return_code), ("fail", 0, 1))
        self.assertIn("AssertionError", r.stderr)

    def test_indented_snippets_are_dedented(self):
        r = self.client.run_code("    def f():\n        return 3\n", test_code="    assert f() == 3\n    print('ok')")
        self.assertEqual((r.status, r.stdout), ("pass", "ok\n"))
        r = nc.Client(NSBOX, dedent=False).run_code("    x = 1")
        self.assertEqual(r.status, "fail")
        self.assertIn("IndentationError", r.stderr)

    def test_extra_args_are_batch_flags(self):
        r = nc.Client(NSBOX, extra_args=["--wall-time", "300ms"]).run_code("import time; time.sleep(2)", timeout=None)
        self.assertEqual(r.status, "timeout")

    def test_timeout(self):
        r = self.client.run_code("while True:\n    pass", timeout=0.5)
        self.assertEqual((r.status, r.label, r.return_code, r.limit), ("timeout", 0, None, "wall_time"))

    def test_signal_is_fail_with_negative_code(self):
        r = self.client.run_code("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
        self.assertEqual((r.status, r.return_code), ("fail", -11))

    def test_sandbox_cannot_reach_the_host(self):
        secret = tempfile.NamedTemporaryFile(dir="/var/tmp", delete=False)
        secret.close()
        try:
            r = self.client.run_code("import os\nprint(os.path.exists(%r))" % secret.name)
            self.assertEqual(r.stdout, "False\n")
        finally:
            os.unlink(secret.name)

    def test_sandbox_error_is_an_error_result(self):
        env = dict(os.environ, NSBOX_TEST_FAIL_STEP="seccomp")
        old = os.environ.copy()
        os.environ.update(env)
        try:
            r = self.client.run_code("print(1)")
        finally:
            os.environ.clear()
            os.environ.update(old)
        self.assertEqual((r.status, r.label), ("error", 0))
        self.assertEqual(r.error["stage"], "seccomp")

    def test_limits(self):
        r = self.client.run_code("x = bytearray(300 << 20)", limits={"memory": "64M"})
        self.assertEqual(r.status, "fail")


class Batch(WithNsbox):
    def test_batch_run_keeps_input_order(self):
        pairs = [("print(%d)" % i, None) for i in range(6)] + [("x = 1", "assert x == 2")]
        out = self.client.batch_run(pairs, jobs=2)
        self.assertEqual([r.stdout for r in out[:6]], ["%d\n" % i for i in range(6)])
        self.assertEqual(out[6].status, "fail")
        self.assertEqual([r.id for r in out], list(range(7)))

    def test_batch_stream_yields_every_job(self):
        got = list(self.client.batch_stream(("print(%d)" % i for i in range(4)), jobs=2))
        self.assertEqual(sorted(r.id for r in got), [0, 1, 2, 3])

    def test_stopping_early_cancels_the_batch(self):
        """A caller that stops iterating batch_stream: nsbox is stopped, every
        sandbox killed, nothing left behind. It hung in close() while nsbox
        sat blocked writing a line nobody read."""
        marker = "nsbox-client-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        sleeper = "import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(120)', %r])" % marker
        pairs = [(sleeper, None)] * 2 + [("print('y' * 300000)", None)] * 8
        stream = self.client.batch_stream(pairs, jobs=3, timeout=120)
        first = next(stream)
        self.assertEqual(first.status, "pass")
        for _ in range(600):
            if len(_processes_with(marker)) == 2:
                break
            time.sleep(0.05)
        self.assertEqual(len(_processes_with(marker)), 2, "both sleepers should be running")
        closer = threading.Thread(target=stream.close, daemon=True)
        closer.start()
        closer.join(120)   # a hang guard, not a timing: close() must return at all
        self.assertFalse(closer.is_alive(), "batch_stream.close() hung")
        self.assertEqual(_processes_with(marker), [])
        self.assertEqual(_children_named("nsbox"), [])

    def test_bad_pair_raises_type_error(self):
        with self.assertRaises(TypeError):
            self.client.batch_run([("print(1)", None), (42, None)])

    def test_code_that_is_not_unicode_raises_value_error(self):
        """A lone surrogate cannot be a file's text, nor a JSON line nsbox
        reads: it gave an error line without id, and batch_run a TypeError
        from comparing None with ints, or a confusing NsboxError."""
        for pairs in ([("print(1)", None), ("print('\ud800')", None)], [("x = 1", "assert '\udcff'")]):
            with self.assertRaises(ValueError) as cm:
                self.client.batch_run(pairs)
            self.assertIn("not valid Unicode", str(cm.exception))


class JudgeDoctor(WithNsbox):
    def test_judge(self):
        spec = {"program": {"source": "import sys\nprint(int(sys.argv[1]) + 1)"},
                "cases": [{"name": "inc", "args": ["1"], "expect": {"stdout": {"equals": "2\n"}}},
                          {"name": "bad", "args": ["1"], "expect": {"stdout": {"equals": "3\n"}}}]}
        v = self.client.judge(spec)
        self.assertEqual(v.verdict, "fail")
        self.assertFalse(v.passed)
        self.assertEqual([c.verdict for c in v.cases], ["pass", "fail"])

    def test_judge_score_counts_weights(self):
        """judge --json's counts, score and case weights (#32) as typed
        attributes, the partial credit a grader or a reward reads; from
        judge and from a batch's JudgeJob alike."""
        spec = {"program": {"source": "import sys\nprint(int(sys.argv[1]) + 1)"},
                "cases": [{"name": "inc", "args": ["1"], "weight": 3, "expect": {"stdout": {"equals": "2\n"}}},
                          {"name": "bad", "args": ["1"], "expect": {"stdout": {"equals": "3\n"}}}]}
        for v in (self.client.judge(spec), self.client.batch_run([nc.JudgeJob(spec)])[0]):
            self.assertEqual(v.score, 0.75)
            self.assertEqual(v.counts, {"pass": 1, "fail": 1, "undetermined": 0, "not_run": 0})
            self.assertEqual([c.weight for c in v.cases], [3.0, 1.0])
        # an nsbox before #32 wrote neither: no score, no counts, weight 1
        old = nc.Verdict.from_json({"verdict": "pass", "cases": [{"name": "a", "verdict": "pass", "reason": ""}]})
        self.assertEqual((old.score, old.counts, old.cases[0].weight), (None, {}, 1.0))

    def test_bad_spec_raises_nsbox_error(self):
        # What the client sees itself is a ValueError before nsbox starts
        # (test_validate.py); what only nsbox checks is its refusal.
        with self.assertRaises(nc.NsboxError) as cm:
            self.client.judge({"program": {"source": "x"},
                               "cases": [{"name": "a", "expect": {"stdout": {"startswith": "x"}}}]})
        self.assertNotIsInstance(cm.exception, nc.NsboxUnavailable)
        self.assertEqual(cm.exception.returncode, 125)
        self.assertIn("startswith", str(cm.exception))

    def test_doctor(self):
        d = self.client.doctor()
        self.assertIsInstance(d.ready, bool)
        self.assertIn("user_ns", [c.name for c in d.checks])


class Broken(unittest.TestCase):
    """No sandbox needed: nsbox missing or misbehaving."""

    def test_missing_binary(self):
        c = nc.Client("/nonexistent/nsbox")
        spec = {"program": {"source": "pass"}, "cases": [{"name": "a"}]}
        for call in (lambda: c.run_code("print(1)"), c.doctor, lambda: c.judge(spec)):
            with self.assertRaises(nc.NsboxUnavailable):
                call()

    def fake(self, body):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "nsbox")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, 0o755)
        self.addCleanup(lambda: (os.unlink(path), os.rmdir(d)))
        return nc.Client(path)

    def test_garbage_output(self):
        c = self.fake("cat >/dev/null; echo 'not json'")
        with self.assertRaises(nc.NsboxError):
            c.run_code("print(1)")
        with self.assertRaises(nc.NsboxError):
            c.doctor()

    def test_nsbox_failure_exit(self):
        c = self.fake("cat >/dev/null; echo 'nsbox: something broke' >&2; exit 125")
        with self.assertRaises(nc.NsboxError) as cm:
            c.run_code("print(1)")
        self.assertIn("something broke", str(cm.exception))

    def test_killed_nsbox_says_so(self):
        c = self.fake("cat >/dev/null; kill -9 $$")
        with self.assertRaises(nc.NsboxUnavailable) as cm:
            c.run_code("print(1)")
        self.assertEqual(cm.exception.returncode, -9)
        self.assertIn("nsbox batch was killed by signal 9", str(cm.exception))   # was "could not run: exit status -9"

    def test_missing_answer(self):
        c = self.fake("cat >/dev/null; exit 0")
        with self.assertRaises(nc.NsboxError):
            c.run_code("print(1)")

    def test_batch_run_missing_the_last_answers(self):
        c = self.fake("cat >/dev/null; echo '{\"id\":0,\"status\":\"exited\",\"exit_code\":0,\"outcome\":\"pass\",\"label\":1}'")
        self.assertEqual([r.status for r in c.batch_run(["print(1)"])], ["pass"])
        with self.assertRaises(nc.NsboxError) as cm:
            c.batch_run(["print(1)", "print(2)", "print(3)"])
        self.assertIn("1 of 3 jobs (none for [1, 2])", str(cm.exception))

    def test_not_executable(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "nsbox")
        open(path, "w").close()
        os.chmod(path, 0o644)
        try:
            with self.assertRaises(nc.NsboxUnavailable):
                nc.Client(path).doctor()
        finally:
            os.unlink(path)
            os.rmdir(d)


if __name__ == "__main__":
    unittest.main()
