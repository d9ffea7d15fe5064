"""tests/vm/vmboot.py — boot Debian 12's 6.1 kernel (or another Debian
kernel package: Archive) under qemu with this machine's root filesystem
shared read-only over 9p, run a guest script of tests/vm (guest.sh unless
told) in it as PID 1 systemd's test unit, and hand back what it wrote.

Nothing is installed on the host: packages are fetched with `apt-get
download` and unpacked with `dpkg-deb -x` into a cache directory (the build
dir's vm-cache/), never through dpkg -i; another suite's packages (Archive)
through apt state kept in that cache, never the host's /etc/apt. The VM is
always killed: a deadline on the whole boot, and a finally/atexit kill of the
qemu process.
"""
import atexit
import glob
import lzma
import os
import shutil
import signal
import subprocess
import tempfile
import time

MODULES = ["virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
           "netfs", "fscache", "9pnet", "9pnet_virtio", "9p", "overlay"]
HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def kernel_package(apt=()):
    """The package linux-image-amd64 points at (Debian 12: linux-image-6.1.0-N-amd64)."""
    out = run(["apt-cache", *apt, "depends", "linux-image-amd64"]).stdout
    for line in out.splitlines():
        w = line.split()
        if len(w) == 2 and w[0] == "Depends:" and w[1].startswith("linux-image-6."):
            return w[1]
    raise RuntimeError("apt-cache depends linux-image-amd64 names no linux-image-6.* package:\n" + out)


def unpack(cache, pkgs, name, apt=()):
    """Download @pkgs with apt-get (options @apt) and unpack them all into
    cache/@name/ (once: the directory is renamed into place when complete)."""
    root = os.path.join(cache, name)
    if os.path.isdir(root):
        return root
    dl = os.path.join(cache, "dl")
    shutil.rmtree(dl, ignore_errors=True)
    os.makedirs(dl)
    os.chmod(dl, 0o777)     # apt's _apt user downloads into it
    run(["apt-get", *apt, "download", *pkgs], cwd=dl)
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for pkg in pkgs:
        debs = glob.glob(os.path.join(dl, pkg + "_*.deb"))
        if len(debs) != 1:
            raise RuntimeError("apt-get download %s left %r" % (pkg, debs))
        run(["dpkg-deb", "-x", debs[0], tmp])
    os.rename(tmp, root)
    shutil.rmtree(dl, ignore_errors=True)
    return root


class Archive:
    """Another Debian suite (e.g. trixie) of deb.debian.org, for downloading
    only: its own sources.list, lists and status under cache/apt-SUITE/, passed
    to apt-get and apt-cache as -o options. The host's apt is not touched."""

    def __init__(self, cache, suite):
        self.suite = suite
        d = os.path.join(cache, "apt-" + suite)
        for sub in ("lists/partial", "archives/partial", "etc", "parts.d"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        with open(os.path.join(d, "etc", "sources.list"), "w") as f:
            f.write("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                    "http://deb.debian.org/debian %s main\n" % suite)
        open(os.path.join(d, "status"), "a").close()
        self.opts = ["-o", "Dir::Etc::sourcelist=" + os.path.join(d, "etc", "sources.list"),
                     "-o", "Dir::Etc::sourceparts=" + os.path.join(d, "parts.d"),
                     "-o", "Dir::State::Lists=" + os.path.join(d, "lists"),
                     "-o", "Dir::State::status=" + os.path.join(d, "status"),
                     "-o", "Dir::Cache=" + d, "-o", "APT::Architecture=amd64"]
        stamp = os.path.join(d, "updated")
        # the lists once a day: a kernel package named by a stale list is gone from the pool
        if not os.path.exists(stamp) or time.time() - os.path.getmtime(stamp) > 86400:
            run(["apt-get", *self.opts, "update"])
            open(stamp, "w").close()


def fetch_kernel(cache, archive=None):
    """Unpack the kernel package into cache/<package>/ (once); return (vmlinuz, modules dir)."""
    apt = archive.opts if archive else ()
    pkg = kernel_package(apt)
    root = unpack(cache, [pkg], pkg, apt)
    vmlinuz = glob.glob(os.path.join(root, "boot", "vmlinuz-*"))
    # Debian 12 ships /lib/modules, Debian 13 /usr/lib/modules
    mods = glob.glob(os.path.join(root, "lib", "modules", "*")) + \
        glob.glob(os.path.join(root, "usr", "lib", "modules", "*"))
    if len(vmlinuz) != 1 or len(mods) != 1:
        raise RuntimeError("unexpected layout of %s: %r %r" % (root, vmlinuz, mods))
    return vmlinuz[0], mods[0]


def builtin(moddir, m):
    """Is module @m built into the kernel (modules.builtin)?"""
    try:
        with open(os.path.join(moddir, "modules.builtin")) as f:
            return any(os.path.basename(line.strip()) == m + ".ko" for line in f)
    except FileNotFoundError:
        return False


def build_initramfs(moddir, out):
    """busybox-static, the modules, /init and the test units, as a newc cpio."""
    with tempfile.TemporaryDirectory(prefix="nsbox-vm-initrd-") as d:
        for sub in ("bin", "proc", "sys", "dev", "modules", "units"):
            os.makedirs(os.path.join(d, sub))
        shutil.copy("/bin/busybox", os.path.join(d, "bin", "busybox"))
        os.symlink("busybox", os.path.join(d, "bin", "sh"))     # /init's #! line
        for m in MODULES:
            found = glob.glob(os.path.join(moddir, "kernel", "**", m + ".ko"), recursive=True) + \
                glob.glob(os.path.join(moddir, "kernel", "**", m + ".ko.xz"), recursive=True)
            if not found and (builtin(moddir, m) or m == "fscache"):
                continue        # /init skips a module it does not find (6.12's fscache is part of netfs)
            if len(found) != 1:
                raise RuntimeError("module %s: found %r in %s" % (m, found, moddir))
            # busybox insmod takes a plain .ko (Debian 13 compresses them)
            opener = lzma.open if found[0].endswith(".xz") else open
            with opener(found[0], "rb") as src, open(os.path.join(d, "modules", m + ".ko"), "wb") as dst:
                shutil.copyfileobj(src, dst)
        shutil.copy(os.path.join(HERE, "initramfs-init"), os.path.join(d, "init"))
        os.chmod(os.path.join(d, "init"), 0o755)
        for u in ("nsbox-vm.target", "nsbox-vm-test.service"):
            shutil.copy(os.path.join(HERE, u), os.path.join(d, "units", u))
        files = run(["find", "."], cwd=d).stdout
        with open(out, "wb") as f:
            subprocess.run(["busybox", "cpio", "-o", "-H", "newc"], cwd=d, input=files.encode(), stdout=f,
                           stderr=subprocess.DEVNULL, check=True)


class VMTimeout(RuntimeError):
    """The VM did not power off in time; .results is what its guest had
    written by then (the caller removes it)."""

    def __init__(self, msg, results):
        super().__init__(msg)
        self.results = results


def accel():
    """TCG, as on CI (no /dev/kvm needed); NSBOX_VM_ACCEL=kvm for a quicker local loop."""
    return os.environ.get("NSBOX_VM_ACCEL", "tcg")


def cache_dir(build):
    cache = os.path.join(build, "vm-cache")
    os.makedirs(cache, exist_ok=True)
    return cache


def boot(source, build, params, deadline_s, console_log, archive=None):
    """Boot (the kernel of @archive's suite, else the host's), run the guest
    side (params["guest"], a script of tests/vm; guest.sh by default), return
    (results dir, seconds). The caller removes the dir."""
    cache = cache_dir(build)
    vmlinuz, moddir = fetch_kernel(cache, archive)
    initrd = os.path.join(cache, "initramfs-%s.cpio" % os.path.basename(moddir))
    build_initramfs(moddir, initrd)
    results = tempfile.mkdtemp(prefix="nsbox-vm-out-")
    os.chmod(results, 0o777)
    cmdline = ["console=ttyS0", "panic=-1", "quiet", "loglevel=4",
               # pure cgroup v2, whatever systemd's compiled-in default
               "systemd.unified_cgroup_hierarchy=1", "systemd.unit=nsbox-vm.target",
               "systemd.show_status=0", "nsbox_vm.source=" + source]
    cmdline += ["nsbox_vm.%s=%s" % kv for kv in params.items()]
    cmd = ["qemu-system-x86_64", "-accel", accel(), "-m", "2048", "-smp", "2", "-nographic",
           "-no-reboot", "-nodefaults", "-display", "none", "-serial", "file:" + console_log,
           "-kernel", vmlinuz, "-initrd", initrd, "-append", " ".join(cmdline),
           "-device", "virtio-rng-pci",
           "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
           "-virtfs", "local,path=%s,mount_tag=results,security_model=none,multidevs=remap" % results]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def kill():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    atexit.register(kill)
    try:
        out, _ = proc.communicate(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        kill()
        raise VMTimeout("the VM did not power off within %d s (console: %s)" % (deadline_s, console_log), results)
    finally:
        kill()
    if proc.returncode != 0:
        raise RuntimeError("qemu exited %d: %s" % (proc.returncode, out.decode(errors="replace")[-2000:]))
    return results, time.monotonic() - t0
