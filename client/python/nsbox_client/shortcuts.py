"""The one-call forms: each a default Client (the nsbox on $NSBOX or PATH)."""
from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, List, Optional, Tuple, Union

from . import observations
from .batch import DEFAULT_TIMEOUT
from .client import Client
from .jobs import JudgeJob, TestReport, TestsResult
from .results import DoctorReport, RunResult, Verdict


def run_code(code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
             **kw: Any) -> RunResult:
    return Client().run_code(code, test_code, timeout, **kw)


def batch_run(pairs: Iterable[Union[Tuple[str, Optional[str]], str, JudgeJob]],
              timeout: Optional[float] = DEFAULT_TIMEOUT, **kw: Any) -> List[Union[RunResult, Verdict]]:
    return Client().batch_run(pairs, timeout, **kw)


def batch_stream(pairs: Iterable[Union[Tuple[str, Optional[str]], str, JudgeJob]],
                 timeout: Optional[float] = DEFAULT_TIMEOUT, **kw: Any) -> Iterator[Union[RunResult, Verdict]]:
    return Client().batch_stream(pairs, timeout, **kw)


def run_tests(code: str, test_code: str, entry_point: Optional[str] = None,
              timeout: Optional[float] = DEFAULT_TIMEOUT, **kw: Any) -> TestsResult:
    """The tests outside the code's process: Client.run_tests."""
    return Client().run_tests(code, test_code, entry_point, timeout, **kw)


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
