"""Kernel-surface narrowing: each door a hostile program tries is refused,
and strict isolation fails closed when a protection cannot be applied."""
import atexit
import json
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

from nsbtest import NSBOX, SandboxTest

FIXTURES_BUILD = os.environ.get("FIXTURES_BUILD", "")
TRY = os.path.join(FIXTURES_BUILD, "nsbox-try-syscall")
_try_copy = None


def try_binary():
    """The fixture at a path the sandbox can mirror: a build tree under /tmp
    would be hidden by the sandbox's own /tmp, so copy it to /var/tmp."""
    global _try_copy
    if not TRY.startswith("/tmp/"):
        return TRY
    # Another module may use this after our tearDownModule removed the copy.
    if _try_copy is None or not os.path.exists(_try_copy):
        d = tempfile.mkdtemp(prefix="nsbox-fixture.", dir="/var/tmp")
        os.chmod(d, 0o755)
        _try_copy = os.path.join(d, "nsbox-try-syscall")
        shutil.copy2(TRY, _try_copy)
        atexit.register(shutil.rmtree, d, True)
    return _try_copy


def tearDownModule():
    global _try_copy
    if _try_copy:
        shutil.rmtree(os.path.dirname(_try_copy), ignore_errors=True)
        _try_copy = None

DENIED = ["ptrace", "process_vm_readv", "mount", "umount2", "move_mount", "open_tree", "fsopen",
          "pivot_root", "chroot", "unshare_user", "unshare_net", "setns", "clone_newuser", "clone3",
          "keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "modify_ldt", "kexec_load",
          "init_module", "reboot", "swapon", "acct", "syslog", "open_by_handle_at", "personality",
          "settimeofday", "clock_settime", "tiocsti", "socket_inet", "socket_inet6", "socket_netlink",
          "socket_packet", "chmod_setuid", "fchmod_setgid", "fchmodat_setuid", "fchmodat2_setuid", "open_setuid",
          "openat_setgid", "creat_setuid", "mknodat_setuid", "openat2",
          # host-wide budgets no user namespace, rlimit or cgroup divides: Linux AIO
          # (fs.aio-max-nr) and the huge-page pool
          "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",
          "memfd_hugetlb", "memfd_hugetlb_highbits", "mmap_hugetlb", "shmget_hugetlb"]


# nsbox-try-syscall's attempts on the init (fixtures/try_syscall.c, "The init")
INIT_DOORS = ["prlimit_init", "prlimit_init_highbits", "prlimit_init_read", "setpriority_init", "setpriority_user",
              "getpriority_init", "ioprio_set_init", "ioprio_set_user", "sched_setaffinity_init",
              "sched_getaffinity_init", "sched_setscheduler_init", "sched_setparam_init", "sched_setattr_init",
              "migrate_pages_init", "move_pages_init", "kcmp_init", "pidfd_open_init", "kill_init", "tgkill_init",
              "rt_sigqueueinfo_init", "getsid_init", "prctl_sched_core_init",
              # its CPU clock ((~1 << 3) | kind): read, probed, slept on, timed
              "clock_gettime_init", "clock_gettime_init_highbits", "clock_getres_init", "clock_nanosleep_init",
              "timer_create_init"]


class Doors(SandboxTest):
    def setUp(self):
        super().setUp()
        if not os.access(TRY, os.X_OK):
            self.fail("fixture nsbox-try-syscall not built at %r" % TRY)

    def attempts(self, names, *opts):
        p, res = self.run_json("run", *opts, "--", try_binary(), *names)
        self.assertEqual(res["status"], "exited", res)
        out = {}
        for line in res["stdout"]["text"].splitlines():
            o = json.loads(line)
            out[o["try"]] = o
        return out, res

    def test_every_door_is_refused(self):
        out, res = self.attempts(DENIED)
        for name in DENIED:
            o = out[name]
            refused = o.get("ret", 0) == -1 or "signal" in o
            self.assertTrue(refused, (name, o))
        for prot in ("seccomp", "landlock", "caps", "no_new_privs"):
            self.assertNotIn(res["protections"][prot], ("unavailable", "disabled"), prot)

    def test_no_syscall_names_the_init(self):
        # PID 1 in the sandbox is the init that reports the result: every
        # attempt names it (by pid, pid | 1 << 32, group 1 or a whole user)
        # with arguments the kernel would reject with EFAULT/EINVAL/ESRCH, so
        # only the filter answers EPERM (docs/seccomp.md, "The init").
        out, _ = self.attempts(INIT_DOORS)
        for name in INIT_DOORS:
            self.assertEqual(out[name].get("errno_name"), "EPERM", (name, out[name]))

    def test_own_cpu_clocks_stay_open(self):
        # The filter refuses every process CPU clock but the caller's own
        # (pid 0): what Python and its pools use must still work, threads and
        # child processes included. nsbox-try-syscall shows the same at the
        # syscall: pid 0's clock works, a thread clock is the kernel's to refuse.
        code = ("import concurrent.futures, json, multiprocessing, os, resource, threading, time\n"
                "def burn(n):\n"
                "    t = time.process_time()\n"
                "    while time.process_time() - t < 0.02: pass\n"
                "    return n * n\n"
                "if __name__ == '__main__':\n"
                "    burn(0)\n"
                "    r = {'process': time.clock_gettime(time.CLOCK_PROCESS_CPUTIME_ID) > 0,\n"
                "         'thread': time.clock_gettime(time.pthread_getcpuclockid(threading.get_ident())) > 0,\n"
                "         'process_time': time.process_time() > 0, 'thread_time': time.thread_time() > 0,\n"
                "         'rusage': resource.getrusage(resource.RUSAGE_SELF).ru_utime > 0,\n"
                "         'times': os.times().user > 0}\n"
                "    with multiprocessing.Pool(2) as p:\n"
                "        r['pool'] = p.map(burn, range(4))\n"
                "    with concurrent.futures.ProcessPoolExecutor(2) as ex:\n"
                "        r['process_pool'] = list(ex.map(burn, range(4)))\n"
                "    with concurrent.futures.ThreadPoolExecutor(2) as ex:\n"
                "        r['thread_pool'] = list(ex.map(burn, range(4)))\n"
                "    print(json.dumps(r))\n")
        self.assertEqual(json.loads(self.python_stdout(code)),
                         {"process": True, "thread": True, "process_time": True, "thread_time": True,
                          "rusage": True, "times": True, "pool": [0, 1, 4, 9], "process_pool": [0, 1, 4, 9],
                          "thread_pool": [0, 1, 4, 9]})
        out, _ = self.attempts(["clock_gettime_self", "clock_gettime_thread_init"])
        self.assertEqual(out["clock_gettime_self"].get("ret"), 0, out)
        self.assertEqual(out["clock_gettime_thread_init"].get("errno_name"), "EINVAL", out)   # the kernel's own

    def test_pipes_grow_no_further_than_the_default(self):
        # Pipe pages are counted per host uid, not per user namespace: a
        # sandbox that grew its pipes (and nsbox's capture pipe, its stdout)
        # to 1 MiB took the caller's fs.pipe-user-pages-soft, and the uid's
        # next pipes got 2 pages. Past 16 pages F_SETPIPE_SZ is refused;
        # the default and shrinking stay.
        code = ("import fcntl, json, os\n"
                "def grow(size, fd=None):\n"
                "    r, w = os.pipe()\n"
                "    try:\n"
                "        return fcntl.fcntl(w if fd is None else fd, 1031, size)\n"
                "    except OSError as e:\n"
                "        return e.errno\n"
                "print(json.dumps({'1M': grow(1 << 20), '64K+1': grow(65537), 'stdout': grow(1 << 20, 1),\n"
                "                  '64K': grow(65536), '4K': grow(4096)}))\n")
        self.assertEqual(json.loads(self.python_stdout(code)),
                         {"1M": 1, "64K+1": 1, "stdout": 1, "64K": 65536, "4K": 4096})   # 1: EPERM
        out, _ = self.attempts(["setpipe_sz_grow", "setpipe_sz_highbits", "setpipe_sz_default"])
        self.assertEqual([out[k].get("errno_name") for k in ("setpipe_sz_grow", "setpipe_sz_highbits",
                                                             "setpipe_sz_default")], ["EPERM", "EPERM", "EBADF"])

    def python_stdout(self, code):
        p, res = self.run_json("python", "-c", code)
        self.assertEqual(res["status"], "exited", res)
        return res["stdout"]["text"]

    def test_per_user_instances_of_the_host_are_not_taken(self):
        # inotify instances and fanotify groups are counted per user up the
        # user-namespace chain: 128 taken inside were the caller's (root's for
        # a root caller), and the host's own inotify_init1 failed with EMFILE.
        code = ("import ctypes, errno, json\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "def n(fn):\n"
                "    got = 0\n"
                "    while got < 200 and fn() >= 0:\n"
                "        got += 1\n"
                "    return [got, errno.errorcode.get(ctypes.get_errno())]\n"
                "print(json.dumps({'inotify': n(lambda: libc.inotify_init1(0)),\n"
                "                  'fanotify': n(lambda: libc.fanotify_init(0x200, 0))}))\n")
        self.assertEqual(json.loads(self.python_stdout(code)), {"inotify": [0, "ENOSYS"], "fanotify": [0, "ENOSYS"]})

    def test_queued_signals_take_little_of_the_callers_budget(self):
        # Queued signals are counted per user up the user-namespace chain:
        # a program that queues RLIMIT_SIGPENDING of them must not leave the
        # caller's own sigqueue() failing with EAGAIN.
        code = ("import ctypes, os, signal\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})\n"
                "info = (ctypes.c_int * 32)(int(signal.SIGRTMIN), 0, -1)\n"
                "n = 0\n"
                "while n < 200000 and libc.syscall(129, os.getpid(), int(signal.SIGRTMIN), info) == 0:\n"
                "    n += 1\n"
                "print(n, ctypes.get_errno())\n")
        queued, err = map(int, self.python_stdout(code).split())
        self.assertGreater(queued, 0, "nothing queued: the test proves nothing")
        self.assertLessEqual(queued, 1024)
        self.assertEqual(err, 11)   # EAGAIN: the sandbox's own budget ran out

    def foreign_abi(self, fake_no_i386=False):
        """Probe, then check (the rule of foreign_abi_verdict in
        fixtures/try_syscall.c): the fixture run unfiltered on the host says
        whether each foreign door exists here; an open one must be killed
        with SIGSYS in the sandbox, an absent one (i386: SIGSEGV, the CPU
        faults on the missing gate; x32: ENOSYS) must stay shut and is
        reported. Returns {name: "present" | "absent"}."""
        names = ["x32", "i386"]
        env = dict(os.environ, NSBOX_FAKE_NO_I386="1") if fake_no_i386 else None
        opts = ["--env", "NSBOX_FAKE_NO_I386=1"] if fake_no_i386 else []
        host = subprocess.run([try_binary(), *names], capture_output=True, timeout=60, env=env)
        self.assertEqual(host.returncode, 0, host.stderr)
        control = {o["try"]: o for o in map(json.loads, host.stdout.decode().splitlines())}
        out, _ = self.attempts(names, *opts)
        branch = {}
        for name in names:
            c, got = control[name], out[name]
            present = "signal" not in c and c.get("ret", -1) >= 0
            branch[name] = "present" if present else "absent"
            if present:
                self.assertEqual(got.get("signal_name"), "SIGSYS", (name, "open on this host", c, got))
                continue
            print("\nnote: this host has no %s door%s (unfiltered: %s); checked it stays shut in the sandbox (%s)"
                  % (name, " (faked)" if fake_no_i386 and name == "i386" else "", c, got))
            self.assertFalse("signal" not in got and got.get("ret", -1) >= 0,
                             (name, "went through only under the filter", c, got))
            same = ("signal" in c and got.get("signal") == c["signal"]) or \
                ("signal" not in c and "signal" not in got and got.get("errno") == c.get("errno"))
            self.assertTrue(got.get("signal_name") == "SIGSYS" or same, (name, c, got))
        return branch

    def test_foreign_abi_is_killed(self):
        branch = self.foreign_abi()
        print("\nnote: foreign ABI doors on this host: %s" % branch)

    def test_foreign_abi_on_a_host_without_i386(self):
        # The other branch, on a host that has the door: the fixture's i386
        # attempt faults on a missing gate as such a kernel's int $0x80 does.
        branch = self.foreign_abi(fake_no_i386=True)
        self.assertEqual(branch["i386"], "absent")

    def test_unix_sockets_and_fork_still_work(self):
        out, _ = self.attempts(["socket_unix", "fork"])
        self.assertNotEqual(out["socket_unix"].get("ret"), -1, out["socket_unix"])

    def test_setuid_gains_nothing(self):
        out, _ = self.attempts(["setuid0"])
        self.assertEqual(out["setuid0"].get("ret"), -1, out["setuid0"])


class SchedulingBudget(SandboxTest):
    def test_no_real_time_priority_and_no_nice_below_the_callers(self):
        # A caller's rtprio (limits.conf, LimitRTPRIO=) must not reach the
        # program: SCHED_FIFO spinners would starve the init and the host.
        # Here the caller's own limits are already 0 unless the suite runs
        # with a real-time budget; the program's must be 0 either way.
        code = ("import resource, os, json\n"
                "r = {'rtprio': resource.getrlimit(resource.RLIMIT_RTPRIO),"
                " 'nice': resource.getrlimit(resource.RLIMIT_NICE)}\n"
                "try:\n    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1)); r['fifo'] = 'ok'\n"
                "except OSError as e:\n    r['fifo'] = e.errno\n"
                "os.nice(5)\n"
                "print(json.dumps(r))\n")
        for opts in ((), ("--isolation", "reduced")):
            p, res = self.run_json("python", *opts, "-c", code)
            self.assertEqual(res["status"], "exited", res)
            obs = json.loads(res["stdout"]["text"])
            self.assertEqual((obs["rtprio"], obs["nice"]), ([0, 0], [0, 0]), (opts, obs))
            self.assertNotEqual(obs["fifo"], "ok", opts)


class Loopback(SandboxTest):
    def test_server_and_client_inside(self):
        code = ("import socket, threading\n"
                "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
                "port = s.getsockname()[1]\n"
                "def serve():\n c, _ = s.accept(); c.sendall(b'pong'); c.close()\n"
                "threading.Thread(target=serve).start()\n"
                "c = socket.create_connection(('127.0.0.1', port)); print(c.recv(4).decode())\n")
        _, res = self.run_json("python", "--network", "loopback", "-c", code)
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], "pong\n")
        self.assertEqual(res["protections"]["net"], "loopback")

    def test_loopback_still_cannot_reach_the_host(self):
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        try:
            code = ("import socket\ntry:\n socket.create_connection(('127.0.0.1', %d), timeout=2); print('connected')\n"
                    "except OSError as e:\n print('refused')\n" % port)
            _, res = self.run_json("python", "--network", "loopback", "-c", code)
            self.assertEqual(res["stdout"]["text"], "refused\n")
        finally:
            srv.close()


class FailClosed(SandboxTest):
    STEPS = ["clone", "cgroup", "mount", "rlimit", "caps", "no_new_privs", "landlock", "seccomp"]

    def test_each_forced_failure_runs_nothing(self):
        for step in self.STEPS + ["net"]:
            with self.subTest(step=step):
                ws = tempfile.mkdtemp()
                os.chmod(ws, 0o777)
                try:
                    env = dict(os.environ, NSBOX_TEST_FAIL_STEP=step)
                    args = ["python", "--workspace", ws]
                    if step == "net":
                        args += ["--network", "loopback"]
                    p, res = self.run_json(*args, "-c", "open('/workspace/ran', 'w').write('yes')", env=env)
                    self.assertEqual(res["status"], "error", res)
                    self.assertEqual(res["error"]["stage"], step)
                    self.assertEqual(p.returncode, 125)
                    self.assertIsNone(res["exit_code"])
                    self.assertFalse(os.path.exists(os.path.join(ws, "ran")), "the program ran")
                    # what failed is not claimed
                    claimed = {k: v for k, v in res["protections"].items() if v not in ("unavailable",)}
                    if step in ("seccomp", "landlock"):
                        self.assertNotIn(step, claimed)
                finally:
                    shutil.rmtree(ws)


class ResultFile(SandboxTest):
    """--result is written by nsbox (perhaps root) after the program ran, and
    the program can write the directory that holds it: what it plants there
    must not choose the host file nsbox writes."""

    def setUp(self):
        super().setUp()
        self.d = tempfile.mkdtemp(prefix="nsbox-result.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.d, True)
        self.ws = os.path.join(self.d, "ws")
        os.mkdir(self.ws)
        os.mkdir(os.path.join(self.ws, "sub"))
        self.target = os.path.join(self.d, "target.rc")   # a host file outside the workspace
        with open(self.target, "w") as f:
            f.write("# untouched\n")

    def plant(self, code, result, cmd="python"):
        if cmd == "judge":
            spec = os.path.join(self.d, "spec.json")
            with open(spec, "w") as f:
                json.dump({"program": {"source": code}, "cases": [{"name": "c", "expect": {"exit_code": 0}}]}, f)
            args = ["judge", "--workspace", self.ws, "--result", result, spec]
        else:
            args = ["python", "--workspace", self.ws, "--result", result, "-c", code]
        p = self.nsbox(*args)
        with open(self.target) as f:
            self.assertEqual(f.read(), "# untouched\n", "nsbox wrote the host file the program pointed --result at")
        return p

    def test_a_symlink_planted_at_the_result_is_not_followed(self):
        for cmd in ("python", "judge"):
            with self.subTest(cmd=cmd):
                res = os.path.join(self.ws, "result.json")
                p = self.plant("import os\nos.symlink(%r, 'result.json')\nprint('$(touch /tmp/pwned)')" % self.target,
                               res, cmd)
                self.assertEqual(p.returncode, 125, p.stderr)
                if cmd == "judge":
                    # judge refuses a --result the program could reach before
                    # any case runs (the verdict quotes expected values)
                    self.assertIn(b"lies inside --workspace", p.stderr)
                    self.assertFalse(os.path.lexists(res))
                    continue
                self.assertIn(b"symlink", p.stderr)
                self.assertTrue(os.path.islink(res))
                os.unlink(res)

    def test_a_directory_swapped_for_a_symlink_is_not_followed(self):
        p = self.plant("import os\nos.rename('sub', 'sub.old')\nos.symlink(%r, 'sub')" % self.d,
                       os.path.join(self.ws, "sub", "target.rc"))
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"symlink", p.stderr)

    def test_a_fifo_at_the_result_neither_blocks_nor_is_written(self):
        p = self.plant("import os\nos.mkfifo('result.json')", os.path.join(self.ws, "result.json"))
        self.assertEqual(p.returncode, 125, p.stderr)

    def test_a_regular_result_is_still_written(self):
        res = os.path.join(self.ws, "sub", "result.json")
        with open(res, "w") as f:
            f.write("x" * 100000)       # longer than the result: truncated, not overlaid
        p = self.plant("print('fine')", res)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(res) as f:
            self.assertEqual(json.load(f)["stdout"]["text"], "fine\n")


class InitCommandLine(SandboxTest):
    """The init is a fork of nsbox and /proc/1/cmdline is readable although
    it is not dumpable: it must not show what nsbox was given."""

    def test_nsbox_options_are_not_readable_at_proc_1(self):
        d = tempfile.mkdtemp(prefix="nsbox-cmdline.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, d, True)
        os.chmod(d, 0o755)
        stdin = os.path.join(d, "stdin-MARKER-path")
        open(stdin, "w").close()
        os.chmod(stdin, 0o644)
        code = "import sys; sys.stdout.buffer.write(open('/proc/1/cmdline', 'rb').read())"
        p, res = self.run_json("python", "--stdin", stdin, "--wall-time", "7s", "-c", code)
        self.assertEqual(res["status"], "exited", res)
        seen = res["stdout"]["text"]
        self.assertGreater(len(seen), 0, "nothing read: the test proves nothing")
        for leak in ("MARKER", "--stdin", "--wall-time", "proc/1/cmdline"):
            self.assertNotIn(leak, seen)
        self.assertEqual(seen.rstrip("\x00"), "nsbox-init")


if __name__ == "__main__":
    unittest.main()
