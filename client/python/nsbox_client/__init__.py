"""nsbox_client — run untrusted Python through nsbox, from Python (stdlib only).

    from nsbox_client import run_code, batch_run, judge, doctor

    r = run_code("def f(x):\n    return x + 1", test_code="assert f(1) == 2")
    r.status        # "pass" | "fail" | "timeout" | "error"
    r.label         # 1 only for pass: a reward signal

    for r in batch_run([(code, tests), ...], jobs=2):   # input order
        ...

Every run is a fresh nsbox sandbox (namespaces, cgroup or rlimit limits,
seccomp, Landlock); nothing runs in this process.

Two kinds of trouble are kept apart:
  * the program's own failure (wrong answer, crash, timeout, a limit) is a
    result: status "fail" or "timeout", never an exception;
  * nsbox itself: NsboxUnavailable when the binary is missing or cannot run
    here, NsboxError when it refused the request or answered something this
    client cannot read. A sandbox that failed for one run (status "error",
    with ``error`` saying which step) is a result too: the program's
    correctness is then unknown, and label is 0.

The nsbox binary: the ``nsbox`` argument of Client, else $NSBOX, else
``nsbox`` on PATH.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import threading
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from . import validate
from .jobs import JudgeJob, TestOutcome, TestReport

__all__ = [
    "Client", "RunResult", "Verdict", "CaseVerdict", "DoctorReport", "DoctorCheck",
    "NsboxError", "NsboxUnavailable", "run_code", "batch_run", "batch_stream", "judge", "doctor",
    "replay", "read_observations", "Observation",
    "JudgeJob", "TestReport", "TestOutcome", "test",
]

DEFAULT_TIMEOUT = 10
EXIT_NSBOX_FAILURE = 125
EXIT_CANCELLED = 130


class NsboxError(Exception):
    """nsbox refused the request or gave an answer that cannot be read."""

    def __init__(self, message: str, returncode: Optional[int] = None, stderr: str = ""):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


class NsboxUnavailable(NsboxError):
    """The nsbox binary is missing, not executable, or cannot run on this host."""


@dataclass
class RunResult:
    """One python job, as the executor it replaces reported it, plus detail.

    status: pass (exited 0) | fail (nonzero exit, a signal, a memory, pids,
    output or file-size limit) | timeout (wall or CPU time) | error (the
    sandbox failed: correctness unknown).
    return_code: the exit code; -N when killed by signal N; None on timeout
    or error.
    """
    status: str
    stdout: str
    stderr: str
    return_code: Optional[int]
    elapsed_ms: float
    label: int
    id: Any = None
    limit: Optional[str] = None
    error: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_line(cls, d: Dict[str, Any]) -> "RunResult":
        if "outcome" not in d or "status" not in d:
            raise NsboxError("not a python job result: %r" % (str(d)[:200],))
        st = d["status"]
        if st == "exited":
            rc = d.get("exit_code")
        elif st == "signaled" or (st == "limit" and d.get("limit") not in ("wall_time", "cpu_time")
                                  and d.get("signal")):
            rc = -int(d["signal"]) if d.get("signal") else None
        else:
            rc = None
        return cls(status=d["outcome"], stdout=_text(d.get("stdout")), stderr=_text(d.get("stderr")),
                   return_code=rc, elapsed_ms=float(d.get("wall_ms") or 0.0), label=int(d.get("label", 0)),
                   id=d.get("id"), limit=d.get("limit"), error=d.get("error"), raw=d)

    def as_dict(self) -> Dict[str, Any]:
        """The executor's dict: status, stdout, stderr, return_code, elapsed_ms, label."""
        return {"status": self.status, "stdout": self.stdout, "stderr": self.stderr,
                "return_code": self.return_code, "elapsed_ms": self.elapsed_ms, "label": self.label}


@dataclass
class CaseVerdict:
    name: str
    verdict: str          # pass | fail | undetermined | not_run
    reason: str
    result: Optional[Dict[str, Any]]


@dataclass
class Verdict:
    verdict: str          # pass | fail | undetermined
    cases: List[CaseVerdict]
    program_sha256: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)
    id: Any = None        # its batch item's index (batch_run / batch_stream)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def replayed(self) -> bool:
        """Judged from stored observations (replay()): no sandbox ran."""
        return self.raw.get("replayed") is True

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Verdict":
        """A verdict, or (a batch's judge job whose sandbox could not even
        start) a result with status error: undetermined, no cases."""
        if "verdict" not in d and d.get("status") == "error":
            return cls("undetermined", [], None, d, d.get("id"))
        cases = [CaseVerdict(c["name"], c["verdict"], c.get("reason", ""), c.get("result")) for c in d["cases"]]
        return cls(d["verdict"], cases, d.get("program_sha256"), d, d.get("id"))


@dataclass
class DoctorCheck:
    name: str
    status: str           # ok | degraded | unavailable
    detail: str
    fix: str


@dataclass
class DoctorReport:
    ready: bool
    isolation: str
    checks: List[DoctorCheck]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


def _text(stream: Optional[Dict[str, Any]]) -> str:
    if not stream:
        return ""
    text: str = stream.get("text", "")
    if stream.get("truncated") and stream.get("tail"):
        text += "\n[... truncated ...]\n" + stream["tail"]
    return text


def _job(id_: Any, code: str, test_code: Optional[str], timeout: Optional[float], limits: Optional[Dict[str, Any]],
         dedent: bool) -> Dict[str, Any]:
    code = validate.text(code, "code") or ""
    test_code = validate.text(test_code, "test_code", optional=True)
    limits = validate.limits(limits)
    timeout = validate.timeout(timeout)
    job = {"id": id_, "kind": "python", "code": textwrap.dedent(code) if dedent else code}
    if test_code is not None:
        job["test_code"] = textwrap.dedent(test_code) if dedent else test_code
    if limits:
        job["limits"] = dict(limits)
    if timeout is not None and "wall_time" not in (limits or {}):
        job["timeout"] = timeout
    return job


class Client:
    """One nsbox binary and the options passed to every command.

    extra_args: flags for every batch and judge (e.g. ["--memory", "128M"]);
    dedent: remove the common indentation of code and test_code first, as
    the executor this client replaces did (textwrap.dedent).
    """

    def __init__(self, nsbox: Optional[str] = None, extra_args: Sequence[str] = (), dedent: bool = True):
        self.nsbox = nsbox or os.environ.get("NSBOX") or shutil.which("nsbox") or "nsbox"
        self.extra_args = validate.arguments(extra_args, "extra_args")
        self.dedent = dedent

    # -- plumbing -----------------------------------------------------------
    def _popen(self, args: Sequence[str], **kw: Any) -> "subprocess.Popen[bytes]":
        try:
            return subprocess.Popen([self.nsbox, *args], **kw)
        except FileNotFoundError as e:
            raise NsboxUnavailable("nsbox not found (%s): install it, put it on PATH or set $NSBOX" % self.nsbox) from e
        except PermissionError as e:
            raise NsboxUnavailable("nsbox is not executable: %s" % self.nsbox) from e
        except OSError as e:
            raise NsboxUnavailable("cannot start nsbox (%s): %s" % (self.nsbox, e)) from e

    def _run(self, args: Sequence[str], input: Optional[bytes] = None,
             timeout: Optional[float] = None) -> Tuple[int, bytes, str]:
        p = self._popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = p.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise NsboxError("nsbox did not answer within %ss" % timeout)
        except BaseException:
            # Interrupted (KeyboardInterrupt, a signal handler's exception):
            # SIGTERM cancels every sandbox of the judge or test; drained and
            # reaped, so nothing runs on after the exception.
            p.terminate()
            try:
                p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
            raise
        return p.returncode, out, err.decode("utf-8", "replace")

    @staticmethod
    def _refused(cmd: str, rc: int, err: str) -> NsboxError:
        msg = err.strip().splitlines()[-1] if err.strip() else "exit status %d" % rc
        if rc < 0:
            return NsboxUnavailable("nsbox %s was killed by signal %d%s" % (cmd, -rc, ": " + msg if err.strip() else ""),
                                    rc, err)
        if rc == EXIT_CANCELLED:
            return NsboxError("nsbox %s was cancelled" % cmd, rc, err)
        if rc == 127 or rc == 126:
            return NsboxUnavailable("nsbox %s could not run: %s" % (cmd, msg), rc, err)
        return NsboxError("nsbox %s failed: %s" % (cmd, msg), rc, err)

    # -- python jobs ----------------------------------------------------------
    def batch_stream(self, pairs: Iterable[Union[Tuple[str, Optional[str]], str, JudgeJob]],
                     timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                     limits: Optional[Dict[str, Any]] = None) -> Iterator[Union[RunResult, Verdict]]:
        """Runs (code, test_code) pairs (or code, or JudgeJob items: a Verdict
        each) through one `nsbox batch`; yields each result as it completes
        (completion order; .id is the item's index). A list is checked whole
        before nsbox starts; a lazy iterable item by item as it is fed."""
        validate.collection(pairs)
        validate.timeout(timeout)
        validate.limits(limits)
        validate.jobs(jobs)
        if isinstance(pairs, (list, tuple)):
            pairs = list(validate.items(pairs))
        args = ["batch", "--quiet", *self.extra_args]
        if jobs:
            args += ["-j", str(int(jobs))]
        p = self._popen(args + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdin: IO[bytes] = p.stdin  # type: ignore[assignment]  # PIPE: never None
        feed_error: List[Exception] = []

        def feed() -> None:
            try:
                for i, pair in enumerate(pairs):
                    stdin.write((json.dumps(_batch_line(i, validate.item(i, pair), timeout, limits, self.dedent))
                                 + "\n").encode())
                stdin.close()
            except BrokenPipeError:
                pass
            except Exception as e:   # a bad pair: stop nsbox, report it
                feed_error.append(e)
                p.terminate()
                try:
                    stdin.close()
                except OSError:
                    pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        stdout: IO[bytes] = p.stdout  # type: ignore[assignment]  # PIPE: never None
        stderr: IO[bytes] = p.stderr  # type: ignore[assignment]
        stderr_box: List[bytes] = []
        reader = threading.Thread(target=lambda: stderr_box.append(stderr.read()), daemon=True)
        reader.start()
        read_all = False
        try:
            for line in stdout:
                yield _batch_result(line)
            read_all = True
        finally:
            if p.poll() is None and (feed_error or writer.is_alive() or not read_all):
                # The caller stopped early (or a line was unreadable): SIGTERM
                # cancels the batch, killing every sandbox; its lines are
                # drained, as nsbox blocked on a full pipe would never see it.
                p.terminate()
            if not read_all:
                for _ in stdout:
                    pass
            writer.join()
            p.wait()
            reader.join()
            stdout.close()
            stderr.close()
        if feed_error:
            raise feed_error[0]
        if p.returncode != 0:
            raise self._refused("batch", p.returncode, (stderr_box[0] if stderr_box else b"").decode("utf-8", "replace"))

    def batch_run(self, pairs: Iterable[Union[Tuple[str, Optional[str]], str, JudgeJob]],
                  timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                  limits: Optional[Dict[str, Any]] = None) -> List[Union[RunResult, Verdict]]:
        """Like batch_stream, collected: one result per item, in input order.
        Every item and argument is checked before the first one runs."""
        pairs = list(validate.items(list(validate.collection(pairs))))
        got: Dict[Any, Union[RunResult, Verdict]] = {}
        for r in self.batch_stream(pairs, timeout=timeout, jobs=jobs, limits=limits):
            got[r.id] = r
        if len(got) != len(pairs) or set(got) != set(range(len(pairs))):
            missing = sorted(set(range(len(pairs))) - set(got))
            raise NsboxError("nsbox batch answered %d of %d jobs (none for %s)" % (len(got), len(pairs), missing[:10]))
        return [got[i] for i in range(len(pairs))]

    def run_code(self, code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 limits: Optional[Dict[str, Any]] = None) -> RunResult:
        """One (code, test_code) pair in a fresh sandbox: test_code runs after
        code in the same module. timeout is the wall-clock limit in seconds."""
        results = self.batch_run([(code, test_code)], timeout=timeout, jobs=1, limits=limits)
        if len(results) != 1:
            raise NsboxError("nsbox batch gave %d results for one job" % len(results))
        if not isinstance(results[0], RunResult):
            raise NsboxError("nsbox batch answered a python job with a verdict")
        return results[0]

    # -- judge and doctor -------------------------------------------------------
    def judge(self, spec: Union[Dict[str, Any], str, "os.PathLike[str]"]) -> Verdict:
        """A judge spec (a dict, or the path of a SPEC.json) -> its verdict."""
        if isinstance(spec, dict):
            rc, out, err = self._run(["judge", "--json", *self.extra_args, "/dev/stdin"],
                                     input=json.dumps(_spec_for_nsbox(validate.spec(spec))).encode())
        else:
            rc, out, err = self._run(["judge", "--json", *self.extra_args, os.fspath(spec)])
        return _answer("judge", "verdict", rc, out, err, Verdict.from_json)

    def test(self, harness: Union[str, "os.PathLike[str]"], workspace: Optional[Union[str, "os.PathLike[str]"]] = None,
             timeout: Optional[float] = None, limits: Optional[Dict[str, Any]] = None) -> TestReport:
        """`nsbox test`: the hidden tests in @harness (read-only) against
        @workspace (read-write; default: a fresh empty one)."""
        args = _testcmd_args(harness, workspace, timeout, limits)
        rc, out, err = self._run(["test", "--json", *args, *self.extra_args])
        return _answer("test", "report", rc, out, err, TestReport.from_json)

    def doctor(self) -> DoctorReport:
        """What this host can enforce (nsbox doctor --json)."""
        rc, out, err = self._run(["doctor", "--json"], timeout=60)
        if rc not in (0, 1):
            raise self._refused("doctor", rc, err)
        try:
            d = json.loads(out)
            checks = [DoctorCheck(c["name"], c["status"], c.get("detail", ""), c.get("fix", "")) for c in d["checks"]]
            return DoctorReport(bool(d["ready"]), d.get("isolation", ""), checks, d)
        except (ValueError, KeyError, TypeError) as e:
            raise NsboxError("nsbox doctor gave an unreadable report: %r" % out[:200]) from e


_LIMIT_FLAGS = {"wall_time": "--wall-time", "cpu_time": "--cpu-time", "memory": "--memory", "pids": "--pids",
                "output_limit": "--output-limit", "file_size": "--file-size", "tmp_size": "--tmp-size"}


def _testcmd_args(harness: Any, workspace: Any, timeout: Optional[float], limits: Optional[Dict[str, Any]]) -> List[str]:
    args = ["--harness", validate.directory(harness, "harness")]
    if workspace is not None:
        args += ["--workspace", validate.directory(workspace, "workspace")]
    checked = validate.limits(limits)
    if timeout is not None and "wall_time" not in checked:
        checked["wall_time"] = validate.timeout(timeout) or 0.0
    for key, value in checked.items():
        # seconds as nsbox reads them (nine decimals): "%g" kept six digits,
        # so 1234.567 became --wall-time 1234.57s
        args += [_LIMIT_FLAGS[key], validate.seconds_text(value) + "s"
                 if key in ("wall_time", "cpu_time") and not isinstance(value, str) else str(value)]
    return args


_T = TypeVar("_T")


def _answer(cmd: str, what: str, rc: int, out: bytes, err: str, parse: Callable[[Dict[str, Any]], _T]) -> _T:
    """judge/test: 0 pass, 1 fail, 3 undetermined carry the answer; any
    other status is nsbox refusing (or failing)."""
    if rc not in (0, 1, 3):
        raise Client._refused(cmd, rc, err)
    try:
        return parse(json.loads(out))
    except (ValueError, KeyError, TypeError) as e:
        raise NsboxError("nsbox %s gave an unreadable %s: %r" % (cmd, what, out[:200])) from e


def _spec_for_nsbox(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """A JSON copy whose relative program.path is the caller's (nsbox reads
    the spec from stdin, or a jobs pipe: it would resolve it elsewhere)."""
    out: Dict[str, Any] = json.loads(json.dumps(spec))
    prog = out.get("program")
    if isinstance(prog, dict) and isinstance(prog.get("path"), str) and not os.path.isabs(prog["path"]):
        prog["path"] = os.path.abspath(prog["path"])
    return out


def _batch_result(line: bytes) -> Union[RunResult, Verdict]:
    try:
        d = json.loads(line)
    except ValueError as e:
        raise NsboxError("nsbox batch wrote a line that is not JSON: %r" % line[:200]) from e
    return _from_line(d)


def _batch_line(i: int, item: Any, timeout: Optional[float], limits: Optional[Dict[str, Any]], dedent: bool
                ) -> Dict[str, Any]:
    if isinstance(item, JudgeJob):
        return {"id": i, "kind": "judge", "spec": _spec_for_nsbox(item.spec)}
    code, test = (item, None) if isinstance(item, str) else item
    return _job(i, code, test, timeout, limits, dedent)


def _from_line(d: Dict[str, Any]) -> Union[RunResult, Verdict]:
    if str(d.get("schema", "")).startswith("nsbox.verdict") or ("outcome" not in d and "verdict" in d):
        return Verdict.from_json(d)
    if "outcome" not in d and d.get("status") == "error" and "id" in d:
        return Verdict.from_json(d)   # a judge job that could not start
    return RunResult.from_line(d)


def run_code(code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
             **kw: Any) -> RunResult:
    return Client().run_code(code, test_code, timeout, **kw)


def batch_run(pairs: Iterable[Union[Tuple[str, Optional[str]], str, JudgeJob]],
              timeout: Optional[float] = DEFAULT_TIMEOUT, **kw: Any) -> List[Union[RunResult, Verdict]]:
    return Client().batch_run(pairs, timeout, **kw)


def batch_stream(pairs: Iterable[Union[Tuple[str, Optional[str]], str, JudgeJob]],
                 timeout: Optional[float] = DEFAULT_TIMEOUT, **kw: Any) -> Iterator[Union[RunResult, Verdict]]:
    return Client().batch_stream(pairs, timeout, **kw)


def judge(spec: observations.SpecLike, observe: Optional[observations.PathLike] = None) -> Verdict:
    """observe: also write each case's observation there (see replay())."""
    if observe is not None:
        return observations.judge(spec, observe=observe)
    return Client().judge(spec)


def doctor() -> DoctorReport:
    return Client().doctor()


def test(harness: Union[str, "os.PathLike[str]"], workspace: Optional[Union[str, "os.PathLike[str]"]] = None,
         **kw: Any) -> TestReport:
    return Client().test(harness, workspace, **kw)


# judge(spec, observe=...) and replay(observations, spec): observations.py
from . import observations  # noqa: E402
from .observations import Observation, read_observations, replay  # noqa: E402
