"""What a run may leave on the host, and how to see that it left nothing.

Shared by the hostile catalogue (test_hostile.py), the fault tests
(test_faults.py) and the soak (tests/soak/soak.py). Stdlib only.

Other nsbox runs may share this machine (other users, CI jobs), so every
check is scoped to what *these* runs own: run cgroups carry the supervisor's
pid in their name (`nsbox-<pid>-<serial>`, `nsbox-sup-<pid>`), each hostile
program carries a unique marker in its command line, and the files a
sandbox could leave on the host would belong to the sandbox's host uid.
"""
import os
import re
import subprocess
import time

from nsbtest import processes_with

# The host uid a root caller's sandbox runs as (ns/ns.h NS_ROOT_MAPPED_UID);
# a non-root caller's sandbox runs as the caller itself.
ROOT_MAPPED_UID = 0x70000000
RUN_CGROUP = re.compile(r"^nsbox-(?:sup-)?(\d+)(?:-\d+)?$")
TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def sandbox_host_uid():
    return ROOT_MAPPED_UID if os.geteuid() == 0 else os.geteuid()


def _cgroup_mounts():
    """{controller-or-'':mount point} for the cgroup hierarchies mounted here."""
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            fields, tail = pre.split(), post.split()
            if tail[0] == "cgroup2":
                mounts.setdefault("", fields[4])
            elif tail[0] == "cgroup":
                for opt in tail[2].split(","):
                    mounts.setdefault(opt, fields[4])
    return mounts


def own_cgroup_dirs():
    """Our own cgroup directory in every hierarchy: where nsbox (our child,
    in the same cgroups) creates its run cgroups."""
    mounts = _cgroup_mounts()
    dirs = set()
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in (ctrls.split(",") if ctrls else [""]):
                if c in mounts:
                    d = os.path.join(mounts[c], path.lstrip("/"))
                    if os.path.isdir(d):
                        dirs.add(os.path.normpath(d))
    return sorted(dirs)


def run_cgroups(pids=None):
    """Run cgroups beneath our own, optionally only those of supervisors @pids."""
    found = []
    for d in own_cgroup_dirs():
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            m = RUN_CGROUP.match(n)
            if m and (pids is None or int(m.group(1)) in pids) and os.path.isdir(os.path.join(d, n)):
                found.append(os.path.join(d, n))
    return sorted(found)


def wait_run_cgroups_empty(pids, timeout=10):
    """Wait until the run cgroups of supervisors @pids hold no task.

    A SIGKILLed nsbox's sandbox dies with it, but asynchronously: the
    kernel tears the pid namespace down after the supervisor is reaped. A
    later run reaps only cgroups that are empty by then (cg_reap_stale never
    kills), so a test that checks the reaping waits for the teardown first.
    A sandbox that never dies is still reported by Snapshot.leaks()."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = False
        for d in run_cgroups(set(pids)):
            try:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    busy = busy or bool(f.read().strip())
            except OSError:
                pass
        if not busy:
            return
        time.sleep(0.02)


def stale_run_cgroups():
    """Run cgroups whose supervisor no longer exists."""
    return [p for p in run_cgroups() if not os.path.exists("/proc/%s" % RUN_CGROUP.match(os.path.basename(p)).group(1))]


def mounts():
    """Our mount table as (mount point, fs type, source, options) tuples."""
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            fields, tail = pre.split(), post.split()
            out.add((fields[4], tail[0], tail[1], fields[5]))
    return frozenset(out)


def temp_entries():
    """{path: owner uid} of the top-level entries of the host's temp dirs."""
    out = {}
    for d in TEMP_DIRS:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            p = os.path.join(d, n)
            try:
                out[p] = os.lstat(p).st_uid
            except OSError:
                pass
    return out


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class Snapshot:
    """The host before some runs; leaks() compares the host after them."""

    def __init__(self):
        self.mounts = mounts()
        self.temp = temp_entries()

    def leaks(self, supervisor_pids=(), markers=()):
        """A list of what the runs left behind; [] when nothing."""
        found = []
        for p in run_cgroups(set(supervisor_pids)):
            found.append("cgroup left: " + p)
        # process exit is asynchronous to the parent's wait: allow a moment
        deadline = time.monotonic() + 2
        alive = {m: processes_with(m) for m in markers}
        while any(alive.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = {m: processes_with(m) for m in markers}
        for m, pids in alive.items():
            if pids:
                found.append("process survived: %s %s" % (m, pids))
        now = mounts()
        for m in sorted(now - self.mounts):
            found.append("mount appeared: %r" % (m,))
        for m in sorted(self.mounts - now):
            found.append("mount vanished: %r" % (m,))
        uid = sandbox_host_uid()
        for p, owner in sorted(temp_entries().items()):
            if p in self.temp:
                continue
            if (owner == uid and uid != os.geteuid()) or any(m in p for m in markers):
                found.append("temporary file left: %s (uid %d)" % (p, owner))
        return found


def kill_marked(markers):
    """Test cleanup after a failure: SIGKILL what carries a marker."""
    for m in markers:
        for pid in processes_with(m):
            try:
                os.kill(pid, 9)
            except OSError:
                pass


def kill_and_reap(proc):
    """SIGKILL a started nsbox and reap it without waiting for its pipes to
    close: a sandbox that wrongly survived it would hold them open forever
    (leaks() then reports it)."""
    proc.kill()
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()


def start(argv, **kw):
    """Popen with pipes: the caller needs the supervisor's pid."""
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
