#!/usr/bin/env bash
# nsbox batch throughput and memory, in one run (asserts nothing):
#   1. N jobs of `print(sum(range(10**5)))` through `nsbox batch -j J`, against
#      the same N run by bare python3 through `xargs -P J`, timed by hyperfine
#      (--runs R, default 1: a run of 1000 jobs is long); reports the ratio
#      (target: nsbox at most 1.25x bare);
#      for context, the same N as separate `nsbox python -c` runs through
#      `xargs -P J` (what batch saves over one process per run), and through
#      bench/ns_floor (python3 in seven fresh namespaces and nothing else: the
#      kernel's share, the floor under any tool that gives each job fresh
#      namespaces);
#   2. nsbox's own memory per concurrent job: while a batch runs, every 50 ms
#      sum the PSS (proportional set size: pages shared by the forked workers
#      counted once in all) of every process running the nsbox binary (the
#      batch parent, its workers, the sandbox inits), divide by J; report the
#      largest sample (target: under 4 MiB) and the matching RSS sum.
#   bench/batch.sh [N] [J] [R]     (NSBOX=path/to/nsbox; root sees all PSS)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
j=${2:-2}
runs=${3:-1}
nsbox=$(realpath "${NSBOX:-build/nsbox}")
py=/usr/bin/python3     # not the pyenv shim on PATH
code='print(sum(range(10**5)))'
out=$(mktemp -d /var/tmp/nsbox-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

$py - "$n" "$code" "$out" <<'PY'
import json, sys
n, code, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(out + "/jobs.jsonl", "w") as f:
    for i in range(n):
        f.write(json.dumps({"id": i, "kind": "python", "code": code}) + "\n")
with open(out + "/bare.nul", "w") as f:
    f.write((code + "\0") * n)
PY

cc -O2 -o "$out/ns_floor" bench/ns_floor.c

echo "== $n jobs, -j $j, $runs run(s) each; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -r "$runs" --export-json "$out/time.json" \
  -n bare "xargs -0 -n1 -P$j $py -I -B -c < $out/bare.nul > /dev/null" \
  -n nsbox "$nsbox batch -j $j $out/jobs.jsonl > $out/results.jsonl" \
  -n nsbox-run-each "xargs -0 -n1 -P$j $nsbox python -c < $out/bare.nul > /dev/null" \
  -n ns-floor "xargs -0 -n1 -P$j $out/ns_floor $py -I -B -c < $out/bare.nul > /dev/null" >/dev/null
$py - "$out" "$n" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
res = {r["command"]: r for r in json.load(open(out + "/time.json"))["results"]}
bare, nsb, each = res["bare"]["mean"], res["nsbox"]["mean"], res["nsbox-run-each"]["mean"]
floor = res["ns-floor"]["mean"]
lines = [json.loads(l) for l in open(out + "/results.jsonl")]
passed = sum(1 for d in lines if d.get("outcome") == "pass")
print("time: bare %.2f s (%.1f ms/job)  nsbox %.2f s (%.1f ms/job)  ratio %.2fx (target <= 1.25x)"
      % (bare, bare * 1e3 / n, nsb, nsb * 1e3 / n, nsb / bare))
print("      one nsbox python per job via xargs: %.2f s (%.2fx bare; batch is %.2fx of it)" % (each, each / bare, nsb / each))
print("      floor, fresh namespaces and nothing else (bench/ns_floor): %.2f s (%.2fx bare; batch is %.2fx of it)"
      % (floor, floor / bare, nsb / floor))
print("      nsbox lines %d, pass %d; sandbox wall mean %.1f ms, cpu mean %.1f ms"
      % (len(lines), passed, sum(d["wall_ms"] for d in lines) / max(len(lines), 1),
         sum(d["cpu_ms"] for d in lines) / max(len(lines), 1)))
PY

# Memory: sample a second batch while it runs.
"$nsbox" batch -j "$j" "$out/jobs.jsonl" > /dev/null &
batch_pid=$!
$py - "$nsbox" "$batch_pid" "$j" <<'PY'
import os, sys, time
exe, parent, j = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def kib(pid, field):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0

best = None
while os.path.exists("/proc/%d" % parent):
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.readlink("/proc/%s/exe" % p) == exe:
                    pids.append(int(p))
            except OSError:
                pass
    workers = 0
    for p in pids:
        try:
            with open("/proc/%d/stat" % p) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == parent:
                    workers += 1
        except (OSError, IndexError, ValueError):
            pass
    pss, rss = sum(kib(p, "Pss") for p in pids), sum(kib(p, "Rss") for p in pids)
    if workers == j and (best is None or pss > best[0]):
        best = (pss, rss, len(pids), workers)
    time.sleep(0.05)
if best:
    pss, rss, nproc, workers = best
    print("memory: largest sample with %d workers busy: %d nsbox processes, PSS %.2f MiB "
          "(%.2f MiB per concurrent job; target < 4 MiB), RSS sum %.2f MiB"
          % (workers, nproc, pss / 1024, pss / 1024 / j, rss / 1024))
else:
    print("memory: no sample caught %d busy workers" % j)
PY
wait "$batch_pid"
