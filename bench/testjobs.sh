#!/usr/bin/env bash
# Test jobs (#31) against python jobs, warm, in one run (asserts nothing about
# speed; aborts, without figures, when a job did not pass or did not start warm):
#   (a) python: N jobs {"kind": "python", code, test_code} through
#       `nsbox batch -j J --warm` (code + test_code in one process);
#   (b) test: the same N (code, test_code) pairs as {"kind": "test"} jobs
#       (the split harness: the code's process and the test process,
#       every call a message) through `nsbox batch -j J --warm`.
# The pair is an MBPP-sized problem: a function and three asserts. Each is
# timed once (wall clock of the whole batch) per round, ROUNDS rounds, the
# order alternated; prints jobs/s per round, the medians and (b)/(a).
#   bench/testjobs.sh [N=1000] [J=2] [ROUNDS=1]     (NSBOX=path/to/nsbox)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
j=${2:-2}
rounds=${3:-1}
nsbox=$(realpath "${NSBOX:-build/nsbox}")
out=$(mktemp -d /var/tmp/nsbox-testjobs-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT

/usr/bin/python3 - "$n" "$out" <<'PY'
import json, sys
n, out = int(sys.argv[1]), sys.argv[2]
code = "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n"
tests = ("assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))\n"
         "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))\n"
         "assert set(similar_elements((11, 12, 14, 13),(17, 15, 14, 13))) == set((13, 14))\n")
for kind in ("python", "test"):
    with open("%s/%s.jsonl" % (out, kind), "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": i, "kind": kind, "code": code, "test_code": tests, "timeout": 20}) + "\n")
PY

run() {   # kind round -> prints jobs/s; checks every line
  local kind=$1 t0 t1
  t0=$(date +%s.%N)
  "$nsbox" batch --quiet --warm -j "$j" "$out/$kind.jsonl" > "$out/$kind.out"
  t1=$(date +%s.%N)
  /usr/bin/python3 - "$out/$kind.out" "$n" "$kind" "$t0" "$t1" <<'PY'
import json, sys
path, n, kind, t0, t1 = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
lines = [json.loads(l) for l in open(path)]
bad = [d for d in lines if d.get("outcome") != "pass" or d.get("start") != "warm"]
if len(lines) != n or bad:
    sys.exit("testjobs.sh: %s: %d lines, %d not a warm pass (first: %s)" % (kind, len(lines), len(bad),
             json.dumps(bad[0])[:400] if bad else "-"))
if kind == "test" and any(d["counts"] != {"passed": 3, "failed": 0, "total": 3} for d in lines):
    sys.exit("testjobs.sh: test: counts differ from 3/3")
print("%.1f" % (n / (t1 - t0)))
PY
}

py=() tj=()
for ((r = 0; r < rounds; r++)); do
  if ((r % 2)); then b=$(run test); a=$(run python); else a=$(run python); b=$(run test); fi
  py+=("$a") tj+=("$b")
  echo "round $((r + 1)): python $a jobs/s, test $b jobs/s"
done
/usr/bin/python3 - "${py[*]}" "${tj[*]}" <<'PY'
import statistics, sys
a = statistics.median(map(float, sys.argv[1].split()))
b = statistics.median(map(float, sys.argv[2].split()))
print("median: python %.1f jobs/s, test %.1f jobs/s, test/python %.2f" % (a, b, b / a))
PY
