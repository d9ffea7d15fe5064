"""The child: import the test module, run one test, report."""
import inspect
import json
import os
import signal
import sys
import types
import unittest
from .base import RUNNER_DIR, _H_CMP, _H_PLAIN, _clean, _clip_message, _clip_traceback, _exc_text, _safe_str
from .discover import _syntax_text
from .explain import _assert_failure, _compare_failure
from .traces import _last_frame, format_exception, set_code_dirs


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
    report = _report("error", message, exc)
    report["import_error"] = True  # the module, not the test: the runner says it once
    return report


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
    set_code_dirs(harness, workspace)
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


class _Tee:
    """sys.stdout/sys.stderr of a test process: what is written goes to the
    stream as before (the sandbox's, at once: nothing is lost if the runner
    is killed) and to a capture pipe the runner reads (pytest's "sys"
    capture: print() and sys.stdout.write(), not a C extension's or a
    subprocess's writes to fd 1). Everything else is the stream's."""

    def __init__(self, stream, fd):
        self._stream = stream
        self._fd = fd

    def write(self, text):
        n = self._stream.write(text)
        if self._fd is not None and isinstance(text, str):
            data = text.encode("utf-8", "replace")
            try:
                while data:
                    data = data[os.write(self._fd, data):]
            except OSError:  # the runner is gone, or stopped reading
                self._fd = None
        return n

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _tee_stdio(out_fd, err_fd):
    os.set_inheritable(out_fd, False)
    os.set_inheritable(err_fd, False)
    sys.stdout = _Tee(sys.stdout, out_fd)
    sys.stderr = _Tee(sys.stderr, err_fd)


def _flush_stdio():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except BaseException:
            pass


def _fd_id(fd):
    try:
        st = os.fstat(fd)
        return (st.st_dev, st.st_ino)
    except OSError:
        return None


def _child_main(item, code, report_fd, harness, workspace):
    """Runs in the forked child; never returns."""
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    streams = (_fd_id(1), _fd_id(2))
    try:
        report = _child_run(item, code, harness, workspace)
    except BaseException as exc:
        report = _report("error", "nsbox test runner failed inside the test process: %s"
                         % _exc_text(exc), exc)
    _flush_stdio()
    try:
        # fd 1 or 2 closed or replaced by the test: what its print() wrote
        # (counted by the tee) may not have reached the run's stream, and
        # counted as the test's it would hide another test's os.write
        # output from nsbox test's report (stdout_bytes, harness/README.md)
        report["streams_moved"] = [fd for fd, was in zip((1, 2), streams) if _fd_id(fd) != was]
        report["message"] = _clean(_clip_message(report.get("message")))
        report["traceback"] = _clean(_clip_traceback(report.get("traceback")))
        data = (json.dumps(report) + "\n").encode("utf-8", "replace")
        view = memoryview(data)
        while view:
            view = view[os.write(report_fd, view):]
    except BaseException:
        os._exit(70)
    os._exit(0)
