"""Helpers for the warm-start tests (test_warm.py, tests/soak/soak_warm.py):
a batch fed and read line by line, nsbox's process tree as the host sees it,
and the zygotes in it. Stdlib only.

How a zygote is recognised from the host (docs/warm-start.md): it is a
CPython started as `python3 -I -B /program/main.py`, a descendant of the
`nsbox batch` process, with no such process above it (the job inits it
forks and the jobs they fork carry the same command line beneath it), and
not PID 2 in its pid namespace (a cold python job is).
"""
import json
import os
import queue
import re
import subprocess
import threading
import time

import hoststate

WARM_CMDLINE_END = b"/program/main.py"


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return None


def _stat(pid, field):
    """Field @field of /proc/PID/stat (1-based, as proc(5) counts), or None."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[field - 3]
    except (OSError, IndexError):
        return None


def ppid_of(pid):
    v = _stat(pid, 4)
    return int(v) if v else None


def start_time(pid):
    """The kernel's start time of @pid (field 22), to tell a pid reused."""
    v = _stat(pid, 22)
    return int(v) if v else None


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


def inner_pid(pid):
    """@pid in its own pid namespace (the last NSpid field)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return None


def zygotes(batch_pid):
    """The zygotes under the nsbox batch process @batch_pid: python
    /program/main.py processes with no such process above them (up to
    @batch_pid), whatever the job inits between a zygote and its jobs show,
    and not PID 2 of their namespace (a cold job is; the zygote never is,
    docs/warm-start.md), so a batch that fell back to cold shows none."""
    found = []
    for p in descendants(batch_pid):
        if not is_python_main(p) or inner_pid(p) in (2, None):
            continue
        up = ppid_of(p)
        while up and up != batch_pid and not is_python_main(up):
            up = ppid_of(up)
        if not up or up == batch_pid:
            found.append(p)
    return found


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
    return _stat(pid, 3) in ("Z", "X", None)


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

    def drain(self):
        """The result lines that came so far (kept in self.results)."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return self.results
            if line is None:
                self.lines.put(None)
                return self.results
            if line.endswith(b"\n"):
                res = json.loads(line)
                self.results[res["id"]] = res

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
        self._reader.join(10)
        self._err.join(10)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except OSError:
                pass


class TreeWatcher:
    """Polls @root's process tree in a thread and keeps every pid it saw
    (with its start time). A batch's workers live as long as their job, so
    the poll sees them; their cgroups are named by their pid
    (`nsbox-<pid>-...`), which is how left() finds what a batch left."""

    def __init__(self, root, period=0.003):
        self.root, self.period = root, period
        self.seen = {}
        self.cgroups_before = set(nsbox_cgroups())
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._poll, daemon=True)
        self._t.start()

    def _poll(self):
        while not self._stop.is_set():
            for p, st in tree_snapshot(self.root).items():
                self.seen.setdefault(p, st)
            self._stop.wait(self.period)

    def stop(self):
        self._stop.set()
        self._t.join(10)
        return self

    def left(self, grace=5):
        """What the batch left once it ended: live processes of its tree,
        cgroups named after one of its processes."""
        self.stop()
        deadline = time.monotonic() + grace
        while alive_of(self.seen) and time.monotonic() < deadline:
            time.sleep(0.02)
        found = ["process survived: %d %r" % (p, cmdline(p)) for p in alive_of(self.seen)]
        pids = set(self.seen)
        for path in sorted(set(nsbox_cgroups()) - self.cgroups_before):
            m = NSBOX_CGROUP.match(os.path.basename(path))
            if m and int(m.group(1)) in pids:
                found.append("cgroup left: " + path)
        return found


NSBOX_CGROUP = re.compile(r"^nsbox-(?:sup-)?(\d+)(?:-.*)?$")


def nsbox_cgroups():
    """Every nsbox-* directory beneath our own cgroups (any suffix: a warm
    generation's cgroups need not follow the cold names)."""
    found = []
    for d in hoststate.own_cgroup_dirs():
        try:
            names = os.listdir(d)
        except OSError:
            continue
        found += [os.path.join(d, n) for n in names if n.startswith("nsbox-") and os.path.isdir(os.path.join(d, n))]
    return found
