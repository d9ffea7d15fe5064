"""Issue #31: batch `test` jobs, whose tests and expected values never enter
the process that runs the code (harness/nsbox_split.py, docs/batch.md
"Test jobs").

RewardHacking: a catalogue of the tricks a policy trained on "the tests
passed" learns (an exit 0 before or during the tests, atexit/excepthook
exits, reading the tests, __eq__ that always answers True, SkipTest, frame
walking, a forged report, killing or stopping the test process, hangs,
signals) — every one must end in `fail`, label 0: never pass, never error or
timeout. Run cold and warm (`nsbox batch --warm`); as_nobody.sh runs the
module as uid 65534. AsPythonJobs shows the same tricks pass as `python`
jobs (code + test_code in one process): what the test kind fixes.

Honest: honest solutions (MBPP assert lists, HumanEval check(candidate), a
LeetCode class, linked lists through handles, test_* functions, expected
exceptions, generators) pass, with the counts of running each test after
the code bare.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from nsbtest import NSBOX, SandboxTest, skip_or_fail

TESTS = "assert f(1) == 2\nassert f(2) == 3\nassert f(10) == 11\n"

# What a cheater reads to answer exactly the asserts it finds.
_STEAL = r'''
import os, re
_found = {}
def _scan(text):
    for a, b in re.findall(r"f\((\d+)\) == (\d+)", text):
        _found[int(a)] = int(b)
def _read(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # a pipe must not stop the search
        try:
            _scan(os.read(fd, 1 << 20).decode("utf-8", "replace"))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        pass
'''

# An object the code offers as the tests' builtins: set and sorted answer 1
# whatever they are given (the expected value included).
_BUILTINS_OBJ = ("import builtins\nclass B:\n    def __getitem__(self, k):\n"
                 "        if k in ('set', 'sorted', 'len', 'isinstance'):\n"
                 "            return lambda *a, **k: 1\n        return getattr(builtins, k)\n"
                 "def similar(a, b):\n    return 0\ndef f(x):\n    return 0\n")
SET_TESTS = "assert set(similar((3, 4, 5, 6), (5, 7, 4, 10))) == set((4, 5))\nassert sorted(f(2)) == sorted([3])\n"

# The code's side of the harness rewritten to answer every request with the
# raw bytes _answer() returns (a message no honest side would send).
_RAW_ANSWER = ("import __main__ as H, os\n_send0 = H._send\n"
               "def _send(ch, obj):\n    if type(obj) is list and obj and obj[0] in ('ok', 'raise'):\n"
               "        data = _answer()\n        os.write(ch[1], len(data).to_bytes(4, 'big') + data)\n"
               "        return\n    return _send0(ch, obj)\nH._send = _send\n"
               "def f(x):\n    return 0\ndef _answer():\n")

# name -> (code, test_code, timeout). Every one must end in outcome fail.
TRICKS = {
    "exit0_at_top": ("import os\nos._exit(0)\n", TESTS, 10),
    "sys_exit0_at_top": ("import sys\nsys.exit(0)\n", TESTS, 10),
    "exit0_in_call": ("import os\ndef f(x):\n    os._exit(0)\n", TESTS, 10),
    "system_exit_in_call": ("def f(x):\n    raise SystemExit(0)\n", TESTS, 10),
    "keyboard_interrupt_in_call": ("def f(x):\n    raise KeyboardInterrupt\n", TESTS, 10),
    "atexit_exit0": ("import atexit, os\natexit.register(lambda: os._exit(0))\ndef f(x):\n    return 0\n",
                     TESTS, 10),
    "excepthook_exit0": ("import sys, os\nsys.excepthook = lambda *a: os._exit(0)\n"
                         "def f(x):\n    return 0\n", TESTS, 10),
    "eq_always_true": ("class A:\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n"
                       "    __hash__ = lambda s: 0\ndef f(x):\n    return A()\n", TESTS, 10),
    "eq_true_int_subclass": ("class I(int):\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n"
                             "    __hash__ = int.__hash__\ndef f(x):\n    return I(0)\n", TESTS, 10),
    "eq_true_str_subclass": ("class S(str):\n    __eq__ = lambda s, o: True\n    __hash__ = str.__hash__\n"
                             "def f(x):\n    return S('')\n", TESTS, 10),
    "eq_true_list_member": ("class A:\n    __eq__ = lambda s, o: True\ndef f(x):\n    return [A()]\n",
                            "assert f(1) == [2]\n", 10),
    "bool_always_true": ("class A:\n    __bool__ = lambda s: True\n    __eq__ = lambda s, o: True\n"
                         "def is_even(x):\n    return A()\n", "assert is_even(2)\nassert not is_even(3)\n", 10),
    "skiptest_in_call": ("import unittest\ndef f(x):\n    raise unittest.SkipTest('no')\n", TESTS, 10),
    "skiptest_in_testcase": ("import unittest\ndef f(x):\n    raise unittest.SkipTest('no')\n",
                             "import unittest\nclass T(unittest.TestCase):\n    def test_f(self):\n"
                             "        self.assertEqual(f(1), 2)\nif __name__ == '__main__':\n    unittest.main()\n", 10),
    "system_exit0_in_testcase": ("def f(x):\n    raise SystemExit(0)\n",
                                 "import unittest\nclass T(unittest.TestCase):\n    def test_f(self):\n"
                                 "        self.assertEqual(f(1), 2)\nunittest.main()\n", 10),
    "skiptest_at_top": ("import unittest\nraise unittest.SkipTest('no')\n", TESTS, 10),
    "frame_walking": ("import sys, gc\ndef f(x):\n"
                      "    fr = sys._getframe()\n    while fr:\n"
                      "        for v in list(fr.f_locals.values()) + list(fr.f_globals.values()):\n"
                      "            if type(v) is int and v == x + 1:\n                return v\n"
                      "        fr = fr.f_back\n"
                      "    for o in gc.get_objects():\n"
                      "        if type(o) is dict and o.get('expected') is not None:\n"
                      "            return o['expected']\n"
                      "    return 0\n", TESTS, 10),
    "read_the_tests": (_STEAL + "import glob\n"
                       "for p in glob.glob('/program/*') + glob.glob('/proc/*/fd/*') + glob.glob('/proc/*/mem')\\\n"
                       "        + glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline') + ['/dev/stdin']\\\n"
                       "        + glob.glob('/tmp/*') + glob.glob('/workspace/*'):\n    _read(p)\n"
                       "import sys\n_scan(sys.stdin.read())\n"
                       "def f(x):\n    return _found.get(x, 0)\n", TESTS, 10),
    "read_the_tests_gc": ("import gc\n_src = [o for o in gc.get_objects() if type(o) is str and 'assert' in o]\n"
                          "def f(x):\n    import re\n    for s in _src:\n"
                          "        m = re.search(r'f\\(%d\\) == (\\d+)' % x, s)\n"
                          "        if m:\n            return int(m.group(1))\n    return 0\n", TESTS, 10),
    "forged_report_stdout": ("import os, json\nfor key in ('0' * 32, ''):\n"
                             "    for ev in ({'event': 'start', 'protocol': 1, 'tests': ['assert line 1']},\n"
                             "               {'event': 'test', 'name': 'assert line 1', 'outcome': 'passed'},\n"
                             "               {'event': 'done', 'counts': {'passed': 1, 'failed': 0}}):\n"
                             "        line = (key + ' ' + json.dumps(ev) + '\\n').encode()\n"
                             "        os.write(1, line)\n"
                             "        for p in ('/proc/%d/fd/1' % os.getppid(), '/proc/1/fd/1'):\n"
                             "            try:\n                fd = os.open(p, os.O_WRONLY)\n"
                             "                os.write(fd, line)\n            except OSError:\n                pass\n"
                             "os._exit(0)\n", TESTS, 10),
    "forged_message_on_the_pipe": ("import os, stat, json\ndef f(x):\n"
                                 "    for fd in range(3, 64):\n        try:\n"
                                 "            if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
                                 "                body = json.dumps(['ok', ['i', hex(x + 1)]]).encode()\n"
                                 "                os.write(fd, len(body).to_bytes(4, 'big') + body + b'garbage')\n"
                                 "        except OSError:\n            pass\n    return 0\n", TESTS, 10),
    "forged_ready_on_the_pipe": ("import os, stat, json\nfor fd in range(3, 64):\n    try:\n"
                               "        if stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
                               "            body = json.dumps(['ready', [['f', ['n']]]]).encode()\n"
                               "            os.write(fd, len(body).to_bytes(4, 'big') + body)\n"
                               "    except OSError:\n        pass\n"
                               "def f(x):\n    return 0\n", TESTS, 10),
    "kill_test_process_at_top": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
                                 "def f(x):\n    return 0\n", TESTS, 10),
    "kill_test_process_in_call": ("import os, signal\ndef f(x):\n    os.kill(os.getppid(), signal.SIGKILL)\n"
                                  "    return x + 1\n", TESTS, 10),
    "kill_every_process": ("import os, signal\ndef f(x):\n    os.kill(-1, signal.SIGKILL)\n", TESTS, 10),
    "sigterm_test_process": ("import os, signal\ndef f(x):\n    os.kill(os.getppid(), signal.SIGTERM)\n"
                             "    return x + 1\n", TESTS, 10),
    "sigint_test_process": ("import os, signal, time\ndef f(x):\n    os.kill(os.getppid(), signal.SIGINT)\n"
                            "    time.sleep(0.2)\n    return x + 1\n", TESTS, 10),
    "stop_test_process": ("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n"
                          "def f(x):\n    return x + 1\n", TESTS, 2),
    "hang_in_call": ("def f(x):\n    while True:\n        pass\n", TESTS, 2),
    "sleep_in_call": ("import time\ndef f(x):\n    time.sleep(100)\n", TESTS, 2),
    "hang_at_top": ("while True:\n    pass\n", TESTS, 2),
    "flood_output": ("import os\nos.write(1, b'x' * (8 << 20))\ndef f(x):\n    return 0\n", TESTS, 10),
    "return_code_object": ("def f(x):\n    return f\n", TESTS, 10),
    "shadow_builtin_set": ("def similar(a, b):\n    return 0\ndef set(*a):\n    return 1\n",
                           "assert set(similar((1, 2), (2, 3))) == set((2,))\n", 10),
    "shadow_sorted_abs_len": ("def f(x):\n    return 0\nsorted = abs = len = lambda *a, **k: 1\n",
                              "assert sorted(f(1)) == sorted([2])\nassert abs(f(1)) == abs(2)\n"
                              "assert len(f(1)) == len([2])\n", 10),
    "fake_math_module": ("class M:\n    def isclose(self, *a, **k):\n        return True\n"
                         "math = M()\ndef area(r):\n    return 0\n",
                         "assert math.isclose(area(2), 12.566, rel_tol=1e-3)\n", 10),
    "contains_always_true": ("class C:\n    def __contains__(self, x):\n        return True\n"
                             "    def __iter__(self):\n        return iter([])\ndef f(x):\n    return C()\n",
                             "assert 2 in f(1)\n", 10),
    "stopiteration_ends_the_loop": ("def f(x):\n    raise StopIteration\n",
                                    "def test_all():\n    for r in map(f, [1, 2]):\n        assert r == x + 1\n", 10),
    "stdlib_object_equal_to_all": ("from unittest.mock import _ANY as answer\n", "assert answer() == 42\n", 10),
    "stdlib_mock_any": ("from unittest.mock import ANY\ndef f(x):\n    return ANY\n", TESTS, 10),
    "patch_builtins": ("import builtins\nbuiltins.AssertionError = type('Never', (BaseException,), {})\n"
                       "builtins.isinstance = lambda *a: True\ndef f(x):\n    return 0\n", TESTS, 10),
    # Outside review (rev-tests). The code sends the name `__builtins__`
    # (a str subclass key that slips past the harness's dunder filter, or
    # the harness's own _send rewritten): every builtin the tests then use
    # (set, sorted) was a lookup the code answered, with the expected value.
    "builtins_via_dunder_name": (_BUILTINS_OBJ + "class K(str):\n    def startswith(self, p):\n        return False\n"
                                 "    def __hash__(self):\n        return 12345\n"
                                 "    def __eq__(self, o):\n        return self is o\n"
                                 "globals()[K('__builtins__')] = B()\n", SET_TESTS, 10),
    "builtins_via_patched_harness": (_BUILTINS_OBJ + "import __main__ as H\n_b = B()\n_send0, _serve0 = H._send, H._CodeSide.serve\n"
                                     "def _send(ch, obj):\n    if type(obj) is list and obj and obj[0] == 'ready':\n"
                                     "        obj[1].append(['__builtins__', ['h', 999]])\n    return _send0(ch, obj)\n"
                                     "def serve(self, ns):\n    self.objs[999] = _b\n    return _serve0(self, ns)\n"
                                     "H._send, H._CodeSide.serve = _send, serve\n", SET_TESTS, 10),
    # Held when tried (kept as regressions): limits set on the test process
    # (prlimit needs only the same uid), a session leader left behind by a
    # code whose process then ends, a fork bomb and a memory bomb.
    "prlimit_test_process": ("import os, resource\ndef f(x):\n"
                             "    resource.prlimit(os.getppid(), resource.RLIMIT_CPU, (0, 0))\n"
                             "    resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (0, 0))\n"
                             "    return 0\n", TESTS, 10),
    "daemon_then_exit": ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(100)\n"
                         "def f(x):\n    os._exit(0)\n", TESTS, 4),
    "fork_bomb": ("import os\ndef f(x):\n    while True:\n        try:\n            os.fork()\n"
                  "        except OSError:\n            pass\n", TESTS, 4),
    "memory_bomb": ("def f(x):\n    y = []\n    while True:\n        y.append(bytearray(1 << 20))\n", TESTS, 10),
    # The tests print each expected value before the call; stderr is one
    # pipe for both processes: reopened for reading through /proc/self/fd/2
    # it would hand them over (refused: the code's process is not dumpable
    # either, so its own /proc/self/fd is EACCES).
    "read_what_the_tests_print": ("import os, re, time\ndef f(x):\n    try:\n"
                                  "        fd = os.open('/proc/self/fd/2', os.O_RDONLY | os.O_NONBLOCK)\n"
                                  "        time.sleep(0.05)\n        m = re.search(r'expect (\\d+)', os.read(fd, 65536).decode())\n"
                                  "        return int(m.group(1)) if m else 0\n    except (OSError, ValueError):\n        return 0\n",
                                  "def test_cases():\n    for x, want in [(1, 2), (5, 11)]:\n"
                                  "        print('case', x, 'expect', want)\n        assert f(x) == want\n", 10),
    # A call's changes to its list/dict/set arguments ride back to the tests
    # (LeetCode's in-place problems): one aimed at anything but an argument
    # of that call is a malformed answer, never a change to the tests' data.
    "forged_write_back": ("import __main__ as H\n"
                          "H._CodeSide.changed_args = lambda self, res, *a: res.append([[1, ['l', [2, 3, 11]]], ['want', 1]])\n"
                          "def f(x):\n    return 0\n",
                          "want = [2, 3, 11]\ndef test_list():\n    got = [f(1), f(2), f(10)]\n    assert got == want\n", 10),
    # Second red team (rtsplit): tests that never ran passed. Calling an
    # `async def` test (or check, or a top-level call of one) returns a
    # coroutine without running its body; a `yield` makes a generator; a
    # plain TestCase's async method is "passed" by unittest with a warning.
    # A wrong f must fail each.
    "async_test_not_run": ("def f(x):\n    return 0\n", "async def test_f():\n    assert f(1) == 2\n", 10),
    "async_call_not_run": ("def f(x):\n    return 0\n", "async def t():\n    assert f(1) == 2\nt()\n", 10),
    "generator_test_not_run": ("def f(x):\n    return 0\n", "def test_f():\n    assert f(1) == 2\n    yield\n", 10),
    "async_testcase_method_not_run": ("def f(x):\n    return 0\n",
                                      "import unittest\nclass T(unittest.TestCase):\n"
                                      "    async def test_f(self):\n        self.assertEqual(f(1), 2)\n", 10),
    # The code's exit, swallowed by a setup statement of the tests'
    # (`except BaseException`), then an assert the swallowing made true.
    "exit_swallowed_in_setup": ("def f(x):\n    raise SystemExit(0)\n",
                                "try:\n    r = f(1)\nexcept BaseException:\n    r = 2\nassert r == 2\n", 10),
    # test_code's def of test_f fails (its default calls f, which raises):
    # the code's own test_f, a name it defined too, must not run as the test.
    "code_function_as_the_test": ("def test_f():\n    return None\ndef f(x):\n    raise ValueError\n",
                                  "def test_f(x=f(1)):\n    assert x == 2\n", 10),
    # Answers built to cost the test process its memory or its time (a
    # 48 MiB list; a set of ints that all collide in its hash table): held,
    # they end the job at a limit, a fail like any other.
    "answer_exhausts_memory": (_RAW_ANSWER + "    return b'[\"ok\",[\"l\",[' + b'0,' * 24000000 + b'0]]]'\n", TESTS, 10),
    "answer_hash_collisions": (_RAW_ANSWER + "    m = (1 << 61) - 1\n"
                               "    return ('[\"ok\",[\"S\",[' + ','.join(str(m * (i + 1)) for i in range(200000)) + ']]]').encode()\n",
                               TESTS, 3),
}

# Tricks whose every entry must fail (not only the job): the code's own
# function of a test's name earned that test's credit in `score`.
NO_TEST_PASSES = {"code_function_as_the_test"}


def batch(jobs, *opts, timeout=240):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
        for j in jobs:
            fh.write(json.dumps(j) + "\n")
        path = fh.name
    try:
        p = subprocess.run([NSBOX, "batch", "--quiet", *opts, path], capture_output=True, timeout=timeout)
    finally:
        os.unlink(path)
    lines = [json.loads(x) for x in p.stdout.decode().splitlines() if x.strip()]
    return p, {d["id"]: d for d in lines}


def tjob(name, code, tests, timeout=10, **kw):
    return dict(id=name, kind="test", code=code, test_code=tests, timeout=timeout, **kw)


class RewardHacking(SandboxTest):
    """Every trick: fail, label 0, never pass/error/timeout."""

    def run_catalogue(self, *opts):
        jobs = [tjob(n, c, t, to) for n, (c, t, to) in TRICKS.items()]
        p, out = batch(jobs, "-j", "4", *opts)
        self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
        self.assertEqual(set(out), set(TRICKS))
        return out

    def check_all_fail(self, out, warm):
        for name, d in sorted(out.items()):
            with self.subTest(trick=name):
                why = json.dumps({k: d.get(k) for k in ("status", "exit_code", "signal", "limit", "error",
                                                        "counts", "tests", "start", "start_reason")})[:1500]
                self.assertEqual(d["outcome"], "fail", why)
                self.assertEqual(d["label"], 0, why)
                self.assertLess(d["score"], 1.0, why)
                self.assertNotEqual(d["status"], "error", why)
                self.assertGreaterEqual(d["counts"]["failed"], 1, why)
                if name in NO_TEST_PASSES:
                    self.assertEqual(d["counts"]["passed"], 0, why)
                if warm:
                    self.assertEqual(d.get("start"), "warm", why)

    def test_catalogue_cold(self):
        self.check_all_fail(self.run_catalogue(), warm=False)

    def test_catalogue_warm(self):
        out = self.run_catalogue("--warm")
        if any(d.get("start") != "warm" for d in out.values()):
            reasons = {d.get("start_reason") for d in out.values()}
            if all(r and r.startswith("zygote unavailable") for r in reasons):
                skip_or_fail(self, "warm starts unavailable: %s" % reasons)
        self.check_all_fail(out, warm=True)

    def reading_finds_nothing(self, *opts):
        # The cheater's own view: no file, descriptor or memory it can reach
        # holds the tests (it answers 0 for every assert), not even after
        # honest jobs with the same tests ran before it (warm: forked from
        # the same zygote, -j 1: one after the other).
        honest = [tjob("h%d" % i, "def f(x):\n    return x + 1\n", TESTS) for i in range(3)]
        cheats = [tjob(n, TRICKS[n][0], TRICKS[n][1]) for n in ("read_the_tests", "read_the_tests_gc")]
        _, out = batch(honest + cheats, "-j", "1", *opts)
        for j in honest:
            self.assertEqual(out[j["id"]]["outcome"], "pass", out[j["id"]])
        for j in cheats:
            self.assertEqual(out[j["id"]]["counts"], {"passed": 0, "failed": 3, "total": 3}, out[j["id"]])
        return out

    def test_reading_the_tests_finds_nothing_cold(self):
        self.reading_finds_nothing()

    def test_reading_the_tests_finds_nothing_warm(self):
        out = self.reading_finds_nothing("--warm")
        if {d.get("start") for d in out.values()} != {"warm"}:
            skip_or_fail(self, "warm starts unavailable: %s" % {d.get("start_reason") for d in out.values()})


class AsPythonJobs(SandboxTest):
    """Without the split (code + test_code in one process, a `python` job),
    these tricks earn pass: what makes the catalogue above meaningful."""

    def test_tricks_pass_as_python_jobs(self):
        names = ["exit0_at_top", "atexit_exit0", "excepthook_exit0", "eq_always_true", "shadow_builtin_set",
                 "fake_math_module", "contains_always_true", "skiptest_at_top"]
        jobs = [dict(id=n, kind="python", code=TRICKS[n][0], test_code=TRICKS[n][1], timeout=10) for n in names]
        jobs[-1]["test_code"] = "import unittest\n" + jobs[-1]["test_code"]
        _, out = batch(jobs)
        passed = sorted(n for n in names if out[n]["outcome"] == "pass")
        # SkipTest at the top ends a python job nonzero; the others pass.
        self.assertEqual(passed, sorted(names[:-1]), {n: out[n]["outcome"] for n in names})


HUMANEVAL_CODE = '''from typing import List


def has_close_elements(numbers: List[float], threshold: float) -> bool:
    """ Check if in given list of numbers, are any two numbers closer to each other than
    given threshold."""
    for idx, elem in enumerate(numbers):
        for idx2, elem2 in enumerate(numbers):
            if idx != idx2:
                distance = abs(elem - elem2)
                if distance < threshold:
                    return True
    return False
'''
HUMANEVAL_TESTS = '''

METADATA = {
    'author': 'jt',
    'dataset': 'test'
}


def check(candidate):
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True
    assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05) == False
    assert candidate([1.0, 2.0, 5.9, 4.0, 5.0], 0.95) == True
    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 1.0) == True
    assert candidate([1.1, 2.2, 3.1, 4.1, 5.1], 0.5) == False
'''

LISTNODE_CODE = '''class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next


class Solution:
    def reverseList(self, head):
        prev = None
        while head:
            head.next, prev, head = prev, head, head.next
        return prev
'''
LISTNODE_TESTS = '''def build(xs):
    head = None
    for x in reversed(xs):
        head = ListNode(x, head)
    return head


def values(node):
    out = []
    while node is not None:
        out.append(node.val)
        node = node.next
    return out


assert values(Solution().reverseList(build([1, 2, 3]))) == [3, 2, 1]
assert values(Solution().reverseList(build([]))) == []
assert Solution().reverseList(None) is None
'''

# name -> (code, test_code, entry_point, expected total, expected passed)
HONEST = {
    "mbpp_similar": ("def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n",
                     "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))\n"
                     "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))\n"
                     "assert set(similar_elements((11, 12, 14, 13),(17, 15, 14, 13))) == set((13, 14))\n",
                     None, 3, 3),
    "mbpp_partial": ("def is_not_prime(n):\n    return n % 2 == 0\n",
                     "assert is_not_prime(2) == False\nassert is_not_prime(10) == True\n"
                     "assert is_not_prime(35) == True\nassert is_not_prime(37) == False\n", None, 4, 2),
    "mbpp_math": ("import math\ndef area(r):\n    return math.pi * r * r\n",
                  "assert math.isclose(area(2), 12.566, rel_tol=1e-3)\nassert area(0) == 0\n", None, 2, 2),
    "humaneval_check": (HUMANEVAL_CODE, HUMANEVAL_TESTS, "has_close_elements", 1, 1),
    "humaneval_wrong": (HUMANEVAL_CODE.replace("distance < threshold", "distance > threshold"), HUMANEVAL_TESTS,
                        "has_close_elements", 1, 0),
    "leetcode_class": ("class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n"
                       "        for i, x in enumerate(nums):\n            if target - x in seen:\n"
                       "                return [seen[target - x], i]\n            seen[x] = i\n",
                       "assert Solution().twoSum([2, 7, 11, 15], 9) == [0, 1]\n"
                       "assert Solution().twoSum([3, 2, 4], 6) == [1, 2]\n"
                       "s = Solution()\nassert s.twoSum([3, 3], 6) == [0, 1]\n", None, 3, 3),
    "leetcode_dataset_entry": ("class Solution:\n    def twoSum(self, nums, target):\n"
                               "        seen = {}\n        for i, x in enumerate(nums):\n"
                               "            if target - x in seen:\n                return [seen[target - x], i]\n"
                               "            seen[x] = i\n",
                               "def check(candidate):\n    assert candidate(nums=[2, 7, 11, 15], target=9) == [0, 1]\n"
                               "    assert candidate(nums=[3, 3], target=6) == [0, 1]\n",
                               "Solution().twoSum", 1, 1),
    "leetcode_listnode": (LISTNODE_CODE, LISTNODE_TESTS, None, 3, 3),
    "test_functions": ("def div(a, b):\n    if b == 0:\n        raise ValueError('b is 0')\n    return a // b\n"
                       "def gen(n):\n    yield from range(n)\n",
                       "def test_div():\n    assert div(7, 2) == 3\n"
                       "def test_raises():\n    try:\n        div(1, 0)\n    except ValueError as e:\n"
                       "        assert 'b is 0' in str(e)\n    else:\n        assert False\n"
                       "def test_gen():\n    assert list(gen(3)) == [0, 1, 2]\n    assert sum(gen(4)) == 6\n",
                       None, 3, 3),
    "containers": ("from collections import Counter, OrderedDict, namedtuple\nP = namedtuple('P', 'x y')\n"
                   "def count(s):\n    return Counter(s)\n"
                   "def pt():\n    return P(1, 2)\n"
                   "def data():\n    return {'a': [1, (2, 3)], 'b': {4, 5}, 'c': b'xy', 'd': None, 'e': 1.5, 'f': 2**100}\n",
                   "assert count('aab') == {'a': 2, 'b': 1}\nassert pt() == (1, 2)\n"
                   "assert data() == {'a': [1, (2, 3)], 'b': {4, 5}, 'c': b'xy', 'd': None, 'e': 1.5, 'f': 2**100}\n"
                   "assert isinstance(data()['f'], int)\n", None, 4, 4),
    "big_values": ("def f(n):\n    return list(range(n))\ndef huge():\n    return 10 ** 5000 + 1\n"
                   "def fl():\n    return [0.1, -0.0, float('inf'), 1e308, 2.5j]\n",
                   "assert f(200000) == list(range(200000))\nassert huge() - 1 == 10 ** 5000\n"
                   "assert fl() == [0.1, -0.0, float('inf'), 1e308, 2.5j]\n"
                   "assert str(fl()[1]) == '-0.0'\n", None, 4, 4),
    "unittest_cases": ("def add(a, b):\n    return a + b\n",
                       "import unittest\n\nclass TestAdd(unittest.TestCase):\n"
                       "    def test_small(self):\n        self.assertEqual(add(1, 2), 3)\n"
                       "    def test_wrong(self):\n        self.assertEqual(add(2, 2), 5)\n"
                       "    def test_raises(self):\n        with self.assertRaises(TypeError):\n"
                       "            add(1, 'a')\n\n"
                       "if __name__ == '__main__':\n    unittest.main()\n", None, 3, 2),
    "stdin_of_the_code": ("import sys\nFIRST = sys.stdin.readline().strip()\ndef first():\n    return FIRST\n",
                          "assert first() == 'hello'\nassert FIRST == 'hello'\n", None, 2, 2),
}

# Outside review (rev-tests): realistic problems that print, read stdin in a
# call, recurse deeply, compare floats, return sets/dicts/tuples, use a
# helper of the code's in check() (HumanEval/32), and a class-based one.
HONEST.update({
    "prints": ("print('loading')\ndef sum_list(xs):\n    print('called', xs)\n    return sum(xs)\n",
               "assert sum_list([1, 2, 3]) == 6\nassert sum_list([]) == 0\nassert sum_list([-1, 1]) == 0\n", None, 3, 3),
    "stdin_in_call": ("def read_two():\n    a = input()\n    b = input()\n    return int(a) + int(b)\n",
                      "assert read_two() == 5\n", None, 1, 1),
    "deep_recursion": ("def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n",
                       "assert depth(900) == 900\nassert depth(985) == 985\nassert depth(10) == 10\n", None, 3, 3),
    "isclose_floats": ("import math\ndef hyp(a, b):\n    return math.sqrt(a * a + b * b)\n"
                       "def mean(xs):\n    return sum(xs) / len(xs)\n",
                       "import math\nassert math.isclose(hyp(3, 4), 5.0)\nassert math.isclose(mean([0.1, 0.2, 0.3]), 0.2)\n"
                       "assert abs(hyp(1, 1) - 1.41421356) < 1e-6\nassert round(mean([1, 2]), 2) == 1.5\n", None, 4, 4),
    "sets_dicts_tuples": ("def uniq(xs):\n    return set(xs)\ndef freq(s):\n    d = {}\n    for c in s:\n"
                          "        d[c] = d.get(c, 0) + 1\n    return d\ndef minmax(xs):\n    return (min(xs), max(xs))\n",
                          "assert uniq([1, 1, 2]) == {1, 2}\nassert freq('aab') == {'a': 2, 'b': 1}\n"
                          "assert minmax([3, 1, 2]) == (1, 3)\nassert isinstance(minmax([1]), tuple)\n"
                          "assert type(uniq([])) is set\n", None, 5, 5),
    "humaneval_poly": ("import math\ndef poly(xs, x):\n    return sum([c * math.pow(x, i) for i, c in enumerate(xs)])\n"
                       "def find_zero(xs):\n    begin, end = -1., 1.\n    while poly(xs, begin) * poly(xs, end) > 0:\n"
                       "        begin *= 2.0\n        end *= 2.0\n    while end - begin > 1e-10:\n"
                       "        center = (begin + end) / 2.0\n        if poly(xs, center) * poly(xs, begin) > 0:\n"
                       "            begin = center\n        else:\n            end = center\n    return begin\n",
                       "def check(candidate):\n    import math, random, copy\n    rng = random.Random(42)\n"
                       "    for _ in range(10):\n        coeffs = [rng.choice([-3, -2, -1, 1, 2, 3]) for _ in range(2 * rng.randint(1, 3))]\n"
                       "        solution = candidate(copy.deepcopy(coeffs))\n"
                       "        assert math.fabs(poly(coeffs, solution)) < 1e-4\n", "find_zero", 1, 1),
    "minstack_class": ("class MinStack:\n    def __init__(self):\n        self.s = []\n    def push(self, x):\n"
                       "        self.s.append((x, min(x, self.s[-1][1]) if self.s else x))\n    def pop(self):\n"
                       "        self.s.pop()\n    def top(self):\n        return self.s[-1][0]\n"
                       "    def getMin(self):\n        return self.s[-1][1]\n",
                       "m = MinStack()\nm.push(-2)\nm.push(0)\nm.push(-3)\nassert m.getMin() == -3\nm.pop()\n"
                       "assert m.top() == 0\nassert m.getMin() == -2\n", None, 3, 3),
    # a built-in exception whose constructor takes more than a message
    "unicode_error": ("def dec(b):\n    return b.decode('utf-8')\n",
                      "def test_decode_error():\n    try:\n        dec(b'\\xff')\n    except UnicodeDecodeError:\n"
                      "        return\n    assert False\n"
                      "def test_value_error():\n    try:\n        dec(b'\\xfe')\n    except ValueError:\n"
                      "        return\n    assert False\n"
                      "def test_ok():\n    assert dec(b'ok') == 'ok'\n", None, 3, 3),
    # LeetCode's in-place problems: the tests read the argument they passed
    "in_place": ("class Solution:\n    def removeElement(self, nums, val):\n"
                 "        nums[:] = [x for x in nums if x != val]\n        return len(nums)\n"
                 "    def rotate(self, matrix):\n        matrix[:] = [list(r) for r in zip(*matrix[::-1])]\n"
                 "    def fill(self, d, s):\n        d['k'] = 1\n        s.add(2)\n",
                 "nums = [3, 2, 2, 3]\nk = Solution().removeElement(nums, 3)\nassert k == 2\nassert nums[:k] == [2, 2]\n"
                 "m = [[1, 2], [3, 4]]\nSolution().rotate(m)\nassert m == [[3, 1], [4, 2]]\n"
                 "d, s = {}, set()\nSolution().fill(d, s=s)\nassert d == {'k': 1} and s == {2}\n", None, 4, 4),
})
# Second red team (rtsplit): an async test runs (asyncio), and a function
# or method test_code defines twice is one test, as Python keeps one.
HONEST.update({
    "async_tests": ("def f(x):\n    return x + 1\n",
                    "import asyncio\nasync def test_f():\n    await asyncio.sleep(0)\n    assert f(1) == 2\n"
                    "import unittest\nclass T(unittest.IsolatedAsyncioTestCase):\n"
                    "    async def test_g(self):\n        self.assertEqual(f(2), 3)\n", None, 2, 2),
    "defined_twice": ("def add(a, b):\n    return a + b\n",
                      "def check(candidate):\n    assert candidate(1, 1) == 3\n"
                      "def check(candidate):\n    assert candidate(1, 1) == 2\n"
                      "def test_a():\n    assert add(1, 2) == 4\ndef test_a():\n    assert add(1, 2) == 3\n"
                      "import unittest\nclass T(unittest.TestCase):\n    def test_b(self):\n        self.assertEqual(add(0, 0), 1)\n"
                      "    def test_b(self):\n        self.assertEqual(add(0, 0), 0)\n", "add", 3, 3),
    # tests in odd shapes: a decorated test, a nested helper, asserts in a
    # loop and a with block (setup: a failure there is a failed entry), a
    # __main__ block that calls a test function (then one test, not two)
    "odd_shapes": ("def f(x):\n    return x + 1\n",
                   "import functools\ndef deco(fn):\n    @functools.wraps(fn)\n    def w():\n        return fn()\n    return w\n"
                   "@deco\ndef test_decorated():\n    assert f(1) == 2\n"
                   "def test_nested():\n    def inner(y):\n        assert f(y) == y + 1\n    for y in range(3):\n        inner(y)\n"
                   "for x in range(3):\n    assert f(x) == x + 1\nwith open('/dev/null') as fh:\n    assert f(5) == 6\n"
                   "if __name__ == '__main__':\n    assert f(0) == 1\n    test_nested()\n", None, 3, 3),
})
HONEST_STDIN = {"stdin_of_the_code": "hello\nworld\n", "stdin_in_call": "2\n3\n"}


def node_name(node):
    return getattr(node, "name", None)


def bare_counts(code, tests, entry, stdin=b""):
    """Each test of @tests run after @code by a bare python3 (one process
    per test): (passed, total), what appended code gives test by test."""
    import ast
    tree = ast.parse(tests)
    setup, units = [], []
    body = []
    for node in tree.body:   # an `if __name__ == "__main__":` block's statements are top-level ones
        main_guard = isinstance(node, ast.If) and "__main__" in ast.get_source_segment(tests, node.test)
        body += node.body if main_guard else [node]
    called = {n.value.func.id for n in body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
              and isinstance(n.value.func, ast.Name)}   # a test function called at the top is that one test
    for node in body:
        src = ast.get_source_segment(tests, node)
        if src.startswith("unittest.main("):
            continue
        if isinstance(node, ast.ClassDef):
            setup.append(src)
            units += [(None, "import unittest\nr = unittest.TestResult()\nunittest.TestSuite([%s(%r)]).run(r)\n"
                       "assert r.wasSuccessful() and not r.skipped" % (node.name, m))
                      for m in dict.fromkeys(f.name for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                                             and f.name.startswith("test"))]
        elif isinstance(node, ast.Assert) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                                               and not isinstance(node.value.func, ast.Attribute)):
            units.append((len(setup), src))
        else:
            setup.append(src)
            run = "import asyncio\nasyncio.run(%s)" if isinstance(node, ast.AsyncFunctionDef) else "%s"
            if node_name(node) in called:
                pass
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                units.append((None, run % (node.name + "()")))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "check":
                units.append((None, run % ("check(%s)" % entry)))
    # a function defined twice: Python keeps one, one test (two equal asserts stay two)
    units = [u for i, u in enumerate(units) if u[0] is not None or u not in units[:i]]
    passed = 0
    for upto, unit in units:
        # the setup statements before it, in order, then the test (test
        # functions, check and TestCase methods run after the module, as
        # the harness runs them)
        prog = code + "\n" + "\n".join(setup[:upto]) + "\n" + unit + "\n"
        r = subprocess.run([sys.executable, "-I", "-c", prog], input=stdin, capture_output=True, timeout=30)
        passed += r.returncode == 0
    return passed, len(units)


class Honest(SandboxTest):
    def run_honest(self, *opts):
        jobs = []
        for name, (code, tests, entry, _, _) in HONEST.items():
            j = tjob(name, code, tests, 20)
            if entry:
                j["entry_point"] = entry
            if name in HONEST_STDIN:
                j["stdin"] = HONEST_STDIN[name]
            jobs.append(j)
        p, out = batch(jobs, "-j", "4", *opts)
        self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
        for name, (code, tests, entry, total, passed) in HONEST.items():
            d = out[name]
            with self.subTest(problem=name):
                why = json.dumps({k: d.get(k) for k in ("status", "exit_code", "error", "tests", "stderr")})[:2000]
                self.assertEqual(d["counts"], {"passed": passed, "failed": total - passed, "total": total}, why)
                self.assertEqual(d["outcome"], "pass" if passed == total else "fail", why)
                self.assertEqual(d["label"], int(passed == total))
                self.assertAlmostEqual(d["score"], passed / total)
                self.assertEqual([t["name"] for t in d["tests"]][:1] != [], True)
        return out

    def test_honest_cold(self):
        self.run_honest()

    def test_honest_warm(self):
        out = self.run_honest("--warm")
        starts = {d.get("start") for d in out.values()}
        if starts != {"warm"}:
            skip_or_fail(self, "warm starts unavailable: %s" % {d.get("start_reason") for d in out.values()})
        # parity: test by test, the warm lines say what the cold ones say
        cold = self.run_honest()

        def view(d):
            return (d["outcome"], d["counts"], [(t["name"], t["outcome"], t["message"]) for t in d["tests"]])
        for name in HONEST:
            self.assertEqual(view(out[name]), view(cold[name]), name)

    def test_same_counts_as_bare(self):
        for name, (code, tests, entry, total, passed) in HONEST.items():
            with self.subTest(problem=name):
                stdin = HONEST_STDIN.get(name, "").encode()
                self.assertEqual(bare_counts(code, tests, entry, stdin), (passed, total))


NUMPY = "/usr/lib/python3/dist-packages/numpy"
NUMPY_CODE = ("import numpy as np\ndef total(xs):\n    return np.sum(np.array(xs))\n"
              "def any_neg(xs):\n    return np.any(np.array(xs) < 0)\ndef f32(x):\n    return np.float32(x)\n"
              "def arr(n):\n    return np.arange(n)\n")
NUMPY_TESTS = ("import numpy as np\nassert total([1, 2, 3]) == 6\nassert any_neg([1, -1]) == True\n"
               "assert f32(0.5) == 0.5\nassert list(arr(3)) == [0, 1, 2]\nassert arr(3).tolist() == [0, 1, 2]\n")


class HonestNumpy(SandboxTest):
    """numpy's scalars (numpy.int64, bool_, float32: no subclass of int,
    bool or float) cross as the values they compare equal to bare; before,
    they came back as handles and `np.sum(xs) == 6` failed."""

    def test_numpy_scalars(self):
        if not os.path.isdir(NUMPY):
            self.skipTest("no python3-numpy on this host")
        with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as fh:
            fh.write("[python]\ninterpreter = /usr/bin/python3\npackages = %s\n"
                     "[env]\nOPENBLAS_NUM_THREADS = 1\n" % NUMPY)
        os.chmod(fh.name, 0o644)
        try:
            for opts in ((), ("--warm",)):
                p, out = batch([tjob("np", NUMPY_CODE, NUMPY_TESTS, 30)], "--profile", fh.name, *opts)
                d = out["np"]
                self.assertEqual(d["counts"], {"passed": 5, "failed": 0, "total": 5},
                                 (opts, d.get("tests"), (d.get("stderr") or {}).get("text", "")[-1500:]))
        finally:
            os.unlink(fh.name)
        self.assertEqual(bare_counts(NUMPY_CODE, NUMPY_TESTS, None), (5, 5))


class SplitReview(SandboxTest):
    """Second red team (rtsplit) findings that are not a pass to catch."""

    def test_code_names_import_nothing(self):
        # A standard-library name among the code's made the test process
        # import that module (all of them: `this` printed the Zen there,
        # seconds of CPU); only names test_code reads are imported now.
        code = "this = antigravity = 1\nimport math\ndef f(x):\n    return math.sqrt(x)\n"
        for opts in ((), ("--warm",)):
            _, out = batch([tjob("imp", code, "assert math.isclose(f(4), 2.0)\n")], *opts)
            d = out["imp"]
            self.assertEqual(d["outcome"], "pass", (opts, d.get("tests")))
            self.assertNotIn("Beautiful is better than ugly", (d.get("stderr") or {}).get("text", ""), opts)


    def test_message_that_hangs_fails_one_test(self):
        # str() of an assert's message (a handle of the code's) hung: the
        # harness's CodeGone escaped its formatting of the failure and
        # ended the test process, the tests after it left "not run".
        code = "class R:\n    def __str__(self):\n        while True:\n            pass\n" \
               "def f(x):\n    return R() if x == 1 else x + 1\n"
        for opts in ((), ("--warm",)):
            _, out = batch([tjob("msg", code, "assert f(1) == 2, f(1)\nassert f(2) == 3\n", 4)], *opts)
            d = out["msg"]
            self.assertEqual([(t["name"], t["outcome"]) for t in d["tests"]],
                             [("assert line 1", "failed"), ("assert line 2", "failed")], (opts, d["tests"]))
            self.assertIn("timed out", d["tests"][0]["message"], (opts, d["tests"]))
            self.assertEqual((d["status"], d["exit_code"], d["outcome"]), ("exited", 0, "fail"), opts)


class Shape(SandboxTest):
    def test_bad_lines(self):
        p, out = batch([dict(id="a", kind="test", code="x=1"),
                        dict(id="b", kind="test", code="x=1", test_code="assert x", entry_point="not a name"),
                        dict(id="c", kind="test", code="x=1", test_code="assert x", argv=["/bin/true"])])
        self.assertEqual(p.returncode, 2)
        self.assertIn('missing "test_code"', out["a"]["error"]["message"])
        self.assertIn('"entry_point"', out["b"]["error"]["message"])
        self.assertIn('unknown key "argv" for a test job', out["c"]["error"]["message"])

    def test_no_tests_is_fail_and_report_lines(self):
        _, out = batch([tjob("n", "x = 1", "y = 2\n"), tjob("s", "x = 1", "assert x = 1\n")])
        self.assertEqual((out["n"]["outcome"], out["n"]["counts"]), ("fail", {"passed": 0, "failed": 1, "total": 1}))
        self.assertIn("no test in test_code", out["n"]["tests"][0]["message"])
        self.assertEqual((out["s"]["outcome"], out["s"]["counts"]["total"]), ("fail", 1))
        self.assertIn("SyntaxError", out["s"]["tests"][0]["message"])


if __name__ == "__main__":
    unittest.main()
