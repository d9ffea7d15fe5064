"""Typed usage of nsbox_client that `mypy --strict` must accept (tests/test_typing.py).

Each assignment pins the exact type a call gives: List is invariant, so
`rs: List[RunResult] = batch_run(pairs)` fails if batch_run gives
List[RunResult | Verdict]. Never run, only type-checked.
"""
from typing import AsyncIterator, Iterator, List, Literal, Optional, Tuple, Union

from nsbox_client import (Client, JudgeJob, RunResult, Verdict, aio, batch_run, batch_stream, connect, run_code,
                          test)
from nsbox_client import CaseVerdictName, CheckStatus, TestOutcomeName, VerdictName
from nsbox_client.results import LimitName, Outcome, Status

pairs: List[Tuple[str, Optional[str]]] = [("def f(x):\n    return x + 1", "assert f(1) == 2")]
judged: List[JudgeJob] = [JudgeJob({"program": {"source": "print(1)"}, "cases": []})]
mixed: List[Union[Tuple[str, str], JudgeJob]] = [("print(1)", ""), JudgeJob({})]

# the line: a list of pairs gives RunResults, whose label is an int
labels: List[int] = [r.label for r in batch_run(pairs)]
runs: List[RunResult] = batch_run(pairs, timeout=5, jobs=2, limits={"memory": "128M"}, warm=True)
codes: List[RunResult] = batch_run(["print(1)", "print(2)"])
verdicts: List[Verdict] = batch_run(judged)
either: List[Union[RunResult, Verdict]] = batch_run(mixed)
stream: Iterator[RunResult] = batch_stream(pairs, jobs=2)
vstream: Iterator[Verdict] = batch_stream(judged)

client = Client(warm=False)
c_runs: List[RunResult] = client.batch_run(pairs, jobs=1)
c_verdicts: List[Verdict] = client.batch_run(judged)
c_either: List[Union[RunResult, Verdict]] = client.batch_run(mixed)
c_stream: Iterator[RunResult] = client.batch_stream(pairs)

# run_code's options, by name
r: RunResult = run_code("print(1)", test_code=None, timeout=2.5, limits={"pids": 8}, warm=False)
outcome: Outcome = r.status
four: Literal["pass", "fail", "timeout", "error"] = r.status
limit: Optional[LimitName] = r.limit
status: Optional[Status] = r.sandbox_status
start: Optional[Literal["cold", "warm"]] = r.start
if r.status == "timeout" and r.limit == "cpu_time":
    pass
verdict: Literal["pass", "fail", "undetermined"] = verdicts[0].verdict
case: Literal["pass", "fail", "undetermined", "not_run"] = verdicts[0].cases[0].verdict
credit: Optional[float] = verdicts[0].score
weight: float = verdicts[0].cases[0].weight
counted: int = verdicts[0].counts.get("pass", 0)
report = test("harness", "workspace", timeout=10, limits={"memory": "256M"})
test_outcome: TestOutcomeName = report.tests[0].outcome
report_verdict: VerdictName = report.verdict
case_name: CaseVerdictName = verdicts[0].cases[0].verdict
check: CheckStatus = client.doctor().checks[0].status

with client.session(jobs=2, warm=True) as s:
    sr: RunResult = s.run_code("print(1)", "pass", stdin="", timeout=1, memory="64M", limits={})

service = connect("unix:/run/nsbox.sock", token=None, timeout=60, retries=1, dedent=False)
svc: RunResult = service.run_code("print(1)", memory="64M")


async def use_aio() -> None:
    ar: RunResult = await aio.run_code("print(1)", timeout=1, limits={}, warm=None)
    a_runs: List[RunResult] = await aio.batch_run(pairs, jobs=2, warm=False)
    a_verdicts: List[Verdict] = await aio.batch_run(judged)
    a_either: List[Union[RunResult, Verdict]] = await aio.batch_run(mixed)
    a_stream: AsyncIterator[RunResult] = aio.batch_stream(pairs)
    async for x in aio.batch_stream(pairs):
        x_label: int = x.label
    ac = aio.AsyncClient()
    ac_runs: List[RunResult] = await ac.batch_run(pairs)
    async with ac.session(jobs=2) as asess:
        asr: RunResult = await asess.run_code("print(1)", stdin="x", memory="64M")
    print(ar, a_runs, a_verdicts, a_either, a_stream, x_label, ac_runs, asr)
