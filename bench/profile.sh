#!/usr/bin/env bash
# What a profile costs at startup: resolving and parsing it (`profile show`,
# no sandbox), and a whole `nsbox run` under the built-in minimal profile
# versus the same policy read from a file. Reports medians; asserts nothing.
#   bench/profile.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
nsbox=${NSBOX:-build/nsbox}
out=$(mktemp -d "${TMPDIR:-/var/tmp}/nsbox-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
"$nsbox" profile show minimal > "$out/minimal.ini"
hyperfine -N -w 10 -r "$runs" --export-json "$out/show.json" \
  -n show-builtin "$nsbox profile show python" \
  -n show-file "$nsbox profile show $out/minimal.ini" >/dev/null
hyperfine -N -w 5 -r "$runs" --export-json "$out/run.json" \
  -n run-builtin "$nsbox run -- /bin/true" \
  -n run-file "$nsbox run --profile $out/minimal.ini -- /bin/true" >/dev/null
/usr/bin/python3 - "$out/show.json" "$out/run.json" <<'PY'
import json, sys
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        print("  %-13s median %7.3f ms  (min %7.3f, max %7.3f)" % (r["command"], r["median"] * 1e3, r["min"] * 1e3, r["max"] * 1e3))
PY
