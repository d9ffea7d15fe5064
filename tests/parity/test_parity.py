"""The parity driver's own rules, without running any sandbox: how outcomes
are compared, how allow-list lines are read and matched, and when the run
fails (an unexplained difference, a stale entry), plus the runner's lines
from a real (bare) run of a tiny module."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity  # noqa: E402


def entry(line):
    return parity.Entry("allow:1", line)


def results(found, tests=10, id_modules=()):
    """run_user's answer for one user: {mode: {module: [diff...]}}, counts."""
    return found, {"tests": tests, "id_modules": set(id_modules)}


class Compare(unittest.TestCase):
    def test_outcomes_and_missing(self):
        bare = {"a": ("pass", ""), "b": ("skip", "x"), "c": ("pass", "")}
        other = {"a": ("pass", ""), "b": ("pass", ""), "d": ("error", "e")}
        self.assertEqual(parity.differences(bare, other),
                         [("b", "skip", "pass"), ("c", "pass", "missing"), ("d", "missing", "error")])

    def test_a_stopped_module_is_one_difference(self):
        bare = {"test.test_x.T.a": ("pass", ""), "test.test_x.T.b": ("pass", "")}
        other = {"test.test_x.T.a": ("pass", ""), "test.test_x::run": ("crash", "limit")}
        self.assertEqual(parity.diffs_of("test_x", bare, other),
                         [("test.test_x::run", "missing", "crash")])
        # an import that failed: the module's own line, not every test
        other = {"test.test_x": ("error", "KeyError")}
        self.assertEqual(parity.diffs_of("test_x", bare, other),
                         [("test.test_x", "missing", "error")])


class AllowList(unittest.TestCase):
    def test_fields(self):
        e = entry("warm unpriv pass|skip>error test.test_os.T.* one cause")
        self.assertEqual((e.modes, e.users, e.before, e.after, e.module, e.cause),
                         (["warm"], ["unpriv"], ["pass", "skip"], ["error"], "test_os", "one cause"))
        e = entry("any any *>skip test.datetimetester.Z.test_gaps pending: zoneinfo")
        self.assertEqual((e.modes, e.users, e.module), (("cold", "warm"), ("root", "unpriv"), "datetimetester"))

    def test_refused(self):
        for bad in ("any any pass>skip test.test_os.T.t",          # no cause
                    "any any pass-skip test.test_os.T.t cause",    # no >
                    "hot any pass>skip test.test_os.T.t cause",    # mode
                    "any 1000 pass>skip test.test_os.T.t cause",   # user
                    "any any pass>gone test.test_os.T.t cause",    # outcome
                    "any any pass>skip test.test_*.T.t cause",     # module not literal
                    "any any pass>skip os.T.t cause"):             # not test.
            with self.assertRaises(ValueError, msg=bad):
                entry(bad)

    def test_matching(self):
        e = entry("cold root pass>skip test.test_os.T.* no shell")
        self.assertTrue(e.matches("root", "cold", "test.test_os.T.t", "pass", "skip"))
        self.assertFalse(e.matches("root", "warm", "test.test_os.T.t", "pass", "skip"))
        self.assertFalse(e.matches("unpriv", "cold", "test.test_os.T.t", "pass", "skip"))
        self.assertFalse(e.matches("root", "cold", "test.test_os.T.t", "pass", "error"))
        self.assertFalse(e.matches("root", "cold", "test.test_os.U.t", "pass", "skip"))


class Verdict(unittest.TestCase):
    diff = ("test.test_os.T.t", "pass", "skip", "", "why", True)

    def test_unexplained_difference_fails(self):
        rows, unexpected, stale = parity.check([], {"root": results({"cold": {"test_os": [self.diff]}})},
                                               ["root"], ["cold"], ["test_os"])
        self.assertEqual(len(unexpected), 1)
        self.assertEqual(rows[0][4:], (1, 0, 1, 0))

    def test_explained_difference_passes(self):
        e = entry("cold root pass>skip test.test_os.T.t no shell")
        rows, unexpected, stale = parity.check([e], {"root": results({"cold": {"test_os": [self.diff]}})},
                                               ["root"], ["cold"], ["test_os"])
        self.assertEqual((unexpected, stale), ([], []))

    def test_unconfirmed_difference_does_not_fail(self):
        flaky = self.diff[:5] + (False,)
        rows, unexpected, stale = parity.check([], {"root": results({"cold": {"test_os": [flaky]}})},
                                               ["root"], ["cold"], ["test_os"])
        self.assertEqual(unexpected, [])
        self.assertEqual(rows[0][7], 1)

    def test_stale_per_user_and_mode(self):
        # the entry names cold and warm; only cold still differs: stale for warm
        e = entry("any root pass>skip test.test_os.T.t no shell")
        res = {"root": results({"cold": {"test_os": [self.diff]}, "warm": {}})}
        rows, unexpected, stale = parity.check([e], res, ["root"], ["cold", "warm"], ["test_os"])
        self.assertEqual([(u, m) for _, u, m in stale], [("root", "warm")])

    def test_not_stale_when_its_module_did_not_run(self):
        e = entry("any any pass>skip test.test_pty.T.t pending: ptys")
        res = {"root": results({"cold": {}}, id_modules={"test_os"})}
        self.assertEqual(parity.check([e], res, ["root"], ["cold"], ["test_os"])[2], [])
        # a helper module's tests that ran make it in scope
        e = entry("any root pass>skip test.datetimetester.T.t pending: zoneinfo")
        res = {"root": results({"cold": {}}, id_modules={"datetimetester"})}
        self.assertEqual(len(parity.check([e], res, ["root"], ["cold"], ["test_datetime"])[2]), 1)


class Runner(unittest.TestCase):
    def test_lines_of_a_real_module(self):
        # test_bisect: small, and the same on every host
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.jsonl")
            subprocess.run([sys.executable, "-I", "-B", parity.RUNNER, "test_bisect", out, "60"],
                           cwd=d, check=True, stdout=subprocess.DEVNULL)
            tests, crashed, done = parity.read_lines(out)
            self.assertTrue(done)
            self.assertIsNone(crashed)
            self.assertGreater(len(tests), 10)
            self.assertTrue(all(i.startswith("test.test_bisect.") for i in tests))
            self.assertEqual({o for o, _ in tests.values()}, {"pass"})
            # a chosen test alone, and one left out
            one = sorted(tests)[0]
            for ids, want in (([one], {one}), (["-" + one], set(tests) - {one})):
                os.unlink(out)
                subprocess.run([sys.executable, "-I", "-B", parity.RUNNER, "test_bisect", out, "60"] + ids,
                               cwd=d, check=True, stdout=subprocess.DEVNULL)
                self.assertEqual(set(parity.read_lines(out)[0]), want)

    def test_a_hung_test_is_named(self):
        # the per-test timeout ends the module and leaves the test as started
        with tempfile.TemporaryDirectory() as d:
            pkg = os.path.join(d, "test")
            os.mkdir(pkg)
            out = os.path.join(d, "out.jsonl")
            code = ("import sys; sys.path.insert(0, %r); import test; test.__path__.insert(0, %r); "
                    "sys.argv = ['r', 'test_hang', %r, '1']; exec(open(%r).read())") % (
                        d, pkg, out, parity.RUNNER)
            with open(os.path.join(pkg, "test_hang.py"), "w") as f:
                f.write("import time, unittest\n"
                        "class T(unittest.TestCase):\n"
                        "    def test_a(self): pass\n"
                        "    def test_b(self): time.sleep(30)\n")
            p = subprocess.run([sys.executable, "-I", "-B", "-c", code], cwd=d,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(b"Timeout (", p.stderr)
            tests, crashed, done = parity.read_lines(out)
            self.assertEqual((crashed, done), ("test.test_hang.T.test_b", False))
            self.assertEqual(tests, {"test.test_hang.T.test_a": ("pass", "")})


if __name__ == "__main__":
    unittest.main()
