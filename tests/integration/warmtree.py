"""Helpers for the warm-start tests (test_warm.py, tests/soak/soak_warm.py):
a batch fed and read line by line, nsbox's process tree as the host sees it,
and the zygotes in it. Stdlib only.

How a zygote is recognised from the host (docs/warm-start.md): it is a
CPython started as `python3 -I -B /program/main.py`, a descendant of the
`nsbox batch` process, and its parent is not such a process (the job inits
it forks and the jobs they fork carry the same command line beneath it).
"""
import json
import os
import queue
import subprocess
import threading
import time

WARM_CMDLINE_END = b"/program/main.py"


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return None


def ppid_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def start_time(pid):
    """The kernel's start time of @pid (field 22), to tell a pid reused."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def children_map():
    kids = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            pp = ppid_of(int(name))
            if pp is not None:
                kids.setdefault(pp, []).append(int(name))
    return kids


def descendants(root):
    """Every live descendant of @root (not @root itself), parents first."""
    kids = children_map()
    out, todo = [], list(kids.get(root, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def is_python_main(pid):
    c = cmdline(pid)
    return bool(c) and c.rstrip(b"\0").endswith(WARM_CMDLINE_END)


def zygotes(batch_pid):
    """The zygotes under the nsbox batch process @batch_pid: python
    /program/main.py processes whose parent is not one."""
    return [p for p in descendants(batch_pid) if is_python_main(p) and not is_python_main(ppid_of(p) or 0)]


def wait_zygotes(batch_pid, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        z = zygotes(batch_pid)
        if z:
            return z
        time.sleep(0.01)
    return []


def tree_snapshot(root):
    """{pid: start time} of @root and its descendants: after a SIGKILL,
    alive_of() tells which of exactly these processes survived."""
    snap = {}
    for p in [root] + descendants(root):
        st = start_time(p)
        if st is not None:
            snap[p] = st
    return snap


def alive_of(snap):
    return sorted(p for p, st in snap.items() if start_time(p) == st and not _zombie(p))


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class LiveBatch:
    """`nsbox batch ARGS -` fed one job at a time; result lines read as they
    come. Jobs are written after earlier results were seen, which is how
    the tests learn host pids before writing the job that needs them."""

    def __init__(self, nsbox, *args):
        self.proc = subprocess.Popen([nsbox, "batch", *args, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.pid = self.proc.pid
        self.lines = queue.Queue()
        self.results = {}
        self.raw = []
        self.stderr = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err = threading.Thread(target=self._read_err, daemon=True)
        self._err.start()

    def _read(self):
        for line in self.proc.stdout:
            self.raw.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def _read_err(self):
        self.stderr = self.proc.stderr.read()

    def send(self, job):
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()

    def wait_for(self, job_id, timeout=60):
        """The result line of @job_id (others seen meanwhile are kept)."""
        deadline = time.monotonic() + timeout
        while job_id not in self.results:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no result line for job %r within %d s (lines so far: %d; stderr %r)"
                                     % (job_id, timeout, len(self.raw), self.stderr[-1500:]))
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                self.proc.wait()
                raise AssertionError("nsbox batch ended (exit %s) without a line for job %r; stderr: %r"
                                     % (self.proc.returncode, job_id, self.stderr[-1500:]))
            if line.endswith(b"\n"):
                res = json.loads(line)
                self.results[res["id"]] = res
        return self.results[job_id]

    def close(self, timeout=120):
        """End the input; wait for nsbox; return its exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("nsbox batch did not end within %d s of its input's end" % timeout)
        self._reader.join(10)
        self._err.join(10)
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line and line.endswith(b"\n"):
                res = json.loads(line)
                self.results.setdefault(res["id"], res)
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
