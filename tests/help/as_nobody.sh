#!/usr/bin/env bash
# The help suite as uid/gid 65534, from a world-readable copy of the binary
# and the source tree (a clone under /root is not readable by it). As a
# non-root user this is the plain run: skip (77), honestly. A copied binary
# is not the build tree's, so it is told where the copied runner is
# (docs/testing.md, "Finding the runner").
set -euo pipefail
python3=$1 test=$2
. "$(dirname "${BASH_SOURCE[0]}")/../nobody.sh"
nobody_prepare help
mkdir -p "$tmp/src"
cp "$NSBOX" "$tmp/nsbox"
cp "$test" "$tmp/test_help.py"
tar -C "$NSBOX_SOURCE" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$tmp/src" -xf -
chmod -R a+rX "$tmp"
chmod 1777 "$tmp"
cd "$tmp"
setpriv --reuid=65534 --regid=65534 --clear-groups \
  env NSBOX="$tmp/nsbox" NSBOX_SOURCE="$tmp/src" NSBOX_RUNNER_DIR="$tmp/src/harness" HOME=/tmp \
  "$python3" -m unittest -v test_help 2>&1
