"""nsbox judge end to end: verdicts on evidence, undetermined on a broken
sandbox, and expectations that never reach the program."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import uuid

from nsbtest import NSBOX, SandboxTest

SUM = "import sys\na, b = map(int, sys.argv[1:3])\nprint(a + b)\n"


class Judge(SandboxTest):
    def judge(self, program, cases, env=None, limits=None):
        d = tempfile.mkdtemp()
        try:
            spec = {"program": {"source": program}, "limits": limits or {"wall_time": "2s"}, "cases": cases}
            path = os.path.join(d, "spec.json")
            with open(path, "w") as f:
                json.dump(spec, f)
            os.chmod(d, 0o755)
            os.chmod(path, 0o644)
            p = self.nsbox("judge", "--json", path, env=env)
            return p, json.loads(p.stdout)
        finally:
            shutil.rmtree(d)

    def test_correct_program_passes(self):
        p, v = self.judge(SUM, [{"name": "adds", "args": ["2", "3"], "expect": {"stdout": {"equals": "5\n"}}}])
        self.assertEqual((v["verdict"], p.returncode), ("pass", 0))
        self.assertEqual(v["cases"][0]["result"]["status"], "exited")

    def test_wrong_program_fails_with_reason(self):
        p, v = self.judge(SUM.replace("a + b", "a * b"),
                          [{"name": "adds", "args": ["2", "3"], "expect": {"stdout": {"equals": "5\n"}}}])
        self.assertEqual((v["verdict"], p.returncode), ("fail", 1))
        self.assertIn("expected '5'", v["cases"][0]["reason"])

    def test_syntax_error_fails(self):
        p, v = self.judge("print(", [{"name": "x", "expect": {"stdout": {"contains": ""}}}])
        self.assertEqual(v["verdict"], "fail")

    def test_infinite_loop_fails_on_wall_time(self):
        p, v = self.judge("while True: pass", [{"name": "x", "expect": {"stdout": {"equals": ""}}}],
                          limits={"wall_time": "500ms"})
        self.assertEqual(v["verdict"], "fail")
        self.assertEqual(v["cases"][0]["result"]["limit"], "wall_time")

    def test_broken_sandbox_is_undetermined(self):
        env = dict(os.environ, NSBOX_TEST_FAIL_STEP="seccomp")
        p, v = self.judge(SUM, [{"name": "adds", "args": ["2", "3"], "expect": {"stdout": {"equals": "5\n"}}}],
                          env=env)
        self.assertEqual((v["verdict"], p.returncode), ("undetermined", 3))
        self.assertEqual(v["cases"][0]["result"]["status"], "error")

    def test_spec_inside_a_mounted_directory_is_refused(self):
        d = tempfile.mkdtemp()
        try:
            spec = os.path.join(d, "spec.json")
            with open(spec, "w") as f:
                json.dump({"program": {"source": "print(open('/workspace/spec.json').read())"},
                           "cases": [{"name": "a", "expect": {"stdout": {"contains": "secret"}}}]}, f)
            os.chmod(d, 0o755)
            os.chmod(spec, 0o644)
            for opts in (["--workspace", d], ["--ro-bind", d + ":/data"], ["--ro-bind", spec + ":/s.json"]):
                with self.subTest(opts[0]):
                    p = self.nsbox("judge", "--json", *opts, spec)
                    self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
                    self.assertIn(b"lies inside " + opts[0].encode(), p.stderr)
        finally:
            shutil.rmtree(d)

    def test_result_file_inside_a_mounted_directory_is_refused(self):
        """The verdict quotes expected values in its reasons: --result must not
        land where a later run of the program can read it, even when the file
        does not exist yet."""
        d, s = tempfile.mkdtemp(), tempfile.mkdtemp()
        try:
            spec = os.path.join(s, "spec.json")
            with open(spec, "w") as f:
                json.dump({"program": {"source": "print(4)"},
                           "cases": [{"name": "a", "expect": {"stdout": {"equals": "secret\n"}}}]}, f)
            os.chmod(d, 0o755)
            for opts in (["--workspace", d], ["--bind", d + ":/data"], ["--ro-bind", d + ":/data"]):
                with self.subTest(opts[0]):
                    result = os.path.join(d, "verdict.json")
                    p = self.nsbox("judge", "--json", *opts, "--result", result, spec)
                    self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
                    self.assertIn(b"--result", p.stderr)
                    self.assertIn(b"lies inside " + opts[0].encode(), p.stderr)
                    self.assertFalse(os.path.exists(result))
            # the same for stdout redirected by the caller into such a directory
            out_path = os.path.join(d, "verdict.out")
            with open(out_path, "wb") as out:
                p = subprocess.run([NSBOX, "judge", "--json", "--workspace", d, spec], stdout=out,
                                   stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(b"stdout", p.stderr)
            self.assertIn(b"lies inside --workspace", p.stderr)
            self.assertEqual(os.path.getsize(out_path), 0)
        finally:
            shutil.rmtree(d)
            shutil.rmtree(s)

    def test_stdin_file_feeds_the_cases_without_their_own(self):
        """CONTRACT: --stdin is shared by judge: the cases that give no stdin
        read FILE (each anew); a case's own stdin wins; a pipe, which would
        feed one case only, is refused before anything runs."""
        d = tempfile.mkdtemp()
        try:
            spec, given = os.path.join(d, "spec.json"), os.path.join(d, "in.txt")
            with open(spec, "w") as f:
                json.dump({"program": {"source": "import sys\nprint(sys.stdin.read().upper(), end='')"},
                           "cases": [{"name": "first", "expect": {"stdout": {"equals": "FROM FILE\n"}}},
                                     {"name": "again", "expect": {"stdout": {"equals": "FROM FILE\n"}}},
                                     {"name": "own", "stdin": "mine", "expect": {"stdout": {"equals": "MINE"}}}]}, f)
            with open(given, "w") as f:
                f.write("from file\n")
            os.chmod(d, 0o755)
            for path in (spec, given):
                os.chmod(path, 0o644)
            p = self.nsbox("judge", "--json", "--stdin", given, spec)
            v = json.loads(p.stdout)
            self.assertEqual((p.returncode, v["verdict"]), (0, "pass"), [c["reason"] for c in v["cases"]])
            p = self.nsbox("judge", "--json", spec)   # without it: empty stdin
            self.assertEqual([c["verdict"] for c in json.loads(p.stdout)["cases"]], ["fail", "fail", "pass"])
            fifo = os.path.join(d, "fifo")
            os.mkfifo(fifo)
            p = self.nsbox("judge", "--json", "--stdin", fifo, spec)
            self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
            self.assertIn(b"is a FIFO (named pipe)", p.stderr)   # by name: never opened (#27)
            # the spec itself (the expected values), or an earlier verdict
            # (its reasons quote them), is never a program's stdin
            verdict = os.path.join(d, "verdict.json")
            with open(verdict, "w") as f:
                f.write("{}")
            os.chmod(verdict, 0o666)
            for opts, needle in ((["--stdin", spec], b"is the spec: every program would read the tests"),
                                 (["--stdin", verdict, "--result", verdict], b"is where the results go")):
                p = self.nsbox("judge", "--json", *opts, spec)
                self.assertEqual((p.returncode, p.stdout), (125, b""), p.stderr)
                self.assertIn(needle, p.stderr)
        finally:
            shutil.rmtree(d)

    def test_unwritable_result_file_says_why(self):
        d = tempfile.mkdtemp()
        try:
            spec = os.path.join(d, "spec.json")
            with open(spec, "w") as f:
                json.dump({"program": {"source": SUM}, "cases": [{"name": "a", "args": ["1", "2"]}]}, f)
            os.chmod(d, 0o755)
            os.chmod(spec, 0o644)
            target = os.path.join(d, "no-such-dir", "verdict.json")
            p = self.nsbox("judge", "--result", target, spec)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(("'%s': No such file or directory" % target).encode(), p.stderr)
        finally:
            shutil.rmtree(d)

    def test_expected_value_never_enters_the_sandbox(self):
        secret = "expected-" + uuid.uuid4().hex
        snoop = ("import os, sys, json\n"
                 "seen = json.dumps([sys.argv, dict(os.environ), sys.stdin.read()])\n"
                 "for top in ('/workspace', '/tmp', '/program', '/'):\n  for root, dirs, files in (os.walk(top) if top != '/' else [('/', [], os.listdir('/'))]):\n"
                 "    for f in files:\n"
                 "        try:\n            seen += open(os.path.join(root, f), errors='replace').read(1 << 16)\n"
                 "        except OSError:\n            pass\n"
                 "print('FOUND' if %r in seen else 'absent')\n" % ("expected-" + "%s"))
        # the program searches for the secret's prefix+suffix assembled at run time
        snoop = snoop.replace("'expected-%s'", "'expected-' + %r" % secret[len("expected-"):])
        p, v = self.judge(snoop, [{"name": "snoop", "stdin": "input", "expect": {"stdout": {"equals": secret}}}])
        self.assertEqual(v["cases"][0]["result"]["stdout"]["text"], "absent\n")


if __name__ == "__main__":
    unittest.main()


class Scores(SandboxTest):
    """Issue #32: counts and a weighted score in the verdict; --program grades
    another submission with the same spec; a spec's relative paths are found
    from its folder; options may follow the SPEC."""

    CASES = [{"name": "two", "args": ["1", "1"], "expect": {"stdout": {"equals": "2\n"}}},
             {"name": "five", "weight": 2, "args": ["2", "3"], "expect": {"stdout": {"equals": "5\n"}}},
             {"name": "zero", "args": ["0", "0"], "expect": {"stdout": {"equals": "0\n"}}}]

    def setUp(self):
        self.d = tempfile.mkdtemp()
        os.chmod(self.d, 0o755)
        self.addCleanup(shutil.rmtree, self.d)

    def write(self, name, text):
        path = os.path.join(self.d, name)
        with open(path, "w") as f:
            f.write(text if isinstance(text, str) else json.dumps(text))
        os.chmod(path, 0o644)
        return path

    def test_counts_and_weighted_score(self):
        # a*b: passes "two" (1*1 != 2: fails), "five" fails, "zero" passes
        spec = self.write("spec.json", {"program": {"source": SUM.replace("a + b", "a * b")},
                                        "limits": {"wall_time": "5s"}, "cases": self.CASES})
        p = self.nsbox("judge", "--json", spec)
        v = json.loads(p.stdout)
        self.assertEqual(v["counts"], {"pass": 1, "fail": 2, "undetermined": 0, "not_run": 0})
        self.assertAlmostEqual(v["score"], 1 / 4)
        self.assertEqual([c["weight"] for c in v["cases"]], [1, 2, 1])
        p = self.nsbox("judge", spec)
        self.assertIn(b"verdict: fail (1 passed, 2 failed, 0 undetermined), score 0.25\n", p.stdout)

    def test_undetermined_has_no_score(self):
        spec = self.write("spec.json", {"program": {"source": SUM}, "cases": self.CASES})
        p = self.nsbox("judge", "--json", spec, env=dict(os.environ, NSBOX_TEST_FAIL_STEP="seccomp"))
        v = json.loads(p.stdout)
        self.assertEqual((v["verdict"], v["score"]), ("undetermined", None))
        self.assertEqual(v["counts"]["undetermined"], 3)

    def test_bad_weight_is_a_bad_spec(self):
        for w in (0, -1, "2", True):
            with self.subTest(w):
                spec = self.write("spec.json", {"program": {"source": SUM},
                                                "cases": [{"name": "a", "weight": w}]})
                p = self.nsbox("judge", spec)
                self.assertEqual(p.returncode, 125)
                self.assertIn(b"cases[0].weight: expected a number greater than 0", p.stderr)

    def test_program_flag_grades_another_submission_options_after_spec(self):
        spec = self.write("spec.json", {"program": {"path": "right.py"}, "limits": {"wall_time": "5s"},
                                        "cases": self.CASES})
        self.write("right.py", SUM)
        other = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, other)
        with open(os.path.join(other, "wrong.py"), "w") as f:
            f.write(SUM.replace("a + b", "a - b"))
        os.chmod(other, 0o755)
        os.chmod(os.path.join(other, "wrong.py"), 0o644)
        p = self.nsbox("judge", spec, "--json")
        self.assertEqual((json.loads(p.stdout)["score"], p.returncode), (1.0, 0), p.stderr)
        # --program, relative to the current directory, after the SPEC
        p = self.nsbox("judge", spec, "--program", "wrong.py", "--json", cwd=other)
        v = json.loads(p.stdout)
        self.assertEqual((v["verdict"], v["counts"]["pass"], p.returncode), ("fail", 1, 1), p.stderr)
        self.assertEqual(v["program_sha256"],
                         hashlib.sha256(SUM.replace("a + b", "a - b").encode()).hexdigest())
        p = self.nsbox("judge", spec, "other.json")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"unexpected argument 'other.json'", p.stderr)

    def test_errors_name_the_flag_or_the_spec_key_that_was_wrong(self):
        # A --program that cannot be read is the flag's fault, not the spec's
        # program.path (it was said so); a spec's profile that is missing or
        # bad names the spec and its "profile" key.
        spec = self.write("spec.json", {"program": {"path": "right.py"}, "cases": self.CASES})
        self.write("right.py", SUM)
        p = self.nsbox("judge", spec, "--program", "missing.py", cwd=self.d)
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"nsbox: judge: --program: cannot read 'missing.py'", p.stderr)
        self.assertNotIn(b"program.path", p.stderr)
        # a file too large is said plainly (it read "cannot read '/dev/zero'
        # is larger than ... bytes: File too large")
        p = self.nsbox("judge", spec, "--program", "/dev/zero")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"nsbox: judge: --program: '/dev/zero' is larger than 67108864 bytes\n", p.stderr)
        # read once: a program piped in on /dev/stdin is graded (a check
        # that read it before the cases ran left them an empty program)
        p = subprocess.run([NSBOX, "judge", spec, "--program", "/dev/stdin"], input=SUM.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for profile, says in (("gone.ini", b"profile: '%s/gone.ini': No such file" % self.d.encode()),
                              ("nosuchprofile", b"profile 'nosuchprofile' not found"),
                              ("bad.ini", b"%s/bad.ini:2: [limits] wall_time" % self.d.encode())):
            with self.subTest(profile):
                self.write("bad.ini", "[limits]\nwall_time = bogus\n")
                spec = self.write("spec.json", {"program": {"source": SUM}, "profile": profile,
                                                "cases": self.CASES})
                p = self.nsbox("judge", spec, cwd="/")
                self.assertEqual(p.returncode, 125)
                self.assertIn(("nsbox: judge: spec '%s': " % spec).encode() + says, p.stderr)

    def test_relative_profile_is_found_from_the_spec_folder(self):
        self.write("tight.ini", "[limits]\nwall_time = 300ms\n")
        spec = self.write("spec.json", {"program": {"source": "while True: pass"}, "profile": "tight.ini",
                                        "cases": [{"name": "loops"}]})
        # from another directory: the spec's folder, not the cwd, holds tight.ini
        p = self.nsbox("judge", "--json", spec, cwd="/")
        v = json.loads(p.stdout)
        self.assertEqual(v["cases"][0]["result"]["limit"], "wall_time", p.stderr)
        self.assertLess(v["cases"][0]["result"]["wall_ms"], 3000)

    def test_symlinked_spec_resolves_from_the_link_folder(self):
        # documented (judge.md): the folder of the SPEC path as given, for
        # program.path and a profile path alike
        self.write("right.py", SUM)
        spec = self.write("spec.json", {"program": {"path": "right.py"}, "cases": self.CASES})
        other = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, other)
        os.symlink(spec, os.path.join(other, "spec.json"))
        p = self.nsbox("judge", os.path.join(other, "spec.json"))
        self.assertEqual(p.returncode, 125)
        self.assertIn(("cannot read '%s/right.py'" % other).encode(), p.stderr)
        self.assertEqual(self.nsbox("judge", spec).returncode, 0)

    def test_batch_judge_line_has_counts_and_score(self):
        job = {"id": "j1", "kind": "judge",
               "spec": {"program": {"source": "print(1)"},
                        "cases": [{"name": "a", "weight": 3, "expect": {"stdout": {"equals": "1\n"}}},
                                  {"name": "b", "expect": {"stdout": {"equals": "2\n"}}}]}}
        jobs = self.write("jobs.jsonl", json.dumps(job) + "\n")
        p = self.nsbox("batch", "--quiet", jobs)
        line = json.loads(p.stdout.splitlines()[0])
        self.assertEqual((line["counts"], line["score"]),
                         ({"pass": 1, "fail": 1, "undetermined": 0, "not_run": 0}, 0.75), p.stderr)
