"""run_tests (issue #31): a batch `test` job from the client, against the
built nsbox ($NSBOX), stdlib only."""
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import nsbox_client as nc  # noqa: E402
from test_client import NSBOX, WithNsbox  # noqa: E402


class RunTests(WithNsbox):
    def test_check_candidate_passes(self):
        r = self.client.run_tests("def add(a, b):\n    return a + b\n",
                                  "def check(candidate):\n    assert candidate(1, 2) == 3\n", entry_point="add")
        self.assertEqual((r.status, r.label, r.score), ("pass", 1, 1.0), r.raw)
        self.assertEqual(r.counts, {"passed": 1, "failed": 0, "total": 1})
        self.assertEqual([(t.name, t.outcome) for t in r.tests], [("check(add)", "passed")])

    def test_partial_credit_and_tricks_fail(self):
        r = self.client.run_tests("def f(x):\n    return 2\n", "assert f(1) == 2\nassert f(2) == 3\n")
        self.assertEqual((r.status, r.label, r.score), ("fail", 0, 0.5))
        for code in ("import os\nos._exit(0)\n",
                     "class A:\n    __eq__ = lambda s, o: True\ndef f(x):\n    return A()\n",
                     "import unittest\ndef f(x):\n    raise unittest.SkipTest('x')\n"):
            r = self.client.run_tests(code, "assert f(1) == 2\n")
            self.assertEqual((r.status, r.label), ("fail", 0), r.raw)

    def test_stdin_is_the_codes(self):
        r = self.client.run_tests("import sys\nLINE = sys.stdin.readline()\n", "assert LINE == 'hi\\n'\n", stdin="hi\n")
        self.assertEqual(r.status, "pass", r.raw)

    def test_sandbox_failure_is_error(self):
        with mock.patch.dict(os.environ, {"NSBOX_TEST_FAIL_STEP": "seccomp"}):
            r = nc.Client(NSBOX).run_tests("def f(x):\n    return x\n", "assert f(1) == 1\n", warm=False)
        self.assertEqual((r.status, r.label), ("error", 0), r.raw)

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            self.client.run_tests("x = 1", "assert x", entry_point="not a name")
        with self.assertRaises(TypeError):
            self.client.run_tests("x = 1", None)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
