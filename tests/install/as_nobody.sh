#!/usr/bin/env bash
# The install suite's checks that need no root (man pages, completion, the
# AppArmor profile, the client package) again as uid/gid 65534 with no
# supplementary groups, from a world-readable copy. As a non-root user this
# is the plain run: skip (77), honestly. (install-meson and install-deb run
# their commands as 65534 themselves.)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../nobody.sh"
nobody_prepare install
mkdir -p "$tmp/src/client" "$tmp/src/dist" "$tmp/tests" "$tmp/bin" "$tmp/gen"
cp -r "$NSBOX_SOURCE/client/python" "$tmp/src/client/"
cp "$NSBOX_SOURCE/LICENSE" "$NSBOX_SOURCE/README.md" "$NSBOX_SOURCE/meson.build" "$tmp/src/"
cp -r "$NSBOX_SOURCE/dist/man" "$tmp/src/dist/"
cp "$NSBOX_SOURCE"/tests/install/test_*.py "$tmp/tests/"
cp "$NSBOX" "$tmp/bin/nsbox"
cp "$NSBOX_TABLES" "$tmp/gen/tables.txt"
cp "$NSBOX_BASH_COMPLETION" "$tmp/gen/nsbox.bash"
cp "$NSBOX_ZSH_COMPLETION" "$tmp/gen/_nsbox"
cp "$NSBOX_APPARMOR_PROFILE" "$tmp/gen/nsbox.apparmor"
chmod -R a+rX "$tmp"
cd "$tmp"
as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups \
    env HOME=/tmp PATH=/usr/bin:/bin NSBOX_SOURCE="$tmp/src" NSBOX="$tmp/bin/nsbox" \
    NSBOX_TABLES="$tmp/gen/tables.txt" NSBOX_MANDIR="$tmp/src/dist/man" \
    NSBOX_BASH_COMPLETION="$tmp/gen/nsbox.bash" NSBOX_ZSH_COMPLETION="$tmp/gen/_nsbox" \
    NSBOX_APPARMOR_PROFILE="$tmp/gen/nsbox.apparmor" \
    /usr/bin/python3 "$@"
}
status=0
as_nobody tests/test_man.py -v || status=1
as_nobody tests/test_completion.py -v || status=1
as_nobody tests/test_apparmor.py -v Profile || status=1   # MesonOption configures the source: root run
as_nobody tests/test_client_package.py -v || status=1
exit $status
