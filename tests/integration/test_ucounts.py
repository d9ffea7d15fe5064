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


# The reviewer's two jobs (outside review of #27 class 2). The hog: 41
# processes, each with every standard signal (but SIGKILL, SIGSTOP) pending
# twice, in its process's shared queue (kill of itself, SI_USER) and its
# thread's own (rt_tgsigqueueinfo to itself, si_code 0): the kernel skips
# RLIMIT_SIGPENDING for those (override_rlimit) but charges every level.
SIG_HOG = """import ctypes, json, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
STD = [s for s in range(1, 32) if s not in (9, 19)]
NPROC, HOLD = int(sys.argv[1]), float(sys.argv[2])
def fill():
    n = 0
    for s in STD:
        os.kill(os.getpid(), s); n += 1
    info = (ctypes.c_int * 32)()
    for s in STD:
        info[0], info[1], info[2] = s, 0, 0
        if libc.syscall(297, os.getpid(), libc.syscall(186), s, ctypes.byref(info)) == 0: n += 1
    return n
signal.pthread_sigmask(signal.SIG_BLOCK, range(1, 65))
r, w = os.pipe()
for i in range(NPROC - 1):
    if os.fork() == 0:
        os.write(w, b"%d " % fill()); time.sleep(HOLD); os._exit(0)
own = fill(); os.close(w)
got = [own] + [int(x) for x in os.read(r, 1 << 16).split()]
while len(got) < NPROC:
    more = os.read(r, 1 << 16)
    if not more: break
    got += [int(x) for x in more.split()]
t_filled = time.time(); time.sleep(HOLD)
print(json.dumps({"procs": len(got), "held": sum(got), "t_filled": t_filled, "t_end": time.time()}))
"""
# The other job: how many real-time signals it can queue (its share, if
# nothing above its own level is full), while the hog holds.
SIG_PROBE = """import ctypes, json, os, resource, signal, sys, time
time.sleep(float(sys.argv[1]))
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
libc = ctypes.CDLL(None, use_errno=True)
t0 = time.time(); n = 0
while n < 5000 and libc.sigqueue(os.getpid(), signal.SIGRTMIN, ctypes.c_void_p(0)) == 0: n += 1
print(json.dumps({"sigqueue": n, "share": resource.getrlimit(resource.RLIMIT_SIGPENDING)[1], "t_start": t0,
                  "t_end": time.time()}))
"""


def sig_batch(caller_limit, opts, hog_procs):
    """`prlimit --sigpending=LIMIT nsbox batch OPTS` of the two jobs."""
    jobs = [{"id": "hog", "kind": "python", "code": "import sys; sys.argv[1:] = %r\n" % ([str(hog_procs), "8"],)
             + SIG_HOG, "timeout": 60},
            {"id": "probe", "kind": "python", "code": "import sys; sys.argv[1:] = ['3']\n" + SIG_PROBE,
             "timeout": 60}]
    p = subprocess.run(["prlimit", "--sigpending=%d" % caller_limit, NSBOX, "batch", *opts, "-"],
                       input="".join(json.dumps(j) + "\n" for j in jobs).encode(), capture_output=True, timeout=240)
    out = {}
    for line in p.stdout.decode().splitlines():
        d = json.loads(line)
        r = d.get("result", d)
        assert r["status"] == "exited", (d.get("id"), r.get("error"), (r.get("stderr") or {}).get("text", "")[-1500:])
        out[d["id"]] = json.loads(r["stdout"]["text"].split("\n", 1)[0])
    assert len(out) == 2, (p.returncode, p.stderr.decode()[-2000:])
    return out["hog"], out["probe"]


class UcountShares(SandboxTest):
    def concurrent(self, run, what, tries=3, held="sigqueue"):
        """run() -> (hog, probe) observations, again until the probe ran
        while the hog held (a loaded host may start one late)."""
        for _ in range(tries):
            hog, probe = run()
            self.assertGreater(hog[held], 0, "the hog held nothing: the test proves nothing")
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
        (Before: 4096 for all, and the probe got 1992 of its 2099 threads.)
        With 2100 tasks a job queues no signal at all (64 x 2101 is more
        than half the budget: ns/ucount.h): the hog holds threads."""
        opts = ("--warm", "-j", "2", "--pids", "2100", "--memory", "1G")
        alone = batch([job("probe", ["probe"])], *opts)["probe"][0]
        _, probe = self.concurrent(lambda: self.batch_pair(*opts), "warm -j 2 --pids 2100", held="threads")
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

    def standard_signals(self, opts, hog_procs):
        for _ in range(3):
            hog, probe = sig_batch(2048, opts, hog_procs)
            self.assertGreater(hog["held"], 0, hog)
            if hog["t_filled"] <= probe["t_start"] and probe["t_end"] <= hog["t_end"]:
                break
        else:
            self.fail("inconclusive: the probe never ran while the hog held (%r, %r)" % (hog, probe))
        self.assertEqual(probe["sigqueue"], probe["share"],
                         "%s: the other job queued %d of its %d signals next to a job holding %d standard "
                         "signals in %d processes: the shared level was full" % (opts, probe["sigqueue"],
                                                                                 probe["share"], hog["held"],
                                                                                 hog["procs"]))
        return hog, probe

    def test_standard_signals_reach_no_other_job(self):
        """Standard signals skip RLIMIT_SIGPENDING but are charged at every
        level: the reviewer's job of 41 processes, each holding 58, under a
        caller limit of 2048 (`prlimit --sigpending=2048 nsbox batch -j 2`),
        left the other job 0 of its 256. The share now leaves room for 64 a
        task: with --pids 64 that is more than a quarter of 2048, so no job
        queues a signal at all (its own level refuses at once) and the other
        job gets all of its share, 0; cold and warm."""
        for opts in (("-j", "2"), ("--warm", "-j", "2")):
            hog, probe = self.standard_signals(opts, 41)
            self.assertEqual(hog["procs"], 41, hog)
            self.assertGreaterEqual(hog["held"], 41 * 58, hog)     # past 2048: it held them all
            self.assertEqual(probe["share"], 0, (opts, probe))

    def test_standard_signals_within_the_quarter(self):
        """The same two jobs with --pids 2: the share (min(2048 / 8, 2048 / 2
        - 64 x 3) = 256) and what standard signals add stay within the
        caller's budget, and the other job queues its whole share next to a
        hog that holds all it can."""
        for opts in (("-j", "2", "--pids", "2"), ("--warm", "-j", "2", "--pids", "2")):
            hog, probe = self.standard_signals(opts, 2)
            self.assertEqual((hog["procs"], probe["share"]), (2, 256), (opts, hog, probe))

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
