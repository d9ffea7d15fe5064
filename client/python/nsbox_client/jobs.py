"""Job kinds and reports of nsbox_client beyond the python job (stdlib only).

JudgeJob: a judge spec as one item of batch_run / batch_stream (its result is
a Verdict, next to the RunResults of the python pairs).
TestReport: what `nsbox test --json` reports (schema nsbox.tests/1).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, cast

from .results import VerdictName


@dataclass(frozen=True)
class JudgeJob:
    """A judge spec (the dict `nsbox judge` reads) run as one batch job:
    every case in a fresh sandbox, its expectations never entering one."""
    spec: Mapping[str, Any]


TestOutcomeName = Literal["passed", "failed", "error", "skipped", "not_run"]
"""TestOutcome.outcome: one hidden test's outcome (docs/contract.md)."""


@dataclass
class TestOutcome:
    name: str
    outcome: TestOutcomeName
    message: Optional[str]
    traceback: Optional[str]
    duration_ms: float


@dataclass
class TestReport:
    """`nsbox test`: verdict pass | fail | undetermined (the sandbox failed:
    correctness unknown), one TestOutcome per hidden test."""
    verdict: VerdictName
    reason: str
    tests: List[TestOutcome]
    counts: Dict[str, int]
    collect_errors: List[Dict[str, Any]]
    result: Optional[Dict[str, Any]]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "TestReport":
        """Raises KeyError/TypeError/ValueError on a report it cannot read."""
        if d.get("schema") != "nsbox.tests/1":
            raise ValueError("not an nsbox.tests/1 report")
        tests = [TestOutcome(str(t["name"]), cast(TestOutcomeName, str(t["outcome"])), t.get("message"),
                             t.get("traceback"), float(t.get("duration_ms") or 0.0)) for t in d["tests"]]
        counts = {str(k): int(v) for k, v in dict(d.get("counts") or {}).items()}
        return cls(cast(VerdictName, str(d["verdict"])), str(d.get("reason") or ""), tests, counts,
                   list(d.get("collect_errors") or []), d.get("result"), dict(d))


def spec_for_nsbox(spec: Mapping[str, Any]) -> Dict[str, Any]:
    """A JSON copy whose relative program.path is the caller's (nsbox reads
    the spec from stdin, or a jobs pipe: it would resolve it elsewhere)."""
    out: Dict[str, Any] = json.loads(json.dumps(spec))
    prog = out.get("program")
    if isinstance(prog, dict) and isinstance(prog.get("path"), str) and not os.path.isabs(prog["path"]):
        prog["path"] = os.path.abspath(prog["path"])
    return out


@dataclass
class TestsResult:
    """A batch `test` job (run_tests): status pass | fail | error (pass only
    when every test ran and passed; error only when the sandbox failed),
    label 1 only for pass, score = passed / total, one TestOutcome per test
    (outcome passed | failed). The tests ran in a process of their own that
    the code's process could not reach (docs/batch.md, "Test jobs")."""
    status: str
    label: int
    score: float
    counts: Dict[str, int]
    tests: List[TestOutcome]
    stderr: str
    elapsed_ms: float
    id: Any = None
    error: Optional[Dict[str, Any]] = None
    start: Optional[str] = None
    start_reason: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @classmethod
    def from_line(cls, d: Mapping[str, Any]) -> "TestsResult":
        """Raises KeyError/TypeError/ValueError on a line it cannot read."""
        err = d.get("stderr")
        tests = [TestOutcome(str(t["name"]), cast(TestOutcomeName, str(t["outcome"])), t.get("message"), None,
                             float(t.get("duration_ms") or 0.0)) for t in d.get("tests") or []]
        return cls(status=str(d["outcome"]), label=int(d.get("label", 0)), score=float(d.get("score") or 0.0),
                   counts={str(k): int(v) for k, v in dict(d.get("counts") or {}).items()}, tests=tests,
                   stderr=str(err.get("text") or "") if isinstance(err, dict) else "",
                   elapsed_ms=float(d.get("wall_ms") or 0.0), id=d.get("id"), error=d.get("error"),
                   start=d.get("start"), start_reason=d.get("start_reason"), raw=dict(d))
