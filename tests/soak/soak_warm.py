#!/usr/bin/python3
"""Warm soak (issue #14): one `nsbox batch --warm -j P --warm-rotate R` over
many python jobs, normal and hostile mixed, fed through its stdin in two
parts. Once the first tenth and once all jobs have their lines, nsbox is
idle: its fd count, its tree's processes and its cgroups must then be the
same, and its RSS within RSS_GROWTH_KIB; while it runs, the zygotes alive at
once are bounded and rotation must happen. Every job must have ended as its
kind expects and started warm, and the host must hold nothing of the batch
afterwards (process, cgroup, mount, temporary file).

usage: soak_warm.py [--jobs N] [--parallel P] [--rotate R] [--seed S]
                    [--nsbox PATH]

Exit 0 and a one-line JSON summary on stdout when all of that holds; exit 1
with the problems listed otherwise. CI runs --jobs 2000 --parallel 2
--rotate 100 (meson test `soak-warm`, suites soak and warm).
"""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import hoststate  # noqa: E402
import warmtree  # noqa: E402

RSS_GROWTH_KIB = 2048     # nsbox's idle resident memory, after all jobs over after the first tenth


def kinds():
    """name -> (weight, job builder(marker), accepted (status, limit, exit_code), stdout or None)."""
    return {
        "sum": (8, lambda m: {"code": "print(sum(range(10**5)))\n# %s" % m}, {("exited", None, 0)}, "4999950000\n"),
        "stdin": (3, lambda m: {"code": "import sys\nprint(sys.stdin.read().upper(), end='')", "stdin": m},
                  {("exited", None, 0)}, None),
        "files": (3, lambda m: {"code": "import os\nfor d in ('/tmp', '/workspace'):\n"
                                        "    open(d + '/f', 'w').write('x' * 4096)\n"
                                        "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/workspace')))"},
                  {("exited", None, 0)}, "['f'] ['f']\n"),
        "exception": (3, lambda m: {"code": "def f():\n    raise ValueError(%r)\nf()" % m}, {("exited", None, 1)}, ""),
        "exit3": (2, lambda m: {"code": "import sys\nprint('x')\nsys.exit(3)"}, {("exited", None, 3)}, "x\n"),
        "ipc": (2, lambda m: {"code": "import ctypes, socket\nlibc = ctypes.CDLL(None)\n"
                                      "libc.semget(0x5150, 1, 0o1666)\nlibc.msgget(0x5150, 0o1666)\n"
                                      "s = socket.socket(socket.AF_UNIX)\ns.bind('\\0soak-' + %r)\nprint('ok')" % m},
                {("exited", None, 0)}, "ok\n"),
        "thread": (2, lambda m: {"code": "import threading, time\n"
                                         "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\nprint('ok')"},
                   {("exited", None, 0)}, "ok\n"),
        "daemon": (2, lambda m: {"code": "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                                         "        os.execv('/usr/bin/python3', ['python3', '-c', 'import time\\nwhile 1: time.sleep(1)', %r])\n"
                                         "    os._exit(0)\ntime.sleep(0.1)\nprint('left')" % m},
                   {("exited", None, 0)}, "left\n"),
        "forkbomb": (1, lambda m: {"code": "import os, time\ntry:\n    while True:\n        if os.fork() == 0:\n"
                                           "            time.sleep(60)\n            os._exit(0)\nexcept OSError:\n    print('refused')",
                                   "limits": {"pids": "12"}}, {("exited", None, 0)}, "refused\n"),
        "flood": (1, lambda m: {"code": "while True:\n    print('flood ' * 20)", "limits": {"output_limit": "16K"}},
                  {("limit", "output", None)}, None),
        "spin": (1, lambda m: {"code": "while True:\n    pass", "limits": {"wall_time": "300ms", "cpu_time": "10s"}},
                 {("limit", "wall_time", None)}, ""),
        "memory": (1, lambda m: {"code": "x = []\nwhile True:\n    x.append(b'm' * (1 << 20))", "limits": {"memory": "64M"}},
                   {("limit", "memory", None), ("exited", None, 1)}, ""),
    }


class Sampler(threading.Thread):
    """Every @period s: nsbox's fds and RSS, its tree's process count, the
    zygotes alive, and the cgroups named after a process of its tree (the
    maxima are reported; rotation is seen in the zygotes)."""

    def __init__(self, pid, period=0.02):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.samples = []        # (done jobs, fds, rss KiB, processes, zygotes, cgroups)
        self.done = 0
        self.zygotes = set()
        self.cgroups_before = set(warmtree.nsbox_cgroups())
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                fds = hoststate.fd_count(self.pid)
            except OSError:
                break
            tree = warmtree.tree_snapshot(self.pid)
            zyg = warmtree.zygotes(self.pid)
            self.zygotes.update(zyg)
            pids = set(tree)
            cgs = [c for c in set(warmtree.nsbox_cgroups()) - self.cgroups_before
                   if (lambda m: m and int(m.group(1)) in pids)(warmtree.NSBOX_CGROUP.match(os.path.basename(c)))]
            self.samples.append((self.done, fds, warmtree.rss_kib(self.pid), len(tree), len(zyg), len(cgs)))
            self.stop.wait(self.period)


def idle_state(pid, cgroups_before, settle=0.5):
    """nsbox with no job in flight: its fds, its tree's processes, the
    cgroups named after one of them, its RSS (after @settle s for the
    workers of the last jobs to end)."""
    time.sleep(settle)
    tree = warmtree.tree_snapshot(pid)
    cgs = [c for c in set(warmtree.nsbox_cgroups()) - cgroups_before
           if (lambda m: m and int(m.group(1)) in tree)(warmtree.NSBOX_CGROUP.match(os.path.basename(c)))]
    try:
        fds = hoststate.fd_count(pid)
    except OSError:
        fds = None
    return {"fds": fds, "processes": len(tree), "cgroups": len(cgs), "rss_kib": warmtree.rss_kib(pid)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--rotate", type=int, default=100)
    ap.add_argument("--seed", type=int, default=2014)
    ap.add_argument("--nsbox", default=os.environ.get("NSBOX", os.path.join(HERE, "..", "..", "build", "nsbox")))
    a = ap.parse_args()

    rng = random.Random(a.seed)
    table = kinds()
    names = [n for n, (w, _, _, _) in table.items() for _ in range(w)]
    plan, markers, lines = {}, [], []
    for i in range(a.jobs):
        kind = rng.choice(names)
        marker = "nsbox-soakwarm-%d-%s" % (i, uuid.uuid4().hex[:12])
        markers.append(marker)
        job = dict(id=i, kind="python", **table[kind][1](marker))
        job.setdefault("limits", {})
        job["limits"].setdefault("wall_time", "30s")
        plan[i] = (kind, marker)
        lines.append((json.dumps(job) + "\n").encode())

    snap = hoststate.Snapshot()
    t0 = time.monotonic()
    proc = hoststate.start([a.nsbox, "batch", "--warm", "-j", str(a.parallel), "--warm-rotate", str(a.rotate), "-"],
                           stdin=subprocess.PIPE)
    sampler = Sampler(proc.pid)
    sampler.start()
    tree = warmtree.TreeWatcher(proc.pid, period=0.02)
    # jobs go in two parts; after each, once every result is in, nsbox is
    # idle: its fds, processes, cgroups and RSS then must be the same
    checkpoint = max(a.jobs // 10, 1)
    idle, idle_taken = [], threading.Event()

    def feed():
        try:
            for n, line in enumerate(lines):
                if n == checkpoint:
                    idle_taken.wait()
                proc.stdin.write(line)
                proc.stdin.flush()
            while len(idle) < 2 and proc.poll() is None:
                time.sleep(0.05)
        finally:
            proc.stdin.close()
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    problems, results = [], {}
    for line in proc.stdout:
        res = json.loads(line)
        results[res["id"]] = res
        sampler.done = len(results)
        if len(results) in (checkpoint, a.jobs):
            idle.append(idle_state(proc.pid, sampler.cgroups_before))
            idle_taken.set()
    err = proc.stderr.read()
    proc.wait()
    feeder.join(10)
    elapsed = time.monotonic() - t0
    sampler.stop.set()
    sampler.join(10)

    if proc.returncode != 0:
        problems.append("nsbox batch exited %d: %r" % (proc.returncode, err[-500:]))
    if len(results) != a.jobs:
        problems.append("%d result lines for %d jobs" % (len(results), a.jobs))
    cold = 0
    for i, res in sorted(results.items()):
        kind, marker = plan[i]
        _, _, accepted, stdout = table[kind]
        got = (res["status"], res["limit"], res["exit_code"])
        if res.get("start") != "warm":
            cold += 1
            problems.append("job %d (%s) did not start warm: start=%r reason=%r error=%r"
                            % (i, kind, res.get("start"), res.get("start_reason"), res.get("error")))
        if got not in accepted:
            problems.append("job %d (%s): %r not in %r: %r" % (i, kind, got, sorted(accepted, key=str),
                                                               res.get("error") or res["stderr"]["text"][-300:]))
        elif kind == "stdin" and res["stdout"]["text"] != marker.upper():
            problems.append("job %d (stdin): stdout %r" % (i, res["stdout"]["text"][:200]))
        elif stdout is not None and res["stdout"]["text"] != stdout:
            problems.append("job %d (%s): stdout %r, expected %r" % (i, kind, res["stdout"]["text"][:200], stdout))
    g = {"idle_after": [checkpoint, a.jobs], "idle": idle, "samples": len(sampler.samples)}
    if sampler.samples:
        g.update(zygotes_max=max(x[4] for x in sampler.samples), processes_max=max(x[3] for x in sampler.samples),
                 cgroups_max=max(x[5] for x in sampler.samples), fds_max=max(x[1] for x in sampler.samples),
                 rss_kib_max=max(x[2] or 0 for x in sampler.samples))
    if len(idle) != 2:
        problems.append("nsbox was not seen idle after %d and %d jobs" % (checkpoint, a.jobs))
    else:
        for name in ("fds", "processes", "cgroups"):
            if idle[1][name] != idle[0][name]:
                problems.append("idle %s after %d jobs: %d, after %d: %d" % (name, checkpoint, idle[0][name], a.jobs,
                                                                         idle[1][name]))
        if idle[1]["rss_kib"] > idle[0]["rss_kib"] + RSS_GROWTH_KIB:
            problems.append("nsbox's idle RSS grew: %d -> %d KiB" % (idle[0]["rss_kib"], idle[1]["rss_kib"]))
    if g.get("zygotes_max", 0) > 2 * a.parallel:
        problems.append("%d zygotes alive at once for -j %d" % (g["zygotes_max"], a.parallel))
    if len(sampler.zygotes) < a.jobs // a.rotate:
        problems.append("%d zygotes seen for %d jobs at --warm-rotate %d: rotation did not happen"
                        % (len(sampler.zygotes), a.jobs, a.rotate))
    # afterwards: nothing of the batch is left
    leaks = tree.left() + snap.leaks([proc.pid], markers)
    hoststate.kill_marked(markers)   # never leave a survivor behind

    counts = {}
    for kind, _ in plan.values():
        counts[kind] = counts.get(kind, 0) + 1
    summary = {"jobs": len(results), "parallel": a.parallel, "rotate": a.rotate, "seconds": round(elapsed, 1),
               "jobs_per_second": round(len(results) / elapsed, 1) if elapsed else None, "kinds": counts,
               "not_warm": cold, "zygotes_seen": len(sampler.zygotes), "samples": len(sampler.samples),
               "growth": g, "leaks": leaks, "unexpected": len(problems)}
    print(json.dumps(summary, sort_keys=True))
    for p in problems[:50] + leaks:
        print("PROBLEM: " + p, file=sys.stderr)
    return 1 if problems or leaks else 0


if __name__ == "__main__":
    sys.exit(main())
