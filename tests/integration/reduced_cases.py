"""Reduced isolation's cases that hold on every platform nsbox builds for.

Mixed into test_reduced.Reduced (the Linux build: Landlock, seccomp and
rlimits or cgroups stand in for the namespaces) and posix_reduced.PosixReduced
(a -Dplatform=posix build: rlimits, a process group and a private directory
only), which run them against their own binary ($NSBOX) and say what each
platform labels (check_labels) and whether sockets are refused.
"""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from nsbtest import NSBOX, PY, processes_with, reduced_leftovers


class ReducedCases:
    SOCKETS_REFUSED = True

    def check_labels(self, prot):
        raise NotImplementedError

    def setUp(self):
        # nsbox's private directories go here, so leftovers are seen exactly.
        self.base = tempfile.mkdtemp(prefix="nsbox-reduced-test.", dir="/var/tmp")
        os.chmod(self.base, 0o755)
        self.env = dict(os.environ, TMPDIR=self.base)

    def tearDown(self):
        shutil.rmtree(self.base, ignore_errors=True)

    def leftovers(self):
        return reduced_leftovers(self.base)

    def nsbox(self, *args, timeout=60):
        return subprocess.run([NSBOX, *args], capture_output=True, timeout=timeout, env=self.env)

    def run_json(self, cmd, *args, timeout=60):
        p = self.nsbox(cmd, "--json", "--isolation", "reduced", *args, timeout=timeout)
        try:
            return p, json.loads(p.stdout)
        except ValueError:
            self.fail("no JSON result (exit %d): %r %r" % (p.returncode, p.stdout[:300], p.stderr[:1000]))

    def test_labelled_in_the_result_and_on_stderr(self):
        p = self.nsbox("python", "--isolation", "reduced", "-c", "print('hi')")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"hi\n")
        self.assertIn(b"warning: --isolation reduced", p.stderr)
        self.assertIn(b"REDUCED isolation", p.stderr)
        p, res = self.run_json("python", "-c", "print('hi')")
        self.assertEqual(res["isolation"], "reduced")
        self.check_labels(res["protections"])
        self.assertEqual(self.leftovers(), [])


    def test_a_profile_may_ask_for_it_and_is_labelled_the_same(self):
        prof = os.path.join(self.base, "reduced.ini")
        with open(prof, "w") as f:
            f.write("[sandbox]\nisolation = reduced\n")
        p = self.nsbox("python", "--json", "--profile", prof, "-c", "pass")
        self.assertEqual(json.loads(p.stdout)["isolation"], "reduced")
        self.assertIn(b"warning: --isolation reduced", p.stderr)
        p = self.nsbox("python", "--json", "--profile", prof, "--isolation", "strict", "-c", "pass")
        self.assertEqual(json.loads(p.stdout)["isolation"], "strict")   # the flag wins


    def test_batch_runs_every_kind_reduced(self):
        spec = {"program": {"source": "print(2)"}, "cases": [{"name": "x", "expect": {"stdout": {"equals": "2\n"}}}]}
        jobs = [{"id": "a", "kind": "python", "code": "import socket\ntry:\n    socket.socket()\n    print('socket')\nexcept OSError:\n    print('no socket')"},
                {"id": "b", "kind": "run", "argv": ["/bin/echo", "hi"]},
                {"id": "c", "kind": "judge", "spec": spec}]
        p = subprocess.run([NSBOX, "batch", "--isolation", "reduced", "-"], env=self.env, capture_output=True,
                           input="".join(json.dumps(j) + "\n" for j in jobs).encode(), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"warning: --isolation reduced", p.stderr)
        out = {d["id"]: d for d in map(json.loads, p.stdout.decode().splitlines())}
        self.assertEqual((out["a"]["isolation"], out["a"]["stdout"]["text"], out["a"]["outcome"]),
                         ("reduced", "no socket\n" if self.SOCKETS_REFUSED else "socket\n", "pass"))
        self.assertEqual((out["b"]["isolation"], out["b"]["stdout"]["text"]), ("reduced", "hi\n"))
        self.assertEqual(out["c"]["verdict"], "pass")
        self.assertEqual(out["c"]["cases"][0]["result"]["isolation"], "reduced")
        self.assertEqual(self.leftovers(), [])


    def test_a_deep_tree_is_removed(self):
        code = "import os\nfor i in range(300):\n    os.mkdir('d')\n    os.chdir('d')\nopen('leaf', 'w').close()\nos.fchmod(os.open('.', os.O_RDONLY), 0)\nprint('ok')"
        p, res = self.run_json("python", "-c", code)
        self.assertEqual((res["status"], res["exit_code"], res["stdout"]["text"]), ("exited", 0, "ok\n"), res)
        self.assertEqual(self.leftovers(), [])


    def test_command_shows_where_the_program_really_is(self):
        p, res = self.run_json("python", os.path.join(PY, "writes.py"))
        self.assertEqual(res["status"], "exited", res)
        prog = res["command"][3]
        self.assertTrue(prog.startswith(self.base) and prog.endswith("/program/writes.py"), res["command"])
        self.assertEqual(res["command"][:3], ["python3", "-I", "-B"])


    def test_workspace_is_written_on_the_host(self):
        ws = tempfile.mkdtemp(prefix="nsbox-ws.", dir="/var/tmp")
        try:
            os.chmod(ws, 0o777)
            p, res = self.run_json("python", "--workspace", ws, "-c", "open('out.txt','w').write('42')")
            self.assertEqual(res["status"], "exited", res)
            with open(os.path.join(ws, "out.txt")) as f:
                self.assertEqual(f.read(), "42")
        finally:
            shutil.rmtree(ws, ignore_errors=True)


    def test_wall_time_kills_the_whole_group(self):
        marker = "nsbox-reduced-wall-%d" % os.getpid()
        code = ("import os, time, sys\n"
                "for i in range(3):\n"
                "    if os.fork() == 0:\n"
                "        os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(60)', %r])\n"
                "time.sleep(60)\n" % marker)
        p, res = self.run_json("python", "--wall-time", "1s", "-c", code)
        self.assertEqual((res["status"], res["limit"]), ("limit", "wall_time"), res)
        time.sleep(0.2)
        self.assertEqual(processes_with(marker), [])
        self.assertEqual(self.leftovers(), [])


    def test_fork_bomb_stops_at_pids(self):
        p, res = self.run_json("python", "--pids", "16", "--wall-time", "20s", os.path.join(PY, "forkbomb.py"))
        self.assertEqual(res["status"], "exited", res)
        obs = json.loads(res["stdout"]["text"])
        self.assertLess(obs["forked"], 16)
        self.assertGreater(obs["refused"], 0)


    def test_memory_is_bounded(self):
        p, res = self.run_json("python", "--memory", "96M", "--wall-time", "20s", os.path.join(PY, "memory.py"))
        # Linux's rlimit backend leaves RLIMIT_AS room for thread stacks
        # (docs/cgroups.md): the supervisor's sum of the tree may stop it first
        if res["protections"]["memory"] == "rlimit" and res["status"] != "limit":
            self.assertEqual((res["status"], res["exit_code"]), ("exited", 3), res)
            self.assertIn("MemoryError", res["stdout"]["text"])
        else:
            self.assertEqual((res["status"], res["limit"]), ("limit", "memory"), res)


    def start_a_group(self, marker, stderr):
        """A reduced nsbox whose program forks a child (MARKER on its command
        line) and prints 'started'; stdout is a pipe."""
        code = ("import os, time\n"
                "if os.fork() == 0:\n"
                "    os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(60)', %r])\n"
                "print('started', flush=True)\n"
                "time.sleep(60)\n" % marker)
        return subprocess.Popen([NSBOX, "python", "--isolation", "reduced", "-c", code], env=self.env,
                                stdout=subprocess.PIPE, stderr=stderr)

    def kill_then_run(self, *next_run):
        """SIGKILL a reduced nsbox mid-run; its group dies with it, and the
        private directory it had no chance to remove goes with NEXT_RUN."""
        marker = "nsbox-reduced-orphan-%d" % os.getpid()
        proc = self.start_a_group(marker, stderr=subprocess.DEVNULL)
        try:
            self.assertEqual(proc.stdout.readline(), b"started\n")
            self.assertTrue(processes_with(marker))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            for _ in range(50):
                if not processes_with(marker):
                    break
                time.sleep(0.1)
            self.assertEqual(processes_with(marker), [])
            self.assertEqual(len(self.leftovers()), 1)   # SIGKILL gave nsbox no chance
            p = self.nsbox(*next_run)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(self.leftovers(), [])
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.stdout.close()


    def test_killed_nsbox_takes_its_group_along_and_the_next_run_cleans_up(self):
        self.kill_then_run("python", "--isolation", "reduced", "-c", "pass")


    def test_what_needs_a_namespace_is_refused(self):
        for args, word in ((["python", "--network", "loopback", "-c", "pass"], b"loopback"),
                           (["python", "--harness", "/usr", "-c", "pass"], b"--harness"),
                           (["python", "--ro-bind", "/usr/share:/data", "-c", "pass"], b"SRC and DST"),
                           (["python", "--tmpfs", "/data", "-c", "pass"], b"--tmpfs /data needs a mount namespace"),
                           (["test", "--harness", os.path.join(PY)], b"strict isolation")):
            cmd, rest = args[0], args[1:]
            p = self.nsbox(cmd, "--isolation", "reduced", *rest)
            self.assertEqual(p.returncode, 125, (args, p.stdout, p.stderr))
            self.assertIn(word, p.stderr, args)
            self.assertEqual(self.leftovers(), [])


    def test_accounting_survives_a_kill(self):
        # told to stop, the reduced init kills the group and exits without
        # reaping it: under rlimit nothing else counted the program's CPU
        code = ("import os, time\nt = time.process_time()\n"
                "while time.process_time() - t < 0.3: pass\n"
                "while True: os.write(1, b'x' * 4096)\n")
        p, res = self.run_json("python", "--output-limit", "1K", "-c", code)
        self.assertEqual(res["limit"], "output", res)
        # /proc's clock ticks (10 ms) trail the program's own precise clock:
        # 290 was read once for its 300. Unaccounted, it read about 2.
        self.assertGreaterEqual(res["cpu_ms"], 250, res)
