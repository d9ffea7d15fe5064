"""The hostile catalogue (hostile_catalogue.py), run entry by entry: each
program's observation must show every attack refused, and the host must show
no escape (secret leaked, host file changed, sentinel killed, listener
reached) and no leak (process, cgroup, mount, temporary file) afterwards.
as_nobody.sh runs this file again as uid 65534."""
import ctypes
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import uuid

import hoststate
import warmtree
from hostile_catalogue import (CATALOGUE, argv_for, setid_or_device_files, warm_argv_for, warm_check, warm_job,
                               warm_start)
from nsbtest import NSBOX, SandboxTest

libc = ctypes.CDLL(None, use_errno=True)
SOURCE = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))


def other_host_address():
    """A non-loopback address of this host, if it has one (no packet is sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))   # TEST-NET-1: routing only
            return s.getsockname()[0]
    except OSError:
        return "192.0.2.1"


class Context:
    """What one entry's run gets from the host, and what the host watches."""

    def __init__(self):
        tag = uuid.uuid4().hex
        self.marker = "nsbox-hostile-" + tag
        self.token = "nsbox-secret-token-" + tag
        self.hidden = "nsbox-hidden-" + uuid.uuid4().hex      # never given to the program
        # not under /tmp: the sandbox's own /tmp would hide it, proving nothing
        self.hostdir = tempfile.mkdtemp(prefix="nsbox-hostile.", dir="/var/tmp")
        os.chmod(self.hostdir, 0o755)
        self.secret = os.path.join(self.hostdir, "secret")
        self.hostfile = os.path.join(self.hostdir, "hostfile")
        self.hostfile_data = ("host file " + tag + "\n").encode()
        with open(self.secret, "w") as f:
            f.write(self.token + "\n" + self.hidden + "\n")
        os.chmod(self.secret, 0o644)            # readable by anyone: only the sandbox stops it
        with open(self.hostfile, "wb") as f:
            f.write(self.hostfile_data)
        os.chmod(self.hostfile, 0o666)          # writable by anyone: only the sandbox stops it
        self.ws = tempfile.mkdtemp(prefix="nsbox-hostile-ws.", dir="/var/tmp")
        os.chmod(self.ws, 0o777)
        self.sentinel = subprocess.Popen(["sleep", "600"])
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("0.0.0.0", 0))
        self.tcp.listen(8)
        self.tcp.setblocking(False)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", 0))
        self.udp.setblocking(False)
        self.abstract_name = "nsbox-hostile-" + tag
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0" + self.abstract_name)
        self.abstract.listen(8)
        self.abstract.setblocking(False)
        self.other_ip = other_host_address()
        # a SysV shared-memory segment on the host: another IPC namespace
        # must not find it by its key
        self.shm_key = 0x6e730000 | (int(tag[:4], 16))
        self.shm_id = libc.shmget(self.shm_key, 4096, 0o1000 | 0o666)   # IPC_CREAT

    def net_args(self):
        return [str(self.tcp.getsockname()[1]), str(self.udp.getsockname()[1]), self.abstract_name, self.other_ip]

    def reached(self):
        """What arrived at the host's listeners (should be nothing)."""
        got = []
        for name, fn in (("tcp", self.tcp.accept), ("abstract unix", self.abstract.accept),
                         ("udp", lambda: self.udp.recvfrom(4096))):
            try:
                got.append("%s: %r" % (name, fn()))
            except (BlockingIOError, InterruptedError):
                pass
        return got

    def close(self):
        if self.sentinel.poll() is None:
            self.sentinel.kill()
        self.sentinel.wait()
        for s in (self.tcp, self.udp, self.abstract):
            s.close()
        if self.shm_id >= 0:
            libc.shmctl(self.shm_id, 0, None)   # IPC_RMID
        shutil.rmtree(self.hostdir, ignore_errors=True)
        shutil.rmtree(self.ws, ignore_errors=True)


class Hostile(SandboxTest):
    """One test per catalogue entry (generated below)."""

    def run_entry(self, entry, warm=False):
        c = Context()
        self.addCleanup(c.close)
        snap = hoststate.Snapshot()
        argv = warm_argv_for(entry, c, NSBOX) if warm else argv_for(entry, c, NSBOX)
        if entry.append_supervisor_pid and not warm:
            # through sh: "$$" is the shell's pid, which exec hands to nsbox
            argv = ["/bin/sh", "-c", 'exec "$@" "$$"', "sh"] + argv
        clock0 = time.time() - time.monotonic()
        proc = hoststate.start(argv, stdin=subprocess.PIPE if warm else None)
        job, tree = None, None
        if warm:
            # the job is written once nsbox runs: proc_kill aims at its pid
            job = (json.dumps(warm_job(entry, c, proc.pid)) + "\n").encode()
            tree = warmtree.TreeWatcher(proc.pid)
        try:
            out, err = proc.communicate(input=job, timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self.fail("nsbox did not finish within 120 s")
        try:
            res = json.loads(out)
        except ValueError:
            self.fail("no JSON result (exit %d): %r %r" % (proc.returncode, out[:300], err[-2000:]))

        # -- the run itself
        self.assertIn(res["status"], entry.status, res.get("error") or res["stderr"]["text"][-2000:])
        if entry.limit:
            self.assertEqual(res["limit"], entry.limit, res)
        obs = None
        first = res["stdout"]["text"].split("\n", 1)[0]
        if first.startswith("{"):
            obs = json.loads(first)
        check = warm_check(entry) if warm else entry.check
        if warm:
            self.assertEqual(len(out.splitlines()), 1, out[-2000:])
            expect = warm_start(entry)
            if expect == "warm":
                self.assertEqual((res.get("start"), res.get("start_reason")), ("warm", None), res.get("error"))
            else:
                self.assertEqual(res.get("start"), "cold", res)
                self.assertIn(expect, res.get("start_reason") or "", res)
        if check:
            check(self, res, obs, c)

        # -- the host: no escape
        blob = out.decode("utf-8", "replace") + err.decode("utf-8", "replace")
        self.assertNotIn(c.hidden, blob, "the secret's contents reached the result")
        with open(c.hostfile, "rb") as f:
            self.assertEqual(f.read(), c.hostfile_data, "the host file outside the workspace changed")
        self.assertEqual(os.stat(c.hostfile).st_mode & 0o7777, 0o666)
        self.assertEqual(sorted(os.listdir(c.hostdir)), ["hostfile", "secret"])
        self.assertEqual(setid_or_device_files(c.ws), [], "setuid/setgid or device files left in the workspace")
        self.assertIsNone(c.sentinel.poll(), "the host sentinel process was killed")
        self.assertEqual(c.reached(), [], "a host listener was reached")
        self.assertLess(abs((time.time() - time.monotonic()) - clock0), 5, "the host clock moved")
        # -- the host: no leak
        self.assertEqual(snap.leaks([proc.pid], [c.marker]), [])
        if tree:
            # a batch's workers, warm inits and zygotes are its descendants
            self.assertEqual(tree.left(), [])


def _make(entry):
    def test(self):
        self.run_entry(entry)
    test.__doc__ = "%s: %s" % (entry.group, entry.attack)
    return test


for _e in CATALOGUE:
    setattr(Hostile, "test_" + _e.name, _make(_e))


class HostileWarm(SandboxTest):
    """The warm column: every python entry as a job of `nsbox batch --warm`
    (issue #14): it starts warm (or cold with the reason the catalogue
    gives), the same checks hold, and the host shows nothing left of the
    batch, its zygote or its job. Without --warm every test here fails."""
    run_entry = Hostile.run_entry


def _make_warm(entry):
    def test(self):
        self.run_entry(entry, warm=True)
    test.__doc__ = "%s, warm: %s" % (entry.group, entry.attack)
    return test


for _e in CATALOGUE:
    if warm_start(_e):
        setattr(HostileWarm, "test_" + _e.name, _make_warm(_e))


class CatalogueDocs(unittest.TestCase):
    def test_every_entry_is_in_the_security_table(self):
        with open(os.path.join(SOURCE, "docs", "security.md")) as f:
            doc = f.read()
        listed = set(re.findall(r"^\| `([a-z_0-9]+)` \|", doc, re.M))
        for e in CATALOGUE:
            self.assertIn(e.name, listed, "docs/security.md's hostile catalogue table lacks " + e.name)


class DaemonThreadsAtExit(SandboxTest):
    """Regression: daemon threads waking during interpreter shutdown end in
    pthread_exit(), for which glibc dlopen()s libgcc_s.so.1; without it in
    the python profile a correct program died of SIGABRT."""

    def test_correct_program_is_not_aborted(self):
        code = ("import threading\nev = threading.Event()\n"
                "for _ in range(48):\n"
                "    try: threading.Thread(target=ev.wait, daemon=True).start()\n"
                "    except RuntimeError: break   # as uid 65534 RLIMIT_NPROC counts the whole host\n"
                "ev.set()\nprint('bye')\n")
        for _ in range(3):
            _, res = self.run_json("python", "--pids", "128", "-c", code)
            self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), res["stderr"]["text"][-500:])


if __name__ == "__main__":
    unittest.main()
