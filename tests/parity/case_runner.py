"""Runs one CPython regression-test module and writes one JSON line per test.

Run as `python3 -I -B case_runner.py MODULE OUT TIMEOUT [ID...]` (bare and `nsbox
python`), or as a batch job's code with PARITY_ARGS = [MODULE, OUT, ID...]
set on a line before this text (a batch python job has no argv). MODULE is a
name under the `test` package (test_json); OUT the file the lines are
appended to; TIMEOUT the seconds one test may take (then faulthandler dumps
every thread's stack to stderr and ends the process: the driver sees which
test hung and runs the module again without it); IDs, when given, restrict the run to those test ids (the
parity driver's rerun of a difference), and -ID leaves one out (a test that
crashed or hung the module before).

The lines go to a file, opened and closed for each line: never the
program's stdout (tests print, capture and replace it), never an fd kept
open (tests close fd ranges), never buffered (a module stopped by a limit
keeps every line it finished). Kinds of line:
  {"meta": {...}}                         first: who and where the run is
  {"start": ID}                           a test began (the last one without an
                                          outcome is the one that hung or crashed)
  {"id": ID, "outcome": O, "why": TEXT}   O: pass fail error skip xfail xpass
  {"done": SECONDS}                       last: the module ran to its end
An import that raises unittest.SkipTest is one "skip" line with the
module's own id (test.MODULE); any other import error one "error" line.

The set-up follows what regrtest does for one module (a fresh temporary
cwd, no -u resources, test_main() when the module has one), so a test sees
what it sees under `python3 -m test MODULE`. Stdlib only: it runs inside the
sandbox with the interpreter's own library.
"""
import faulthandler
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import unittest


def emit(path, record):
    line = json.dumps(record, sort_keys=True) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, line.encode("utf-8", "backslashreplace"))
    finally:
        os.close(fd)


def why(err):
    """The exception's last line: enough to name a cause, short enough to diff."""
    if err is None:
        return ""
    exc = err[1]
    text = "%s: %s" % (type(exc).__name__, exc)
    return text.splitlines()[0][:300] if text else ""


def make_result_class(out, timeout):
    """A TextTestResult that also writes each test's outcome to OUT.

    Subtests fold into their test: a failing subtest makes the test fail
    (error wins over fail), as unittest counts it; a skipped subtest does not
    make the test a skip."""

    class Result(unittest.TextTestResult):
        def startTest(self, test):
            super().startTest(test)
            self._worst = None
            emit(out, {"start": test.id()})
            faulthandler.dump_traceback_later(timeout, exit=True)

        def _note(self, test, outcome, text):
            emit(out, {"id": test.id(), "outcome": outcome, "why": text})

        def addSuccess(self, test):
            super().addSuccess(test)
            self._note(test, "pass", "")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                kind = "fail" if issubclass(err[0], test.failureException) else "error"
                if getattr(self, "_worst", None) is None or kind == "error":
                    self._worst = (kind, "%s: %s" % (subtest._subDescription(), why(err)))

        def stopTest(self, test):
            faulthandler.cancel_dump_traceback_later()
            # a test whose subtests failed gets no addSuccess: say it here
            worst = getattr(self, "_worst", None)
            if worst is not None:
                self._note(test, worst[0], worst[1])
                self._worst = None
            super().stopTest(test)

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._worst = None
            self._note(test, "fail", why(err))

        def addError(self, test, err):
            super().addError(test, err)
            self._worst = None
            self._note(test, "error", why(err))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            if not isinstance(test, unittest.case._SubTest):
                self._note(test, "skip", str(reason)[:300])

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._note(test, "xfail", why(err))

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._note(test, "xpass", "")

    return Result


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def run_suite(suite, out, timeout, only):
    include = {i for i in only if i and not i.startswith("-")}
    exclude = {i[1:] for i in only if i.startswith("-")}
    if include or exclude:
        suite = unittest.TestSuite(t for t in flatten(suite)
                                   if (not include or t.id() in include) and t.id() not in exclude)
    sink = open(os.devnull, "w")
    runner = unittest.TextTestRunner(stream=sink, verbosity=0, resultclass=make_result_class(out, timeout))
    try:
        return runner.run(suite)
    finally:
        sink.close()


def prepare_support(out, timeout, only):
    """regrtest's defaults for one module: no -u resources, quiet, and
    support.run_unittest (what a test_main() calls) running through us."""
    from test import support
    support.use_resources = []
    support.verbose = 0
    support.failfast = False
    support._run_suite = lambda suite: run_suite(suite, out, timeout, only)


def run_module(module, out, timeout, only):
    from test import support
    name = "test." + module
    try:
        mod = importlib.import_module(name)
    except unittest.SkipTest as e:
        emit(out, {"id": name, "outcome": "skip", "why": str(e)[:300]})
        return
    except support.ResourceDenied as e:
        emit(out, {"id": name, "outcome": "skip", "why": str(e)[:300]})
        return
    except BaseException as e:  # noqa: BLE001 - the import's failure is the module's outcome
        emit(out, {"id": name, "outcome": "error", "why": why((type(e), e, None))})
        return
    main = getattr(mod, "test_main", None)
    try:
        if main is not None:
            main()
            return
        loader = unittest.TestLoader()
        suite = loader.loadTestsFromModule(mod)
    except unittest.SkipTest as e:
        emit(out, {"id": name, "outcome": "skip", "why": str(e)[:300]})
        return
    except Exception as e:  # noqa: BLE001 - the same
        emit(out, {"id": name, "outcome": "error", "why": why((type(e), e, None))})
        return
    for err in loader.errors:
        emit(out, {"id": name, "outcome": "error", "why": str(err).splitlines()[-1][:300]})
    run_suite(suite, out, timeout, only)


def main(argv):
    module, out, timeout, only = argv[0], os.path.abspath(argv[1]), float(argv[2]), argv[3:]
    t0 = time.monotonic()
    emit(out, {"meta": {"uid": os.getuid(), "gid": os.getgid(), "cwd": os.getcwd(),
                        "executable": sys.executable, "argv": sys.argv,
                        "utf8_mode": sys.flags.utf8_mode}})
    cwd = tempfile.mkdtemp(prefix="parity_cwd_")
    os.chdir(cwd)
    try:
        prepare_support(out, timeout, only)
        run_module(module, out, timeout, only)
    finally:
        os.chdir(tempfile.gettempdir())
        shutil.rmtree(cwd, ignore_errors=True)
    emit(out, {"done": round(time.monotonic() - t0, 3)})


if __name__ == "__main__":
    main(globals().get("PARITY_ARGS") or sys.argv[1:])
