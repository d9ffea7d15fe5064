"""Warm starts and sessions of nsbox_client: against a fake nsbox (a script
that records its argv and answers as told), and one session against the
built nsbox ($NSBOX) with warm starts when it has them."""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import nsbox_client as nc  # noqa: E402
from nsbox_client import aio  # noqa: E402
from test_client import userns_available  # noqa: E402

NSBOX = os.environ.get("NSBOX", "nsbox")
MUST_RUN = os.environ.get("NSBOX_TESTS_MUST_RUN") == "1"

# The fake nsbox. Its settings (a JSON object) are written into it:
#   log: a file it appends {"argv": [...], "pid": N} to, one line per start;
#   warm: doctor's warm.available (None: no "warm" key, as an nsbox before
#         warm starts); doctor_fails: doctor exits 125;
#   hold: batch answers every `hold` jobs read (and at the end of its input)
#         in reverse order, so results come back out of order;
#   die_after: batch exits with `die_status` (or kills itself with SIGKILL
#         when it is "kill") after reading that many jobs, "fake: the zygote
#         died" on stderr;
#   start_reason: put in every result line (with "start": "cold");
#   wrong_id: answer the first job with this id instead.
# A result's stdout is the job's code, plus "|" and its stdin; "pid" is the
# fake's pid; "seq" the order it answered in; "peak" the most jobs it had
# read and not answered.
FAKE = r'''#!/usr/bin/python3
import json, os, signal, sys
S = json.loads(%r)
with open(S["log"], "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "pid": os.getpid()}) + "\n")
if sys.argv[1:2] == ["doctor"]:
    if S.get("doctor_fails"):
        sys.stderr.write("nsbox: doctor: broken\n")
        sys.exit(125)
    d = {"schema": "nsbox.doctor/1", "ready": True, "isolation": "strict", "checks": []}
    if S.get("warm") is not None:
        d["warm"] = {"available": S["warm"], "reason": None if S["warm"] else "no zygote here"}
    print(json.dumps(d))
    sys.exit(0)
held, seq, peak, read = [], 0, 0, 0
warm = "--warm" in sys.argv

def answer():
    global seq
    for job in reversed(held):
        line = {"id": job["id"], "schema": "nsbox.result/1", "status": "exited", "exit_code": 0,
                "outcome": "pass", "label": 1, "stdout": {"text": job["code"] + "|" + job.get("stdin", "")},
                "pid": os.getpid(), "seq": seq, "peak": peak, "limits": job.get("limits"),
                "timeout": job.get("timeout")}
        if S.get("start_reason"):
            line.update(start="cold", start_reason=S["start_reason"])
        else:
            line["start"] = "warm" if warm else "cold"
        if S.get("wrong_id") is not None:
            line["id"] = S.pop("wrong_id")
        if job["code"] == "ERROR":
            line.update(status="error", outcome="error", label=0, error={"stage": "warm", "message": "the zygote died"})
        seq += 1
        sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    del held[:]

for text in sys.stdin:
    held.append(json.loads(text))
    read += 1
    peak = max(peak, len(held))
    if S.get("die_after") and read >= S["die_after"]:
        sys.stderr.write("nsbox: batch: fake: the zygote died\n")
        sys.stderr.flush()
        if S.get("die_status") == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        sys.exit(S.get("die_status", 125))
    if len(held) >= S.get("hold", 1):
        answer()
answer()
'''


def alive(pid):
    """A process (not a zombie) with @pid."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Fake(unittest.TestCase):
    def fake(self, **settings):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        self.log = os.path.join(d, "argv.jsonl")
        settings["log"] = self.log
        path = os.path.join(d, "nsbox")
        with open(path, "w") as f:
            f.write(FAKE % json.dumps(settings))
        os.chmod(path, 0o755)
        return path

    def starts(self):
        """Every start of the fake: (its argv, its pid)."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [(d["argv"], d["pid"]) for d in map(json.loads, f)]

    def commands(self):
        return [argv[0] for argv, _ in self.starts()]

    def batches(self):
        return [argv for argv, _ in self.starts() if argv[0] == "batch"]


class Warm(Fake):
    def test_warm_none_asks_doctor_once_and_uses_warm_when_available(self):
        c = nc.Client(self.fake(warm=True))
        c.batch_run(["print(1)", "print(2)"], jobs=2)
        list(c.batch_stream(["print(3)"]))
        r = c.run_code("print(4)")
        self.assertEqual(self.commands(), ["doctor", "batch", "batch", "batch"])
        self.assertTrue(all("--warm" in argv for argv in self.batches()), self.batches())
        self.assertEqual((r.start, r.start_reason), ("warm", None))

    def test_warm_none_without_warm_available(self):
        for settings in ({"warm": False}, {"warm": None}, {"doctor_fails": True}):
            with self.subTest(settings=settings):
                c = nc.Client(self.fake(**settings))
                self.assertEqual([r.start for r in c.batch_run(["print(1)"])], ["cold"])
                c.batch_run(["print(2)"])
                self.assertEqual(self.commands(), ["doctor", "batch", "batch"])
                self.assertFalse(any("--warm" in argv for argv in self.batches()), self.batches())

    def test_warm_false_never_and_true_always_without_doctor(self):
        c = nc.Client(self.fake(warm=True), warm=False)
        c.batch_run(["print(1)"])
        c.run_code("print(2)")
        with c.session() as s:
            s.run_code("print(3)")
        self.assertEqual(self.commands(), ["batch"] * 3)
        self.assertFalse(any("--warm" in argv for argv in self.batches()), self.batches())
        c = nc.Client(self.fake(warm=False), warm=True)
        c.batch_run(["print(1)"])
        self.assertEqual(self.commands(), ["batch"])
        self.assertIn("--warm", self.batches()[0])

    def test_per_call_warm_overrides_the_client(self):
        c = nc.Client(self.fake(warm=True), warm=False)
        c.batch_run(["print(1)"], warm=True)
        list(c.batch_stream(["print(1)"], warm=True))
        c.run_code("print(1)", warm=False)
        c.run_code("print(1)", warm=True)
        self.assertEqual(["--warm" in argv for argv in self.batches()], [True, True, False, True])
        self.assertNotIn("doctor", self.commands())
        c = nc.Client(self.fake(warm=False), warm=True)
        c.batch_run(["print(1)"], warm=False)
        self.assertEqual(["--warm" in argv for argv in self.batches()], [False])
        self.assertNotIn("doctor", self.commands())

    def test_judge_follows_warm_and_doctor_reports_it(self):
        c = nc.Client(self.fake(warm=True), warm=True)
        spec = {"program": {"source": "print(1)"}, "cases": [{"name": "a", "expect": {"exit_code": 0}}]}
        for warm, want in ((None, True), (False, False), (True, True)):
            with self.subTest(warm=warm):
                try:
                    c.judge(spec, warm=warm)
                except nc.NsboxError:
                    pass   # the fake answers no judge; its argv is what is checked
                argv = [a for a, _ in self.starts() if a[0] == "judge"][-1]
                self.assertEqual("--warm" in argv, want, argv)
        d = nc.Client(self.fake(warm=False)).doctor()
        self.assertEqual((d.warm, d.warm_reason), (False, "no zygote here"))
        self.assertTrue(nc.Client(self.fake(warm=True)).doctor().warm)

    def test_start_reason_and_its_absence(self):
        c = nc.Client(self.fake(start_reason="run job"), warm=True)
        r = c.run_code("print(1)")
        self.assertEqual((r.start, r.start_reason), ("cold", "run job"))
        old = nc.RunResult.from_line({"id": 0, "status": "exited", "exit_code": 0, "outcome": "pass", "label": 1})
        self.assertEqual((old.start, old.start_reason), (None, None))
        v = nc.Verdict.from_json({"verdict": "pass", "cases": [], "start": "warm"})
        self.assertEqual((v.start, v.start_reason), ("warm", None))

    def test_warm_is_checked(self):
        with self.assertRaises(TypeError):
            nc.Client("nsbox", warm="yes")
        c = nc.Client(self.fake(warm=True))
        with self.assertRaises(TypeError):
            c.batch_run(["print(1)"], warm=1)
        self.assertEqual(self.starts(), [])

    def test_async_warm_none_asks_doctor_once(self):
        c = aio.AsyncClient(self.fake(warm=True))

        async def go():
            await asyncio.gather(c.batch_run(["print(1)"]), c.batch_run(["print(2)"]), c.run_code("print(3)"))
            await c.batch_run(["print(4)"], warm=False)
        asyncio.run(go())
        self.assertEqual(self.commands(), ["doctor"] + ["batch"] * 4)
        self.assertEqual(sorted("--warm" in argv for argv in self.batches()), [False, True, True, True])


class SessionFake(Fake):
    def test_every_call_goes_to_one_process(self):
        c = nc.Client(self.fake(), warm=True)
        with c.session(jobs=3) as s:
            rs = [s.run_code("print(%d)" % i, stdin="in%d" % i, timeout=2, memory="64M") for i in range(12)]
        self.assertEqual([r.stdout for r in rs], ["print(%d)|in%d" % (i, i) for i in range(12)])
        self.assertEqual([argv for argv, _ in self.starts()], [["batch", "--quiet", "--warm", "-j", "3", "-"]])
        self.assertEqual({r.raw["pid"] for r in rs}, {self.starts()[0][1]})
        self.assertEqual((rs[0].raw["limits"], rs[0].raw["timeout"], rs[0].start), ({"memory": "64M"}, 2.0, "warm"))

    def test_out_of_order_answers_from_many_threads(self):
        c = nc.Client(self.fake(hold=4), warm=False)
        got, errors = {}, []
        with c.session(jobs=2, max_in_flight=4) as s:
            def caller(t):
                try:
                    for k in range(5):
                        got[(t, k)] = s.run_code("job-%d-%d" % (t, k))
                except Exception as e:   # noqa: BLE001 (reported below)
                    errors.append(e)
            threads = [threading.Thread(target=caller, args=(t,)) for t in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)   # a hang guard
        self.assertEqual(errors, [])
        self.assertEqual(len(got), 20)
        for (t, k), r in got.items():
            self.assertEqual(r.stdout, "job-%d-%d|" % (t, k))
        by_id = sorted(got.values(), key=lambda r: r.id)
        self.assertNotEqual([r.raw["seq"] for r in by_id], sorted(r.raw["seq"] for r in by_id),
                            "the fake should have answered out of order")
        self.assertEqual(len(self.batches()), 1)

    def test_in_flight_cap(self):
        c = nc.Client(self.fake(hold=2), warm=False)
        with c.session(max_in_flight=2) as s:
            results = []
            threads = [threading.Thread(target=lambda i=i: results.append(s.run_code("c%d" % i))) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
        self.assertEqual(sorted(r.stdout for r in results), sorted("c%d|" % i for i in range(8)))
        self.assertEqual(max(r.raw["peak"] for r in results), 2)
        # A fake that answers only once it holds 3 jobs: a cap of 2 keeps
        # the third call waiting (without the cap, all three would be sent
        # and answered).
        c = nc.Client(self.fake(hold=3), warm=False)
        s = c.session(max_in_flight=2)
        errors = []

        def call():
            try:
                errors.append(s.run_code("x"))
            except (nc.NsboxError, ValueError) as e:
                errors.append(e)
        threads = [threading.Thread(target=call) for _ in range(3)]
        for t in threads:
            t.start()
        for _ in range(500):
            with s._cond:
                if len(s._pending) == 2:
                    break
            threading.Event().wait(0.01)
        threading.Event().wait(0.2)   # room for a third job to be sent, were there no cap
        with s._cond:
            self.assertEqual(len(s._pending), 2, "two jobs in flight, the third waiting for room")
        self.assertEqual(errors, [])
        s.terminate()
        for t in threads:
            t.join(60)
        self.assertEqual(len(errors), 3)
        self.assertFalse(any(isinstance(e, nc.RunResult) for e in errors), errors)

    def test_nsbox_dying_fails_every_pending_and_later_call(self):
        for status, cls, said in ((125, nc.NsboxError, "exited with status 125"),
                                  ("kill", nc.NsboxUnavailable, "killed by signal 9")):
            with self.subTest(status=status):
                c = nc.Client(self.fake(hold=5, die_after=3, die_status=status), warm=False)
                s = c.session(max_in_flight=10)
                errors = []

                def call():
                    try:
                        s.run_code("x")
                    except nc.NsboxError as e:
                        errors.append(e)
                threads = [threading.Thread(target=call) for _ in range(3)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(60)
                self.assertEqual(len(errors), 3)
                for e in errors:
                    self.assertIsInstance(e, cls)
                    self.assertIn(said, str(e))
                    self.assertIn("fake: the zygote died", str(e))
                with self.assertRaises(cls) as later:
                    s.run_code("y")
                self.assertIn(said, str(later.exception))
                with self.assertRaises(cls):
                    s.close()
                self.assertFalse(alive(s.pid))

    def test_close_leaves_no_process(self):
        c = nc.Client(self.fake(), warm=False)
        with c.session() as s:
            s.run_code("x")
            pid = s.pid
            self.assertTrue(alive(pid))
        self.assertFalse(alive(pid))
        self.assertEqual(s._proc.returncode, 0)
        self.assertFalse(s._reader.is_alive())
        with self.assertRaises(ValueError):
            s.run_code("after close")
        s.close()   # a second close does nothing

    def test_an_exception_in_the_block_cancels(self):
        c = nc.Client(self.fake(hold=100), warm=False)
        errors = []
        with self.assertRaises(KeyError):
            with c.session() as s:
                t = threading.Thread(target=lambda: self.assertRaises(nc.NsboxError, s.run_code, "never answered")
                                     or errors.append(1))
                t.start()
                for _ in range(200):
                    if s._pending:
                        break
                    threading.Event().wait(0.01)
                raise KeyError("the caller's own trouble")
        t.join(60)
        self.assertEqual(errors, [1])
        self.assertFalse(alive(s.pid))
        self.assertEqual(s._proc.returncode, -15)

    def test_error_line_is_a_result_and_unknown_id_is_an_error(self):
        c = nc.Client(self.fake(), warm=True)
        with c.session() as s:
            r = s.run_code("ERROR")
            self.assertEqual((r.status, r.label, r.error["stage"]), ("error", 0, "warm"))
            self.assertEqual(s.run_code("fine").status, "pass")
        c = nc.Client(self.fake(wrong_id=99), warm=True)
        s = c.session()
        with self.assertRaises(nc.NsboxError) as cm:
            s.run_code("x")
        self.assertIn("answered id 99, which no call of this session is waiting for", str(cm.exception))
        with self.assertRaises(nc.NsboxError):
            s.close()
        self.assertFalse(alive(s.pid))

    def test_arguments_are_checked_and_the_session_goes_on(self):
        c = nc.Client(self.fake(), warm=False)
        for bad in (dict(jobs=0), dict(jobs="2"), dict(max_in_flight=0), dict(max_in_flight=1.5), dict(warm="no")):
            with self.subTest(bad=bad), self.assertRaises((TypeError, ValueError)):
                c.session(**bad)
        self.assertEqual(self.starts(), [])
        with c.session() as s:
            for kw, exc in ((dict(code=42), TypeError), (dict(code="x", stdin=b"1"), TypeError),
                            (dict(code="x", memory="64M", limits={"memory": "64M"}), ValueError),
                            (dict(code="x", memory="1K"), ValueError), (dict(code="x", timeout=-1), ValueError),
                            (dict(code="x", limits={"walltime": 1}), ValueError),
                            (dict(code="x" * (64 << 20)), ValueError)):
                with self.subTest(kw=kw if len(str(kw)) < 200 else "a huge job"), self.assertRaises(exc):
                    s.run_code(**kw)
            self.assertEqual(s.run_code("still here", stdin="\0nul").stdout, "still here|\0nul")

    def test_async_session(self):
        c = aio.AsyncClient(self.fake(hold=4), warm=True)

        async def go():
            async with c.session(jobs=2, max_in_flight=4) as s:
                rs = await asyncio.gather(*[s.run_code("a%d" % i, stdin=str(i)) for i in range(12)])
            return s, rs
        s, rs = asyncio.run(go())
        self.assertEqual([r.stdout for r in rs], ["a%d|%d" % (i, i) for i in range(12)])
        self.assertEqual([argv for argv, _ in self.starts()], [["batch", "--quiet", "--warm", "-j", "2", "-"]])
        self.assertNotEqual([r.raw["seq"] for r in rs], list(range(12)), "the fake should have answered out of order")
        self.assertLessEqual(max(r.raw["peak"] for r in rs), 4)
        self.assertFalse(alive(s.pid))

    def test_async_session_nsbox_dies(self):
        c = aio.AsyncClient(self.fake(hold=5, die_after=3), warm=False)

        async def go():
            s = await c.session().start()
            got = await asyncio.gather(*[s.run_code("x") for _ in range(3)], return_exceptions=True)
            with self.assertRaises(nc.NsboxError) as later:
                await s.run_code("y")
            with self.assertRaises(nc.NsboxError):
                await s.close()
            return s, got, later.exception
        s, got, later = asyncio.run(go())
        self.assertEqual(len(got), 3)
        for e in got + [later]:
            self.assertIsInstance(e, nc.NsboxError)
            self.assertIn("exited with status 125", str(e))
            self.assertIn("fake: the zygote died", str(e))
        self.assertFalse(alive(s.pid))


def nsbox_has_warm():
    r = subprocess.run([NSBOX, "batch", "--help"], capture_output=True, text=True, timeout=60)
    return "--warm" in r.stdout + r.stderr


class SessionReal(unittest.TestCase):
    def setUp(self):
        if not userns_available():
            if MUST_RUN:
                self.fail("unprivileged user namespaces are unavailable (NSBOX_TESTS_MUST_RUN=1)")
            raise unittest.SkipTest("unprivileged user namespaces are unavailable")

    def test_cold_session(self):
        with nc.Client(NSBOX, warm=False).session(jobs=2) as s:
            rs = [s.run_code("print(int(input()) * 2)", stdin="%d\n" % i) for i in range(6)]
            fail = s.run_code("def f():\n    return 1", test_code="assert f() == 2")
        self.assertEqual([(r.status, r.stdout) for r in rs], [("pass", "%d\n" % (2 * i)) for i in range(6)])
        self.assertEqual((fail.status, fail.return_code), ("fail", 1))
        self.assertIn("AssertionError", fail.stderr)
        self.assertFalse(alive(s.pid))

    def test_warm_session(self):
        if not nsbox_has_warm():
            raise unittest.SkipTest("this nsbox has no `batch --warm` (issue #14's core not built in)")
        c = nc.Client(NSBOX)
        self.assertTrue(c.warm_available(), "nsbox doctor --json: %s" % c.doctor().raw.get("warm"))
        results = {}
        with c.session(jobs=2) as s:
            self.assertIn("--warm", s.args)

            def caller(t):
                for k in range(10):
                    i = t * 10 + k
                    results[i] = s.run_code("import sys\nn = int(sys.stdin.read())\nprint(n * n, __name__)",
                                            test_code="assert n == %d" % i, stdin="%d\n" % i, timeout=10)
            threads = [threading.Thread(target=caller, args=(t,)) for t in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
        self.assertEqual(sorted(results), list(range(20)))
        for i, r in results.items():
            self.assertEqual((r.status, r.stdout, r.start), ("pass", "%d __main__\n" % (i * i), "warm"),
                             "job %d: %s %r" % (i, r.start_reason, r.stderr))
        self.assertFalse(alive(s.pid))


if __name__ == "__main__":
    unittest.main()
