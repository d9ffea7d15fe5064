"""asyncio API of nsbox_client (stdlib only): the same jobs, awaited.

    from nsbox_client import aio

    r = await aio.run_code("print(1)")
    async for r in aio.batch_stream([(code, tests), ...], jobs=2):
        ...                                   # completion order, .id = index
    v = await aio.judge(spec)

    async with AsyncClient(warm=True).session(jobs=2) as s:   # one nsbox batch
        r = await s.run_code(code, test_code, stdin="1\n")

nsbox runs as a child process read through the event loop: nothing blocks
it, and nothing runs in this process. Arguments are checked (TypeError /
ValueError) before nsbox starts. Cancelling a task, or leaving an
`async for` early, stops nsbox with SIGTERM: it kills every sandbox of the
batch and exits, and it is reaped before the cancellation completes.
"""
from __future__ import annotations

import asyncio
import json
import os
from types import TracebackType
from typing import Any, AsyncIterator, Dict, Iterable, List, Optional, Sequence, Tuple, Type, Union, overload

from . import batch, validate
from .batch import DEFAULT_TIMEOUT, Item, PythonItem
from .client import Client, _answer, _testcmd_args, doctor_report
from .errors import EXIT_BAD_LINES, NsboxError, NsboxUnavailable, refused
from .jobs import JudgeJob, TestReport, spec_for_nsbox
from .results import DoctorReport, RunResult, Verdict
from .session import IN_FLIGHT_MAX, answer_id, batch_args, default_in_flight, ended_error, job_line, unknown_id

__all__ = ["AsyncClient", "AsyncSession", "run_code", "batch_run", "batch_stream", "judge", "test"]

# A result line holds up to --output-limit bytes per stream, JSON-escaped.
_LINE_LIMIT = 1 << 30
Result = Union[RunResult, Verdict]


class AsyncClient:
    """Client's binary and options (warm too), for asyncio callers."""

    def __init__(self, nsbox: Optional[str] = None, extra_args: Sequence[str] = (), dedent: bool = True,
                 warm: Optional[bool] = None) -> None:
        self._client = Client(nsbox, extra_args, dedent, warm)
        self._warm_probe: "Optional[asyncio.Future[bool]]" = None

    @property
    def nsbox(self) -> str:
        return str(self._client.nsbox)

    async def _spawn(self, args: Sequence[str]) -> "asyncio.subprocess.Process":
        try:
            return await asyncio.create_subprocess_exec(
                self.nsbox, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=_LINE_LIMIT)
        except FileNotFoundError as e:
            raise NsboxUnavailable("nsbox not found (%s): install it, put it on PATH or set $NSBOX"
                                   % self.nsbox) from e
        except PermissionError as e:
            raise NsboxUnavailable("nsbox is not executable: %s" % self.nsbox) from e
        except OSError as e:
            raise NsboxUnavailable("cannot start nsbox (%s): %s" % (self.nsbox, e)) from e

    @staticmethod
    async def _stop(proc: "asyncio.subprocess.Process") -> None:
        """SIGTERM (nsbox cancels every sandbox), drain, reap: never leaves
        nsbox blocked on a full pipe, nor a zombie."""
        if proc.returncode is None:
            try:
                proc.terminate()
            except ProcessLookupError:
                pass
        if proc.stdout is not None:
            while await proc.stdout.read(1 << 16):
                pass
        await proc.wait()

    async def _communicate(self, args: Sequence[str], data: Optional[bytes] = None) -> Tuple[int, bytes, str]:
        proc = await self._spawn(args)
        try:
            out, err = await proc.communicate(data)
        except BaseException:
            await asyncio.shield(self._stop(proc))
            raise
        return int(proc.returncode or 0), out, err.decode("utf-8", "replace")

    # -- warm starts and doctor ---------------------------------------------------
    async def doctor(self) -> DoctorReport:
        """What this host can enforce (nsbox doctor --json)."""
        rc, out, err = await asyncio.wait_for(self._communicate(["doctor", "--json"]), 60)
        return doctor_report(rc, out, err)

    async def warm_available(self) -> bool:
        """Client.warm_available, awaited: nsbox doctor asked once (calls
        made meanwhile await the same answer)."""
        if self._client._warm_available is not None:
            return self._client._warm_available
        if self._warm_probe is None:
            self._warm_probe = asyncio.ensure_future(self._probe_warm())
        return await asyncio.shield(self._warm_probe)

    async def _probe_warm(self) -> bool:
        try:
            available = (await self.doctor()).warm
        except (NsboxError, asyncio.TimeoutError):
            available = False
        self._client._warm_available = available
        return available

    async def warm_args(self, warm: Optional[bool] = None) -> List[str]:
        """Client.warm_args, awaited."""
        choice = validate.warm(warm)
        if choice is None:
            choice = self._client.warm
        if choice is None:
            choice = await self.warm_available()
        return ["--warm"] if choice else []

    def session(self, jobs: Optional[int] = None, warm: Optional[bool] = None,
                max_in_flight: Optional[int] = None) -> "AsyncSession":
        """Client.session for asyncio: `async with client.session(...) as s:
        r = await s.run_code(...)`."""
        return AsyncSession(self, jobs, warm, max_in_flight)

    # -- batch ------------------------------------------------------------------
    # As Client's: python items give RunResults, JudgeJobs Verdicts, any
    # other mix either (batch_run's first two overloads: see Client.batch_stream).
    @overload
    def batch_stream(self, items: Iterable[PythonItem], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                     limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...
                     ) -> AsyncIterator[RunResult]: ...

    @overload
    def batch_stream(self, items: Iterable[JudgeJob], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                     limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...
                     ) -> AsyncIterator[Verdict]: ...

    @overload
    def batch_stream(self, items: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                     limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...
                     ) -> AsyncIterator[Result]: ...

    async def batch_stream(self, items: Iterable[Item], timeout: Optional[float] = DEFAULT_TIMEOUT,
                           jobs: Optional[int] = None, limits: Optional[Dict[str, Any]] = None,
                           warm: Optional[bool] = None) -> AsyncIterator[Result]:
        """`async for` over one `nsbox batch`: a RunResult per python item, a
        Verdict per JudgeJob, in completion order (.id is the item's index).
        Every item is checked before nsbox starts. warm: this call's choice
        of warm starts (None: the client's)."""
        checked = validate.items(list(validate.collection(items, "items")))
        validate.timeout(timeout)
        validate.limits(limits)
        validate.jobs(jobs)
        validate.warm(warm)
        lines = [(json.dumps(batch.line(i, it, timeout, limits, self._client.dedent)) + "\n").encode()
                 for i, it in enumerate(checked)]
        args: List[str] = ["batch", "--quiet", *self._client.extra_args, *await self.warm_args(warm)]
        if jobs:
            args += ["-j", str(jobs)]
        proc = await self._spawn(args + ["-"])
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr

        async def feed() -> None:
            try:
                for line in lines:
                    stdin.write(line)
                    await stdin.drain()
                stdin.close()
            except (BrokenPipeError, ConnectionResetError):
                pass

        feeder = asyncio.ensure_future(feed())
        err_reader = asyncio.ensure_future(stderr.read())
        done = False
        try:
            while True:
                line = await stdout.readline()
                if not line:
                    break
                yield batch.result(line)
            done = True
        finally:
            if not done:
                feeder.cancel()
                await asyncio.shield(self._stop(proc))
            await asyncio.gather(feeder, return_exceptions=True)
            await proc.wait()
            err = (await err_reader).decode("utf-8", "replace")
        rc = int(proc.returncode or 0)
        if rc != 0:
            raise refused("batch", rc, err)

    @overload
    async def batch_run(self, items: Iterable[PythonItem],  # type: ignore[misc]  # see Client.batch_stream
                        timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                        limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[RunResult]: ...

    @overload
    async def batch_run(self, items: Iterable[JudgeJob],  # type: ignore[misc]  # see Client.batch_stream
                        timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                        limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Verdict]: ...

    @overload
    async def batch_run(self, items: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                        limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Result]: ...

    async def batch_run(self, items: Iterable[Item], timeout: Optional[float] = DEFAULT_TIMEOUT,
                        jobs: Optional[int] = None, limits: Optional[Dict[str, Any]] = None,
                        warm: Optional[bool] = None) -> Union[List[RunResult], List[Verdict], List[Result]]:
        """One result per item, in input order."""
        got: Dict[int, Result] = {}
        items = list(validate.collection(items, "items"))   # a generator too, as batch_stream and the sync client take
        n = len(items)
        stream: AsyncIterator[Result] = self.batch_stream(items, timeout=timeout, jobs=jobs, limits=limits, warm=warm)
        async for r in stream:
            got[int(r.id)] = r
        if sorted(got) != list(range(n)):
            missing = sorted(set(range(n)) - set(got))
            raise NsboxError("nsbox batch answered %d of %d jobs (none for %s)" % (len(got), n, missing[:10]))
        return [got[i] for i in range(n)]

    async def run_code(self, code: str, test_code: Optional[str] = None,
                       timeout: Optional[float] = DEFAULT_TIMEOUT,
                       limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None) -> RunResult:
        """One (code, test_code) pair in a fresh sandbox (for many: session())."""
        (r,) = await self.batch_run([(code, test_code)], timeout=timeout, jobs=1, limits=limits, warm=warm)
        return batch.python_result(r)

    # -- judge and test -----------------------------------------------------------
    async def judge(self, spec: Dict[str, Any], warm: Optional[bool] = None) -> Verdict:
        """A judge spec (a dict) -> its verdict (warm: as Client.judge)."""
        if not isinstance(spec, dict):
            raise TypeError("spec must be a dict (a judge spec), not %s" % type(spec).__name__)
        data = json.dumps(spec_for_nsbox(validate.spec(spec))).encode()
        validate.warm(warm)
        rc, out, err = await self._communicate(["judge", "--json", *self._client.extra_args,
                                                *(await self.warm_args(warm)), "/dev/stdin"], data)
        return _answer("judge", "verdict", rc, out, err, Verdict.from_json)

    async def test(self, harness: Union[str, "os.PathLike[str]"],
                   workspace: Optional[Union[str, "os.PathLike[str]"]] = None,
                   timeout: Optional[float] = None, limits: Optional[Dict[str, Any]] = None) -> TestReport:
        """`nsbox test`: the hidden tests in @harness against @workspace."""
        args = _testcmd_args(harness, workspace, timeout, limits)
        rc, out, err = await self._communicate(["test", "--json", *args, *self._client.extra_args])
        return _answer("test", "report", rc, out, err, TestReport.from_json)


class AsyncSession:
    """Session for asyncio: one `nsbox batch [--warm] -j N -` fed by
    `await run_code(...)` calls from any task; a reader task matches each
    result line to its call by id. Started by `async with` (or start()),
    ended by close() (stdin ended, every answer and nsbox's exit awaited) or,
    when the block ends on an exception or cancellation, terminate()
    (SIGTERM: nsbox kills every sandbox). An nsbox that ends fails every
    waiting and later call with its exit status and the end of its stderr."""

    def __init__(self, client: AsyncClient, jobs: Optional[int] = None, warm: Optional[bool] = None,
                 max_in_flight: Optional[int] = None) -> None:
        validate.jobs(jobs)
        validate.warm(warm)
        self.max_in_flight = validate.count(max_in_flight, "max_in_flight", IN_FLIGHT_MAX) or default_in_flight(jobs)
        self._client = client
        self._jobs = jobs
        self._warm = warm
        self.args: List[str] = []
        self.warm = False
        self._proc: Optional["asyncio.subprocess.Process"] = None
        self._pending: "Dict[int, asyncio.Future[bytes]]" = {}
        self._next_id = 0
        self._closed = False
        self._ended: Optional[NsboxError] = None
        self._reader: "Optional[asyncio.Future[None]]" = None
        self._err_reader: "Optional[asyncio.Future[bytes]]" = None
        self._room: Optional[asyncio.Condition] = None   # made in start(): a loop's own
        self._write_lock: Optional[asyncio.Lock] = None

    @property
    def pid(self) -> int:
        """nsbox's process id (once started)."""
        if self._proc is None:
            raise ValueError("the nsbox session is not started: use `async with` or await start()")
        return int(self._proc.pid)

    async def start(self) -> "AsyncSession":
        if self._proc is not None:
            raise ValueError("the nsbox session is already started")
        self.args = batch_args(self._client._client.extra_args, await self._client.warm_args(self._warm), self._jobs)
        self.warm = "--warm" in self.args
        self._room = asyncio.Condition()
        self._write_lock = asyncio.Lock()
        self._proc = await self._client._spawn(self.args)
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._err_reader = asyncio.ensure_future(self._proc.stderr.read())
        self._reader = asyncio.ensure_future(self._read_results())
        return self

    async def run_code(self, code: str, test_code: Optional[str] = None, stdin: Optional[str] = None,
                       timeout: Optional[float] = DEFAULT_TIMEOUT, memory: Optional[Any] = None,
                       limits: Optional[Dict[str, Any]] = None) -> RunResult:
        """Session.run_code, awaited."""
        if self._proc is None or self._room is None or self._write_lock is None:
            raise ValueError("the nsbox session is not started: use `async with` or await start()")
        self._check_open()
        id_ = self._next_id
        self._next_id += 1
        line = job_line(id_, code, test_code, stdin, timeout, memory, limits, self._client._client.dedent)
        async with self._room:
            await self._room.wait_for(lambda: len(self._pending) < self.max_in_flight or self._closed
                                      or self._ended is not None)
            self._check_open()
            answer: "asyncio.Future[bytes]" = asyncio.get_running_loop().create_future()
            self._pending[id_] = answer
        stdin_w = self._proc.stdin
        assert stdin_w is not None
        async with self._write_lock:
            try:
                stdin_w.write(line)
                await stdin_w.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass   # nsbox ended: the reader fails this call with its status
        return batch.python_result(batch.result(await asyncio.shield(answer)))

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the nsbox session is closed")
        if self._ended is not None:
            raise self._ended

    async def _read_results(self) -> None:
        proc, room = self._proc, self._room
        assert proc is not None and proc.stdout is not None and room is not None and self._err_reader is not None
        broken: Optional[NsboxError] = None
        while broken is None:
            line = await proc.stdout.readline()
            if not line:
                break
            broken = await self._deliver(line)
        if broken is not None:
            await AsyncClient._stop(proc)   # an answer no call can be matched to: nothing later can be trusted
        await proc.wait()
        err = await self._err_reader
        async with room:
            ended = broken or ended_error(int(proc.returncode or 0), err, len(self._pending), self._closed)
            self._ended = ended
            for answer in self._pending.values():
                if not answer.done():
                    answer.set_exception(ended)
            self._pending.clear()
            room.notify_all()

    async def _deliver(self, line: bytes) -> Optional[NsboxError]:
        id_ = answer_id(line)
        if isinstance(id_, NsboxError):
            return id_
        assert self._room is not None
        async with self._room:
            answer = self._pending.pop(id_, None)
            if answer is None:
                return unknown_id(id_, line)
            if not answer.done():
                answer.set_result(line)
            self._room.notify_all()
        return None

    async def _end(self, cancel: bool) -> None:
        if self._proc is None or self._room is None or self._reader is None:
            return
        async with self._room:
            self._closed = True
            self._room.notify_all()
        if cancel and self._proc.returncode is None:
            try:
                self._proc.terminate()
            except ProcessLookupError:
                pass
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        await asyncio.shield(self._reader)

    async def close(self) -> None:
        """Ends nsbox's input; awaits every sent job's answer and nsbox's
        exit. Raises the session's error when nsbox ended badly (a status
        other than 0 and 2)."""
        await self._end(cancel=False)
        if self._proc is not None and self._proc.returncode not in (0, EXIT_BAD_LINES) and self._ended is not None:
            raise self._ended

    async def terminate(self) -> None:
        """Cancels: nsbox kills every sandbox and exits; waiting calls raise."""
        await self._end(cancel=True)

    async def __aenter__(self) -> "AsyncSession":
        return await self.start()

    async def __aexit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        if exc_type is None:
            await self.close()
        else:
            await self.terminate()


async def run_code(code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                   limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None) -> RunResult:
    return await AsyncClient().run_code(code, test_code, timeout, limits, warm)


@overload
async def batch_run(items: Iterable[PythonItem],  # type: ignore[misc]  # see Client.batch_stream
                    timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                    limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[RunResult]: ...


@overload
async def batch_run(items: Iterable[JudgeJob],  # type: ignore[misc]  # see Client.batch_stream
                    timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                    limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Verdict]: ...


@overload
async def batch_run(items: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                    limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> List[Result]: ...


async def batch_run(items: Iterable[Item], timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                    limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None
                    ) -> Union[List[RunResult], List[Verdict], List[Result]]:
    return await AsyncClient().batch_run(items, timeout, jobs, limits, warm)


@overload
def batch_stream(items: Iterable[PythonItem], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                 limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> AsyncIterator[RunResult]: ...


@overload
def batch_stream(items: Iterable[JudgeJob], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                 limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> AsyncIterator[Verdict]: ...


@overload
def batch_stream(items: Iterable[Item], timeout: Optional[float] = ..., jobs: Optional[int] = ...,
                 limits: Optional[Dict[str, Any]] = ..., warm: Optional[bool] = ...) -> AsyncIterator[Result]: ...


def batch_stream(items: Iterable[Item], timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                 limits: Optional[Dict[str, Any]] = None, warm: Optional[bool] = None) -> AsyncIterator[Result]:
    return AsyncClient().batch_stream(items, timeout, jobs, limits, warm)


async def judge(spec: Dict[str, Any]) -> Verdict:
    return await AsyncClient().judge(spec)


async def test(harness: Union[str, "os.PathLike[str]"], workspace: Optional[Union[str, "os.PathLike[str]"]] = None,
               timeout: Optional[float] = None, limits: Optional[Dict[str, Any]] = None) -> TestReport:
    return await AsyncClient().test(harness, workspace, timeout, limits)
