"""Budgets the kernel counts per user across user-namespace levels (issue #27,
docs/security.md "Budgets the kernel counts per user").

Every sandbox runs as one mapped uid, so the kernel's per-user counters
(pending signals, SHM_LOCK'd memory, message-queue bytes, namespaces,
inotify, ...) are shared at every level above the sandbox's own user
namespace: the warm zygote's for its jobs, the caller's for everyone. A
sandbox gets a static share of each, so

- a job's counts are the same whether or not another job fills every budget
  and holds it (warm `batch --warm -j 2`, also with `--pids 2100` for the
  rlimit backend's tasks, cold `batch -j 2`, two cold `nsbox python` at
  once): nothing to measure, nothing starved;
- a cold run that holds its maximum leaves the caller most of its own
  budget (the test process is the caller: as 65534 it shares the counters);
- each sandbox's own user namespace has its max_* at 0 (read from the host
  through setns into it).

fixtures/hostile/ucount_probe.py counts what it can take (probe) or takes it
all and holds it (hog). The probe runs while the hog holds: the CLOCK_REALTIME
stamps both report prove it, else the test says it was inconclusive.
"""
import json
import os
import subprocess
import sys
import time
import uuid

from nsbtest import FIXTURES, NSBOX, SandboxTest, processes_with

HOSTILE = os.path.join(FIXTURES, "hostile")
PROBE = os.path.join(HOSTILE, "ucount_probe.py")
HOLD, WAIT = 12, 5
# What a probe counts; each must be the same alone and next to a hog.
COUNTED = ("sigqueue", "timers", "mq_queues", "shm_lock_segments", "inotify_instances", "inotify_watches",
           "fanotify_groups", "userns", "threads", "rlimits")


def job(id_, args):
    with open(PROBE, encoding="utf-8") as f:
        code = "import sys; sys.argv[1:] = %r\n" % (args,) + f.read()
    return {"id": id_, "kind": "python", "code": code, "timeout": 60}


def batch(jobs, *opts):
    """Runs the jobs in one `nsbox batch`; returns {id: observation}."""
    p = subprocess.run([NSBOX, "batch", *opts, "--ro-bind", HOSTILE + ":/hostile", "-"],
                       input="".join(json.dumps(j) + "\n" for j in jobs).encode(), capture_output=True, timeout=240)
    out = {}
    for line in p.stdout.decode().splitlines():
        d = json.loads(line)
        r = d.get("result", d)
        assert r["status"] == "exited", (d.get("id"), r.get("error"), (r.get("stderr") or {}).get("text", "")[-1500:])
        out[d["id"]] = (json.loads(r["stdout"]["text"].split("\n", 1)[0]), r.get("start"))
    assert len(out) == len(jobs), (p.returncode, p.stderr.decode()[-2000:])
    return out


def python_argv(*args):
    return [NSBOX, "python", "--json", "--wall-time", "90s", "--ro-bind", HOSTILE + ":/hostile", PROBE, *args]


def observed(stdout):
    r = json.loads(stdout)
    assert r["status"] == "exited", (r.get("error"), r["stderr"]["text"][-1500:])
    return json.loads(r["stdout"]["text"].split("\n", 1)[0])


def ns_maxima(pid):
    """/proc/sys/user/max_* of @pid's user namespace, read after setns into
    it (in a child: setns needs a single-threaded process)."""
    code = ("import ctypes, os, json, sys\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "fd = os.open('/proc/%d/ns/user' % int(sys.argv[1]), os.O_RDONLY)\n"
            "if libc.setns(fd, 0x10000000) != 0: sys.exit('setns: %s' % os.strerror(ctypes.get_errno()))\n"
            "d = '/proc/sys/user'\n"
            "print(json.dumps({n: int(open(os.path.join(d, n)).read()) for n in os.listdir(d)}))\n")
    p = subprocess.run([sys.executable, "-c", code, str(pid)], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def descendants(root):
    kids = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(pid))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def overlapped(hog, probe):
    return hog["t_filled"] <= probe["t_start"] and probe["t_end"] <= hog["t_end"]


class UcountShares(SandboxTest):
    def concurrent(self, run, what, tries=3):
        """run() -> (hog, probe) observations, again until the probe ran
        while the hog held (a loaded host may start one late)."""
        for _ in range(tries):
            hog, probe = run()
            self.assertGreater(hog["sigqueue"], 0, "the hog held nothing: the test proves nothing")
            if overlapped(hog, probe):
                return hog, probe
        self.fail("%s: inconclusive, the probe never ran while the hog held (hog %.1f-%.1f, probe %.1f-%.1f)"
                  % (what, hog["t_filled"], hog["t_end"], probe["t_start"], probe["t_end"]))

    def check_pair(self, probe, alone, what, first=()):
        for k in tuple(first) + COUNTED:
            self.assertEqual(probe[k], alone[k], "%s: %s differs next to a hog (%r alone): another sandbox's use "
                             "is visible, or starves it" % (what, k, alone[k]))

    def batch_pair(self, *opts):
        got = batch([job("hog", ["hog", str(HOLD)]), job("probe", ["probe", "--wait", str(WAIT)])], *opts)
        if "--warm" in opts:
            self.assertEqual((got["hog"][1], got["probe"][1]), ("warm", "warm"))
        return got["hog"][0], got["probe"][0]

    def test_warm_jobs_concurrent(self):
        """Two jobs of one zygote (`batch --warm -j 2`): the probe counts the
        same as alone, while the other job holds every budget."""
        alone = batch([job("probe", ["probe"])], "--warm", "-j", "2")["probe"]
        self.assertEqual(alone[1], "warm")
        _, probe = self.concurrent(lambda: self.batch_pair("--warm", "-j", "2"), "warm -j 2")
        self.check_pair(probe, alone[0], "warm -j 2")

    def test_warm_tasks_concurrent(self):
        """Tasks under the rlimit backend (uid 65534 here): each job's
        RLIMIT_NPROC is its --pids, and the zygote's, each job's
        parent-level maximum, holds every slot's (4096 + slots x --pids):
        two jobs of 2100 tasks each meet neither at the zygote's level.
        (Before: 4096 for all, and the probe got 1992 of its 2099 threads.)"""
        opts = ("--warm", "-j", "2", "--pids", "2100", "--memory", "1G")
        alone = batch([job("probe", ["probe"])], *opts)["probe"][0]
        _, probe = self.concurrent(lambda: self.batch_pair(*opts), "warm -j 2 --pids 2100")
        self.check_pair(probe, alone, "warm -j 2 --pids 2100", first=("threads",))

    def test_cold_batch_concurrent(self):
        """The same for two cold jobs of `batch -j 2`."""
        alone = batch([job("probe", ["probe"])], "-j", "2")["probe"][0]
        _, probe = self.concurrent(lambda: self.batch_pair("-j", "2"), "cold -j 2")
        self.check_pair(probe, alone, "cold -j 2")

    def two_runs(self):
        hog = subprocess.Popen(python_argv("hog", str(HOLD)), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            probe = observed(subprocess.run(python_argv("probe", "--wait", str(WAIT)), capture_output=True,
                                            timeout=120).stdout)
            out, _ = hog.communicate(timeout=120)
        finally:
            if hog.poll() is None:
                hog.kill()
                hog.communicate()
        return observed(out), probe

    def test_cold_runs_concurrent(self):
        """Two `nsbox python` at once: the same."""
        alone = observed(subprocess.run(python_argv("probe"), capture_output=True, timeout=120).stdout)
        _, probe = self.concurrent(self.two_runs, "two cold runs")
        self.check_pair(probe, alone, "two cold runs")

    def test_caller_keeps_its_budget(self):
        """A cold run holding its maximum leaves the caller (this process:
        the sandbox's own host uid when unprivileged) at least 3/4 of each
        budget: it can still inotify_init, queue signals and lock memory."""
        import ctypes
        import resource
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        hog = subprocess.Popen(python_argv("hog", str(HOLD)), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            time.sleep(WAIT)
            fd = libc.inotify_init1(os.O_CLOEXEC)
            self.assertGreaterEqual(fd, 0, "the caller cannot inotify_init while a sandbox runs: %s"
                                    % os.strerror(ctypes.get_errno()))
            os.close(fd)
            # SHM_LOCK'd memory (root holds CAP_IPC_LOCK: the count does not apply to it)
            if os.geteuid() != 0:
                lim = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
                ids, seg, locked = [], 64 << 10, 0
                try:
                    while locked + seg <= lim:
                        sid = libc.shmget(0, ctypes.c_size_t(seg), 0o1000 | 0o600)   # IPC_PRIVATE, IPC_CREAT
                        if sid < 0:
                            break
                        ids.append(sid)
                        if libc.shmctl(sid, 11, None) != 0:   # SHM_LOCK
                            break
                        locked += seg
                finally:
                    for sid in ids:
                        libc.shmctl(sid, 0, None)   # IPC_RMID
                if lim != resource.RLIM_INFINITY:
                    self.assertGreaterEqual(locked, lim * 3 // 4 - seg, "the caller can lock %d of its %d bytes "
                                            "while a sandbox runs" % (locked, lim))
            # pending signals, in a child (they go with it)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                n = 0
                try:
                    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
                    lim = resource.getrlimit(resource.RLIMIT_SIGPENDING)[0]
                    while n < lim and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0:
                        n += 1
                    os.write(w, json.dumps([n, lim]).encode())
                finally:
                    os._exit(0)
            os.close(w)
            n, lim = json.loads(os.read(r, 100))
            os.close(r)
            os.waitpid(pid, 0)
            self.assertGreaterEqual(n, lim * 3 // 4, "the caller can queue %d of its %d signals while a sandbox runs"
                                    % (n, lim))
            out, _ = hog.communicate(timeout=120)
        finally:
            if hog.poll() is None:
                hog.kill()
                hog.communicate()
        held = observed(out)
        self.assertGreater(held["sigqueue"], 0)

    def test_namespace_maxima_cold(self):
        """A cold sandbox's own user namespace: every max_* is 0 (namespaces,
        inotify, fanotify): its own level says no, whatever seccomp does."""
        tag = "ucount-%s" % uuid.uuid4().hex
        hog = subprocess.Popen(python_argv("hog", "8", tag), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            pids = []
            for _ in range(100):
                pids = [p for p in processes_with(tag) if comm(p) != "nsbox"]
                if pids:
                    break
                time.sleep(0.1)
            self.assertTrue(pids, "the sandboxed program was not found")
            maxima = ns_maxima(pids[0])
        finally:
            hog.kill()
            hog.communicate()
        self.assertEqual(len(maxima), 12, maxima)
        self.assertEqual({k: v for k, v in maxima.items() if v != 0}, {})

    def test_namespace_maxima_warm(self):
        """A warm job's user namespace: the same, while the zygote's keeps
        what it needs to make the next job's namespaces."""
        p = subprocess.Popen([NSBOX, "batch", "--warm", "-j", "1", "--ro-bind", HOSTILE + ":/hostile", "-"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            p.stdin.write((json.dumps(job("hog", ["hog", "8"])) + "\n").encode())
            p.stdin.close()
            inits = []
            for _ in range(200):
                inits = [d for d in descendants(p.pid) if comm(d) == "nsbox-job-init"]
                if inits:
                    break
                time.sleep(0.1)
            self.assertTrue(inits, "no warm job's init was found")
            maxima = ns_maxima(inits[0])
            zygotes = [d for d in descendants(p.pid) if comm(d) == "nsbox-zygote"]
            zmax = ns_maxima(zygotes[0]) if zygotes else {}
        finally:
            p.terminate()   # a cancel: the batch ends its job, zygote and keeper
            p.stdout.close()
            p.stderr.close()
            p.wait(timeout=60)
        self.assertEqual({k: v for k, v in maxima.items() if v != 0}, {})
        self.assertGreater(zmax.get("max_user_namespaces", 0), 0, zmax)
        self.assertGreater(zmax.get("max_pid_namespaces", 0), 0, zmax)


if __name__ == "__main__":
    import unittest
    unittest.main()
