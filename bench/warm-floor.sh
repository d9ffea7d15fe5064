#!/usr/bin/env bash
# The floor under warm starts (#28): what the kernel alone charges a job that
# gets fresh namespaces and a fork of a ready interpreter, beside nsbox's warm
# jobs and bare python, in one run (asserts nothing about speed):
#   bare        N files `print(sum(range(10**5)))` through `xargs -P J`
#               /usr/bin/python3 -I -B (as bench/warm.sh (a));
#   floor-fork  bench/warm_floor.c, J copies, N/J jobs each: an embedded
#               CPython started once, each job a plain fork() of it (no
#               isolation at all: a pre-forking runner's floor);
#   floor-ns    the same, each job in new user, mount, pid, ipc, uts and
#               cgroup namespaces (its PID 1 maps ids, forks the job, waits),
#               what every warm nsbox job gets from the kernel, and nothing
#               else (no mounts, limits, filters, pipes, supervision,
#               finalisation);
#   floor-nsx   as floor-ns, but the job's PID 1 owns no copy of the
#               interpreter: it runs in the interpreter's memory
#               (CLONE_VM|CLONE_VFORK) until it has forked the job, then
#               execs bench/floor_reaper.c (no C library, 2 pages) to reap:
#               #28's "one address space per job", measured (x86-64 only);
#   nsbox-warm  the same N jobs through `nsbox batch -j J --warm` (the batch's
#               start and its zygote's included, as in bench/warm.sh (c)).
# Hyperfine runs each once per round, ROUNDS rounds, the order rotated; then
# `perf stat -e task-clock` over each command's whole tree, once per round:
# the medians, the ratios to bare, and CPU per job.
# WARM_CODE=numpy: every job is `import numpy; print(numpy.arange(10).sum())`;
# the floor's interpreter imports numpy once before its jobs, and nsbox's
# zygote preloads it (--package .../numpy --preload numpy), as bench/warm.sh.
#   bench/warm-floor.sh [N=300] [J=2] [ROUNDS=3]   (NSBOX=path; needs python3-dev (scripts/deps), hyperfine)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-300}
j=${2:-2}
rounds=${3:-3}
nsbox=$(realpath "${NSBOX:-build/nsbox}")
py=$(realpath /usr/bin/python3)
pyconf="$(dirname "$py")/python3-config"; [ -x "${py}-config" ] && pyconf="${py}-config"
out=$(mktemp -d /var/tmp/nsbox-warm-floor.XXXXXX)
trap 'rm -rf "$out"' EXIT
case ${WARM_CODE:=sum} in
  sum) code='print(sum(range(10**5)))'; preload=; opts= ;;
  numpy) code='import numpy; print(numpy.arange(10).sum())'; preload=numpy
         opts="--package /usr/lib/python3/dist-packages/numpy --preload numpy" ;;
  *) echo "warm-floor.sh: WARM_CODE is sum or numpy, not $WARM_CODE" >&2; exit 2 ;;
esac

if [ ! -x "$pyconf" ]; then
  echo "warm-floor.sh: $pyconf is missing: apt-get install python3-dev (the floor embeds CPython)" >&2
  exit 2
fi
# shellcheck disable=SC2046  # the flags are words
cc -O2 $("$pyconf" --includes) -o "$out/warm_floor" bench/warm_floor.c $("$pyconf" --embed --ldflags)
names=(bare floor-fork floor-ns floor-nsx nsbox-warm)
if [ "$(uname -m)" = x86_64 ]; then
  cc -O2 -static -nostdlib -fno-stack-protector -o "$out/floor_reaper" bench/floor_reaper.c
else
  names=(bare floor-fork floor-ns nsbox-warm)   # floor_reaper.c's system calls are x86-64's
fi
mkdir "$out/bare"
/usr/bin/python3 - "$out" "$n" "$code" <<'PY'
import json, sys
out, n, code = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(out + "/jobs.jsonl", "w") as f:
    for i in range(n):
        open("%s/bare/%d.py" % (out, i), "w").write(code + "\n")
        f.write(json.dumps({"id": str(i), "kind": "python", "code": code}) + "\n")
PY
per=$(( n / j ))
floor() {  # J copies of warm_floor, N/J jobs each
  local cmd="" k
  for ((k = 0; k < j; k++)); do
    cmd+="WARM_FLOOR_PRELOAD=$preload WARM_FLOOR_REAPER=$out/floor_reaper $out/warm_floor $per $1 '$code' & "
  done
  echo "{ $cmd wait; }"
}
declare -A cmds=(
  [bare]="find $out/bare -name '*.py' -print0 | xargs -0 -n1 -P$j $py -I -B > /dev/null"
  [floor-fork]="$(floor fork) 2>/dev/null >/dev/null"
  [floor-ns]="$(floor ns) 2>/dev/null >/dev/null"
  [floor-nsx]="$(floor nsx) 2>/dev/null >/dev/null"
  [nsbox-warm]="$nsbox batch -j $j --warm $opts $out/jobs.jsonl > $out/warm.out 2>/dev/null"
)
echo "== warm-floor.sh: $n jobs ($WARM_CODE), -j $j, $rounds round(s); $nsbox; $py; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 0; r < rounds; r++)); do
  args=()
  for ((k = 0; k < ${#names[@]}; k++)); do
    name=${names[$(( (k + r) % ${#names[@]} ))]}
    args+=(-n "$name" "${cmds[$name]}")
  done
  hyperfine --runs 1 --style none --export-json "$out/round$r.json" "${args[@]}" >/dev/null
  if [ "$(grep -c '"start":"warm"' "$out/warm.out")" != "$n" ]; then
    echo "warm-floor.sh: round $((r + 1)): not every nsbox job started warm and passed; first line:" >&2
    head -c 600 "$out/warm.out" >&2
    exit 1
  fi
  if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
    for name in "${names[@]}"; do
      perf stat -x, -e task-clock -o "$out/$name.$r.perf" -- sh -c "${cmds[$name]}"
    done
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$out" "$n" "$rounds" "${names[@]}" <<'PY'
import glob, json, statistics, sys
out, n, rounds, names = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
walls = {name: [] for name in names}
for r in range(rounds):
    res = {x["command"]: x["mean"] for x in json.load(open("%s/round%d.json" % (out, r)))["results"]}
    print("  round %d: " % (r + 1) + "  ".join("%s %.3f s (%.2fx)" % (k, res[k], res[k] / res["bare"]) for k in names))
    for k in names:
        walls[k].append(res[k])
med = {k: statistics.median(v) for k, v in walls.items()}
for k in names:
    cpu = []
    for f in glob.glob("%s/%s.*.perf" % (out, k)):
        for line in open(f):
            p = line.split(",")
            if len(p) > 2 and p[2] == "task-clock":
                cpu.append(float(p[0]) / n)
    print("  %-10s median %.3f s (%.2f ms/job), %.2fx bare%s" % (
        k, med[k], med[k] * 1e3 / n, med[k] / med["bare"],
        ", CPU %.2f ms/job (perf stat, median of %d)" % (statistics.median(cpu), len(cpu)) if cpu else ""))
PY
