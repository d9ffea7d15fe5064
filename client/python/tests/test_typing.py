"""The client's types as a caller's `mypy --strict` sees them (python3-mypy):
typing/good.py must pass; typing/bad.py must fail on exactly its lines
marked `# E: TEXT`, each with an error containing TEXT. So the overloads
(batch_run of pairs is List[RunResult], of JudgeJobs List[Verdict], of a mix
the union), the spelled-out options (a misspelt one is an error, which
**kw: Any accepted) and the Literal statuses are each checked both ways."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
MUST_RUN = os.environ.get("NSBOX_TESTS_MUST_RUN") == "1"


def mypy_available():
    return subprocess.run([sys.executable, "-c", "import mypy"], capture_output=True).returncode == 0


def mypy(path):
    """mypy --strict on @path with nsbox_client from this source tree; its
    errors as {line: [message, ...]} and the whole output."""
    with tempfile.TemporaryDirectory() as cache:
        r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache,
                            "--no-error-summary", "--hide-error-context", path],
                           capture_output=True, text=True, timeout=600, cwd=PACKAGE_ROOT,
                           env=dict(os.environ, MYPYPATH=PACKAGE_ROOT))
    errors = {}
    for m in re.finditer(r"^[^:\n]+:(\d+): error: (.*)$", r.stdout, re.M):
        errors.setdefault(int(m.group(1)), []).append(m.group(2))
    return r.returncode, errors, r.stdout + r.stderr


def expected_errors(path):
    with open(path, encoding="utf-8") as f:
        return {i: m.group(1) for i, line in enumerate(f, 1) for m in [re.search(r"\S  # E: (.*)$", line)] if m}


@unittest.skipUnless(mypy_available() or MUST_RUN, "mypy is not installed (python3-mypy, scripts/deps)")
class Typing(unittest.TestCase):
    def test_good_usage_passes(self):
        rc, errors, out = mypy(os.path.join(HERE, "typing", "good.py"))
        self.assertEqual((rc, errors), (0, {}), out)

    def test_bad_usage_fails_on_each_marked_line(self):
        path = os.path.join(HERE, "typing", "bad.py")
        want = expected_errors(path)
        self.assertGreaterEqual(len(want), 8)
        rc, errors, out = mypy(path)
        self.assertEqual(rc, 1, out)
        for line, text in sorted(want.items()):
            with self.subTest(line=line, want=text):
                self.assertTrue(any(text in e for e in errors.get(line, [])),
                                "line %d: no error containing %r:\n%s" % (line, text, out))
        self.assertEqual(sorted(set(errors) - set(want)), [], out)


if __name__ == "__main__":
    unittest.main()
