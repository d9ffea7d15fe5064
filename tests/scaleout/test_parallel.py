"""The GNU parallel example of docs/scale-out.md, as written there, on this
machine: 4 shards of examples/slurm/jobs.jsonl (400 jobs) at once.

The command is read from the doc's "GNU parallel" block (the one-machine
line), so the doc cannot drift from what is tested. Every job id must appear
exactly once across the shards, each in its shard. Then one shard is cut to
half its lines (a shard killed half-way) and the same command runs again:
--resume must run only the missing jobs, leave the lines that were there
untouched and every id must again appear exactly once.

Runs as the current user and, as root, again as uid 65534 (a copy of nsbox in
a directory that user can read).
"""
import collections
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

SRC = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
NSBOX = os.environ.get("NSBOX", "nsbox")
JOBS = os.path.join(SRC, "examples", "slurm", "jobs.jsonl")
SHARDS = 4
NOBODY = 65534


def doc_command():
    """The one-machine command of the doc's GNU parallel block."""
    with open(os.path.join(SRC, "docs", "scale-out.md")) as f:
        text = f.read()
    section = text.split("## GNU parallel", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    cmd = block.split("\n# ", 1)[0].strip()
    assert cmd.startswith("parallel ") and "nsbox batch" in cmd, cmd
    return cmd.replace("\\\n", " ")


def shards(out):
    got = {}
    for k in range(SHARDS):
        with open(os.path.join(out, "shard-%d.jsonl" % k)) as f:
            got[k] = f.read().splitlines()
    return got


class ParallelExampleTest(unittest.TestCase):
    def setUp(self):
        if shutil.which("parallel") is None:
            raise AssertionError("GNU parallel is missing: scripts/deps installs the parallel package")
        self.base = tempfile.mkdtemp(prefix="nsbox-parallel-", dir="/var/tmp")
        os.chmod(self.base, 0o755)
        self.addCleanup(shutil.rmtree, self.base, True)

    def setup_dir(self, uid):
        work = os.path.join(self.base, "work-%d" % uid)
        os.makedirs(os.path.join(work, "out"))
        os.makedirs(os.path.join(work, "bin"))
        shutil.copy(JOBS, work)
        shutil.copy(NSBOX, os.path.join(work, "bin", "nsbox"))
        os.chmod(os.path.join(work, "bin", "nsbox"), 0o755)
        if os.geteuid() == 0:
            for root, dirs, files in os.walk(work):
                for name in dirs + files + ["."]:
                    os.chown(os.path.join(root, name), uid, uid)
        return work

    def run_doc_command(self, work, uid):
        env = {"PATH": "%s/bin:/usr/bin:/bin" % work, "HOME": work, "LANG": "C.UTF-8"}
        argv = ["/bin/sh", "-c", doc_command()]
        if uid != os.geteuid():
            argv = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"] + argv
        r = subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, "parallel failed:\n%s\n%s" % (r.stdout, r.stderr))

    def check_exactly_once(self, work):
        with open(JOBS) as f:
            ids = [json.loads(line)["id"] for line in f if line.strip()]
        got = shards(os.path.join(work, "out"))
        seen = collections.Counter()
        for k, lines in got.items():
            for text in lines:
                line = json.loads(text)
                seen[line["id"]] += 1
                self.assertEqual((line["batch"]["line"] - 1) % SHARDS, k, text[:200])
                self.assertNotEqual(line["status"], "error", text[:500])
        self.assertEqual(sorted(i for i, n in seen.items() if n != 1), [])
        self.assertEqual(set(seen), set(ids))
        self.assertGreaterEqual(len(ids), 400)
        return got

    def example(self, uid):
        work = self.setup_dir(uid)
        self.run_doc_command(work, uid)
        first = self.check_exactly_once(work)

        # Shard 2 killed half-way: only its first half of lines survived.
        path = os.path.join(work, "out", "shard-2.jsonl")
        kept = first[2][:len(first[2]) // 2]
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in kept))
        self.run_doc_command(work, uid)
        again = self.check_exactly_once(work)
        self.assertEqual(again[2][:len(kept)], kept, "resume changed the lines that were there")
        self.assertEqual(len(again[2]), len(first[2]))
        for k in (0, 1, 3):
            self.assertEqual(again[k], first[k], "a complete shard ran again")
        if os.geteuid() == 0:
            self.assertEqual(os.stat(path).st_uid, uid)

    def test_example_as_current_user(self):
        self.example(os.geteuid())

    def test_example_as_nobody(self):
        if os.geteuid() != 0:
            self.skipTest("only root can switch to uid 65534; the current-user test covers this one")
        self.example(NOBODY)


if __name__ == "__main__":
    unittest.main()
