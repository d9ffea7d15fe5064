#!/usr/bin/env bash
# The parity suite's full set (issue #26): the 76 modules of
# tests/parity/modules-full.txt of CPython's regression suite (Debian's
# libpython3.11-testsuite), bare vs `nsbox python` (cold) vs `nsbox batch
# --warm`, as the caller and, when run as root, as uid 65534; each test's
# outcome compared with bare's, differences rerun once to drop timing noise,
# then matched to tests/parity/allow.txt. Prints the table: per user and mode
# the modules, tests, differences, how many the allow-list explains, the
# unexpected ones and the unconfirmed (flaky) ones, and the allow-list's size
# with its stale entries. Exit 1 on an unexpected difference or a stale entry.
#   bench/parity.sh [REPORT.md] [-- parity.py options, e.g. --users root -j 2]
# NSBOX=path/to/nsbox (default build/nsbox). About 36 minutes on the 2-core
# reference host (docs/testing.md). REPORT.md gets every difference with the
# reason each side gave (default: parity-report.md in the current directory).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
nsbox=${NSBOX:-$src/build/nsbox}
report=parity-report.md
if [ $# -gt 0 ] && [ "$1" != -- ]; then report=$1; shift; fi
[ "${1:-}" = -- ] && shift
[ -d /usr/lib/python3.11/test/support ] || { echo "bench/parity.sh: needs libpython3.11-testsuite (scripts/deps)" >&2; exit 2; }
exec /usr/bin/python3 "$src/tests/parity/parity.py" --nsbox "$nsbox" \
  --modules "$src/tests/parity/modules-full.txt" --allow "$src/tests/parity/allow.txt" \
  --report "$report" "$@"
