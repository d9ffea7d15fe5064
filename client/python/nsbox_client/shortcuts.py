"""The one-call forms: each a default Client (the nsbox on $NSBOX or PATH)."""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Union, overload

from . import observations
from .batch import DEFAULT_TIMEOUT, Item, PythonItem, Result
from .client import Client
from .jobs import JudgeJob, TestReport, TestsResult
from .results import DoctorReport, RunResult, Verdict

# Every option spelled out (an IDE shows them; mypy checks them), the same
# as Client's methods, which document them.


def run_code(code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
             limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None) -> RunResult:
    return Client().run_code(code, test_code, timeout, limits=limits, warm=warm)


# python items give RunResults, JudgeJobs Verdicts, a mix either (see
# Client.batch_stream for the overlap mypy is told to ignore)
@overload
def batch_run(pairs: Iterable[PythonItem],  # type: ignore[misc]  # see Client.batch_stream
              timeout: Optional[float] = ..., jobs: Optional[int] = ...,
              limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[RunResult]: ...


@overload
def batch_run(pairs: Iterable[JudgeJob],  # type: ignore[misc]  # see Client.batch_stream
              timeout: Optional[float] = ..., jobs: Optional[int] = ...,
              limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Verdict]: ...


@overload
def batch_run(pairs: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
              limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Result]: ...


def batch_run(pairs: Iterable[Item], timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
              limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None
              ) -> Union[List[RunResult], List[Verdict], List[Result]]:
    return Client().batch_run(pairs, timeout, jobs=jobs, limits=limits, warm=warm)


@overload
def batch_stream(pairs: Iterable[PythonItem], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                 limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> Iterator[RunResult]: ...


@overload
def batch_stream(pairs: Iterable[JudgeJob], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                 limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> Iterator[Verdict]: ...


@overload
def batch_stream(pairs: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                 limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> Iterator[Result]: ...


def batch_stream(pairs: Iterable[Item], timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                 limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None) -> Iterator[Result]:
    return Client().batch_stream(pairs, timeout, jobs=jobs, limits=limits, warm=warm)


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
         timeout: Optional[float] = None, limits: Optional[Dict[str, Any]] = None) -> TestReport:
    return Client().test(harness, workspace, timeout=timeout, limits=limits)
