"""The lines `nsbox batch` reads and writes: an item (a (code, test_code)
pair, code alone, or a JudgeJob) as a job line, and an output line as a
result."""
from __future__ import annotations

import json
import re
import textwrap
from typing import Any, Dict, Optional, Tuple, Union

from . import validate
from .errors import NsboxError
from .jobs import JudgeJob, spec_for_nsbox
from .results import RunResult, Verdict, from_line

# What batch_run / batch_stream take and give, for their overloads: python
# items give RunResults, JudgeJobs give Verdicts, a mix gives either.
PythonItem = Union[Tuple[str, Optional[str]], str]
Item = Union[PythonItem, JudgeJob]
Result = Union[RunResult, Verdict]

DEFAULT_TIMEOUT = 10
# The longest job line nsbox reads (batch/batch_run.c LINE_MAX_BYTES); a longer one is
# a bad line whose id nsbox may not be able to name.
LINE_MAX = 64 << 20


def python_job(id_: Any, code: str, test_code: Optional[str], timeout: Optional[float],
               limits: Optional[Dict[str, Any]], dedent: bool, stdin: Optional[str] = None) -> Dict[str, Any]:
    """A python job line (its arguments checked: TypeError, ValueError)."""
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
    stdin = validate.stdin(stdin)
    if stdin is not None:
        job["stdin"] = stdin
    return job


def test_job(id_: Any, code: str, test_code: str, entry_point: Optional[str], timeout: Optional[float],
             limits: Optional[Dict[str, Any]], dedent: bool, stdin: Optional[str] = None) -> Dict[str, Any]:
    """A test job line: code and test_code in two processes (docs/batch.md,
    "Test jobs"); its arguments checked as a python job's."""
    if test_code is None:
        raise TypeError("test_code: a test job needs the tests (a str)")
    job = python_job(id_, code, test_code, timeout, limits, dedent, stdin)
    job["kind"] = "test"
    if entry_point is not None:
        if not isinstance(entry_point, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.()]{0,99}", entry_point):
            raise ValueError("entry_point: the code's function, a Python name or attributes and calls without "
                             "arguments on one (Solution().twoSum), got %r" % (entry_point,))
        job["entry_point"] = entry_point
    return job


def line(i: int, item: Any, timeout: Optional[float], limits: Optional[Dict[str, Any]], dedent: bool
         ) -> Dict[str, Any]:
    """One job line for @item, its id the item's index @i."""
    if isinstance(item, JudgeJob):
        return {"id": i, "kind": "judge", "spec": spec_for_nsbox(item.spec)}
    code, test = (item, None) if isinstance(item, str) else item
    return python_job(i, code, test, timeout, limits, dedent)


def python_result(r: Union[RunResult, Verdict]) -> RunResult:
    """The result of a python job: a verdict in its place is nsbox's error."""
    if not isinstance(r, RunResult):
        raise NsboxError("nsbox batch answered a python job with a verdict")
    return r


def result(text: bytes) -> Union[RunResult, Verdict]:
    """One output line as a RunResult or Verdict; NsboxError if not JSON."""
    try:
        d = json.loads(text)
    except ValueError as e:
        raise NsboxError("nsbox batch wrote a line that is not JSON: %r" % text[:200]) from e
    return from_line(d)
