#!/usr/bin/env bash
# Runs the integration suite (the test files matching $3, test_*.py by
# default) as uid/gid 65534 with no supplementary groups.
# As a non-root user this is the same as the plain run: skip (77), honestly.
# The copied binary is not the build tree's, so NSBOX_RUNNER_DIR names the
# copied runner for nsbox test (docs/testing.md, "Finding the runner"), and
# NSBOX_WARM_DIR the copied zygote files.
set -euo pipefail
python3=$1 src=$2 pattern=${3:-test_*.py}
. "$(dirname "${BASH_SOURCE[0]}")/../nobody.sh"
nobody_prepare integration
mkdir -p "$tmp/fixtures" "$tmp/fixtures-build" "$tmp/tests" "$tmp/src"
cp "$NSBOX" "$tmp/nsbox"
cp -r "$FIXTURES/." "$tmp/fixtures/"
[ -d "$FIXTURES_BUILD" ] && cp -r "$FIXTURES_BUILD/." "$tmp/fixtures-build/"
cp -r "$src/." "$tmp/tests/"
for d in harness examples docs client; do [ -d "$NSBOX_SOURCE/$d" ] && cp -r "$NSBOX_SOURCE/$d" "$tmp/src/"; done
# warm starts (#14): the copied binary is not the build tree's either, so
# NSBOX_WARM_DIR names a copy of the build's libnsbox_warm.so and zygote.py
warm_build=$(dirname "$NSBOX")/warm
mkdir -p "$tmp/warm"
[ -f "$warm_build/zygote.py" ] && cp "$warm_build/libnsbox_warm.so" "$warm_build/zygote.py" "$tmp/warm/"
# nsbox serve (#29): its program beside the copy, named by NSBOX_SERVE
[ -f "$(dirname "$NSBOX")/nsbox-serve" ] && cp "$(dirname "$NSBOX")/nsbox-serve" "$tmp/nsbox-serve"
chmod -R a+rX "$tmp"
cd "$tmp"
# not exec: the EXIT trap must still remove $tmp afterwards (with exec it
# never ran, and every unprivileged run left a copy in /var/tmp)
setpriv --reuid=65534 --regid=65534 --clear-groups \
  env NSBOX="$tmp/nsbox" FIXTURES="$tmp/fixtures" FIXTURES_BUILD="$tmp/fixtures-build" NSBOX_SOURCE="$tmp/src" \
  NSBOX_RUNNER_DIR="$tmp/src/harness" NSBOX_WARM_DIR="$tmp/warm" NSBOX_SERVE="$tmp/nsbox-serve" \
  NSBOX_TESTS_MUST_RUN="${NSBOX_TESTS_MUST_RUN:-}" NSBOX_PLATFORM="${NSBOX_PLATFORM:-}" HOME=/tmp \
  "$python3" -m unittest discover -s "$tmp/tests" -p "$pattern"
