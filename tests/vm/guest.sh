#!/bin/sh
# tests/vm/guest.sh — the guest side of the VM suite, run as root by
# nsbox-vm-test.service inside the VM (systemd PID 1, pure cgroup v2, the 6.1
# kernel). Runs the same checks twice: as root straight from this service
# (nsbox shares the service's cgroup with this shell), and as a user in a real
# logind session (su -l: pam_systemd puts the shell in session-N.scope). No
# wrapper (no systemd-run): nsbox must get its own cgroup itself. Everything
# lands in /nsbox-vm-out (a 9p share of a host directory); the host test
# asserts on it. Observations only: this script judges nothing.
set -u
out=/nsbox-vm-out
NSBOX=$NSBOX_VM_nsbox
USER_NAME=nsboxvm

# checks DIR — every observation of one identity into DIR
checks() {
        d=$1
        cat /proc/self/cgroup > "$d/cgroup.txt"
        env | grep -E '^(XDG_RUNTIME_DIR|DBUS_SESSION_BUS_ADDRESS)=' > "$d/env.txt"
        "$NSBOX" doctor --json > "$d/doctor.json" 2> "$d/doctor.err"; echo $? > "$d/doctor.rc"
        "$NSBOX" doctor > "$d/doctor.txt" 2>&1
        # The Landlock ABI this kernel offers, asked directly (syscall 444,
        # LANDLOCK_CREATE_RULESET_VERSION), to compare with doctor's report.
        /usr/bin/python3 -c 'import ctypes; l = ctypes.CDLL(None, use_errno=True); print(l.syscall(444, None, 0, 1))' \
                > "$d/landlock_abi.txt" 2>&1
        # A memory bomb under 64M.
        "$NSBOX" python --json --memory 64M --wall-time 120s -c '
b = []
while True:
    b.append(bytearray(1 << 20))' > "$d/mem.json" 2> "$d/mem.err"; echo $? > "$d/mem.rc"
        # A fork bomb under --pids 16: every child stays, until fork fails.
        "$NSBOX" python --json --pids 16 --wall-time 120s -c '
import os, time
n = 0
while True:
    try:
        pid = os.fork()
    except OSError as e:
        print("refused after", n, "errno", e.errno, flush=True)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    n += 1' > "$d/fork.json" 2> "$d/fork.err"; echo $? > "$d/fork.rc"
        # CPU of the whole tree: two processes spinning 1.5 s of CPU each.
        "$NSBOX" python --json --wall-time 120s -c '
import os, time
def spin():
    t = time.process_time()
    while time.process_time() - t < 1.5:
        pass
pid = os.fork()
spin()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)' > "$d/cpu.json" 2> "$d/cpu.err"; echo $? > "$d/cpu.rc"
        # 200 runs in one batch (one process: one scope), then what is left.
        i=0
        while [ $i -lt 200 ]; do
                echo "{\"id\": $i, \"kind\": \"run\", \"argv\": [\"/bin/true\"]}"
                i=$((i + 1))
        done > "$d/jobs.jsonl"
        "$NSBOX" batch -j 2 "$d/jobs.jsonl" > "$d/batch.jsonl" 2> "$d/batch.err" &
        echo $! > "$d/batch.pid"        # its scope's name carries this pid
        wait $!; echo $? > "$d/batch.rc"
        sleep 1         # systemd collects the empty scope asynchronously
        # run cgroups, supervisor leaves, scopes (not this suite's own unit)
        find /sys/fs/cgroup \( -name 'nsbox-[0-9]*' -o -name 'nsbox-sup-*' -o -name 'nsbox-scope-*' \) \
                > "$d/left.txt" 2>&1
        # Warm starts: doctor's verdict on this kernel, then a warm batch with
        # the Landlock ABI requirement lowered (a test hook: this 6.1 kernel
        # has no ABI 6 scopes) to exercise the cgroup v2 join of warm jobs.
        # (printf, not dash's echo, which would turn the JSON's \n into newlines)
        {
                i=0
                while [ $i -lt 40 ]; do
                        printf '%s\n' "{\"id\": $i, \"kind\": \"python\", \"code\": \"import os\\nprint(os.getpid(), $i)\"}"
                        i=$((i + 1))
                done
                printf '%s\n' '{"id": "mem", "kind": "python", "code": "b = []\nwhile True:\n    b.append(bytearray(1 << 20))", "limits": {"memory": "64M", "wall_time": "60s"}}'
                printf '%s\n' '{"id": "fork", "kind": "python", "code": "import os, time\nn = 0\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError:\n        print(n, flush=True)\n        break\n    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1", "limits": {"pids": "16", "wall_time": "60s"}}'
        } > "$d/warm_jobs.jsonl"
        NSBOX_WARM_DIR=/opt/nsbox-vm/warm NSBOX_TEST_WARM_LANDLOCK_ABI=1 \
                "$NSBOX" batch --warm -j 2 "$d/warm_jobs.jsonl" > "$d/warm.jsonl" 2> "$d/warm.err"
        echo $? > "$d/warm.rc"
        # Is a warm job's init born in its cgroup (#28)? The zygote's clone3 of
        # it as strace -f sees it, the cgroup the job sees, and whether it can
        # reach a cgroupfs (none in its tree; mounting one is refused).
        /usr/bin/python3 -c 'import json; print(json.dumps({"id": "probe", "kind": "python", "code":
"import ctypes, os\n"
"print(open(\"/proc/self/cgroup\").read().strip())\n"
"print(os.path.exists(\"/sys/fs/cgroup\"))\n"
"libc = ctypes.CDLL(None, use_errno=True)\n"
"print(libc.mount(b\"none\", b\"/tmp\", b\"cgroup2\", 0, None), ctypes.get_errno())\n"}))' \
                > "$d/warm_probe_job.jsonl"
        if command -v strace > /dev/null; then
                NSBOX_WARM_DIR=/opt/nsbox-vm/warm NSBOX_TEST_WARM_LANDLOCK_ABI=1 \
                        strace -f -qq -e trace=clone3 -o "$d/warm_strace.txt" \
                        "$NSBOX" batch --warm -j 1 "$d/warm_probe_job.jsonl" > "$d/warm_probe.jsonl" 2> "$d/warm_probe.err"
        else
                echo "strace missing" > "$d/warm_strace.txt"
        fi
        # The fallback: the kernel refuses that clone (a test hook sends the
        # zygote a directory that is no cgroup); the init joins by fd. The
        # probe under strace, then a memory hog and a fork bomb.
        if command -v strace > /dev/null; then
                NSBOX_WARM_DIR=/opt/nsbox-vm/warm NSBOX_TEST_WARM_LANDLOCK_ABI=1 NSBOX_TEST_WARM_CGROUP_REFUSED=1 \
                        strace -f -qq -e trace=clone3 -o "$d/warm_fallback_strace.txt" \
                        "$NSBOX" batch --warm -j 1 "$d/warm_probe_job.jsonl" > "$d/warm_fallback_probe.jsonl" \
                        2> "$d/warm_fallback_probe.err"
        else
                echo "strace missing" > "$d/warm_fallback_strace.txt"
        fi
        grep -E '"id": "(mem|fork)"' "$d/warm_jobs.jsonl" > "$d/warm_fallback_jobs.jsonl"
        NSBOX_WARM_DIR=/opt/nsbox-vm/warm NSBOX_TEST_WARM_LANDLOCK_ABI=1 NSBOX_TEST_WARM_CGROUP_REFUSED=1 \
                "$NSBOX" batch --warm -j 1 "$d/warm_fallback_jobs.jsonl" > "$d/warm_fallback.jsonl" \
                2> "$d/warm_fallback.err"
        NSBOX_WARM_DIR=/opt/nsbox-vm/warm "$NSBOX" doctor --json > "$d/warm_doctor.json" 2>&1
        sleep 1
        find /sys/fs/cgroup \( -name 'nsbox-[0-9]*' -o -name 'nsbox-sup-*' -o -name 'nsbox-scope-*' \) \
                > "$d/warm_left.txt" 2>&1
        # --cgroup-parent refused: a cgroup this user cannot use.
        "$NSBOX" run --json --cgroup-parent "$2" -- /bin/true > "$d/parent_refused.json" 2> "$d/parent_refused.err"
        echo $? > "$d/parent_refused.rc"
}

# parent_checks DIR — --cgroup-parent, for real, as root: a delegated-style
# cgroup under the root (which is exempt from the no-internal-processes rule).
parent_checks() {
        d=$1 p=/sys/fs/cgroup/nsbox-vm-parent
        mkdir -p $p
        "$NSBOX" python --json --cgroup-parent $p --memory 64M --wall-time 120s -c '
b = []
while True:
    b.append(bytearray(1 << 20))' > "$d/parent_mem.json" 2> "$d/parent_mem.err"; echo $? > "$d/parent_mem.rc"
        find $p -mindepth 1 -type d > "$d/parent_left.txt"
        rmdir $p
        # memory and pids not enabled for it: refused
        mkdir -p /sys/fs/cgroup/nsbox-vm-bare/inner
        "$NSBOX" run --json --cgroup-parent /sys/fs/cgroup/nsbox-vm-bare/inner -- /bin/true \
                > "$d/parent_bare.json" 2> "$d/parent_bare.err"; echo $? > "$d/parent_bare.rc"
        rmdir /sys/fs/cgroup/nsbox-vm-bare/inner /sys/fs/cgroup/nsbox-vm-bare
}

if [ "${1:-}" = checks ]; then  # the user's half: guest.sh checks DIR
        checks "$2" "$3"
        exit 0
fi

exec > "$out/guest.log" 2>&1
# The build and source trees may be private to root (a CI clone under
# /root): the user runs a world-readable copy (the overlay is a tmpfs).
mkdir -p /opt/nsbox-vm/warm
install -m 0755 "$NSBOX" /opt/nsbox-vm/nsbox
install -m 0644 "$(dirname "$NSBOX")/warm/libnsbox_warm.so" "$(dirname "$NSBOX")/warm/zygote.py" /opt/nsbox-vm/warm/
install -m 0755 "$0" /opt/nsbox-vm/guest.sh
NSBOX=/opt/nsbox-vm/nsbox
echo "kernel $(uname -r)"
echo "cgroup fs: $(stat -f -c %T /sys/fs/cgroup)"
date +%s.%N > "$out/t_start"

mkdir -p "$out/root"
# root's refusal case: a cgroup on the v1-less host that is not a cgroup at all
checks "$out/root" /sys/fs/cgroup/nsbox-vm-missing
parent_checks "$out/root"
date +%s.%N > "$out/t_root"

# The user: a real login session through PAM (pam_systemd registers it with
# logind, which starts user@UID.service and its bus).
id "$USER_NAME" >/dev/null 2>&1 || useradd -m -s /bin/sh "$USER_NAME"
udir=/tmp/nsbox-vm-user
rm -rf "$udir"; mkdir -p "$udir"; chown "$USER_NAME" "$udir"
# su -l resets the environment: the paths go as arguments.
# The user's refusal case: a cgroup it was given but cannot write.
mkdir -p /sys/fs/cgroup/nsbox-vm-rootonly
su -l "$USER_NAME" -c "NSBOX_VM_nsbox=$NSBOX /bin/sh /opt/nsbox-vm/guest.sh checks $udir /sys/fs/cgroup/nsbox-vm-rootonly"
echo "su exit $?"
mkdir -p "$out/user"
cp "$udir"/* "$out/user/"
loginctl list-sessions --no-legend > "$out/user/sessions.txt" 2>&1
date +%s.%N > "$out/t_user"
rmdir /sys/fs/cgroup/nsbox-vm-rootonly
# Every scope nsbox asked systemd for, from the journal (root's and the user's).
journalctl -b -o cat --no-pager | grep -o 'nsbox-scope-[0-9]*-[0-9a-f]*\.scope' | sort -u > "$out/scopes.txt"
echo done > "$out/done"
