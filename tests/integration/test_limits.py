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
            # rlimit: RLIMIT_AS leaves room for thread stacks
            # (cg_rlimit_as_bytes), so the supervisor's sum of the tree
            # usually stops the run first (a memory limit, as a cgroup's);
            # when RLIMIT_AS comes first the allocation fails inside the
            # program, and nothing outside can see that it did
            self.assertEqual(self.backend(res), "rlimit")
            if res["status"] == "limit":
                self.assertEqual(res["limit"], "memory", res)
                self.assertEqual(p.returncode, 124)
            else:
                self.assertIn("MemoryError", res["stdout"]["text"] + res["stderr"]["text"])
                self.assertEqual(res["exit_code"], 3)

    def test_memory_of_children_counts(self):
        # six children hold 24 MiB each, 144 MiB in all under a 64 MiB limit:
        # a cgroup counts them together; RLIMIT_AS bounds each process alone,
        # so under rlimit the supervisor sums the tree and stops it
        # Each child reports once it holds its share, then waits for the
        # program to end; a program that saw all six succeed waits for good.
        code = ("import os, time\nr, w = os.pipe()\ngr, gw = os.pipe()\n"
                "for i in range(6):\n"
                "    if os.fork() == 0:\n"
                "        os.close(r); os.close(gw)\n"
                "        x = bytearray(24 << 20)\n"
                "        for j in range(0, len(x), 4096): x[j] = 1\n"
                "        os.write(w, b'1'); os.close(w)\n"
                "        os.read(gr, 1)\n"
                "        os._exit(0)\n"
                "os.close(w); os.close(gr)\n"
                "held = 0\n"
                "while os.read(r, 1): held += 24\n"
                "print('held', held, flush=True)\n"
                "if held == 144: time.sleep(60)\n")
        p, res = self.run_json("python", "--memory", "64M", "--pids", "16", "--wall-time", "10s", "-c", code)
        self.assertIn("memory", res["limits_hit"], res)
        if self.backend(res) == "rlimit":
            # all six may have reported before a poll saw them: the sum
            # stops the run either way
            self.assertEqual(res["limit"], "memory", res)
            self.assertEqual(p.returncode, 124)
        # (Under a cgroup, "held" may still reach 144: the OOM killer picks
        # the largest task, a child that already reported, and the next one
        # then fits. A memory hit at all is the evidence: each child alone is
        # 24 MiB, under the limit, so only their sum can reach it.)

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

    def test_pids_counts_the_program_not_the_init(self):
        # --pids N: the program and its children hold N tasks; nsbox's init is
        # not one of them (--pids 1 could not even start the program)
        code = ("import os\nr, w = os.pipe()\nforked = 0\n"
                "for i in range(10):\n"
                "    try:\n"
                "        if os.fork() == 0:\n"
                "            os.close(w); os.read(r, 1); os._exit(0)\n"
                "        forked += 1\n"
                "    except OSError:\n"
                "        pass\n"
                "print(forked)\n")
        for n in (1, 3):
            p, res = self.run_json("python", "--pids", str(n), "-c", code)
            self.assertEqual(res["status"], "exited", res)
            self.assertEqual(res["stdout"]["text"], "%d\n" % (n - 1))

    def test_threaded_spinner_hits_cpu_time(self):
        p, res = self.py("spin.py", "2", opts=("--cpu-time", "1s", "--wall-time", "20s"))
        self.assertEqual(res["status"], "limit", res)
        self.assertEqual(res["limit"], "cpu_time")
        if res["protections"]["cpu_time"] == "rlimit":
            # The kernel judged RLIMIT_CPU on its own clock; the rusage nsbox
            # reports can read short of it on a loaded host.
            self.assertGreater(res["cpu_ms"], 500)
        else:
            self.assertGreaterEqual(res["cpu_ms"], 1000)
        self.assertLess(res["wall_ms"], 15000)

    def test_self_raised_sigxcpu_is_a_signal(self):
        # the CPU limit was nowhere near: whoever sent it, it was not a limit
        code = "import os, signal\nos.kill(os.getpid(), signal.SIGXCPU)\n"
        p, res = self.run_json("python", "--cpu-time", "5s", "-c", code)
        self.assertEqual(res["status"], "signaled", res)
        self.assertEqual(res["signal_name"], "SIGXCPU")
        self.assertNotIn("cpu_time", res["limits_hit"])
        self.assertEqual(p.returncode, 128 + 24)

    def test_catching_sigxcpu_buys_no_time(self):
        # a program that catches SIGXCPU must not get past the limit by it:
        # the limit ends it with SIGKILL, it never sees a SIGXCPU to catch
        code = ("import os, signal\n"
                "signal.signal(signal.SIGXCPU, lambda *a: os.write(1, b'caught SIGXCPU\\n'))\n"
                "while True: pass\n")
        p, res = self.run_json("python", "--cpu-time", "1s", "--wall-time", "20s", "-c", code)
        self.assertEqual(res["limit"], "cpu_time", res)
        self.assertNotIn("caught", res["stdout"]["text"])

    def test_memory_outside_mappings_is_bounded(self):
        # memfd and System V segments keep their pages after the last munmap:
        # a cgroup charges them, RLIMIT_AS never sees them, so the rlimit
        # backend refuses both instead (host RAM would be the only bound)
        code = ("import ctypes, mmap, os\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "libc.shmat.restype = ctypes.c_void_p\n"
                "held, errs = 0, []\n"
                "try:\n"
                "    for i in range(12):\n"
                "        fd = os.memfd_create('m')\n"
                "        os.ftruncate(fd, 8 << 20)\n"
                "        with mmap.mmap(fd, 8 << 20) as m:\n"
                "            for j in range(0, 8 << 20, 4096): m[j] = 1\n"
                "        held += 8\n"
                "except OSError as e:\n"
                "    errs.append(e.errno)\n"
                "for i in range(12):\n"
                "    sid = libc.shmget(0, 8 << 20, 0o1600)\n"
                "    if sid < 0:\n"
                "        errs.append(ctypes.get_errno()); break\n"
                "    a = libc.shmat(sid, None, 0)\n"
                "    ctypes.memset(a, 1, 8 << 20)\n"
                "    libc.shmdt(ctypes.c_void_p(a))\n"
                "    held += 8\n"
                "print(held, errs)\n")
        p, res = self.run_json("python", "--memory", "48M", "-c", code)
        if self.backend(res) in ("cgroup1", "cgroup2"):
            self.assertEqual(res["limit"], "memory", res)
        else:
            self.assertEqual(res["status"], "exited", res)
            self.assertEqual(res["stdout"]["text"], "0 [1, 1]\n")   # EPERM twice

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

    def test_huge_output_limit_does_not_wrap(self):
        # 4x 2^62 bytes wrapped to 0: two bytes of output "exceeded" it. Such
        # a limit is now refused as absurd (kept in memory, per stream); the
        # largest one taken still runs.
        p = self.nsbox("python", "--output-limit", str(1 << 62), "-c", "print(1)")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"allowed 1 to 1G", p.stderr)
        p, res = self.run_json("python", "--output-limit", "1G", "-c", "print(1)")
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], "1\n")

    def test_accounting_present(self):
        _, res = self.run_json("python", "-c", "x = bytearray(20 << 20); print(len(x))")
        self.assertEqual(res["status"], "exited")
        self.assertGreater(res["cpu_ms"], 0)
        self.assertGreater(res["peak_memory_bytes"], 20 << 20)

    # Spins until it has used 300 ms of CPU itself, then holds 40 MiB.
    BURN = ("import os, time\n"
            "t = time.process_time()\n"
            "while time.process_time() - t < 0.3: pass\n")

    def test_accounting_survives_a_kill(self):
        # nsbox stops the run (here for output); what the program used before
        # still counts: under rlimit the teardown of the pid namespace reaps
        # the program without adding its times to the init's rusage
        code = self.BURN + ("x = bytearray(40 << 20)\n"
                            "for i in range(0, len(x), 4096): x[i] = 1\n"
                            "while True: os.write(1, b'x' * 4096)\n")
        p, res = self.run_json("python", "--output-limit", "1K", "-c", code)
        self.assertEqual(res["limit"], "output", res)
        self.assertGreaterEqual(res["cpu_ms"], 300, res)
        self.assertGreaterEqual(res["peak_memory_bytes"], 40 << 20, res)

    def test_orphans_cpu_counted(self):
        # the program ends while a child it left behind still spins: the
        # child's CPU time is the tree's too
        code = ("import os, time\nr, w = os.pipe()\nif os.fork() == 0:\n" +
                "".join("    " + l + "\n" for l in self.BURN.splitlines()) +
                "    os.write(w, b'r')\n    while True: pass\nos.read(r, 1)\n")
        p, res = self.run_json("python", "-c", code)
        self.assertEqual(res["status"], "exited", res)
        self.assertGreaterEqual(res["cpu_ms"], 300, res)


if __name__ == "__main__":
    unittest.main()
