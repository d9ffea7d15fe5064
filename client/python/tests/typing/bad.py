"""Typed usage that `mypy --strict` must reject, line by line: each line
marked `# E: TEXT` must get an error containing TEXT, and no other line any
(tests/test_typing.py). Were the overloads, the spelled-out options or the
Literal statuses gone, these lines would pass and the test fail."""
from typing import List, Optional, Tuple

from nsbox_client import Client, JudgeJob, RunResult, Verdict, aio, batch_run, run_code

pairs: List[Tuple[str, Optional[str]]] = [("print(1)", None)]
judged: List[JudgeJob] = [JudgeJob({})]

wrong1: List[Verdict] = batch_run(pairs)  # E: expression has type "List[RunResult]"
wrong2: List[RunResult] = batch_run(judged)  # E: expression has type "List[Verdict]"
wrong3: List[RunResult] = batch_run([("print(1)", None), JudgeJob({})])  # E: expression has type "List[Union[RunResult, Verdict]]"
wrong4: List[Verdict] = Client().batch_run(pairs)  # E: expression has type "List[RunResult]"
unknown = run_code("print(1)", memroy="64M")  # E: Unexpected keyword argument "memroy"
bad_timeout = run_code("print(1)", timeout="2s")  # E: incompatible type "str"
r: RunResult = run_code("print(1)")
if r.status == "passed":  # E: Non-overlapping equality check
    pass
if r.limit == "time":  # E: Non-overlapping equality check
    pass
n: int = r.status  # E: variable has type "int"
v: Verdict = batch_run([JudgeJob({})])[0]
reward: float = v.score  # E: variable has type "float"


dicts = [{"code": "print(1)", "tests": ""}]
wrong5 = batch_run(dicts)  # E: incompatible type "List[Dict[str, str]]"


async def use_aio() -> None:
    a: List[Verdict] = await aio.batch_run(pairs)  # E: expression has type "List[RunResult]"
    # an item that is no pair, code or JudgeJob: refused as the sync client does
    b = await aio.batch_run(dicts)  # E: incompatible type "List[Dict[str, str]]"
    c = await aio.AsyncClient().batch_run([("a", "b", "c")])  # E: incompatible type "Tuple[str, str, str]"
    d = aio.batch_stream([1, 2])  # E: List item 0 has incompatible type "int"
    e = aio.AsyncClient().batch_stream(dicts)  # E: incompatible type "List[Dict[str, str]]"
    print(a, b, c, d, e)
