#!/usr/bin/env bash
# bench/cgjoin-vm.sh — what joining a cgroup v2 costs a warm job (#28), in
# tests/vm's VM (Debian 12's 6.1 kernel, pure cgroup v2 with nsdelegate,
# systemd PID 1; TCG unless NSBOX_VM_ACCEL=kvm: figures are an emulated CPU's).
# Runs bench/cgjoin-vm-guest.sh there as root and as a logind user and prints,
# for each: the cgroup-move timer (bench/cgjoin.c, built here unless CGJ
# names a build: 60 writes of "0" to a sibling's cgroup.procs, back to back
# and 20 ms apart),
# the wall_ms of 20 warm jobs (-j 1) back to back and fed 100 ms apart, and
# whether the warm job's init was cloned with CLONE_INTO_CGROUP (strace -f).
#   bench/cgjoin-vm.sh      (CGJ=/path/to/a built bench/cgjoin.c: optional)
#     NSBOX=path/to/nsbox (default build/nsbox; its warm/ beside it)
#     NSBOX_BUILD=build dir (its vm-cache/ holds the downloaded kernel)
#     NSBOX_VM_DEADLINE=seconds for the whole VM (default 1500)
#     NSBOX_VM_KEEP=1: keep the guest's results directory (printed)
#     NSBOX_VM_RESULTS=dir: print a kept results directory, boot nothing
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${NSBOX_BUILD:-build}")
nsbox=$(realpath "${NSBOX:-$build/nsbox}")
if [ -z "${CGJ:-}" ]; then
  CGJ="$build/cgjoin"
  cc -O2 -o "$CGJ" bench/cgjoin.c
fi
cgj=$(realpath "$CGJ")
exec /usr/bin/python3 - "$nsbox" "$build" "$PWD" "$cgj" <<'PY'
import json, os, shutil, statistics, sys

nsbox, build, source, cgj = sys.argv[1:]
sys.path.insert(0, os.path.join(source, "tests", "vm"))
import vmboot  # noqa: E402


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return default


def stats(v):
    if not v:
        return "no samples"
    v = sorted(v)
    p90 = v[min(len(v) - 1, int(0.9 * len(v)))]
    return "n %d median %.3f p90 %.3f mean %.3f max %.3f ms" % (
        len(v), statistics.median(v), p90, statistics.mean(v), v[-1])


params = {"nsbox": nsbox, "guest": "../../bench/cgjoin-vm-guest.sh", "cgj": cgj}
deadline = int(os.environ.get("NSBOX_VM_DEADLINE", "1500"))
console = os.path.join(build, "cgjoin-vm-console.log")
print("== cgjoin-vm.sh: %s in the cgroup v2 VM (%s)" % (nsbox, vmboot.accel()), flush=True)
try:
    if os.environ.get("NSBOX_VM_RESULTS"):     # a kept results dir: print it, boot nothing
        out, seconds = os.environ["NSBOX_VM_RESULTS"], 0
    else:
        out, seconds = vmboot.boot(source, build, params, deadline, console)
except vmboot.VMTimeout as e:
    out, seconds = e.results, deadline
    print("   the VM did not finish: %s" % e)
try:
    print("   qemu ran %.0f s; %s" % (seconds, " ".join(read(os.path.join(out, "sysinfo.txt")).split("\n"))))
    for who in ("root", "user"):
        d = os.path.join(out, who)
        print("== %s: %s; %s" % (who, read(os.path.join(d, "id.txt")).split(" ")[0],
                                 read(os.path.join(d, "cgroup.txt")).strip()))
        for gap in ("0", "20"):
            v = [float(x) for x in read(os.path.join(d, "cgj_%s.txt" % gap)).split()]
            print("   cgj, writes %s ms apart: %s (%s)" % (gap, stats(v), read(
                os.path.join(d, "cgj_%s.log" % gap)).strip()[-200:]))
        for name, what in (("warm_b2b", "20 warm jobs back to back"), ("warm_gap", "20 warm jobs 100 ms apart")):
            walls, starts = [], set()
            for line in read(os.path.join(d, name + ".jsonl")).splitlines():
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                starts.add(r.get("start"))
                if r.get("status") == "exited":
                    walls.append(float(r["wall_ms"]))
            print("   %s: wall_ms %s; starts %s%s" % (what, stats(walls), sorted(map(str, starts)), (
                "; stderr " + read(os.path.join(d, name + ".err"))[-300:]) if len(walls) != 20 else ""))
        try:
            p = json.loads(read(os.path.join(d, "probe_warm.jsonl")).splitlines()[-1])
            print("   probe: start %s status %s memory %s pids %s cgroup_ns %s; its /proc/self/cgroup %r" % (
                p.get("start"), p.get("status"), p["protections"].get("memory"), p["protections"].get("pids"),
                p["protections"].get("cgroup_ns"), p["stdout"]["text"].strip()))
        except (ValueError, KeyError, IndexError):
            print("   probe: %r" % read(os.path.join(d, "probe_warm.jsonl"))[-300:])
        calls = [c for c in read(os.path.join(d, "strace_warm.txt")).splitlines() if "clone3(" in c and "flags=" in c]
        inits = [c for c in calls if "CLONE_NEWNET" not in c]
        print("   warm job init clone3: %s" % ("; ".join(
            "CLONE_INTO_CGROUP" if "CLONE_INTO_CGROUP" in c else "without CLONE_INTO_CGROUP" for c in inits) or
            "none seen"))
    if not os.path.exists(os.path.join(out, "done")):
        print("   the guest did not finish; its log: %s" % read(os.path.join(out, "guest.log"))[-1500:])
finally:
    if not os.environ.get("NSBOX_VM_KEEP") and not os.environ.get("NSBOX_VM_RESULTS"):
        shutil.rmtree(out, ignore_errors=True)
    else:
        print("   kept: %s" % out)
PY
