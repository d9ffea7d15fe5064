#!/usr/bin/env bash
# nsbox report over many result lines (asserts nothing): N lines (default
# 100000) made from real batch output — a small batch of passing, failing,
# limited and erring python jobs and a judge job is run once, then its lines
# are repeated with fresh ids, wall times and memory peaks drawn at random
# (seeded), and one line in 500 is garbage — then `nsbox report` and
# `nsbox report --html` read them under /usr/bin/time -v: elapsed time and
# peak RSS. The report keeps aggregates and a bounded top-k, so its RSS should
# not grow with N (compare N=10000 with N=100000).
#   bench/report.sh [N]     (NSBOX=path/to/nsbox)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
nsbox=${NSBOX:-build/nsbox}
tmp=$(mktemp -d /var/tmp/nsbox-report-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/jobs.jsonl" <<'JOBS'
{"id":"pass","kind":"python","code":"print(sum(range(10**5)))"}
{"id":"fail","kind":"python","code":"import sys\nprint('Traceback (most recent call last):\\n  AssertionError: <expected 3, got 4>', file=sys.stderr)\nsys.exit(1)"}
{"id":"mem","kind":"python","code":"x = bytearray(200 << 20)","limits":{"memory":"48M"}}
{"id":"slow","kind":"python","code":"while True: pass","timeout":0.3}
{"id":"bad","kind":"pythn","code":"x"}
{"id":"judged","kind":"judge","spec":{"program":{"source":"print(input())"},"cases":[{"name":"echo","stdin":"hi\n","expect":{"stdout":{"equals":"hi\n"}}},{"name":"no","stdin":"a\n","expect":{"stdout":{"equals":"b\n"}}}]}}
JOBS
"$nsbox" batch -j 2 "$tmp/jobs.jsonl" > "$tmp/seed.jsonl"
/usr/bin/python3 - "$tmp/seed.jsonl" "$n" > "$tmp/results.jsonl" <<'PY'
import json, random, sys
seed = [json.loads(l) for l in open(sys.argv[1])]
rnd = random.Random(18)
out = sys.stdout
for i in range(int(sys.argv[2])):
    if i % 500 == 499:
        out.write('{"id": "cut-%d", "status": "exi\n' % i)
        continue
    d = dict(rnd.choice(seed))
    d["id"] = "job-%06d" % i
    if "wall_ms" in d:
        d["wall_ms"] = round(rnd.lognormvariate(3.5, 1.0), 3)
        d["peak_memory_bytes"] = int(rnd.lognormvariate(16, 1.0))
    out.write(json.dumps(d, separators=(",", ":")) + "\n")
PY
lines=$(wc -l < "$tmp/results.jsonl")
size=$(du -h "$tmp/results.jsonl" | cut -f1)
echo "input: $lines lines, $size"
for mode in text html; do
  args=()
  [ "$mode" = html ] && args=(--html "$tmp/page.html")
  /usr/bin/time -v "$nsbox" report "${args[@]}" "$tmp/results.jsonl" > "$tmp/out.txt" 2> "$tmp/time.txt" || true
  el=$(grep 'Elapsed (wall clock)' "$tmp/time.txt" | awk '{print $NF}')
  rss=$(grep 'Maximum resident set size' "$tmp/time.txt" | awk '{print $NF}')
  echo "report ($mode): elapsed $el, peak RSS ${rss} KiB"
  [ "$mode" = html ] && echo "  page: $(du -h "$tmp/page.html" | cut -f1)"
done
head -3 "$tmp/out.txt"
