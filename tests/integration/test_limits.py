"""Resource limits: memory, pids, CPU time, file size, /tmp size — each
stopped by the sandbox and named in the result (issue: limits that hold)."""
import json
import os
import unittest

from nsbtest import PY, SandboxTest


class Limits(SandboxTest):
    def backend(self, res):
        return res["protections"]["memory"]

    def test_memory_bomb(self):
        p, res = self.py("memory.py", opts=("--memory", "96M", "--wall-time", "20s"))
        if self.backend(res) in ("cgroup1", "cgroup2"):
            self.assertIn("memory", res["limits_hit"], res)
            self.assertEqual(res["status"], "limit", res)
            self.assertEqual(res["limit"], "memory")
            self.assertEqual(p.returncode, 124)
            self.assertLessEqual(res["peak_memory_bytes"], 96 * 1024 * 1024 + (1 << 20))
        else:
            # rlimit: the allocation fails inside the program instead, and
            # nothing outside can see that it did: no limits_hit claim
            self.assertEqual(self.backend(res), "rlimit")
            self.assertIn("MemoryError", res["stdout"]["text"] + res["stderr"]["text"])
            self.assertEqual(res["exit_code"], 3)

    def test_fork_bomb_is_capped(self):
        p, res = self.py("forkbomb.py", opts=("--pids", "16", "--wall-time", "20s"))
        if res["protections"]["pids"] in ("cgroup1", "cgroup2"):
            self.assertIn("pids", res["limits_hit"], res)
        else:
            self.assertEqual(res["protections"]["pids"], "rlimit")
        obs = json.loads(res["stdout"]["text"].splitlines()[0])
        self.assertGreater(obs["refused"], 0)
        # the program itself plus its children never exceed the limit
        self.assertLessEqual(obs["forked"] + 1, 16)

    def test_threaded_spinner_hits_cpu_time(self):
        p, res = self.py("spin.py", "2", opts=("--cpu-time", "1s", "--wall-time", "20s"))
        self.assertEqual(res["status"], "limit", res)
        self.assertEqual(res["limit"], "cpu_time")
        if res["protections"]["cpu_time"] == "rlimit":
            # the kernel's RLIMIT_CPU check samples tick-based time, which on
            # a loaded machine runs ahead of the precise rusage nsbox reports
            self.assertGreaterEqual(res["cpu_ms"], 800)
        else:
            self.assertGreaterEqual(res["cpu_ms"], 1000)
        self.assertLess(res["wall_ms"], 15000)

    def test_big_write_stops_at_file_size(self):
        p, res = self.py("bigwrite.py", "/tmp/big", opts=("--file-size", "3M", "--tmp-size", "64M"))
        obs = self.observed(res)
        self.assertEqual(obs["error"], "EFBIG")   # CPython ignores SIGXFSZ
        self.assertLessEqual(obs["size"], 3 * 1024 * 1024)

    def test_file_size_signal_for_default_disposition(self):
        # a program that keeps SIGXFSZ's default action is stopped by it
        code = ("import signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
                "open('/tmp/f','wb').write(b'x' * (4 << 20))\n")
        p, res = self.run_json("python", "--file-size", "1M", "-c", code)
        self.assertEqual(res["status"], "limit", res)
        self.assertEqual(res["limit"], "file_size")
        self.assertEqual(p.returncode, 124)

    def test_tmp_fills_to_enospc(self):
        p, res = self.py("bigwrite.py", "/tmp/fill", opts=("--file-size", "64M", "--tmp-size", "4M"))
        obs = self.observed(res)
        self.assertEqual(obs["error"], "ENOSPC")
        self.assertLessEqual(obs["size"], 4 * 1024 * 1024)

    def test_accounting_present(self):
        _, res = self.run_json("python", "-c", "x = bytearray(20 << 20); print(len(x))")
        self.assertEqual(res["status"], "exited")
        self.assertGreater(res["cpu_ms"], 0)
        self.assertGreater(res["peak_memory_bytes"], 20 << 20)


if __name__ == "__main__":
    unittest.main()
