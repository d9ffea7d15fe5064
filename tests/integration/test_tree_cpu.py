"""CPU time and peak memory are the whole job's, under every backend (issue #27).

--cpu-time is a limit of the whole tree. Under the rlimit backend (an
unprivileged caller without a delegated cgroup: uid 65534 here) RLIMIT_CPU
bounds each process alone, so six children each burning 0.8 s under
--cpu-time 1s ended `exited 0` with cpu_ms 4826 (and cpu_time already in
limits_hit). The supervisor now sums the tree's CPU time at each look
(cgroup/proc_tree.h) and stops the run at the limit: children side by side,
a chain of short children each waited for, children reaped without a wait
(SIGCHLD ignored: their time reaches no parent's counters), threads.
docs/cgroups.md states what is still not counted, and the overshoot.

peak_memory_bytes is the job's own: under the rlimit backend it was the
rusage's ru_maxrss, which counts the copy of the supervisor every process
starts as (a batch worker that read a 60 MiB job reported 64 MB for the
next, small job, and named it `limit: memory` under a smaller --memory).

As root these run on the cgroup backend (its own clock, its own peak): the
same outcomes hold. The unprivileged run (as_nobody.sh) is the rlimit one,
cold and warm (`nsbox batch --warm`).
"""
import json
import os
import tempfile
import unittest

from nsbtest import FIXTURES, SandboxTest, skip_or_fail

CPU_TREE = os.path.join(FIXTURES, "hostile", "cpu_tree.py")
NCPU = os.cpu_count() or 1
# docs/cgroups.md ("the tree's CPU time"): two looks 20 ms apart of every
# CPU, a clock tick (10 ms) per process read, plus the supervisor's own
# wake-up on a host whose CPUs the tree keeps busy
OVERSHOOT_MS = 2 * 20 * NCPU + 10 * 8 + 300


def perf_paranoid():
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 99


def cpu_tree_code(mode, total, each=None):
    """The fixture as a batch job's code (a job has no argv)."""
    args = [mode, str(total)] + ([str(each)] if each else [])
    with open(CPU_TREE, encoding="utf-8") as f:
        return "import sys; sys.argv[1:] = %r\n" % args + f.read()


class TreeCpu(SandboxTest):
    def tree(self, mode, total, each=None, cpu="1s"):
        args = [mode, str(total)] + ([str(each)] if each else [])
        return self.run_json("python", "--cpu-time", cpu, "--wall-time", "60s", "--pids", "32", CPU_TREE, *args,
                             timeout=120)

    def assert_stopped(self, res, limit_ms=1000):
        what = (res["protections"]["cpu_time"], res["stdout"]["text"][-300:], res["stderr"]["text"][-500:])
        self.assertEqual((res["status"], res["limit"]), ("limit", "cpu_time"), what)
        self.assertIn("cpu_time", res["limits_hit"])
        self.assertNotIn("burned_s", res["stdout"]["text"], "the program finished: nothing stopped it")
        # at the limit, not far past it (and never the processes' sum)
        self.assertGreaterEqual(res["cpu_ms"], limit_ms * 0.9, res)
        self.assertLessEqual(res["cpu_ms"], limit_ms + OVERSHOOT_MS, what)

    def test_children_side_by_side(self):
        # the finding: six children of 0.8 s each, each under RLIMIT_CPU's 1 s
        p, res = self.tree("parallel", 4.8, 0.8)
        self.assert_stopped(res)
        self.assertEqual(p.returncode, 124)

    def test_a_chain_of_short_children_each_waited_for(self):
        # each ends (and is waited for) between two looks: its time is in
        # its parent's cutime/cstime by the next one
        p, res = self.tree("chain", 1.5, 0.015)
        self.assert_stopped(res)

    def test_children_reaped_without_a_wait(self):
        # SIGCHLD ignored: the kernel reaps them, their time reaches no
        # parent's cutime and not the init's rusage (on main: exited, cpu_ms
        # about 40 for 1.5 s burned, limits_hit empty)
        p, res = self.tree("unwaited", 1.5, 0.3)
        self.assert_stopped(res)

    def test_short_children_reaped_without_a_wait(self):
        # children shorter than a look (12 ms), reaped unwaited: no look sees
        # most of them and no counter of the tree's processes keeps their
        # time. A cgroup's clock counts them; under the rlimit backend the
        # kernel's inherited task-clock does where perf is open to the caller
        # (perf_event_paranoid <= 2, or root). Elsewhere this is the residual
        # docs/cgroups.md states: the run may end "exited" (and then never
        # with cpu_time in limits_hit).
        p, res = self.tree("unwaited", 3, 0.012)
        if res["protections"]["cpu_time"] == "rlimit" and os.geteuid() != 0 and perf_paranoid() > 2:
            self.assertIn(res["status"], ("limit", "exited"), res)
            if res["status"] == "exited":
                self.assertNotIn("cpu_time", res["limits_hit"])
            return
        self.assert_stopped(res)

    def test_threads_of_children(self):
        p, res = self.tree("threads", 1.5, 0.5)
        self.assert_stopped(res)

    def test_every_way_at_once(self):
        p, res = self.tree("mixed", 1.5)
        self.assert_stopped(res)

    def test_reduced_isolation_too(self):
        # no pid namespace: the init is the program's subreaper, so the tree
        # under it is the job's all the same
        for args in (("parallel", "4.8", "0.8"), ("unwaited", "1.5", "0.3")):
            p, res = self.run_json("python", "--isolation", "reduced", "--cpu-time", "1s", "--wall-time", "60s",
                                   "--pids", "32", CPU_TREE, *args, timeout=120)
            if res["status"] == "error":
                skip_or_fail(self, "reduced isolation is not available here: %s" % res["error"])
            self.assertEqual(res["isolation"], "reduced")
            self.assert_stopped(res)

    def test_reduced_isolation_short_children_have_the_clock(self):
        # the reviewer's storm: children of 12 ms reaped unwaited, which only
        # the tree's perf clock counts. The reduced init forked the program
        # without waiting for the supervisor, so the clock opened after the
        # clone missed the program's tree ~1 run in 3 (exited, cpu_ms ~250);
        # it now waits for "go", sent after the clock is on it.
        if os.geteuid() != 0 and perf_paranoid() > 2:
            self.skipTest("perf_event_paranoid %d: no tree clock for an unprivileged caller" % perf_paranoid())
        for _ in range(5):
            p, res = self.run_json("python", "--isolation", "reduced", "--cpu-time", "1s", "--wall-time", "60s",
                                   "--pids", "256", CPU_TREE, "unwaited", "3", "0.012", timeout=120)
            if res["status"] == "error":
                skip_or_fail(self, "reduced isolation is not available here: %s" % res["error"])
            self.assert_stopped(res)

    def test_a_single_process_is_unchanged(self):
        code = "while True: pass\n"
        p, res = self.run_json("python", "--cpu-time", "1s", "--wall-time", "20s", "-c", code)
        self.assertEqual((res["status"], res["limit"]), ("limit", "cpu_time"), res)
        # RLIMIT_CPU may come first (the kernel's own clock, which the
        # figures nsbox reads can trail on a loaded host: test_limits)
        self.assertGreater(res["cpu_ms"], 500, res)
        self.assertLessEqual(res["cpu_ms"], 1000 + OVERSHOOT_MS, res)

    def test_under_the_limit_is_no_limit(self):
        # three children of 0.2 s under 3 s: counted once each, never twice
        p, res = self.tree("parallel", 0.6, 0.2, cpu="3s")
        self.assertEqual((res["status"], res["exit_code"], res["limits_hit"]), ("exited", 0, []), res)
        self.assertGreaterEqual(res["cpu_ms"], 550, res)
        self.assertLess(res["cpu_ms"], 1500, res)
        p, res = self.tree("chain", 0.6, 0.015, cpu="3s")
        self.assertEqual((res["status"], res["exit_code"], res["limits_hit"]), ("exited", 0, []), res)
        self.assertLess(res["cpu_ms"], 1500, res)


class TreeCpuWarm(SandboxTest):
    def batch(self, jobs, *opts):
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for j in jobs:
                f.write(json.dumps(j) + "\n")
        self.addCleanup(os.unlink, f.name)
        p = self.nsbox("batch", "--quiet", "-j", "1", *opts, f.name, timeout=300)
        out = {}
        for line in p.stdout.splitlines():
            r = json.loads(line)
            out[r["id"]] = r
        self.assertEqual(len(out), len(jobs), p.stderr[-2000:])
        return out

    def test_warm_jobs_hold_the_tree_to_the_limit(self):
        jobs = [{"id": m, "kind": "python", "code": cpu_tree_code(m, t, e),
                 "limits": {"cpu_time": "1s", "wall_time": "60s", "pids": 32}}
                for m, t, e in (("parallel", 4.8, 0.8), ("unwaited", 1.5, 0.3))]
        for warm in ([], ["--warm"]):
            out = self.batch(jobs, *warm)
            for m, res in out.items():
                self.assertEqual(res.get("start"), "warm" if warm else "cold", res.get("start_reason"))
                TreeCpu.assert_stopped(self, res)

    def test_warm_short_children_reaped_unwaited(self):
        # 5 ms children reaped unwaited: only the tree's perf clock counts
        # them. The zygote cloned a warm job's init without waiting, so warm
        # jobs had no clock (the reviewer: 10 s burned under --cpu-time 1s,
        # exited, cpu_ms ~10x low); the init now waits for "go", sent after
        # the clock is on it.
        if os.geteuid() != 0 and perf_paranoid() > 2:
            self.skipTest("perf_event_paranoid %d: no tree clock for an unprivileged caller" % perf_paranoid())
        jobs = [{"id": "storm%d" % i, "kind": "python", "code": cpu_tree_code("unwaited", 4, 0.005),
                 "limits": {"cpu_time": "1s", "wall_time": "60s", "pids": 64}} for i in range(2)]
        out = self.batch(jobs, "--warm")
        for res in out.values():
            self.assertEqual(res.get("start"), "warm", res.get("start_reason"))
            TreeCpu.assert_stopped(self, res)


MEM_TREE = os.path.join(FIXTURES, "hostile", "mem_tree.py")


def mem_tree_code(*args):
    with open(MEM_TREE, encoding="utf-8") as f:
        return "import sys; sys.argv[1:] = %r\n" % [str(a) for a in args] + f.read()


class TreeMemory(SandboxTest):
    """--memory is the whole tree's: under the rlimit backend the
    supervisor's look at the tree (cgroup/proc_tree.c) must see all of it,
    and must not name a limit an honest tree never reached (the outside
    review of #27 class 4). As root (a cgroup backend) the same holds."""

    def mem(self, *args, isolation="strict"):
        p, res = self.run_json("python", "--isolation", isolation, "--memory", "256M", "--pids", "1024",
                               "--wall-time", "30s", MEM_TREE, *[str(a) for a in args], timeout=120)
        if res["status"] == "error" and isolation != "strict":
            skip_or_fail(self, "reduced isolation is not available here: %s" % res["error"])
        return res

    def assert_memory_limit(self, res):
        what = (res["protections"]["memory"], res["stdout"]["text"][-300:], res["stderr"]["text"][-300:])
        self.assertIn("memory", res["limits_hit"], what)
        if '"held_mb"' in res["stdout"]["text"]:
            # a cgroup's OOM killer ends a hog and the program reports the rest
            held = json.loads(res["stdout"]["text"].splitlines()[-1])["held_mb"]
            self.assertLessEqual(held, 256, ("the tree held more than --memory 256M to the end",) + what)
        else:
            self.assertEqual((res["status"], res["limit"]), ("limit", "memory"), what)

    def test_a_tree_wider_than_a_page_is_seen(self):
        # 950 children: the init's children file is ~5.7 KiB; one 4 KiB
        # read saw the sleepers only (on main: exited, 4 x 200 MB held)
        self.assert_memory_limit(self.mem("hide", 950, 4, 200))

    def test_children_not_dumpable_are_counted(self):
        # their smaps_rollup is refused under reduced isolation: statm's
        # resident size stands in (on main: exited, 4 x 200 MB held)
        for isolation in ("reduced", "strict"):
            self.assert_memory_limit(self.mem("nodump", 0, 4, 200, isolation=isolation))

    def test_an_honest_fork_pool_is_not_over(self):
        # 60 children sharing 200 MB exit together: the tree's PSS is ~211 MB
        # throughout (on main: limit: memory in 2 of 3 runs, and a peak over
        # 256 MB in the others)
        for _ in range(3):
            res = self.mem("pool", 60, 0, 200, 3)
            what = (res["protections"]["memory"], res["stderr"]["text"][-300:])
            self.assertEqual((res["status"], res["limits_hit"]), ("exited", []), what)
            self.assertIn('"children": 60', res["stdout"]["text"])
            self.assertLessEqual(res["peak_memory_bytes"], 256 << 20, what)

    def test_warm_too(self):
        jobs = [{"id": "hide", "kind": "python", "code": mem_tree_code("hide", 950, 4, 200),
                 "limits": {"memory": "256M", "pids": 1024, "wall_time": "30s"}},
                {"id": "pool", "kind": "python", "code": mem_tree_code("pool", 60, 0, 200, 3),
                 "limits": {"memory": "256M", "pids": 1024, "wall_time": "30s"}}]
        for warm in ([], ["--warm"]):
            out = TreeCpuWarm.batch(self, jobs, *warm)
            self.assertEqual(out["hide"].get("start"), "warm" if warm else "cold", out["hide"].get("start_reason"))
            self.assert_memory_limit(out["hide"])
            pool = out["pool"]
            self.assertEqual((pool["status"], pool["limits_hit"]), ("exited", []), (warm, pool["stderr"]["text"][-300:]))
            self.assertLessEqual(pool["peak_memory_bytes"], 256 << 20, warm)


class OwnPeak(SandboxTest):
    """A small job after a big one in the same batch: the worker that ran
    it read the big job's line (60 MiB of stdin) and holds it."""

    def test_a_small_job_after_a_big_one_reports_its_own_peak(self):
        big = {"id": "big", "kind": "python", "stdin": "x" * (60 << 20),
               "code": "import sys\nd = sys.stdin.read()\nprint(len(d))\n"}
        small = {"id": "small", "kind": "python", "code": "print(1)\n",
                 # under the worker's size: a peak that is the worker's names a false limit
                 "limits": {"memory": "48M"}}
        for warm in ([], ["--warm"]):
            with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
                f.write(json.dumps(big) + "\n" + json.dumps(small) + "\n")
            self.addCleanup(os.unlink, f.name)
            p = self.nsbox("batch", "--quiet", "-j", "1", *warm, f.name, timeout=300)
            out = {json.loads(l)["id"]: json.loads(l) for l in p.stdout.splitlines()}
            self.assertEqual(set(out), {"big", "small"}, p.stderr[-2000:])
            b, s = out["big"], out["small"]
            what = (warm, s["protections"]["memory"], s.get("start"))
            self.assertEqual(b["status"], "exited", b["stderr"]["text"][-500:])
            self.assertGreaterEqual(b["peak_memory_bytes"], 60 << 20, what)
            self.assertEqual((s["status"], s["limits_hit"], s["stdout"]["text"]), ("exited", [], "1\n"), what)
            # python itself is 8-10 MiB (more warm: the zygote's interpreter);
            # under the rlimit backend, cold, the largest a look saw of it
            # (looks 2 to 18 ms after its start, then every 20 ms: docs/cgroups.md)
            self.assertIsNotNone(s["peak_memory_bytes"], what)
            self.assertLess(s["peak_memory_bytes"], 32 << 20, what)
            self.assertGreater(s["peak_memory_bytes"], 0, what)


if __name__ == "__main__":
    unittest.main()
