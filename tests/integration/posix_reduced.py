"""The posix platform (a -Dplatform=posix build, $NSBOX with
$NSBOX_PLATFORM=posix): strict isolation fails closed with exit 125, doctor
says so, and reduced isolation runs with only what POSIX gives (a process
group killed whole, rlimits, a private working directory, a scrubbed
environment, the wall limit, the output cap), labelling everything else
`unavailable`. The cases reduced isolation shares with Linux come from
reduced_cases; the ones here are the platform's own. Not named test_*.py:
the Linux build's integration suite must not run it against its binary."""
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

from nsbtest import NSBOX, PY, processes_with
from reduced_cases import ReducedCases

# What the posix platform enforces, and by what: everything else must read
# "unavailable" (never claimed).
ENFORCED = {
    "env": "scrubbed", "fds": "closed", "session": "setsid", "wall_time": "supervisor", "output": "supervisor",
    "cpu_time": "rlimit", "file_size": "rlimit", "memory": "rlimit",
    # RLIMIT_NPROC is per user: set only where the user's tasks can be
    # counted, which a Linux /proc allows (this host)
    "pids": "rlimit",
}
NEVER = ("user_ns", "mount_ns", "pid_ns", "net", "ipc_ns", "uts_ns", "cgroup_ns", "rootfs", "tmp_size",
         "no_new_privs", "caps", "seccomp", "landlock")
BASE_ENV = {"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED",
            "MALLOC_ARENA_MAX"}


class PosixReduced(ReducedCases, unittest.TestCase):
    SOCKETS_REFUSED = False   # no seccomp: the network is reachable, and labelled so

    def setUp(self):
        if os.environ.get("NSBOX_PLATFORM") != "posix":
            self.fail("posix_reduced.py runs against a -Dplatform=posix nsbox (NSBOX_PLATFORM=posix)")
        super().setUp()

    def check_labels(self, prot):
        self.assertEqual(set(prot), set(ENFORCED) | set(NEVER))
        for k, v in ENFORCED.items():
            self.assertEqual(prot[k], v, k)
        for k in NEVER:
            self.assertEqual(prot[k], "unavailable", k)

    def spec_file(self, program, cases, limits=None):
        path = os.path.join(self.base, "spec.json")
        with open(path, "w") as f:
            json.dump({"program": {"source": program}, "limits": limits or {"wall_time": "5s"}, "cases": cases}, f)
        return path

    # ---- strict fails closed ------------------------------------------------

    def test_strict_is_refused_with_exit_125(self):
        ws = tempfile.mkdtemp(prefix="nsbox-ws.", dir=self.base)
        for args in (["python", "--workspace", ws, "-c", "open('ran', 'w').write('yes')"],
                     ["run", "--workspace", ws, "--", "/bin/sh", "-c", "echo yes > ran"],
                     ["python", "--isolation", "strict", "--workspace", ws, "-c", "open('ran', 'w').write('yes')"]):
            p = self.nsbox(*args)
            self.assertEqual(p.returncode, 125, (args, p.stderr))
            for word in (b"strict isolation is not available", b"posix", os.uname().sysname.encode(),
                         b"namespaces", b"cgroups", b"seccomp", b"Landlock", b"--isolation reduced"):
                self.assertIn(word, p.stderr, args)
            self.assertNotIn(b"warning: --isolation reduced", p.stderr)
            self.assertEqual(p.stdout, b"")
        p = self.nsbox("python", "--json", "-c", "print('ran')")
        res = json.loads(p.stdout)
        self.assertEqual((p.returncode, res["status"], res["isolation"], res["error"]["stage"]),
                         (125, "error", "strict", "clone"), res)
        self.assertIn("--isolation reduced", res["error"]["message"])
        self.assertEqual(res["stdout"]["text"], "")
        self.assertEqual(os.listdir(ws), [])   # nothing ran
        self.assertEqual(self.leftovers(), [])

    def test_strict_judge_and_batch_run_nothing(self):
        spec = self.spec_file("print(2)", [{"name": "x", "expect": {"stdout": {"equals": "2\n"}}}])
        p = self.nsbox("judge", "--json", spec)
        v = json.loads(p.stdout)
        self.assertNotEqual(p.returncode, 0)
        self.assertNotEqual(v["verdict"], "pass")
        self.assertEqual(v["cases"][0]["result"]["status"], "error")
        p = subprocess.run([NSBOX, "batch", "-"], env=self.env, capture_output=True, timeout=60,
                           input=b'{"id": "a", "kind": "python", "code": "print(1)"}\n')
        line = json.loads(p.stdout)
        self.assertEqual((line["status"], line["error"]["stage"]), ("error", "clone"), line)

    def test_doctor_says_strict_cannot_run_and_reduced_can(self):
        p = self.nsbox("doctor", "--json")
        rep = json.loads(p.stdout)
        self.assertEqual((p.returncode, rep["isolation"], rep["ready"]), (1, "strict", False), rep)
        plat = next(c for c in rep["checks"] if c["name"] == "platform")
        self.assertEqual(plat["status"], "unavailable")
        self.assertIn("posix", plat["detail"])
        self.assertIn(os.uname().sysname, plat["detail"])
        self.assertIn("seccomp", plat["detail"])
        self.assertIn("--isolation reduced", plat["fix"])
        p = self.nsbox("doctor", "--json", "--isolation", "reduced")
        rep = json.loads(p.stdout)
        self.assertEqual((p.returncode, rep["isolation"], rep["ready"]), (0, "reduced", True), rep)
        self.assertEqual(next(c for c in rep["checks"] if c["name"] == "platform")["status"], "degraded")
        self.assertEqual(next(c for c in rep["checks"] if c["name"] == "rlimits")["status"], "ok")
        p = self.nsbox("doctor")
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"ready for strict isolation: no", p.stdout)
        p = self.nsbox("doctor", "--isolation", "reduced", "--interpreter", "/nonexistent/python3")
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"ready for reduced isolation: no", p.stdout)

    # ---- what reduced enforces here ----------------------------------------

    def test_cpu_time_limit(self):
        p, res = self.run_json("python", "--cpu-time", "1s", "--wall-time", "20s", os.path.join(PY, "spin.py"))
        self.assertEqual((res["status"], res["limit"]), ("limit", "cpu_time"), res)
        # measured from rusage and the zombie's CPU clock, which trail the
        # tick count RLIMIT_CPU is checked against on a loaded host: so a
        # lower bound well under 1 s, and never past the hard limit
        self.assertGreater(res["cpu_ms"], 500, res)
        self.assertLess(res["cpu_ms"], 2100, res)
        self.assertLess(res["wall_ms"], 20000, res)
        self.assertEqual((p.returncode, res["signal_name"]), (124, "SIGXCPU"))
        # one that catches SIGXCPU gets SIGKILL at the hard limit, a second on
        code = "import signal\nsignal.signal(signal.SIGXCPU, lambda *a: None)\nwhile True: pass\n"
        p, res = self.run_json("python", "--cpu-time", "1s", "--wall-time", "20s", "-c", code)
        self.assertEqual((res["status"], res["limit"], res["signal_name"]), ("limit", "cpu_time", "SIGKILL"), res)
        self.assertLess(res["wall_ms"], 20000, res)

    def test_file_size_limit(self):
        # Python ignores SIGXFSZ, so the write past the limit fails with EFBIG
        p, res = self.run_json("python", "--file-size", "2M", os.path.join(PY, "bigwrite.py"), "big")
        self.assertEqual(json.loads(res["stdout"]["text"]), {"written": 2 << 20, "size": 2 << 20, "error": "EFBIG"})
        # a program that does not ignore it is stopped by the file_size limit
        p, res = self.run_json("run", "--file-size", "1M", "--", "/bin/sh", "-c",
                               "exec head -c 3000000 /dev/zero > big")
        self.assertEqual((res["status"], res["limit"], res["signal_name"]), ("limit", "file_size", "SIGXFSZ"), res)

    def test_output_is_capped_with_the_same_rules(self):
        # under 4x the limit: kept up to the limit, counted whole, the run goes on
        p, res = self.run_json("python", "--output-limit", "1K", "-c", "import sys; sys.stdout.write('x' * 3000)")
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0), res)
        self.assertEqual((res["stdout"]["bytes"], res["stdout"]["truncated"], len(res["stdout"]["text"])),
                         (3000, True, 1024))
        # past 4x in all: the output limit stops it
        p, res = self.run_json("python", "--output-limit", "1K", "-c",
                               "import sys\nwhile True: sys.stdout.write('y' * 4096)")
        self.assertEqual((res["status"], res["limit"]), ("limit", "output"), res)
        self.assertLessEqual(len(res["stdout"]["text"]), 1024)
        self.assertTrue(res["stdout"]["truncated"])

    def test_sigint_cancels_and_kills_the_whole_group(self):
        marker = "nsbox-posix-sigint-%d" % os.getpid()
        proc = self.start_a_group(marker, stderr=subprocess.PIPE)
        try:
            self.assertEqual(proc.stdout.readline(), b"started\n")
            self.assertTrue(processes_with(marker))
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=20)
            self.assertEqual(proc.returncode, 130, err)
            self.assertIn(b"cancelled", err)
            time.sleep(0.2)
            self.assertEqual(processes_with(marker), [])
            self.assertEqual(self.leftovers(), [])
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    def test_a_program_that_kills_its_keeper_still_dies_whole(self):
        """No seccomp or Landlock keeps the program off its keeper here. Root's
        keeper stays root, out of nobody's reach; a user's keeper can be
        killed, and then nsbox kills the group itself and reports an error."""
        marker = "nsbox-posix-keeper-%d" % os.getpid()
        code = ("import os, signal, time\n"
                "if os.fork() == 0:\n"
                "    os.execv('/usr/bin/python3', ['python3', '-c', 'import time; time.sleep(60)', %r])\n"
                "try:\n"
                "    os.kill(os.getppid(), signal.SIGKILL)\n"
                "    print('killed', flush=True)\n"
                "except PermissionError:\n"
                "    print('EPERM', flush=True)\n"
                "time.sleep(1)\n" % marker)
        p, res = self.run_json("python", "--wall-time", "30s", "-c", code)
        if os.getuid() == 0:
            self.assertEqual((res["status"], res["stdout"]["text"]), ("exited", "EPERM\n"), res)
        else:
            self.assertEqual((p.returncode, res["status"], res["error"]["stage"]), (125, "error", "supervise"), res)
            self.assertIn("before reporting", res["error"]["message"])
            self.assertLess(res["wall_ms"], 10000, res)
        time.sleep(0.2)
        self.assertEqual(processes_with(marker), [])
        self.assertEqual(self.leftovers(), [])

    def test_environment_is_scrubbed(self):
        self.env["NSBOX_POSIX_SECRET"] = "do-not-pass"
        p, res = self.run_json("python", "--env", "EXTRA=1", "-c",
                               "import os, json; print(json.dumps(dict(os.environ)))")
        env = json.loads(res["stdout"]["text"])
        self.assertEqual(set(env), BASE_ENV | {"EXTRA"}, env)
        self.assertTrue(env["HOME"].startswith(self.base) and env["HOME"] == env["TMPDIR"], env)
        self.assertNotIn("do-not-pass", res["stdout"]["text"])

    def test_private_directory_and_identity(self):
        p, res = self.run_json("python", "-c",
                               "import os, json; st = os.stat('.'); print(json.dumps([os.getcwd(), os.getuid(), "
                               "os.getgid(), os.getgroups(), os.getsid(0) == os.getpid(), "
                               "os.getpgid(0) == os.getpid(), sorted(os.listdir('/proc/self/fd')), st.st_uid, "
                               "st.st_mode & 0o777]))")
        cwd, uid, gid, groups, leads_session, leads_group, fds, owner, mode = json.loads(res["stdout"]["text"])
        self.assertTrue(cwd.startswith(self.base) and cwd.endswith("/workspace"), cwd)
        if os.getuid() == 0:
            self.assertEqual((uid, gid, groups, owner), (65534, 65534, [65534], 65534))
        else:
            self.assertEqual((uid, owner), (os.getuid(), os.getuid()))
        self.assertEqual(mode, 0o700)
        self.assertTrue(leads_session and leads_group)
        self.assertEqual(fds, ["0", "1", "2", "3"])   # 3: the listdir's own
        self.assertEqual(self.leftovers(), [])

    def test_judge_end_to_end(self):
        add = "import sys\na, b = map(int, sys.argv[1:3])\nprint(a + b)\n"
        case = [{"name": "adds", "args": ["2", "3"], "expect": {"stdout": {"equals": "5\n"}}}]
        p = self.nsbox("judge", "--json", "--isolation", "reduced", self.spec_file(add, case))
        v = json.loads(p.stdout)
        self.assertEqual((p.returncode, v["verdict"]), (0, "pass"), v)
        self.assertEqual(v["cases"][0]["result"]["isolation"], "reduced")
        self.check_labels(v["cases"][0]["result"]["protections"])
        p = self.nsbox("judge", "--json", "--isolation", "reduced", self.spec_file(add.replace("+", "*"), case))
        v = json.loads(p.stdout)
        self.assertEqual((p.returncode, v["verdict"]), (1, "fail"), v)
        # a sleep, not a busy loop: cpu_time follows wall_time when unset, and a busy loop
        # that starts at once (no namespaces to build) reaches both at the same instant
        p = self.nsbox("judge", "--json", "--isolation", "reduced",
                       self.spec_file("import time\ntime.sleep(60)\n", case, {"wall_time": "1s"}))
        v = json.loads(p.stdout)
        self.assertEqual((v["verdict"], v["cases"][0]["result"]["limit"]), ("fail", "wall_time"), v)
        self.assertEqual(self.leftovers(), [])

    def test_what_cannot_be_enforced_is_refused(self):
        for args, word in ((["--ro-bind", "/usr/share"], b"--ro-bind /usr/share cannot be enforced"),
                           (["--package", os.path.join(PY)], b"cannot enforce")):
            p = self.nsbox("python", "--isolation", "reduced", *args, "-c", "print('ran')")
            self.assertEqual((p.returncode, p.stdout), (125, b""), (args, p.stderr))
            self.assertIn(word, p.stderr, args)

    def test_a_failed_step_runs_nothing(self):
        ws = tempfile.mkdtemp(prefix="nsbox-ws.", dir=self.base)
        os.chmod(ws, 0o777)
        self.env["NSBOX_TEST_FAIL_STEP"] = "rlimit"
        p, res = self.run_json("python", "--workspace", ws, "-c", "open('ran', 'w').write('yes')")
        self.assertEqual((p.returncode, res["status"], res["error"]["stage"]), (125, "error", "rlimit"), res)
        self.assertFalse(os.path.exists(os.path.join(ws, "ran")))
        self.assertEqual(res["protections"]["cpu_time"], "unavailable")
        self.assertEqual(self.leftovers(), [])


if __name__ == "__main__":
    unittest.main()
