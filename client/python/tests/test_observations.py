"""nsbox_client.judge(spec, observe=...) and replay(observations, spec)
against the built nsbox ($NSBOX), stdlib only."""
import hashlib
import json
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import nsbox_client as nc  # noqa: E402
from test_client import NSBOX, WithNsbox  # noqa: E402

ADD = "import sys\nprint(int(sys.argv[1]) + int(sys.argv[2]))\n"


def spec_of(program=ADD, want=("5\n", "9\n")):
    return {"program": {"source": program}, "limits": {"wall_time": "5s"},
            "cases": [{"name": "small", "args": ["2", "3"], "expect": {"stdout": {"equals": want[0]}}},
                      {"name": "big", "args": ["4", "5"], "expect": {"stdout": {"equals": want[1]}}}]}


class ObserveAndReplay(WithNsbox):
    def setUp(self):
        super().setUp()
        self.d = tempfile.mkdtemp(prefix="nsbox-client-obs.", dir="/var/tmp")
        self.obs = os.path.join(self.d, "obs.jsonl")

    def tearDown(self):
        shutil.rmtree(self.d, ignore_errors=True)

    def test_round_trip_and_new_expectations(self):
        live = nc.observations.judge(spec_of(), observe=self.obs, client=self.client)
        self.assertEqual(live.verdict, "pass")
        self.assertFalse(live.replayed)
        lines = nc.read_observations(self.obs)
        self.assertEqual([o.case for o in lines], ["small", "big"])
        self.assertEqual([o.args for o in lines], [["2", "3"], ["4", "5"]])
        self.assertEqual(lines[0].program_sha256, hashlib.sha256(ADD.encode()).hexdigest())
        self.assertEqual(lines[0].stdin_sha256, hashlib.sha256(b"").hexdigest())
        self.assertEqual([o.result for o in lines], [c.result for c in live.cases])
        self.assertEqual([o.observation_id for o in lines], [c["observation_id"] for c in live.raw["cases"]])

        again = nc.replay(self.obs, spec_of(), client=self.client)
        self.assertTrue(again.replayed)
        self.assertEqual(again.verdict, live.verdict)
        self.assertEqual([(c.name, c.verdict, c.reason, c.result) for c in again.cases],
                         [(c.name, c.verdict, c.reason, c.result) for c in live.cases])

        # new expectations: judged from what was stored; every sandbox
        # would fail here (the test hook), so nothing ran
        with mock.patch.dict(os.environ, {"NSBOX_TEST_FAIL_STEP": "clone"}):
            changed = nc.replay(self.obs, spec_of(want=("5\n", "10\n")), client=self.client)
            self.assertEqual(nc.Client(NSBOX).judge(spec_of()).verdict, "undetermined")
        self.assertEqual((changed.verdict, [c.verdict for c in changed.cases]), ("fail", ["pass", "fail"]))
        self.assertIn("expected '10', got '9'", changed.cases[1].reason)

    def test_spec_file_and_top_level_functions(self):
        path = os.path.join(self.d, "spec.json")
        with open(path, "w") as f:
            json.dump(spec_of(), f)
        with mock.patch.dict(os.environ, {"NSBOX": NSBOX}):
            live = nc.judge(path, observe=self.obs)
            self.assertEqual(live.verdict, "pass")
            self.assertTrue(nc.replay(self.obs, path).replayed)
            self.assertEqual(nc.judge(path).verdict, "pass")   # without observe: unchanged

    def test_refusals_raise_with_the_difference(self):
        nc.observations.judge(spec_of(), observe=self.obs, client=self.client)
        with self.assertRaises(nc.NsboxError) as cm:
            nc.replay(self.obs, spec_of(program=ADD + "# edited\n"), client=self.client)
        self.assertEqual(cm.exception.returncode, 125)
        self.assertIn("program.sha256 was", str(cm.exception))
        changed_args = spec_of()
        changed_args["cases"][0]["args"] = ["2", "4"]
        with self.assertRaises(nc.NsboxError) as cm:
            nc.replay(self.obs, changed_args, client=self.client)
        self.assertIn("invocation.args[1] was \"3\", is now \"4\"", str(cm.exception))
        with self.assertRaises(nc.NsboxError) as cm:
            nc.replay(self.obs, spec_of(), client=nc.Client(NSBOX, extra_args=["--memory", "64M"]))
        self.assertIn("memory_bytes was 268435456, is now 67108864", str(cm.exception))
        with open(self.obs, "a") as f:
            f.write("{not json\n")
        with self.assertRaises(nc.NsboxError) as cm:
            nc.replay(self.obs, spec_of(), client=self.client)
        self.assertIn("obs.jsonl:3: invalid JSON", str(cm.exception))
        with self.assertRaises(nc.NsboxError):
            nc.read_observations(self.obs)


if __name__ == "__main__":
    unittest.main()
