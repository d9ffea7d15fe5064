"""nsbox doctor: the preflight report, and the journey of a host that lacks
user namespaces (doctor says not ready and how to fix it; a run fails with
status error before anything runs)."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from nsbtest import NSBOX, SandboxTest, skip_or_fail, userns_available

CHECKS = ["user_ns", "cgroup", "seccomp", "no_new_privs", "landlock", "interpreter"]


def doctor(*args, env=None):
    t0 = time.monotonic()
    p = subprocess.run([NSBOX, "doctor", *args], capture_output=True, timeout=30, env=env)
    return p, time.monotonic() - t0


def fake_proc_sys():
    """A directory that looks like /proc/sys on a host without user namespaces."""
    d = tempfile.mkdtemp(prefix="nsbox-procsys.")
    for rel, val in (("kernel/unprivileged_userns_clone", "0\n"), ("user/max_user_namespaces", "0\n")):
        os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(d, rel), "w") as f:
            f.write(val)
    return d


class Doctor(unittest.TestCase):
    def test_json_report_on_this_host(self):
        if not userns_available():
            skip_or_fail(self, "unprivileged user namespaces are unavailable: doctor would rightly say not ready")
        p, secs = doctor("--json")
        self.assertLess(secs, 1.0)
        rep = json.loads(p.stdout)
        self.assertEqual(rep["schema"], "nsbox.doctor/1")
        self.assertEqual(rep["isolation"], "strict")
        self.assertEqual([c["name"] for c in rep["checks"]], CHECKS)
        for c in rep["checks"]:
            self.assertEqual(sorted(c), ["detail", "fix", "name", "status"])
            self.assertIn(c["status"], ("ok", "degraded", "unavailable"))
            self.assertTrue(c["detail"])
            if c["status"] != "ok":
                self.assertTrue(c["fix"], c)
        self.assertTrue(rep["ready"], rep)
        self.assertEqual(p.returncode, 0, p.stderr)
        by = {c["name"]: c for c in rep["checks"]}
        self.assertEqual(by["user_ns"]["status"], "ok")
        self.assertRegex(by["landlock"]["detail"], r"ABI \d+")

    def test_human_output(self):
        p, secs = doctor()
        self.assertLess(secs, 1.0)
        out = p.stdout.decode()
        for name in CHECKS:
            self.assertRegex(out, r"(?m)^[✓!✗] %s\b" % name)
        self.assertRegex(out, r"ready for strict isolation: (yes|no)\n\Z")
        self.assertEqual(p.returncode, 0 if out.endswith("yes\n") else 1)

    def test_reduced(self):
        p, _ = doctor("--json", "--isolation", "reduced")
        self.assertEqual(json.loads(p.stdout)["isolation"], "reduced")

    def test_interpreter_is_checked_as_given(self):
        p, _ = doctor("--json", "--interpreter", "/nonexistent/python3")
        rep = json.loads(p.stdout)
        check = next(c for c in rep["checks"] if c["name"] == "interpreter")
        self.assertEqual((p.returncode, rep["ready"], check["status"]), (1, False, "unavailable"), rep)
        self.assertIn("/nonexistent/python3", check["detail"])
        p, _ = doctor("--json", "--interpreter", "/usr/bin/python3")
        check = next(c for c in json.loads(p.stdout)["checks"] if c["name"] == "interpreter")
        self.assertEqual(check["status"], "ok", check)

    def test_changes_nothing(self):
        before = sorted(os.listdir("/sys/fs/cgroup")) if os.path.isdir("/sys/fs/cgroup") else []
        doctor("--json")
        after = sorted(os.listdir("/sys/fs/cgroup")) if os.path.isdir("/sys/fs/cgroup") else []
        self.assertEqual(before, after)


class NoUserNamespacesJourney(SandboxTest):
    """A host made to look like it lacks user namespaces."""

    def test_doctor_says_not_ready_with_the_fix(self):
        d = fake_proc_sys()
        try:
            env = dict(os.environ, NSBOX_DOCTOR_PROC_SYS=d, NSBOX_DOCTOR_FAKE_USERNS="0")
            p, secs = doctor("--json", env=env)
            self.assertLess(secs, 1.0)
            rep = json.loads(p.stdout)
            self.assertFalse(rep["ready"], rep)
            self.assertEqual(p.returncode, 1)
            userns = next(c for c in rep["checks"] if c["name"] == "user_ns")
            self.assertEqual(userns["status"], "unavailable")
            self.assertIn("sysctl", userns["fix"])
            self.assertIn("max_user_namespaces=0", userns["detail"])
            # human output says the same
            p, _ = doctor(env=env)
            self.assertEqual(p.returncode, 1)
            self.assertIn("fix: sudo sysctl -w", p.stdout.decode())
            self.assertTrue(p.stdout.decode().endswith("ready for strict isolation: no\n"))
        finally:
            shutil.rmtree(d)

    def test_run_fails_before_running_anything(self):
        ws = tempfile.mkdtemp()
        os.chmod(ws, 0o777)
        try:
            env = dict(os.environ, NSBOX_TEST_FAIL_STEP="clone")
            p, res = self.run_json("python", "--workspace", ws, "-c", "open('/workspace/ran','w')", env=env)
            self.assertEqual(res["status"], "error", res)
            self.assertEqual(res["error"]["stage"], "clone", res)
            self.assertEqual(p.returncode, 125)
            self.assertIsNone(res["exit_code"])
            self.assertFalse(os.path.exists(os.path.join(ws, "ran")))
        finally:
            shutil.rmtree(ws)


if __name__ == "__main__":
    unittest.main()
