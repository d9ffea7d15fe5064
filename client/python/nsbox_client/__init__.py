"""nsbox_client — run untrusted Python through nsbox, from Python (stdlib only).

    from nsbox_client import run_code, batch_run, judge, doctor

    r = run_code("def f(x):\n    return x + 1", test_code="assert f(1) == 2")
    r.status        # "pass" | "fail" | "timeout" | "error" (Literal: Outcome)
    r.label         # 1 only for pass: a reward signal

    for r in batch_run([(code, tests), ...], jobs=2):   # input order
        ...

    with Client().session(jobs=2) as s:   # one nsbox batch for many calls,
        r = s.run_code(code, tests)      # from any thread; warm when available

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

A running ``nsbox serve`` answers the same calls with the same result types:
``connect("unix:PATH")`` or ``connect("http://HOST:PORT", token=...)``
(service.py, docs/serve.md).

The nsbox binary: the ``nsbox`` argument of Client, else $NSBOX, else
``nsbox`` on PATH.
"""
from __future__ import annotations

from .batch import DEFAULT_TIMEOUT  # noqa: F401  (importable, as before the split)
from .client import Client
from .errors import EXIT_CANCELLED, EXIT_NSBOX_FAILURE, NsboxError, NsboxUnavailable  # noqa: F401
from .jobs import JudgeJob, TestOutcome, TestOutcomeName, TestReport, TestsResult
from .observations import Observation, read_observations, replay
from .results import CaseVerdict, DoctorCheck, DoctorReport, RunResult, Verdict
from .results import CaseVerdictName, CheckStatus, LimitName, Outcome, Status, VerdictName  # Literal types
from .service import AsyncServiceClient, ServiceClient, connect
from .session import Session
from .shortcuts import batch_run, batch_stream, doctor, judge, run_code, run_tests, test

__all__ = [
    "Client", "Session", "RunResult", "Verdict", "CaseVerdict", "DoctorReport", "DoctorCheck",
    "NsboxError", "NsboxUnavailable", "run_code", "batch_run", "batch_stream", "judge", "doctor",
    "replay", "read_observations", "Observation",
    "JudgeJob", "TestReport", "TestOutcome", "test",
    "connect", "ServiceClient", "AsyncServiceClient",
    "Outcome", "Status", "LimitName", "VerdictName", "CaseVerdictName", "CheckStatus",
    "run_tests", "TestsResult",
    "TestOutcomeName",
]
