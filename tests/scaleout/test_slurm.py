"""examples/slurm/grade.sbatch on a real, single-node Slurm cluster.

Run 1 (as root): the array of 4 tasks over examples/slurm/jobs.jsonl (400
jobs); every job id must appear exactly once across the shards' results,
each in the shard its line number belongs to.

Run 2 (as uid 65534, sbatch --uid): the same array in a fresh directory;
task 1 is cancelled with scancel once it has written some of its lines but
not all; after the array ends, task 1's ids are missing. Then the same array
is submitted again, unchanged: --resume must run exactly the jobs without a
line, so every id appears exactly once again.

The daemons' logs are printed when anything fails; the cluster is stopped
and nothing of it is left running, whatever happened (slurm_cluster.py).
"""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import SlurmCluster, wait_for  # noqa: E402

SRC = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(SRC, "examples", "slurm")
NSBOX = os.environ.get("NSBOX", "nsbox")
TASKS = 4
NOBODY = 65534


def job_ids(path):
    with open(path) as f:
        return [json.loads(line)["id"] for line in f if line.strip()]


def shard_lines(out):
    """{task: [parsed lines]} of out/shard-K.jsonl; a line that is not JSON fails."""
    got = {}
    for k in range(TASKS):
        path = os.path.join(out, "shard-%d.jsonl" % k)
        got[k] = []
        if os.path.exists(path):
            with open(path) as f:
                for n, line in enumerate(f, 1):
                    try:
                        got[k].append(json.loads(line))
                    except ValueError as e:
                        raise AssertionError("%s:%d is not a JSON line (%s): %r" % (path, n, e, line[:200]))
    return got


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


class SlurmArrayTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("the Slurm daemons need root (slurmd starts jobs as their user)")
        for tool in ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sbatch"):
            if not os.path.exists(tool):
                raise AssertionError("%s is missing: scripts/deps installs slurmctld, slurmd, slurm-client, munge"
                                     % tool)
        # Not under /tmp, which nsbox gives each sandbox privately; readable
        # by uid 65534, which runs the second array.
        cls.base = tempfile.mkdtemp(prefix="nsbox-slurm-", dir="/var/tmp")
        os.chmod(cls.base, 0o755)
        cls.bin = os.path.join(cls.base, "bin")
        os.makedirs(cls.bin)
        shutil.copy(NSBOX, os.path.join(cls.bin, "nsbox"))
        os.chmod(os.path.join(cls.bin, "nsbox"), 0o755)
        cls.cluster = SlurmCluster(os.path.join(cls.base, "cluster"), owner_dir=cls.base)
        # Stopped (TERM from a meson timeout, Ctrl-C): stop the cluster first.
        def stop_and_exit(signum, frame):
            print("signal %d: stopping the cluster" % signum, file=sys.stderr)
            print(cls.cluster.describe(), file=sys.stderr)
            try:
                cls.cluster.stop()
            finally:
                shutil.rmtree(cls.base, ignore_errors=True)
                os._exit(1)
        signal.signal(signal.SIGTERM, stop_and_exit)
        signal.signal(signal.SIGINT, stop_and_exit)
        try:
            cls.cluster.start()
        except BaseException:
            print(cls.cluster.describe(), file=sys.stderr)
            cls.cluster.stop()
            shutil.rmtree(cls.base, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.cluster.stop()
        finally:
            shutil.rmtree(cls.base, ignore_errors=True)

    def run(self, result=None):
        # Print the daemons' logs for any failure of a test method.
        before = len(result.failures) + len(result.errors) if result else 0
        r = super().run(result)
        if result and len(result.failures) + len(result.errors) > before:
            print(self.cluster.describe(), file=sys.stderr)
            for d in getattr(self, "workdirs", []):
                for name in sorted(os.listdir(d)):
                    if name.startswith("slurm-"):
                        with open(os.path.join(d, name), errors="replace") as f:
                            print("==== %s ====\n%s" % (name, f.read()[-5000:]), file=sys.stderr)
        return r

    def workdir(self, name, uid):
        d = os.path.join(self.base, name)
        os.makedirs(d)
        shutil.copy(os.path.join(EXAMPLE, "jobs.jsonl"), d)
        os.chown(d, uid, uid)
        self.workdirs = getattr(self, "workdirs", []) + [d]
        return d

    def submit(self, work, uid=None):
        argv = ["sbatch", "--parsable", "--array=0-%d" % (TASKS - 1), "--cpus-per-task=1",
                "--chdir=" + work, "--output=" + os.path.join(work, "slurm-%A_%a.out"),
                "--export=ALL,PATH=%s:/usr/bin:/bin" % self.bin]
        if uid is not None:
            argv += ["--uid=%d" % uid, "--gid=%d" % uid]
        r = self.cluster.run(argv + [os.path.join(EXAMPLE, "grade.sbatch")])
        return r.stdout.strip().split(";")[0]

    def check_exactly_once(self, work):
        ids = job_ids(os.path.join(work, "jobs.jsonl"))
        self.assertGreaterEqual(len(ids), 400)
        got = shard_lines(os.path.join(work, "out"))
        seen = collections.Counter(line["id"] for lines in got.values() for line in lines)
        dup = sorted(i for i, n in seen.items() if n > 1)
        missing = sorted(set(ids) - set(seen))
        extra = sorted(set(seen) - set(ids))
        self.assertEqual(dup, [], "ids with more than one line")
        self.assertEqual(missing, [], "ids without a line")
        self.assertEqual(extra, [], "lines for ids not in the jobs")
        for k, lines in got.items():
            for line in lines:
                self.assertEqual((line["batch"]["line"] - 1) % TASKS, k, "line %s in shard %d" % (line["id"], k))
                self.assertNotEqual(line["status"], "error", line)
        return got

    def test_1_array_runs_every_job_once(self):
        work = self.workdir("run1", 0)
        jobid = self.submit(work)
        states = self.cluster.wait_array(jobid, TASKS, 600)
        self.assertEqual(states, {k: "COMPLETED" for k in range(TASKS)})
        got = self.check_exactly_once(work)
        outcomes = collections.Counter(line["outcome"] for lines in got.values() for line in lines)
        # examples/slurm/make-jobs.py: 1 in 25 off by one, 1 in 100 loops
        self.assertEqual(outcomes, {"pass": 380, "fail": 16, "timeout": 4})
        # and the report reads the shards as they are
        r = subprocess.run([NSBOX, "report"] + [os.path.join(work, "out", "shard-%d.jsonl" % k) for k in range(TASKS)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("400 jobs (400 results, 0 verdicts), 20 failed or erred; 0 bad lines", r.stdout)

    def test_2_cancel_then_resubmit_resumes(self):
        work = self.workdir("run2", NOBODY)
        jobid = self.submit(work, uid=NOBODY)
        shard1 = os.path.join(work, "out", "shard-1.jsonl")
        share = len(job_ids(os.path.join(work, "jobs.jsonl"))) // TASKS

        # Half-way: some lines written, task 1 still running.
        wait_for("task 1 to write 10 lines", lambda: count_lines(shard1) >= 10, 300, 0.05)
        self.cluster.run(["scancel", "%s_1" % jobid])
        states = self.cluster.wait_array(jobid, TASKS, 600)
        self.assertEqual(states[1], "CANCELLED", states)
        for k in (0, 2, 3):
            self.assertEqual(states[k], "COMPLETED", states)
        done = count_lines(shard1)
        self.assertLess(done, share, "task 1 finished before the cancel: nothing to resume")
        ids = job_ids(os.path.join(work, "jobs.jsonl"))
        seen = {line["id"] for lines in shard_lines(os.path.join(work, "out")).values() for line in lines}
        self.assertGreater(len(set(ids) - seen), 0)
        # A cancelled job writes no line (docs/batch.md), so every line
        # there is a job that ended by itself.
        for line in shard_lines(os.path.join(work, "out"))[1]:
            self.assertIn(line["status"], ("exited", "limit"), line)

        again = self.submit(work, uid=NOBODY)
        self.assertNotEqual(again, jobid)
        states = self.cluster.wait_array(again, TASKS, 600)
        self.assertEqual(states, {k: "COMPLETED" for k in range(TASKS)})
        got = self.check_exactly_once(work)
        self.assertEqual(len(got[1]), share)
        # the other shards were complete: resubmitted, they ran nothing
        for k in (0, 2, 3):
            self.assertEqual(len(got[k]), share)
        # and the jobs ran unprivileged: the files belong to 65534
        self.assertEqual(os.stat(shard1).st_uid, NOBODY)


if __name__ == "__main__":
    unittest.main()
