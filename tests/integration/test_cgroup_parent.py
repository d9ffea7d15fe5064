"""--cgroup-parent DIR (and the profile key) on this host: refused — status
error, stage cgroup, exit 125, with why — when DIR is no usable delegated
cgroup v2 directory; doctor reports the refusal; batch refuses before its
first job. (A usable DIR, and the systemd scope, run for real in the vm suite:
tests/vm/.) Runs as root and, through as_nobody.sh, as uid 65534."""
import json
import os
import subprocess
import tempfile
import unittest

from nsbtest import NSBOX, SandboxTest


def cgroup_mounts():
    """(cgroup2 mount point or None, a v1 mount point or None), from mountinfo."""
    v2 = v1 = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype = right.split()[0]
            point = left.split()[4]
            if not point.startswith("/sys/fs/cgroup"):
                continue
            if fstype == "cgroup2" and v2 is None:
                v2 = point
            elif fstype == "cgroup" and v1 is None:
                v1 = point
    return v2, v1


class CgroupParent(SandboxTest):
    def refused(self, parent, why, *extra):
        p, res = self.run_json("run", "--cgroup-parent", parent, *extra, "--", "/bin/true")
        self.assertEqual(p.returncode, 125, res)
        self.assertEqual(res["status"], "error", res)
        self.assertEqual(res["error"]["stage"], "cgroup", res)
        self.assertIn("--cgroup-parent %s: %s" % (parent, why), res["error"]["message"])
        self.assertIsNone(res["exit_code"])

    def test_refusals(self):
        v2, v1 = cgroup_mounts()
        self.assertIsNotNone(v2, "no cgroup2 mount under /sys/fs/cgroup")
        self.refused(os.path.join(v2, "nsbox-test-missing-%d" % os.getpid()), "no such cgroup")
        self.refused("/tmp", "not under the cgroup filesystem")
        self.refused("/sys/fs/cgroup/../cgroup", "has a '.' or '..' component")
        if v1:      # a hybrid host (this CI machine): a v1 directory is no cgroup2 one
            self.refused(v1, "not on the cgroup2 hierarchy")
        with open(os.path.join(v2, "cgroup.controllers")) as f:
            root_ctrl = f.read().split()
        if "memory" not in root_ctrl or "pids" not in root_ctrl:
            self.refused(v2, "memory and pids are not both in its cgroup.controllers")

    def test_profile_key(self):
        with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as f:
            f.write("[sandbox]\ncgroup_parent = /tmp\n")
        try:
            self.refused("/tmp", "not under the cgroup filesystem", "--profile", f.name)
            # the flag wins over the profile
            v2, _ = cgroup_mounts()
            missing = os.path.join(v2, "nsbox-test-missing-%d" % os.getpid())
            p, res = self.run_json("run", "--profile", f.name, "--cgroup-parent", missing, "--", "/bin/true")
            self.assertIn("--cgroup-parent %s: no such cgroup" % missing, res["error"]["message"])
        finally:
            os.unlink(f.name)

    def test_relative_is_a_usage_error(self):
        p = self.nsbox("run", "--cgroup-parent", "box", "--", "/bin/true")
        self.assertEqual(p.returncode, 125)
        self.assertEqual(p.stdout, b"")
        self.assertIn(b"expected the absolute path of a cgroup v2 directory", p.stderr)

    def test_doctor_reports_the_refusal(self):
        p = self.nsbox("doctor", "--json", "--cgroup-parent", "/tmp")
        rep = json.loads(p.stdout)
        c = [c for c in rep["checks"] if c["name"] == "cgroup"][0]
        self.assertEqual((c["status"], c["origin"]), ("unavailable", "cgroup-parent"), c)
        self.assertIn("not under the cgroup filesystem", c["detail"])
        self.assertTrue(c["fix"])
        self.assertFalse(rep["ready"])
        self.assertEqual(p.returncode, 1)

    def test_batch_refuses_before_any_job(self):
        jobs = '{"id": 1, "kind": "run", "argv": ["/bin/true"]}\n'
        p = subprocess.run([NSBOX, "batch", "--cgroup-parent", "/tmp", "-"], input=jobs.encode(),
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertEqual(p.stdout, b"")
        self.assertIn(b"--cgroup-parent /tmp: not under the cgroup filesystem", p.stderr)


if __name__ == "__main__":
    unittest.main()
