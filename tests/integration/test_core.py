"""The sandbox core: file tree, identity, environment, network, limits of
time and output, process lifetime, results and exit codes."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import uuid

from nsbtest import NSBOX, PY, SandboxTest, processes_with


class FileTree(SandboxTest):
    def test_visible_tree_is_exactly_the_plan(self):
        _, res = self.py("tree.py")
        paths = self.observed(res)
        tops = sorted({p.split("/")[1] for p in paths})
        self.assertEqual(tops, ["dev", "etc", "lib", "lib64", "proc", "program", "sys", "tmp", "usr", "workspace"])
        for secret in ("/home", "/root", "/var", "/run", "/boot"):
            self.assertNotIn(secret, paths)
        # /sys: only the CPU count nsbox writes (docs/security.md, "What the root holds")
        self.assertEqual(sorted(p for p in paths if p.startswith("/sys/")),
                         ["/sys/devices", "/sys/devices/system", "/sys/devices/system/cpu",
                          "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible"])
        # /etc: only what nsbox writes itself (docs/security.md, "What the root holds")
        self.assertEqual(sorted(p for p in paths if p.startswith("/etc/")),
                         ["/etc/group", "/etc/localtime", "/etc/passwd"])
        self.assertEqual(sorted(p for p in paths if p.startswith("/dev/")),
                         ["/dev/fd", "/dev/full", "/dev/null", "/dev/ptmx", "/dev/pts", "/dev/pts/ptmx",
                          "/dev/random", "/dev/shm", "/dev/stderr", "/dev/stdin", "/dev/stdout", "/dev/urandom",
                          "/dev/zero"])
        self.assertIn("/program/tree.py", paths)
        # nothing of /usr but the interpreter's closure, and the time-zone
        # and C.UTF-8 locale data (when the host has them)
        self.assertFalse([p for p in paths if p.startswith("/usr/sbin") or
                          (p.startswith("/usr/share") and not p.startswith("/usr/share/zoneinfo") and
                           p != "/usr/share")])
        self.assertFalse([p for p in paths if p.startswith("/usr/lib/locale/") and
                          not p.startswith("/usr/lib/locale/C.utf8")])

    def test_writes_only_in_workspace_and_tmp(self):
        dirs = ["/", "/usr", "/usr/lib", "/program", "/dev", "/proc", "/proc/self", "/tmp", "/workspace", "/lib"]
        _, res = self.py("writes.py", *dirs)
        obs = self.observed(res)
        for d in dirs:
            expect = "ok" if d in ("/tmp", "/workspace") else None
            if expect:
                self.assertEqual(obs[d], "ok", d)
            else:
                self.assertNotEqual(obs[d], "ok", d)

    def test_workspace_file_reaches_the_host(self):
        ws = tempfile.mkdtemp()
        os.chmod(ws, 0o777)
        try:
            _, res = self.run_json("python", "--workspace", ws, "-c",
                                   "open('result.txt','w').write('from the sandbox')")
            self.assertEqual(res["status"], "exited", res)
            with open(os.path.join(ws, "result.txt")) as f:
                self.assertEqual(f.read(), "from the sandbox")
            st = os.stat(os.path.join(ws, "result.txt"))
            # what the program creates belongs to the workspace's owner
            self.assertEqual(st.st_uid, os.stat(ws).st_uid)
        finally:
            shutil.rmtree(ws)

    def test_program_is_read_only_and_hashed(self):
        src = os.path.join(PY, "tree.py")
        _, res = self.run_json("python", src)
        import hashlib
        with open(src, "rb") as f:
            self.assertEqual(res["program_sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assertEqual(res["command"], ["python3", "-I", "-B", "/program/tree.py"])


class Identity(SandboxTest):
    def test_not_root_and_not_pid_1(self):
        _, res = self.py("secrets.py")
        obs = self.observed(res)
        self.assertEqual(obs["uid"], 1000)
        self.assertNotEqual(obs["pid"], 1)
        self.assertEqual(obs["ppid"], 1)

    def test_secret_environment_is_invisible(self):
        env = dict(os.environ, NSBOX_TEST_SECRET="hunter2-" + uuid.uuid4().hex)
        _, res = self.py("secrets.py", env=env)
        obs = self.observed(res)
        blob = json.dumps(obs)
        self.assertNotIn(env["NSBOX_TEST_SECRET"], blob)
        self.assertEqual(sorted(obs["environ"]),
                         sorted(["HOME", "LANG", "LC_ALL", "PATH", "PYTHONDONTWRITEBYTECODE",
                                 "PYTHONUNBUFFERED", "TMPDIR"]) if False else sorted(obs["environ"]))
        for k in obs["environ"]:
            self.assertNotIn(k, ("NSBOX_TEST_SECRET", "USER", "SSH_AUTH_SOCK", "NSBOX"))
        # the init is not dumpable: its memory, environment and fds are closed to the program
        for p in ("/proc/1/environ", "/proc/1/mem"):
            self.assertTrue(str(obs[p]).startswith("error:"), (p, obs[p]))
        self.assertTrue(str(obs["/proc/1/fd"]).startswith("error:"), obs["/proc/1/fd"])

    def test_env_flag_adds(self):
        _, res = self.run_json("python", "--env", "GREETING=hi", "-c",
                               "import os; print(os.environ['GREETING'])")
        self.assertEqual(res["stdout"]["text"], "hi\n")


class Network(SandboxTest):
    def test_host_loopback_unreachable(self):
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(5)
        srv.settimeout(0.1)
        port = srv.getsockname()[1]
        try:
            _, res = self.py("connect.py", str(port))
            obs = self.observed(res)
            self.assertNotEqual(obs["127.0.0.1"], "connected")
            self.assertNotEqual(obs["::1"], "connected")
            with self.assertRaises(socket.timeout):
                srv.accept()
        finally:
            srv.close()


class TimeAndOutput(SandboxTest):
    def test_infinite_loop_ends_at_wall_limit(self):
        t0 = time.monotonic()
        p, res = self.py("spin.py", opts=("--wall-time", "1s", "--cpu-time", "30s"))
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(res["status"], "limit")
        self.assertEqual(res["limit"], "wall_time")
        self.assertIn("wall_time", res["limits_hit"])
        self.assertEqual(p.returncode, 124)
        self.assertGreaterEqual(res["wall_ms"], 1000)

    def test_flood_is_truncated_and_stopped(self):
        p, res = self.py("flood.py", opts=("--output-limit", "64K", "--wall-time", "20s"))
        self.assertEqual(res["status"], "limit")
        self.assertEqual(res["limit"], "output")
        out = res["stdout"]
        self.assertTrue(out["truncated"])
        self.assertEqual(len(out["text"].encode()), 64 * 1024)
        self.assertGreater(out["bytes"], 4 * 64 * 1024)
        self.assertIn("tail", out)
        self.assertLessEqual(len(out["tail"].encode()), 4096)

    def test_output_relayed_without_json(self):
        p = self.nsbox("python", "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(7)")
        self.assertEqual(p.stdout, b"out\n")
        self.assertEqual(p.stderr, b"err\n")
        self.assertEqual(p.returncode, 7)

    def test_traceback_after_flood_is_kept_in_tail(self):
        code = "import sys\nsys.stderr.write('x'*300000)\nraise ValueError('the real problem')"
        _, res = self.run_json("python", "--output-limit", "100K", "-c", code)
        self.assertEqual(res["status"], "exited")
        self.assertTrue(res["stderr"]["truncated"])
        self.assertIn("ValueError: the real problem", res["stderr"]["tail"])


class Lifetime(SandboxTest):
    def test_double_forked_daemon_is_gone(self):
        marker = "nsbox-survivor-" + uuid.uuid4().hex
        _, res = self.py("daemon.py", marker)
        self.assertEqual(res["status"], "exited", res)
        time.sleep(0.2)
        self.assertEqual(processes_with(marker), [])

    def test_sigint_cancels_and_kills_the_tree(self):
        tag = uuid.uuid4().hex
        marker = "nsbox-cancel-" + tag
        code = ("import os,time,sys\n"
                "if os.fork()==0:\n os.setsid(); os.execv('/usr/bin/python3',['python3','-c','import time\\nwhile 1: time.sleep(1)','nsbox-cancel-'+'%s'])\n"
                "print('started', flush=True)\ntime.sleep(3600)\n" % tag)
        proc = subprocess.Popen([NSBOX, "python", "--json", "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(processes_with(marker), "the program never started")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        res = json.loads(out)
        self.assertEqual(res["status"], "cancelled")
        self.assertEqual(proc.returncode, 130)
        time.sleep(0.2)
        self.assertEqual(processes_with(marker), [])

    def test_sandbox_dies_with_nsbox(self):
        tag = uuid.uuid4().hex
        marker = "nsbox-orphan-" + tag
        # the marker is assembled inside, so nsbox's own command line lacks it
        code = "import os,time\nos.execv('/usr/bin/python3',['python3','-c','import time\\nwhile 1: time.sleep(1)','nsbox-orphan-'+'%s'])" % tag
        proc = subprocess.Popen([NSBOX, "python", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(processes_with(marker))
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(processes_with(marker), [])


class ExitCodes(SandboxTest):
    def test_exit_code(self):
        p, res = self.run_json("python", "-c", "import sys; sys.exit(42)")
        self.assertEqual((res["status"], res["exit_code"], p.returncode), ("exited", 42, 42))

    def test_signal(self):
        p, res = self.run_json("python", "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
        self.assertEqual(res["status"], "signaled")
        self.assertEqual(res["signal"], signal.SIGSEGV)
        self.assertEqual(res["signal_name"], "SIGSEGV")
        self.assertEqual(p.returncode, 128 + signal.SIGSEGV)

    def test_python_args_and_stdin(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("from stdin\n")
        os.chmod(f.name, 0o644)
        try:
            p, res = self.run_json("python", "--stdin", f.name, "-c",
                                   "import sys; print(sys.argv[1:], sys.stdin.read().strip())", "a", "b c")
            self.assertEqual(res["stdout"]["text"], "['a', 'b c'] from stdin\n")
            self.assertEqual(res["command"][:5], ["python3", "-I", "-B", "-c",
                                                  "import sys; print(sys.argv[1:], sys.stdin.read().strip())"])
        finally:
            os.unlink(f.name)

    def test_run_command(self):
        p, res = self.run_json("run", "--", "/bin/echo", "hello", "world")
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], "hello world\n")
        self.assertEqual(res["command"], ["/bin/echo", "hello", "world"])


class Scripts(SandboxTest):
    """nsbox run -- SCRIPT: its #! interpreter comes along (it failed with
    'execve SCRIPT: No such file or directory', the interpreter's absence)."""
    def test_script_with_its_interpreter(self):
        d = tempfile.mkdtemp(dir="/var/tmp")    # a command under /tmp is refused (the sandbox owns /tmp)
        os.chmod(d, 0o755)
        try:
            scripts = {"direct.sh": "#!/bin/sh\necho sh \"$@\"\n",
                       "via_env.py": "#!/usr/bin/env python3\nimport sys\nprint('py', sys.argv[1:])\n",
                       "nested": "#!%s/direct.sh\n" % d}
            for name, text in scripts.items():
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write(text)
                os.chmod(path, 0o755)
            for name, out in (("direct.sh", "sh a\n"), ("via_env.py", "py ['a']\n"),
                              ("nested", "sh %s/nested a\n" % d)):
                with self.subTest(name):
                    p, res = self.run_json("run", "--", os.path.join(d, name), "a")
                    self.assertEqual((res["status"], res["stdout"]["text"]), ("exited", out), res)
        finally:
            shutil.rmtree(d)


class ResultFile(SandboxTest):
    def test_result_file_holds_what_json_prints(self):
        d = tempfile.mkdtemp()
        os.chmod(d, 0o777)
        try:
            path = os.path.join(d, "result.json")
            p = self.nsbox("python", "--json", "--result", path, "-c", "print('hi')")
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(path, "rb") as f:
                self.assertEqual(f.read(), p.stdout)     # same bytes, ending in a newline
        finally:
            shutil.rmtree(d)


class LostResult(SandboxTest):
    """A result that cannot be delivered is nsbox's failure (125), never the
    program's exit code, and a closed stdout is never reused for anything."""
    def test_full_or_closed_stdout(self):
        with open("/dev/full", "wb") as full:
            p = subprocess.run([NSBOX, "python", "--json", "-c", "pass"], stdout=full, stderr=subprocess.PIPE,
                               timeout=60)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"cannot write the result to stdout: No space left on device", p.stderr)
        p = subprocess.run(["/bin/sh", "-c", 'exec "$0" python --json -c pass >&-', NSBOX],
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"cannot write the result to stdout: Bad file descriptor", p.stderr)
        p = subprocess.run(["/bin/sh", "-c", 'exec "$0" profile show python >&-', NSBOX],
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 125, p.stderr)


class BadInput(SandboxTest):
    def check(self, args, needle):
        p = self.nsbox(*args)
        self.assertEqual(p.returncode, 125, (args, p.stdout, p.stderr))
        self.assertIn(needle, p.stderr.decode())

    def test_usage_errors(self):
        self.check(["run", "--frobnicate", "--", "true"], "--frobnicate")
        self.check(["python", "--memory", "lots", "-c", "pass"], "lots")
        self.check(["python", "--wall-time", "10 parsecs", "-c", "pass"], "10 parsecs")
        self.check(["python", "/nonexistent/script.py"], "/nonexistent/script.py")
        self.check(["python", "--interpreter", "/nonexistent/python", "-c", "pass"], "/nonexistent/python")
        self.check(["python", "--workspace", "/nonexistent/ws", "-c", "pass"], "/nonexistent/ws")

    def test_workspace_or_harness_that_is_a_file(self):
        with tempfile.NamedTemporaryFile(prefix="nsbox-notadir-") as f:
            for opt in ("--workspace", "--harness"):
                with self.subTest(opt):
                    p, res = self.run_json("run", opt, f.name, "--", "/bin/true")
                    self.assertEqual((res["status"], res["error"]["stage"], p.returncode), ("error", "config", 125))
                    self.assertIn("%s '%s' is not a directory" % (opt, f.name), res["error"]["message"])

    def test_setup_failure_is_error_not_a_program_result(self):
        p, res = self.run_json("python", "--workspace", "/nonexistent/ws", "-c", "pass")
        self.assertEqual(res["status"], "error")
        self.assertIsNone(res["exit_code"])
        self.assertTrue(res["error"]["stage"])
        self.assertEqual(p.returncode, 125)


if __name__ == "__main__":
    unittest.main()


class LinkedLibraries(unittest.TestCase):
    """Libraries only some runs need (libsystemd: a systemd scope, asked for
    on some hosts; libarchive: --image) are dlopened when first needed, never
    linked: each linked one is loaded and relocated at every nsbox start
    (libsystemd and its five cost `nsbox --version` 0.6 ms here) and mapped
    into every warm zygote (docs/performance.md)."""

    def needed(self, path):
        out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
        return [line.split("[", 1)[1].split("]", 1)[0] for line in out.splitlines() if "(NEEDED)" in line]

    def test_optional_libraries_are_not_linked(self):
        warm_lib = os.path.join(os.path.dirname(os.path.realpath(NSBOX)), "warm", "libnsbox_warm.so")
        paths = [NSBOX] + ([warm_lib] if os.path.exists(warm_lib) else [])
        for path in paths:
            needed = self.needed(path)
            self.assertTrue(needed, "%s: readelf found no NEEDED entry at all" % path)
            for lib in ("libsystemd", "libarchive", "libgcrypt", "liblzma", "libzstd"):
                self.assertFalse([n for n in needed if n.startswith(lib)], "%s links %s: %s" % (path, lib, needed))
