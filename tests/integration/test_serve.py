"""nsbox serve end to end (#29, docs/serve.md): a SandboxFusion-style client
(urllib/http.client only) over the unix socket and over TCP with a token:
pass, fail, timeout, memory, stdin, the bad-request classes, auth, 200
concurrent requests, the queue bound, drain on SIGTERM and SIGKILL leaving no
job behind."""
import base64
import http.client
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

from nsbtest import NSBOX, SandboxTest

TOKEN = "s3cret-token-0123456789abcdef"


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.unix_path)
        except OSError:
            s.close()
            raise
        self.sock = s


def sf_request(code, **kw):
    """What verl's SandboxFusion caller sends."""
    req = {"compile_timeout": 10, "run_timeout": 10, "code": code, "stdin": "", "language": "python",
           "files": {}, "fetch_files": []}
    req.update(kw)
    return req


def descendants(pid):
    """Every process below pid, from /proc's parent links."""
    children = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def children_of(pid):
    out = []
    for p in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % p) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(p))
        except (OSError, ValueError, IndexError):
            pass
    return out


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Service:
    """A running `nsbox serve`; where it listens comes from its first line."""

    def __init__(self, test, listen, *opts, env=None):
        self.test = test
        self.proc = subprocess.Popen([NSBOX, "serve", "--listen", listen, *opts], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)
        self.log = b""
        deadline = time.time() + 30
        while b"listening on " not in self.log:
            if time.time() > deadline or self.proc.poll() is not None:
                self.stop()
                test.fail("nsbox serve did not start: %r" % self.log)
            r, _, _ = select.select([self.proc.stderr], [], [], 0.5)
            if r:
                self.log += os.read(self.proc.stderr.fileno(), 4096)
        self.where = self.log.split(b"listening on ", 1)[1].split(b" ", 1)[0].decode()

    def conn(self, timeout=120):
        if self.where.startswith("unix:"):
            return UnixConnection(self.where[5:], timeout=timeout)
        host, port = self.where[4:].rsplit(":", 1)
        return http.client.HTTPConnection(host, int(port), timeout=timeout)

    def call(self, method, path, body=None, headers=None, raw=None):
        c = self.conn()
        try:
            data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
            h = {"Content-Type": "application/json", "Accept": "application/json"}
            h.update(headers or {})
            c.request(method, path, body=data, headers=h)
            r = c.getresponse()
            text = r.read()
            try:
                js = json.loads(text) if text else None
            except ValueError:
                self.test.fail("not JSON: %r" % text)
            return r.status, js, r
        finally:
            c.close()

    def run_code(self, code, headers=None, path="/run_code", **kw):
        status, js, _ = self.call("POST", path, sf_request(code, **kw), headers)
        self.test.assertEqual(status, 200, js)
        return js

    def health(self, headers=None):
        return self.call("GET", "/v1/health", headers=headers)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.stderr.closed:
            return self.proc.returncode
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log += self.proc.stderr.read()
        self.proc.stderr.close()
        return self.proc.returncode


class ServeUnix(SandboxTest):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="nsbox-serve-")
        os.chmod(cls.tmp, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def service(self, *opts, name="s.sock"):
        path = os.path.join(self.tmp, name)
        s = Service(self, "unix:" + path, *opts)
        self.addCleanup(s.stop)
        return s

    def test_run_code_pass_fail_stdin(self):
        s = self.service("-j", "2")
        ok = s.run_code("print(input()[::-1])", stdin="olleh\n")
        # no HTTP thread in the service: one task, itself
        self.assertEqual(os.listdir("/proc/%d/task" % s.proc.pid), [str(s.proc.pid)])
        self.assertEqual(ok["status"], "Success", ok)
        self.assertEqual(ok["run_result"]["status"], "Finished")
        self.assertEqual(ok["run_result"]["return_code"], 0)
        self.assertEqual(ok["run_result"]["stdout"], "hello\n")
        self.assertIsNone(ok["compile_result"])
        self.assertIsInstance(ok["run_result"]["execution_time"], float)
        self.assertEqual(ok["files"], {})
        bad = s.run_code("import sys\nprint('no', file=sys.stderr)\nsys.exit(3)")
        self.assertEqual(bad["status"], "Failed", bad)
        self.assertEqual(bad["run_result"]["status"], "Finished")
        self.assertEqual(bad["run_result"]["return_code"], 3)
        self.assertEqual(bad["run_result"]["stderr"], "no\n")
        exc = s.run_code("raise ValueError('x')")
        self.assertEqual(exc["status"], "Failed")
        self.assertIn("ValueError", exc["run_result"]["stderr"])

    def test_timeout_and_memory_are_never_success(self):
        s = self.service("-j", "2")
        t = s.run_code("while True: pass", run_timeout=1)
        self.assertEqual(t["status"], "Failed", t)
        self.assertEqual(t["run_result"]["status"], "TimeLimitExceeded")
        self.assertGreaterEqual(t["run_result"]["execution_time"], 0.9)
        m = s.run_code("x = bytearray(600 << 20)\nprint(len(x))", memory_limit_MB=64)
        self.assertEqual(m["status"], "Failed", m)
        self.assertNotIn("600", m["run_result"]["stdout"])
        # the memory limit (cgroup) or python's MemoryError under rlimits: the program's doing either way
        self.assertTrue(m["run_result"]["status"] == "Error" or
                        (m["run_result"]["status"] == "Finished" and m["run_result"]["return_code"] != 0), m)

    def test_a_client_that_leaves_cancels_its_queued_job(self):
        """-j 1: a job runs; a second request waits in the service. Its
        client gives up (closes the connection): the waiting job never
        runs. Before, it sat in the engine's pipe and ran for no one."""
        s = self.service("-j", "1", "--queue", "4")
        # 6 s: still running when health is read ~2 s in, however slow the host
        busy = threading.Thread(target=lambda: s.run_code("import time\ntime.sleep(6)\nprint(1)"))
        busy.start()
        time.sleep(0.5)
        c = s.conn(timeout=0.5)
        c.request("POST", "/v1/run", body=json.dumps({"kind": "python", "code": "print('abandoned')"}),
                  headers={"Content-Type": "application/json"})
        with self.assertRaises(socket.timeout):
            c.getresponse()   # it waits: -j 1 is busy
        c.close()   # verl's timeout: the client gives up
        time.sleep(1)
        status, js, _ = s.health()
        self.assertEqual((js["in_flight"], js["batch_waiting"]), (1, 0), js)   # only the busy one
        busy.join(30)
        time.sleep(0.5)
        c = s.conn()
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        total = sum(int(float(l.rsplit(" ", 1)[1])) for l in text.splitlines()
                    if l.startswith("nsbox_serve_jobs_total{"))
        self.assertEqual(total, 1, "the abandoned job ran:\n" + text)
        self.assertIn('nsbox_serve_refusals_total{reason="client_gone"} 1\n', text)
        self.assertEqual(s.run_code("print(2)")["run_result"]["stdout"], "2\n")   # the service goes on

    def metrics(self, s):
        c = s.conn()
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return text

    def test_a_client_that_leaves_cancels_its_running_job(self):
        """A running `while True` job whose client closes its connection is
        gone within a second (the service sends the engine a cancel line):
        no process of it left, cold and warm. Before, it ran to its own
        limit (here 60 s) for no one."""
        spin = ("import ctypes\nctypes.CDLL(None).prctl(15, b'nsbxspin', 0, 0, 0)\n"
                "print('up', flush=True)\nwhile True: pass")
        for mode in ("--warm", "--cold"):
            with self.subTest(mode=mode):
                s = self.service("-j", "2", mode, name="c%s.sock" % mode)
                c = s.conn(timeout=0.5)
                c.request("POST", "/run_code", body=json.dumps(sf_request(spin, run_timeout=60)),
                          headers={"Content-Type": "application/json"})
                pids = []
                for _ in range(200):
                    pids = [p for p in descendants(s.proc.pid) if comm(p) == "nsbxspin"]
                    if pids:
                        break
                    time.sleep(0.05)
                self.assertTrue(pids, "the job never ran")
                tree = set(descendants(s.proc.pid))
                time.sleep(0.3)
                c.close()
                gone_at = time.time()
                while time.time() - gone_at < 5 and any(alive(p) for p in pids):
                    time.sleep(0.05)
                took = time.time() - gone_at
                left = [p for p in pids if alive(p)]
                for p in left:
                    os.kill(p, signal.SIGKILL)
                self.assertEqual(left, [], "the job outlived its client")
                self.assertLess(took, 1.0, "the job took %.2f s to go" % took)
                time.sleep(0.5)
                # nothing of it left: what the service holds now was there while it ran (engine, zygote)
                self.assertFalse(set(descendants(s.proc.pid)) - tree, "new processes after the cancel")
                self.assertFalse([p for p in descendants(s.proc.pid) if comm(p) == "nsbxspin"])
                status, js, _ = s.health()
                self.assertEqual(js["in_flight"], 0, js)
                text = self.metrics(s)
                self.assertIn('nsbox_serve_refusals_total{reason="client_gone"} 1\n', text)
                self.assertIn('nsbox_serve_jobs_total{status="cancelled"} 1\n', text)
                # counted by the start it had: a warm job's cancelled line said "cold" (#29 follow-up)
                starts = {l.split("} ")[0].split('"')[1]: int(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                          if l.startswith("nsbox_serve_starts_total{")}
                self.assertEqual(starts, {"warm": 1, "cold": 0} if mode == "--warm" else {"warm": 0, "cold": 1}, text)
                self.assertEqual(s.run_code("print(2)")["run_result"]["stdout"], "2\n")   # the service goes on

    def test_a_batch_client_that_leaves_cancels_its_running_jobs(self):
        """/v1/batch: the client leaves mid-stream (one line answered, two
        jobs spinning): both are gone within a second."""
        spin = ("import ctypes\nctypes.CDLL(None).prctl(15, b'nsbxspin', 0, 0, 0)\nwhile True: pass")
        s = self.service("-j", "2", name="bc.sock")
        body = "\n".join(json.dumps({"id": i, "kind": "python", "code": c, "timeout": 60})
                         for i, c in enumerate(["print(1)", spin, spin]))
        c = s.conn(timeout=30)
        c.request("POST", "/v1/batch", body=body, headers={"Content-Type": "application/x-ndjson"})
        r = c.getresponse()
        self.assertEqual(json.loads(r.readline())["id"], 0)
        pids = []
        for _ in range(200):
            pids = [p for p in descendants(s.proc.pid) if comm(p) == "nsbxspin"]
            if len(pids) == 2:
                break
            time.sleep(0.05)
        self.assertEqual(len(pids), 2, "the jobs never ran")
        c.close()
        gone_at = time.time()
        while time.time() - gone_at < 5 and any(alive(p) for p in pids):
            time.sleep(0.05)
        took = time.time() - gone_at
        left = [p for p in pids if alive(p)]
        for p in left:
            os.kill(p, signal.SIGKILL)
        self.assertEqual(left, [], "the batch's jobs outlived its client")
        self.assertLess(took, 1.0)
        time.sleep(0.3)
        self.assertEqual(s.health()[1]["in_flight"], 0)
        self.assertIn('nsbox_serve_refusals_total{reason="client_gone"} 2\n', self.metrics(s))

    def test_warm_slots_in_metrics(self):
        """/metrics says how jobs started: warm slots (-j under --warm), jobs
        by start, and the warm ones that fell back to cold."""
        for mode, slots in (("--warm", 2), ("--cold", 0)):
            with self.subTest(mode=mode):
                s = self.service("-j", "2", mode, name="w%s.sock" % mode)
                for i in range(3):
                    self.assertEqual(s.run_code("print(%d)" % i)["status"], "Success")
                status, js, _ = s.call("POST", "/v1/run", {"kind": "python", "code": "print(1)"})
                self.assertEqual(status, 200, js)
                text = self.metrics(s)
                self.assertIn("nsbox_serve_warm_slots %d\n" % slots, text)
                counts = {l.split("} ")[0].split('"')[1]: int(l.rsplit(" ", 1)[1]) for l in text.splitlines()
                          if l.startswith("nsbox_serve_starts_total{")}
                fallbacks = int(text.split("\nnsbox_serve_warm_fallbacks_total ", 1)[1].split("\n")[0])
                self.assertEqual(counts["warm"] + counts["cold"], 4, text)
                if mode == "--cold":
                    self.assertEqual((counts["warm"], fallbacks), (0, 0), text)
                elif js["start"] == "warm":
                    self.assertGreaterEqual(counts["warm"], 1, text)
                else:   # this host cannot start warm: each cold start under --warm is counted
                    self.assertEqual(fallbacks, counts["cold"], text)

    def test_slow_reader_is_cut_at_the_write_deadline(self):
        """A client that takes its answer a few bytes at a time (never idle
        for the 30 s inactivity timeout) holds the connection and the
        answer's memory for no longer than --write-deadline."""
        s = self.service("-j", "1", "--write-deadline", "2")
        for path, body in (("/run_code", json.dumps(sf_request("print('x' * 3000000)"))),
                           ("/v1/batch", "\n".join(json.dumps({"id": i, "kind": "python", "code": "print('y' * 900000)"})
                                                   for i in range(4)))):
            with self.subTest(path=path):
                slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.addCleanup(slow.close)
                slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                slow.connect(s.where[5:])
                data = body.encode()
                slow.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % (path.encode(), len(data)) + data)
                got, start, closed = 0, time.time(), False
                while time.time() - start < 6 and not closed:   # the job's time, then 2 s of trickle and more
                    r, _, _ = select.select([slow], [], [], 0.5)
                    if r:
                        chunk = slow.recv(200)   # a trickle: 200 bytes every half second
                        closed = chunk == b""
                        got += len(chunk)
                        time.sleep(0.5)
                self.assertFalse(closed)
                # the service cut it: what the socket still holds, then its end (not the whole answer)
                slow.settimeout(5)
                while not closed:
                    try:
                        chunk = slow.recv(65536)
                    except ConnectionResetError:
                        chunk = b""
                    closed = chunk == b""
                    got += len(chunk)
                self.assertLess(got, 1000000 if path == "/run_code" else 3000000, "it read the whole answer")
                self.assertEqual(s.run_code("print(1)")["status"], "Success")   # others are served
        self.assertIn('nsbox_serve_refusals_total{reason="slow_reader"} 2\n', self.metrics(s))

    def test_files_round_trip(self):
        """SandboxFusion's files (name -> base64, placed in the job's own
        /workspace) and fetch_files (read back, base64), cold and warm: a
        symlink is not followed, a FIFO not opened, an oversized file not
        read; each is reported in files_refused. Each job's workspace is its
        own: the next job sees none of it."""
        b64 = lambda b: base64.b64encode(b).decode()
        code = ("import os\n"
                "print(open('data/in.txt').read().strip(), open('bin.dat', 'rb').read()[:3].hex())\n"
                "open('out.txt', 'w').write('result ' + open('data/in.txt').read())\n"
                "os.symlink('/etc/passwd', 'link')\n"
                "os.mkfifo('fifo')\n"
                "open('big', 'wb').write(b'x' * (9 << 20))\n")
        for mode in ("--warm", "--cold"):
            with self.subTest(mode=mode):
                s = self.service("-j", "2", mode, "--", "--tmp-size", "64M", name="f%s.sock" % mode)
                r = s.run_code(code, files={"data/in.txt": b64(b"hello\n"), "bin.dat": b64(bytes(range(256)))},
                               fetch_files=["out.txt", "data/in.txt", "link", "fifo", "big", "missing"])
                self.assertEqual(r["status"], "Success", r)
                self.assertEqual(r["run_result"]["stdout"], "hello 000102\n")
                self.assertEqual(sorted(r["files"]), ["data/in.txt", "out.txt"], r)
                self.assertEqual(base64.b64decode(r["files"]["out.txt"]), b"result hello\n")
                self.assertEqual(base64.b64decode(r["files"]["data/in.txt"]), b"hello\n")
                why = r["files_refused"]
                self.assertIn("symbolic link", why["link"])
                self.assertIn("not a regular file", why["fifo"])
                self.assertIn("larger than", why["big"])
                self.assertIn("no such file", why["missing"])
                # the next job's workspace is fresh: nothing of the last one
                n = s.run_code("import os\nprint(sorted(os.listdir('.')))")
                self.assertEqual(n["run_result"]["stdout"], "[]\n", n)
                # the native API: the job line's own keys, the result's "files"
                status, js, _ = s.call("POST", "/v1/run", {"kind": "python", "code": "open('o', 'w').write(open('i').read()[::-1])",
                                                          "files": {"i": b64(b"abc")}, "fetch_files": ["o"]})
                self.assertEqual(status, 200, js)
                self.assertEqual(js["start"], "warm" if mode == "--warm" and js["start"] == "warm" else "cold")
                self.assertEqual(base64.b64decode(js["files"]["o"]), b"cba")
                self.assertNotIn("files_refused", js)

    def test_every_fetch_name_is_in_files_or_files_refused(self):
        """A name asked for and not read back is listed, with why, in
        files_refused, never silently absent, when reading the files back
        reaches the memory limit (the workspace's tmpfs pages count against
        it: under a cgroup, 2 x 7 MiB read back under 32 MiB). Before, the
        result had neither: "files": {} and no reason, for a program that
        exited 0. (After a time limit "files" is {}, as documented.) Cold and
        warm."""
        fill = "for i in range(2): open('f%d' % i, 'wb').write(b'x' * (7 << 20))\nprint('ok')"
        for mode in ("--warm", "--cold"):
            with self.subTest(mode=mode):
                s = self.service("-j", "1", mode, name="u%s.sock" % mode)
                t = s.run_code("open('f0', 'w').write('x')\nwhile True: pass", run_timeout=1, fetch_files=["f0", "f1"])
                self.assertEqual(t["run_result"]["status"], "TimeLimitExceeded", t)
                self.assertEqual(t["files"], {}, t)   # as documented: the init is stopped with the job
                m = s.run_code(fill, memory_limit_MB=32, fetch_files=["f0", "f1"])
                self.assertEqual(m["run_result"]["stdout"], "ok\n", m)
                self.assertEqual(sorted(list(m["files"]) + list(m.get("files_refused", {}))), ["f0", "f1"],
                                 {k: m[k] for k in m if k != "files"})
                for why in m.get("files_refused", {}).values():
                    self.assertIn("memory limit", why)

    def test_files_that_do_not_fit_the_workspace_are_400(self):
        """Files larger than the workspace's tmpfs (-- --tmp-size 4M): a 400
        naming the key, cold and warm. Before, the init's write failed with
        ENOSPC once the job ran: 200 SandboxError, which reward code drops or
        retries as the sandbox's fault."""
        big = base64.b64encode(b"x" * (5 << 20)).decode()
        for mode in ("--warm", "--cold"):
            with self.subTest(mode=mode):
                s = self.service("-j", "1", mode, "--", "--tmp-size", "4M", name="t%s.sock" % mode)
                status, js, _ = s.call("POST", "/run_code", sf_request("print(1)", files={"a": big}))
                self.assertEqual(status, 400, js)
                self.assertIn('"files": ', js["error"]["message"])
                self.assertIn("do not fit the job's workspace", js["error"]["message"])
                ok = s.run_code("print(open('a').read())", files={"a": base64.b64encode(b"fits").decode()})
                self.assertEqual(ok["run_result"]["stdout"], "fits\n", ok)

    def test_bad_file_names_are_400_naming_the_key(self):
        s = self.service("-j", "1")
        for files, fetch, needle in (({"../x": "eA=="}, [], '"files": the name "../x"'),
                                     ({"/etc/x": "eA=="}, [], '"files": the name "/etc/x" is absolute'),
                                     ({"a": "not base64!"}, [], '"files": "a": expected base64'),
                                     # a 400 like the others, not a SandboxError at run time
                                     ({"a": "eA==", "a/b": "eA=="}, [], '"files": "a" is a file and the directory of "a/b"'),
                                     ({}, ["/etc/passwd"], '"fetch_files": the name "/etc/passwd" is absolute'),
                                     ({}, ["a/../../b"], '"fetch_files": the name "a/../../b"'),
                                     ({}, ["x"] * 2, "named twice"),
                                     ({}, ["f%d" % i for i in range(65)], "more than 64")):
            with self.subTest(files=files, fetch=fetch[:2]):
                status, js, _ = s.call("POST", "/run_code", sf_request("print(1)", files=files, fetch_files=fetch))
                self.assertEqual(status, 400, js)
                self.assertIn(needle, js["error"]["message"])
        # an unknown key of the native API is the engine's refusal too
        status, js, _ = s.call("POST", "/v1/run", {"kind": "judge", "spec": {}, "files": {}})
        self.assertEqual(status, 400, js)
        self.assertIn('unknown key "files" for a judge job', js["error"]["message"])

    def test_operator_ceilings(self):
        """--max-memory / --max-wall-time: a request may lower the limits,
        never raise them (400 naming the key and the ceiling); without them
        the same requests ran with up to 1 TiB and 24 h."""
        s = self.service("-j", "1", "--max-memory", "512M", "--max-wall-time", "30s")
        for body, needle in [
                (sf_request("print(1)", memory_limit_MB=1048576), "memory_limit_MB: 1048576 is above this service's "
                                                                  "ceiling (--max-memory 512M)"),
                (sf_request("print(1)", run_timeout=86400), "run_timeout: 86400 s is above this service's ceiling "
                                                            "(--max-wall-time 30s)")]:
            status, js, _ = s.call("POST", "/run_code", body)
            self.assertEqual(status, 400, js)
            self.assertIn(needle, js["error"]["message"])
        for job, needle in [({"kind": "python", "code": "print(1)", "limits": {"memory": "1G"}}, "limits.memory"),
                            ({"kind": "python", "code": "print(1)", "timeout": 3600}, "timeout: 3600 s"),
                            ({"kind": "run", "argv": ["/bin/true"], "limits": {"wall_time": "1h"}},
                             "limits.wall_time")]:
            status, js, _ = s.call("POST", "/v1/run", job)
            self.assertEqual(status, 400, js)
            self.assertIn(needle + (": above" if needle.startswith("limits") else ""), js["error"]["message"])
            self.assertIn("ceiling", js["error"]["message"])
        ok = s.run_code("print(1)", memory_limit_MB=128, run_timeout=5)
        self.assertEqual(ok["status"], "Success", ok)
        status, js, _ = s.call("POST", "/v1/run", {"kind": "python", "code": "print(2)", "timeout": 5,
                                                  "limits": {"memory": "256M"}})
        self.assertEqual((status, js["outcome"]), (200, "pass"), js)

    def test_bad_requests(self):
        s = self.service("-j", "1", "--max-body", "4096")
        cases = [
            (b'{"code": "print(1)", "language": "python"', 400, "not JSON"),
            (b'[1, 2]', 400, "not a JSON object"),
            (json.dumps(sf_request("1", colour="red")).encode(), 400, 'unknown key "colour"'),
            (json.dumps(sf_request("1", language="cpp")).encode(), 400, 'language "cpp" is not supported'),
            (json.dumps(sf_request("1", run_timeout=-1)).encode(), 400, "run_timeout"),
            (json.dumps(sf_request("1", files={"../a.txt": "aGk="})).encode(), 400, '"files": the name "../a.txt"'),
            (json.dumps(sf_request("1", fetch_files="a.txt")).encode(), 400, "fetch_files: an array"),
            (json.dumps(sf_request("1", memory_limit_MB=1)).encode(), 400, "memory"),
            (json.dumps(sf_request("#" * 8000)).encode(), 413, "--max-body"),
            # the key quoted cut at 64 bytes, inside its "é": still a 400 naming it (was 500 "out of memory")
            (json.dumps(dict(sf_request("1"), **{"k" * 63 + "\u00e9": 1})).encode(), 400, 'unknown key "kkk'),
            (json.dumps(sf_request("1", language="p" * 31 + "\u00e9")).encode(), 400, 'language "ppp'),
        ]
        for body, want, needle in cases:
            status, js, _ = s.call("POST", "/run_code", raw=body)
            self.assertEqual(status, want, (body[:80], js))
            self.assertIn(needle, js["error"]["message"], body[:80])
        status, js, _ = s.call("POST", "/nope", {})
        self.assertEqual(status, 404, js)
        status, js, r = s.call("GET", "/run_code")
        self.assertEqual((status, r.getheader("Allow")), (405, "POST"))
        status, js, r = s.call("POST", "/v1/health", {})
        self.assertEqual((status, r.getheader("Allow")), (405, "GET"))
        # still serving after all of that
        self.assertEqual(s.run_code("print(1)")["status"], "Success")

    def test_a_cancel_key_is_a_400_not_a_hang(self):
        """A /v1/run body or a /v1/batch line with a "cancel" key: the engine
        refuses it as a bad cancel line (the service's id makes it two keys),
        and its error line must carry that id. Before, it had none: the
        service dropped it, the request was never answered, and its slot was
        held for ever (-j 1: the service ran nothing again, and never drained)."""
        s = self.service("-j", "1")
        c = s.conn(timeout=10)
        c.request("POST", "/v1/run", body=json.dumps({"cancel": 3}), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        js = json.loads(r.read())
        c.close()
        self.assertEqual(r.status, 400, js)
        self.assertIn("cancel", js["error"]["message"])
        c = s.conn(timeout=10)
        c.request("POST", "/v1/batch", body=json.dumps({"id": "a", "kind": "python", "code": "print(1)"}) + "\n" +
                  json.dumps({"cancel": "a"}) + "\n", headers={"Content-Type": "application/json"})
        r = c.getresponse()
        lines = [json.loads(l) for l in r.read().splitlines()]
        c.close()
        by_line = {l["batch"]["line"]: l for l in lines}
        self.assertEqual(sorted(by_line), [1, 2], lines)
        self.assertEqual(by_line[1]["status"], "exited", lines)
        self.assertEqual(by_line[2]["status"], "error", lines)
        status, js, _ = s.health()
        self.assertEqual(js["in_flight"], 0, js)
        self.assertEqual(s.run_code("print(2)")["run_result"]["stdout"], "2\n")
        self.assertEqual(s.stop(), 0)

    def test_a_job_over_the_engines_line_bound_is_413(self):
        """--max-body may be set past the engine's 64 MiB line bound (a
        /v1/batch body holds many lines): a single job that large is a 413.
        Before, the engine wrote its error line without an id: the request
        was never answered and held its slot for ever."""
        s = self.service("-j", "1", "--max-body", str(80 << 20))
        c = s.conn(timeout=30)
        c.request("POST", "/v1/run", body=json.dumps({"kind": "python", "code": "#" * (65 << 20)}),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        js = json.loads(r.read())
        c.close()
        self.assertEqual(r.status, 413, js)
        self.assertIn("64 MiB", js["error"]["message"])
        status, js, _ = s.health()
        self.assertEqual(js["in_flight"], 0, js)
        self.assertEqual(s.run_code("print(2)")["run_result"]["stdout"], "2\n")

    def test_v1_run(self):
        s = self.service("-j", "2")
        status, js, _ = s.call("POST", "/v1/run", {"id": "mine", "kind": "python", "code": "print(6*7)"})
        self.assertEqual(status, 200, js)
        self.assertEqual(js["id"], "mine")
        self.assertEqual(js["schema"], "nsbox.result/1")
        self.assertEqual((js["status"], js["outcome"], js["stdout"]["text"]), ("exited", "pass", "42\n"))
        self.assertIn(js["start"], ("warm", "cold"))
        self.assertNotIn("batch", js)
        status, js, _ = s.call("POST", "/v1/run", {"id": [1], "kind": "run", "argv": ["/bin/echo", "hi"]})
        self.assertEqual(status, 200, js)
        self.assertEqual((js["id"], js["status"], js["stdout"]["text"]), ([1], "exited", "hi\n"))
        status, js, _ = s.call("POST", "/v1/run", {"id": 1, "kind": "python", "cod": "x"})
        self.assertEqual(status, 400, js)
        self.assertIn('"cod"', js["error"]["message"])
        self.assertNotIn("line ", js["error"]["message"][:5])
        spec = {"program": {"path": "/etc/passwd"}, "cases": [{"name": "a"}]}
        status, js, _ = s.call("POST", "/v1/run", {"id": 2, "kind": "judge", "spec": spec})
        self.assertEqual(status, 400, js)
        self.assertIn("program.path", js["error"]["message"])
        spec = {"program": {"source": "print(input())"},
                "cases": [{"name": "echo", "stdin": "hi\n", "expect": {"stdout": {"equals": "hi\n"}}}]}
        status, js, _ = s.call("POST", "/v1/run", {"id": 3, "kind": "judge", "spec": spec})
        self.assertEqual(status, 200, js)
        self.assertEqual((js["schema"], js["verdict"], js["id"]), ("nsbox.verdict/1", "pass", 3))

    def test_cold_service(self):
        s = self.service("-j", "1", "--cold", "--", "--wall-time", "5s")
        status, js, _ = s.call("POST", "/v1/run", {"kind": "python", "code": "print(input())", "stdin": "z\n"})
        self.assertEqual(status, 200, js)
        self.assertEqual((js["start"], js["stdout"]["text"]), ("cold", "z\n"))
        self.assertNotIn("id", js)   # none given, none returned
        t = s.run_code("while True: pass")   # the service's --wall-time 5s, passed to batch after --
        self.assertEqual(t["run_result"]["status"], "TimeLimitExceeded", t)

    def test_engine_options_refused_at_start(self):
        r = subprocess.run([NSBOX, "serve", "--listen", "unix:" + os.path.join(self.tmp, "bad.sock"), "--",
                            "--no-such-option"], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn(b"--no-such-option", r.stderr)
        self.assertIn(b"the job engine", r.stderr)

    def batch(self, s, lines):
        body = "".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines).encode()
        c = s.conn()
        c.request("POST", "/v1/batch", body=body, headers={"Content-Type": "application/x-ndjson"})
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Content-Type"), "application/x-ndjson")
        out = [json.loads(l) for l in r.read().decode().splitlines()]
        c.close()
        return out

    def test_v1_batch_streams_every_line(self):
        # more lines than -j plus --queue: the rest wait, none is refused
        s = self.service("-j", "1", "--queue", "0")
        lines = [{"id": "slow", "kind": "python", "code": "import time; time.sleep(1); print('s')"},
                 "",
                 {"id": 2, "kind": "python", "code": "print(2)"},
                 "not json",
                 {"kind": "run", "argv": ["/bin/echo", "r"]},
                 {"id": "bad", "kind": "python", "cod": "x"},
                 {"id": "j", "kind": "judge", "spec": {"program": {"source": "print(input())"},
                                                      "cases": [{"name": "e", "stdin": "x\n",
                                                                 "expect": {"stdout": {"equals": "x\n"}}}]}},
                 {"id": "host", "kind": "judge", "spec": {"program": {"path": "/etc/passwd"}, "cases": [{"name": "a"}]}}]
        lines += [{"id": "n%d" % i, "kind": "python", "code": "print(%d)" % i} for i in range(6)]
        out = self.batch(s, lines)
        self.assertEqual(len(out), len(lines) - 1, out)   # the blank line is skipped
        by_line = {d["batch"]["line"]: d for d in out}
        self.assertEqual((by_line[1]["id"], by_line[1]["stdout"]["text"]), ("slow", "s\n"))
        self.assertEqual((by_line[3]["id"], by_line[3]["outcome"]), (2, "pass"))
        self.assertEqual((by_line[4]["status"], by_line[4]["outcome"]), ("error", "error"))
        self.assertNotIn("id", by_line[4])   # a line with no id read: no "id" key, as docs/serve.md says
        self.assertIn("line 4: the body is not JSON", by_line[4]["error"]["message"])
        self.assertNotIn("id", by_line[5])
        self.assertEqual(by_line[5]["stdout"]["text"], "r\n")
        self.assertIn('line 6: unknown key "cod"', by_line[6]["error"]["message"])
        self.assertEqual((by_line[7]["id"], by_line[7]["verdict"]), ("j", "pass"))
        self.assertIn("program.path", by_line[8]["error"]["message"])
        for i in range(6):
            self.assertEqual(by_line[9 + i]["stdout"]["text"], "%d\n" % i)
        # completion order: the slow job's line comes after quicker ones sent after it
        self.assertNotEqual(out[0]["batch"]["line"], 1)

    def test_v1_batch_drains_and_survives_a_client_gone(self):
        s = self.service("-j", "1", "--queue", "0")
        # a client that leaves half-way: its lines are dropped, the service goes on
        c = s.conn()
        body = "".join(json.dumps({"id": i, "kind": "python", "code": "import time; time.sleep(0.3)"}) + "\n"
                       for i in range(4)).encode()
        c.request("POST", "/v1/batch", body=body)
        c.close()
        # the line running ends, the service finds the client gone, the rest is never sent
        for _ in range(200):
            h = s.health()[1]
            if h["in_flight"] == 0 and h["batch_waiting"] == 0:
                break
            time.sleep(0.05)
        self.assertEqual((h["in_flight"], h["batch_waiting"]), (0, 0))
        m = s.conn()
        m.request("GET", "/metrics")
        text = m.getresponse().read().decode()
        m.close()
        ran = int(text.split('nsbox_serve_jobs_total{status="exited"} ')[1].split("\n")[0])
        self.assertLess(ran, 4, "lines of a client gone were still run")
        self.assertEqual(s.run_code("print(1)")["status"], "Success")
        out = {}

        def run():
            out["lines"] = self.batch(s, [{"id": i, "kind": "python", "code": "import time; time.sleep(0.3); print(%d)" % i}
                                          for i in range(4)])

        t = threading.Thread(target=run)
        t.start()
        for _ in range(200):
            h = s.health()[1]
            if h["in_flight"] == 1 and h["batch_waiting"] == 3:
                break
            time.sleep(0.02)
        s.proc.send_signal(signal.SIGTERM)   # the batch was taken: every line of it completes
        t.join(60)
        self.assertEqual(sorted(d["stdout"]["text"] for d in out["lines"]), ["%d\n" % i for i in range(4)])
        self.assertEqual(s.stop(None), 0, s.log)

    def test_engine_rotation(self):
        """A new engine every N jobs (the old one ends with its last job):
        nothing a client sees changes, and old engines do not pile up."""
        s = self.service("-j", "1", "--engine-rotate", "3")
        outs = []
        threads = [threading.Thread(target=lambda i=i: outs.append(s.run_code("print(%d)" % i))) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for i in range(6):
            outs.append(s.run_code("print(%d)" % i))
        self.assertEqual(len(outs), 10)
        self.assertTrue(all(o["status"] == "Success" for o in outs), outs)
        self.assertGreaterEqual(s.health()[1]["engines_started"], 4)
        for _ in range(100):
            engines = [p for p in descendants(s.proc.pid) if b" batch " in cmdline(p).replace(b"\0", b" ")
                       and p in children_of(s.proc.pid)]
            if len(engines) == 1:
                break
            time.sleep(0.1)
        self.assertEqual(len(engines), 1, "rotated-out engines still running")

    def test_profiles(self):
        """One engine per --profile; a request picks one by name, never a file."""
        course = os.path.join(self.tmp, "course.ini")
        with open(course, "w") as f:
            f.write("[limits]\nwall_time = 3s\n")
        os.chmod(course, 0o644)
        s = self.service("-j", "1", "--profile", "python", "--profile", course)
        self.assertEqual(s.health()[1]["profiles"], ["python", course])
        status, py, _ = s.call("POST", "/v1/run", {"kind": "python", "code": "print(1)"})   # the first by default
        self.assertEqual((status, py["stdout"]["text"]), (200, "1\n"), py)
        status, co, _ = s.call("POST", "/v1/run", {"kind": "python", "code": "print(1)", "profile": course})
        self.assertEqual((status, co["stdout"]["text"]), (200, "1\n"), co)
        self.assertNotEqual(py["policy_sha256"], co["policy_sha256"])   # two policies, one per engine
        t = s.run_code("while True: pass", profile=course, run_timeout=None)   # the course's wall_time (3s)
        self.assertEqual(t["run_result"]["status"], "TimeLimitExceeded", t)
        self.assertLess(t["run_result"]["execution_time"], 8)
        status, js, _ = s.call("POST", "/v1/run", {"kind": "python", "code": "1", "profile": "/etc/passwd"})
        self.assertEqual(status, 400, js)
        self.assertIn("not one of this service's (python, %s)" % course, js["error"]["message"])
        out = self.batch(s, [{"id": 1, "kind": "python", "code": "print(2)", "profile": course},
                             {"id": 2, "kind": "python", "code": "print(3)", "profile": "python"}])
        self.assertEqual(sorted((d["id"], d["stdout"]["text"], d["policy_sha256"]) for d in out),
                         [(1, "2\n", co["policy_sha256"]), (2, "3\n", py["policy_sha256"])])

    def test_health_and_metrics(self):
        s = self.service("-j", "3", "--queue", "5")
        status, js, _ = s.health()
        self.assertEqual(status, 200)
        self.assertEqual((js["ready"], js["jobs"], js["queue"], js["in_flight"], js["batch_waiting"]), (True, 3, 5, 0, 0))
        self.assertNotIn("profiles", js)   # without --profile the key is absent (docs/serve.md)
        s.run_code("print(1)")
        s.call("POST", "/run_code", raw=b"{")
        c = s.conn()
        c.request("GET", "/metrics")
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        self.assertEqual(r.status, 200)
        self.assertTrue(r.getheader("Content-Type").startswith("text/plain"))
        self.assertIn('nsbox_serve_jobs_total{status="exited"} 1\n', text)
        self.assertIn('nsbox_serve_python_outcomes_total{outcome="pass"} 1\n', text)
        self.assertIn('nsbox_serve_refusals_total{reason="bad_request"} 1\n', text)
        self.assertIn("nsbox_serve_job_seconds_count 1\n", text)
        self.assertIn("nsbox_serve_capacity 8\n", text)

    def test_socket_modes_and_default_path(self):
        runtime = os.path.join(self.tmp, "xdg")
        os.makedirs(runtime, exist_ok=True)
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
        p = subprocess.Popen([NSBOX, "serve", "-j", "1"], stderr=subprocess.PIPE, env=env)
        try:
            sock = os.path.join(runtime, "nsbox", "nsbox.sock")
            for _ in range(100):
                if os.path.exists(sock):
                    break
                time.sleep(0.1)
            self.assertEqual(stat.S_IMODE(os.stat(sock).st_mode), 0o600)
            self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode), 0o700)
        finally:
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=60), 0, p.stderr.read())
            p.stderr.close()
        self.assertFalse(os.path.exists(sock), "the socket is removed at exit")
        env.pop("XDG_RUNTIME_DIR")
        r = subprocess.run([NSBOX, "serve"], capture_output=True, env=env, timeout=30)
        self.assertEqual(r.returncode, 125)
        self.assertIn(b"XDG_RUNTIME_DIR", r.stderr)
        self.assertIn(b"--listen unix:PATH", r.stderr)

    def test_socket_activation(self):
        """systemd's way (dist/systemd/nsbox.socket): the socket comes as fd 3."""
        tool = "/usr/bin/systemd-socket-activate"
        if not os.path.exists(tool):
            self.skipTest("no systemd-socket-activate")
        path = os.path.join(self.tmp, "act.sock")
        # the tool hands the program a clean environment: where a copied nsbox finds its parts is passed on
        keep = [a for v in ("NSBOX_SERVE", "NSBOX_WARM_DIR") if os.environ.get(v) for a in ("-E", v)]
        p = subprocess.Popen([tool, "-l", path, *keep, NSBOX, "serve", "-j", "1"], stderr=subprocess.PIPE)
        try:
            for _ in range(100):
                if os.path.exists(path):
                    break
                time.sleep(0.05)
            s = Service.__new__(Service)
            s.test, s.where = self, "unix:" + path
            js = s.run_code("print(6 * 7)")   # the first connection starts the service
            self.assertEqual((js["status"], js["run_result"]["stdout"]), ("Success", "42\n"))
        finally:
            p.send_signal(signal.SIGTERM)   # the tool exec'd nsbox: this is the service, which drains
            rc = p.wait(timeout=60)
            log = p.stderr.read()
            p.stderr.close()
        self.assertEqual(rc, 0, log)
        self.assertIn(b"(socket activation)", log)

    def test_slow_loris_is_cut_at_the_read_deadline(self):
        s = self.service("-j", "1", "--read-deadline", "2")
        loris = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(loris.close)
        loris.connect(s.where[5:])
        loris.sendall(b"POST /run_code HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        start, closed = time.time(), False
        while time.time() - start < 15 and not closed:
            try:
                loris.sendall(b"a")   # a byte at a time: never idle for the 30 s inactivity timeout
                r, _, _ = select.select([loris], [], [], 0.3)
                closed = bool(r) and loris.recv(4096) == b""
            except OSError:
                closed = True
        self.assertTrue(closed, "a trickling request outlived the read deadline")
        self.assertLess(time.time() - start, 8)
        # meanwhile and after, others are served
        self.assertEqual(s.run_code("print(1)")["status"], "Success")
        c = s.conn()
        c.request("GET", "/metrics")
        self.assertIn('nsbox_serve_refusals_total{reason="slow_client"} 1\n', c.getresponse().read().decode())
        c.close()

    def test_concurrent_requests_all_answered_right(self):
        s = self.service("-j", "2", "--queue", "256")
        n = 200
        results = [None] * n

        def one(i):
            try:
                results[i] = s.run_code("import sys\nn = int(input())\nprint(n * n)\nsys.exit(n % 2)",
                                        stdin="%d\n" % i)
            except Exception as exc:   # noqa: BLE001 - reported below
                results[i] = exc

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        for i, r in enumerate(results):
            self.assertIsInstance(r, dict, (i, r))
            self.assertEqual(r["run_result"]["stdout"], "%d\n" % (i * i), (i, r))
            self.assertEqual(r["run_result"]["return_code"], i % 2, (i, r))
            self.assertEqual(r["status"], "Failed" if i % 2 else "Success", (i, r))

    def test_queue_full_is_503_with_retry_after(self):
        s = self.service("-j", "1", "--queue", "0")
        slow = threading.Thread(target=lambda: s.run_code("import time; time.sleep(3)"))
        slow.start()
        try:
            for _ in range(100):
                if s.health()[1]["in_flight"] == 1:
                    break
                time.sleep(0.05)
            status, js, r = s.call("POST", "/run_code", sf_request("print(1)"))
            self.assertEqual(status, 503, js)
            self.assertEqual(r.getheader("Retry-After"), "1")
            self.assertIn("queue", js["error"]["message"])
        finally:
            slow.join(60)

    def test_queue_full_status_504(self):
        """--queue-full-status 504: for callers (verl's) that retry a 504
        and give up on a 503."""
        s = self.service("-j", "1", "--queue", "0", "--queue-full-status", "504", name="s504.sock")
        slow = threading.Thread(target=lambda: s.run_code("import time; time.sleep(2)"))
        slow.start()
        try:
            for _ in range(100):
                if s.health()[1]["in_flight"] == 1:
                    break
                time.sleep(0.05)
            status, js, r = s.call("POST", "/run_code", sf_request("print(1)"))
            self.assertEqual((status, r.getheader("Retry-After")), (504, "1"), js)
            self.assertIn("queue", js["error"]["message"])
        finally:
            slow.join(60)

    def test_sigterm_drains(self):
        s = self.service("-j", "2")
        out = {}

        def slow():
            out["r"] = s.run_code("import time; time.sleep(2); print('done')")

        t = threading.Thread(target=slow)
        t.start()
        for _ in range(200):
            if s.health()[1]["in_flight"] == 1:
                break
            time.sleep(0.05)
        time.sleep(0.3)
        tree = descendants(s.proc.pid)
        self.assertTrue(tree, "the engine runs below the service")
        s.proc.send_signal(signal.SIGTERM)
        for _ in range(100):   # the service has seen it when its socket is gone
            if not os.path.exists(s.where[5:]):
                break
            time.sleep(0.05)
        # new work is refused: no socket to connect to any more
        with self.assertRaises(OSError):
            s.call("POST", "/run_code", sf_request("print(1)"))
        t.join(60)
        self.assertEqual(out["r"]["status"], "Success", out)
        self.assertEqual(out["r"]["run_result"]["stdout"], "done\n")
        self.assertEqual(s.stop(None, timeout=60), 0, s.log)   # the one SIGTERM above, nothing more
        self.assertIn(b"stopping: 1 job(s) in flight finish", s.log)
        left = [p for p in tree if alive(p)]
        self.assertEqual(left, [], "processes left after the drain")

    def test_second_sigterm_cancels_what_is_left(self):
        s = self.service("-j", "1")
        out = {}

        def slow(key, path):
            status, js, _ = s.call("POST", path, sf_request("import time; time.sleep(100)", run_timeout=120)
                                   if path == "/run_code" else {"id": key, "kind": "python",
                                                                "code": "import time; time.sleep(100)", "timeout": 120})
            out[key] = (status, js)

        threads = [threading.Thread(target=slow, args=("sf", "/run_code")),
                   threading.Thread(target=slow, args=("v1", "/v1/run"))]
        for t in threads:
            t.start()
        for _ in range(200):
            if s.health()[1]["in_flight"] == 2:
                break
            time.sleep(0.05)
        tree = descendants(s.proc.pid)
        s.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        s.proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(60)
        # each answered, as cancelled: never a dropped connection, never a program's failure
        self.assertEqual(out["sf"][0], 200, out)
        self.assertEqual(out["sf"][1]["status"], "SandboxError", out)
        self.assertIn("cancelled", out["sf"][1]["message"])
        self.assertEqual(out["v1"][0], 503, out)
        self.assertIn("cancelled", out["v1"][1]["error"]["message"])
        self.assertEqual(s.stop(None), 130, s.log)
        deadline = time.time() + 10
        while time.time() < deadline and any(alive(p) for p in tree):
            time.sleep(0.1)
        self.assertEqual([p for p in tree if alive(p)], [])

    def test_sigkill_leaves_no_job_running(self):
        s = self.service("-j", "2")
        # its own limit is far away: only the service's death can end it in time
        t = threading.Thread(target=lambda: self.assertRaises(Exception, s.run_code, "import time; time.sleep(100)",
                                                              run_timeout=120))
        t.start()
        for _ in range(200):
            if s.health()[1]["in_flight"] == 1:
                break
            time.sleep(0.05)
        for _ in range(200):   # the sandboxed program is up
            tree = descendants(s.proc.pid)
            if any(b"/program/main.py" in cmdline(p) for p in tree):
                break
            time.sleep(0.05)
        self.assertGreaterEqual(len(tree), 3, "engine, worker, sandbox")
        s.proc.kill()
        s.proc.wait()
        deadline = time.time() + 8
        while time.time() < deadline and any(alive(p) for p in tree):
            time.sleep(0.1)
        left = [p for p in tree if alive(p)]
        for p in left:   # what a failure leaves is not left running
            os.kill(p, signal.SIGKILL)
        self.assertEqual(left, [], "a job outlived the killed service")
        t.join(30)


class ServeTcp(SandboxTest):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="nsbox-serve-tcp-")
        os.chmod(cls.tmp, 0o755)
        cls.token_file = os.path.join(cls.tmp, "token")
        with open(cls.token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.chmod(cls.token_file, 0o600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_tcp_needs_a_token_file(self):
        r = subprocess.run([NSBOX, "serve", "--listen", "tcp:127.0.0.1:0"], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 125)
        self.assertIn(b"--token-file", r.stderr)

    def test_token_file_others_can_read_is_refused(self):
        """A token in a group- or world-readable file is refused at start,
        naming the mode and the fix; one with ?, # or % too (it would
        travel in a path only percent-encoded)."""
        for mode in (0o644, 0o640, 0o604):
            os.chmod(self.token_file, mode)
            try:
                r = subprocess.run([NSBOX, "serve", "--listen", "tcp:127.0.0.1:0", "--token-file", self.token_file],
                                   capture_output=True, timeout=30)
            finally:
                os.chmod(self.token_file, 0o600)
            self.assertEqual(r.returncode, 125, (oct(mode), r.stderr))
            self.assertIn(b"mode 0%o" % mode, r.stderr)
            self.assertIn(b"chmod 600", r.stderr)
        for bad in ("?", "#", "%"):
            tf = os.path.join(self.tmp, "token-bad")
            with open(tf, "w") as f:
                f.write("abcdefgh" + bad + "ijklmnopq")
            os.chmod(tf, 0o600)
            r = subprocess.run([NSBOX, "serve", "--listen", "tcp:127.0.0.1:0", "--token-file", tf],
                               capture_output=True, timeout=30)
            self.assertEqual(r.returncode, 125, (bad, r.stderr))
            self.assertIn(b"percent-encoding", r.stderr)

    def test_per_ip_connection_limit(self):
        """--per-ip-connections N: an address's N+1-th connection is closed
        at once (idle connections need no token: without the bound one
        client could hold every slot)."""
        s = Service(self, "tcp:127.0.0.1:0", "--token-file", self.token_file, "-j", "1", "--per-ip-connections", "2")
        self.addCleanup(s.stop)
        host, port = s.where[4:].rsplit(":", 1)
        idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(2)]
        time.sleep(0.3)
        third = socket.create_connection((host, int(port)), timeout=10)
        third.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
        try:
            got = third.recv(4096)
        except ConnectionResetError:
            got = b""
        third.close()
        self.assertEqual(got, b"", "the third connection from one address was served")
        for c in idle:
            c.close()
        time.sleep(0.3)
        self.assertEqual(s.health({"Authorization": "Bearer " + TOKEN})[0], 200)

    def test_header_deadline(self):
        """A new connection that sends no whole header within
        --header-deadline is closed (no token is checked before the
        header: an idle connection costs an attacker nothing); one that
        sent its request is not cut by it."""
        s = Service(self, "tcp:127.0.0.1:0", "--token-file", self.token_file, "-j", "1", "--header-deadline", "1")
        self.addCleanup(s.stop)
        host, port = s.where[4:].rsplit(":", 1)
        idle = socket.create_connection((host, int(port)), timeout=10)
        idle.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")   # never ends its header
        t0 = time.monotonic()
        try:
            got = idle.recv(4096)
        except ConnectionResetError:
            got = b""
        took = time.monotonic() - t0
        idle.close()
        self.assertEqual(got, b"")
        self.assertLess(took, 5, "closed after %.1f s" % took)
        status, js, _ = s.call("POST", "/run_code", sf_request("import time; time.sleep(2); print(1)"),
                               {"Authorization": "Bearer " + TOKEN})
        self.assertEqual((status, js["status"]), (200, "Success"), js)

    def test_token_header_and_path(self):
        s = Service(self, "tcp:127.0.0.1:0", "--token-file", self.token_file, "-j", "2")
        self.addCleanup(s.stop)
        bearer = {"Authorization": "Bearer " + TOKEN}
        for headers, path in [({}, "/run_code"), ({"Authorization": "Bearer wrong"}, "/run_code"),
                              ({}, "/wrong-token-0123456789abcdef/run_code"), ({}, "/" + TOKEN)]:
            status, js, r = s.call("POST", path, sf_request("print(1)"), headers)
            self.assertEqual(status, 401, (headers, path, js))
            self.assertNotIn(TOKEN, json.dumps(js))
        self.assertEqual(s.health()[0], 401)
        self.assertEqual(s.health(bearer)[0], 200)
        self.assertEqual(s.run_code("print(1)", headers=bearer)["status"], "Success")
        # verl's caller: a configured URL, only Content-Type and Accept
        url = "http://%s/%s/run_code" % (s.where[4:], TOKEN)
        req = urllib.request.Request(url, data=json.dumps(sf_request("print(input())", stdin="x\n")).encode(),
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            js = json.loads(r.read())
        self.assertEqual((js["status"], js["run_result"]["stdout"]), ("Success", "x\n"))
        with self.assertRaises(urllib.error.HTTPError) as cm:
            urllib.request.urlopen(url.replace(TOKEN, TOKEN[:-1] + "X"), data=b"{}", timeout=60)
        self.assertEqual(cm.exception.code, 401)
        self.assertEqual(s.stop(), 0)
        self.assertNotIn(TOKEN.encode(), s.log, "the token is never logged")
