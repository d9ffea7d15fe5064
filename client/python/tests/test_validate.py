"""nsbox_client raises on a caller's mistake before anything starts; test(),
judge jobs in batch_run, and the asyncio API (stdlib unittest)."""
import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import nsbox_client as nc  # noqa: E402
from nsbox_client import aio  # noqa: E402

from test_client import NSBOX, WithNsbox, _children_named, _processes_with  # noqa: E402

SPEC = {"program": {"source": "import sys\nprint(int(sys.argv[1]) * 2)"},
        "cases": [{"name": "double", "args": ["21"], "expect": {"stdout": {"equals": "42\n"}}}]}
COURSE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples", "course")


class Tripwire(unittest.TestCase):
    """A fake nsbox that records that it was started: a refused call must
    leave no record (nothing ran, not even the pairs before the bad one)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.mark = os.path.join(self.dir, "started")
        path = os.path.join(self.dir, "nsbox")
        with open(path, "w") as f:
            f.write("#!/bin/sh\ntouch %s\ncat >/dev/null\nexit 125\n" % self.mark)
        os.chmod(path, 0o755)
        self.client = nc.Client(path)
        self.aclient = aio.AsyncClient(path)

    def raises(self, exc, needle, call):
        with self.assertRaises(exc) as cm:
            call()
        self.assertIn(needle, str(cm.exception))
        self.assertFalse(os.path.exists(self.mark), "nsbox was started for a call that raised")

    def test_the_issue_examples(self):
        c = self.client
        self.raises(ValueError, "unknown limit key 'walltime' -- did you mean 'wall_time'?",
                    lambda: c.run_code("print(1)", limits={"walltime": "2s"}))
        self.raises(ValueError, "timeout=0 is out of range", lambda: c.run_code("print(1)", timeout=0))
        self.raises(TypeError, "timeout must be a number of seconds (int or float), not str '5'",
                    lambda: c.run_code("print(1)", timeout="5"))
        self.raises(ValueError, "malformed size 'lots'", lambda: c.run_code("print(1)", limits={"memory": "lots"}))

    def test_types_and_ranges(self):
        c = self.client
        for kw, exc, needle in (
                (dict(timeout=True), TypeError, "not bool"),
                (dict(timeout=-1), ValueError, "out of range"),
                (dict(timeout=float("nan")), ValueError, "out of range"),
                (dict(timeout=100000), ValueError, "at most 86400"),
                (dict(timeout=0.0001), ValueError, "finer than a millisecond"),
                (dict(limits=["memory"]), TypeError, "must be a dict"),
                (dict(limits={"memory": "8M"}), ValueError, "below 16M, the least a Python interpreter needs"),
                (dict(limits={"memory": 1024}), ValueError, "allowed 1M to 1T"),
                (dict(limits={"memory": 1.5}), TypeError, "not float"),
                (dict(limits={"output_limit": 0}), ValueError, "allowed 1 to 1G"),
                (dict(limits={"file_size": "0"}), ValueError, "allowed 1 to 1T"),
                (dict(limits={"wall_time": "25h"}), ValueError, "allowed 1ms to 24h"),
                (dict(limits={"wall_time": "1.0001s"}), ValueError, "finer than a millisecond"),
                (dict(limits={"cpu_time": "2 s"}), ValueError, "malformed duration"),
                (dict(limits={"pids": "8"}), TypeError, "expected an int"),
                (dict(limits={"pids": 0}), ValueError, "allowed 1 to 4194304"),
                (dict(limits={"memroy": "64M"}), ValueError, "did you mean 'memory'?"),
                (dict(limits={"tmpsize": "64M"}), ValueError, "did you mean 'tmp_size'?"),
                (dict(limits={"colour": "red"}), ValueError, "(allowed: wall_time, cpu_time")):
            with self.subTest(kw):
                self.raises(exc, needle, lambda: c.run_code("print(1)", **kw))
        self.raises(TypeError, "jobs must be an int", lambda: c.batch_run(["print(1)"], jobs="2"))
        self.raises(ValueError, "jobs=0 is out of range", lambda: c.batch_run(["print(1)"], jobs=0))
        self.raises(ValueError, "must not contain a NUL", lambda: c.run_code("print(1)\0"))

    def test_every_pair_is_checked_before_the_first_runs(self):
        good = [("print(%d)" % i, None) for i in range(5)]
        for bad, exc, needle in (((42, None), TypeError, "pairs[5] code must be a str"),
                                 (("x", b"assert x"), TypeError, "pairs[5] test_code must be a str or None"),
                                 (("a", "b", "c"), TypeError, "pairs[5] must be code"),
                                 (nc.JudgeJob({"program": {"source": "x"}}), ValueError, "pairs[5].spec['cases']"),
                                 (nc.JudgeJob(dict(SPEC, limits={"wall": "1s"})), ValueError, "did you mean 'wall_time'?")):
            with self.subTest(bad):
                self.raises(exc, needle, lambda: self.client.batch_run(good + [bad]))
                self.raises(exc, needle, lambda: list(self.client.batch_stream(good + [bad])))
                self.raises(exc, needle, lambda: asyncio.run(self.aclient.batch_run(good + [bad])))

    def test_a_str_is_not_a_list_of_jobs(self):
        # batch_run("print(1)") used to run p, r, i, n, t, ... as 8 jobs
        # (8 NameErrors that look like results).
        for bad in ("print(1)", b"print(1)", {"print(1)": None}):
            with self.subTest(bad):
                self.raises(TypeError, "must be a list (or other iterable) of jobs", lambda: self.client.batch_run(bad))
                self.raises(TypeError, "wrap a single job in a list", lambda: list(self.client.batch_stream(bad)))
                self.raises(TypeError, "items must be a list", lambda: asyncio.run(self.aclient.batch_run(bad)))

    def test_client_options(self):
        # extra_args="--memory 64M" became the words "-", "-", "m", ...:
        # nsbox then said "batch: unexpected argument '-'" at the first call.
        for bad, exc, needle in (("--memory 64M", TypeError, "extra_args must be a list of str"),
                                 (["--memory", 64], TypeError, "extra_args[1] must be a str, not int 64"),
                                 (["--env", "A=\0"], ValueError, "extra_args[1] must not contain a NUL")):
            with self.subTest(bad):
                self.raises(exc, needle, lambda: nc.Client(self.client.nsbox, extra_args=bad))
                self.raises(exc, needle, lambda: aio.AsyncClient(self.client.nsbox, extra_args=bad))
        self.assertEqual(nc.Client(self.client.nsbox, extra_args=("--memory", "64M")).extra_args, ["--memory", "64M"])

    def test_test_flags_carry_the_seconds_given(self):
        # "%gs" kept six significant digits: 1234.567 ran as 1234.57s
        self.assertEqual(nc.client._testcmd_args(self.dir, None, 1234.567, None)[-2:], ["--wall-time", "1234.567s"])
        self.assertEqual(nc.client._testcmd_args(self.dir, None, None, {"cpu_time": 86399.999})[-2:],
                         ["--cpu-time", "86399.999s"])
        self.assertEqual(nc.client._testcmd_args(self.dir, None, 2.01, None)[-2:], ["--wall-time", "2.01s"])
        self.assertEqual(nc.client._testcmd_args(self.dir, None, 60, None)[-2:], ["--wall-time", "60s"])

    def test_judge_and_test_arguments(self):
        c = self.client
        self.raises(TypeError, "must be a dict", lambda: asyncio.run(self.aclient.judge(["cases"])))
        self.raises(TypeError, "list", lambda: c.judge(["cases"]))
        self.raises(ValueError, "spec['program'] must be", lambda: c.judge({"cases": [{"name": "a"}]}))
        self.raises(ValueError, "spec['limits']['memory']: '4M' is below 16M",
                    lambda: c.judge(dict(SPEC, limits={"memory": "4M"})))
        self.raises(ValueError, "harness '/nonexistent/h' is not a directory", lambda: c.test("/nonexistent/h"))
        self.raises(TypeError, "harness must be a path", lambda: c.test(42))
        self.raises(ValueError, "unknown limit key 'walltime'",
                    lambda: c.test(self.dir, limits={"walltime": "1s"}))
        self.raises(ValueError, "timeout=0 is out of range", lambda: asyncio.run(self.aclient.run_code("1", timeout=0)))


class JudgeJobsAndTest(WithNsbox):
    def test_judge_jobs_in_batch_run(self):
        wrong = dict(SPEC, program={"source": "print(0)"})
        out = self.client.batch_run([("print(1)", None), nc.JudgeJob(SPEC), nc.JudgeJob(wrong), "1/0"], jobs=2)
        self.assertEqual([type(r).__name__ for r in out], ["RunResult", "Verdict", "Verdict", "RunResult"])
        self.assertEqual((out[0].status, out[1].verdict, out[2].verdict, out[3].status), ("pass", "pass", "fail", "fail"))
        self.assertEqual([r.id for r in out], [0, 1, 2, 3])
        self.assertEqual(out[1].cases[0].name, "double")

    def test_test_command(self):
        rep = self.client.test(os.path.join(COURSE, "harness"), os.path.join(COURSE, "workspace"))
        self.assertEqual(rep.verdict, "pass", rep.raw)
        self.assertTrue(rep.passed)
        self.assertTrue(rep.tests and all(t.outcome == "passed" for t in rep.tests))
        wrong = self.client.test(os.path.join(COURSE, "harness"), os.path.join(COURSE, "workspace-wrong"),
                                 timeout=20)
        self.assertEqual(wrong.verdict, "fail")
        self.assertGreater(wrong.counts["failed"], 0)
        self.assertIn("failed", {t.outcome for t in wrong.tests})

    def test_float_seconds_nsbox_takes_are_taken(self):
        # 2.01 * 1000 is 2009.999... in binary floating point: the client
        # called it "finer than a millisecond" where nsbox (nine decimals)
        # runs it as 2010ms; 34 of the timeouts 0.01..30.00 were refused.
        for t in (2.01, 4.03, 8.05, 0.1 + 0.2):
            with self.subTest(t):
                r = self.client.run_code("print(1)", timeout=t)
                self.assertEqual((r.status, r.stdout), ("pass", "1\n"))
                r = self.client.run_code("print(1)", timeout=None, limits={"cpu_time": t})
                self.assertEqual((r.status, r.stdout), ("pass", "1\n"))
        for t in range(1, 3001):
            nc.validate.timeout(t / 100)
            nc.validate.limits({"wall_time": t / 100})

    def test_nothing_ran_before_a_bad_pair(self):
        """Every pair is checked before any runs: none leaves its files in
        the workspace before the exception comes."""
        ws = tempfile.mkdtemp(dir="/var/tmp")
        os.chmod(ws, 0o777)
        self.addCleanup(shutil.rmtree, ws)
        c = nc.Client(NSBOX, extra_args=["--workspace", ws])
        with self.assertRaises(TypeError):
            c.batch_run([("open('left.txt', 'w').write('x')", None), (None, None)])
        self.assertEqual(os.listdir(ws), [])
        c.batch_run([("open('left.txt', 'w').write('x')", None)])
        self.assertEqual(os.listdir(ws), ["left.txt"])   # the same pair, run: the check above can fail


class Interrupted(WithNsbox):
    def test_an_interrupted_judge_leaves_nothing_running(self):
        # An exception in the caller (here from a SIGALRM handler, as
        # KeyboardInterrupt would be) left `nsbox judge` and its sandbox
        # running on to the end of their wall time.
        marker = "nsbox-int-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        spec = {"program": {"source": "import os, sys\nos.execv(sys.executable, [sys.executable, '-c', "
                                      "'import time; time.sleep(120)', %r])" % marker},
                "limits": {"wall_time": "120s"}, "cases": [{"name": "sleeps"}]}

        class Stop(Exception):
            pass

        def poll(_sig, _frame):
            if _processes_with(marker):
                signal.setitimer(signal.ITIMER_REAL, 0)   # one exception, as one Ctrl-C
                raise Stop()
        old = signal.signal(signal.SIGALRM, poll)
        self.addCleanup(signal.signal, signal.SIGALRM, old)
        self.addCleanup(signal.setitimer, signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
        with self.assertRaises(Stop):
            self.client.judge(spec)
        self.assertEqual(_processes_with(marker), [])
        self.assertEqual(_children_named("nsbox"), [])


class Asyncio(WithNsbox):
    def setUp(self):
        super().setUp()
        self.aclient = aio.AsyncClient(NSBOX)

    def test_await_run_code_and_judge(self):
        async def main():
            r, v = await asyncio.gather(self.aclient.run_code("def f(x):\n    return x + 1", "assert f(1) == 2"),
                                        self.aclient.judge(SPEC))
            return r, v
        r, v = asyncio.run(main())
        self.assertEqual((r.status, r.label, v.verdict), ("pass", 1, "pass"))

    def test_batch_run_takes_a_generator(self):
        # as the sync batch_run and aio.batch_stream do (it called len() on it)
        out = asyncio.run(self.aclient.batch_run("print(%d)" % i for i in range(3)))
        self.assertEqual([(r.id, r.stdout) for r in out], [(0, "0\n"), (1, "1\n"), (2, "2\n")])

    def test_async_for_over_a_batch(self):
        async def main():
            seen = []
            async for r in self.aclient.batch_stream(["print(%d)" % i for i in range(4)] + [nc.JudgeJob(SPEC)],
                                                     jobs=2):
                seen.append(r)
            return seen
        seen = asyncio.run(main())
        self.assertEqual(sorted(r.id for r in seen), [0, 1, 2, 3, 4])
        by_id = {r.id: r for r in seen}
        self.assertEqual(by_id[2].stdout, "2\n")
        self.assertEqual(by_id[4].verdict, "pass")

    def test_event_loop_is_not_blocked(self):
        """A heartbeat on the same loop keeps beating while a job runs."""
        async def main():
            beats = []

            async def heartbeat():
                while True:
                    beats.append(time.monotonic())
                    await asyncio.sleep(0.01)
            hb = asyncio.ensure_future(heartbeat())
            r = await self.aclient.run_code("import time; time.sleep(0.5)")
            hb.cancel()
            return r, beats
        r, beats = asyncio.run(main())
        self.assertEqual(r.status, "pass")
        self.assertGreater(len(beats), 10)   # a blocked loop beats once

    def test_cancelling_kills_every_sandbox(self):
        marker = "nsbox-aio-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        sleeper = ("import os, sys\nos.execv(sys.executable, [sys.executable, '-c', "
                   "'import time; time.sleep(120)', %r])" % marker)

        async def main():
            task = asyncio.ensure_future(self.aclient.batch_run([sleeper, sleeper], jobs=2, timeout=120))
            for _ in range(600):
                if len(_processes_with(marker)) == 2:
                    break
                await asyncio.sleep(0.05)
            running = len(_processes_with(marker))
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            return running
        self.assertEqual(asyncio.run(main()), 2, "both sleepers should have been running")
        self.assertEqual(_processes_with(marker), [])
        self.assertEqual(_children_named("nsbox"), [])

    def test_leaving_async_for_early_stops_nsbox(self):
        marker = "nsbox-aio-%d-%s" % (os.getpid(), uuid.uuid4().hex[:8])
        sleeper = ("import os, sys\nos.execv(sys.executable, [sys.executable, '-c', "
                   "'import time; time.sleep(120)', %r])" % marker)

        async def main():
            stream = self.aclient.batch_stream(["print(1)", sleeper], jobs=2, timeout=120)
            async for r in stream:
                first = r
                break
            await stream.aclose()
            return first
        first = asyncio.run(main())
        self.assertEqual(first.status, "pass")
        self.assertEqual(_processes_with(marker), [])
        self.assertEqual(_children_named("nsbox"), [])

    def test_test_command(self):
        rep = asyncio.run(self.aclient.test(os.path.join(COURSE, "harness"), os.path.join(COURSE, "workspace")))
        self.assertEqual(rep.verdict, "pass", rep.raw)


if __name__ == "__main__":
    unittest.main()
