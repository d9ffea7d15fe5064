#!/bin/sh
# tests/vm/guest_apparmor.sh — the guest side of the `vm-apparmor` test, run
# as root by nsbox-vm-test.service inside a VM booting Debian 13's kernel
# (AppArmor on, userns mediation) with this machine's root filesystem.
# AppArmor 4's userspace comes from Debian 13's apparmor package, unpacked on
# the host into $NSBOX_VM_aa (with Debian 13's libc: its programs run through
# that ld.so, the guest's root being Debian 12's). Observations only, into
# /nsbox-vm-out; test_apparmor_vm.py judges.
#
# What it does: makes the guest's /etc/apparmor.d Debian 13's (abi 4.0,
# tunables; the overlay keeps it from the host), installs nsbox where the
# build's profile attaches and that profile as /etc/apparmor.d/nsbox (what
# `meson install` does), loads it; loads Debian 13's unprivileged_userns
# profile enforced (the profile Ubuntu's kernel moves an unconfined,
# unprivileged process into when it makes a user namespace: userns allowed,
# every capability denied) and runs doctor and a strict run under it with
# aa-exec as uid 65534; then the same nsbox under its own profile.
set -u
out=/nsbox-vm-out
exec > "$out/guest.log" 2>&1
# A copy uid 65534 can run whatever the build dir's permissions (a CI clone may be
# private to root): the overlay's tmpfs.
mkdir -p /opt/nsbox-vm && cp -a "$NSBOX_VM_aa" /opt/nsbox-vm/apparmor
AA=/opt/nsbox-vm/apparmor
LIB=$AA/usr/lib/x86_64-linux-gnu
# Debian 13's AppArmor programs, with its libc (the paths have no blanks: a
# command word, since setpriv runs aa-exec)
AA_LD="$LIB/ld-linux-x86-64.so.2 --library-path $LIB"
AAEXEC="$AA_LD $AA/usr/bin/aa-exec"
parser() { $AA_LD "$AA/usr/sbin/apparmor_parser" "$@"; }
# warnings as errors: a rule the kernel cannot enforce, or enforces less, an abi issue
STRICT="--warn=rule-not-enforced --warn=rule-downgraded --warn=abi --Werror"
# nobody CMD...: as uid/gid 65534 with a clean environment (Ubuntu's
# restriction binds unprivileged processes only)
nobody() {
        env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp/nsbox-vm-nobody LANG=C.UTF-8 \
                setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
mkdir -p /tmp/nsbox-vm-nobody && chown 65534:65534 /tmp/nsbox-vm-nobody

{
        echo "uname -r: $(uname -r)"
        echo "lsm: $(cat /sys/kernel/security/lsm)"
        echo "apparmor enabled: $(cat /sys/module/apparmor/parameters/enabled)"
        for f in /sys/kernel/security/apparmor/features/namespaces/*; do
                echo "features/namespaces/${f##*/}: $(cat "$f")"
        done
        echo "kernel.apparmor* sysctls: $(cd /proc/sys/kernel && ls -d apparmor* 2>/dev/null | tr '\n' ' ')"
        echo "apparmor_parser --version: $(parser --version | head -1)"
} > "$out/kernel.txt" 2>&1

# Debian 13's abi and tunables in place of the host's AppArmor 3 ones.
cp -a "$AA/etc/apparmor.d/." /etc/apparmor.d/
# The profile as meson install writes it (dist/apparmor/nsbox.in with this
# build's bindir), and the binary where it names it.
bin=$(sed -n 's/^profile nsbox \([^ ]*\) .*/\1/p' "$NSBOX_VM_profile")
echo "$bin" > "$out/profile_attach.txt"
install -D -m 0755 "$NSBOX_VM_nsbox" "$bin"
install -m 0644 "$NSBOX_VM_profile" /etc/apparmor.d/nsbox
parser -r $STRICT /etc/apparmor.d/nsbox > "$out/load_nsbox.txt" 2>&1; echo $? > "$out/load_nsbox.rc"
# The rule is in the policy built for this kernel's features (a rule the
# kernel cannot enforce would be dropped with a warning): the binary policy
# differs without it.
{
        echo "with userns:    $(parser -S $STRICT /etc/apparmor.d/nsbox | sha256sum)"
        grep -v '^ *userns,' /etc/apparmor.d/nsbox > /tmp/nsbox-without-userns
        echo "without userns: $(parser -S $STRICT /tmp/nsbox-without-userns | sha256sum)"
} > "$out/userns_compiled.txt" 2>&1
# Ubuntu's confinement of an unprivileged process that made a user
# namespace, enforced (Debian ships it in complain mode).
sed 's/flags=(complain) //' /etc/apparmor.d/unprivileged_userns > /tmp/unprivileged_userns
grep -n 'profile\|capability\|userns' /tmp/unprivileged_userns > "$out/confine_profile.txt"
# (its dbus rule is for userspace: warned, not an error)
parser -r --warn=rule-not-enforced /tmp/unprivileged_userns > "$out/load_confine.txt" 2>&1; echo $? > "$out/load_confine.rc"
# The kernel mediates `userns`: a profile without that rule may not make one.
printf '%s\n' 'abi <abi/4.0>,' 'profile nsbox_vm_no_userns { file, signal, network, capability, }' \
        > /tmp/nsbox_vm_no_userns
parser -r /tmp/nsbox_vm_no_userns > "$out/load_no_userns.txt" 2>&1; echo $? >> "$out/load_no_userns.txt"
cat /sys/kernel/security/apparmor/profiles > "$out/profiles.txt" 2>&1

nobody $AAEXEC -p nsbox_vm_no_userns -- unshare --user true > "$out/no_userns.txt" 2>&1
echo "exit $?" >> "$out/no_userns.txt"
nobody $AAEXEC -p unprivileged_userns -- cat /proc/self/attr/current > "$out/confine_label.txt" 2>&1
nobody $AAEXEC -p unprivileged_userns -- unshare --user --map-root-user --mount true > "$out/confine_unshare.txt" 2>&1
echo "exit $?" >> "$out/confine_unshare.txt"

# Warm starts: the zygote's files where nsbox is told to find them, and two
# jobs (Debian 13's kernel has Landlock ABI 6: warm is available).
mkdir -p /opt/nsbox-vm/warm
install -m 0644 "$(dirname "$NSBOX_VM_nsbox")/warm/libnsbox_warm.so" "$(dirname "$NSBOX_VM_nsbox")/warm/zygote.py" \
        /opt/nsbox-vm/warm/
WARM="env NSBOX_WARM_DIR=/opt/nsbox-vm/warm"
jobs=/tmp/nsbox-vm-nobody/warm_jobs.jsonl
printf '%s\n' '{"id": 1, "kind": "python", "code": "import os\nprint(\"ran\", os.getpid())"}' \
        '{"id": 2, "kind": "python", "code": "import os\nprint(\"ran\", os.getpid())"}' > $jobs
chmod 0644 $jobs

# 1. nsbox confined the way Ubuntu confines it.
nobody $AAEXEC -p unprivileged_userns -- "$bin" doctor > "$out/confined_doctor.txt" 2>&1
echo $? > "$out/confined_doctor.rc"
nobody $AAEXEC -p unprivileged_userns -- "$bin" doctor --json > "$out/confined_doctor.json" 2>&1
nobody $AAEXEC -p unprivileged_userns -- "$bin" python --json -c 'print("ran")' \
        > "$out/confined_strict.json" 2> "$out/confined_strict.err"
echo $? > "$out/confined_strict.rc"
nobody $AAEXEC -p unprivileged_userns -- "$bin" python --json --isolation reduced -c 'print("ran")' \
        > "$out/confined_reduced.json" 2> "$out/confined_reduced.err"
echo $? > "$out/confined_reduced.rc"
nobody $WARM $AAEXEC -p unprivileged_userns -- "$bin" batch --warm -j 1 $jobs \
        > "$out/confined_warm.jsonl" 2> "$out/confined_warm.err"
echo $? > "$out/confined_warm.rc"

# 2. nsbox under its own profile (attached by its path): its label, doctor, a
# strict run.
nobody "$bin" python --json --wall-time 60s -c 'import time; time.sleep(4)' > /dev/null 2>&1 &
sleep 2
pid=$(pgrep -o -u 65534 -x nsbox)       # the oldest: the supervisor (the program reports its own below)
echo "$(tr '\0' ' ' < /proc/$pid/cmdline): $(cat /proc/$pid/attr/current)" > "$out/own_label.txt" 2>&1
wait
nobody "$bin" doctor > "$out/own_doctor.txt" 2>&1; echo $? > "$out/own_doctor.rc"
# The program carries nsbox's label, which allows `userns`: seccomp is what
# keeps it from making one (unshare(CLONE_NEWUSER) -> EPERM).
nobody "$bin" python --json -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.unshare(0x10000000)
print("ran", os.getpid(), open("/proc/self/attr/current").read().strip(), "unshare(CLONE_NEWUSER):", r,
      os.strerror(ctypes.get_errno()))' > "$out/own_strict.json" 2> "$out/own_strict.err"
echo $? > "$out/own_strict.rc"
nobody $WARM "$bin" batch --warm -j 1 $jobs > "$out/own_warm.jsonl" 2> "$out/own_warm.err"
echo $? > "$out/own_warm.rc"
dmesg | grep -i 'apparmor=' | tail -20 > "$out/dmesg.txt"
echo done > "$out/done"
