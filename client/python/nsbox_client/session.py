"""Session: one `nsbox batch` kept open, fed one python job per run_code
call, so a loop that runs many snippets (an RL reward loop) pays for one
nsbox process, and with --warm for one ready interpreter per generation,
instead of one of each per call.

    with client.session(jobs=2, warm=True) as s:
        r = s.run_code(code, test_code, stdin="3\\n", timeout=5, memory="128M")

Each call writes its job as a JSON line to nsbox's stdin (flushed at
once); a reader thread reads the result lines nsbox writes as each job
ends and hands each to the call waiting for its id. Calls may come from
several threads at once; at most max_in_flight jobs are sent and not yet
answered (the others wait their turn). If nsbox ends, every waiting and
later call raises NsboxError naming its exit status and the end of its
stderr. The pure part (job line, its id, the error for a dead nsbox) is
in this module's functions; the threads only move lines.
"""
from __future__ import annotations

import json
import os
import subprocess
import threading
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, Dict, List, Optional, Type, Union

from . import batch, validate
from .batch import DEFAULT_TIMEOUT
from .errors import EXIT_BAD_LINES, NsboxError, refused
from .results import RunResult

if TYPE_CHECKING:
    from .client import Client

# A session's in-flight jobs at most (a caller's max_in_flight).
IN_FLIGHT_MAX = 1 << 20
# The end of nsbox's stderr an error quotes (bytes kept).
STDERR_TAIL = 4096


def default_in_flight(jobs: Optional[int]) -> int:
    """Jobs sent and not answered at once: two per worker, so a worker that
    ends a job finds the next one already read."""
    if jobs is None:
        try:
            jobs = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            jobs = os.cpu_count() or 1
    return 2 * max(1, jobs)


def batch_args(extra_args: List[str], warm_args: List[str], jobs: Optional[int]) -> List[str]:
    """The arguments of the session's `nsbox batch`, reading jobs from stdin."""
    args = ["batch", "--quiet", *extra_args, *warm_args]
    if jobs:
        args += ["-j", str(jobs)]
    return args + ["-"]


def job_line(id_: int, code: str, test_code: Optional[str], stdin: Optional[str], timeout: Optional[float],
             memory: Optional[Any], limits: Optional[Dict[str, Any]], dedent: bool) -> bytes:
    """One run_code call as a JSON line (TypeError/ValueError for a bad
    argument, before anything is sent)."""
    checked = validate.limits(limits)
    if memory is not None:
        if "memory" in checked:
            raise ValueError("memory=%r and limits['memory'] both given: give one" % (memory,))
        checked.update(validate.limits({"memory": memory}, where="memory"))
    text = json.dumps(batch.python_job(id_, code, test_code, timeout, checked, dedent, stdin)).encode()
    if len(text) > batch.LINE_MAX:
        raise ValueError("the job is %d bytes as a JSON line; nsbox batch reads lines of at most %d bytes (64M)"
                         % (len(text), batch.LINE_MAX))
    return text + b"\n"


def ended_error(rc: int, stderr: bytes, unanswered: int, closed: bool) -> NsboxError:
    """The error of every call waiting on (or made after) an nsbox that
    exited with @rc: its status and the end of its @stderr, in the class
    refused() gives that status."""
    err = stderr[-STDERR_TAIL:].decode("utf-8", "replace")
    status = "was killed by signal %d" % -rc if rc < 0 else "exited with status %d" % rc
    why = "" if closed else " while the session was open"
    msg = "nsbox batch (session) %s%s, %d job(s) unanswered" % (status, why, unanswered)
    tail = err.strip()
    msg += "; the end of its stderr:\n" + tail if tail else " (its stderr was empty)"
    return type(refused("batch", rc, err))(msg, rc, err)


def answer_id(line: bytes) -> Union[int, NsboxError]:
    """The session job id a result line answers, or the error that ends the
    session (a line that is not a JSON object, an id that is not an int)."""
    try:
        id_ = json.loads(line).get("id")
    except (ValueError, AttributeError):
        return NsboxError("nsbox batch wrote a line that is not a JSON object: %r" % line[:200])
    if not isinstance(id_, int) or isinstance(id_, bool):
        return unknown_id(id_, line)
    return id_


def unknown_id(id_: Any, line: bytes) -> NsboxError:
    return NsboxError("nsbox batch answered id %r, which no call of this session is waiting for: %r"
                      % (id_, line[:200]))


class _Pending:
    """One call's job: its result line, or the error that ends the wait."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.line: Optional[bytes] = None
        self.error: Optional[BaseException] = None


class Session:
    """One `nsbox batch [--warm] -j N -` process, fed by run_code calls.

    jobs: nsbox's -j (default: its own, the number of cores); warm: --warm
    (None: the client's warm setting); max_in_flight: jobs sent and not yet
    answered at most (default 2 * jobs). close() (or leaving the with block)
    ends nsbox's input and waits for every sent job's answer and for nsbox
    to exit; leaving the block on an exception cancels instead (SIGTERM:
    nsbox kills every sandbox), as does terminate().
    """

    def __init__(self, client: "Client", jobs: Optional[int] = None, warm: Optional[bool] = None,
                 max_in_flight: Optional[int] = None) -> None:
        validate.jobs(jobs)
        validate.warm(warm)
        self.max_in_flight = validate.count(max_in_flight, "max_in_flight", IN_FLIGHT_MAX) or default_in_flight(jobs)
        self._dedent = client.dedent
        self.args = batch_args(client.extra_args, client.warm_args(warm), jobs)
        self.warm = "--warm" in self.args
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._pending: Dict[int, _Pending] = {}
        self._next_id = 0
        self._closed = False
        self._ended: Optional[NsboxError] = None
        self._stderr: List[bytes] = []
        self._proc = client._popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._stdin: IO[bytes] = self._proc.stdin  # type: ignore[assignment]  # PIPE: never None
        self._err_reader = threading.Thread(target=self._read_stderr, name="nsbox-session-stderr", daemon=True)
        self._err_reader.start()
        self._reader = threading.Thread(target=self._read_results, name="nsbox-session-results", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        """nsbox's process id."""
        return self._proc.pid

    # -- the calls --------------------------------------------------------------
    def run_code(self, code: str, test_code: Optional[str] = None, stdin: Optional[str] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT, memory: Optional[Any] = None,
                 limits: Optional[Dict[str, Any]] = None) -> RunResult:
        """One (code, test_code) pair as a job of the session's batch; its
        RunResult (.id is the session's job number). stdin: the program's
        standard input (default empty); timeout: wall-clock seconds; memory:
        its memory limit ('128M', or bytes); limits: any other limits, as
        Client.run_code takes them. A program's failure is a result; an
        nsbox that ended raises NsboxError."""
        with self._cond:
            self._check_open()
            id_ = self._next_id
            self._next_id += 1
        line = job_line(id_, code, test_code, stdin, timeout, memory, limits, self._dedent)
        with self._cond:
            while len(self._pending) >= self.max_in_flight and not self._ended and not self._closed:
                self._cond.wait()
            self._check_open()
            slot = self._pending[id_] = _Pending()
        with self._write_lock:
            try:
                self._stdin.write(line)
                self._stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass   # nsbox ended: the reader sees its stdout end and fails this call with its status
        slot.done.wait()
        if slot.error is not None:
            raise slot.error
        assert slot.line is not None
        return batch.python_result(batch.result(slot.line))

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the nsbox session is closed")
        if self._ended is not None:
            raise self._ended

    # -- the threads --------------------------------------------------------------
    def _read_stderr(self) -> None:
        stream: IO[bytes] = self._proc.stderr  # type: ignore[assignment]  # PIPE: never None
        while True:
            chunk = os.read(stream.fileno(), 1 << 16)
            if not chunk:
                break
            self._stderr.append(chunk)
            if sum(len(c) for c in self._stderr) > 4 * STDERR_TAIL:
                self._stderr[:] = [b"".join(self._stderr)[-STDERR_TAIL:]]

    def _read_results(self) -> None:
        stdout: IO[bytes] = self._proc.stdout  # type: ignore[assignment]  # PIPE: never None
        broken: Optional[NsboxError] = None
        for line in stdout:
            problem = self._deliver(line)
            if problem is not None:
                broken = problem
                break
        if broken is not None:
            # An answer this client cannot match to a call: nothing later can
            # be trusted to be matched either; nsbox is stopped.
            self._proc.terminate()
            for _ in stdout:
                pass
        self._proc.wait()
        self._err_reader.join()
        stdout.close()
        self._proc.stderr.close()  # type: ignore[union-attr]  # PIPE: never None
        with self._cond:
            ended = broken or ended_error(self._proc.returncode, b"".join(self._stderr), len(self._pending),
                                          self._closed)
            self._ended = ended
            for slot in self._pending.values():
                slot.error = ended
                slot.done.set()
            self._pending.clear()
            self._cond.notify_all()

    def _deliver(self, line: bytes) -> Optional[NsboxError]:
        """Hands @line to the call waiting for its id; the error that ends
        the session when it has none."""
        id_ = answer_id(line)
        if isinstance(id_, NsboxError):
            return id_
        with self._cond:
            slot = self._pending.pop(id_, None)
            if slot is None:
                return unknown_id(id_, line)
            slot.line = line
            slot.done.set()
            self._cond.notify_all()
        return None

    # -- the end ---------------------------------------------------------------------
    def close(self) -> None:
        """Ends nsbox's input, waits for every sent job's answer and for
        nsbox to exit. A second close() does nothing. Raises the session's
        error when nsbox ended badly: a status other than 0, or 2 (some job
        lines were refused: their calls got their error results)."""
        self._end(cancel=False)
        if self._proc.returncode not in (0, EXIT_BAD_LINES) and self._ended is not None:
            raise self._ended

    def terminate(self) -> None:
        """Cancels: SIGTERM makes nsbox kill every sandbox and exit; every
        waiting call raises. Waits for nsbox to exit."""
        self._end(cancel=True)

    def _end(self, cancel: bool) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if cancel and self._proc.poll() is None:
            self._proc.terminate()
        with self._write_lock:
            try:
                self._stdin.close()
            except OSError:
                pass
        self._reader.join()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        if exc_type is None:
            self.close()
        else:
            self.terminate()
