#!/bin/sh
# bench/cgjoin-vm-guest.sh — the guest side of bench/cgjoin-vm.sh (#28: a warm
# job's init born in its cgroup), run as root by tests/vm's
# nsbox-vm-test.service inside the VM (systemd PID 1, pure cgroup v2 mounted
# with nsdelegate; vmboot.py boots it with nsbox_vm.guest naming this file).
# For root (straight from the service) and for a user in a logind session (su
# -l), into /nsbox-vm-out/{root,user}/:
#   cgj_0.txt, cgj_20.txt  the cgroup-move timer (nsbox_vm.cgj, built on
#                          the host from bench/cgjoin.c): 60 moves of a forked
#                          child into two sibling v2 cgroups by writing "0" to
#                          cgroup.procs, back to back and 20 ms apart (one ms
#                          figure a line); root in /sys/fs/cgroup/nsbj, the user
#                          in a delegated scope of its user manager;
#   warm_gap.jsonl         20 warm jobs, -j 1, fed through a pipe 100 ms apart;
#   warm_b2b.jsonl         the same 20 jobs back to back;
#   strace_warm.txt        the clone3 calls of one warm job (strace -f), which
#                          prints its /proc/self/cgroup (probe_warm.jsonl).
# Observations only: the host side prints them.
set -u
out=/nsbox-vm-out
USER_NAME=nsboxvm
OPT=/opt/nsbox-vm-cgjoin

job() {
        printf '%s\n' "{\"id\": $1, \"kind\": \"python\", \"code\": \"print($1)\"}"
}

# measure DIR — one identity's figures into DIR
measure() {
        d=$1
        cat /proc/self/cgroup > "$d/cgroup.txt"
        id > "$d/id.txt"
        for gap in 0 20; do
                rm -f /tmp/cgj.out
                if [ "$(id -u)" = 0 ]; then
                        mkdir -p /sys/fs/cgroup/nsbj
                        "$OPT/cgj" /sys/fs/cgroup/nsbj cgroup.procs 60 $((gap * 1000)) > "$d/cgj_$gap.log" 2>&1
                        rmdir /sys/fs/cgroup/nsbj
                else
                        systemd-run --user --quiet --scope -p Delegate=yes /bin/sh -c \
                                "$OPT/cgj /sys/fs/cgroup\$(cut -d: -f3 /proc/self/cgroup) cgroup.procs 60 $((gap * 1000))" \
                                > "$d/cgj_$gap.log" 2>&1
                fi
                cp /tmp/cgj.out "$d/cgj_$gap.txt" 2>> "$d/cgj_$gap.log"
        done
        i=0
        while [ $i -lt 20 ]; do job $i; i=$((i + 1)); done > "$d/jobs.jsonl"
        "$OPT/nsbox" batch --quiet -j 1 --warm "$d/jobs.jsonl" > "$d/warm_b2b.jsonl" 2> "$d/warm_b2b.err"
        i=0
        while [ $i -lt 20 ]; do job $i; sleep 0.1; i=$((i + 1)); done |
                "$OPT/nsbox" batch --quiet -j 1 --warm - > "$d/warm_gap.jsonl" 2> "$d/warm_gap.err"
        printf '%s\n' '{"id": "probe", "kind": "python", "code": "print(open(\"/proc/self/cgroup\").read().strip())"}' \
                > "$d/probe.jsonl"
        strace -f -qq -e trace=clone3 -o "$d/strace_warm.txt" \
                "$OPT/nsbox" batch --quiet -j 1 --warm "$d/probe.jsonl" > "$d/probe_warm.jsonl" 2>&1
}

if [ "${1:-}" = measure ]; then  # the user's half: cgjoin-vm-guest.sh measure HOOK DIR
        export NSBOX_WARM_DIR="$OPT/warm"
        [ -n "$2" ] && export NSBOX_TEST_WARM_LANDLOCK_ABI="$2"
        measure "$3"
        exit 0
fi

exec > "$out/guest.log" 2>&1
mkdir -p "$OPT/warm"
build=$(dirname "$NSBOX_VM_nsbox")
install -m 0755 "$NSBOX_VM_nsbox" "$OPT/nsbox"
install -m 0755 "$NSBOX_VM_cgj" "$OPT/cgj"
install -m 0644 "$build/warm/libnsbox_warm.so" "$build/warm/zygote.py" "$OPT/warm/"
install -m 0755 "$0" "$OPT/"
export NSBOX_WARM_DIR="$OPT/warm"
abi=$(/usr/bin/python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.syscall(444, None, 0, 1))')
hook=
if [ "$abi" -lt 6 ] 2>/dev/null; then
        hook=$abi
        export NSBOX_TEST_WARM_LANDLOCK_ABI="$hook"
fi
{
        echo "kernel $(uname -r)"
        echo "landlock_abi $abi"
        echo "cgroup2_options $(awk '$3 == "cgroup2" {print $4}' /proc/mounts)"
} > "$out/sysinfo.txt"
# cgj appends to /tmp/cgj.out: the host's (root's, in the overlay's lower
# layer) would refuse the user's writes and be copied as the user's samples.
rm -f /tmp/cgj.out
id "$USER_NAME" >/dev/null 2>&1 || useradd -m -s /bin/sh "$USER_NAME"
udir=/tmp/nsbox-vm-cgjoin-user
rm -rf "$udir"; mkdir -p "$udir"; chown "$USER_NAME" "$udir"
su -l "$USER_NAME" -c "/bin/sh $OPT/cgjoin-vm-guest.sh measure '$hook' $udir"
echo "su exit $?"
mkdir -p "$out/user" "$out/root"
cp "$udir"/* "$out/user/"
measure "$out/root"
echo done > "$out/done"
