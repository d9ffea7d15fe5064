"""A caller's mistake never looks like a result (issue 16): batch input that
is not JSON Lines, the batch summary and its exit status, limits that cannot
work, --stdin -, and the 127/126 of a command that does not exist or cannot
be executed (with python as the command getting its standard library)."""
import json
import os
import shutil
import subprocess
import tempfile
import threading

from nsbtest import NSBOX, SandboxTest

JOB = {"id": "a", "kind": "python", "code": "print(1)"}


def jsonl(*jobs):
    return "".join(json.dumps(j) + "\n" for j in jobs).encode()


def host_file(test, name, data):
    """A world-readable file in a fresh directory under /var/tmp (the
    sandbox owns /tmp), removed after the test; its path."""
    d = tempfile.mkdtemp(dir="/var/tmp")
    os.chmod(d, 0o755)
    test.addCleanup(shutil.rmtree, d)
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else json.dumps(data).encode())
    os.chmod(path, 0o644)
    return path


class BatchInput(SandboxTest):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.marker = os.path.join(self.dir, "ran")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o644)
        return path

    def refused(self, path, what, fix):
        p = self.nsbox("batch", path)
        self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
        err = p.stderr.decode()
        self.assertEqual(err.count("\n"), 1, err)          # one message, no summary, no job ran
        self.assertIn("is not JSON Lines", err)
        self.assertIn(what, err)
        self.assertIn(fix, err)

    def test_the_issue_reproducer_is_refused(self):
        path = self.write("arr.json", b'[{"id":"a","kind":"python","code":"print(1)"},\n'
                                      b' {"id":"b","kind":"python","code":"print(2)"}]\n')
        self.refused(path, "a JSON array", "jq -c '.[]' %s" % path)

    def test_other_shapes_are_refused_with_their_conversion(self):
        spec = {"program": {"source": "print(1)"}, "cases": [{"name": "a"}]}
        for name, data, what, fix in (
                ("one-line-array.json", json.dumps([JOB]).encode() + b"\n", "a JSON array", "jq -c '.[]'"),
                ("pretty.json", json.dumps(JOB, indent=2).encode(), "pretty-printed JSON", "jq -c ."),
                ("spec.json", json.dumps(spec, indent=1).encode(), "judge spec", "nsbox judge"),
                ("spec1.json", json.dumps(spec).encode() + b"\n", "judge spec", 'kind: "judge", spec: .'),
                ("hostname", b"\n\n  myhost\n", 'plain text ("myhost")', "one job object per line")):
            with self.subTest(name):
                self.refused(self.write(name, data), what, fix)

    def test_binary_input_is_refused_as_binary(self):
        # A NUL in the first line: binary data, not "pretty-printed JSON".
        path = self.write("nul.jsonl", b'{"id":"a",\0"kind":"python","code":"print(1)"}\n' + jsonl(JOB))
        self.refused(path, "its first line holds a NUL byte (at byte 11)", "UTF-8 text")
        self.assertNotIn(b"pretty", self.nsbox("batch", path).stderr)

    def test_a_first_line_too_long_to_read(self):
        # /dev/zero has no line end: it was read (and thrown away) for ever
        # at full CPU as one "too long" bad line; now refused from its head.
        p = self.nsbox("batch", "/dev/zero", timeout=120)
        self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
        self.assertIn(b"/dev/zero is not JSON Lines: its first line holds a NUL byte (at byte 1)", p.stderr)
        # a job line too long is still that job's bad line; the next runs
        big = json.dumps(dict(JOB, id="big", code="#" + "x" * (65 << 20))).encode() + b"\n"
        p = self.nsbox("batch", "-", input=big + jsonl(dict(JOB, id="b")), timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        got = {d["batch"]["line"]: d for d in map(json.loads, p.stdout.splitlines())}
        self.assertEqual((got[1]["status"], got[2]["id"], got[2]["outcome"]), ("error", "b", "pass"))
        self.assertIn("longer than", got[1]["error"]["message"])

    def test_a_byte_order_mark_is_read_past(self):
        # Windows editors and PowerShell's `>` start the file with a BOM:
        # the jobs behind it run, none is lost or refused.
        path = self.write("bom.jsonl", b"\xef\xbb\xbf" + jsonl(JOB, {"id": "b", "kind": "python", "code": "print(2)"}))
        p = self.nsbox("batch", path, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = sorted((d["id"], d["outcome"], d["stdout"]["text"]) for d in map(json.loads, p.stdout.splitlines()))
        self.assertEqual(got, [("a", "pass", "1\n"), ("b", "pass", "2\n")])
        self.assertIn(b"bad lines 0", p.stderr)

    def test_refused_before_any_job_runs(self):
        # A valid job after a bad first line must not have run.
        code = "open(%r, 'w').write('x')" % self.marker
        path = self.write("late.json", b"[\n" + jsonl({"id": "x", "kind": "run",
                                                       "argv": ["/bin/sh", "-c", "touch " + self.marker]}))
        self.refused(path, "a JSON array", "jq")
        self.assertFalse(os.path.exists(self.marker))
        p = self.nsbox("batch", "-", input=b"not json\n" + jsonl({"id": "y", "kind": "python", "code": code}))
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"the input on stdin is not JSON Lines", p.stderr)

    def test_an_earlier_results_file_survives_a_refusal(self):
        out = self.write("out.jsonl", b'{"id":"old","status":"exited"}\n')
        arr = self.write("arr.json", json.dumps([JOB]).encode() + b"\n")
        p = self.nsbox("batch", "--result", out, arr)
        self.assertEqual(p.returncode, 125, p.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), b'{"id":"old","status":"exited"}\n')
        # a JSON Lines input still gets it truncated and written, and an
        # empty one still makes it (empty)
        p = self.nsbox("batch", "--result", out, self.write("jobs.jsonl", jsonl(JOB)))
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as f:
            self.assertEqual([json.loads(l)["id"] for l in f.read().splitlines()], ["a"])
        empty = os.path.join(self.dir, "empty.jsonl")
        p = self.nsbox("batch", "--result", empty, "-", input=b"\n")
        self.assertEqual((p.returncode, os.path.getsize(empty)), (0, 0), p.stderr)

    def test_summary_on_a_pipe_and_the_bad_lines_status(self):
        jobs = jsonl(JOB, {"id": "b", "kind": "python", "code": "1/0"}) + b"{broken\n" + \
            jsonl({"id": "c", "kind": "python", "code": "print(3)", "limits": {"walltime": "2s"}})
        p = self.nsbox("batch", "-j", "2", "-", input=jobs, timeout=120)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 4)
        err = p.stderr.decode()
        self.assertRegex(err, r"^nsbox batch: 4 lines in \d+\.\ds: pass 1 fail 1 timeout 0 error 2; "
                              r"bad lines 2 \(first: line 3\)\n$")

    def test_failing_jobs_alone_exit_0_and_quiet_silences(self):
        jobs = jsonl(JOB, {"id": "b", "kind": "python", "code": "raise SystemExit(3)"},
                     {"id": "t", "kind": "python", "code": "while True: pass", "timeout": 0.5})
        p = self.nsbox("batch", "-", input=jobs, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr.decode(), r"^nsbox batch: 3 lines in [\d.]+s: pass 1 fail 1 timeout 1 error 0; "
                                            r"bad lines 0\n$")
        p = self.nsbox("batch", "--quiet", "-", input=jobs, timeout=120)
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        self.assertEqual(len(p.stdout.splitlines()), 3)


class Limits(SandboxTest):
    def usage(self, *args, needle):
        p = self.nsbox(*args)
        self.assertEqual((p.returncode, p.stdout), (125, b""), (args, p.stderr))
        self.assertIn(needle, p.stderr.decode())

    def test_zero_and_absurd_limits_are_usage_errors(self):
        for opt, value, needle in (("--memory", "1k", "allowed 1M to 1T"),
                                   ("--output-limit", "0", "allowed 1 to 1G"),
                                   ("--file-size", "0", "allowed 1 to 1T"),
                                   ("--wall-time", "48h", "allowed 1ms to 24h"),
                                   ("--tmp-size", "1", "allowed 4K to 1T")):
            with self.subTest(opt):
                self.usage("python", opt, value, "-c", "pass", needle=needle)
                self.usage("batch", opt, value, "-", needle=needle)

    def test_memory_below_what_python_needs(self):
        needle = "memory limit 8M is below 16M, the least a Python interpreter needs to start"
        self.usage("python", "--memory", "8M", "-c", "pass", needle=needle)
        self.usage("batch", "--memory", "8M", "-", needle=needle)
        # run is any program: 8M is fine for /bin/true
        p, res = self.run_json("run", "--memory", "8M", "--", "/bin/true")
        self.assertEqual((res["status"], p.returncode), ("exited", 0), res)
        # the floor is enough: python starts under it, on this host's backend
        p, res = self.run_json("python", "--memory", "16M", "-c", "print('up')")
        self.assertEqual((res["status"], res["stdout"]["text"]), ("exited", "up\n"), res)

    def test_a_profile_below_the_python_floor(self):
        prof = host_file(self, "small.ini", b"[limits]\nmemory = 8M\n")
        self.usage("python", "--profile", prof, "-c", "pass",
                   needle="memory limit 8M is below 16M, the least a Python interpreter needs")
        # the message names where the limit came from (it said only "memory
        # limit 8M ..." though no flag gave one)
        self.usage("python", "--profile", prof, "-c", "pass",
                   needle="profile '%s': [limits] memory: memory limit 8M is below 16M" % prof)
        self.usage("batch", "--profile", prof, "-", needle="profile '%s': [limits] memory: " % prof)
        p = self.nsbox("python", "--profile", prof, "--memory", "9M", "-c", "pass")
        self.assertEqual(p.returncode, 125)
        self.assertNotIn(b"profile '", p.stderr)   # the flag's value, not the profile's
        p, res = self.run_json("run", "--profile", prof, "--", "/bin/true")
        self.assertEqual((res["status"], p.returncode), ("exited", 0), res)

    def test_judge_spec_and_batch_line_limits(self):
        spec = host_file(self, "spec.json", {"program": {"source": "print(1)"}, "limits": {"memory": "4M"},
                                             "cases": [{"name": "a"}]})
        self.usage("judge", spec, needle="limits.memory: memory limit 4M is below 16M")
        p = self.nsbox("batch", "-", input=jsonl(dict(JOB, limits={"memory": "1k"}), dict(JOB, id="b")))
        self.assertEqual(p.returncode, 2, p.stderr)
        bad = {d["id"]: d for d in map(json.loads, p.stdout.splitlines())}["a"]
        self.assertEqual((bad["status"], bad["outcome"]), ("error", "error"))
        self.assertIn("limits.memory: '1k' is out of range: allowed 1M to 1T", bad["error"]["message"])


class StdinDash(SandboxTest):
    def test_piped_stdin_reaches_the_program(self):
        p = self.nsbox("python", "--stdin", "-", "-c", "print(input())", input=b"hi\n")
        self.assertEqual((p.returncode, p.stdout), (0, b"hi\n"), p.stderr)

    def test_without_it_stdin_stays_empty_and_nsbox_says_so(self):
        p = self.nsbox("python", "-c", "print(input())", input=b"hi\n")
        self.assertEqual(p.returncode, 1)
        self.assertIn(b"EOFError", p.stderr)
        self.assertIn(b"nsbox's own is passed only with --stdin -", p.stderr)

    def test_streamed_not_read_whole(self):
        # The program answers the first line while the writer still holds
        # the pipe open: nsbox did not wait for EOF.
        proc = subprocess.Popen([NSBOX, "python", "--stdin", "-", "--wall-time", "20s", "-c",
                                 "import sys\nprint('got', sys.stdin.readline().strip(), flush=True)\n"
                                 "print('then', sys.stdin.readline().strip(), flush=True)"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        guard = threading.Timer(60, proc.kill)   # a hang guard, not a timing: a stuck read fails, not hangs
        guard.start()
        self.addCleanup(guard.cancel)
        try:
            proc.stdin.write(b"one\n")
            proc.stdin.flush()
            self.assertEqual(proc.stdout.readline(), b"got one\n")
            proc.stdin.write(b"two\n")
            proc.stdin.close()
            out, err = proc.stdout.read(), proc.stderr.read()
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        self.assertEqual((proc.returncode, out), (0, b"then two\n"), err)

    def test_a_file_on_stdin_and_a_single_judge_case(self):
        with tempfile.TemporaryFile() as f:
            f.write(b"from a file\n")
            f.seek(0)
            p = self.nsbox("run", "--stdin", "-", "--", "/bin/cat", stdin=f)
        self.assertEqual((p.returncode, p.stdout), (0, b"from a file\n"), p.stderr)
        spec = host_file(self, "one.json", {
            "program": {"source": "print(input())"},
            "cases": [{"name": "piped", "expect": {"stdout": {"equals": "hi\n"}}},
                      {"name": "own", "stdin": "x\n", "expect": {"stdout": {"equals": "x\n"}}}]})
        p = self.nsbox("judge", "--stdin", "-", spec, input=b"hi\n")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        spec = host_file(self, "two.json", {"program": {"source": "print(input())"},
                                            "cases": [{"name": "a"}, {"name": "b"}]})
        p = self.nsbox("judge", "--stdin", "-", spec, input=b"hi\n")
        self.assertEqual(p.returncode, 125, p.stdout)
        self.assertIn(b"2 cases give no \"stdin\" of their own", p.stderr)

    def test_refused_where_it_cannot_serve(self):
        p = self.nsbox("batch", "--stdin", "-", "-", input=jsonl(JOB))
        self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
        self.assertIn(b"a batch runs many jobs", p.stderr)
        # A socket is no longer refused (issue #27): like every stdin but a
        # file, it is streamed through a fresh pipe, so the program cannot
        # write back through it (test_caller_fds).
        import socket
        a, b = socket.socketpair()
        try:
            b.sendall(b"over a socket\n")
            b.shutdown(socket.SHUT_WR)
            p = self.nsbox("python", "--stdin", "-", "-c",
                           "import os, stat; print(input(), stat.S_ISFIFO(os.fstat(0).st_mode))", stdin=a)
        finally:
            a.close()
            b.close()
        self.assertEqual((p.returncode, p.stdout), (0, b"over a socket True\n"), p.stderr)

    def test_a_terminal_is_copied_in_never_handed_in(self):
        """Typed input reaches the program line by line through a pipe;
        the terminal itself (TIOCSTI could type into the caller's shell)
        never enters the sandbox, and Ctrl-D is the end of the input."""
        master, slave = os.openpty()
        code = ("import os, sys\n"
                "first = input('name? ')\n"
                "print('hello', first, os.isatty(0), os.readlink('/proc/self/fd/0').split(':')[0])\n"
                "print('rest', sys.stdin.read().split())\n")
        proc = subprocess.Popen([NSBOX, "python", "--stdin", "-", "--wall-time", "20s", "-c", code],
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.close(slave)
        guard = threading.Timer(60, proc.kill)   # a hang guard, not a timing
        guard.start()
        self.addCleanup(guard.cancel)
        try:
            self.assertEqual(proc.stdout.read(len(b"name? ")), b"name? ")   # the program is reading
            os.write(master, b"ada\n")
            os.write(master, b"x y\n")
            os.write(master, b"\x04")                                        # Ctrl-D on an empty line
            out, err = proc.stdout.read(), proc.stderr.read()
            proc.wait(timeout=30)
        finally:
            os.close(master)
            proc.stdout.close()
            proc.stderr.close()
        self.assertEqual((proc.returncode, out), (0, b"hello ada False pipe\nrest ['x', 'y']\n"), err)


class LostOutput(SandboxTest):
    def test_output_nsbox_cannot_pass_on_is_its_failure(self):
        # `nsbox python -c 'print(1)' > /dev/full` exited 0: the program's
        # status, with its output lost. Now 125 and a message.
        with open("/dev/full", "wb") as full:
            p = subprocess.run([NSBOX, "python", "-c", "print(1); raise SystemExit(3)"], stdout=full,
                               stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(b"cannot pass the program's stdout on: No space left on device", p.stderr)
            p = subprocess.run([NSBOX, "run", "--", "/bin/sh", "-c", "echo oops >&2"], stdout=subprocess.PIPE,
                               stderr=full, timeout=60)
            self.assertEqual(p.returncode, 125)
        # nothing written, nothing lost: the program's own status
        with open("/dev/full", "wb") as full:
            p = subprocess.run([NSBOX, "python", "-c", "raise SystemExit(3)"], stdout=full, stderr=subprocess.PIPE,
                               timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        # a reader that went away (`| head -c 1`) is the pipeline's choice
        proc = subprocess.Popen([NSBOX, "python", "-c", "print('x' * 1000000); raise SystemExit(3)"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.read(1)
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        self.assertEqual(proc.wait(timeout=60), 3, err)


class CommandStatus(SandboxTest):
    def setUp(self):
        super().setUp()
        self.dir = tempfile.mkdtemp(dir="/var/tmp")   # the sandbox owns /tmp: a command there is refused
        os.chmod(self.dir, 0o755)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def file(self, name, data, mode):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
        return path

    def test_127_when_the_command_does_not_exist(self):
        for cmd in ("/no/such/command", "no-such-command-%d" % os.getpid()):
            with self.subTest(cmd):
                p, res = self.run_json("run", "--", cmd)
                self.assertEqual((p.returncode, res["status"], res["error"]["stage"]), (127, "error", "exec"), res)
                self.assertIn(cmd, res["error"]["message"])
                q = self.nsbox("run", "--", cmd)
                self.assertEqual(q.returncode, 127, q.stderr)

    def test_126_when_it_cannot_be_executed(self):
        os.mkdir(os.path.join(self.dir, "adir"))
        for path in (self.file("plain", b"echo hi\n", 0o644),            # no x bit
                     os.path.join(self.dir, "adir"),                     # a directory
                     self.file("badelf", b"\x7fELF garbage" * 4, 0o755),  # not a loadable ELF
                     self.file("text", b"just text\n", 0o755)):          # no #!, not ELF
            with self.subTest(path):
                p, res = self.run_json("run", "--", path)
                self.assertEqual((p.returncode, res["status"], res["error"]["stage"]), (126, "error", "exec"), res)
                self.assertIsNone(res["exit_code"])

    def test_126_when_path_holds_the_name_only_unexecutable(self):
        # execvp's rule, so env(1)'s and timeout(1)'s: a name PATH has only
        # as a file without the x bit (or a directory) exists, it cannot be
        # executed: 126, not 127 "not found"; an executable one later on PATH
        # is still found.
        name = "nsbox-cmd-%d" % os.getpid()
        plain = os.path.join(self.dir, "plain")
        os.mkdir(plain)
        os.chmod(plain, 0o755)
        self.file(os.path.join("plain", name), b"#!/bin/sh\necho hi\n", 0o644)
        dirs = os.path.join(self.dir, "dirs")
        os.makedirs(os.path.join(dirs, name))
        os.chmod(dirs, 0o755)
        good = os.path.join(self.dir, "good")
        os.mkdir(good)
        os.chmod(good, 0o755)
        self.file(os.path.join("good", name), b"#!/bin/sh\necho found\n", 0o755)
        for path, holder in ((plain, plain), (dirs, dirs), ("/nonexistent:" + plain, plain)):
            with self.subTest(path):
                p, res = self.run_json("run", "--", name, env=dict(os.environ, PATH=path))
                self.assertEqual((p.returncode, res["status"], res["error"]["stage"]), (126, "error", "exec"), res)
                self.assertIn("is on PATH only as '%s/%s'" % (holder, name), res["error"]["message"])
        p = self.nsbox("run", "--", name, env=dict(os.environ, PATH="%s:%s:%s" % (plain, dirs, good)))
        self.assertEqual((p.returncode, p.stdout), (0, b"found\n"), p.stderr)
        p = self.nsbox("run", "--", name, env=dict(os.environ, PATH="/nonexistent:/usr/bin"))
        self.assertEqual(p.returncode, 127, p.stderr)

    def test_other_sandbox_errors_stay_125(self):
        p, res = self.run_json("run", "--workspace", "/nonexistent/ws", "--", "/bin/true")
        self.assertEqual((p.returncode, res["status"]), (125, "error"))

    def test_python_as_the_command_gets_its_stdlib(self):
        real = os.path.realpath("/usr/bin/python3")
        link = os.path.join(self.dir, "python3")
        os.symlink(real, link)
        for cmd in ("/usr/bin/python3", real, link, "python3"):
            with self.subTest(cmd):
                p, res = self.run_json("run", "--", cmd, "-c", "import json, encodings; print(json.dumps(1))",
                                       env=dict(os.environ, PATH="/usr/bin:/bin"))
                self.assertEqual((res["status"], res["stdout"]["text"]), ("exited", "1\n"), res)
