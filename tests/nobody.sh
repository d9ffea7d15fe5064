# Sourced by the suites' as_nobody.sh scripts: what each does before it runs
# its tests as uid/gid 65534 from a world-readable copy.
#   nobody_prepare SUITE   as root: $tmp, a fresh directory under /var/tmp
#                          (not /tmp: the sandbox owns /tmp, so a command
#                          there cannot be mirrored), removed at exit. As a
#                          non-root user this is the plain run: skip (77),
#                          honestly, or pass under NSBOX_TESTS_MUST_RUN=1.
nobody_prepare() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "already unprivileged: the plain $1 run covers this" >&2
    [ "${NSBOX_TESTS_MUST_RUN:-}" = 1 ] && exit 0
    exit 77
  fi
  tmp=$(mktemp -d "/var/tmp/nsbox-$1-nobody.XXXXXX")
  # the callers run setpriv without exec, so this trap still removes $tmp
  trap 'rm -rf "$tmp"' EXIT
}
