"""The answers nsbox gives, as Python objects: RunResult (one python job),
Verdict and CaseVerdict (judge), DoctorReport and DoctorCheck (doctor); and
which of them a batch output line is."""
from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional, Union

from .errors import NsboxError

# The closed sets of values docs/contract.md names, as types: mypy --strict
# then catches `r.status == "passed"` (a TestOutcome word on a RunResult)
# and an IDE offers the words. Values come from nsbox's JSON unchecked: an
# nsbox newer than this client could write a word not listed here.
Outcome = Literal["pass", "fail", "timeout", "error"]
"""RunResult.status: a python job's outcome (batch's `outcome`)."""
Status = Literal["exited", "signaled", "limit", "cancelled", "error"]
"""A result object's `status` (RunResult.raw["status"]; RunResult.sandbox_status)."""
LimitName = Literal["wall_time", "cpu_time", "memory", "pids", "output", "file_size"]
"""A result object's `limit`: which limit stopped the program."""
VerdictName = Literal["pass", "fail", "undetermined"]
CaseVerdictName = Literal["pass", "fail", "undetermined", "not_run"]
CheckStatus = Literal["ok", "degraded", "unavailable"]
Start = Literal["cold", "warm"]


@dataclass
class RunResult:
    """One python job, as the executor it replaces reported it, plus detail.

    status: pass (exited 0) | fail (nonzero exit, a signal, a memory, pids,
    output or file-size limit) | timeout (wall or CPU time) | error (the
    sandbox failed: correctness unknown).
    return_code: the exit code; -N when killed by signal N; None on timeout
    or error.
    start: "warm" (forked from a ready interpreter, `nsbox batch --warm`) or
    "cold"; None from an nsbox that does not say. start_reason: why a job
    that asked for a warm start ran cold (None otherwise).
    files: the files asked for with fetch_files and read back from the
    job's workspace (name -> bytes); files_refused: the others, and why
    (a symbolic link, a FIFO, too large, missing). Both empty when none
    was asked.
    """
    status: Outcome
    stdout: str
    stderr: str
    return_code: Optional[int]
    elapsed_ms: float
    label: int
    id: Any = None
    limit: Optional[LimitName] = None
    error: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)
    start: Optional[Start] = None
    start_reason: Optional[str] = None
    files: Dict[str, bytes] = field(default_factory=dict, repr=False)
    files_refused: Dict[str, str] = field(default_factory=dict)

    @property
    def sandbox_status(self) -> Optional[Status]:
        """The result object's own `status` (exited, signaled, limit,
        cancelled, error), as docs/contract.md names it; None if absent."""
        st = self.raw.get("status")
        return st if st in ("exited", "signaled", "limit", "cancelled", "error") else None

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
                   id=d.get("id"), limit=d.get("limit"), error=d.get("error"), raw=d,
                   start=_start(d.get("start")), start_reason=_optional_text(d.get("start_reason")),
                   files={k: base64.b64decode(v) for k, v in (d.get("files") or {}).items()},
                   files_refused=dict(d.get("files_refused") or {}))

    def as_dict(self) -> Dict[str, Any]:
        """The executor's dict: status, stdout, stderr, return_code, elapsed_ms, label."""
        return {"status": self.status, "stdout": self.stdout, "stderr": self.stderr,
                "return_code": self.return_code, "elapsed_ms": self.elapsed_ms, "label": self.label}


@dataclass
class CaseVerdict:
    name: str
    verdict: CaseVerdictName
    reason: str
    result: Optional[Dict[str, Any]]
    weight: float = 1.0   # its share of the score (the spec's `weight`, default 1)


@dataclass
class Verdict:
    verdict: VerdictName
    cases: List[CaseVerdict]
    program_sha256: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)
    id: Any = None        # its batch item's index (batch_run / batch_stream)
    start: Optional[Start] = None        # None: an nsbox that does not say
    start_reason: Optional[str] = None   # why a warm start was asked and not had
    # the passed cases' share of the total weight, 0 to 1: partial credit.
    # None when a case could not be judged (a sandbox failure never lowers
    # a score), or from an nsbox before #32
    score: Optional[float] = None
    counts: Dict[str, int] = field(default_factory=dict)   # cases by verdict: pass, fail, undetermined, not_run

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
            return cls("undetermined", [], None, d, d.get("id"), _start(d.get("start")),
                       _optional_text(d.get("start_reason")))
        cases = [CaseVerdict(c["name"], c["verdict"], c.get("reason", ""), c.get("result"),
                             float(c.get("weight", 1.0))) for c in d["cases"]]
        score = d.get("score")
        counts = {str(k): int(v) for k, v in dict(d.get("counts") or {}).items()}
        return cls(d["verdict"], cases, d.get("program_sha256"), d, d.get("id"), _start(d.get("start")),
                   _optional_text(d.get("start_reason")), None if score is None else float(score), counts)


@dataclass
class DoctorCheck:
    name: str
    status: CheckStatus
    detail: str
    fix: str


@dataclass
class DoctorReport:
    ready: bool
    isolation: str
    checks: List[DoctorCheck]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)
    warm: bool = False                  # `batch --warm` / `judge --warm` start jobs warm here
    warm_reason: Optional[str] = None   # when not: why (jobs then run cold and say so)


def _optional_text(value: Any) -> Optional[str]:
    """A str field that older nsbox versions do not write (start,
    start_reason): None when absent or not a str."""
    return value if isinstance(value, str) else None


def _start(value: Any) -> Optional[Start]:
    """start: "cold" or "warm"; None when absent (older nsbox) or another word."""
    return "cold" if value == "cold" else "warm" if value == "warm" else None


def _text(stream: Optional[Dict[str, Any]]) -> str:
    if not stream:
        return ""
    text: str = stream.get("text", "")
    if stream.get("truncated") and stream.get("tail"):
        text += "\n[... truncated ...]\n" + stream["tail"]
    return text


def from_line(d: Dict[str, Any]) -> Union[RunResult, Verdict]:
    """A batch output line: a Verdict for a judge job, else a RunResult."""
    if str(d.get("schema", "")).startswith("nsbox.verdict") or ("outcome" not in d and "verdict" in d):
        return Verdict.from_json(d)
    if "outcome" not in d and d.get("status") == "error" and "id" in d:
        return Verdict.from_json(d)   # a judge job that could not start
    return RunResult.from_line(d)
