"""tests/vm/test_apparmor_vm.py — nsbox on a real AppArmor kernel: Debian 13's
kernel (6.12: AppArmor on, `userns` mediated) under qemu (TCG) with this
machine's root filesystem shared read-only (vmboot.py), and AppArmor 4's
parser and aa-exec from Debian 13's apparmor package (downloaded from
deb.debian.org with apt state kept in the build dir, unpacked, never
installed). tests/vm/guest_apparmor.sh loads the profile nsbox installs and
an enforced copy of the unprivileged_userns profile (Ubuntu's confinement of
an unprivileged process that made a user namespace), and runs nsbox under
each; this file asserts on what it observed, and writes all of it to
NSBOX_VM_REPORT (default: BUILD/meson-logs/vm-apparmor.txt).

Meson test `vm-apparmor`, suite `vm` (not the default run: it downloads
about 110 MB once, into BUILD/vm-cache)."""
import json
import os
import shutil
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmboot  # noqa: E402

NSBOX = os.environ["NSBOX"]
SOURCE = os.environ["NSBOX_SOURCE"]
BUILD = os.environ["NSBOX_BUILD"]
PROFILE = os.environ.get("NSBOX_APPARMOR_PROFILE", os.path.join(BUILD, "dist", "nsbox.apparmor"))
DEADLINE_S = int(os.environ.get("NSBOX_VM_DEADLINE", "900"))
REPORT = os.environ.get("NSBOX_VM_REPORT", os.path.join(BUILD, "meson-logs", "vm-apparmor.txt"))
SUITE = "trixie"
USERSPACE = ["apparmor", "libapparmor1", "libc6"]   # apparmor_parser, aa-exec and the libc they need


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return "(missing)"


# What the report shows, in order: (title, file in the results dir).
SHOWN = [
    ("kernel", "kernel.txt"),
    ("profile attachment (build's dist/nsbox.apparmor)", "profile_attach.txt"),
    ("apparmor_parser -r --warn=rule-not-enforced,... --Werror /etc/apparmor.d/nsbox: output", "load_nsbox.txt"),
    ("apparmor_parser -r --warn=rule-not-enforced,... --Werror /etc/apparmor.d/nsbox: exit", "load_nsbox.rc"),
    ("the compiled policy with and without the `userns` rule", "userns_compiled.txt"),
    ("confining profile (Debian 13's unprivileged_userns, complain flag removed)", "confine_profile.txt"),
    ("apparmor_parser -r --warn=rule-not-enforced unprivileged_userns: output", "load_confine.txt"),
    ("apparmor_parser -r --warn=rule-not-enforced unprivileged_userns: exit", "load_confine.rc"),
    ("nsbox_vm_no_userns (no userns rule) load", "load_no_userns.txt"),
    ("loaded profiles", "profiles.txt"),
    ("uid 65534: aa-exec -p nsbox_vm_no_userns -- unshare --user true", "no_userns.txt"),
    ("uid 65534: aa-exec -p unprivileged_userns -- cat /proc/self/attr/current", "confine_label.txt"),
    ("uid 65534: aa-exec -p unprivileged_userns -- unshare --user --map-root-user --mount true",
     "confine_unshare.txt"),
    ("uid 65534: aa-exec -p unprivileged_userns -- nsbox doctor (exit)", "confined_doctor.rc"),
    ("uid 65534: aa-exec -p unprivileged_userns -- nsbox doctor", "confined_doctor.txt"),
    ("uid 65534: aa-exec -p unprivileged_userns -- nsbox python --json -c 'print(\"ran\")' (exit)",
     "confined_strict.rc"),
    ("... its JSON result", "confined_strict.json"),
    ("... its stderr", "confined_strict.err"),
    ("uid 65534: aa-exec -p unprivileged_userns -- nsbox python --json --isolation reduced (exit)",
     "confined_reduced.rc"),
    ("uid 65534: nsbox under its own profile: the supervisor's /proc/PID/attr/current", "own_label.txt"),
    ("uid 65534: nsbox doctor under its own profile (exit)", "own_doctor.rc"),
    ("uid 65534: nsbox doctor under its own profile", "own_doctor.txt"),
    ("uid 65534: nsbox python --json (strict) under its own profile (exit)", "own_strict.rc"),
    ("... its JSON result", "own_strict.json"),
    ("... its stderr", "own_strict.err"),
    ("uid 65534: aa-exec -p unprivileged_userns -- nsbox batch --warm -j 1 (2 jobs) (exit)", "confined_warm.rc"),
    ("... its lines", "confined_warm.jsonl"),
    ("... its stderr", "confined_warm.err"),
    ("uid 65534: nsbox batch --warm -j 1 (2 jobs) under its own profile (exit)", "own_warm.rc"),
    ("... its lines", "own_warm.jsonl"),
    ("... its stderr", "own_warm.err"),
    ("kernel log (apparmor=)", "dmesg.txt"),
]


class AppArmorVM(unittest.TestCase):
    out = None

    @classmethod
    def setUpClass(cls):
        if not shutil.which("qemu-system-x86_64"):
            if os.environ.get("NSBOX_TESTS_MUST_RUN") == "1":
                raise RuntimeError("qemu-system-x86_64 missing (scripts/deps installs qemu-system-x86)")
            raise unittest.SkipTest("qemu-system-x86_64 missing")
        if not os.path.exists(PROFILE):
            raise unittest.SkipTest("%s missing (built with -Dapparmor=disabled)" % PROFILE)
        cache = vmboot.cache_dir(BUILD)
        archive = vmboot.Archive(cache, SUITE)
        aa = vmboot.unpack(cache, USERSPACE, "apparmor-" + SUITE, archive.opts)
        os.chmod(cache, 0o755)  # uid 65534 runs aa-exec from there in the guest
        console = os.path.join(BUILD, "meson-logs", "vm-apparmor-console.log")
        cls.out, cls.seconds = vmboot.boot(SOURCE, BUILD, {"nsbox": NSBOX, "guest": "guest_apparmor.sh",
                                                           "aa": aa, "profile": PROFILE},
                                           DEADLINE_S, console, archive)
        with open(REPORT, "w") as f:
            f.write("# nsbox vm-apparmor: %s's kernel and AppArmor userspace; the VM booted, ran the guest side "
                    "and powered off in %.0f s (qemu %s)\n" % (SUITE, cls.seconds, vmboot.accel()))
            for title, name in SHOWN:
                f.write("\n== %s\n%s" % (title, read(cls.path(name))))
                if not read(cls.path(name)).endswith("\n"):
                    f.write("\n")
        print("vm-apparmor: ran in %.1f s; everything it saw: %s" % (cls.seconds, REPORT), file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        if cls.out:
            shutil.rmtree(cls.out, ignore_errors=True)

    @classmethod
    def path(cls, *p):
        return os.path.join(cls.out, *p)

    def text(self, name):
        return read(self.path(name)).strip()

    def json(self, name):
        text = self.text(name)
        try:
            return json.loads(text)
        except ValueError:
            self.fail("%s is no JSON: %r; stderr: %r" % (name, text[-500:], self.text(name.replace(".json", ".err"))))

    def test_00_guest_finished(self):
        self.assertEqual(self.text("done"), "done", read(self.path("guest.log")))

    def test_01_kernel(self):
        k = self.text("kernel.txt")
        major, minor = map(int, k.split("uname -r: ")[1].split(".")[:2])
        self.assertGreaterEqual((major, minor), (6, 7), k)
        self.assertIn("apparmor enabled: Y", k)
        self.assertIn("apparmor", k.split("lsm: ")[1].split("\n")[0])
        self.assertIn("features/namespaces/mask: userns_create", k)   # the kernel mediates `userns`
        self.assertIn("apparmor_parser --version: AppArmor parser version 4.", k)

    def test_10_profile_loads(self):
        # --Werror: warnings are errors (a rule the kernel cannot enforce is one)
        self.assertEqual(self.text("load_nsbox.rc"), "0", self.text("load_nsbox.txt"))
        self.assertEqual(self.text("load_nsbox.txt"), "")
        self.assertIn("nsbox (unconfined)", self.text("profiles.txt"))
        with_rule, without = [line.split(":")[1].split()[0] for line in self.text("userns_compiled.txt").splitlines()]
        self.assertNotEqual(with_rule, without)
        self.assertNotEqual(with_rule, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")  # empty

    def test_11_userns_is_mediated(self):
        # a profile without the rule may not create a user namespace: the
        # kernel enforces the rule nsbox's profile grants
        self.assertEqual(self.text("load_confine.rc"), "0", self.text("load_confine.txt"))
        self.assertIn("Permission denied", self.text("no_userns.txt"))
        self.assertTrue(self.text("no_userns.txt").endswith("exit 1"), self.text("no_userns.txt"))
        self.assertEqual(self.text("confine_label.txt"), "unprivileged_userns (enforce)")

    def test_20_confined_doctor(self):
        self.assertNotEqual(self.text("confined_doctor.rc"), "0")
        rep = self.json("confined_doctor.json")
        user_ns = {c["name"]: c for c in rep["checks"]}["user_ns"]
        self.assertEqual(user_ns["status"], "unavailable", user_ns)
        self.assertIn("comes up without capabilities", user_ns["detail"])
        self.assertIn("unprivileged_userns", user_ns["detail"])      # the profile that confines it
        self.assertNotIn("apparmor_restrict_unprivileged_userns", user_ns["detail"])  # no such sysctl here
        self.assertNotIn("unconfined", user_ns["fix"])

    def test_21_confined_strict_fails_closed(self):
        self.assertEqual(self.text("confined_strict.rc"), "125", self.text("confined_strict.err"))
        r = self.json("confined_strict.json")
        self.assertEqual(r["status"], "error", r)
        self.assertNotIn("ran", r.get("stdout", {}).get("text", ""), r)
        self.assertIn("unprivileged_userns", r["error"]["message"], r)

    def test_30_own_profile_strict(self):
        # the supervisor, attached by its path
        self.assertEqual(self.text("own_label.txt"), "%s python --json --wall-time 60s -c import time; "
                         "time.sleep(4) : nsbox (unconfined)" % self.text("profile_attach.txt"))
        self.assertEqual(self.text("own_strict.rc"), "0", self.text("own_strict.err"))
        r = self.json("own_strict.json")
        self.assertEqual((r["status"], r["exit_code"], r["isolation"]), ("exited", 0, "strict"), r)
        # the program carries nsbox's label; seccomp refuses it a user namespace
        self.assertEqual(r["stdout"]["text"], "ran 2 nsbox (unconfined) unshare(CLONE_NEWUSER): -1 "
                                              "Operation not permitted\n", r)
        self.assertEqual(self.text("own_doctor.rc"), "0", self.text("own_doctor.txt"))
        self.assertIn("ready for strict isolation: yes", self.text("own_doctor.txt"))

    def jobs(self, name):
        return [json.loads(line) for line in self.text(name).splitlines()]

    def test_22_confined_warm_fails_closed(self):
        jobs = self.jobs("confined_warm.jsonl")
        self.assertEqual(len(jobs), 2, jobs)
        for r in jobs:
            self.assertEqual(r["status"], "error", r)
            self.assertNotIn("ran", r["stdout"]["text"], r)
            self.assertIn("unprivileged_userns", r["error"]["message"], r)

    def test_31_own_profile_warm(self):
        jobs = self.jobs("own_warm.jsonl")
        self.assertEqual(self.text("own_warm.rc"), "0", self.text("own_warm.err"))
        self.assertEqual([(r["status"], r["exit_code"], r["start"], r["isolation"]) for r in jobs],
                         [("exited", 0, "warm", "strict")] * 2, jobs)


if __name__ == "__main__":
    unittest.main()
