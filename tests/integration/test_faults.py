"""Faults around a run: nsbox killed mid-run, the workspace deleted or made
read-only under the program, a full /tmp, an unusable cgroup parent, an
interpreter that crashes at start. Each ends with an honest result —
`status: error` with a message where the sandbox could not do its job, the
program's own outcome where it could — and leaves nothing behind."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import hoststate
from nsbtest import NSBOX, SANITIZED, SandboxTest, processes_with

HERE = os.path.dirname(os.path.abspath(__file__))
PRIVATE_MOUNTS = [sys.executable, os.path.join(HERE, "private_mounts.py")]
ROOT = os.geteuid() == 0


def host_dir(mode=0o755):
    """A host directory the sandbox can mirror (the sandbox owns /tmp)."""
    d = tempfile.mkdtemp(prefix="nsbox-fault.", dir="/var/tmp")
    os.chmod(d, mode)
    return d


def parse(test, out, err, rc):
    try:
        return json.loads(out)
    except ValueError:
        test.fail("no JSON result (exit %d): %r %r" % (rc, out[:300], err[-2000:]))


class KilledSupervisor(SandboxTest):
    """nsbox SIGKILLed: its sandbox dies with it (the init's PDEATHSIG ends
    the pid namespace); what it could not remove (its cgroups) the next run
    reaps (cg_reap_stale)."""

    def sleeper(self, tag):
        # the marker is assembled inside, so nsbox's own command line lacks it
        return ("import os\nos.execv('/usr/bin/python3', ['python3', '-c', 'import time\\nwhile 1: time.sleep(1)', "
                "'nsbox-fault-' + '%s'])" % tag)

    def test_mid_run_kill_leaves_nothing_after_the_next_run(self):
        snap = hoststate.Snapshot()
        tag = uuid.uuid4().hex
        marker = "nsbox-fault-" + tag
        proc = hoststate.start([NSBOX, "python", "-c", self.sleeper(tag)])
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.addCleanup(hoststate.kill_marked, [marker])
        self.assertTrue(processes_with(marker), "the program never started")
        if ROOT:
            self.assertTrue(hoststate.run_cgroups({proc.pid}), "no run cgroup seen: this test would prove nothing")
        hoststate.kill_and_reap(proc)
        deadline = time.monotonic() + 5
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(processes_with(marker), [], "the sandbox outlived nsbox")
        if ROOT:
            # a SIGKILLed nsbox cannot remove its cgroups (empty now) ...
            self.assertTrue(hoststate.run_cgroups({proc.pid}), "nothing left to reap: this proves nothing")
        hoststate.wait_run_cgroups_empty([proc.pid])
        # ... the next run (any nsbox) removes them: cg_reap_stale
        p, res = self.run_json("python", "-c", "print('next')")
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(snap.leaks([proc.pid], [marker]), [])

    def test_kills_at_random_moments(self):
        """Killed during set-up, just after the exec, while running: never a
        survivor, never a cgroup left once a later run has reaped."""
        snap = hoststate.Snapshot()
        rng = random.Random(8)
        killed, markers = [], []
        self.addCleanup(hoststate.kill_marked, markers)
        # busy CPUs deschedule the init between steps: that widens the
        # windows a kill must not find (before PR_SET_PDEATHSIG is armed)
        spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(len(os.sched_getaffinity(0)) or 2)]
        for sp in spinners:
            self.addCleanup(sp.wait)
            self.addCleanup(sp.kill)
        for _ in range(20):
            tag = uuid.uuid4().hex
            markers.append("nsbox-fault-" + tag)
            proc = hoststate.start([NSBOX, "python", "-c", self.sleeper(tag)])
            time.sleep(rng.uniform(0, 0.08))
            hoststate.kill_and_reap(proc)
            killed.append(proc.pid)
        for sp in spinners:
            sp.kill()
        hoststate.wait_run_cgroups_empty(killed)
        _, res = self.run_json("python", "-c", "pass")
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(snap.leaks(killed, markers), [])


class WorkspaceChanges(SandboxTest):
    """The host pulls the workspace away mid-run: the program sees the error
    (its own outcome, not the sandbox's), nsbox reports it faithfully."""

    PROGRAM = ("import json, os, time\n"
               "open('/workspace/ready', 'w').close()\n"
               "deadline = time.time() + 10\n"
               "while os.path.exists('/workspace/ready') and time.time() < deadline: time.sleep(0.01)\n"
               "obs = {}\n"
               "for name in ('after', 'after2'):\n"
               "    try:\n"
               "        open('/workspace/' + name, 'w').write('x'); obs[name] = 'ok'\n"
               "    except OSError as e:\n"
               "        obs[name] = e.strerror\n"
               "print(json.dumps(obs))\n")

    def run_and(self, ws, change):
        snap = hoststate.Snapshot()
        proc = hoststate.start([NSBOX, "python", "--json", "--workspace", ws, "-c", self.PROGRAM])
        ready = os.path.join(ws, "ready")
        deadline = time.monotonic() + 10
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertTrue(os.path.exists(ready), "the program never started")
        change()
        out, err = proc.communicate(timeout=60)
        res = parse(self, out, err, proc.returncode)
        self.assertEqual(snap.leaks([proc.pid]), [])
        return res

    def test_workspace_deleted(self):
        ws = host_dir(0o777)
        self.addCleanup(shutil.rmtree, ws, True)
        res = self.run_and(ws, lambda: shutil.rmtree(ws))
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), res)
        obs = json.loads(res["stdout"]["text"])
        self.assertEqual(obs, {"after": "No such file or directory", "after2": "No such file or directory"})
        self.assertFalse(os.path.exists(ws), "something recreated the deleted workspace")

    def test_workspace_made_read_only(self):
        ws = host_dir(0o755)
        self.addCleanup(shutil.rmtree, ws, True)
        if ROOT:
            # root ignores modes; a workspace owned by another user does not:
            # the sandbox writes as the workspace's owner (idmapped mount)
            os.chown(ws, 65534, 65534)

        def make_read_only():
            os.unlink(os.path.join(ws, "ready"))
            os.chmod(ws, 0o555)
        res = self.run_and(ws, make_read_only)
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), res)
        obs = json.loads(res["stdout"]["text"])
        self.assertEqual(obs, {"after": "Permission denied", "after2": "Permission denied"})
        self.assertEqual(sorted(os.listdir(ws)), [])


class HostResources(SandboxTest):
    def private(self, opts, *args):
        """nsbox --json ARGS in a private mount namespace changed by OPTS."""
        nsbox = NSBOX
        if os.path.realpath(NSBOX).startswith("/tmp/") and "--full-tmpfs" in opts:
            # a build tree under /tmp would vanish under the full tmpfs
            d = host_dir()
            self.addCleanup(shutil.rmtree, d, True)
            nsbox = shutil.copy2(NSBOX, os.path.join(d, "nsbox"))
        snap = hoststate.Snapshot()
        proc = hoststate.start(PRIVATE_MOUNTS + list(opts) + ["--", nsbox, args[0], "--json", *args[1:]])
        out, err = proc.communicate(timeout=60)
        res = parse(self, out, err, proc.returncode)
        # the pid of private_mounts.py is nsbox's: it execs
        self.assertEqual(snap.leaks([proc.pid]), [])
        return proc, res

    def test_full_tmp(self):
        """nsbox stages the sandbox root on a tmpfs it mounts over /tmp in
        its own mount namespace: a full host /tmp takes nothing from it."""
        proc, res = self.private(["--full-tmpfs", "/tmp"], "python", "-c",
                                 "open('/tmp/x', 'w').write('y' * 100000); print('ran')")
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], "ran\n")

    def test_cgroup_parent_read_only(self):
        """The own cgroup directories read-only (as if not delegated): strict
        isolation still bounds memory and processes, with the labelled rlimit
        fallback — never claiming a cgroup it does not have."""
        if SANITIZED:
            self.skipTest("the rlimit backend's RLIMIT_AS cannot hold ASan's shadow memory; "
                          "this test runs in the plain build")
        opts = []
        for d in hoststate.own_cgroup_dirs():
            opts += ["--ro-bind", d]
        proc, res = self.private(opts, "python", "--memory", "64M", "-c",
                                 "b = bytearray(200 << 20)")
        self.assertEqual(res["protections"]["memory"], "rlimit", res["protections"])
        self.assertEqual(res["protections"]["pids"], "rlimit")
        # the limit still holds: the allocation fails inside the program
        self.assertEqual(res["status"], "exited", res)
        self.assertIn("MemoryError", res["stderr"]["text"])

    def run_cgroup_parent(self):
        """Where nsbox makes its run cgroups here (v1: one per hierarchy, the
        pids one preferred; v2: the base), learnt from a run."""
        proc = hoststate.start([NSBOX, "python", "-c", "import time; time.sleep(5)"])
        self.addCleanup(proc.communicate)
        self.addCleanup(proc.terminate)     # cancelled: nsbox removes its cgroups
        deadline = time.monotonic() + 10
        found = []
        while not found and time.monotonic() < deadline:
            found = hoststate.run_cgroups({proc.pid})
            time.sleep(0.01)
        self.assertTrue(found, "nsbox made no run cgroup as root")
        parents = sorted({os.path.dirname(p) for p in found}, key=lambda d: "/pids" not in d)
        return parents[0]

    def test_busy_run_cgroup_is_never_taken_over(self):
        """A cgroup with our run's name that still holds a task (an earlier
        nsbox with a reused pid): nsbox refuses with status error and a
        message, removes what it made, and leaves that cgroup and its task."""
        if not ROOT:
            # uid 65534 cannot create cgroups at all: the rlimit fallback
            _, res = self.run_json("python", "-c", "pass")
            self.assertEqual(res["protections"]["pids"], "rlimit")
            self.assertEqual(hoststate.run_cgroups({os.getpid()}), [])
            return
        pids_dir = self.run_cgroup_parent()
        holder = subprocess.Popen(["sleep", "600"])
        self.addCleanup(holder.wait)
        self.addCleanup(holder.kill)
        # $$ is the shell's pid, and exec makes it nsbox's: the run cgroup name
        script = ('d="%s/nsbox-$$-0"; mkdir "$d" && echo %d > "$d/cgroup.procs" && exec "$@"'
                  % (pids_dir, holder.pid))
        snap = hoststate.Snapshot()
        proc = hoststate.start(["/bin/sh", "-c", script, "sh", NSBOX, "python", "--json", "-c", "print('ran')"])
        out, err = proc.communicate(timeout=60)
        busy = os.path.join(pids_dir, "nsbox-%d-0" % proc.pid)
        self.addCleanup(lambda: os.path.isdir(busy) and (holder.kill(), holder.wait(), os.rmdir(busy)))
        res = parse(self, out, err, proc.returncode)
        self.assertEqual(res["status"], "error", res)
        self.assertEqual(res["error"]["stage"], "cgroup")
        self.assertIn("nsbox-%d-0" % proc.pid, res["error"]["message"])
        self.assertEqual(proc.returncode, 125)
        self.assertEqual(res["stdout"]["text"], "")
        # the populated cgroup and its task are untouched ...
        self.assertIsNone(holder.poll())
        with open(os.path.join(busy, "cgroup.procs")) as f:
            self.assertEqual(f.read().split(), [str(holder.pid)])
        # ... and nothing else of this run is left
        self.assertEqual([p for p in hoststate.run_cgroups({proc.pid}) if p != busy], [])
        self.assertEqual(snap.leaks([]), [])


class BrokenInterpreter(SandboxTest):
    def fake_prefix(self, interpreter_bytes):
        d = host_dir()
        self.addCleanup(shutil.rmtree, d, True)
        os.makedirs(os.path.join(d, "bin"))
        os.makedirs(os.path.join(d, "lib", "python3.11"))
        open(os.path.join(d, "lib", "python3.11", "os.py"), "w").close()
        path = os.path.join(d, "bin", "python3.11")
        with open(path, "wb") as f:
            f.write(interpreter_bytes)
        os.chmod(path, 0o755)
        for root, dirs, _ in os.walk(d):
            for x in dirs:
                os.chmod(os.path.join(root, x), 0o755)
        return path

    def broken_run(self, interpreter_bytes):
        interp = self.fake_prefix(interpreter_bytes)
        snap = hoststate.Snapshot()
        p, res = self.run_json("python", "--interpreter", interp, "-c", "print('never')")
        self.assertEqual(res["stdout"]["text"], "")
        self.assertEqual(snap.leaks([]), [])
        return interp, p, res

    def test_interpreter_without_its_library(self):
        """A real interpreter with an empty standard library gives up before
        running anything: its own failure, reported as its exit."""
        with open("/usr/bin/python3.11", "rb") as f:
            _, p, res = self.broken_run(f.read())
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 1), res)
        self.assertIn("Fatal Python error", res["stderr"]["text"])
        self.assertIsNone(res["error"])

    def test_interpreter_crashing_at_start(self):
        """An ELF cut after its headers: the kernel maps it and it crashes on
        its first instruction — a death nsbox did not cause: signaled."""
        with open("/usr/bin/python3.11", "rb") as f:
            _, p, res = self.broken_run(f.read(4096))
        self.assertEqual(res["status"], "signaled", res)
        self.assertIn(res["signal_name"], ("SIGSEGV", "SIGBUS"))
        self.assertEqual(p.returncode, 128 + res["signal"])
        self.assertIsNone(res["error"])

    def test_interpreter_that_cannot_be_executed(self):
        """Not an executable format at all: nsbox refuses it before starting
        anything (no ELF, so no Python binary) — status error at the prepare
        stage, with the path, exit 125."""
        interp, p, res = self.broken_run(b"\x7fELG not an executable\n" * 8)
        self.assertEqual(res["status"], "error", res)
        self.assertEqual(res["error"]["stage"], "prepare")
        self.assertIn(interp, res["error"]["message"])
        self.assertIn("not an ELF file", res["error"]["message"])
        self.assertEqual(p.returncode, 125)


class FdExhaustion(SandboxTest):
    def test_every_fd_limit_ends_honestly(self):
        """nsbox itself out of file descriptors, at every point of its set-up
        in turn: either the run happens or it ends with status error, the
        stage and a message naming what could not be opened — and nothing
        left behind."""
        import resource
        if SANITIZED:
            self.skipTest("the sanitizer runtime needs descriptors of its own before nsbox starts; "
                          "this test runs in the plain build")
        snap = hoststate.Snapshot()
        pids, errors = [], 0
        for n in range(4, 64):
            def limit(n=n):
                resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
            p = hoststate.start([NSBOX, "python", "--json", "-c", "print('ran')"], preexec_fn=limit)
            out, err = p.communicate(timeout=60)
            pids.append(p.pid)
            res = parse(self, out, err, p.returncode)
            if res["status"] == "exited":
                self.assertEqual(res["stdout"]["text"], "ran\n", (n, res))
                continue
            errors += 1
            self.assertEqual((res["status"], p.returncode), ("error", 125), (n, res))
            self.assertTrue(res["error"]["stage"], (n, res))
            self.assertIn("Too many open files", res["error"]["message"], (n, res))
            self.assertNotIn("(null)", res["error"]["message"], (n, res))
        self.assertGreater(errors, 0, "no limit was low enough: this proves nothing")
        self.assertEqual(snap.leaks(pids), [])


class ErrorsCarryContext(SandboxTest):
    def test_json_message_is_the_whole_message(self):
        p, res = self.run_json("python", "--workspace", "/nonexistent/ws", "-c", "pass")
        self.assertEqual(res["status"], "error")
        self.assertIn("/nonexistent/ws", res["error"]["message"])
        self.assertIn("No such file or directory", res["error"]["message"])
        plain = self.nsbox("python", "--workspace", "/nonexistent/ws", "-c", "pass")
        self.assertIn(res["error"]["message"], plain.stderr.decode())


if __name__ == "__main__":
    import unittest
    unittest.main()
