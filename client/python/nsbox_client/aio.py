"""asyncio API of nsbox_client (stdlib only): the same jobs, awaited.

    from nsbox_client import aio

    r = await aio.run_code("print(1)")
    async for r in aio.batch_stream([(code, tests), ...], jobs=2):
        ...                                   # completion order, .id = index
    v = await aio.judge(spec)

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
from typing import Any, AsyncIterator, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import batch, validate
from .batch import DEFAULT_TIMEOUT
from .client import Client, _answer, _testcmd_args
from .errors import NsboxError, NsboxUnavailable, refused
from .jobs import TestReport, spec_for_nsbox
from .results import RunResult, Verdict

__all__ = ["AsyncClient", "run_code", "batch_run", "batch_stream", "judge", "test"]

# A result line holds up to --output-limit bytes per stream, JSON-escaped.
_LINE_LIMIT = 1 << 30
Result = Union[RunResult, Verdict]


class AsyncClient:
    """Client's binary and options, for asyncio callers."""

    def __init__(self, nsbox: Optional[str] = None, extra_args: Sequence[str] = (), dedent: bool = True) -> None:
        self._client = Client(nsbox, extra_args, dedent)

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

    # -- batch ------------------------------------------------------------------
    async def batch_stream(self, items: Iterable[object], timeout: Optional[float] = DEFAULT_TIMEOUT,
                           jobs: Optional[int] = None, limits: Optional[Dict[str, Any]] = None
                           ) -> AsyncIterator[Result]:
        """`async for` over one `nsbox batch`: a RunResult per python item, a
        Verdict per JudgeJob, in completion order (.id is the item's index).
        Every item is checked before nsbox starts."""
        checked = validate.items(list(validate.collection(items, "items")))
        validate.timeout(timeout)
        validate.limits(limits)
        validate.jobs(jobs)
        lines = [(json.dumps(batch.line(i, it, timeout, limits, self._client.dedent)) + "\n").encode()
                 for i, it in enumerate(checked)]
        args: List[str] = ["batch", "--quiet", *self._client.extra_args]
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

    async def batch_run(self, items: Iterable[object], timeout: Optional[float] = DEFAULT_TIMEOUT,
                        jobs: Optional[int] = None, limits: Optional[Dict[str, Any]] = None) -> List[Result]:
        """One result per item, in input order."""
        got: Dict[int, Result] = {}
        items = list(validate.collection(items, "items"))   # a generator too, as batch_stream and the sync client take
        n = len(items)
        async for r in self.batch_stream(items, timeout=timeout, jobs=jobs, limits=limits):
            got[int(r.id)] = r
        if sorted(got) != list(range(n)):
            missing = sorted(set(range(n)) - set(got))
            raise NsboxError("nsbox batch answered %d of %d jobs (none for %s)" % (len(got), n, missing[:10]))
        return [got[i] for i in range(n)]

    async def run_code(self, code: str, test_code: Optional[str] = None,
                       timeout: Optional[float] = DEFAULT_TIMEOUT,
                       limits: Optional[Dict[str, Any]] = None) -> RunResult:
        """One (code, test_code) pair in a fresh sandbox."""
        (r,) = await self.batch_run([(code, test_code)], timeout=timeout, jobs=1, limits=limits)
        if not isinstance(r, RunResult):
            raise NsboxError("nsbox batch answered a python job with a verdict")
        return r

    # -- judge and test -----------------------------------------------------------
    async def judge(self, spec: Dict[str, Any]) -> Verdict:
        """A judge spec (a dict) -> its verdict."""
        if not isinstance(spec, dict):
            raise TypeError("spec must be a dict (a judge spec), not %s" % type(spec).__name__)
        rc, out, err = await self._communicate(["judge", "--json", *self._client.extra_args, "/dev/stdin"],
                                                json.dumps(spec_for_nsbox(validate.spec(spec))).encode())
        return _answer("judge", "verdict", rc, out, err, Verdict.from_json)

    async def test(self, harness: Union[str, "os.PathLike[str]"],
                   workspace: Optional[Union[str, "os.PathLike[str]"]] = None,
                   timeout: Optional[float] = None, limits: Optional[Dict[str, Any]] = None) -> TestReport:
        """`nsbox test`: the hidden tests in @harness against @workspace."""
        args = _testcmd_args(harness, workspace, timeout, limits)
        rc, out, err = await self._communicate(["test", "--json", *args, *self._client.extra_args])
        return _answer("test", "report", rc, out, err, TestReport.from_json)


async def run_code(code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                   limits: Optional[Dict[str, Any]] = None) -> RunResult:
    return await AsyncClient().run_code(code, test_code, timeout, limits)


async def batch_run(items: Iterable[object], timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                    limits: Optional[Dict[str, Any]] = None) -> List[Result]:
    return await AsyncClient().batch_run(items, timeout, jobs, limits)


def batch_stream(items: Iterable[object], timeout: Optional[float] = DEFAULT_TIMEOUT, jobs: Optional[int] = None,
                 limits: Optional[Dict[str, Any]] = None) -> AsyncIterator[Result]:
    return AsyncClient().batch_stream(items, timeout, jobs, limits)


async def judge(spec: Dict[str, Any]) -> Verdict:
    return await AsyncClient().judge(spec)


async def test(harness: Union[str, "os.PathLike[str]"], workspace: Optional[Union[str, "os.PathLike[str]"]] = None,
               timeout: Optional[float] = None, limits: Optional[Dict[str, Any]] = None) -> TestReport:
    return await AsyncClient().test(harness, workspace, timeout, limits)
