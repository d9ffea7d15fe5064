#!/bin/sh
# bench/warm-vm-guest.sh — the guest side of bench/warm-vm.sh, run as root by
# tests/vm's nsbox-vm-test.service inside the VM (systemd PID 1, pure cgroup
# v2; vmboot.py boots it with nsbox_vm.guest naming this file). Runs
# bench/warm.sh N J ROUNDS twice: (2) as a user in a real logind session (su
# -l: pam_systemd puts the shell in session-N.scope; nsbox asks the user
# manager), then (1) as root straight from that service (no wrapper: nsbox
# gets its own cgroup from the system manager, as the vm test's root does). Before each, what
# the backend is: /proc/self/cgroup, `nsbox doctor`, one cold and one warm job's
# result line (start, protections), whether perf stat is allowed. Everything
# lands in /nsbox-vm-out (a 9p share of a host directory): sysinfo.txt,
# root/ and user/ (warm.out, warm.err, warm.rc, ...), done. The guest may write
# anywhere else too (an overlay over a tmpfs: warm.sh's /var/tmp). Observations
# only: the host side judges (a non-zero warm.rc fails bench/warm-vm.sh).
#
# Warm starts need Landlock ABI 6; on an older kernel (Debian 12's 6.1 has 3)
# the requirement is lowered to the kernel's ABI through the build's test hook
# NSBOX_TEST_WARM_LANDLOCK_ABI (as the vm test's warm check does), and
# sysinfo.txt says so: those jobs lack the ABI 6 scopes.
set -u
out=/nsbox-vm-out
USER_NAME=nsboxvm
OPT=/opt/nsbox-vm

# bench DIR — one identity's observations and its warm.sh run into DIR
bench() {
        d=$1
        cat /proc/self/cgroup > "$d/cgroup.txt"
        id > "$d/id.txt"
        "$OPT/nsbox" doctor > "$d/doctor.txt" 2>&1
        # One cold and one warm job: the backends a job of warm.sh gets.
        printf '%s\n' '{"id": "probe", "kind": "python", "code": "print(1)"}' > "$d/probe_job.jsonl"
        "$OPT/nsbox" batch --quiet -j 1 "$d/probe_job.jsonl" > "$d/probe_cold.jsonl" 2> "$d/probe_cold.err"
        "$OPT/nsbox" batch --quiet -j 1 --warm "$d/probe_job.jsonl" > "$d/probe_warm.jsonl" 2> "$d/probe_warm.err"
        # Which clone3 calls ask for CLONE_INTO_CGROUP (the flags strace decodes).
        if command -v strace > /dev/null; then
                strace -f -qq -e trace=clone3 -o "$d/strace_cold.txt" \
                        "$OPT/nsbox" batch --quiet -j 1 "$d/probe_job.jsonl" > /dev/null 2>&1
                strace -f -qq -e trace=clone3 -o "$d/strace_warm.txt" \
                        "$OPT/nsbox" batch --quiet -j 1 --warm "$d/probe_job.jsonl" > /dev/null 2>&1
        fi
        { perf stat -e task-clock true > /dev/null 2>&1 && echo allowed ||
                { echo "refused:"; perf stat -e task-clock true 2>&1 | head -3; }; } > "$d/perf.txt" 2>&1
        echo "$(cut -d' ' -f1-3 /proc/loadavg)" > "$d/load_before.txt"
        date +%s.%N > "$d/t_start"
        "$OPT/bench/warm.sh" "$NSBOX_VM_n" "$NSBOX_VM_j" "$NSBOX_VM_rounds" > "$d/warm.out" 2> "$d/warm.err"
        echo $? > "$d/warm.rc"
        date +%s.%N > "$d/t_end"
        echo "$(cut -d' ' -f1-3 /proc/loadavg)" > "$d/load_after.txt"
}

if [ "${1:-}" = bench ]; then  # the user's half: warm-vm-guest.sh bench DIR
        export NSBOX="$OPT/nsbox" NSBOX_WARM_DIR="$OPT/warm"
        [ -n "${2:-}" ] && export NSBOX_TEST_WARM_LANDLOCK_ABI="$2"
        export NSBOX_VM_n="$3" NSBOX_VM_j="$4" NSBOX_VM_rounds="$5"
        bench "$6"
        exit 0
fi

exec > "$out/guest.log" 2>&1
# World-readable copies in the overlay (the build and source trees may be
# private to root), laid out as warm.sh expects: it runs from $OPT/bench and
# takes NSBOX; the warm runtime from NSBOX_WARM_DIR.
mkdir -p "$OPT/warm" "$OPT/bench"
build=$(dirname "$NSBOX_VM_nsbox")
install -m 0755 "$NSBOX_VM_nsbox" "$OPT/nsbox"
install -m 0644 "$build/warm/libnsbox_warm.so" "$build/warm/zygote.py" "$OPT/warm/"
install -m 0755 "$NSBOX_VM_source/bench/warm.sh" "$0" "$OPT/bench/"
export NSBOX="$OPT/nsbox" NSBOX_WARM_DIR="$OPT/warm"

abi=$(/usr/bin/python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.syscall(444, None, 0, 1))')
hook=
if [ "$abi" -lt 6 ] 2>/dev/null; then
        hook=$abi
        export NSBOX_TEST_WARM_LANDLOCK_ABI="$hook"
fi
{
        echo "kernel $(uname -r)"
        echo "cpus $(nproc)"
        echo "memory_kib $(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
        echo "cpu_model $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
        echo "cgroup_fs $(stat -f -c %T /sys/fs/cgroup)"
        echo "cgroup_controllers $(cat /sys/fs/cgroup/cgroup.controllers)"
        echo "pid1 $(cat /proc/1/comm)"
        echo "landlock_abi $abi"
        echo "warm_landlock_hook ${hook:-none}"
        echo "hyperfine $(hyperfine --version 2>&1)"
        echo "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
} > "$out/sysinfo.txt"

# The user first: its files reach the share only when its session ends, while
# root's are written there as they come, so a host deadline that ends the VM
# during root's run still shows root's so far.
# The user: a real login session through PAM (pam_systemd registers it with
# logind, which starts user@UID.service and its bus); su -l resets the
# environment, so the settings go as arguments.
id "$USER_NAME" >/dev/null 2>&1 || useradd -m -s /bin/sh "$USER_NAME"
udir=/tmp/nsbox-vm-bench-user
rm -rf "$udir"; mkdir -p "$udir"; chown "$USER_NAME" "$udir"
su -l "$USER_NAME" -c "/bin/sh $OPT/bench/warm-vm-guest.sh bench '$hook' $NSBOX_VM_n $NSBOX_VM_j $NSBOX_VM_rounds $udir"
echo "su exit $?"
mkdir -p "$out/user"
cp "$udir"/* "$out/user/"

mkdir -p "$out/root"
bench "$out/root"
echo done > "$out/done"
