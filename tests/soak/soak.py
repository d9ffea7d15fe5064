#!/usr/bin/python3
"""Soak: many consecutive sandboxes, normal and hostile mixed, some nsbox
processes SIGKILLed mid-run, a few at a time; then the host must hold nothing
of them (process, cgroup, mount, temporary file), and a long-lived nsbox
(`nsbox judge` over many cases, one sbx_run each) must not grow its
file-descriptor count.

usage: soak.py [--runs N] [--parallel P] [--kill-every K] [--cases C] [--seed S]
               [--nsbox PATH] [--fixtures DIR]

Exit 0 and a one-line JSON summary on stdout when every run ended as
expected and nothing leaked; exit 1 with the problems listed otherwise.
CI runs it with --runs 200 (meson test `soak`); docs/testing.md gives the
full-size figures (--runs 2000).
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import hoststate  # noqa: E402

KILL_DELAY_S = (0.0, 0.25)


def job_kinds(fixtures):
    """name -> (weight, nsbox args builder(marker, ws), accepted outcomes).
    An outcome is (status, limit or None); a marker in every command line
    lets the leak check find any process of the run."""
    py = os.path.join(fixtures, "py")
    mk = "\n# %s\n"   # the marker as a comment: in the program, harmless
    return {
        "sum": (6, lambda m, ws: ["python", "-c", "print(sum(range(1000)))" + mk % m], {("exited", None)}),
        "workspace": (3, lambda m, ws: ["python", "--workspace", ws, "-c",
                                        "open('out.txt', 'w').write('x' * 1000)" + mk % m], {("exited", None)}),
        "run_echo": (2, lambda m, ws: ["run", "--", "/bin/echo", m], {("exited", None)}),
        "secrets": (2, lambda m, ws: ["python", os.path.join(py, "secrets.py"), m], {("exited", None)}),
        "forkbomb": (2, lambda m, ws: ["python", "--pids", "12", os.path.join(py, "forkbomb.py"), m],
                     {("exited", None)}),
        "daemon": (2, lambda m, ws: ["python", os.path.join(py, "daemon.py"), m], {("exited", None)}),
        "flood": (2, lambda m, ws: ["python", "--output-limit", "16K", os.path.join(py, "flood.py"), m],
                  {("limit", "output")}),
        "spin": (2, lambda m, ws: ["python", "--wall-time", "300ms", "--cpu-time", "10s",
                                   os.path.join(py, "spin.py"), "1", m], {("limit", "wall_time")}),
        "memory": (1, lambda m, ws: ["python", "--memory", "64M", "--wall-time", "10s",
                                     os.path.join(py, "memory.py"), m], {("limit", "memory"), ("exited", None)}),
        "outlive": (2, lambda m, ws: ["python", "--wall-time", "400ms", "-c",
                                      "import os, time\n"
                                      "if os.fork() == 0:\n os.setsid(); time.sleep(3600)\n"
                                      "time.sleep(3600)" + mk % m], {("limit", "wall_time")}),
    }


def run_one(i, kind, builder, accepted, nsbox, kill, rng_delay, workdir):
    marker = "nsbox-soak-%d-%s" % (i, uuid.uuid4().hex[:12])
    ws = os.path.join(workdir, "ws-%d" % i)
    os.mkdir(ws)
    os.chmod(ws, 0o777)
    argv = [nsbox] + builder(marker, ws)
    argv.insert(2, "--json")
    t0 = time.monotonic()
    proc = hoststate.start(argv)
    problem = None
    if kill:
        time.sleep(rng_delay)
        hoststate.kill_and_reap(proc)
    else:
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            hoststate.kill_and_reap(proc)
            out, err = b"", b"timed out"
        try:
            res = json.loads(out)
            got = (res["status"], res["limit"])
            if got not in accepted:
                problem = "run %d (%s): %r not in %r: %s" % (i, kind, got, sorted(accepted, key=str),
                                                            (res.get("error") or res["stderr"]["text"][-300:]))
        except (ValueError, KeyError):
            problem = "run %d (%s): no result (exit %s): %r" % (i, kind, proc.returncode, err[-300:])
    shutil.rmtree(ws, ignore_errors=True)
    return {"pid": proc.pid, "marker": marker, "kind": "killed" if kill else kind, "problem": problem,
            "seconds": time.monotonic() - t0}


def fd_growth(nsbox, cases):
    """Runs `nsbox judge` over @cases cases and samples its open fds. Between
    cases the count drops to its resting value; a leak raises that floor."""
    d = tempfile.mkdtemp(prefix="nsbox-soak-judge.", dir="/var/tmp")
    try:
        os.chmod(d, 0o755)
        spec = {"program": {"source": "import sys\nprint(int(sys.argv[1]) * 2)\n"},
                "limits": {"wall_time": "5s"},
                "cases": [{"name": "c%d" % k, "args": [str(k)], "expect": {"stdout": {"equals": "%d\n" % (2 * k)}}}
                          for k in range(cases)]}
        path = os.path.join(d, "spec.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        os.chmod(path, 0o644)
        # the verdict goes to a file: a pipe nobody reads while we sample
        # would fill and stop the judge
        out_path = os.path.join(d, "verdict.json")
        with open(out_path, "wb") as out_f:
            proc = subprocess.Popen([nsbox, "judge", "--json", path], stdout=out_f, stderr=subprocess.PIPE)
        samples = []
        while proc.poll() is None:
            try:
                samples.append((time.monotonic(), hoststate.fd_count(proc.pid)))
            except OSError:
                break
            time.sleep(0.001)
        _, err = proc.communicate()
        with open(out_path, "rb") as f:
            out = f.read()
        verdict = json.loads(out)["verdict"] if out.startswith(b"{") else "no verdict: %r" % err[-300:]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if len(samples) < 10:
        return {"verdict": verdict, "samples": len(samples), "fds_first": None, "fds_last": None}
    # The resting count is the floor between two cases; over half the cases
    # the sampler is all but sure to see it. A leak of one fd a case raises
    # the second half's floor by about cases/2.
    half = len(samples) // 2
    first = min(n for _, n in samples[len(samples) // 20:half])   # after start-up
    last = min(n for _, n in samples[half:])
    return {"verdict": verdict, "samples": len(samples), "fds_first": first, "fds_last": last,
            "fds_max": max(n for _, n in samples)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--kill-every", type=int, default=10, help="SIGKILL nsbox in one run out of K")
    ap.add_argument("--cases", type=int, default=0, help="judge cases for the fd check (default runs/5, >= 200)")
    ap.add_argument("--seed", type=int, default=2000)
    ap.add_argument("--nsbox", default=os.environ.get("NSBOX", os.path.join(HERE, "..", "..", "build", "nsbox")))
    ap.add_argument("--fixtures", default=os.environ.get("FIXTURES", os.path.join(HERE, "..", "..", "fixtures")))
    a = ap.parse_args()

    rng = random.Random(a.seed)
    kinds = job_kinds(a.fixtures)
    names = [n for n, (w, _, _) in kinds.items() for _ in range(w)]
    plan = []
    for i in range(a.runs):
        kill = a.kill_every > 0 and rng.randrange(a.kill_every) == 0
        plan.append((i, rng.choice(names), kill, rng.uniform(*KILL_DELAY_S)))

    snap = hoststate.Snapshot()
    stale_before = set(hoststate.stale_run_cgroups())
    workdir = tempfile.mkdtemp(prefix="nsbox-soak.", dir="/var/tmp")
    os.chmod(workdir, 0o755)
    t0 = time.monotonic()
    lock = threading.Lock()
    done = []

    def go(p):
        i, kind, kill, delay = p
        _, builder, accepted = kinds[kind]
        r = run_one(i, kind, builder, accepted, a.nsbox, kill, delay, workdir)
        with lock:
            done.append(r)

    try:
        with ThreadPoolExecutor(max_workers=a.parallel) as pool:
            list(pool.map(go, plan))
    finally:
        elapsed = time.monotonic() - t0
        shutil.rmtree(workdir, ignore_errors=True)
    # cgroups of the killed supervisors are reaped by the next nsbox run
    # (cg_reap_stale): one more ordinary run, as a user's next run would be,
    # once the last killed sandboxes have finished dying (hoststate)
    hoststate.wait_run_cgroups_empty([r["pid"] for r in done])
    reaper = subprocess.run([a.nsbox, "python", "-c", "pass"], capture_output=True)
    problems = [r["problem"] for r in done if r["problem"]]
    if reaper.returncode != 0:
        problems.append("the reaping run failed: %r" % reaper.stderr[-300:])
    leaks = snap.leaks([r["pid"] for r in done] + [], [r["marker"] for r in done])
    stale_after = set(hoststate.stale_run_cgroups()) - stale_before
    leaks += ["stale cgroup: " + c for c in sorted(stale_after) if "cgroup left: " + c not in leaks]
    hoststate.kill_marked([r["marker"] for r in done])   # never leave a survivor behind

    # The resting count shows only in the short gaps between cases, which
    # the sampler must hit in each half: 60 cases once gave a second half
    # whose floor was 5, the whole run never leaking (4 -> 4 over 300 cases).
    cases = a.cases or max(200, a.runs // 5)
    fds = fd_growth(a.nsbox, cases)
    if fds["verdict"] != "pass":
        problems.append("judge over %d cases: %s" % (cases, fds["verdict"]))
    if fds["fds_first"] is None:
        problems.append("too few fd samples (%d) to judge growth" % fds["samples"])
    elif fds["fds_last"] > fds["fds_first"]:
        problems.append("nsbox's resting fd count grew: %d -> %d" % (fds["fds_first"], fds["fds_last"]))

    kinds_count = {}
    for r in done:
        kinds_count[r["kind"]] = kinds_count.get(r["kind"], 0) + 1
    summary = {"runs": len(done), "parallel": a.parallel, "seconds": round(elapsed, 1),
               "runs_per_second": round(len(done) / elapsed, 1) if elapsed else None,
               "killed": kinds_count.get("killed", 0), "kinds": kinds_count, "leaks": leaks,
               "unexpected": len(problems), "fd": fds}
    print(json.dumps(summary, sort_keys=True))
    for p in problems + leaks:
        print("PROBLEM: " + p, file=sys.stderr)
    return 1 if problems or leaks else 0


if __name__ == "__main__":
    sys.exit(main())
