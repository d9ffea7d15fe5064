#!/usr/bin/env bash
# bench/warm.sh in the cgroup v2 VM (#28: "every figure on this host as it is
# ... and in the v2 VM"). Boots tests/vm's VM (tests/vm/vmboot.py: Debian 12's
# kernel, pure cgroup v2, systemd as PID 1, this machine's root filesystem
# shared read-only, 2 CPUs, 2 GiB) with KVM when a KVM guest of that kernel
# prints its banner within 20 s (a probe boot), else TCG with a loud warning
# (figures under TCG are not comparable with anything);
# inside it bench/warm-vm-guest.sh runs `bench/warm.sh N J ROUNDS`
#   (1) as root straight from the VM's systemd service (as the vm test's root:
#       nsbox asks the system manager for a scope), and
#   (2) as a user in a logind session (su -l; the learner's laptop: nsbox asks
#       the user manager), the nsbox cgroup v2 backend either way (in the VM
#       the user runs first: root's output reaches the host as it comes, so a
#       deadline that cuts the VM short still shows root's so far);
# then prints the VM (kernel, CPUs, memory, Landlock ABI), each identity's
# cgroup, doctor's cgroup line, the start and protections of one cold and one
# warm probe job's result line, which of the probes' clone3 calls carry
# CLONE_INTO_CGROUP (strace -f), whether perf stat is allowed, and warm.sh's
# output. Asserts nothing about speed; exits non-zero, saying why, when the VM
# did not finish or a warm.sh run (or a probe) failed. On a kernel with
# Landlock ABI < 6 (Debian 12's 6.1 has 2) warm starts run only through the
# build's test hook NSBOX_TEST_WARM_LANDLOCK_ABI (lowered to the kernel's ABI,
# as the vm test's warm check does): said in the output.
#   bench/warm-vm.sh [N=1000] [J=2] [ROUNDS=3]
#     NSBOX=path/to/nsbox (default build/nsbox; its warm/ beside it)
#     NSBOX_BUILD=build dir (its vm-cache/ holds the downloaded kernel)
#     NSBOX_VM_ACCEL=kvm|tcg (default: kvm when usable)
#     NSBOX_VM_SUITE=trixie (Debian 13's 6.12 kernel: Landlock ABI 6, warm starts without the hook)
#     NSBOX_VM_DEADLINE=seconds for the whole VM (default 3600)
#     NSBOX_VM_RESULTS=dir: print a kept results dir of the guest, boot nothing
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
j=${2:-2}
rounds=${3:-3}
for v in "$n" "$j" "$rounds"; do
  [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "warm-vm.sh: N, J and ROUNDS are positive integers, not '$v'" >&2; exit 2; }
done
build=$(realpath "${NSBOX_BUILD:-build}")
nsbox=$(realpath "${NSBOX:-$build/nsbox}")
exec /usr/bin/python3 - "$n" "$j" "$rounds" "$nsbox" "$build" "$PWD" <<'PY'
import fcntl, json, os, shutil, subprocess, sys, time

n, j, rounds, nsbox, build, source = sys.argv[1:]
sys.path.insert(0, os.path.join(source, "tests", "vm"))
import vmboot  # noqa: E402  (the vm test's boot: kernel, initramfs, qemu)

WARN = "!" * 78


def say(msg=""):
    print(msg, flush=True)


def die(msg):
    say("warm-vm.sh: FAILED: " + msg)
    print("warm-vm.sh: FAILED: " + msg.splitlines()[0], file=sys.stderr)
    sys.exit(1)


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        if default is None:
            raise
        return default


def kvm_problem(vmlinuz):
    """None when a KVM guest runs this kernel, else why not: /dev/kvm must
    answer (KVM_GET_API_VERSION) and the kernel must print its banner within
    20 s (a KVM without VMX/SVM, e.g. the PVM module kvm_pvm, runs only
    kernels built as its guests: a stock kernel hangs in its first steps)."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return "/dev/kvm: %s" % e.strerror
    try:
        v = fcntl.ioctl(fd, 0xAE00)     # KVM_GET_API_VERSION
        if v != 12:
            return "/dev/kvm: KVM API version %d, not 12" % v
    except OSError as e:
        return "/dev/kvm: KVM_GET_API_VERSION: %s" % e.strerror
    finally:
        os.close(fd)
    cmd = ["qemu-system-x86_64", "-accel", "kvm", "-m", "256", "-smp", "1", "-nographic", "-no-reboot",
           "-nodefaults", "-display", "none", "-serial", "stdio", "-kernel", vmlinuz,
           "-append", "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1 loglevel=7"]
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen, t0 = b"", time.monotonic()
    try:
        os.set_blocking(p.stdout.fileno(), False)
        while time.monotonic() - t0 < 20 and b"Linux version" not in seen and p.poll() is None:
            time.sleep(0.2)
            seen += p.stdout.read() or b""
    finally:
        p.kill()
        p.wait()
    if b"Linux version" in seen:
        return None
    pvm = " (this host's KVM is kvm_pvm: no VMX/SVM)" if os.path.isdir("/sys/module/kvm_pvm") else ""
    return "a KVM guest of %s printed no banner within 20 s%s" % (os.path.basename(vmlinuz), pvm)


def loadavg():
    return " ".join(read("/proc/loadavg").split()[:3])


for f in (nsbox, os.path.join(os.path.dirname(nsbox), "warm", "libnsbox_warm.so")):
    if not os.path.exists(f):
        die("%s missing (build first: ninja -C build)" % f)
if not shutil.which("qemu-system-x86_64"):
    die("qemu-system-x86_64 missing (scripts/deps installs qemu-system-x86)")

suite = os.environ.get("NSBOX_VM_SUITE")
archive = vmboot.Archive(vmboot.cache_dir(build), suite) if suite else None
accel = os.environ.get("NSBOX_VM_ACCEL")
why = None
if not accel:
    why = kvm_problem(vmboot.fetch_kernel(vmboot.cache_dir(build), archive)[0])
    accel = "tcg" if why else "kvm"
os.environ["NSBOX_VM_ACCEL"] = accel      # vmboot.accel() reads it
if accel != "kvm":
    warning = "\n".join([WARN, "warm-vm.sh: WARNING: the VM runs under %s, not KVM (%s):" % (
        accel.upper(), why or "NSBOX_VM_ACCEL=%s" % accel),
        "  every figure below is an emulated CPU's and NOT COMPARABLE with the host's or KVM's.", WARN])
    say(warning)
    print(warning, file=sys.stderr)

deadline = int(os.environ.get("NSBOX_VM_DEADLINE", "3600"))
logs = os.path.join(build, "meson-logs")
console = os.path.join(logs if os.path.isdir(logs) else build, "warm-vm-console.log")

say("== warm-vm.sh: bench/warm.sh %s %s %s in the cgroup v2 VM (%s); %s" % (n, j, rounds, accel, nsbox))
say("host: load average at the start %s; %s, %d CPUs" % (loadavg(), os.uname().release, os.cpu_count()))
params = {"nsbox": nsbox, "guest": "../../bench/warm-vm-guest.sh", "n": n, "j": j, "rounds": rounds}
t0, timeout = time.monotonic(), None
try:
    if os.environ.get("NSBOX_VM_RESULTS"):     # a kept results dir: print it, boot nothing
        out, seconds = os.environ["NSBOX_VM_RESULTS"], 0
    else:
        out, seconds = vmboot.boot(source, build, params, deadline, console, archive)
except vmboot.VMTimeout as e:      # what the guest wrote by then is shown, then it fails
    out, seconds, timeout = e.results, time.monotonic() - t0, str(e)
except RuntimeError as e:
    die("the VM: %s" % e)
try:
    if os.environ.get("NSBOX_VM_RESULTS"):
        say("host: load average now %s; printed from the kept results dir %s" % (loadavg(), out))
    else:
        say("host: load average at the end %s; qemu ran %.0f s" % (loadavg(), seconds))
    if not os.path.exists(os.path.join(out, "sysinfo.txt")):
        die("the guest wrote nothing (console: %s); its log:\n%s" % (console, read(os.path.join(out, "guest.log"), "")[-3000:]))
    info = dict(line.split(" ", 1) for line in read(os.path.join(out, "sysinfo.txt")).splitlines() if " " in line)
    say("VM: kernel %s (%s), %s CPUs (qemu -smp), %.0f MiB memory (MemTotal; qemu -m 2048), %s;"
        % (info.get("kernel"), "Debian 12" if not suite else "Debian " + suite, info.get("cpus"),
           int(info.get("memory_kib", 0)) / 1024, info.get("cpu_model")))
    say("    /sys/fs/cgroup %s (controllers: %s), PID 1 %s, Landlock ABI %s, %s, perf_event_paranoid %s"
        % (info.get("cgroup_fs"), info.get("cgroup_controllers"), info.get("pid1"), info.get("landlock_abi"),
           info.get("hyperfine"), info.get("perf_event_paranoid")))
    hook = info.get("warm_landlock_hook", "none")
    if hook != "none":
        say("    NOTE: Landlock ABI %s < 6: warm starts ran only through the test hook"
            " NSBOX_TEST_WARM_LANDLOCK_ABI=%s (this build has test hooks); the warm jobs lack"
            " ABI 6's abstract-socket and signal scoping (NSBOX_VM_SUITE=trixie boots a 6.12 kernel"
            " with ABI 6)" % (info.get("landlock_abi"), hook))
    failed = []
    for who, title in (("root", "(1) root, straight from the VM's systemd service (nsbox-vm-test.service)"),
                       ("user", "(2) a user in a logind session (su -l)")):
        d = os.path.join(out, who)
        say("")
        say("== %s" % title)
        if not os.path.exists(os.path.join(d, "cgroup.txt")):
            failed.append("%s: no run at all" % who)
            continue
        say("   %s; cgroup %s" % (read(os.path.join(d, "id.txt")).split()[0],
                                 read(os.path.join(d, "cgroup.txt")).strip()))
        for line in read(os.path.join(d, "doctor.txt"), "").splitlines():
            if line.split()[1:2] == ["cgroup"] or line.startswith("warm starts"):
                say("   doctor: " + line.strip())
        for mode in ("cold", "warm"):
            text = read(os.path.join(d, "probe_%s.jsonl" % mode), "")
            try:
                r = json.loads(text)
                p = r["protections"]
                say("   probe %s job: start %s%s, status %s; protections memory %s, pids %s, cpu_time %s,"
                    " landlock %s, net %s, cgroup_ns %s" % (
                        mode, r.get("start"), " (%s)" % r["start_reason"] if r.get("start_reason") else "",
                        r.get("status"), p.get("memory"), p.get("pids"), p.get("cpu_time"), p.get("landlock"),
                        p.get("net"), p.get("cgroup_ns")))
                if r.get("status") != "exited" or r.get("start") != mode:
                    failed.append("%s: the %s probe job: %s" % (who, mode, text.strip()[:600]))
            except (ValueError, KeyError, TypeError):
                failed.append("%s: the %s probe job wrote no result line: %r; stderr %r" % (
                    who, mode, text[-300:], read(os.path.join(d, "probe_%s.err" % mode), "")[-300:]))
        for mode in ("cold", "warm"):
            trace = read(os.path.join(d, "strace_%s.txt" % mode), "")
            calls = [line for line in trace.splitlines() if "clone3(" in line and "flags=" in line]
            if calls:
                # a sandbox (cold, or the warm zygote's) has its own net namespace;
                # a warm job's init, cloned by the zygote, shares the zygote's
                say("   strace -f of the %s probe, its clone3 calls: %s" % (mode, "; ".join(
                    "%s %s" % ("sandbox" + (" (the zygote's)" if mode == "warm" else "")
                               if "CLONE_NEWNET" in c else "warm job init",
                               "born in its cgroup (CLONE_INTO_CGROUP)" if "CLONE_INTO_CGROUP" in c
                               else "without CLONE_INTO_CGROUP") for c in calls)))
        say("   perf stat: %s" % read(os.path.join(d, "perf.txt"), "?").strip().replace(":\n", ": ").replace("\n", " | "))
        if not os.path.exists(os.path.join(d, "warm.rc")):
            partial = read(os.path.join(d, "warm.out"), "").rstrip("\n")
            if partial:
                say("   (unfinished) warm.sh's output so far:\n" + partial)
            log = read(os.path.join(out, "guest.log"), "")[-1500:]
            failed.append("%s: no finished warm.sh run%s" % (who, " (guest log: %s)" % log if log else ""))
            continue
        t = float(read(os.path.join(d, "t_end"))) - float(read(os.path.join(d, "t_start")))
        say("   VM load average: %s before warm.sh, %s after (%.0f s)"
            % (read(os.path.join(d, "load_before.txt")).strip(), read(os.path.join(d, "load_after.txt")).strip(), t))
        say(read(os.path.join(d, "warm.out")).rstrip("\n"))
        err = read(os.path.join(d, "warm.err"), "").rstrip("\n")
        if err:
            say("   warm.sh stderr:\n" + err)
        rc = read(os.path.join(d, "warm.rc")).strip()
        if rc != "0":
            failed.append("%s: bench/warm.sh exited %s: %s" % (who, rc, err[-1000:]))
    say("")
    if timeout:
        failed.insert(0, timeout + " (NSBOX_VM_DEADLINE)")
    elif not os.path.exists(os.path.join(out, "done")):
        failed.append("the guest did not finish (guest log: %s)" % read(os.path.join(out, "guest.log"), "")[-1500:])
    if accel != "kvm":
        say(warning)
    if failed:
        die("\n".join(failed))
finally:
    if not os.environ.get("NSBOX_VM_RESULTS"):
        shutil.rmtree(out, ignore_errors=True)
PY
