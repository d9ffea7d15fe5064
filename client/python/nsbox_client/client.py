"""Client: one nsbox binary, the options for every command, and the
processes it starts (batch fed and read in threads, judge, test, doctor)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from typing import (IO, TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple,
                    TypeVar, Union, overload)

from . import batch, validate
from .batch import DEFAULT_TIMEOUT, Item, PythonItem, Result
from .errors import NsboxError, NsboxUnavailable, refused
from .jobs import JudgeJob, TestReport, TestsResult, spec_for_nsbox
from .results import DoctorCheck, DoctorReport, RunResult, Verdict

if TYPE_CHECKING:
    from .session import Session


class Client:
    """One nsbox binary and the options passed to every command.

    extra_args: flags for every batch and judge (e.g. ["--memory", "128M"]);
    dedent: remove the common indentation of code and test_code first, as
    the executor this client replaces did (textwrap.dedent);
    warm: python jobs of batch_run, batch_stream, run_code and session()
    start warm (`nsbox batch --warm`): None (default) when `nsbox doctor`
    reports warm starts available (asked once per client; a doctor that
    fails counts as not available), True always (nsbox runs a job cold,
    with its start_reason, where it cannot), False never.
    image: an image REF (`--image`, docs/images.md) every batch, judge, test
    and doctor of this client runs on (a result's raw["image"] names the
    digest that ran); warm starts are then unavailable (doctor says so).
    """

    def __init__(self, nsbox: Optional[str] = None, extra_args: Sequence[str] = (), dedent: bool = True,
                 warm: Optional[bool] = None, image: Optional[str] = None):
        self.nsbox = nsbox or os.environ.get("NSBOX") or shutil.which("nsbox") or "nsbox"
        self.extra_args = validate.arguments(extra_args, "extra_args")
        if image is not None:
            if not isinstance(image, str) or not image or "\0" in image:
                raise ValueError("image: a REF such as 'oci:DIR:TAG', got %r" % (image,))
            self.extra_args = [*self.extra_args, "--image", image]
        self.image = image
        self.dedent = dedent
        self.warm = validate.warm(warm)
        self._warm_lock = threading.Lock()
        self._warm_available: Optional[bool] = None

    # -- warm starts ------------------------------------------------------------
    def warm_available(self) -> bool:
        """Whether `nsbox doctor --json` reports warm starts available
        ("warm": {"available": true}); asked once, then remembered. A doctor
        that cannot run or answers something unreadable: False."""
        with self._warm_lock:
            if self._warm_available is None:
                try:
                    self._warm_available = self.doctor().warm
                except NsboxError:
                    self._warm_available = False
            return self._warm_available

    def warm_args(self, warm: Optional[bool] = None) -> List[str]:
        """["--warm"] when a batch started now should ask for warm starts:
        @warm (a call's own choice) else the client's warm setting."""
        choice = validate.warm(warm)
        if choice is None:
            choice = self.warm
        if choice is None:
            choice = self.warm_available()
        return ["--warm"] if choice else []

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

    # -- python jobs ----------------------------------------------------------
    # The overloads say what a call gives for what it is given: python items
    # (pairs, code) RunResults, JudgeJobs Verdicts, a mix either. A list of
    # pairs also fits the mixed overload, whose List[Result] is not a
    # List[RunResult] (lists are invariant): mypy calls that an unsafe
    # overlap, but it picks the first overload that fits, which is the one
    # meant. (batch_run only: Iterator is covariant, batch_stream is fine.)
    @overload
    def batch_stream(self, pairs: Iterable[PythonItem], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                     limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> Iterator[RunResult]: ...

    @overload
    def batch_stream(self, pairs: Iterable[JudgeJob], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                     limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> Iterator[Verdict]: ...

    @overload
    def batch_stream(self, pairs: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                     limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> Iterator[Result]: ...

    def batch_stream(self, pairs: Iterable[Item],
                     timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                     limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None
                     ) -> Iterator[Result]:
        """Runs (code, test_code) pairs (or code, or JudgeJob items: a Verdict
        each) through one `nsbox batch`; yields each result as it completes
        (completion order; .id is the item's index). A list is checked whole
        before nsbox starts; a lazy iterable item by item as it is fed.
        warm: this call's choice of warm starts (None: the client's)."""
        validate.collection(pairs)
        validate.timeout(timeout)
        validate.limits(limits)
        validate.jobs(jobs)
        validate.warm(warm)
        if isinstance(pairs, (list, tuple)):
            pairs = list(validate.items(pairs))
        args = ["batch", "--quiet", *self.extra_args, *self.warm_args(warm)]
        if jobs:
            args += ["-j", str(int(jobs))]
        p = self._popen(args + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdin: IO[bytes] = p.stdin  # type: ignore[assignment]  # PIPE: never None
        feed_error: List[Exception] = []

        def feed() -> None:
            try:
                for i, pair in enumerate(pairs):
                    stdin.write((json.dumps(batch.line(i, validate.item(i, pair), timeout, limits, self.dedent))
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
                yield batch.result(line)
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
            raise refused("batch", p.returncode, (stderr_box[0] if stderr_box else b"").decode("utf-8", "replace"))

    @overload
    def batch_run(self, pairs: Iterable[PythonItem],  # type: ignore[misc]  # see batch_stream
                  timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                  limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[RunResult]: ...

    @overload
    def batch_run(self, pairs: Iterable[JudgeJob],  # type: ignore[misc]  # see batch_stream
                  timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                  limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Verdict]: ...

    @overload
    def batch_run(self, pairs: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                  limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Result]: ...

    def batch_run(self, pairs: Iterable[Item],
                  timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                  limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None
                  ) -> Union[List[RunResult], List[Verdict], List[Result]]:
        """Like batch_stream, collected: one result per item, in input order.
        Every item and argument is checked before the first one runs."""
        pairs = list(validate.items(list(validate.collection(pairs))))
        got: Dict[Any, Result] = {}
        stream: Iterator[Result] = self.batch_stream(pairs, timeout=timeout, jobs=jobs, limits=limits, warm=warm)
        for r in stream:
            got[r.id] = r
        if len(got) != len(pairs) or set(got) != set(range(len(pairs))):
            missing = sorted(set(range(len(pairs))) - set(got))
            raise NsboxError("nsbox batch answered %d of %d jobs (none for %s)" % (len(got), len(pairs), missing[:10]))
        return [got[i] for i in range(len(pairs))]

    def run_code(self, code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None) -> RunResult:
        """One (code, test_code) pair in a fresh sandbox: test_code runs after
        code in the same module. timeout is the wall-clock limit in seconds.
        Each call starts nsbox: for many calls, use session()."""
        results = self.batch_run([(code, test_code)], timeout=timeout, jobs=1, limits=limits, warm=warm)
        if len(results) != 1:
            raise NsboxError("nsbox batch gave %d results for one job" % len(results))
        return batch.python_result(results[0])

    def run_tests(self, code: str, test_code: str, entry_point: Optional[str] = None,
                  timeout: Optional[float] = DEFAULT_TIMEOUT, limits: Optional[Dict[str, Any]] = None,
                  stdin: Optional[str] = None, warm: Optional[bool] = None) -> TestsResult:
        """One batch `test` job: @test_code's tests (each top-level assert,
        test_* function, check(<entry_point>)) run in a process of their own
        against @code's process, reached only by messages of plain data:
        exits, __eq__ tricks, skips, reading the tests or a forged report
        end in status "fail" (docs/batch.md, "Test jobs")."""
        job = batch.test_job(0, code, test_code, entry_point, timeout, limits, self.dedent, stdin)
        validate.warm(warm)
        rc, out, err = self._run(["batch", "--quiet", *self.extra_args, *self.warm_args(warm), "-"],
                                 input=(json.dumps(job) + "\n").encode())
        lines = out.splitlines()
        if rc not in (0, 2) or len(lines) != 1:
            raise refused("batch", rc, err)
        try:
            d = json.loads(lines[0])
            if rc == 2:   # the line could not become a job: the caller's mistake
                raise NsboxError("nsbox refused the test job: %s" % (d.get("error") or {}).get("message"))
            return TestsResult.from_line(d)
        except (KeyError, TypeError, ValueError) as e:
            raise NsboxError("nsbox batch wrote a test job line this client cannot read: %r" % lines[0][:200]) from e

    # -- judge and doctor -------------------------------------------------------
    def judge(self, spec: Union[Dict[str, Any], str, "os.PathLike[str]"], warm: Optional[bool] = None) -> Verdict:
        """A judge spec (a dict, or the path of a SPEC.json) -> its verdict.
        warm: this call's choice of warm starts for the cases (None: the
        client's; the verdict's start and start_reason say what happened)."""
        # every argument checked before anything starts (doctor included)
        data = json.dumps(spec_for_nsbox(validate.spec(spec))).encode() if isinstance(spec, dict) else None
        path = "/dev/stdin" if isinstance(spec, dict) else os.fspath(spec)
        validate.warm(warm)
        rc, out, err = self._run(["judge", "--json", *self.extra_args, *self.warm_args(warm), path], input=data)
        return _answer("judge", "verdict", rc, out, err, Verdict.from_json)

    def test(self, harness: Union[str, "os.PathLike[str]"], workspace: Optional[Union[str, "os.PathLike[str]"]] = None,
             timeout: Optional[float] = None, limits: Optional[Dict[str, Any]] = None) -> TestReport:
        """`nsbox test`: the hidden tests in @harness (read-only) against
        @workspace (read-write). nsbox test needs one: without it nsbox
        refuses (NsboxError, with its message), never grading an
        empty workspace."""
        args = _testcmd_args(harness, workspace, timeout, limits)
        rc, out, err = self._run(["test", "--json", *args, *self.extra_args])
        return _answer("test", "report", rc, out, err, TestReport.from_json)

    def doctor(self) -> DoctorReport:
        """What this host can enforce (nsbox doctor --json)."""
        rc, out, err = self._run(["doctor", "--json", *(["--image", self.image] if self.image else [])],
                                 timeout=600 if self.image else 60)   # an image may unpack first
        return doctor_report(rc, out, err)

    # -- a long-lived batch -----------------------------------------------------------
    def session(self, jobs: Optional[int] = None, warm: Optional[bool] = None,
                max_in_flight: Optional[int] = None) -> "Session":
        """One `nsbox batch` kept open (with --warm as @warm, else the
        client's warm setting decides) that run_code calls, from any
        thread, send their jobs to: see Session. Use it in a with block."""
        from .session import Session
        return Session(self, jobs=jobs, warm=warm, max_in_flight=max_in_flight)


def doctor_report(rc: int, out: bytes, err: str) -> DoctorReport:
    """`nsbox doctor --json`'s exit status and output as a DoctorReport."""
    if rc not in (0, 1):
        raise refused("doctor", rc, err)
    try:
        d = json.loads(out)
        checks = [DoctorCheck(c["name"], c["status"], c.get("detail", ""), c.get("fix", "")) for c in d["checks"]]
        w = d.get("warm")
        warm = isinstance(w, dict) and w.get("available") is True
        reason = w.get("reason") if isinstance(w, dict) and isinstance(w.get("reason"), str) else None
        return DoctorReport(bool(d["ready"]), d.get("isolation", ""), checks, d, warm, reason)
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
        raise refused(cmd, rc, err)
    try:
        return parse(json.loads(out))
    except (ValueError, KeyError, TypeError) as e:
        raise NsboxError("nsbox %s gave an unreadable %s: %r" % (cmd, what, out[:200])) from e
