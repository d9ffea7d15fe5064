#!/usr/bin/env python3
"""nsbox test runner: run hidden tests against a learner's workspace.

Runs inside the sandbox as

    python3 -I -B /nsbox/nsbox_test_runner.py --harness /harness \
        --workspace /workspace --budget SECONDS [--test-budget SECONDS] \
        [--channel-fd 3]

with the working directory /workspace.  Standard library only (Python 3.8+,
tested on 3.11).  See harness/README.md for the channel protocol and for what
the code under test can and cannot do to the results.

Design in one paragraph: the main process never executes learner code.  It
finds tests statically (``ast``), compiles each ``test_*.py`` once with its
``assert`` statements rewritten to explain failed comparisons, then runs every
test in a forked child that first closes the results channel, then imports the
test module (and so the learner's code), runs one test and writes one JSON
report to a per-test pipe.  The parent enforces the time budget, kills the
child's process group, turns any exit without a well-formed report into an
``error`` and writes one JSON line per test to the channel.
"""

import argparse
import ast
import fcntl
import importlib.util
import inspect
import json
import os
import select
import signal
import sys
import time
import traceback
import types
import unittest

PROTOCOL = 1
OUTCOMES = ("passed", "failed", "error", "skipped")
REPR_LIMIT = 200            # characters of each value shown in a failed comparison
MAX_MESSAGE = 4000          # characters of a test's message
MAX_TRACEBACK = 12000       # characters of a test's traceback (the tail is kept)
MAX_REPORT = 256 * 1024     # bytes read from a child's report pipe
DEFAULT_TEST_BUDGET = 5.0   # seconds per test unless --test-budget says otherwise
MIN_SLICE = 0.05            # a test is not started with less time than this

RUNNER_FILES = {__file__, os.path.abspath(__file__), os.path.realpath(__file__)}
RUNNER_DIR = os.path.dirname(os.path.abspath(__file__))

# Names used by rewritten asserts.  They start with "@" so that no Python
# source can spell them (the same trick pytest uses); code can still reach them
# through globals(), which harness/README.md states.
_H_CMP = "@nsbox_compare_failure"
_H_PLAIN = "@nsbox_assert_failure"
_T_LEFT = "@nsbox_left"
_T_RIGHT = "@nsbox_right"
_T_VALUE = "@nsbox_value"

# Learner code must never write bytecode into the workspace, even when the
# runner is started without -B (its own tests do use -B).
sys.dont_write_bytecode = True


# ---------------------------------------------------------------------------
# Text helpers


def _clip(text, limit=REPR_LIMIT):
    if len(text) <= limit:
        return text
    keep = limit - 5
    head = (keep * 2) // 3
    return text[:head] + " ... " + text[len(text) - (keep - head):]


def _safe_repr(value):
    try:
        text = repr(value)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned non-string")
    except BaseException as exc:  # learner __repr__ may do anything
        text = "<%s object; repr() raised %s>" % (type(value).__name__, type(exc).__name__)
    return _clip(text)


def _safe_str(value):
    try:
        text = str(value)
        if not isinstance(text, str):
            raise TypeError("__str__ returned non-string")
        return text
    except BaseException as exc:
        return "<%s object; str() raised %s>" % (type(value).__name__, type(exc).__name__)


def _exc_name(exc_type):
    name = getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "Exception")
    module = getattr(exc_type, "__module__", "builtins")
    if module not in ("builtins", "__main__", None):
        name = "%s.%s" % (module, name)
    return name


def _exc_text(exc):
    """'ZeroDivisionError: division by zero' (or just the name)."""
    text = _safe_str(exc)
    name = _exc_name(type(exc))
    return "%s: %s" % (name, text) if text else name


def _seconds(value):
    value = round(value, 2)
    text = ("%.2f" % value).rstrip("0").rstrip(".")
    return text + "s"


def _clean(text):
    """Make a string safe for a strict JSON/UTF-8 reader (no lone surrogates, no NUL)."""
    if text is None:
        return None
    if not isinstance(text, str):
        text = _safe_str(text)
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def _clip_message(text):
    if text is None:
        return None
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "\n... (%d characters cut)" % (len(text) - MAX_MESSAGE)
    return text


def _clip_traceback(text):
    if text is None:
        return None
    if len(text) > MAX_TRACEBACK:
        cut = len(text) - MAX_TRACEBACK
        text = "... (%d characters cut)\n" % cut + text[cut:]
    return text


# ---------------------------------------------------------------------------
# Failure messages for rewritten asserts (called in the child, from test code)


def _explain_eq(left, right):
    lines = []
    try:
        if isinstance(left, dict) and isinstance(right, dict):
            only_left = [k for k in left if k not in right]
            only_right = [k for k in right if k not in left]
            differing = [k for k in left if k in right and left[k] != right[k]]
            if differing:
                lines.append("  differing items: %s != %s" % (
                    _clip("{%s}" % ", ".join("%r: %r" % (k, left[k]) for k in differing)),
                    _clip("{%s}" % ", ".join("%r: %r" % (k, right[k]) for k in differing))))
            if only_left:
                lines.append("  keys only on the left: %s" % _clip(repr(only_left)))
            if only_right:
                lines.append("  keys only on the right: %s" % _clip(repr(only_right)))
        elif (isinstance(left, (list, tuple)) and isinstance(right, (list, tuple))) or (
                isinstance(left, str) and isinstance(right, str)):
            for index, (a, b) in enumerate(zip(left, right)):
                if a != b:
                    lines.append("  first difference at index %d: %s != %s"
                                 % (index, _safe_repr(a), _safe_repr(b)))
                    break
            if len(left) != len(right):
                unit = "characters" if isinstance(left, str) else "items"
                lines.append("  left has %d %s, right has %d" % (len(left), unit, len(right)))
    except BaseException:  # odd __eq__/__hash__ in learner objects: no explanation
        return []
    return lines


def _with_user_message(has_msg, msg, lines):
    text = "\n".join(lines)
    if has_msg:
        text = _safe_str(msg) + "\n" + text
    return text


def _compare_failure(op, left, right, has_msg, msg, left_src, right_src):
    """Build (not raise) the AssertionError for a failed `assert left OP right`."""
    left_repr, right_repr = _safe_repr(left), _safe_repr(right)
    lines = ["assert %s %s %s" % (left_repr, op, right_repr)]
    if left_src is not None and left_src != left_repr:
        lines.append("  where %s = %s" % (left_repr, _clip(left_src)))
    if right_src is not None and right_src != right_repr:
        lines.append("  where %s = %s" % (right_repr, _clip(right_src)))
    if op == "==":
        lines.extend(_explain_eq(left, right))
    return AssertionError(_with_user_message(has_msg, msg, lines))


def _assert_failure(value, has_msg, msg, src, show_value):
    """Build the AssertionError for a failed `assert EXPR` of any other form."""
    lines = ["assert %s" % _clip(src)]
    if show_value:
        lines.append("  where %s = %s" % (_clip(src), _safe_repr(value)))
    return AssertionError(_with_user_message(has_msg, msg, lines))


# ---------------------------------------------------------------------------
# Assert rewriting (applied to harness test files only, never learner files)

_OP_TEXT = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
    ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}


def _is_literal(node):
    try:
        ast.literal_eval(node)
        return True
    except Exception:
        return False


class _AssertRewriter(ast.NodeTransformer):
    def __init__(self, source):
        self.source = source

    def _src(self, node):
        text = None
        try:
            text = ast.get_source_segment(self.source, node)
        except Exception:
            text = None
        if text is None:
            try:
                text = ast.unparse(node)
            except Exception:
                text = "<expression>"
        if "\n" in text:
            text = " ".join(text.split())
        return text

    def visit_Assert(self, node):
        def load(name):
            return ast.Name(id=name, ctx=ast.Load())

        def store(name):
            return ast.Name(id=name, ctx=ast.Store())

        test = node.test
        has_msg = node.msg is not None
        msg = node.msg if has_msg else ast.Constant(value=None)
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and type(test.ops[0]) in _OP_TEXT):
            left, right = test.left, test.comparators[0]
            left_src = None if _is_literal(left) else self._src(left)
            right_src = None if _is_literal(right) else self._src(right)
            failure = ast.Call(
                func=load(_H_CMP),
                args=[ast.Constant(value=_OP_TEXT[type(test.ops[0])]), load(_T_LEFT),
                      load(_T_RIGHT), ast.Constant(value=has_msg), msg,
                      ast.Constant(value=left_src), ast.Constant(value=right_src)],
                keywords=[])
            new = [
                ast.Assign(targets=[store(_T_LEFT)], value=left),
                ast.Assign(targets=[store(_T_RIGHT)], value=right),
                ast.If(test=ast.UnaryOp(op=ast.Not(), operand=ast.Compare(
                    left=load(_T_LEFT), ops=[test.ops[0]], comparators=[load(_T_RIGHT)])),
                    body=[ast.Raise(exc=failure, cause=None)], orelse=[]),
            ]
        else:
            show_value = not (_is_literal(test) or (
                isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)))
            failure = ast.Call(
                func=load(_H_PLAIN),
                args=[load(_T_VALUE), ast.Constant(value=has_msg), msg,
                      ast.Constant(value=self._src(test)), ast.Constant(value=show_value)],
                keywords=[])
            new = [
                ast.Assign(targets=[store(_T_VALUE)], value=test),
                ast.If(test=ast.UnaryOp(op=ast.Not(), operand=load(_T_VALUE)),
                       body=[ast.Raise(exc=failure, cause=None)], orelse=[]),
            ]
        for stmt in new:
            ast.copy_location(stmt, node)
        return new


# ---------------------------------------------------------------------------
# Discovery (static: no harness or learner code runs in the main process)


class TestItem:
    __slots__ = ("file", "path", "module", "cls", "func")

    def __init__(self, file, path, module, cls, func):
        self.file, self.path, self.module, self.cls, self.func = file, path, module, cls, func

    @property
    def name(self):
        if self.cls:
            return "%s::%s::%s" % (self.file, self.cls, self.func)
        return "%s::%s" % (self.file, self.func)


def _base_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _tests_in_tree(tree):
    """[(class or None, function)] in definition order."""
    found, seen_funcs = [], set()
    case_classes = {}  # local TestCase subclasses: name -> [test method names]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test") and node.name not in seen_funcs:
                seen_funcs.add(node.name)
                found.append((None, node.name))
        elif isinstance(node, ast.ClassDef):
            bases = [_base_name(b) for b in node.bases]
            local_bases = [b for b in bases if b in case_classes]
            if not (local_bases or any(b and b.endswith("TestCase") for b in bases)):
                continue
            methods = []
            for item in node.body:
                if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and item.name.startswith("test") and item.name not in methods):
                    methods.append(item.name)
            for base in local_bases:  # inherited test methods defined in this file
                methods.extend(m for m in case_classes[base] if m not in methods)
            case_classes[node.name] = methods
            found = [entry for entry in found if entry[0] != node.name]  # redefinition
            found.extend((node.name, m) for m in methods)
    return found


def _syntax_text(exc):
    return "%s in %s line %s: %s" % (type(exc).__name__, exc.filename, exc.lineno, exc.msg)


def discover(harness):
    """Return (items, codes, collect_errors); codes maps file -> code object."""
    items, codes, errors = [], {}, []
    try:
        names = sorted(n for n in os.listdir(harness)
                       if n.startswith("test_") and n.endswith(".py")
                       and os.path.isfile(os.path.join(harness, n)))
    except OSError as exc:
        return [], {}, [{"file": None, "message": "cannot list the harness directory %s: %s"
                         % (harness, exc.strerror or exc)}]
    for name in names:
        path = os.path.join(harness, name)
        try:
            with open(path, "rb") as handle:
                source = importlib.util.decode_source(handle.read())
            tree = ast.parse(source, filename=path)
            tests = _tests_in_tree(tree)
            tree = _AssertRewriter(source).visit(tree)
            ast.fix_missing_locations(tree)
            code = compile(tree, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            errors.append({"file": name, "message": _syntax_text(exc)})
            continue
        except Exception as exc:
            errors.append({"file": name, "message": "cannot load %s: %s" % (name, _exc_text(exc))})
            continue
        codes[name] = code
        module = name[:-3]
        items.extend(TestItem(name, path, module, cls, func) for cls, func in tests)
    return items, codes, errors


# ---------------------------------------------------------------------------
# Tracebacks without the runner's frames


def _keep_frame(frame):
    filename = frame.f_code.co_filename
    if filename in RUNNER_FILES or filename.startswith("<frozen importlib"):
        return False
    try:
        return "__unittest" not in frame.f_globals  # unittest's own machinery
    except Exception:
        return True


# Directories whose code is "the test's or the learner's" (set in the child).
_CODE_DIRS = ()


def _in_code_dirs(filename):
    return any(filename.startswith(d + os.sep) for d in _CODE_DIRS)


def _frames(tb):
    """(frame, lineno) of a traceback, without the runner's or unittest's frames,
    starting at the first harness or workspace frame (asyncio etc. before it go)."""
    kept = []
    while tb is not None:
        if _keep_frame(tb.tb_frame):
            kept.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    for index, (frame, _) in enumerate(kept):
        if _in_code_dirs(frame.f_code.co_filename):
            return kept[index:]
    return kept


def _last_frame(tb):
    """(filename, lineno) of the innermost harness/workspace frame, else innermost."""
    frames = [(f.f_code.co_filename, lineno) for f, lineno in _frames(tb)]
    mine = [entry for entry in frames if _in_code_dirs(entry[0])]
    return (mine or frames or [None])[-1]


def format_exception(exc):
    parts, seen = [], set()

    def walk(err, depth):
        if err is None or id(err) in seen or depth > 20:
            return
        seen.add(id(err))
        if err.__cause__ is not None:
            walk(err.__cause__, depth + 1)
            parts.append("\nThe above exception was the direct cause of the following exception:\n\n")
        elif err.__context__ is not None and not err.__suppress_context__:
            walk(err.__context__, depth + 1)
            parts.append("\nDuring handling of the above exception, another exception occurred:\n\n")
        stack = traceback.StackSummary.extract(_frames(err.__traceback__), capture_locals=False)
        if stack:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(stack.format())
        parts.extend(traceback.format_exception_only(type(err), err))

    try:
        walk(exc, 0)
        return "".join(parts)
    except BaseException as failure:  # never let formatting hide the result
        return "(traceback unavailable: %s)\n%s\n" % (type(failure).__name__, _exc_text(exc))


# ---------------------------------------------------------------------------
# The child: import the test module, run one test, report


def _report(outcome, message=None, exc=None, tb_text=None):
    if exc is not None and tb_text is None:
        tb_text = format_exception(exc)
    return {"outcome": outcome, "message": message, "traceback": tb_text}


def _from_exception(exc):
    if isinstance(exc, unittest.SkipTest):
        return _report("skipped", _safe_str(exc) or None)
    if isinstance(exc, AssertionError):
        return _report("failed", _safe_str(exc) or "AssertionError", exc)
    return _report("error", _exc_text(exc), exc)


def _import_failure(exc, item):
    if isinstance(exc, SyntaxError):
        message = _syntax_text(exc)
    else:
        message = "%s (while importing %s" % (_exc_text(exc), item.file)
        where = None if isinstance(exc, ImportError) else _last_frame(exc.__traceback__)
        if where is not None and where[0] != item.path:
            message += ", at %s line %s" % where
        message += ")"
    return _report("error", message, exc)


class _CaseResult(unittest.TestResult):
    """Collects what unittest reports for the one test of a TestSuite."""

    def __init__(self):
        super().__init__()
        self.events = []  # (outcome, message, exception or None)

    @staticmethod
    def _label(test, subtest=None):
        if subtest is not None:
            try:
                return "[subtest %s] " % subtest._subDescription()
            except Exception:
                return "[subtest] "
        description = getattr(test, "description", None)  # setUpClass / setUpModule errors
        return "[%s] " % description if description else ""

    def _add(self, outcome, test, err, subtest=None):
        exc = err[1] if err else None
        if exc is None and err:
            exc = err[0]()
        if outcome == "failed":
            message = _safe_str(exc) or "AssertionError"
        else:
            message = _exc_text(exc)
        self.events.append((outcome, self._label(test, subtest) + message, exc))

    def addSuccess(self, test):
        self.events.append(("passed", None, None))

    def addFailure(self, test, err):
        self._add("failed", test, err)

    def addError(self, test, err):
        self._add("error", test, err)

    def addSkip(self, test, reason):
        self.events.append(("skipped", _safe_str(reason) or None, None))

    def addExpectedFailure(self, test, err):
        self.events.append(("passed", None, None))

    def addUnexpectedSuccess(self, test):
        self.events.append(("failed", "unexpected success (the test is marked expectedFailure)", None))

    def addSubTest(self, test, subtest, err):
        if err is not None:
            failed = issubclass(err[0], getattr(test, "failureException", AssertionError))
            self._add("failed" if failed else "error", test, err, subtest)

    def report(self):
        for outcome in ("error", "failed", "skipped", "passed"):
            matching = [e for e in self.events if e[0] == outcome]
            if matching:
                _, message, exc = matching[0]
                if len(matching) > 1 and outcome in ("error", "failed"):
                    message += "\n(and %d more %s in this test)" % (
                        len(matching) - 1, "errors" if outcome == "error" else "failures")
                return _report(outcome, message, exc)
        return _report("error", "the test did not run (unittest reported nothing)")


def _run_case(module, item):
    cls = module.__dict__.get(item.cls)
    if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
        return _report("error", "%s is not a unittest.TestCase class when the module is imported"
                       % item.cls)
    if not callable(getattr(cls, item.func, None)):
        return _report("error", "%s.%s is not a method when the module is imported"
                       % (item.cls, item.func))
    result = _CaseResult()
    try:
        suite = unittest.TestSuite([cls(item.func)])
        suite.run(result)
    except BaseException as exc:
        return _from_exception(exc)
    return result.report()


def _run_function(module, item):
    func = module.__dict__.get(item.func)
    if not callable(func):
        return _report("error", "%s is not a function when the module is imported" % item.func)
    try:
        required = [p.name for p in inspect.signature(func).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                           p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        required = []
    if required:
        return _report("error", "%s takes arguments (%s); pytest fixtures are not supported"
                       % (item.func, ", ".join(required)))
    try:
        result = func()
        if inspect.iscoroutine(result):
            import asyncio
            asyncio.run(result)
    except BaseException as exc:
        return _from_exception(exc)
    return _report("passed")


def _child_run(item, code, harness, workspace):
    global _CODE_DIRS
    _CODE_DIRS = (harness, workspace)
    # Learner code is imported from the workspace; helper modules shipped in
    # the harness come first so a workspace file cannot shadow them.
    sys.path[:] = [harness, workspace] + [
        p for p in sys.path if p not in ("", ".", RUNNER_DIR, harness, workspace)]
    sys.argv = [item.path]
    module = types.ModuleType(item.module)
    module.__file__ = item.path
    module.__dict__[_H_CMP] = _compare_failure
    module.__dict__[_H_PLAIN] = _assert_failure
    sys.modules[item.module] = module
    try:
        exec(code, module.__dict__)
    except BaseException as exc:
        return _import_failure(exc, item)
    if item.cls:
        return _run_case(module, item)
    return _run_function(module, item)


def _flush_stdio():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def _child_main(item, code, report_fd, harness, workspace):
    """Runs in the forked child; never returns."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        report = _child_run(item, code, harness, workspace)
    except BaseException as exc:
        report = _report("error", "nsbox test runner failed inside the test process: %s"
                         % _exc_text(exc), exc)
    _flush_stdio()
    try:
        report["message"] = _clean(_clip_message(report.get("message")))
        report["traceback"] = _clean(_clip_traceback(report.get("traceback")))
        data = (json.dumps(report) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(report_fd, view):]
    except BaseException:
        os._exit(70)
    os._exit(0)


# ---------------------------------------------------------------------------
# The parent: supervise one child


class Runner:
    def __init__(self, channel_fd, harness, workspace, budget, test_budget):
        self.channel_fd = channel_fd
        self.harness = harness
        self.workspace = workspace
        self.budget = budget
        self.test_budget = test_budget
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self.current_pid = None
        self.subreaper = False

    def emit(self, event):
        data = (json.dumps(event, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
        view = memoryview(data)
        while view:
            view = view[os.write(self.channel_fd, view):]

    # -- process helpers --

    @staticmethod
    def _killpg(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass

    def _kill_orphans(self):
        """Kill processes a test left behind that escaped its process group."""
        if not self.subreaper:
            return
        try:
            if os.readlink("/proc/self") != str(os.getpid()):
                return  # /proc belongs to another pid namespace
        except OSError:
            return
        me = os.getpid()
        for _ in range(50):
            kids = []
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                try:
                    with open("/proc/%s/stat" % name, "rb") as handle:
                        stat = handle.read()
                    if int(stat[stat.rfind(b")") + 2:].split()[1]) == me:
                        kids.append(int(name))
                except (OSError, ValueError, IndexError):
                    continue
            if not kids:
                break
            for pid in kids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            for pid in kids:
                try:
                    os.waitpid(pid, 0)
                except OSError:
                    pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break

    def _supervise(self, pid, rfd, slice_s):
        """Wait for the child; return (status or None if timed out, report bytes)."""
        deadline = time.monotonic() + slice_s
        buf = bytearray()
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        poller = select.poll()
        poller.register(rfd, select.POLLIN)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        pipe_open, exited = True, False
        try:
            while True:
                try:
                    exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
                except ChildProcessError:
                    exited = True
                if exited:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                wait_ms = remaining * 1000 if pidfd is not None else min(remaining * 1000, 20)
                for fd, _ in poller.poll(max(1, int(wait_ms) + 1)):
                    if fd == rfd and pipe_open:
                        chunk = os.read(rfd, 65536)
                        if not chunk:
                            pipe_open = False
                            poller.unregister(rfd)
                        elif len(buf) <= MAX_REPORT:
                            buf += chunk
        finally:
            if pidfd is not None:
                os.close(pidfd)
        # Kill whatever is left of the test's process group before reaping the
        # leader, so the group id cannot have been reused.
        self._killpg(pid)
        _, status = os.waitpid(pid, 0)
        if pipe_open:  # drain what the child wrote before it ended
            os.set_blocking(rfd, False)
            try:
                while len(buf) <= MAX_REPORT:
                    chunk = os.read(rfd, 65536)
                    if not chunk:
                        break
                    buf += chunk
            except BlockingIOError:
                pass
        return (status if exited else None), bytes(buf)

    @staticmethod
    def _parse_report(data):
        if not data or len(data) > MAX_REPORT or data.count(b"\n") != 1 or not data.endswith(b"\n"):
            return None
        try:
            report = json.loads(data.decode("utf-8"))
        except Exception:
            return None
        if not isinstance(report, dict) or report.get("outcome") not in OUTCOMES:
            return None
        for key in ("message", "traceback"):
            if report.get(key) is not None and not isinstance(report.get(key), str):
                return None
        return report

    @staticmethod
    def _status_text(status):
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = "signal %d" % sig
            text = "was killed by %s (signal %d)" % (name, sig)
            if sig == signal.SIGKILL:
                text += " - the memory limit, or a kill from the code under test"
            elif sig == signal.SIGSEGV:
                text += " - a crash in native code or a stack overflow"
            return text
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        text = "exited with status %d" % code
        if code == 0:
            text += " (os._exit() called?)"
        return text

    def run_test(self, item, code, slice_s, per_test_cut):
        rfd, wfd = os.pipe()
        _flush_stdio()
        pid = os.fork()
        if pid == 0:  # child
            try:
                os.close(self.channel_fd)  # first: learner code never sees the channel
                os.close(rfd)
                _child_main(item, code, wfd, self.harness, self.workspace)
            finally:
                os._exit(70)
        self.current_pid = pid
        os.close(wfd)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        started = time.monotonic()
        try:
            status, data = self._supervise(pid, rfd, slice_s)
        finally:
            os.close(rfd)
            self.current_pid = None
        duration_ms = round((time.monotonic() - started) * 1000, 1)
        self._kill_orphans()
        if status is None:
            message = "timed out after %s" % _seconds(slice_s)
            if not per_test_cut:
                message += " (the overall test budget of %s ran out)" % _seconds(self.budget)
            report = _report("error", message)
        else:
            report = self._parse_report(data)
            clean_exit = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            if report is None:
                if data:
                    report = _report("error", "the test process sent a malformed result report "
                                     "and %s" % self._status_text(status))
                else:
                    report = _report("error", "the test process %s before reporting a result"
                                     % self._status_text(status))
            elif not clean_exit:
                report = _report("error", "the test process %s after reporting %r"
                                 % (self._status_text(status), report["outcome"]))
        return {
            "event": "test",
            "name": _clean(item.name),
            "outcome": report["outcome"],
            "message": _clean(_clip_message(report.get("message"))),
            "traceback": _clean(_clip_traceback(report.get("traceback"))),
            "duration_ms": duration_ms,
        }

    def run(self, items, codes, collect_errors, hardening):
        self.emit({"event": "start", "protocol": PROTOCOL,
                   "tests": [_clean(i.name) for i in items], "hardening": hardening})
        for error in collect_errors:
            self.emit({"event": "collect_error", "file": _clean(error["file"]),
                       "message": _clean(_clip_message(error["message"]))})
        results = []
        for item in items:
            remaining = self.deadline - time.monotonic()
            if remaining < MIN_SLICE:
                event = {"event": "test", "name": _clean(item.name), "outcome": "error",
                         "message": "not run: the overall test budget of %s was used up"
                         % _seconds(self.budget), "traceback": None, "duration_ms": 0.0}
            else:
                slice_s = min(self.test_budget, remaining)
                event = self.run_test(item, codes[item.file], slice_s, slice_s == self.test_budget)
            results.append(event)
            self.emit(event)
        counts = {o: sum(1 for e in results if e["outcome"] == o) for o in OUTCOMES}
        self.emit({"event": "done", "collected": len(items), "counts": counts,
                   "collect_errors": len(collect_errors),
                   "duration_ms": round((time.monotonic() - self.started) * 1000, 1)})
        return results


# ---------------------------------------------------------------------------
# Human summary (reference rendering; the nsbox binary prints its own)

_MARKS = {"passed": "PASS ", "failed": "FAIL ", "error": "ERROR", "skipped": "SKIP "}


def render_summary(results, collect_errors, seconds):
    lines = []
    for event in results:
        lines.append("%s %s" % (_MARKS[event["outcome"]], event["name"]))
    bad = [e for e in results if e["outcome"] in ("failed", "error")]
    if bad or collect_errors:
        lines.append("")
        lines.append("---- failures ----")
        for error in collect_errors:
            lines.append("HARNESS %s - %s" % (error["file"], error["message"]))
        for event in bad:
            lines.append("%s %s" % (_MARKS[event["outcome"]].strip(), event["name"]))
            for text in (event["message"] or "").splitlines():
                lines.append("    " + text)
    counts = [(sum(1 for e in results if e["outcome"] == o), o) for o in OUTCOMES]
    summary = ", ".join("%d %s" % (n, o) for n, o in counts if n) or "no tests"
    lines.append("")
    lines.append("== %s in %s ==" % (summary, _seconds(seconds)))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# Entry point


def _duration(text):
    text = text.strip()
    try:
        if text.endswith("ms"):
            value = float(text[:-2]) / 1000
        elif text.endswith("s"):
            value = float(text[:-1])
        else:
            value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("not a duration: %r" % text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be positive: %r" % text)
    return value


def _hardening():
    """Make the runner untraceable by its children; adopt their orphans."""
    info = {"non_dumpable": False, "subreaper": False}
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
        prctl.restype = ctypes.c_int
        prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        info["non_dumpable"] = prctl(4, 0, 0, 0, 0) == 0     # PR_SET_DUMPABLE 0
        info["subreaper"] = prctl(36, 1, 0, 0, 0) == 0       # PR_SET_CHILD_SUBREAPER 1
    except Exception:
        pass
    if os.getpid() == 1:
        info["subreaper"] = True
    return info


def _take_channel(fd):
    """Move the channel to a private high close-on-exec fd; fd itself then reads /dev/null."""
    try:
        os.fstat(fd)
    except OSError:
        return None
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft == resource.RLIM_INFINITY:
            soft = 1 << 20
    except Exception:
        soft = 1024
    low = 1000 if soft > 1100 else max(fd + 1, soft - 16)
    try:
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, low)
    except OSError:
        private = os.dup(fd)  # lowest free fd, close-on-exec (Python default)
    try:
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        os.dup2(null, fd, inheritable=False)  # writes to the old number now fail (EBADF)
        os.close(null)
    except OSError:
        os.close(fd)
    return private


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="nsbox_test_runner.py",
        description="Run hidden tests (test_*.py in --harness) against --workspace; "
                    "results go to --channel-fd as JSON Lines.")
    parser.add_argument("--harness", required=True, help="directory holding test_*.py")
    parser.add_argument("--workspace", required=True, help="the learner's files (the cwd)")
    parser.add_argument("--budget", type=_duration, default=10.0,
                        help="overall time budget for all tests (seconds, or 500ms/10s)")
    parser.add_argument("--test-budget", type=_duration, default=None,
                        help="time budget of one test (default: min(%gs, --budget))"
                        % DEFAULT_TEST_BUDGET)
    parser.add_argument("--channel-fd", type=int, default=3,
                        help="file descriptor of the results channel (default 3)")
    parser.add_argument("--summary", action="store_true",
                        help="also print a human summary on stderr")
    args = parser.parse_args(argv)

    channel = _take_channel(args.channel_fd)
    if channel is None:
        sys.stderr.write("nsbox_test_runner: the results channel (fd %d) is not open; "
                         "nothing was run\n" % args.channel_fd)
        return 2
    harness = os.path.abspath(args.harness)
    workspace = os.path.abspath(args.workspace)
    test_budget = args.test_budget or min(DEFAULT_TEST_BUDGET, args.budget)
    runner = Runner(channel, harness, workspace, args.budget, min(test_budget, args.budget))

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        os.chdir(workspace)
        hardening = _hardening()
        runner.subreaper = hardening["subreaper"]
        items, codes, collect_errors = discover(harness)
        results = runner.run(items, codes, collect_errors, hardening)
    except KeyboardInterrupt:
        if runner.current_pid:
            runner._killpg(runner.current_pid)
        sys.stderr.write("nsbox_test_runner: cancelled\n")
        return 130
    except BrokenPipeError:
        if runner.current_pid:
            runner._killpg(runner.current_pid)
        sys.stderr.write("nsbox_test_runner: the results channel was closed by the reader\n")
        return 2
    except BaseException:
        if runner.current_pid:
            runner._killpg(runner.current_pid)
        sys.stderr.write("nsbox_test_runner: internal error\n" + traceback.format_exc())
        return 4
    if args.summary:
        sys.stderr.write(render_summary(results, collect_errors, time.monotonic() - runner.started))
    if collect_errors or not items:
        return 3
    if any(e["outcome"] in ("failed", "error") for e in results):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
