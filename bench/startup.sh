#!/usr/bin/env bash
# Startup overhead of a sandboxed `python -c pass`, in one hyperfine run:
# bare python3, nsbox (every protection on) and bwrap with comparable
# namespaces and mounts. Reports medians and ratios; asserts nothing.
#   bench/startup.sh [RUNS]        (back to back, then spaced 100 ms apart)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-60}
nsbox=${NSBOX:-build/nsbox}
py=/usr/bin/python3     # not the pyenv shim on PATH: a script, 10x slower
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/lib /lib \
--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp --tmpfs /workspace --chdir /workspace \
--clearenv --setenv PATH /usr/bin $py -I -B -c pass"
for mode in back-to-back spaced-100ms; do
  prep=()
  [ "$mode" = spaced-100ms ] && prep=(--prepare 'sleep 0.1')
  hyperfine -N -w 10 -r "$runs" "${prep[@]}" --export-json "$out/$mode.json" \
    -n bare "$py -I -B -c pass" \
    -n nsbox "$nsbox python -c pass" \
    -n bwrap "$bwrap_cmd" >/dev/null
  $py - "$out/$mode.json" "$mode" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
bare = res["bare"]["median"]
print("%s (median ms; overhead over bare python; ratio)" % sys.argv[2])
for name in ("bare", "nsbox", "bwrap"):
    m = res[name]["median"]
    print("  %-6s %7.2f ms  +%6.2f ms  %5.2fx" % (name, m * 1e3, (m - bare) * 1e3, m / bare))
print("  nsbox overhead / bwrap overhead: %.2f" %
      ((res["nsbox"]["median"] - bare) / max(res["bwrap"]["median"] - bare, 1e-9)))
PY
done
