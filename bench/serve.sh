#!/usr/bin/env bash
# nsbox serve under load (#29): requests/s and latency p50/p99 of POST
# /run_code at 16 and 64 client connections, against `nsbox batch --warm`
# running the same jobs (jobs/s; no per-job latency: batch has no requests).
#   bench/serve.sh [N=400] [J=2]     (NSBOX=path/to/nsbox)
# N jobs per run, each `print(sum(range(10**5)))`; the service runs -j J
# --queue 256 --warm on a unix socket in a private temporary directory. The
# client is Python's http.client in threads (one connection per request, as
# verl's caller and nsbox_client do): its own cost is part of the latency,
# as it is for a real caller. Every answer must be 200 "Success" with the
# right stdout, and every batch line outcome "pass", or the run aborts
# without figures. Asserts nothing about speed. hyperfine is not used: it
# times commands, not requests in flight.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-400}
j=${2:-2}
nsbox=$(realpath "${NSBOX:-build/nsbox}")
out=$(mktemp -d /tmp/nsbox-serve-bench.XXXXXX)
chmod 700 "$out"
pid=
cleanup() { [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT

"$nsbox" serve --listen "unix:$out/s.sock" -j "$j" --queue 256 --warm 2>"$out/serve.log" &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$out/serve.log" && break; sleep 0.1; done
grep -q "listening on" "$out/serve.log" || { cat "$out/serve.log" >&2; exit 1; }

/usr/bin/python3 - "$out/s.sock" "$n" <<'PY'
import http.client, json, socket, sys, threading, time

path, n = sys.argv[1], int(sys.argv[2])
CODE = "print(sum(range(10**5)))"
WANT = "%d\n" % sum(range(10**5))

class Unix(http.client.HTTPConnection):
    def __init__(self):
        super().__init__("localhost", timeout=600)
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)

body = json.dumps({"code": CODE, "language": "python", "run_timeout": 10}).encode()

def one():
    c = Unix()
    t0 = time.perf_counter()
    c.request("POST", "/run_code", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    d = json.loads(r.read())
    dt = time.perf_counter() - t0
    c.close()
    if r.status != 200 or d.get("status") != "Success" or d["run_result"]["stdout"] != WANT:
        raise SystemExit("bad answer: %d %r" % (r.status, d))
    return dt

def run(conc):
    lat, lock, left = [], threading.Lock(), [n]
    errors = []
    def worker():
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            try:
                dt = one()
            except BaseException as e:   # noqa: B902 — reported, then abort
                errors.append(e)
                return
            with lock:
                lat.append(dt)
    one()   # the engine is up and warm
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(conc)]
    for t in ts: t.start()
    for t in ts: t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise SystemExit("aborted: %r" % errors[0])
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3
    print("serve  %3d connections: %4d requests in %6.2f s = %7.1f req/s   p50 %7.1f ms   p99 %7.1f ms"
          % (conc, len(lat), wall, len(lat) / wall, q(0.50), q(0.99)))

for conc in (16, 64):
    run(conc)
PY

for i in $(seq "$n"); do printf '{"id":%d,"kind":"python","code":"print(sum(range(10**5)))"}\n' "$i"; done >"$out/jobs.jsonl"
t0=$(date +%s.%N)
"$nsbox" batch --quiet -j "$j" --warm "$out/jobs.jsonl" >"$out/batch.jsonl"
t1=$(date +%s.%N)
/usr/bin/python3 - "$out/batch.jsonl" "$n" "$t0" "$t1" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
n, t0, t1 = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
bad = [l for l in lines if l.get("outcome") != "pass"]
if len(lines) != n or bad:
    raise SystemExit("batch: %d lines, %d not pass: %r" % (len(lines), len(bad), bad[:1]))
print("batch --warm (its start included): %4d jobs in %6.2f s = %7.1f jobs/s" % (n, t1 - t0, n / (t1 - t0)))
PY
