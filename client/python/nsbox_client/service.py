"""A client of `nsbox serve` (docs/serve.md): the same calls and result
types as Client, answered by a running service over HTTP instead of an
nsbox started per call.

    from nsbox_client import connect
    svc = connect("unix:/run/user/1000/nsbox/nsbox.sock")      # or "http://host:8080", token="..."
    r = svc.run_code("print(1)")        # a RunResult, as Client().run_code gives
    v = svc.judge(spec)                 # a Verdict

Each call is one POST /v1/run. The program's own failure is a result; the
service refusing a request (400), not letting this client in (401) or not
answering is an NsboxError (NsboxUnavailable when it cannot be reached). A
full queue (503) is retried after its Retry-After, a few times. Stdlib only;
thread-safe (one connection per call). AsyncServiceClient runs the same calls
in worker threads of its own pool (max_concurrency, default 64, at once)."""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import http.client
import json
import socket
import time
import urllib.parse
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from .batch import DEFAULT_TIMEOUT
from .errors import NsboxError, NsboxUnavailable
from .results import RunResult, Verdict, from_line
from .session import job_line


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


_T = TypeVar("_T")


class ServiceClient:
    """`url`: "unix:PATH" or "http://HOST:PORT[/PREFIX]"; `token`: the
    service's token (sent as Authorization: Bearer, never in the URL)."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 3600.0, retries: int = 5,
                 dedent: bool = True):
        if url.startswith("unix:"):
            self._unix: Optional[str] = url[5:]
            self._host, self._port, self._prefix = "", 0, ""
        else:
            u = urllib.parse.urlsplit(url)
            if u.scheme != "http" or not u.hostname:
                raise ValueError("url: expected unix:PATH or http://HOST:PORT, not %r" % (url,))
            self._unix = None
            self._host, self._port, self._prefix = u.hostname, u.port or 80, u.path.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._retries = retries
        self._dedent = dedent

    def _conn(self) -> http.client.HTTPConnection:
        if self._unix is not None:
            return _UnixConnection(self._unix, self._timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def _call(self, method: str, path: str, body: Optional[bytes]) -> Tuple[int, Dict[str, Any]]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        for attempt in range(self._retries + 1):
            c = self._conn()
            try:
                c.request(method, self._prefix + path, body=body, headers=headers)
                r = c.getresponse()
                text = r.read()
                retry_after = r.getheader("Retry-After")
            except OSError as exc:
                raise NsboxUnavailable("nsbox serve at %s cannot be reached: %s" % (self._where(), exc)) from exc
            except http.client.HTTPException as exc:
                raise NsboxError("nsbox serve at %s answered no HTTP: %s" % (self._where(), exc)) from exc
            finally:
                c.close()
            if r.status == 503 and attempt < self._retries and path != "/v1/health":
                time.sleep(float(retry_after or 1))
                continue
            try:
                answer = json.loads(text)
            except ValueError as exc:
                raise NsboxError("nsbox serve answered %d with no JSON: %r" % (r.status, text[:200])) from exc
            if not isinstance(answer, dict):
                raise NsboxError("nsbox serve answered %d with %r" % (r.status, text[:200]))
            return r.status, answer
        raise NsboxError("unreachable")   # the loop returns or raises

    def _where(self) -> str:
        return "unix:" + self._unix if self._unix is not None else "http://%s:%d" % (self._host, self._port)

    def _run(self, job: bytes) -> Dict[str, Any]:
        status, d = self._call("POST", "/v1/run", job)
        if status != 200:
            err = d.get("error")
            message = err.get("message", d) if isinstance(err, dict) else d
            raise NsboxError("nsbox serve refused the job (%d): %s" % (status, message), status)
        return d

    def run_code(self, code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                 memory: Optional[Any] = None, limits: Optional[Dict[str, Any]] = None,
                 stdin: Optional[str] = None, files: Optional[Mapping[str, Union[bytes, str]]] = None,
                 fetch_files: Optional[Sequence[str]] = None) -> RunResult:
        """As Client.run_code: code, then test_code, in one fresh sandbox.
        files: name -> content (bytes, or str as UTF-8) placed in the job's
        own workspace (its working directory) before it runs; fetch_files:
        names read back from there after it ends, in result.files (and
        result.files_refused: the ones not read, and why). Names are
        relative paths inside the workspace (docs/serve.md)."""
        job = job_line(0, code, test_code, stdin, timeout, memory, limits, self._dedent)
        if files or fetch_files:
            job = with_files(job, files, fetch_files)
        result = from_line(self._run(job))
        if not isinstance(result, RunResult):
            raise NsboxError("nsbox serve answered a verdict for a python job")
        return result

    def judge(self, spec: Dict[str, Any]) -> Verdict:
        """As Client.judge, for a spec dict whose program is program.source
        (a service never reads a file named by a request)."""
        result = from_line(self._run(json.dumps({"id": 0, "kind": "judge", "spec": spec}).encode()))
        if not isinstance(result, Verdict):
            raise NsboxError("nsbox serve answered a result for a judge job")
        return result

    def health(self) -> Dict[str, Any]:
        """GET /v1/health: {"ready": ..., "reason": ..., ...} (also when not ready)."""
        return self._call("GET", "/v1/health", None)[1]


def with_files(job: bytes, files: Optional[Mapping[str, Union[bytes, str]]],
               fetch_files: Optional[Sequence[str]]) -> bytes:
    """The job line with its "files" (base64) and "fetch_files" keys
    (TypeError for a bad argument, before anything is sent)."""
    d = json.loads(job)
    if files:
        if not isinstance(files, Mapping):
            raise TypeError("files: a mapping of name -> bytes or str, not %s" % type(files).__name__)
        enc = {}
        for name, data in files.items():
            if not isinstance(name, str) or not isinstance(data, (bytes, bytearray, str)):
                raise TypeError("files: %r: a str name and bytes or str content" % (name,))
            raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            enc[name] = base64.b64encode(raw).decode("ascii")
        d["files"] = enc
    if fetch_files:
        if isinstance(fetch_files, (str, bytes)) or not all(isinstance(n, str) for n in fetch_files):
            raise TypeError("fetch_files: a list of names (str)")
        d["fetch_files"] = list(fetch_files)
    return json.dumps(d).encode() + b"\n"


class AsyncServiceClient:
    """ServiceClient's calls for asyncio, each in a worker thread of this
    client's own pool: up to `max_concurrency` calls wait on the service at
    once (the loop's default executor has min(32, CPUs + 4) threads, which
    would cap a trainer's concurrency below the service's -j). Calls past
    that wait their turn here. close() (or `async with`) ends the pool."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 3600.0, retries: int = 5,
                 dedent: bool = True, max_concurrency: int = 64):
        if max_concurrency < 1:
            raise ValueError("max_concurrency: at least 1, not %r" % (max_concurrency,))
        self.sync = ServiceClient(url, token, timeout, retries, dedent)
        self.max_concurrency = max_concurrency
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max_concurrency,
                                                           thread_name_prefix="nsbox-serve-client")

    async def run_code(self, code: str, test_code: Optional[str] = None, timeout: Optional[float] = DEFAULT_TIMEOUT,
                       memory: Optional[Any] = None, limits: Optional[Dict[str, Any]] = None,
                       stdin: Optional[str] = None, files: Optional[Mapping[str, Union[bytes, str]]] = None,
                       fetch_files: Optional[Sequence[str]] = None) -> RunResult:
        return await self._in_thread(lambda: self.sync.run_code(code, test_code, timeout, memory, limits, stdin,
                                                                files, fetch_files))

    async def judge(self, spec: Dict[str, Any]) -> Verdict:
        return await self._in_thread(lambda: self.sync.judge(spec))

    async def health(self) -> Dict[str, Any]:
        return await self._in_thread(self.sync.health)

    def close(self) -> None:
        """Ends the worker threads (calls still running finish first)."""
        self._pool.shutdown(wait=True)

    async def __aenter__(self) -> "AsyncServiceClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._pool.shutdown(wait=False)

    async def _in_thread(self, fn: Callable[[], _T]) -> _T:
        # our own pool, not the loop's default executor (asyncio.to_thread,
        # 3.9+, uses that one too; the package supports 3.8)
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)


def connect(url: str, token: Optional[str] = None, timeout: float = 3600.0, retries: int = 5,
            dedent: bool = True) -> ServiceClient:
    """A ServiceClient for the service at @url (unix:PATH or http://HOST:PORT)."""
    return ServiceClient(url, token, timeout=timeout, retries=retries, dedent=dedent)
