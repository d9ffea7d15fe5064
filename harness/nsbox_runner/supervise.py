"""The parent: supervise one child per test, within the budgets."""
import json
import os
import select
import signal
import time
from .base import MAX_CAPTURE, MAX_REPORT, MIN_SLICE, OUTCOMES, PROTOCOL, _clean, _clip_message, _clip_traceback, _seconds
from .child import _child_main, _flush_stdio, _report, _tee_stdio


class Runner:
    def __init__(self, channel_fd, harness, workspace, budget, test_budget):
        self.channel_fd = channel_fd
        self.harness = harness
        self.workspace = workspace
        self.budget = budget
        self.test_budget = test_budget
        self.started = time.monotonic()
        self.deadline = self.started + budget
        self.current_pid = None
        self.subreaper = False

    def emit(self, event):
        data = (json.dumps(event, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
        view = memoryview(data)
        while view:
            view = view[os.write(self.channel_fd, view):]

    # -- process helpers --

    @staticmethod
    def _killpg(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass

    def _kill_orphans(self):
        """Kill processes a test left behind that escaped its process group."""
        if not self.subreaper:
            return
        try:
            if os.readlink("/proc/self") != str(os.getpid()):
                return  # /proc belongs to another pid namespace
        except OSError:
            return
        me = os.getpid()
        for _ in range(50):
            kids = []
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                try:
                    with open("/proc/%s/stat" % name, "rb") as handle:
                        stat = handle.read()
                    if int(stat[stat.rfind(b")") + 2:].split()[1]) == me:
                        kids.append(int(name))
                except (OSError, ValueError, IndexError):
                    continue
            if not kids:
                break
            for pid in kids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            for pid in kids:
                try:
                    os.waitpid(pid, 0)
                except OSError:
                    pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break

    @staticmethod
    def _capture(fd, chunk, captured):
        """Keep the head of what a test printed (MAX_CAPTURE bytes) and how
        much there was. The child wrote it to its own streams as well
        (child._tee_stdio): nothing is lost if this process is killed."""
        buf = captured[fd]
        if len(buf) < MAX_CAPTURE:
            buf += chunk[:MAX_CAPTURE - len(buf)]
        captured[("n", fd)] = captured.get(("n", fd), 0) + len(chunk)

    def _drain(self, fd, captured):
        os.set_blocking(fd, False)
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                self._capture(fd, chunk, captured)
        except (BlockingIOError, OSError):
            pass

    def _supervise(self, pid, rfd, slice_s, captured=None):
        """Wait for the child; return (status or None if timed out, report bytes).
        @captured: {fd: bytearray} of the test's stdout/stderr capture pipes."""
        captured = {} if captured is None else captured
        deadline = time.monotonic() + slice_s
        buf = bytearray()
        try:
            pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        poller = select.poll()
        poller.register(rfd, select.POLLIN)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        for fd in list(captured):
            poller.register(fd, select.POLLIN)
        pipe_open, exited = True, False
        try:
            while True:
                try:
                    exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
                except ChildProcessError:
                    exited = True
                if exited:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                wait_ms = remaining * 1000 if pidfd is not None else min(remaining * 1000, 20)
                for fd, _ in poller.poll(max(1, int(wait_ms) + 1)):
                    if fd == rfd and pipe_open:
                        chunk = os.read(rfd, 65536)
                        if not chunk:
                            pipe_open = False
                            poller.unregister(rfd)
                        elif len(buf) <= MAX_REPORT:
                            buf += chunk
                    elif fd in captured:
                        chunk = os.read(fd, 65536)
                        if chunk:
                            self._capture(fd, chunk, captured)
                        else:
                            poller.unregister(fd)
        finally:
            if pidfd is not None:
                os.close(pidfd)
        # Kill whatever is left of the test's process group before reaping the
        # leader, so the group id cannot have been reused.
        self._killpg(pid)
        _, status = os.waitpid(pid, 0)
        for fd in [k for k in captured if isinstance(k, int)]:
            self._drain(fd, captured)
        if pipe_open:  # drain what the child wrote before it ended
            os.set_blocking(rfd, False)
            try:
                while len(buf) <= MAX_REPORT:
                    chunk = os.read(rfd, 65536)
                    if not chunk:
                        break
                    buf += chunk
            except BlockingIOError:
                pass
        return (status if exited else None), bytes(buf)

    @staticmethod
    def _parse_report(data):
        if not data or len(data) > MAX_REPORT or data.count(b"\n") != 1 or not data.endswith(b"\n"):
            return None
        try:
            report = json.loads(data.decode("utf-8"))
        except Exception:
            return None
        if not isinstance(report, dict) or report.get("outcome") not in OUTCOMES:
            return None
        for key in ("message", "traceback"):
            if report.get(key) is not None and not isinstance(report.get(key), str):
                return None
        return report

    @staticmethod
    def _status_text(status):
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = "signal %d" % sig
            text = "was killed by %s (signal %d)" % (name, sig)
            if sig == signal.SIGKILL:
                text += " - the memory limit, or a kill from the code under test"
            elif sig == signal.SIGSEGV:
                text += " - a crash in native code or a stack overflow"
            return text
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        text = "exited with status %d" % code
        if code == 0:
            text += " (os._exit() called?)"
        return text

    @staticmethod
    def _captured_text(captured, fd):
        data = bytes(captured[fd])
        total = captured.get(("n", fd), 0)
        if not total:
            return None
        text = data.decode("utf-8", "replace")
        if total > len(data):
            text += "\n... (%d more bytes not kept)" % (total - len(data))
        return _clean(text)

    def run_test(self, item, code, slice_s, per_test_cut):
        rfd, wfd = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        _flush_stdio()
        pid = os.fork()
        if pid == 0:  # child
            try:
                os.close(self.channel_fd)  # first: learner code never sees the channel
                os.close(rfd)
                # what the test prints also goes to the capture pipes, so
                # that the report can show it under the test (pytest's
                # "Captured stdout")
                os.close(out_r)
                os.close(err_r)
                _tee_stdio(out_w, err_w)
                _child_main(item, code, wfd, self.harness, self.workspace)
            finally:
                os._exit(70)
        self.current_pid = pid
        os.close(wfd)
        os.close(out_w)
        os.close(err_w)
        captured = {out_r: bytearray(), err_r: bytearray()}
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        started = time.monotonic()
        try:
            status, data = self._supervise(pid, rfd, slice_s, captured)
        finally:
            os.close(rfd)
            os.close(out_r)
            os.close(err_r)
            self.current_pid = None
        duration_ms = round((time.monotonic() - started) * 1000, 1)
        self._kill_orphans()
        if status is None:
            message = "timed out after %s" % _seconds(slice_s)
            if not per_test_cut:
                message += " (the overall test budget of %s ran out)" % _seconds(self.budget)
            report = _report("error", message)
        else:
            report = self._parse_report(data)
            clean_exit = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            if report is None:
                if data:
                    report = _report("error", "the test process sent a malformed result report "
                                     "and %s" % self._status_text(status))
                else:
                    report = _report("error", "the test process %s before reporting a result"
                                     % self._status_text(status))
            elif not clean_exit:
                report = _report("error", "the test process %s after reporting %r"
                                 % (self._status_text(status), report["outcome"]))
        event = {
            "event": "test",
            "name": _clean(item.name),
            "outcome": report["outcome"],
            "message": _clean(_clip_message(report.get("message"))),
            "traceback": _clean(_clip_traceback(report.get("traceback"))),
            "duration_ms": duration_ms,
            "stdout": self._captured_text(captured, out_r),
            "stderr": self._captured_text(captured, err_r),
            # every byte its sys.stdout/sys.stderr wrote (kept or not): what
            # of the run's own streams was not this test's print() (os.write,
            # a subprocess, C code) nsbox test can then tell and show
            "stdout_bytes": captured.get(("n", out_r), 0),
            "stderr_bytes": captured.get(("n", err_r), 0),
        }
        # a test that closed or replaced its fd 1/2 (child._child_main):
        # its print()s may be in no stream; counted 0, the run's stream is
        # shown rather than another test's direct writes hidden
        moved = report.get("streams_moved")
        if isinstance(moved, list):
            for fd, key in ((1, "stdout_bytes"), (2, "stderr_bytes")):
                if fd in moved:
                    event[key] = 0
        if report.get("import_error") is True:
            event["import_error"] = True
        return event

    def run(self, items, codes, collect_errors, hardening):
        self.emit({"event": "start", "protocol": PROTOCOL,
                   "tests": [_clean(i.name) for i in items], "hardening": hardening})
        for error in collect_errors:
            self.emit({"event": "collect_error", "file": _clean(error["file"]),
                       "message": _clean(_clip_message(error["message"]))})
        results = []
        broken = {}  # test file -> the test whose import of it failed
        for item in items:
            remaining = self.deadline - time.monotonic()
            if item.file in broken:
                # pytest's collection error: the module cannot be imported,
                # every test of it would fail the same way; said once
                event = {"event": "test", "name": _clean(item.name), "outcome": "error",
                         "message": "not run: %s could not be imported (see %s)"
                         % (item.file, _clean(broken[item.file])),
                         "traceback": None, "duration_ms": 0.0, "stdout": None, "stderr": None,
                         "stdout_bytes": 0, "stderr_bytes": 0, "import_error": True}
            elif remaining < MIN_SLICE:
                event = {"event": "test", "name": _clean(item.name), "outcome": "error",
                         "message": "not run: the overall test budget of %s was used up"
                         % _seconds(self.budget), "traceback": None, "duration_ms": 0.0,
                         "stdout": None, "stderr": None, "stdout_bytes": 0, "stderr_bytes": 0}
            else:
                slice_s = min(self.test_budget, remaining)
                event = self.run_test(item, codes[item.file], slice_s, slice_s == self.test_budget)
                if event.get("import_error"):
                    broken[item.file] = item.name
            results.append(event)
            self.emit(event)
        counts = {o: sum(1 for e in results if e["outcome"] == o) for o in OUTCOMES}
        self.emit({"event": "done", "collected": len(items), "counts": counts,
                   "collect_errors": len(collect_errors),
                   "duration_ms": round((time.monotonic() - self.started) * 1000, 1)})
        return results
