"""tests/vm/test_vm.py — nsbox on a real pure cgroup v2 host with systemd:
Debian 12's 6.1 kernel under qemu (TCG), this machine's root filesystem shared
read-only, systemd as PID 1 (vmboot.py). tests/vm/guest.sh runs the same checks
as root (from a service, sharing its cgroup with the shell) and as a user in a
logind session (session-N.scope), with no wrapper; this file asserts on what
they observed. Run by meson's `vm` suite (not under ASan: the binary is the
plain build's)."""
import json
import os
import re
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmboot  # noqa: E402

NSBOX = os.environ["NSBOX"]
SOURCE = os.environ["NSBOX_SOURCE"]
BUILD = os.environ["NSBOX_BUILD"]
DEADLINE_S = int(os.environ.get("NSBOX_VM_DEADLINE", "900"))


def read(path):
    with open(path) as f:
        return f.read()


class VM(unittest.TestCase):
    out = None

    @classmethod
    def setUpClass(cls):
        if not shutil.which("qemu-system-x86_64"):
            if os.environ.get("NSBOX_TESTS_MUST_RUN") == "1":
                raise RuntimeError("qemu-system-x86_64 missing (scripts/deps installs qemu-system-x86)")
            raise unittest.SkipTest("qemu-system-x86_64 missing")
        console = os.path.join(BUILD, "meson-logs", "vm-console.log")
        cls.out, cls.seconds = vmboot.boot(SOURCE, BUILD, {"nsbox": NSBOX}, DEADLINE_S, console)
        print("vm: booted, ran the guest side and powered off in %.1f s (console: %s)" % (cls.seconds, console),
              file=sys.stderr)
        for name in ("t_start", "t_root", "t_user"):
            if os.path.exists(os.path.join(cls.out, name)):
                print("vm: %s %s" % (name, read(os.path.join(cls.out, name)).strip()), file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        if cls.out:
            shutil.rmtree(cls.out, ignore_errors=True)

    def path(self, *p):
        return os.path.join(self.out, *p)

    def json(self, who, name):
        text = read(self.path(who, name))
        try:
            return json.loads(text)
        except ValueError:
            self.fail("%s/%s is no JSON: %r; stderr: %r" % (who, name, text[-500:],
                                                           read(self.path(who, name.replace(".json", ".err")))))

    def show(self, who, name, obj):
        print("vm %s %s: %s" % (who, name, json.dumps(obj)), file=sys.stderr)

    def test_00_guest_finished(self):
        self.assertTrue(os.path.exists(self.path("done")), read(self.path("guest.log")))
        log = read(self.path("guest.log"))
        self.assertIn("kernel 6.1.", log)
        self.assertIn("cgroup fs: cgroup2fs", log)

    def test_01_identities(self):
        # root straight from a service (shares its cgroup with the shell); the
        # user in a logind session scope: no wrapper either way
        self.assertEqual(read(self.path("root", "cgroup.txt")).strip(), "0::/system.slice/nsbox-vm-test.service")
        self.assertRegex(read(self.path("user", "cgroup.txt")).strip(),
                         r"^0::/user\.slice/user-\d+\.slice/session-\w+\.scope$")
        self.assertIn("XDG_RUNTIME_DIR=/run/user/", read(self.path("user", "env.txt")))

    def check_doctor(self, who):
        rep = self.json(who, "doctor.json")
        by = {c["name"]: c for c in rep["checks"]}
        self.show(who, "doctor cgroup", by["cgroup"])
        self.show(who, "doctor landlock", by["landlock"])
        self.assertEqual(read(self.path(who, "doctor.rc")).strip(), "0", rep)
        self.assertEqual(by["cgroup"]["status"], "ok", by["cgroup"])
        self.assertEqual(by["cgroup"]["origin"], "systemd-scope", by["cgroup"])
        self.assertIn("asked the systemd %s manager" % ("system" if who == "root" else "user"),
                      by["cgroup"]["detail"])
        abi = int(read(self.path(who, "landlock_abi.txt")))
        self.assertGreaterEqual(abi, 1)
        self.assertEqual(by["landlock"]["status"], "ok", by["landlock"])
        self.assertTrue(by["landlock"]["detail"].startswith("Landlock ABI %d" % abi), (abi, by["landlock"]))
        text = read(self.path(who, "doctor.txt"))
        print("vm %s doctor (text):\n%s" % (who, text), file=sys.stderr)

    def test_10_doctor_root(self):
        self.check_doctor("root")

    def test_11_doctor_user(self):
        self.check_doctor("user")

    def check_memory(self, who, name="mem.json"):
        r = self.json(who, name)
        self.show(who, name, {k: r[k] for k in ("status", "limit", "limits_hit", "peak_memory_bytes")}
                  | {"protections.memory": r["protections"]["memory"]})
        self.assertEqual((r["status"], r["limit"]), ("limit", "memory"), r)
        self.assertEqual(r["protections"]["memory"], "cgroup2", r)
        self.assertIn("memory", r["limits_hit"])
        self.assertLessEqual(r["peak_memory_bytes"], 64 << 20)
        self.assertGreater(r["peak_memory_bytes"], 32 << 20)

    def test_20_memory_bomb_root(self):
        self.check_memory("root")

    def test_21_memory_bomb_user(self):
        self.check_memory("user")

    def check_fork(self, who):
        r = self.json(who, "fork.json")
        self.show(who, "fork.json", {k: r[k] for k in ("status", "limit", "limits_hit", "exit_code")}
                  | {"protections.pids": r["protections"]["pids"], "stdout": r["stdout"]["text"]})
        self.assertIn("pids", r["limits_hit"], r)
        self.assertEqual(r["protections"]["pids"], "cgroup2", r)
        m = re.search(r"refused after (\d+) errno (\d+)", r["stdout"]["text"])
        self.assertIsNotNone(m, r)
        self.assertEqual(int(m.group(1)), 15)     # --pids 16: the python process and 15 children
        self.assertEqual(int(m.group(2)), 11)     # EAGAIN

    def test_30_fork_bomb_root(self):
        self.check_fork("root")

    def test_31_fork_bomb_user(self):
        self.check_fork("user")

    def check_cpu(self, who):
        r = self.json(who, "cpu.json")
        self.show(who, "cpu.json", {k: r[k] for k in ("status", "exit_code", "cpu_ms", "wall_ms")})
        self.assertEqual((r["status"], r["exit_code"]), ("exited", 0), r)
        self.assertEqual(r["protections"]["memory"], "cgroup2", r)
        # two processes, 1.5 s of CPU each: the cgroup's cpu.stat holds the tree
        self.assertGreaterEqual(r["cpu_ms"], 3000, r)

    def test_40_cpu_root(self):
        self.check_cpu("root")

    def test_41_cpu_user(self):
        self.check_cpu("user")

    def check_batch(self, who):
        self.assertEqual(read(self.path(who, "batch.rc")).strip(), "0", read(self.path(who, "batch.err")))
        lines = [json.loads(x) for x in read(self.path(who, "batch.jsonl")).splitlines() if x.strip()]
        self.assertEqual(len(lines), 200)
        for j in lines:
            r = j.get("result", j)
            self.assertEqual(r["status"], "exited", j)
            self.assertEqual(r["protections"]["memory"], "cgroup2", j)
        left = read(self.path(who, "left.txt")).split()
        self.assertEqual(left, [], "cgroups left behind: %r" % left)
        # one scope for the whole batch: its name carries the batch's pid
        pid = read(self.path(who, "batch.pid")).strip()
        scopes = read(self.path("scopes.txt")).split()
        self.assertEqual(len([s for s in scopes if s.startswith("nsbox-scope-%s-" % pid)]), 1, scopes)

    def test_50_batch_200_root(self):
        self.check_batch("root")

    def test_51_batch_200_user(self):
        self.check_batch("user")

    def check_warm(self, who):
        """Warm jobs on pure cgroup v2: each in its own cgroup, which its
        init was cloned into by the zygote (check_warm_born) or, failing
        that, joined through the cgroup.procs fd its supervisor opened; the
        memory and pids limits hold; nothing is left (the generation's
        cgroup, its leaf, the jobs')."""
        self.assertEqual(read(self.path(who, "warm.rc")).strip(), "0", read(self.path(who, "warm.err")))
        lines = {j["id"]: j for j in (json.loads(x) for x in read(self.path(who, "warm.jsonl")).splitlines()
                                      if x.strip())}
        self.assertEqual(len(lines), 42, sorted(map(str, lines)))
        for i in range(40):
            r = lines[i]
            self.assertEqual((r["status"], r["start"]), ("exited", "warm"), r)
            self.assertEqual(r["stdout"]["text"], "2 %d\n" % i, r)
            self.assertEqual(r["protections"]["memory"], "cgroup2", r)
            self.assertEqual(r["protections"]["net"], "shared-empty", r)
        mem, fork = lines["mem"], lines["fork"]
        self.show(who, "warm.jsonl", {"mem": [mem["status"], mem["limit"], mem["start"]],
                                      "fork": [fork["status"], fork["stdout"]["text"], fork["limits_hit"]]})
        self.assertEqual((mem["status"], mem["limit"], mem["start"]), ("limit", "memory", "warm"), mem)
        self.assertEqual(fork["start"], "warm", fork)
        self.assertIn("pids", fork["limits_hit"], fork)
        self.assertLessEqual(int(fork["stdout"]["text"].split()[0]), 15, fork)
        left = read(self.path(who, "warm_left.txt")).split()
        self.assertEqual(left, [], "cgroups left behind: %r" % left)
        doc = self.json(who, "warm_doctor.json")
        # this 6.1 kernel has Landlock ABI 3: doctor says warm starts are not available, and why
        self.assertFalse(doc["warm"]["available"], doc["warm"])
        self.assertIn("Landlock ABI", doc["warm"]["reason"], doc["warm"])

    def test_55_warm_root(self):
        self.check_warm("root")

    def test_56_warm_user(self):
        self.check_warm("user")

    def check_warm_born(self, who):
        """#28: the zygote clones a warm job's init straight into the job's
        cgroup (clone3 with CLONE_INTO_CGROUP, allowed from inside its
        generation's cgroup namespace), so no job writes cgroup.procs; a
        refused clone would be retried without it (a second clone3 of the
        init). The job still sees its own cgroup namespace's root; the limits
        of the warm jobs above (check_warm: memory, pids) hold the same way."""
        trace = read(self.path(who, "warm_strace.txt"))
        self.assertNotIn("strace missing", trace, "the vm suite needs strace on the host (scripts/deps)")
        clones = [c for c in trace.splitlines() if "clone3(" in c and "CLONE_NEWUSER" in c]
        inits = [c for c in clones if "CLONE_NEWNET" not in c]     # the zygote's sandbox has its own net ns
        self.show(who, "warm_strace.txt", ["CLONE_INTO_CGROUP" in c for c in inits])
        self.assertEqual(len(inits), 1, clones)
        self.assertIn("CLONE_INTO_CGROUP", inits[0])
        lines = read(self.path(who, "warm_probe.jsonl")).splitlines()
        self.assertEqual(len(lines), 1, read(self.path(who, "warm_probe.err")))
        r = json.loads(lines[0])
        # its own cgroup namespace's root; no cgroupfs; mount(cgroup2) EPERM
        self.assertEqual((r["status"], r["start"], r["stdout"]["text"]), ("exited", "warm", "0::/\nFalse\n-1 1\n"), r)
        self.assertEqual((r["protections"]["memory"], r["protections"]["pids"], r["protections"]["cgroup_ns"]),
                         ("cgroup2", "cgroup2", "enforced"), r)

    def check_warm_fallback(self, who):
        """#28's fail-safe: the kernel refuses the zygote's clone into the
        job's cgroup (a test hook sends a directory that is no cgroup:
        EBADF); the zygote clones as before, the init joins by the
        cgroup.procs fd its supervisor opened and makes its own cgroup
        namespace: the same cgroup, limits and view as when born there."""
        trace = read(self.path(who, "warm_fallback_strace.txt"))
        self.assertNotIn("strace missing", trace, "the vm suite needs strace on the host (scripts/deps)")
        inits = [c for c in trace.splitlines() if "clone3(" in c and "CLONE_NEWUSER" in c and "CLONE_NEWNET" not in c]
        self.show(who, "warm_fallback_strace.txt", [c.split("= ")[-1] for c in inits])
        self.assertEqual(len(inits), 2, trace)
        self.assertIn("CLONE_INTO_CGROUP", inits[0])
        self.assertIn("= -1 EBADF", inits[0])
        self.assertNotIn("CLONE_INTO_CGROUP", inits[1])
        lines = read(self.path(who, "warm_fallback_probe.jsonl")).splitlines()
        self.assertEqual(len(lines), 1, read(self.path(who, "warm_fallback_probe.err")))
        r = json.loads(lines[0])
        self.assertEqual((r["status"], r["start"], r["stdout"]["text"]), ("exited", "warm", "0::/\nFalse\n-1 1\n"), r)
        self.assertEqual((r["protections"]["memory"], r["protections"]["pids"]), ("cgroup2", "cgroup2"), r)
        jobs = {j["id"]: j for j in (json.loads(x) for x in read(self.path(who, "warm_fallback.jsonl")).splitlines()
                                     if x.strip())}
        self.assertEqual(sorted(jobs), ["fork", "mem"], read(self.path(who, "warm_fallback.err")))
        mem, fork = jobs["mem"], jobs["fork"]
        self.assertEqual((mem["status"], mem["limit"], mem["start"]), ("limit", "memory", "warm"), mem)
        self.assertEqual(fork["start"], "warm", fork)
        self.assertIn("pids", fork["limits_hit"], fork)

    def test_57_warm_born_in_cgroup_root(self):
        self.check_warm_born("root")

    def test_58_warm_born_in_cgroup_user(self):
        self.check_warm_born("user")

    def test_59_warm_cgroup_fallback_root(self):
        self.check_warm_fallback("root")

    def test_59_warm_cgroup_fallback_user(self):
        self.check_warm_fallback("user")

    def check_refused(self, who, name, why):
        rc = read(self.path(who, name.replace(".json", ".rc"))).strip()
        r = self.json(who, name)
        self.show(who, name, {"rc": rc, "status": r["status"], "error": r["error"]})
        self.assertEqual(rc, "125", r)
        self.assertEqual((r["status"], r["error"]["stage"]), ("error", "cgroup"), r)
        self.assertIn(why, r["error"]["message"], r)

    def test_60_cgroup_parent_root(self):
        self.check_memory("root", "parent_mem.json")
        self.assertEqual(read(self.path("root", "parent_left.txt")).split(), [])
        self.check_refused("root", "parent_bare.json", "memory and pids are not both in its cgroup.controllers")
        self.check_refused("root", "parent_refused.json", "no such cgroup")

    def test_61_cgroup_parent_user_refused(self):
        self.check_refused("user", "parent_refused.json", "not writable by this user")


if __name__ == "__main__":
    unittest.main()
