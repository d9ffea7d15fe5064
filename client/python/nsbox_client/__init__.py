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
from typing import Any, Iterable, Iterator, Optional, Sequence, Tuple, Union

__all__ = [
    "Client", "RunResult", "Verdict", "CaseVerdict", "DoctorReport", "DoctorCheck",
    "NsboxError", "NsboxUnavailable", "run_code", "batch_run", "batch_stream", "judge", "doctor",
    "replay", "read_observations", "Observation",
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
    error: Optional[dict] = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_line(cls, d: dict) -> "RunResult":
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

    def as_dict(self) -> dict:
        """The executor's dict: status, stdout, stderr, return_code, elapsed_ms, label."""
        return {"status": self.status, "stdout": self.stdout, "stderr": self.stderr,
                "return_code": self.return_code, "elapsed_ms": self.elapsed_ms, "label": self.label}


@dataclass
class CaseVerdict:
    name: str
    verdict: str          # pass | fail | undetermined | not_run
    reason: str
    result: Optional[dict]


@dataclass
class Verdict:
    verdict: str          # pass | fail | undetermined
    cases: list
    program_sha256: Optional[str] = None
    raw: dict = field(default_factory=dict, repr=False)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def replayed(self) -> bool:
        """Judged from stored observations (replay()): no sandbox ran."""
        return self.raw.get("replayed") is True


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
    checks: list
    raw: dict = field(default_factory=dict, repr=False)


def _text(stream: Optional[dict]) -> str:
    if not stream:
        return ""
    text = stream.get("text", "")
    if stream.get("truncated") and stream.get("tail"):
        text += "\n[... truncated ...]\n" + stream["tail"]
    return text


def _job(id_: Any, code: str, test_code: Optional[str], timeout: Optional[float], limits: Optional[dict],
         dedent: bool) -> dict:
    if not isinstance(code, str):
        raise TypeError("code must be a str")
    if test_code is not None and not isinstance(test_code, str):
        raise TypeError("test_code must be a str or None")
    for name, text in (("code", code), ("test_code", test_code or "")):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:   # a lone surrogate: no file, no JSON line can hold it
            raise ValueError("%s is not valid Unicode text: %s" % (name, e)) from None
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
        self.extra_args = list(extra_args)
        self.dedent = dedent

    # -- plumbing -----------------------------------------------------------
    def _popen(self, args: Sequence[str], **kw) -> subprocess.Popen:
        try:
            return subprocess.Popen([self.nsbox, *args], **kw)
        except FileNotFoundError as e:
            raise NsboxUnavailable("nsbox not found (%s): install it, put it on PATH or set $NSBOX" % self.nsbox) from e
        except PermissionError as e:
            raise NsboxUnavailable("nsbox is not executable: %s" % self.nsbox) from e
        except OSError as e:
            raise NsboxUnavailable("cannot start nsbox (%s): %s" % (self.nsbox, e)) from e

    def _run(self, args: Sequence[str], input: Optional[bytes] = None, timeout: Optional[float] = None):
        p = self._popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = p.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise NsboxError("nsbox did not answer within %ss" % timeout)
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
    def batch_stream(self, pairs: Iterable[Union[Tuple[str, Optional[str]], str]], timeout: Optional[float] = DEFAULT_TIMEOUT,
                     jobs: Optional[int] = None, limits: Optional[dict] = None) -> Iterator[RunResult]:
        """Runs (code, test_code) pairs through one `nsbox batch`; yields each
        result as it completes (completion order; .id is the pair's index)."""
        args = ["batch", *self.extra_args]
        if jobs:
            args += ["-j", str(int(jobs))]
        p = self._popen(args + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        feed_error = []

        def feed():
            try:
                for i, pair in enumerate(pairs):
                    code, test = (pair, None) if isinstance(pair, str) else (pair[0], pair[1] if len(pair) > 1 else None)
                    p.stdin.write((json.dumps(_job(i, code, test, timeout, limits, self.dedent)) + "\n").encode())
                p.stdin.close()
            except BrokenPipeError:
                pass
            except Exception as e:   # a bad pair: stop nsbox, report it
                feed_error.append(e)
                p.terminate()
                try:
                    p.stdin.close()
                except OSError:
                    pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        stderr_box = []
        reader = threading.Thread(target=lambda: stderr_box.append(p.stderr.read()), daemon=True)
        reader.start()
        read_all = False
        try:
            for line in p.stdout:
                try:
                    d = json.loads(line)
                except ValueError as e:
                    raise NsboxError("nsbox batch wrote a line that is not JSON: %r" % line[:200]) from e
                yield RunResult.from_line(d)
            read_all = True
        finally:
            if p.poll() is None and (feed_error or writer.is_alive() or not read_all):
                # The caller stopped early (or a line was unreadable): SIGTERM
                # cancels the batch, killing every sandbox; its lines are
                # drained, as nsbox blocked on a full pipe would never see it.
                p.terminate()
            if not read_all:
                for _ in p.stdout:
                    pass
            writer.join()
            p.wait()
            reader.join()
            p.stdout.close()
            p.stderr.close()
        if feed_error:
            raise feed_error[0]
        if p.returncode != 0:
            raise self._refused("batch", p.returncode, (stderr_box[0] if stderr_box else b"").decode("utf-8", "replace"))

    def batch_run(self, pairs: Iterable[Union[Tuple[str, Optional[str]], str]], timeout: Optional[float] = DEFAULT_TIMEOUT,
                  jobs: Optional[int] = None, limits: Optional[dict] = None) -> list:
        """Like batch_stream, collected: one RunResult per pair, in input order."""
        pairs = list(pairs)
        got = {}
        for r in self.batch_stream(pairs, timeout=timeout, jobs=jobs, limits=limits):
            got[r.id] = r
        if len(got) != len(pairs) or set(got) != set(range(len(pairs))):
            missing = sorted(set(range(len(pairs))) - set(got))
            raise NsboxError("nsbox batch answered %d of %d jobs (none for %s)" % (len(got), len(pairs), missing[:10]))
        return [got[i] for i in range(len(pairs))]

    def run_code(self, code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 limits: Optional[dict] = None) -> RunResult:
        """One (code, test_code) pair in a fresh sandbox: test_code runs after
        code in the same module. timeout is the wall-clock limit in seconds."""
        results = self.batch_run([(code, test_code)], timeout=timeout, jobs=1, limits=limits)
        if len(results) != 1:
            raise NsboxError("nsbox batch gave %d results for one job" % len(results))
        return results[0]

    # -- judge and doctor -------------------------------------------------------
    def judge(self, spec: Union[dict, str, os.PathLike]) -> Verdict:
        """A judge spec (a dict, or the path of a SPEC.json) -> its verdict."""
        if isinstance(spec, dict):
            spec = json.loads(json.dumps(spec))
            prog = spec.get("program")
            if isinstance(prog, dict) and isinstance(prog.get("path"), str) and not os.path.isabs(prog["path"]):
                prog["path"] = os.path.abspath(prog["path"])   # as the caller meant it, not /dev's
            rc, out, err = self._run(["judge", "--json", *self.extra_args, "/dev/stdin"],
                                     input=json.dumps(spec).encode())
        else:
            rc, out, err = self._run(["judge", "--json", *self.extra_args, os.fspath(spec)])
        if rc not in (0, 1, 3):
            raise self._refused("judge", rc, err)
        try:
            d = json.loads(out)
            cases = [CaseVerdict(c["name"], c["verdict"], c.get("reason", ""), c.get("result")) for c in d["cases"]]
            return Verdict(d["verdict"], cases, d.get("program_sha256"), d)
        except (ValueError, KeyError, TypeError) as e:
            raise NsboxError("nsbox judge gave an unreadable verdict: %r" % out[:200]) from e

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


def run_code(code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT, **kw) -> RunResult:
    return Client().run_code(code, test_code, timeout, **kw)


def batch_run(pairs, timeout: Optional[float] = DEFAULT_TIMEOUT, **kw) -> list:
    return Client().batch_run(pairs, timeout, **kw)


def batch_stream(pairs, timeout: Optional[float] = DEFAULT_TIMEOUT, **kw) -> Iterator[RunResult]:
    return Client().batch_stream(pairs, timeout, **kw)


def judge(spec: observations.SpecLike, observe: Optional[observations.PathLike] = None) -> Verdict:
    """observe: also write each case's observation there (see replay())."""
    if observe is not None:
        return observations.judge(spec, observe=observe)
    return Client().judge(spec)


def doctor() -> DoctorReport:
    return Client().doctor()


# judge(spec, observe=...) and replay(observations, spec): observations.py
from . import observations  # noqa: E402
from .observations import Observation, read_observations, replay  # noqa: E402
