"""A single-node Slurm cluster for one test, from Debian's packages.

munged, slurmctld and slurmd run in the foreground as children of the test,
each in a session of its own, with every file (key, sockets, state, spool,
logs, slurm.conf) under one temporary directory. The scheduler's plugins are
the ones that need no cgroup: proctrack/linuxproc and task/none, so the
cluster runs on a host whose cgroups are hybrid (memory and pids on v1, an
empty v2), where proctrack/cgroup would not start.

stop() cancels what is left, stops the daemons (TERM, then KILL), then kills
whatever process of the cluster is still there (slurmstepd, in a session of
its own, and the job processes it started: found by a marker in their
environment), so nothing is left running. If the test process dies without
calling stop() (even by SIGKILL), the daemons get SIGTERM (PR_SET_PDEATHSIG)
and a guardian process started first sees its stdin close and does the same
clean-up, then removes the directory.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
            "BOOT_FAIL", "DEADLINE"}


def _die_with_parent():
    """In the daemon, before exec: SIGTERM when the test process dies, even
    by SIGKILL (a meson timeout), so no daemon outlives it."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def cluster_pids(base, sids=()):
    """Processes of the cluster at @base: in a daemon's session, or carrying
    its marker in their environment (slurmstepd has a session of its own;
    the jobs inherit the marker), and their descendants."""
    marker = ("NSBOX_TEST_SLURM=" + base).encode()
    parent, found = {}, set()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        pid = int(d)
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                parent[pid] = int(f.read().rsplit(b")", 1)[1].split()[1])
            if os.getsid(pid) in sids:
                found.add(pid)
                continue
            with open("/proc/%d/environ" % pid, "rb") as f:
                if marker in f.read().split(b"\0"):
                    found.add(pid)
        except (OSError, ValueError, IndexError):
            pass
    grew = True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in found and pid not in found:
                found.add(pid)
                grew = True
    return sorted(found)


def kill_cluster(base, sids=()):
    """SIGKILL every process of the cluster until none is left (5 s at most);
    the pids still there."""
    for _ in range(50):
        left = cluster_pids(base, sids)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    return cluster_pids(base, sids)


def guard(base, remove):
    """The guardian: waits for EOF on stdin (the test closed it, or died,
    even by SIGKILL), then kills whatever of the cluster is left and
    removes the directory @remove (the cluster's, or the test's that holds it)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass
    kill_cluster(base)
    shutil.rmtree(remove, ignore_errors=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, pred, timeout, interval=0.1):
    """pred() until it is truthy, at most @timeout seconds; its value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))
        time.sleep(interval)


class SlurmCluster:
    NODE = "nsboxnode"

    def __init__(self, base, cpus=None, owner_dir=None):
        """@base: the cluster's directory; @owner_dir: what the guardian
        removes if the test dies (default @base; a directory holding it)."""
        self.base = base
        self.owner_dir = owner_dir or base
        self.cpus = cpus or os.cpu_count() or 1   # more than the host has: the node is drained
        self.procs = {}
        self.sids = set()
        self.guardian = None
        self.conf = os.path.join(base, "etc", "slurm.conf")
        self.munge_socket = os.path.join(base, "munge", "munge.socket")
        self.logs = {name: os.path.join(base, "log", name + ".log") for name in ("munged", "slurmctld", "slurmd")}

    # -- set-up ------------------------------------------------------------
    def _write_conf(self):
        host = socket.gethostname().split(".")[0]
        d = {k: os.path.join(self.base, k) for k in ("state", "spool", "run", "etc", "log")}
        for p in d.values():
            os.makedirs(p, mode=0o755, exist_ok=True)
        lines = [
            "ClusterName=nsboxtest",
            "SlurmctldHost=%s(127.0.0.1)" % host,
            "SlurmctldPort=%d" % free_port(),
            "SlurmdPort=%d" % free_port(),
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "AuthInfo=socket=%s" % self.munge_socket,
            "StateSaveLocation=%s" % d["state"],
            "SlurmdSpoolDir=%s" % d["spool"],
            "SlurmctldPidFile=%s/slurmctld.pid" % d["run"],
            "SlurmdPidFile=%s/slurmd.pid" % d["run"],
            "SlurmctldLogFile=%s" % self.logs["slurmctld"],
            "SlurmdLogFile=%s" % self.logs["slurmd"],
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # No cgroup plugin: this host's cgroups are hybrid.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "MpiDefault=none",
            "ReturnToService=2",
            "KillWait=10",
            "MinJobAge=3600",
            "SchedulerParameters=sched_interval=1",
            "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN" % (self.NODE, host, self.cpus),
            "PartitionName=test Nodes=%s Default=YES MaxTime=INFINITE State=UP" % self.NODE,
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def _spawn(self, name, argv):
        log = open(os.path.join(self.base, "log", name + ".stdio"), "wb")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, env=self.env(), preexec_fn=_die_with_parent)
        log.close()
        self.procs[name] = p
        self.sids.add(p.pid)    # start_new_session: its pid is its session id
        return p

    def env(self):
        e = dict(os.environ)
        e["SLURM_CONF"] = self.conf
        # Inherited by slurmstepd (a session of its own) and by the jobs
        # (sbatch exports the environment): how stop() finds them.
        e["NSBOX_TEST_SLURM"] = self.base
        return e

    def start(self):
        os.makedirs(self.base, exist_ok=True)
        # Started first, in a session of its own and without the marker:
        # whatever ends the test, the guardian cleans up after it.
        self.guardian = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--guard", self.base,
                                          self.owner_dir], stdin=subprocess.PIPE, start_new_session=True)
        mdir = os.path.join(self.base, "munge")
        os.makedirs(mdir, mode=0o700, exist_ok=True)
        os.makedirs(os.path.join(self.base, "log"), exist_ok=True)
        key = os.path.join(mdir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o600)
        self._write_conf()
        # --force: munged refuses a socket directory it did not make itself
        # under a world-writable /var/tmp; it is ours, 0700.
        self._spawn("munged", ["/usr/sbin/munged", "--foreground", "--force", "--socket=" + self.munge_socket,
                               "--key-file=" + key, "--pid-file=" + os.path.join(mdir, "munged.pid"),
                               "--seed-file=" + os.path.join(mdir, "munged.seed"),
                               "--log-file=" + self.logs["munged"]])
        wait_for("munged's socket", lambda: self._alive("munged") and os.path.exists(self.munge_socket), 30)
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i", "-f", self.conf])
        self._spawn("slurmd", ["/usr/sbin/slurmd", "-D", "-f", self.conf, "-N", self.NODE])
        wait_for("the node to be idle", lambda: self._alive("slurmctld") and self._alive("slurmd") and
                 "idle" in self.run(["sinfo", "-h", "-n", self.NODE, "-o", "%T"], check=False).stdout, 90, 0.5)

    def _alive(self, name):
        p = self.procs[name]
        if p.poll() is not None:
            raise AssertionError("%s exited with %s" % (name, p.returncode))
        return True

    # -- use ---------------------------------------------------------------
    def run(self, argv, check=True):
        r = subprocess.run(argv, env=self.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        if check and r.returncode != 0:
            raise AssertionError("%s: exit %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
        return r

    def array_states(self, jobid):
        """{task index: JobState} of every task of array @jobid."""
        out = self.run(["scontrol", "-o", "show", "job", str(jobid)]).stdout
        states = {}
        for line in out.splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if "ArrayTaskId" in fields and fields["ArrayTaskId"].isdigit():
                states[int(fields["ArrayTaskId"])] = fields["JobState"]
            elif "ArrayTaskId" in fields:
                # a pending remainder such as "2-3" or "[2-3]"
                spec = fields["ArrayTaskId"].strip("[]").split("%")[0]
                for part in spec.split(","):
                    lo, _, hi = part.partition("-")
                    for k in range(int(lo), int(hi or lo) + 1):
                        states[k] = fields["JobState"]
        return states

    def wait_array(self, jobid, n, timeout):
        """Until every one of the @n tasks is in a terminal state; the states."""
        def done():
            s = self.array_states(jobid)
            return s if len(s) == n and all(v in TERMINAL for v in s.values()) else None
        return wait_for("array job %s to end" % jobid, done, timeout, 0.5)

    def describe(self):
        """Everything a failure needs: the daemons' logs and the queue."""
        parts = []
        for name in ("munged", "slurmctld", "slurmd"):
            for path in (self.logs[name], os.path.join(self.base, "log", name + ".stdio")):
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        parts.append("==== %s ====\n%s" % (path, f.read()[-20000:]))
        try:
            parts.append("==== squeue ====\n" + self.run(["squeue", "-a"], check=False).stdout)
        except Exception as e:  # the controller may be the thing that failed
            parts.append("squeue: %s" % e)
        return "\n".join(parts)

    # -- tear-down ---------------------------------------------------------
    def _leftover_pids(self):
        return cluster_pids(self.base, self.sids)

    def stop(self):
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.run(["scancel", "--full", "--partition=test"], check=False)
            except Exception:
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None or p.poll() is not None:
                continue
            p.terminate()
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        # slurmstepd runs in a session of its own, and the jobs under it.
        left = kill_cluster(self.base, self.sids)
        if self.guardian is not None:
            self.guardian.stdin.close()
            self.guardian.wait(30)
            self.guardian = None
        if left:
            raise AssertionError("processes of the cluster left: %s" % left)

    def remove(self):
        shutil.rmtree(self.base, ignore_errors=True)


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--guard":
    guard(sys.argv[2], sys.argv[3])
