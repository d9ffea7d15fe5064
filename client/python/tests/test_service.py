"""nsbox_client against `nsbox serve` (connect): the same result types as
Client, over the unix socket and over TCP with a token; refusals as
NsboxError, an unreachable service as NsboxUnavailable; asyncio."""
import asyncio
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from nsbox_client import AsyncServiceClient, NsboxError, NsboxUnavailable, RunResult, Verdict, connect  # noqa: E402

NSBOX = os.environ.get("NSBOX", "nsbox")
TOKEN = "client-token-0123456789abcdef"


def start(*args):
    p = subprocess.Popen([NSBOX, "serve", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    log = b""
    deadline = time.time() + 30
    while b"listening on " not in log:
        if time.time() > deadline or p.poll() is not None:
            p.kill()
            raise AssertionError("nsbox serve did not start: %r" % log)
        if select.select([p.stderr], [], [], 0.5)[0]:
            log += os.read(p.stderr.fileno(), 4096)
    return p, log.split(b"listening on ", 1)[1].split(b" ", 1)[0].decode()


def stop(p):
    p.send_signal(signal.SIGTERM)
    rc = p.wait(60)
    p.stderr.close()
    return rc


class Service(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="nsbox-client-serve-")
        cls.proc, where = start("--listen", "unix:" + os.path.join(cls.tmp, "s.sock"), "-j", "2")
        cls.svc = connect(where)

    @classmethod
    def tearDownClass(cls):
        stop(cls.proc)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_run_code_results(self):
        r = self.svc.run_code("def f(x):\n    return x + 1", "assert f(1) == 2")
        self.assertIsInstance(r, RunResult)
        self.assertEqual((r.status, r.label, r.return_code), ("pass", 1, 0))
        r = self.svc.run_code("import sys\nprint(input())\nsys.exit(3)", stdin="hi\n")
        self.assertEqual((r.status, r.return_code, r.stdout), ("fail", 3, "hi\n"))
        r = self.svc.run_code("while True: pass", timeout=1)
        self.assertEqual(r.status, "timeout")

    def test_files(self):
        """files= placed in the job's workspace, fetch_files= read back as
        bytes; the ones not read in files_refused; sync and asyncio."""
        code = "import os\nopen('out.bin', 'wb').write(open('d/in.txt', 'rb').read()[::-1])\nos.symlink('/etc/passwd', 'l')"
        r = self.svc.run_code(code, files={"d/in.txt": b"abc\x00"}, fetch_files=["out.bin", "l"])
        self.assertEqual(r.status, "pass", r)
        self.assertEqual(r.files, {"out.bin": b"\x00cba"})
        self.assertIn("symbolic link", r.files_refused["l"])

        async def main():
            async with AsyncServiceClient("unix:" + os.path.join(self.tmp, "s.sock")) as a:
                return await a.run_code("open('o', 'w').write(open('i').read().upper())", files={"i": "hé"},
                                        fetch_files=["o"])

        self.assertEqual(asyncio.run(main()).files, {"o": "HÉ".encode()})
        with self.assertRaises(NsboxError) as cm:
            self.svc.run_code("pass", files={"../x": b""})
        self.assertIn('"files": the name "../x"', str(cm.exception))
        with self.assertRaises(TypeError):
            self.svc.run_code("pass", fetch_files="out.bin")

    def test_judge(self):
        spec = {"program": {"source": "print(input())"},
                "cases": [{"name": "echo", "stdin": "x\n", "expect": {"stdout": {"equals": "x\n"}}}]}
        v = self.svc.judge(spec)
        self.assertIsInstance(v, Verdict)
        self.assertEqual(v.verdict, "pass")

    def test_refusal_is_nsbox_error(self):
        with self.assertRaises(NsboxError) as cm:
            self.svc.judge({"program": {"path": "/etc/passwd"}, "cases": [{"name": "a"}]})
        self.assertIn("program.path", str(cm.exception))

    def test_asyncio(self):
        async def main():
            a = AsyncServiceClient("unix:" + os.path.join(self.tmp, "s.sock"))
            return await asyncio.gather(*(a.run_code("print(%d)" % i) for i in range(4)))

        rs = asyncio.run(main())
        self.assertEqual([r.stdout for r in rs], ["%d\n" % i for i in range(4)])

    def test_unreachable(self):
        with self.assertRaises(NsboxUnavailable):
            connect("unix:" + os.path.join(self.tmp, "nothing.sock")).run_code("print(1)")


class AsyncConcurrency(unittest.TestCase):
    def test_more_calls_at_once_than_the_default_executor(self):
        """32 sleep(1) jobs against -j 16: two rounds, ~2 s. Through the
        loop's default executor (min(32, CPUs + 4) threads: 6 on 2 CPUs)
        they took ~6 s."""
        tmp = tempfile.mkdtemp(prefix="nsbox-client-serve-aio-")
        self.addCleanup(shutil.rmtree, tmp, True)
        p, where = start("--listen", "unix:" + os.path.join(tmp, "s.sock"), "-j", "16", "--queue", "64")
        try:
            async def main():
                async with AsyncServiceClient(where, max_concurrency=64) as a:
                    await a.run_code("print(0)")   # the engine is up and warm
                    t0 = time.monotonic()
                    rs = await asyncio.gather(*(a.run_code("import time\ntime.sleep(1)\nprint(%d)" % i)
                                                for i in range(32)))
                    return rs, time.monotonic() - t0

            rs, took = asyncio.run(main())
            self.assertEqual([r.stdout for r in rs], ["%d\n" % i for i in range(32)])
            self.assertLess(took, 4.5, "32 calls of 1 s against -j 16 took %.1f s" % took)
            with self.assertRaises(ValueError):
                AsyncServiceClient(where, max_concurrency=0)
        finally:
            self.assertEqual(stop(p), 0)


class ServiceTcp(unittest.TestCase):
    def test_token(self):
        tmp = tempfile.mkdtemp(prefix="nsbox-client-serve-tcp-")
        self.addCleanup(shutil.rmtree, tmp, True)
        tf = os.path.join(tmp, "token")
        with open(tf, "w") as f:
            f.write(TOKEN)
        os.chmod(tf, 0o600)   # the service refuses a token others can read
        p, where = start("--listen", "tcp:127.0.0.1:0", "--token-file", tf, "-j", "1")
        try:
            url = "http://" + where[4:]
            self.assertEqual(connect(url, token=TOKEN).run_code("print(2)").stdout, "2\n")
            with self.assertRaises(NsboxError) as cm:
                connect(url, token="wrong").run_code("print(2)")
            self.assertIn("401", str(cm.exception))
        finally:
            self.assertEqual(stop(p), 0)


if __name__ == "__main__":
    unittest.main()
