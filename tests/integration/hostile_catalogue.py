"""The hostile catalogue: every attack a program in the sandbox tries, grouped
by what it attacks, with what must be observed inside and on the host.

Each entry runs one program (fixtures/hostile/, fixtures/py/ or the
nsbox-try-syscall fixture) in a fresh sandbox; test_hostile.py runs them all
and, after each, checks the host (hoststate.Snapshot: no cgroup, process,
mount or temporary file left; the secret never in the result; the host file
unchanged; the sentinel process alive; the host's listeners reached by
nothing). docs/security.md's "Hostile catalogue" table lists every entry with
the protection that stops it; a test keeps the two in step.
"""
import fcntl
import json
import os
import stat
import subprocess
import tempfile

from nsbtest import FIXTURES, NSBOX, PY

HOSTILE = os.path.join(FIXTURES, "hostile")


def ok(outcome):
    return isinstance(outcome, str) and outcome.startswith("ok")


def refused(t, obs, keys, where=""):
    for k in keys:
        t.assertFalse(ok(obs[k]), "%s%s was allowed: %r" % (where, k, obs[k]))


class Entry:
    def __init__(self, name, group, attack, stops, program, args=lambda c: [], opts=(), status=("exited",),
                 limit=None, check=None, network=None, append_supervisor_pid=False, kind="python", stdin=None):
        self.name, self.group, self.attack, self.stops = name, group, attack, stops
        self.stdin = stdin   # lambda c: the --stdin PATH (the caller's file); the program then takes no arguments
        self.program, self.args, self.opts = program, args, tuple(opts)
        self.status, self.limit, self.check = status, limit, check
        self.append_supervisor_pid, self.kind = append_supervisor_pid, kind


# ---- checks (t: the TestCase, res: the result object, obs: the program's
# ---- JSON observation or None, c: the host context of test_hostile.Context)

def check_read_secrets(t, res, obs, c):
    t.assertEqual(obs["found_token_in"], [])
    t.assertNotIn("TOKEN", obs["paths"].values())
    for d in ("/root", "/home", "/var", "/run", "/boot"):
        t.assertFalse(ok(obs["paths"][d]), d)
    # /sys holds only devices/ (down to the CPU count nsbox writes), never the host's
    t.assertEqual(obs["paths"]["/sys"], "ok:1")
    # /etc holds only the three files nsbox writes (passwd, group, localtime)
    t.assertEqual(obs["paths"]["/etc"], "ok:3")
    t.assertGreater(obs["scanned_files"], 50, "the scan read next to nothing: it proves nothing")


def check_write_outside(t, res, obs, c):
    for p, ops in obs["hostfile"].items():
        for op, out in ops.items():
            t.assertFalse(ok(out), "%s %s: %s" % (op, p, out))
    allowed = {d for d, out in obs["create"].items() if ok(out)}
    # /dev/shm: the sandbox's own tmpfs, like /tmp (docs/security.md, "What the root holds")
    t.assertLessEqual(allowed, {"/tmp", "/tmp (mkdir)", "/workspace", "/workspace (mkdir)", "/dev/shm",
                                "/dev/shm (mkdir)"})
    t.assertIn("/workspace", allowed, "could not even write its workspace: the test proves nothing")
    t.assertTrue(os.path.exists(os.path.join(c.ws, c.marker)))


def check_links(t, res, obs, c):
    refused(t, obs, ["write_via_symlink", "write_via_proc_symlink", "hardlink_interpreter", "hardlink_program",
                     "hardlink_tmp_to_workspace", "rename_workspace", "symlink_over_tmp",
                     "chmod_setuid_in_workspace"])
    t.assertTrue(ok(obs["symlink_host"]), "a symlink in the workspace is allowed; only following it out is not")


def check_proc(t, res, obs, c):
    t.assertLessEqual(len(obs["pids"]), 4, obs["pids"])
    t.assertIn(1, obs["pids"])
    refused(t, obs["read"], ["/proc/1/environ", "/proc/1/mem", "/proc/1/maps", "/proc/1/stack", "/proc/1/fd",
                             "/proc/1/root", "/proc/kcore", "/proc/kallsyms", "/proc/sys/kernel/hostname",
                             "/proc/sysrq-trigger", "/proc/modules", "/proc/keys"], "read ")
    refused(t, obs["write"], list(obs["write"]), "write ")
    t.assertLessEqual(set(obs["own_fds"]), {0, 1, 2, 3}, "an inherited descriptor reached the program")


def check_devices(t, res, obs, c):
    t.assertEqual(obs["dev"], ["fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
                               "urandom", "zero"])
    for p, out in obs["mknod"].items():
        if not p.endswith("fifo"):
            t.assertFalse(ok(out), "mknod %s: %s" % (p, out))
    # the sandbox's own /dev/shm and devpts open; nothing of the host's does
    own = {"/dev/ptmx", "/dev/shm"}
    refused(t, obs["open"], [p for p in obs["open"] if p not in own], "open ")
    for p in own:
        t.assertTrue(ok(obs["open"][p]), (p, obs["open"][p]))
    t.assertEqual(obs["write_full"], "ENOSPC")
    t.assertEqual(obs["write_null"], "ok:1")
    t.assertFalse(ok(obs["write_zero_node"]))


def check_forkbomb(t, res, obs, c):
    t.assertGreater(obs["refused"], 0)
    t.assertLessEqual(obs["forked"] + 1, 16)


def check_threadbomb(t, res, obs, c):
    t.assertGreater(obs["refused"], 0)
    t.assertLessEqual(obs["started"] + 1, 32)


def check_kill(t, res, obs, c):
    t.assertEqual(len(obs["pids"]), 3)
    for pid, ops in obs["pids"].items():
        for op, out in ops.items():
            t.assertFalse(ok(out), "%s on host pid %s: %s" % (op, pid, out))
    t.assertLessEqual(len(obs["visible_pids"]), 4, obs["visible_pids"])


def check_memory(t, res, obs, c):
    # rlimit: RLIMIT_AS leaves room for thread stacks (docs/cgroups.md), so
    # the supervisor's sum of the tree usually stops the bomb first
    if res["protections"]["memory"] in ("cgroup1", "cgroup2") or res["status"] == "limit":
        t.assertEqual((res["status"], res["limit"]), ("limit", "memory"), res)
    else:
        t.assertEqual((res["status"], res["exit_code"]), ("exited", 3), res)
        t.assertIn("MemoryError", res["stdout"]["text"])


def check_fill_workspace(t, res, obs, c):
    t.assertEqual(obs["error"], "EFBIG")
    t.assertLessEqual(os.path.getsize(os.path.join(c.ws, "big")), 8 << 20)


def check_fill_tmp(t, res, obs, c):
    t.assertEqual(obs["error"], "ENOSPC")
    t.assertLessEqual(obs["size"], 4 << 20)


def check_flood(t, res, obs, c):
    t.assertTrue(res["stdout"]["truncated"])
    t.assertEqual(len(res["stdout"]["text"].encode()), 64 << 10)


def check_binary(t, res, obs, c):
    out, err = res["stdout"], res["stderr"]
    t.assertEqual(out["bytes"], 256 + 9 + len("end-of-stdout"))
    t.assertIn("\ufffd", out["text"])
    t.assertTrue(out["text"].endswith("end-of-stdout"))
    t.assertTrue(err["text"].endswith("end-of-stderr"))
    t.assertIn("\x00", out["text"])


def check_net(loopback):
    def check(t, res, obs, c):
        # with --network loopback an IP socket exists, and a UDP datagram to
        # the sandbox's own lo is "sent" — the host's listener is what counts
        refused(t, obs, ["tcp_loopback", "tcp_loopback6", "tcp_other", "dns", "abstract_unix", "netlink", "packet",
                         "raw_icmp"] + ([] if loopback else ["udp_loopback", "udp_other"]))
        t.assertEqual(obs["interfaces"], "ok:lo")
        t.assertEqual(res["protections"]["net"], "loopback" if loopback else "empty-netns")
    return check


def check_priv(t, res, obs, c):
    for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        t.assertEqual(int(obs[k], 16), 0, k)
    t.assertEqual(obs["NoNewPrivs"], "1")
    t.assertEqual(obs["Seccomp"], "2")
    t.assertNotIn("0", obs["Uid"].split())
    refused(t, obs, ["setuid0", "setgid0", "setgroups0", "ptrace_init", "ptrace_traceme", "chroot"])
    refused(t, obs["unshare"], list(obs["unshare"]), "unshare ")
    refused(t, obs["tiocsti"], ["0", "1", "2"], "TIOCSTI on fd ")
    # the own IPC namespace has no such segment; under the rlimit backend the
    # filter refuses shmget before the namespace is asked (its pages would
    # escape the memory limit)
    t.assertEqual(obs["host_shm"], "EPERM" if res["protections"]["memory"] == "rlimit" else "ENOENT",
                  "the host's SysV shared memory is visible")
    t.assertEqual(obs["hostname"], "nsbox")
    t.assertFalse(ok(obs["sethostname"]))
    for line in obs["cgroup"].splitlines():
        t.assertTrue(line.endswith(":/"), "the host cgroup tree shows: " + obs["cgroup"])


def check_doors(t, res, obs, c):
    from test_hardening import DENIED
    seen = {}
    for line in res["stdout"]["text"].splitlines():
        o = __import__("json").loads(line)
        seen[o["try"]] = o
    for name in DENIED:
        o = seen[name]
        t.assertTrue(o.get("ret", 0) == -1 or "signal" in o, (name, o))


def check_clock(t, res, obs, c):
    refused(t, obs, ["clock_settime", "settimeofday", "adjtimex_setoffset", "clock_settime_monotonic"])


def check_sleep(t, res, obs, c):
    t.assertLess(res["wall_ms"], 10000)


# what init_levers.py may do: to itself only
INIT_LEVERS_OWN = {"prlimit_self", "setpriority_self", "clock_gettime_self", "clock_gettime_own_process",
                   "clock_gettime_own_thread", "setpipe_sz_default", "setpipe_sz_shrink"}
# refused by the filter where the kernel alone would have allowed them: EPERM, not any error
INIT_LEVERS_EPERM = {"clock_gettime_PROF", "clock_gettime_VIRT", "clock_gettime_SCHED", "clock_getres",
                     "clock_nanosleep", "timer_create", "setpipe_sz_1M", "setpipe_sz_128K", "setpipe_sz_stdout_1M"}


def check_init_levers(exit_code):
    def check(t, res, obs, c):
        levers = obs["levers"]
        t.assertGreater(len(levers), 90, "the fixture tried next to nothing: it proves nothing")
        for k in INIT_LEVERS_OWN:
            t.assertTrue(ok(levers[k]), "its own %s was refused: %r" % (k, levers[k]))
        # the red team's finding first, then every other lever
        first = sorted(k for k in levers if k.startswith("prlimit_set"))
        refused(t, levers, first + [k for k in levers if k not in INIT_LEVERS_OWN and k not in first], "on the init: ")
        for k in sorted(INIT_LEVERS_EPERM):
            t.assertEqual(levers[k], "EPERM", "%s: the filter must refuse it" % k)
        # what the kernel would not report shows in /proc/1: limits, nice, policy, CPUs
        t.assertEqual(obs["before"], obs["after"], "the init changed")
        t.assertNotIn("error", obs["before"]["limits"][:6])
        # and the init still reported the run exactly
        if exit_code is not None:
            t.assertEqual((res["status"], res["exit_code"]), ("exited", exit_code), res)
        else:
            t.assertEqual((res["status"], res["limit"]), ("limit", "cpu_time"), res)
            t.assertIn("cpu_time", res["limits_hit"])
    return check


def check_cpu_tree(t, res, obs, c):
    # stopped at the tree's limit (1 s), not at the sum of the processes'
    # RLIMIT_CPU: docs/cgroups.md states the overshoot (two 20 ms looks of
    # every CPU, a clock tick per process, the supervisor's wake-up)
    t.assertIsNone(obs, "the program finished: nothing stopped it")
    t.assertIn("cpu_time", res["limits_hit"])
    t.assertLessEqual(res["cpu_ms"], 1000 + 2 * 20 * (os.cpu_count() or 1) + 80 + 300, res)


def check_mem_tree(t, res, obs, c):
    # never more than --memory (256M) held to the end: the run stopped at the
    # limit (rlimit: the supervisor's look; a cgroup: the OOM killer ends the
    # hogs and the program reports the rest)
    t.assertIn("memory", res["limits_hit"], res["stderr"]["text"][-300:])
    if obs is not None:
        t.assertLessEqual(obs["held_mb"], 256, obs)
    else:
        t.assertEqual((res["status"], res["limit"]), ("limit", "memory"))


def _try_syscall_argv(c):
    from test_hardening import DENIED, try_binary
    return [try_binary()] + DENIED


def hostile(name):
    return os.path.join(HOSTILE, name)


# ---- text shown to people (#27): the result keeps the program's text exact;
# ---- what nsbox renders from it for a person shows the unsafe set escaped

TEXT_SPOOF = "\x1b[2K\r\u009b2K\u0085\u202eliaf\u2066x\u2069\u200f\u2028\x08\x7f"
TEXT_BIDI = {0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}


def text_unsafe_at(text):
    """Index of the first character docs/security.md ("Text shown to people")
    says may not reach a person raw (a CR before LF is allowed), or -1."""
    for i, ch in enumerate(text):
        cp = ord(ch)
        if ch == "\r" and text[i + 1:i + 2] == "\n":
            continue
        if ((cp < 0x20 and ch not in "\t\n") or 0x7F <= cp <= 0x9F or cp in TEXT_BIDI or
                cp in (0x2028, 0x2029, 0xFFFE, 0xFFFF)):
            return i
    return -1


def check_text_spoof(t, res, obs, c):
    t.assertEqual(res["exit_code"], 1)
    t.assertTrue(res["stdout"]["text"].startswith(TEXT_SPOOF), res["stdout"]["text"][:200])
    t.assertTrue(res["stderr"]["text"].startswith(TEXT_SPOOF), res["stderr"]["text"][:200])
    with tempfile.TemporaryDirectory(prefix="nsbox-spoof-") as d:
        src, page = os.path.join(d, "r.jsonl"), os.path.join(d, "r.html")
        with open(src, "w") as f:
            f.write(json.dumps(dict(res, id="spoof" + TEXT_SPOOF)) + "\n")
        p = subprocess.run([NSBOX, "report", "--html", page, src], capture_output=True, timeout=60)
        t.assertEqual(p.returncode, 0, p.stderr)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        for what, text in (("report text", p.stdout.decode()), ("report --html", html)):
            i = text_unsafe_at(text)
            t.assertEqual(i, -1, "%s shows U+%04X raw: %r" % (what, ord(text[i]) if i >= 0 else 0, text[i - 40:i + 40]))
        t.assertIn("\\u202eliaf", html)
        t.assertIn("spoof\\x1b[2K\\r\\u009b2K", p.stdout.decode())


def check_stdin_levers(t, res, obs, c):
    """--stdin the host file: the program reads its bytes (a sealed copy),
    never the file itself; run_entry then checks its contents and mode."""
    fd0 = obs["fd0"]
    with open(c.hostfile, "rb") as f:
        t.assertEqual(f.read(), c.hostfile_data, "the host file was written through /proc/self/fd/0")
    t.assertEqual(os.stat(c.hostfile).st_mode & 0o7777, 0o666, "the host file's mode changed")
    t.assertNotIn(c.hostfile, fd0["link"], "/proc/self/fd/0 shows the host path")
    t.assertNotEqual(fd0["ino"], os.stat(c.hostfile).st_ino, "fd 0 is the caller's file")
    t.assertEqual((fd0["kind"], fd0["size"]), ("regular", len(c.hostfile_data)))
    t.assertEqual(obs["head"], "ok:" + c.hostfile_data.decode())
    for where in ("fd", "proc"):
        t.assertFalse(ok(obs[where]["reopen_write"]), where)
    t.assertNotEqual(os.stat(c.hostfile).st_mtime, 1000000000, "the host file's times changed")
    if hasattr(os, "listxattr"):
        try:
            t.assertNotIn("user.nsbox_lever", os.listxattr(c.hostfile))
        except OSError:
            pass
    # no lock, no lease left on the host file
    with open(c.hostfile, "rb") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(os.open(c.hostfile, os.O_WRONLY | os.O_NONBLOCK))


def check_ancestor_fds(t, res, obs, c):
    """Nothing of any process above the program: no fd link read, none
    reopened, none taken with pidfd_getfd."""
    t.assertTrue(obs["ancestors"], obs)
    for a in obs["ancestors"]:
        t.assertEqual((a["links"], a["reopened"], a["taken"]), ({}, [], {}), a)


def check_ucount_share(t, res, obs, c):
    """Its share of each per-user budget (ns/ucount.h): a quarter of the
    caller's (this process's) limit, at most the cap; and its own level is
    the one that says no (it gets exactly its limit: no level it shares
    with the caller or another sandbox is nearer)."""
    import resource
    caps = {"SIGPENDING": 1024, "MSGQUEUE": 800 << 10, "MEMLOCK": 8 << 20}
    for name, cap in caps.items():
        soft = resource.getrlimit(getattr(resource, "RLIMIT_" + name))[0]
        share = cap if soft == resource.RLIM_INFINITY else min(cap, soft // 4)
        t.assertLessEqual(obs["rlimits"][name], share, name)
    t.assertEqual(obs["sigqueue"], obs["rlimits"]["SIGPENDING"])
    t.assertEqual(obs["timers"], obs["rlimits"]["SIGPENDING"])
    if obs["shm_lock_segments"] != "EPERM":   # the rlimit backend's seccomp refuses shmget
        t.assertEqual(obs["shm_lock_segments"] * (64 << 10), obs["rlimits"]["MEMLOCK"])
    for k in ("inotify_instances", "inotify_watches", "fanotify_groups"):
        t.assertFalse(isinstance(obs[k], int) and obs[k] > 0, "%s: took %r" % (k, obs[k]))
    refused(t, obs, ["userns"])
    t.assertFalse(isinstance(obs["mq_queues"], int) and obs["mq_queues"] * 4096 > obs["rlimits"]["MSGQUEUE"])
    # host-wide budgets no share can divide: Linux AIO (fs.aio-max-nr) refused like
    # io_uring; huge pages (the host's pool, charged to no memory limit) by flag
    t.assertEqual(obs["aio"], "ENOSYS", "io_setup: fs.aio-max-nr is one budget for the whole host")
    t.assertEqual(obs["hugetlb"], {"memfd": "EPERM", "mmap": "EPERM", "shm": "EPERM"})

CATALOGUE = [
    # ---- filesystem
    Entry("fs_read_secrets", "filesystem", "reads a host secret by path, via /proc/*/root and ../ climbs; "
          "lists /root, /home, /etc, ...; greps every readable file for it",
          "`mount_ns`, `rootfs` (pivot_root onto a tmpfs holding only the plan), `pid_ns`",
          hostile("fs_read_secrets.py"),
          lambda c: [c.token, c.secret, "/etc/shadow", "/etc/passwd", "/root/.ssh/id_rsa"],
          check=check_read_secrets),
    Entry("fs_write_outside", "filesystem", "appends to, truncates, chmods, unlinks, renames a world-writable "
          "host file outside the workspace; creates files in every directory",
          "`rootfs` (read-only), `landlock`", hostile("fs_write_outside.py"),
          lambda c: [c.marker, c.hostfile], check=check_write_outside),
    Entry("fs_links", "filesystem", "writes through symlinks to the host file and /proc/1/root; hard links "
          "across mounts; renames the workspace; makes a setuid file in the workspace",
          "`rootfs`, `mount_ns`, `seccomp` (setuid/setgid modes)", hostile("fs_links.py"),
          lambda c: [c.hostfile], check=check_links),
    Entry("fs_proc", "filesystem", "reads the init's environ, mem, maps, fds and root; the kernel's global "
          "/proc files; writes oom_score_adj, sysrq-trigger",
          "`pid_ns`, proc `subset=pid`, read-only root, init not dumpable", hostile("fs_proc.py"),
          check=check_proc),
    Entry("fs_devices", "filesystem", "mknod of char/block devices and of whiteouts (char 0:0, also through "
          "`renameat2(RENAME_WHITEOUT)`); opens /dev/sda, mem, kmsg, tty, console, fuse, tun",
          "`caps` (no CAP_MKNOD), `seccomp` (whiteouts), minimal `/dev`, `user_ns`", hostile("fs_devices.py"),
          check=check_devices),
    # ---- processes
    Entry("proc_forkbomb", "processes", "forks until refused", "`pids` (cgroup pids.max or RLIMIT_NPROC)",
          os.path.join(PY, "forkbomb.py"), opts=("--pids", "16", "--wall-time", "20s"), check=check_forkbomb),
    Entry("proc_threadbomb", "processes", "starts threads until refused, then exits with them waking at "
          "shutdown", "`pids`; the python profile's libgcc_s (pthread_exit)", hostile("proc_threadbomb.py"),
          opts=("--pids", "32", "--wall-time", "20s"), check=check_threadbomb),
    Entry("proc_daemon", "processes", "a double-forked setsid daemon outliving the program",
          "`pid_ns` (the init's exit kills the namespace)", os.path.join(PY, "daemon.py"), lambda c: [c.marker]),
    Entry("proc_outlive", "processes", "signal-ignoring setsid grandchildren, then sleeps past the wall limit",
          "`wall_time`, `pid_ns`, cgroup kill", hostile("proc_outlive.py"), lambda c: [c.marker],
          opts=("--wall-time", "2s"), status=("limit",), limit="wall_time"),
    Entry("proc_kill", "processes", "kill(-1); signals, killpg, pidfd_open and ptrace aimed at host pids: a "
          "sentinel, the test, nsbox itself", "`pid_ns`, `seccomp` (ptrace), `landlock` (signal scope)",
          hostile("proc_kill.py"), lambda c: [str(c.sentinel.pid), str(os.getpid())], check=check_kill,
          append_supervisor_pid=True),
    # ---- memory and disk
    Entry("mem_bomb", "memory and disk", "allocates and touches memory until stopped",
          "`memory` (cgroup or RLIMIT_AS)", os.path.join(PY, "memory.py"), opts=("--memory", "96M", "--wall-time", "20s"),
          status=("limit", "exited"), check=check_memory),
    Entry("disk_fill_workspace", "memory and disk", "writes one file in the host workspace without end",
          "`file_size` (RLIMIT_FSIZE)", os.path.join(PY, "bigwrite.py"), lambda c: ["/workspace/big"],
          opts=("--file-size", "8M"), check=check_fill_workspace),
    Entry("disk_fill_tmp", "memory and disk", "fills /tmp", "`tmp_size` (size-limited tmpfs)",
          os.path.join(PY, "bigwrite.py"), lambda c: ["/tmp/fill"], opts=("--file-size", "64M", "--tmp-size", "4M"),
          check=check_fill_tmp),
    # ---- output
    Entry("out_flood", "output", "writes to stdout without end", "`output` (bounded capture, stopped at 4x)",
          os.path.join(PY, "flood.py"), opts=("--output-limit", "64K", "--wall-time", "20s"), status=("limit",),
          limit="output", check=check_flood),
    Entry("out_binary", "output", "every byte value, invalid UTF-8, NULs and terminal escapes on both streams",
          "capture: U+FFFD replacement, exact byte counts, valid JSON", hostile("out_binary.py"),
          check=check_binary),
    # ---- network
    Entry("net_none", "network", "TCP (v4, v6) and UDP to the host's loopback and another host address, DNS, "
          "an abstract unix socket the test listens on, netlink, packet and raw sockets",
          "`net` (empty network namespace), `seccomp` (socket families), `landlock` (abstract unix scope)",
          hostile("net_reach.py"), lambda c: c.net_args(), check=check_net(False)),
    Entry("net_loopback", "network", "the same with `--network loopback`",
          "`net` (own loopback only), `seccomp`, `landlock`", hostile("net_reach.py"), lambda c: c.net_args(),
          opts=("--network", "loopback"), check=check_net(True)),
    # ---- privilege
    Entry("priv_escalate", "privilege", "reads its capabilities; setuid/setgid/setgroups to root; unshare of "
          "every namespace kind; ptrace of the init; TIOCSTI on its streams; chroot; the host's SysV shared "
          "memory, host name and cgroup tree",
          "`user_ns`, `caps`, `no_new_privs`, `seccomp`, `session`, `ipc_ns`, `uts_ns`, `cgroup_ns`",
          hostile("priv_escalate.py"), lambda c: [str(c.shm_key)], check=check_priv),
    Entry("priv_syscalls", "privilege", "the raw doors of test_hardening.Doors: ptrace, mount family, "
          "namespaces, keyctl, bpf, perf, io_uring, kexec, modules, TIOCSTI, socket families, setuid modes",
          "`seccomp` (see docs/seccomp.md)", None, check=check_doors, kind="try_syscall"),
    # ---- time
    Entry("time_clock", "time", "clock_settime, settimeofday, adjtimex", "`seccomp`, `caps` (no CAP_SYS_TIME)",
          hostile("time_clock.py"), check=check_clock),
    Entry("time_sleep", "time", "sleeps past the wall-time limit", "`wall_time` (supervisor timerfd)",
          os.path.join(PY, "sleeper.py"), lambda c: ["3600"], opts=("--wall-time", "1s"), status=("limit",),
          limit="wall_time", check=check_sleep),
    # ---- text shown to people (#27)
    Entry("text_spoof", "text shown to people", "ESC[2K, CR, U+009B (CSI), U+0085 (NEL), U+202E, U+2066 and a "
          "fake pass line and summary on both streams and as its exit message",
          "capture keeps it exact; `util/textsafe.h` shows it escaped in what nsbox renders (report text and "
          "--html here; test, judge, JUnit: test_text_safety.py)", hostile("text_spoof.py"), check=check_text_spoof),
    # ---- caller's descriptors (issue #27; the --stdin - and refused cases: test_caller_fds)
    Entry("stdin_levers", "caller's descriptors", "given the host file as `--stdin FILE`: fchmod, futimens, "
          "fsetxattr, fchown of fd 0 and of /proc/self/fd/0, their reopen for writing, O_NONBLOCK/O_APPEND, "
          "flock, a lease, readlink of the host path",
          "`stdin` (a sealed, read-only memfd copy: config/stdin_plan.h)", hostile("stdin_levers.py"),
          stdin=lambda c: c.hostfile, check=check_stdin_levers),
    # ---- the init (issue #27): PID 1 reaps the program and reports its status
    Entry("init_levers", "the init", "every call that acts on another process of its uid, aimed at PID 1: "
          "prlimit (set and read, high pid bits), setpriority by pid, group 1 and whole user, sched_* and "
          "ioprio by pid/group/user, migrate/move_pages, kcmp, get_robust_list, pidfd_open, process_madvise "
          "and pidfd_getfd through a /proc/1 fd, ptrace, signals (kill, tgkill, sigqueue, pidfd_send_signal, "
          "SIGIO by F_SETOWN to pid 1 and group 1), its CPU clock (clock_gettime, clock_getres, clock_nanosleep, "
          "timer_create), writes to 25 /proc/1 files, /proc/1/fd opens, pipes (stdout too) grown past 64 KiB; "
          "then exits 7",
          "`seccomp` (no syscall may name the init: pid 1, group 1, any user), `landlock` (signal scope), "
          "init not dumpable, read-only /proc, `pid_ns`", hostile("init_levers.py"), lambda c: ["exit"],
          opts=("--wall-time", "20s"), check=check_init_levers(7)),
    Entry("init_levers_limit", "the init", "the same levers (the init's RLIMIT_NOFILE, AS, CPU, FSIZE, NPROC, "
          "STACK lowered first), then spins until the CPU-time limit: the init must still report it",
          "`seccomp`, `cpu_time`", hostile("init_levers.py"), lambda c: ["spin"],
          opts=("--cpu-time", "1s", "--wall-time", "20s"), status=("limit",), limit="cpu_time",
          check=check_init_levers(None)),
    # ---- shared kernel budgets (issue #27): counted per user up the user-namespace chain
    Entry("ucount_budgets", "shared kernel budgets", "counts how many signals it can queue (sigqueue, "
          "timer_create), SHM_LOCK'd segments, message queues, inotify instances and watches, fanotify groups "
          "and user namespaces it can take before the kernel refuses; tries io_setup (fs.aio-max-nr) and huge "
          "pages (MFD_HUGETLB, MAP_HUGETLB, SHM_HUGETLB)",
          "`rlimit` (its share of `RLIMIT_SIGPENDING`, `_MSGQUEUE`, `_MEMLOCK`), its user namespace's "
          "`max_*` at 0, `seccomp` (also Linux AIO and huge pages), `landlock` (mq_open)",
          hostile("ucount_probe.py"), lambda c: ["probe"], check=check_ucount_share),
    # ---- CPU of a tree (issue #27): --cpu-time is the whole tree's, RLIMIT_CPU each process's backstop
    Entry("cpu_tree_children", "CPU of a tree", "six children burning 0.8 s each side by side, each under "
          "RLIMIT_CPU alone", "`cpu_time` (the tree's sum: cgroup clock, or the supervisor's looks under rlimit)",
          hostile("cpu_tree.py"), lambda c: ["parallel", "4.8", "0.8"],
          opts=("--cpu-time", "1s", "--wall-time", "30s", "--pids", "32"), status=("limit",), limit="cpu_time",
          check=check_cpu_tree),
    Entry("cpu_tree_hidden", "CPU of a tree", "a third each: children side by side, a chain of children shorter "
          "than a look, each waited for, and children reaped unwaited (SIGCHLD ignored: their time reaches no "
          "parent's counters)", "`cpu_time` (the looks count each process once, the unwaited ones too)",
          hostile("cpu_tree.py"), lambda c: ["mixed", "1.5"],
          opts=("--cpu-time", "1s", "--wall-time", "30s", "--pids", "32"), status=("limit",), limit="cpu_time",
          check=check_cpu_tree),
    # ---- the caller's descriptions above the program (issue #27, third review)
    Entry("ancestor_fds", "caller's descriptors", "for each process above it up to nsbox (the init; reduced: "
          "nsbox): lists and reads its /proc/<pid>/fd links, reopens them, pidfd_getfd of fds 0-15",
          "init not dumpable, `pid_ns`, the init's first step closes the caller's descriptions "
          "(supervisor/child.c init_drop_caller_fds)", hostile("ancestor_fds.py"), lambda c: ["0"],
          append_supervisor_pid=True, check=lambda t, res, obs, c: check_ancestor_fds(t, res, obs, c)),
    # ---- memory of a tree (issue #27 class 4 review): the rlimit backend's look sees the whole tree
    Entry("mem_tree_wide", "memory of a tree", "950 sleeping children (a children file longer than a page), then "
          "4 children touching 200 MB each under --memory 256M", "`memory` (the look reads every children file "
          "whole; the tree's PSS sum)", hostile("mem_tree.py"), lambda c: ["hide", "950", "4", "200"],
          opts=("--memory", "256M", "--pids", "1024", "--wall-time", "30s"), status=("limit", "exited"),
          check=check_mem_tree),
    Entry("mem_tree_nodump", "memory of a tree", "4 children that make themselves not dumpable (smaps_rollup "
          "refused) touching 200 MB each under --memory 256M", "`memory` (statm's RSS stands in for the PSS)",
          hostile("mem_tree.py"), lambda c: ["nodump", "0", "4", "200"],
          opts=("--memory", "256M", "--pids", "64", "--wall-time", "30s"), status=("limit", "exited"),
          check=check_mem_tree),
]


def argv_for(entry, c, nsbox):
    """The nsbox command line of one entry (without the supervisor pid)."""
    common = ["--json", "--workspace", c.ws, *entry.opts, *(["--stdin", entry.stdin(c)] if entry.stdin else [])]
    if entry.kind == "try_syscall":
        return [nsbox, "run", *common, "--", *_try_syscall_argv(c)]
    return [nsbox, "python", *common, "--ro-bind", HOSTILE + ":/hostile", entry.program, *entry.args(c)]


def setid_or_device_files(root):
    """Paths under @root that are setuid, setgid or device nodes."""
    bad = []
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if st.st_mode & (stat.S_ISUID | stat.S_ISGID) and not stat.S_ISDIR(st.st_mode):
                bad.append(p)
            if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                bad.append(p)
    return bad


# ---- the warm column (issue #14): every python entry also runs as a job of
# ---- `nsbox batch --warm` (test_hostile.HostileWarm), with the same outcome.

def warm_start(entry):
    """How an entry must start under --warm: "warm", or the reason it must
    run cold for (docs/warm-start.md); None: not a python job."""
    if entry.kind != "python":
        return None
    if "--network" in entry.opts and entry.opts[entry.opts.index("--network") + 1] == "loopback":
        return "network loopback"
    return "warm"


def warm_argv_for(entry, c, nsbox):
    """The `nsbox batch --warm` command line of one python entry; the job
    itself goes to its stdin (warm_job)."""
    return [nsbox, "batch", "--warm", "-j", "1", "--workspace", c.ws, *entry.opts,
            *(["--stdin", entry.stdin(c)] if entry.stdin else []), "--ro-bind", HOSTILE + ":/hostile", "-"]


def warm_job(entry, c, supervisor_pid):
    """The batch job of a python entry: the program's text as its code. A
    batch job has no arguments: a first line reads them from stdin into
    sys.argv (not written in the code: fs_read_secrets greps every file it
    can read, /program/main.py included, for the token it is given)."""
    args = entry.args(c) + ([str(supervisor_pid)] if entry.append_supervisor_pid else [])
    with open(entry.program, encoding="utf-8") as f:
        if entry.stdin:   # its stdin is the batch's --stdin FILE; no arguments
            return {"id": entry.name, "kind": "python", "code": f.read()}
        code = "import sys; sys.argv[1:] = __import__('json').loads(sys.stdin.readline())\n" + f.read()
    return {"id": entry.name, "kind": "python", "code": code, "stdin": json.dumps(args) + "\n"}


def warm_check(entry):
    """The entry's check for a warm result: the same, but the network is the
    shared empty one (`net: shared-empty`, asserted by HostileWarm)."""
    if entry.check is None:
        return None

    def check(t, res, obs, c):
        if res.get("start") == "warm":
            t.assertEqual(res["protections"]["net"], "shared-empty")
            res = dict(res, protections=dict(res["protections"], net="empty-netns"))
        entry.check(t, res, obs, c)
    return check
