"""A warm job's own limits are its own (issue #26, found by the parity suite).

Under the rlimit backend a process can only lower the limits it inherits,
so a warm job forked from a zygote that carried the batch's --memory could
never have more than that: a job line asking for 2G ran under the batch's
256M warm and under 2G cold. Each job here asks for more than the batch's
default and uses it, cold and warm; root runs on the cgroup backend, the
unprivileged run of this suite on rlimits.
"""
import json
import os
import tempfile

from nsbtest import SandboxTest, SANITIZED

CODE = ("import resource\n"
        "b = bytearray(700 << 20)\n"
        "b[::4096] = b'x' * len(range(0, len(b), 4096))\n"
        "print(len(b) >> 20, resource.getrlimit(resource.RLIMIT_AS)[0] != 256 << 20)\n")


class WarmJobLimits(SandboxTest):
    def test_a_job_may_have_more_memory_than_the_batch_default(self):
        if SANITIZED:
            self.skipTest("ASan's shadow memory is not a program's")
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
            for i in range(2):
                f.write(json.dumps({"id": "j%d" % i, "kind": "python", "code": CODE,
                                    "limits": {"memory": "2G", "wall_time": 60}}) + "\n")
        self.addCleanup(os.unlink, f.name)
        for warm in ([], ["--warm"]):
            p = self.nsbox("batch", "--quiet", "-j", "1", *warm, f.name, timeout=300)
            lines = [json.loads(l) for l in p.stdout.splitlines()]
            self.assertEqual(len(lines), 2, p.stderr)
            for r in lines:
                self.assertEqual((r["status"], r["stdout"]["text"]), ("exited", "700 True\n"),
                                 (warm, r.get("start"), r.get("start_reason"), r["stderr"]["text"][-800:]))
            if warm:
                self.assertEqual([l.get("start") for l in lines], ["warm", "warm"],
                                 [l.get("start_reason") for l in lines])


if __name__ == "__main__":
    import unittest
    unittest.main()
