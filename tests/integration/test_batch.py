"""nsbox batch end to end: mixed jobs, bad lines, resume, shard, parallelism,
cancellation and the progress line."""
import json
import os
import pty
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from nsbtest import NSBOX, SandboxTest, processes_with

SPEC = {"program": {"source": "import sys\nprint(int(sys.argv[1]) * 2)\n"},
        "cases": [{"name": "double", "args": ["21"], "expect": {"stdout": {"equals": "42\n"}}}]}


def jsonl(jobs):
    return "".join((j if isinstance(j, str) else json.dumps(j)) + "\n" for j in jobs).encode()


def py(id_, code, **kw):
    return dict(id=id_, kind="python", code=code, **kw)


class Batch(SandboxTest):
    def batch(self, jobs, *opts, timeout=120, **kw):
        p = self.nsbox("batch", *opts, "-", input=jsonl(jobs), timeout=timeout, **kw)
        lines = p.stdout.decode().splitlines()
        out = {}
        for line in lines:
            d = json.loads(line)   # every line is one whole JSON object
            out.setdefault(d["id"], d)
        return p, lines, out

    def test_mixed_jobs(self):
        jobs = [
            py("pass", "def f(x):\n    return x + 1", test_code="assert f(1) == 2\nprint('ok')"),
            py("fail", "def f(x):\n    return x", test_code="assert f(1) == 2"),
            py("timeout", "while True: pass", timeout=0.5),
            py("crash", "import os; os.kill(os.getpid(), 9)"),
            "",
            {"id": "run", "kind": "run", "argv": ["/bin/echo", "hi"]},
            {"id": "judge", "kind": "judge", "spec": SPEC},
            {"id": 7, "kind": "python", "code": "import sys; print(sys.stdin.read())", "stdin": "fed"},
        ]
        p, lines, out = self.batch(jobs, "-j", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(lines), 7)
        self.assertEqual(set(out), {"pass", "fail", "timeout", "crash", "run", "judge", 7})
        self.assertEqual((out["pass"]["outcome"], out["pass"]["label"], out["pass"]["stdout"]["text"]), ("pass", 1, "ok\n"))
        self.assertEqual((out["fail"]["outcome"], out["fail"]["label"]), ("fail", 0))
        self.assertIn("AssertionError", out["fail"]["stderr"]["text"])
        self.assertEqual((out["timeout"]["outcome"], out["timeout"]["limit"]), ("timeout", "wall_time"))
        self.assertEqual((out["crash"]["outcome"], out["crash"]["status"]), ("fail", "signaled"))
        self.assertEqual(out["run"]["stdout"]["text"], "hi\n")
        self.assertNotIn("outcome", out["run"])          # only python jobs carry outcome/label
        self.assertEqual((out["judge"]["schema"], out["judge"]["verdict"]), ("nsbox.verdict/1", "pass"))
        self.assertEqual(out[7]["stdout"]["text"], "fed\n")
        self.assertEqual(out["pass"]["batch"]["line"], 1)
        self.assertEqual(out["run"]["batch"]["line"], 6)
        self.assertEqual(out["pass"]["command"], ["python3", "-I", "-B", "/program/main.py"])
        self.assertEqual(len(out["pass"]["program_sha256"]), 64)
        # stderr is not a terminal: no progress line, only the closing summary
        self.assertRegex(p.stderr.decode(), r"^nsbox batch: 7 lines in [\d.]+s: pass 4 fail 2 timeout 1 error 0; "
                                            r"bad lines 0\n$")

    def test_bad_lines_are_results_and_the_batch_goes_on(self):
        jobs = [
            py("a", "print(1)"),
            "{not json",
            py("b", "print(2)", limits={"wall_time": "1s", "walltime": "2s"}),
            {"id": "c", "kind": "perl", "code": "1"},
            py("a", "print(3)"),
            {"id": "d", "kind": "judge", "spec": {"program": {"source": "x"}}},
            py("e", "print(5)"),
            py("b", "print(8)"),   # the id of the bad line 3: a duplicate, not a second job "b"
        ]
        p, lines, out = self.batch(jobs, "-j", "2")
        self.assertEqual(p.returncode, 2, p.stderr)   # bad lines: a distinct status, the batch still ran
        self.assertIn(b"; bad lines 6 (first: line 2)", p.stderr)
        self.assertEqual(len(lines), 8)
        by_line = {json.loads(l)["batch"]["line"]: json.loads(l) for l in lines}
        for n, needle in ((2, "invalid JSON"), (3, 'unknown key "walltime"'), (4, "unknown kind"),
                          (5, 'duplicate id "a" (first on line 1)'), (6, "spec"),
                          (8, 'duplicate id "b" (first on line 3)')):
            d = by_line[n]
            self.assertEqual((d["status"], d["outcome"], d["label"]), ("error", "error", 0))
            self.assertEqual(d["error"]["stage"], "config")
            self.assertTrue(d["error"]["message"].startswith("line %d: " % n), d["error"]["message"])
            self.assertIn(needle, d["error"]["message"])
        self.assertIsNone(by_line[2]["id"])
        self.assertEqual(by_line[3]["id"], "b")
        self.assertEqual(by_line[7]["stdout"]["text"], "5\n")   # after the bad lines, still running

    def test_flags_are_defaults_and_job_limits_override(self):
        sleeper = "import time; time.sleep(1); print('woke')"
        jobs = [py("default", sleeper), py("own", sleeper, timeout=5),
                py("mem", "x = bytearray(200 << 20)", limits={"memory": "64M", "wall_time": "20s"})]
        p, lines, out = self.batch(jobs, "--wall-time", "300ms", "-j", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(out["default"]["outcome"], "timeout")
        self.assertEqual((out["own"]["outcome"], out["own"]["stdout"]["text"]), ("pass", "woke\n"))
        self.assertEqual(out["mem"]["outcome"], "fail")   # a non-time limit is the program's failure

    def test_a_judge_spec_names_its_profile(self):
        d = tempfile.mkdtemp(prefix="nsbox-prof.", dir="/var/tmp")
        try:
            os.chmod(d, 0o755)
            prof = os.path.join(d, "tight.ini")
            with open(prof, "w") as f:
                f.write("[limits]\nwall_time = 300ms\n")
            spec = {"program": {"source": "import time\ntime.sleep(2)\n"}, "profile": prof,
                    "cases": [{"name": "sleeps", "expect": {"exit_code": 0}}]}
            p, lines, out = self.batch([{"id": "j", "kind": "judge", "spec": spec}])
            self.assertEqual(p.returncode, 0, p.stderr)
            case = out["j"]["cases"][0]
            self.assertEqual(case["result"]["limit"], "wall_time", case)
            spec["profile"] = os.path.join(d, "missing.ini")
            p, lines, out = self.batch([{"id": "k", "kind": "judge", "spec": spec}])
            self.assertEqual(out["k"]["status"], "error", out["k"])
            self.assertIn("missing.ini", out["k"]["error"]["message"])
        finally:
            shutil.rmtree(d)

    def test_every_job_has_a_fresh_sandbox(self):
        marker = uuid.uuid4().hex
        code = ("import os\np = '/tmp/left-behind'\nprint(os.path.exists(p))\n"
                "open(p, 'w').write('%s')\nprint(os.getpid())" % marker)
        p, lines, out = self.batch([py("one", code), py("two", code)], "-j", "1")
        for k in ("one", "two"):
            self.assertEqual(out[k]["stdout"]["text"].split()[0], "False")

    def test_parallel_with_j2_serial_with_j1(self):
        # Evidence from the results, not a timed assertion: with -j 2 the two
        # 1-second jobs' intervals overlap; with -j 1 they never do.
        jobs = [py("x", "import time; time.sleep(1)"), py("y", "import time; time.sleep(1)")]

        def spans(*opts):
            p, lines, out = self.batch(jobs, *opts)
            self.assertEqual(p.returncode, 0, p.stderr)
            return sorted((d["batch"]["start_ms"], d["batch"]["end_ms"]) for d in out.values())

        (s1, e1), (s2, e2) = spans("-j", "2")
        self.assertLess(s2, e1, "the second job started only after the first ended")
        (s1, e1), (s2, e2) = spans("-j", "1")
        self.assertGreaterEqual(s2, e1)

    def test_stdin_and_result_files(self):
        """CONTRACT: --stdin and --result are shared by batch: jobs without
        stdin read FILE; every line also goes to the --result file, which
        `--resume R --result R` continues after a line cut by a crash."""
        d = tempfile.mkdtemp()
        try:
            given, res = os.path.join(d, "in.txt"), os.path.join(d, "res.jsonl")
            with open(given, "w") as f:
                f.write("fed from a file\n")
            os.chmod(d, 0o777)
            os.chmod(given, 0o644)
            echo = "import sys; print(sys.stdin.read().strip())"
            jobs = [py("a", echo), py("b", echo, stdin="own"),
                    {"id": "j", "kind": "judge", "spec": {"program": {"source": "print(input())"},
                                                          "cases": [{"name": "c", "expect": {"stdout": {"equals": "fed from a file\n"}}}]}}]
            p, lines, out = self.batch(jobs, "--stdin", given, "--result", res)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual((out["a"]["stdout"]["text"], out["b"]["stdout"]["text"], out["j"]["verdict"]),
                             ("fed from a file\n", "own\n", "pass"))
            with open(res) as f:
                self.assertEqual(f.read().splitlines(), lines)
            # a crash cut the last line: resume into the same file
            with open(res, "a") as f:
                f.write('{"id": "late", "sta')
            p, lines2, out2 = self.batch(jobs + [py("late", "print('late')")], "--resume", res, "--result", res)
            self.assertEqual((p.returncode, set(out2)), (0, {"late"}), p.stderr)
            with open(res) as f:
                kept = f.read().splitlines()
            self.assertEqual(kept[:3], lines)
            self.assertEqual(kept[3], '{"id": "late", "sta')
            self.assertEqual(json.loads(kept[4])["stdout"]["text"], "late\n")
            # a symlink at the name is never followed
            link = os.path.join(d, "link.jsonl")
            os.symlink(given, link)
            p, _, _ = self.batch(jobs[:1], "--result", link)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(b"a symlink in the path", p.stderr)
            with open(given) as f:
                self.assertEqual(f.read(), "fed from a file\n")
        finally:
            shutil.rmtree(d)

    def test_resume_skips_done_ids(self):
        d = tempfile.mkdtemp()
        try:
            done = os.path.join(d, "done.jsonl")
            with open(done, "w") as f:
                f.write(json.dumps({"id": "a", "status": "exited"}) + "\n")
                f.write(json.dumps({"id": 3, "status": "exited"}) + "\n")
                f.write('{"id": "b", "stat')   # a line cut by a crash: not done
            os.chmod(d, 0o755)
            os.chmod(done, 0o644)
            jobs = [py("a", "print(1)"), py("b", "print(2)"), py(3, "print(3)"), py("3", "print(4)")]
            p, lines, out = self.batch(jobs, "--resume", done)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(set(out), {"b", "3"})
            # a results file that does not exist yet: the first run
            p, lines, out = self.batch(jobs, "--resume", os.path.join(d, "missing.jsonl"))
            self.assertEqual(len(out), 4)
        finally:
            shutil.rmtree(d)

    def test_resume_from_a_results_file_over_a_gib(self):
        """The results file grows with the batch (a job flooding its output
        leaves a line of about a MiB): past 1 GiB, --resume refused it ('is
        larger than 1073741824 bytes', 125) and the batch could not be resumed
        at all. A sparse GiB of NULs (one overlong, unreadable line) stands in
        for it here."""
        d = tempfile.mkdtemp()
        try:
            done = os.path.join(d, "done.jsonl")
            with open(done, "wb") as f:
                f.truncate((1 << 30) + 4096)
                f.seek(0, os.SEEK_END)
                f.write(b"\n" + json.dumps({"id": "a", "status": "exited"}).encode() + b"\n")
            os.chmod(d, 0o755)
            os.chmod(done, 0o644)
            p, lines, out = self.batch([py("a", "print(1)"), py("b", "print(2)")], "--resume", done, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(set(out), {"b"})
        finally:
            shutil.rmtree(d)

    def test_shards_split_the_lines(self):
        jobs = [py("j%d" % i, "print(%d)" % i) for i in range(7)]
        seen = []
        for k in range(3):
            p, lines, out = self.batch(jobs, "--shard", "%d/3" % k)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(sorted(d["batch"]["line"] for d in out.values()), list(range(k + 1, 8, 3)))
            seen += list(out)
        self.assertEqual(sorted(seen), sorted("j%d" % i for i in range(7)))

    def test_usage_errors(self):
        for args in (["--shard", "3/3"], ["--shard", "x"], ["-j", "0"], ["/nonexistent/jobs.jsonl"],
                     ["--resume", "/"], ["a", "b"]):
            p = self.nsbox("batch", *args, input=b"", timeout=30)
            self.assertEqual(p.returncode, 125, (args, p.stderr))
            self.assertIn(b"nsbox:", p.stderr)
        p = self.nsbox("batch", input=b"", timeout=30)
        self.assertEqual((p.returncode, p.stdout), (0, b""))

    def test_result_file_inside_the_workspace_is_refused(self):
        """--result is written as jobs end: inside the workspace, a later job
        would read the earlier verdicts (expected values in their reasons)."""
        d = tempfile.mkdtemp()
        try:
            os.chmod(d, 0o755)
            result = os.path.join(d, "results.jsonl")
            p = self.nsbox("batch", "--workspace", d, "--result", result,
                           input=jsonl([py("a", "print(1)")]), timeout=60)
            self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
            self.assertIn(b"--result", p.stderr)
            self.assertIn(b"lies inside --workspace", p.stderr)
            self.assertFalse(os.path.exists(result))
            # nor stdout redirected there by the caller
            out_path = os.path.join(d, "results.out")
            with open(out_path, "wb") as out:
                p = subprocess.run([NSBOX, "batch", "--workspace", d], input=jsonl([py("a", "print(1)")]),
                                   stdout=out, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(b"stdout", p.stderr)
            self.assertIn(b"lies inside --workspace", p.stderr)
            self.assertEqual(os.path.getsize(out_path), 0)
        finally:
            shutil.rmtree(d)

    def test_jobs_file_inside_the_workspace_is_refused(self):
        d = tempfile.mkdtemp()
        try:
            jobs = os.path.join(d, "jobs.jsonl")
            with open(jobs, "wb") as f:
                f.write(jsonl([py("a", "print(open('/workspace/jobs.jsonl').read())", test_code="assert 1")]))
            os.chmod(d, 0o755)
            os.chmod(jobs, 0o644)
            p = self.nsbox("batch", "--workspace", d, jobs, timeout=60)
            self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
            self.assertIn(b"lies inside --workspace", p.stderr)
        finally:
            shutil.rmtree(d)

    def test_output_into_the_jobs_file_is_refused(self):
        """`nsbox batch J >> J` and `--result J` read their own lines back as
        jobs (each a bad line that adds one more, without end); `--result J`
        alone truncated J before a job was read (exit 0, no line). Refused
        before anything runs, J untouched."""
        d = tempfile.mkdtemp()

        def refused(opts, needle, out_path=None, stdin=None):
            """nsbox batch OPTS (stdout appended to OUT_PATH) must exit 125."""
            with open(out_path or os.devnull, "ab") as out:
                p = subprocess.run([NSBOX, "batch", *opts], stdin=stdin, stdout=out, stderr=subprocess.PIPE,
                                   timeout=30)
            self.assertEqual(p.returncode, 125, (opts, p.stderr[-300:]))
            self.assertIn(needle, p.stderr)

        try:
            jobs = os.path.join(d, "jobs.jsonl")
            given = jsonl(["{not a job", py("a", "print(1)")])
            with open(jobs, "wb") as f:
                f.write(given)
            os.chmod(d, 0o777)
            os.chmod(jobs, 0o666)
            refused([jobs], b"stdout is the jobs file", out_path=jobs)
            refused(["--result", jobs, jobs], b"is the jobs file")
            refused(["--resume", jobs, "--result", jobs, jobs], b"is the jobs file")
            with open(jobs, "rb") as inp:   # `nsbox batch - < J >> J`
                refused(["-"], b"stdout is the jobs file", out_path=jobs, stdin=inp)
            with open(jobs, "rb") as f:
                self.assertEqual(f.read(), given)
            # --stdin FILE that is where the results go: each job read the
            # lines, output included, of the jobs before it
            given_in = os.path.join(d, "in.txt")
            with open(jobs, "wb") as f:
                f.write(jsonl([py("a", "print('private')"), py("b", "import sys; print(sys.stdin.read())")]))
            with open(given_in, "w") as f:
                f.write("input\n")
            refused(["--stdin", given_in, "--result", given_in, jobs], b"is where the results go")
            refused(["--stdin", given_in, jobs], b"is where the results go", out_path=given_in)
            with open(given_in) as f:
                self.assertEqual(f.read(), "input\n")
            # --stdin J: every program read the whole jobs file, tests and all
            refused(["--stdin", jobs, jobs], b"is the jobs file: every program would read the tests")
            p = subprocess.run([NSBOX, "batch", "/dev/null"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=30)   # not regular files: fine
            self.assertEqual(p.returncode, 0, p.stderr)
        finally:
            shutil.rmtree(d)

    def test_more_jobs_at_once_than_file_descriptors(self):
        """-j above what the host allows (each running worker holds a pipe in
        nsbox): the jobs wait for a worker instead of the whole batch ending
        with 125 and no line ('pipe for the worker of line 34: Too many open
        files'). A failing start is not a failing batch."""
        import resource
        jobs = [{"id": i, "kind": "run", "argv": ["/bin/sleep", "0.5"]} for i in range(50)]
        p = subprocess.run([NSBOX, "batch", "-j", "64", "-"], input=jsonl(jobs), capture_output=True, timeout=300,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40)))
        self.assertEqual(p.returncode, 0, p.stderr[-500:])
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual(sorted(d["id"] for d in lines), list(range(50)))
        self.assertEqual({(d["status"], d["exit_code"]) for d in lines}, {("exited", 0)},
                         [d["error"] for d in lines if d["error"]][:3])

    def test_unwritable_stdout_says_why(self):
        with open("/dev/full", "wb") as full:
            p = subprocess.run([NSBOX, "batch", "-"], input=jsonl([py("a", "pass")]), stdout=full,
                               stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"cannot write the results to stdout: No space left on device", p.stderr)

    def test_sigint_kills_every_sandbox_and_keeps_whole_lines(self):
        marker = "%d.%06d" % (300 + os.getpid() % 100, int(uuid.uuid4().int % 10 ** 6))
        jobs = [py("quick", "print(1)")] + [
            {"id": "s%d" % i, "kind": "run", "argv": ["/bin/sleep", marker]} for i in range(4)]
        proc = subprocess.Popen([NSBOX, "batch", "-j", "2", "-"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdin.write(jsonl(jobs))
        proc.stdin.close()
        proc.stdin = None   # communicate() must not flush it
        first = proc.stdout.readline()   # the quick job's line arrives while the batch runs
        deadline = time.monotonic() + 30
        while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        if len(processes_with(marker)) != 2:
            proc.kill()
            proc.communicate()
            self.fail("two sandboxes should be running")
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, 130, err)
        self.assertEqual(json.loads(first)["id"], "quick")
        self.assertEqual(rest, b"")                 # cancelled jobs write nothing: resume reruns them
        self.assertEqual(processes_with(marker), [])

    def test_progress_on_a_terminal_only(self):
        master, slave = pty.openpty()
        try:
            p = subprocess.run([NSBOX, "batch", "-"], input=jsonl([py("a", "print(1)"), py("b", "1/0")]),
                               stdout=subprocess.PIPE, stderr=slave, timeout=60)
            os.close(slave)
            slave = -1
            shown = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                shown += chunk
        finally:
            if slave >= 0:
                os.close(slave)
            os.close(master)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(len(p.stdout.splitlines()), 2)
        self.assertIn(b"2 done", shown)
        self.assertIn(b"pass 1 fail 1 timeout 0 error 0", shown)

    def test_progress_counts_a_file_total(self):
        d = tempfile.mkdtemp()
        master, slave = pty.openpty()
        try:
            path = os.path.join(d, "jobs.jsonl")
            with open(path, "wb") as f:
                f.write(jsonl([py("a", "print(1)"), "", py("b", "print(2)"), py("c", "print(3)")]))
            os.chmod(d, 0o755)
            os.chmod(path, 0o644)
            p = subprocess.run([NSBOX, "batch", path], stdout=subprocess.PIPE, stderr=slave, timeout=60)
            os.close(slave)
            slave = -1
            shown = os.read(master, 65536)
        finally:
            if slave >= 0:
                os.close(slave)
            os.close(master)
            shutil.rmtree(d)
        self.assertEqual(p.returncode, 0)
        self.assertIn(b"3/3", shown)

    def test_a_killed_worker_is_an_error_line_and_the_batch_goes_on(self):
        marker = "%d.%06d" % (200 + os.getpid() % 100, int(uuid.uuid4().int % 10 ** 6))
        jobs = [{"id": "victim", "kind": "run", "argv": ["/bin/sleep", marker]}, py("after", "print('still here')")]
        proc = subprocess.Popen([NSBOX, "batch", "-j", "1", "-"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdin.write(jsonl(jobs))
        proc.stdin.close()
        proc.stdin = None
        deadline = time.monotonic() + 30
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == proc.pid]
        if len(workers) != 1:
            proc.kill()
            proc.communicate()
            self.fail("expected one worker, found %r" % workers)
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        lines = [json.loads(l) for l in out.decode().splitlines()]
        self.assertEqual([d["id"] for d in lines], ["victim", "after"])
        self.assertEqual((lines[0]["status"], lines[0]["error"]["stage"]), ("error", "supervise"))
        self.assertIn("died of signal 9 (SIGKILL)", lines[0]["error"]["message"])
        self.assertNotIn("Input/output error", lines[0]["error"]["message"])
        self.assertEqual((lines[0]["start"], lines[0].get("start_reason")), ("cold", None), lines[0])
        self.assertEqual(lines[1]["stdout"]["text"], "still here\n")
        deadline = time.monotonic() + 10   # the sandbox dies with its worker
        while processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(processes_with(marker), [])


    def test_a_cancelled_job_ends_cancelled_and_its_slot_runs_the_next(self):
        """#29's cancel line in #28's persistent workers: the job's worker is
        cancelled (its line says so, once), and the slot's later jobs run in
        a fresh worker, cold and warm."""
        for warm in ([], ["--warm"]):
            with self.subTest(warm=bool(warm)):
                marker = "%d.%06d" % (300 + os.getpid() % 100, int(uuid.uuid4().int % 10 ** 6))
                proc = subprocess.Popen([NSBOX, "batch", *warm, "-j", "1", "-"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                proc.stdin.write(jsonl([py("before", "print(1)"),
                                        {"id": "victim", "kind": "run", "argv": ["/bin/sleep", marker]}]))
                proc.stdin.flush()
                deadline = time.monotonic() + 30
                while not processes_with(marker) and time.monotonic() < deadline:
                    time.sleep(0.05)
                proc.stdin.write(b'{"cancel": "victim"}\n' + jsonl([py("after", "print(2)"), py("last", "print(3)")]))
                proc.stdin.close()
                proc.stdin = None
                out, err = proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, 0, err)
                lines = [json.loads(l) for l in out.decode().splitlines()]
                self.assertEqual([d["id"] for d in lines], ["before", "victim", "after", "last"], err)
                self.assertEqual(lines[1]["status"], "cancelled", lines[1])
                self.assertEqual([d["stdout"]["text"] for d in lines[2:]], ["2\n", "3\n"], err)
                if warm:
                    self.assertEqual([d["start"] for d in lines[2:]], ["warm", "warm"], lines[2:])
                self.assertEqual(processes_with(marker), [])

    def test_a_cancelled_jobs_line_says_the_start_it_had(self):
        """A cancelled job's line carries the start its worker was given: a
        warm python job said "cold" (with no reason) before; a cold one says
        cold, with its reason under --warm."""
        for warm, victim, want in (([], "py", ("cold", None)), (["--warm"], "py", ("warm", None)),
                                   (["--warm"], "run", ("cold", "not a python job"))):
            with self.subTest(warm=bool(warm), victim=victim):
                marker = "%d.%06d" % (500 + os.getpid() % 100, int(uuid.uuid4().int % 10 ** 6))
                code = ("import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(%s)'])"
                        % marker)
                job = py("victim", code, timeout=600) if victim == "py" else \
                    {"id": "victim", "kind": "run", "argv": ["/bin/sleep", marker]}
                proc = subprocess.Popen([NSBOX, "batch", *warm, "-j", "1", "-"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                proc.stdin.write(jsonl([py("before", "print(1)"), job]))
                proc.stdin.flush()
                deadline = time.monotonic() + 30
                while not processes_with(marker) and time.monotonic() < deadline:
                    time.sleep(0.05)
                proc.stdin.write(b'{"cancel": "victim"}\n')
                proc.stdin.close()
                proc.stdin = None
                out, err = proc.communicate(timeout=60)
                self.assertEqual(proc.returncode, 0, err)
                lines = {d["id"]: d for d in map(json.loads, out.decode().splitlines())}
                got = lines["victim"]
                self.assertEqual(got["status"], "cancelled", got)
                self.assertEqual((got["start"], got.get("start_reason")), want, got)
                if warm:
                    self.assertEqual(lines["before"]["start"], "warm", lines["before"])
                self.assertEqual(processes_with(marker), [])

    def test_a_cancel_line_read_with_the_job_it_names(self):
        """Review of the #29 follow-up: a cancel line that arrived in the same read as
        the job line it names, while that job waited for a worker, was left
        in the buffer once the job started (cancel lines were taken only
        after a read): the job ran to its limit, cancelled by no one."""
        for warm in ([], ["--warm"]):
            with self.subTest(warm=bool(warm)):
                marker = "%d.%06d" % (700 + os.getpid() % 100, int(uuid.uuid4().int % 10 ** 6))
                proc = subprocess.Popen([NSBOX, "batch", *warm, "-j", "1", "-"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                proc.stdin.write(jsonl([{"id": "first", "kind": "run", "argv": ["/bin/sleep", marker]}]))
                proc.stdin.flush()
                deadline = time.monotonic() + 30
                while not processes_with(marker) and time.monotonic() < deadline:
                    time.sleep(0.05)
                proc.stdin.write(b'{"cancel": "first"}\n' + jsonl([py("second", "import time; time.sleep(60)",
                                                                      timeout=8)]) + b'{"cancel": "second"}\n')
                proc.stdin.flush()
                started = time.monotonic()
                first = json.loads(proc.stdout.readline())
                second = json.loads(proc.stdout.readline())
                took = time.monotonic() - started
                proc.stdin.close()
                proc.stdin = None
                proc.communicate(timeout=60)
                self.assertEqual((first["id"], first["status"]), ("first", "cancelled"), first)
                self.assertEqual((second["id"], second["status"]), ("second", "cancelled"), second)
                self.assertLess(took, 6)

    def test_a_judge_jobs_profile_stays_in_its_job(self):
        # A worker runs its slot's jobs one after the other (#28): a judge
        # spec's "profile" is overlaid on that job's config only. It used to
        # free lists of the batch's own config in the worker (its next job
        # then crashed it) and could leave the profile's env behind.
        d = tempfile.mkdtemp()
        try:
            os.chmod(d, 0o755)
            prof = os.path.join(d, "p.ini")
            with open(prof, "w") as f:
                f.write("[limits]\nwall_time = 300ms\n[env]\nFROM_PROFILE = leaked\n")
            show = "import os, time\ntime.sleep(0.5)\nprint(os.environ.get('FROM_PROFILE'), os.environ.get('CLI'))\n"
            judged = "import os, time\nprint(os.environ.get('FROM_PROFILE'), os.environ.get('CLI'), flush=True)\ntime.sleep(2)\n"
            spec = {"program": {"source": judged}, "profile": prof,
                    "cases": [{"name": "c", "expect": {"exit_code": 0}}]}
            for warm in ([], ["--warm"]):
                with self.subTest(warm=bool(warm)):
                    jobs = [{"id": "j", "kind": "judge", "spec": spec}] + [py("after%d" % i, show) for i in range(3)]
                    p, lines, out = self.batch(jobs, *warm, "-j", "1", "--env", "CLI=yes")
                    self.assertEqual(p.returncode, 0, p.stderr)
                    self.assertEqual(len(lines), 4, lines)
                    case = out["j"]["cases"][0]["result"]
                    self.assertEqual((case["stdout"]["text"], case["limit"]), ("leaked yes\n", "wall_time"), case)
                    for i in range(3):
                        r = out["after%d" % i]
                        self.assertEqual((r["status"], r["limit"], r["stdout"]["text"]), ("exited", None, "None yes\n"), r)
        finally:
            shutil.rmtree(d)

    def test_a_warm_job_dies_with_its_killed_worker(self):
        # A warm job's init is the zygote's child, not its worker's: the
        # worker's death must still end the job (its wall time was the
        # worker's to enforce), and the batch must not wait for it.
        marker = "%d.%06d" % (400 + os.getpid() % 100, int(uuid.uuid4().int % 10 ** 6))
        code = "import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(%s)'])" % marker
        jobs = [py("victim", code, timeout=600), py("after", "print('still here')")]
        proc = subprocess.Popen([NSBOX, "batch", "--warm", "-j", "1", "-"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdin.write(jsonl(jobs))
        proc.stdin.close()
        proc.stdin = None
        deadline = time.monotonic() + 30
        while not processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        def has_children(pid):
            try:
                with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                    return bool(f.read().split())
            except OSError:
                return True
        # the zygote's supervisor has the zygote's sandbox as its child; the
        # worker of a warm job has none (the job's init is the zygote's child)
        workers = [int(p) for p in os.listdir("/proc")
                   if p.isdigit() and _ppid(int(p)) == proc.pid and not has_children(int(p))]
        if len(workers) != 1 or not processes_with(marker):
            proc.kill()
            proc.communicate()
            self.fail("expected one worker and the job, found %r" % workers)
        os.kill(workers[0], signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            left = processes_with(marker)
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            proc.kill()
            proc.communicate()
            self.fail("the batch still waits for its killed worker's job %r" % left)
        lines = [json.loads(l) for l in out.decode().splitlines()]
        self.assertEqual([d["id"] for d in lines], ["victim", "after"])
        self.assertIn("died of signal 9", lines[0]["error"]["message"])
        # an error, never an answer; the start it was given (it said "cold",
        # "not run: the line could not become a job"), no errno text
        self.assertEqual((lines[0]["status"], lines[0]["outcome"], lines[0]["error"]["stage"]),
                         ("error", "error", "supervise"), lines[0])
        self.assertEqual((lines[0]["start"], lines[0].get("start_reason")), ("warm", None), lines[0])
        self.assertRegex(lines[0]["error"]["message"],
                         r"^line 1: the worker running this job died of signal 9 \(SIGKILL\)[^:]*$")
        self.assertEqual(lines[1]["stdout"]["text"], "still here\n")
        self.assertEqual(processes_with(marker), [])


def _ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
