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
