"""tests/vm/vmboot.py — boot Debian 12's 6.1 kernel under qemu with this
machine's root filesystem shared read-only over 9p, run tests/vm/guest.sh in
it as PID 1 systemd's test unit, and hand back what it wrote.

Nothing is installed on the host: the kernel package is fetched with
`apt-get download` and unpacked with `dpkg-deb -x` into a cache directory
(the build dir's vm-cache/), never through dpkg -i. The VM is always killed:
a deadline on the whole boot, and a finally/atexit kill of the qemu process.
"""
import atexit
import glob
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


def kernel_package():
    """The package linux-image-amd64 points at (Debian 12: linux-image-6.1.0-N-amd64)."""
    out = run(["apt-cache", "depends", "linux-image-amd64"]).stdout
    for line in out.splitlines():
        w = line.split()
        if len(w) == 2 and w[0] == "Depends:" and w[1].startswith("linux-image-6.1"):
            return w[1]
    raise RuntimeError("apt-cache depends linux-image-amd64 names no linux-image-6.1 package:\n" + out)


def fetch_kernel(cache):
    """Unpack the kernel package into cache/<package>/ (once); return (vmlinuz, modules dir)."""
    pkg = kernel_package()
    root = os.path.join(cache, pkg)
    if not os.path.isdir(os.path.join(root, "boot")):
        dl = os.path.join(cache, "dl")
        shutil.rmtree(dl, ignore_errors=True)
        os.makedirs(dl)
        os.chmod(dl, 0o777)     # apt's _apt user downloads into it
        run(["apt-get", "download", pkg], cwd=dl)
        debs = glob.glob(os.path.join(dl, pkg + "_*.deb"))
        if len(debs) != 1:
            raise RuntimeError("apt-get download %s left %r" % (pkg, debs))
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        run(["dpkg-deb", "-x", debs[0], tmp])
        os.rename(tmp, root)
        shutil.rmtree(dl, ignore_errors=True)
    vmlinuz = glob.glob(os.path.join(root, "boot", "vmlinuz-*"))
    mods = glob.glob(os.path.join(root, "lib", "modules", "*"))
    if len(vmlinuz) != 1 or len(mods) != 1:
        raise RuntimeError("unexpected layout of %s: %r %r" % (root, vmlinuz, mods))
    return vmlinuz[0], mods[0]


def build_initramfs(moddir, out):
    """busybox-static, the modules, /init and the test units, as a newc cpio."""
    with tempfile.TemporaryDirectory(prefix="nsbox-vm-initrd-") as d:
        for sub in ("bin", "proc", "sys", "dev", "modules", "units"):
            os.makedirs(os.path.join(d, sub))
        shutil.copy("/bin/busybox", os.path.join(d, "bin", "busybox"))
        os.symlink("busybox", os.path.join(d, "bin", "sh"))     # /init's #! line
        for m in MODULES:
            found = glob.glob(os.path.join(moddir, "kernel", "**", m + ".ko"), recursive=True)
            if len(found) != 1:
                raise RuntimeError("module %s: found %r in %s" % (m, found, moddir))
            shutil.copy(found[0], os.path.join(d, "modules", m + ".ko"))
        shutil.copy(os.path.join(HERE, "initramfs-init"), os.path.join(d, "init"))
        os.chmod(os.path.join(d, "init"), 0o755)
        for u in ("nsbox-vm.target", "nsbox-vm-test.service"):
            shutil.copy(os.path.join(HERE, u), os.path.join(d, "units", u))
        files = run(["find", "."], cwd=d).stdout
        with open(out, "wb") as f:
            subprocess.run(["busybox", "cpio", "-o", "-H", "newc"], cwd=d, input=files.encode(), stdout=f,
                           stderr=subprocess.DEVNULL, check=True)


def accel():
    """TCG, as on CI (no /dev/kvm needed); NSBOX_VM_ACCEL=kvm for a quicker local loop."""
    return os.environ.get("NSBOX_VM_ACCEL", "tcg")


def boot(source, build, params, deadline_s, console_log):
    """Boot, run the guest side, return (results dir, seconds). The caller removes the dir."""
    cache = os.path.join(build, "vm-cache")
    os.makedirs(cache, exist_ok=True)
    vmlinuz, moddir = fetch_kernel(cache)
    initrd = os.path.join(cache, "initramfs.cpio")
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
        raise RuntimeError("the VM did not power off within %d s (console: %s)" % (deadline_s, console_log))
    finally:
        kill()
    if proc.returncode != 0:
        raise RuntimeError("qemu exited %d: %s" % (proc.returncode, out.decode(errors="replace")[-2000:]))
    return results, time.monotonic() - t0
