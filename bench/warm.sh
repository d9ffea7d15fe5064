#!/usr/bin/env bash
# Warm starts (#14) against bare python and a cold batch, in one run (asserts
# nothing about speed; aborts, without ratios, when any job did not pass or did
# not start the way its column says):
#   (a) bare: N files, each `print(sum(range(10**5)))`, run by the real
#       /usr/bin/python3 binary with -I -B through `xargs -P J`;
#   (b) cold: the same N jobs (JSON Lines, "code") through `nsbox batch -j J`;
#   (c) warm: the same jobs through `nsbox batch -j J --warm`;
#   timed by hyperfine, one run of each command per round, ROUNDS rounds, the
#   order rotated every round (load drift on a shared machine hits all three
#   alike); reports each round, the medians and the ratios (b)/(a), (c)/(a),
#   (c)/(b) (target (c)/(a) <= 0.25, #28);
#   and again at -j = the CPUs online (nproc), when that is not J (#28);
#   (d) what a job's start and end add to its own code's run time: N jobs
#       whose code stamps time.perf_counter() at its first line and prints the
#       elapsed time at its last; median and p99 over the jobs of the result's
#       wall_ms minus that (target: median <= 2 ms warm; cold shown for
#       comparison);
#   (e) memory per worker slot: while a batch of the N jobs runs, every 20 ms
#       sum the PSS of the batch process's descendants that are nsbox's
#       (processes running the nsbox binary: the batch, its workers, sandbox
#       inits; warm also the zygote, named nsbox-zygote or else known as a
#       python3 process whose parent runs nsbox, and the job inits, its
#       children), divide by J (target <= 16 MiB warm; cold shown for
#       comparison); the jobs' own python processes are shown apart, not
#       counted;
#   (g) the floor: bench/warm-floor.sh with the same N, J, ROUNDS, WARM_CODE (a fork of
#       a ready CPython per job, with and without fresh namespaces, and
#       nothing else, beside bare and nsbox's warm batch);
#   (f) CPU per job (#28): `perf stat -e task-clock,page-faults` over the
#       whole process tree of (a), (b) and (c) (perf counts every descendant,
#       the zygote's children too), ROUNDS runs each, rotated; median CPU ms
#       and page faults per job (skipped when perf is missing or refused).
# Every result line of (b), (c), (d), (e) must be status "exited", exit 0,
# outcome "pass", the right stdout, and "start" "cold"/"warm" as its column
# says (a cold line without "start" is accepted only from an nsbox without
# --warm). Without --warm (the core of #14 not built) it says so, measures
# (a), (b) and the cold (d), (e) only, and exits 3.
#   bench/warm.sh [N=1000] [J=2] [ROUNDS=3]     (NSBOX=path/to/nsbox; root sees all PSS)
# WARM_CODE=numpy: every job is `import numpy; print(numpy.arange(10).sum())`
# instead (#28, package-aware zygotes): bare imports Debian's numpy as is, (b)
# and (c) get `--package /usr/lib/python3/dist-packages/numpy --preload numpy`
# (the cold jobs import it themselves: cold runs do not preload), so (c) is a
# zygote that imported numpy once; target (c)/(a) <= 0.1x.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
j=${2:-2}
rounds=${3:-3}
nsbox=$(realpath "${NSBOX:-build/nsbox}")
py=$(realpath /usr/bin/python3)   # the binary itself: not the pyenv shim on PATH, nor a symlink
out=$(mktemp -d /var/tmp/nsbox-warm-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

help=$("$nsbox" batch --help)   # whole, before grep -q stops reading (pipefail would see a SIGPIPE)
case ${WARM_CODE:=sum} in
  sum) opts= ;;
  numpy)
    grep -qe '--preload\b' <<<"$help" || { echo "warm.sh: WARM_CODE=numpy needs an nsbox with --preload" >&2; exit 2; }
    opts="--package /usr/lib/python3/dist-packages/numpy --preload numpy" ;;
  *) echo "warm.sh: WARM_CODE is sum (the default) or numpy, not '$WARM_CODE'" >&2; exit 2 ;;
esac
export WARM_CODE
if grep -qe '--warm\b' <<<"$help"; then
  modes="cold warm"
else
  modes=cold
  echo "warm.sh: $nsbox batch has no --warm (the core of #14 is not in this build):" \
       "measuring (a) bare, (b) cold and the cold (d), (e) only; no warm figures" >&2
fi

cat > "$out/wb.py" <<'PY'
import json, os, statistics, sys, time

NUMPY = os.environ.get("WARM_CODE") == "numpy"
CODE = "import numpy; print(numpy.arange(10).sum())" if NUMPY else "print(sum(range(10**5)))"
WANT = "45\n" if NUMPY else "4999950000\n"
TARGET = "0.1" if NUMPY else "0.25"
# (d): the job's own run time, from its first line to its last.
TIMED = ("from time import perf_counter as _pc; _t0 = _pc()\n" + CODE + "\n"
         "print('own_ms %.6f' % ((_pc() - _t0) * 1e3))\n")

def die(msg):
    sys.exit("warm.sh: " + msg)

def make(out, n):
    os.mkdir(out + "/bare")
    with open(out + "/bare.list", "w") as lst:
        for i in range(n):
            path = "%s/bare/%06d.py" % (out, i)
            with open(path, "w") as f:
                f.write(CODE + "\n")
            lst.write(path + "\n")
    for name, code in (("jobs", CODE), ("timed", TIMED)):
        with open("%s/%s.jsonl" % (out, name), "w") as f:
            for i in range(n):
                f.write(json.dumps({"id": i, "kind": "python", "code": code}) + "\n")

def verify(path, n, mode, timed, start_optional):
    """Every line passed with the right stdout and started as `mode`;
    returns the lines."""
    lines = [json.loads(l) for l in open(path)]
    if len(lines) != n or sorted(d.get("id") for d in lines) != list(range(n)):
        die("%s: %d result lines, not one for each of the %d jobs; no figures from these results"
            % (path, len(lines), n))
    for d in lines:
        text = d.get("stdout", {}).get("text", "")
        ok = (d.get("status") == "exited" and d.get("exit_code") == 0
              and d.get("outcome") == "pass"
              and (text.startswith(WANT) if timed else text == WANT))
        if not ok:
            die("%s: job %s did not pass: status %s, exit %s, outcome %s, error %s, stdout %r, stderr %r"
                % (path, d.get("id"), d.get("status"), d.get("exit_code"), d.get("outcome"),
                   d.get("error"), text[:200], d.get("stderr", {}).get("text", "")[:300])
                + "; no figures from these results")
        start = d.get("start")
        if start != mode and not (start is None and start_optional):
            die('%s: job %s says "start": %s (reason %s), not "%s": a %s column of jobs that '
                "did not start %s; no figures from these results"
                % (path, d.get("id"), json.dumps(start), json.dumps(d.get("start_reason")),
                   mode, mode, mode))
    return lines

def check(out, n, mode, start_optional, *paths):
    for p in paths:
        verify(p, n, mode, p.endswith(".timed.jsonl"), start_optional == 1)

def bare(out, n, *paths):
    for p in paths:
        got = open(p).read()
        if got != WANT * n:
            die("%s: bare python printed %d bytes, not %d lines of %r; no figures reported"
                % (p, len(got), n, WANT))

def report(out, n, j):
    # hyperfine: one run per command per round; the files are named <round>.json
    per = {}
    for name in sorted(os.listdir(out + "/time")):
        rnd = int(name.split(".")[0])
        for r in json.load(open(out + "/time/" + name))["results"]:
            per.setdefault(r["command"], {})[rnd] = r
    cols = [c for c in ("bare", "cold", "warm") if c in per]
    print("(a)-(c): %d jobs, -j %d, %d round(s), one run of each per round (seconds)"
          % (n, j, len(per["bare"])))
    for rnd in sorted(per["bare"]):   # a round's ratios: its commands ran under the same load
        t = {c: per[c][rnd]["times"][0] for c in cols}
        print("  round %d: " % rnd + "  ".join("%s %6.2f" % (c, t[c]) for c in cols)
              + "   " + "  ".join("%s/bare %.2fx" % (c, t[c] / t["bare"]) for c in cols[1:]))
    med = {c: statistics.median(r["times"][0] for r in per[c].values()) for c in cols}
    cpu = {c: statistics.mean(r["user"] + r["system"] for r in per[c].values()) for c in cols}
    for c in cols:
        print("  %-4s median %6.2f s (%5.2f ms/job), mean CPU %6.2f s" % (c, med[c], med[c] * 1e3 / n, cpu[c]))
    if "warm" in med:
        # The zygote's children (the job inits) are reaped by the kernel
        # (SA_NOCLDWAIT), so the jobs' CPU never reaches the process hyperfine
        # waits for; the results' cpu_ms (the job's cgroup) has it.
        jobs = statistics.mean(sum(d["cpu_ms"] for d in map(json.loads, open("%s/warm.%d.jsonl" % (out, rnd))))
                               for rnd in per["warm"]) / 1e3
        print("       warm's jobs: + %.2f s (sum of cpu_ms) = %.2f s" % (jobs, cpu["warm"] + jobs))
    print("  (CPU: user+system of the command and the children it waited for, mean over rounds)")
    print("  (b)/(a) cold/bare %.2fx" % (med["cold"] / med["bare"]))
    if "warm" in med:
        print("  (c)/(a) warm/bare %.2fx   (target <= %sx, #28)" % (med["warm"] / med["bare"], TARGET))
        print("  (c)/(b) warm/cold %.2fx" % (med["warm"] / med["cold"]))

def added(out, n, mode, start_optional):
    lines = verify("%s/%s.timed.jsonl" % (out, mode), n, mode, True, start_optional == 1)
    own = [float(d["stdout"]["text"].split("own_ms ")[1]) for d in lines]
    wall = [d["wall_ms"] - o for d, o in zip(lines, own)]
    slot = [d["batch"]["end_ms"] - d["batch"]["start_ms"] - o for d, o in zip(lines, own)]
    target = "   (target: median <= 2 ms)" if mode == "warm" else ""
    wall.sort()
    print("(d) %s: %d jobs; added ms: wall_ms - own median %.2f, p99 %.2f%s; batch end_ms - start_ms - own"
          " median %.2f; own run time median %.2f ms"
          % (mode, n, statistics.median(wall), wall[min(len(wall) - 1, int(len(wall) * 0.99))], target,
             statistics.median(slot), statistics.median(own)))

def cpu(out, n, *paths):
    # (f): perf stat -x, files named <mode>.<round>.perf
    per = {}
    for p in paths:
        mode = os.path.basename(p).split(".")[0]
        vals = {}
        for line in open(p):
            f = line.strip().split(",")
            if len(f) > 2 and f[0].replace(".", "", 1).isdigit():
                vals[f[2]] = float(f[0])
        if "task-clock" in vals:
            per.setdefault(mode, []).append(vals)
    for mode in ("bare", "cold", "warm"):
        if mode in per:
            print("(f) %-4s CPU per job %.2f ms, page faults per job %d (median of %d run(s), whole tree, perf stat)"
                  % (mode, statistics.median(v["task-clock"] for v in per[mode]) / n,
                     statistics.median(v.get("page-faults", 0) for v in per[mode]) / n, len(per[mode])))

def kib(pid):
    """Pss of pid in KiB; 0 when it is gone; None when it may not be read."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except PermissionError:
        return None
    except OSError:
        pass
    return 0

def pss(out, mode, batch, j, exe_nsbox, exe_py):
    """Sample until the batch process is gone; report PSS per slot."""
    samples, zygotes, unreadable = [], set(), 0
    while os.path.exists("/proc/%d" % batch):
        ppid, exe, comm = {}, {}, {}
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    head, tail = f.read().rsplit(")", 1)
                ppid[int(p)] = int(tail.split()[1])
                comm[int(p)] = head.split("(", 1)[1]
                exe[int(p)] = os.readlink("/proc/%s/exe" % p)
            except (OSError, IndexError, ValueError):
                pass
        kids = {}
        for p, pp in ppid.items():
            kids.setdefault(pp, []).append(p)
        kind, todo = {}, [batch]
        while todo:                      # descendants of the batch, classified
            p = todo.pop()
            up = kind.get(ppid.get(p))
            e = exe.get(p)
            todo.extend(kids.get(p, []))
            if e is None:                # gone, or a zombie: nothing mapped
                continue
            if e == exe_nsbox:
                kind[p] = "nsbox"
            elif comm.get(p) == "nsbox-zygote":   # its name since 19b11f8
                kind[p] = "zygote"
            elif e == exe_py and mode == "warm" and up == "nsbox":
                kind[p] = "zygote"
            elif e == exe_py and up == "zygote":
                kind[p] = "job init"
            elif e == exe_py:
                kind[p] = "job"
            else:
                kind[p] = "other"
        if mode == "warm" and "zygote" not in kind.values():
            time.sleep(0.02)
            continue
        sums, counts = {}, {}
        for p, k in kind.items():
            v = kib(p)
            if v is None:
                unreadable += 1
                continue
            sums[k] = sums.get(k, 0) + v
            counts[k] = counts.get(k, 0) + 1
        zygotes.update(p for p, k in kind.items() if k == "zygote")
        counted = sum(v for k, v in sums.items() if k != "job")
        samples.append((counted, sums, counts))
        time.sleep(0.02)
    if not samples and mode == "warm":
        die("(e): no zygote (a python3 process whose parent runs %s) seen among the warm batch's "
            "descendants: the process tree is not the one this script measures" % exe_nsbox)
    if not samples:
        die("(e): the cold batch ended before a sample")
    top = max(samples, key=lambda s: s[0])
    med = statistics.median(s[0] for s in samples)
    target = "; target <= 16 MiB" if mode == "warm" else ""
    print("(e) %s: PSS per slot (J=%d) median %.2f MiB, largest %.2f MiB%s; %d samples, "
          "%d zygote pid(s) seen, %d reads refused (not root?)"
          % (mode, j, med / 1024 / j, top[0] / 1024 / j, target, len(samples), len(zygotes), unreadable))
    print("    largest sample, counted: " + ", ".join(
        "%s %d procs %.2f MiB" % (k, top[2][k], top[1][k] / 1024)
        for k in ("nsbox", "zygote", "job init", "other") if k in top[1])
        + "; not counted: jobs' own python %d procs %.2f MiB"
        % (top[2].get("job", 0), top[1].get("job", 0) / 1024))

if __name__ == "__main__":   # wb.py FUNCTION ARG...: numbers are ints
    globals()[sys.argv[1]](*(int(a) if a.isdigit() else a for a in sys.argv[2:]))
PY
wb() { $py "$out/wb.py" "$@"; }

wb make "$out" "$n"
warm_flag() { [ "$1" = warm ] && echo --warm || true; }
start_optional=0
[ "$modes" = cold ] && start_optional=1

echo "== warm.sh: $n jobs ($WARM_CODE), -j $j, $rounds round(s); $nsbox${opts:+ $opts}; bare $py; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cmds=(bare)
for m in $modes; do cmds+=("$m"); done
ratios() {   # ratios J: (a)-(c) at -j J
  local jj=$1
  rm -rf "$out/time" "$out"/bare.*.out "$out"/cold.[0-9]*.jsonl "$out"/warm.[0-9]*.jsonl
  mkdir "$out/time"
  for round in $(seq 1 "$rounds"); do
    args=()
    for k in $(seq 0 $(( ${#cmds[@]} - 1 ))); do    # rotate the order each round
      c=${cmds[$(( (k + round - 1) % ${#cmds[@]} ))]}
      case $c in
        bare) args+=(-n bare "xargs -n1 -P$jj $py -I -B < $out/bare.list > $out/bare.$round.out") ;;
        *) args+=(-n "$c" "$nsbox batch --quiet -j $jj $(warm_flag "$c") $opts $out/jobs.jsonl > $out/$c.$round.jsonl") ;;
      esac
    done
    hyperfine -r 1 --export-json "$out/time/$round.json" "${args[@]}" >/dev/null 2>&1 ||
      { echo "warm.sh: a command of round $round failed (run it by hand: ${args[*]:1})" >&2; exit 1; }
  done
  wb bare "$out" "$n" "$out"/bare.*.out
  for m in $modes; do wb check "$out" "$n" "$m" "$start_optional" "$out/$m".[0-9]*.jsonl; done
  wb report "$out" "$n" "$jj"
}
ratios "$j"
cpus=$(nproc)
[ "$cpus" != "$j" ] && ratios "$cpus"

for m in $modes; do
  "$nsbox" batch --quiet -j "$j" $(warm_flag "$m") $opts "$out/timed.jsonl" > "$out/$m.timed.jsonl"
  wb added "$out" "$n" "$m" "$start_optional"
done
echo "    own = the job's code from its first line's perf_counter() to its last line, not counted as"
echo "    added. wall_ms = nsbox's clock from the clone of the sandbox (cold) or from sending the"
echo "    job to the zygote (warm) to the end of the sandbox's init: the fork, or exec and interpreter"
echo "    start-up (cold), namespaces, mounts, limits, filters, reading and compiling main.py, the"
echo "    interpreter's exit and flush, the namespaces' teardown. end_ms - start_ms adds the batch's"
echo "    work around it (the job's cgroup and pipes before, the result line after)."

for m in $modes; do
  "$nsbox" batch --quiet -j "$j" $(warm_flag "$m") $opts "$out/jobs.jsonl" > "$out/$m.pss.jsonl" &
  batch_pid=$!
  wb pss "$out" "$m" "$batch_pid" "$j" "$nsbox" "$py" > "$out/$m.pss.txt"
  wait "$batch_pid"
  wb check "$out" "$n" "$m" "$start_optional" "$out/$m.pss.jsonl"
  cat "$out/$m.pss.txt"
done

if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
  for round in $(seq 1 "$rounds"); do
    for k in $(seq 0 $(( ${#cmds[@]} - 1 ))); do
      c=${cmds[$(( (k + round - 1) % ${#cmds[@]} ))]}
      case $c in
        bare) perf stat -x, -e task-clock,page-faults -o "$out/bare.$round.perf" -- \
                sh -c "xargs -n1 -P$j $py -I -B < $out/bare.list > /dev/null" ;;
        *) perf stat -x, -e task-clock,page-faults -o "$out/$c.$round.perf" -- \
             "$nsbox" batch --quiet -j "$j" $(warm_flag "$c") $opts "$out/jobs.jsonl" > "$out/$c.perf.jsonl"
           wb check "$out" "$n" "$c" "$start_optional" "$out/$c.perf.jsonl" ;;
      esac
    done
  done
  wb cpu "$out" "$n" "$out"/*.perf
else
  echo "(f) skipped: no usable perf (perf stat -e task-clock)"
fi

if [ "$modes" = cold ]; then
  echo "warm.sh: no --warm in $nsbox: (c) and the warm (d), (e) were not measured" >&2
  exit 3
fi

# (g) the floor: what the kernel alone charges a job that gets fresh
# namespaces and a fork of a ready interpreter (bench/warm-floor.sh, the
# same WARM_CODE: with numpy, its interpreter imported numpy once).
echo "(g) the floor (WARM_CODE=$WARM_CODE bench/warm-floor.sh $n $j $rounds):"
WARM_CODE="$WARM_CODE" NSBOX="$nsbox" bench/warm-floor.sh "$n" "$j" "$rounds" 2>&1 | sed 's/^/    /' ||
  echo "    (g) skipped: bench/warm-floor.sh failed (python3-dev missing?)"
