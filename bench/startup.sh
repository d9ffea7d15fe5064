#!/usr/bin/env bash
# Startup overhead of a sandboxed `python -c pass`, in one hyperfine run:
# bare python3, nsbox (every protection on) and bwrap with comparable
# namespaces and mounts; plus what the limits cost: the same nsbox run with
# its limits in cgroups vs held by rlimits (NSBOX_BENCH_CG_BACKEND=rlimit, a
# bench-only build made with -Dbench_hooks=true); and bench/ns_floor, python3
# in the seven fresh namespaces and nothing else (the kernel's share: the floor
# under any tool that gives each run fresh namespaces). Reports medians and
# ratios; asserts nothing.
#   bench/startup.sh [RUNS]        (back to back, then spaced 100 ms apart)
#   ROUNDS=N (default 3): RUNS are split into N alternating hyperfine rounds
# Environment: NSBOX (default build/nsbox), NSBOX_BENCH (a -Dbench_hooks=true
# build; default: configured and built here in build-bench/).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-60}
nsbox=${NSBOX:-build/nsbox}
py=/usr/bin/python3     # not the pyenv shim on PATH: a script, 10x slower
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

if [ -z "${NSBOX_BENCH:-}" ]; then
  [ -d build-bench ] || meson setup build-bench -Dbench_hooks=true -Dtests=false >/dev/null
  ninja -C build-bench nsbox >/dev/null
  NSBOX_BENCH=build-bench/nsbox
fi
backend() {   # the mechanism a run's result says held its memory limit
  env NSBOX_BENCH_CG_BACKEND="$1" "$NSBOX_BENCH" python --json -c pass |
    $py -c 'import json,sys; print(json.load(sys.stdin)["protections"]["memory"])'
}
cc -O2 -o "$out/ns_floor" bench/ns_floor.c
cg_backend=$(backend cgroup)
rl_backend=$(backend rlimit)

bwrap_cmd="bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr --symlink usr/lib /lib \
--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp --tmpfs /workspace --chdir /workspace \
--clearenv --setenv PATH /usr/bin $py -I -B -c pass"
rounds=${ROUNDS:-3}
per=$(( (runs + rounds - 1) / rounds ))
echo "uid $(id -u); limits: nsbox-cg uses $cg_backend, nsbox-rl uses $rl_backend;" \
     "$rounds rounds x $per runs each (rounds alternate, so load drift hits every command alike)"
for mode in back-to-back spaced-100ms; do
  prep=()
  [ "$mode" = spaced-100ms ] && prep=(--prepare 'sleep 0.1')
  for round in $(seq 1 "$rounds"); do
    hyperfine -N -w 5 -r "$per" "${prep[@]}" --export-json "$out/$mode.$round.json" \
      -n bare "$py -I -B -c pass" \
      -n nsbox "$nsbox python -c pass" \
      -n bwrap "$bwrap_cmd" \
      -n ns-floor "$out/ns_floor $py -I -B -c pass" \
      -n nsbox-cg "env NSBOX_BENCH_CG_BACKEND=cgroup $NSBOX_BENCH python -c pass" \
      -n nsbox-rl "env NSBOX_BENCH_CG_BACKEND=rlimit $NSBOX_BENCH python -c pass" >/dev/null 2>&1
  done
  $py - "$mode" "$out/$mode".*.json <<'PY'
import json, statistics, sys
times, cpu = {}, {}
for path in sys.argv[2:]:
    for r in json.load(open(path))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
        cpu.setdefault(r["command"], []).append((r["user"] + r["system"]) * 1e3)
med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
bare = med["bare"]
# CPU (user+system of the command and its children, mean per run) moves far
# less than wall time when other work shares the machine.
print("%s (median wall ms of %d runs; overhead over bare python; ratio; mean CPU ms)" %
      (sys.argv[1], len(times["bare"])))
for name in ("bare", "ns-floor", "nsbox", "bwrap", "nsbox-cg", "nsbox-rl"):
    print("  %-8s %7.2f ms  %+6.2f ms  %5.2fx   cpu %6.2f ms" %
          (name, med[name], med[name] - bare, med[name] / bare, statistics.mean(cpu[name])))
print("  nsbox overhead over the namespace floor: %+.2f ms" % (med["nsbox"] - med["ns-floor"]))
print("  nsbox overhead / bwrap overhead: %.2f" %
      ((med["nsbox"] - bare) / max(med["bwrap"] - bare, 1e-9)))
print("  limits cost (nsbox-cg - nsbox-rl, both through env): %+.2f ms wall, %+.2f ms cpu" %
      (med["nsbox-cg"] - med["nsbox-rl"], statistics.mean(cpu["nsbox-cg"]) - statistics.mean(cpu["nsbox-rl"])))
PY
done
