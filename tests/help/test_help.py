"""The interface as a new user meets it: help that teaches, suggestions for
mistyped names, error messages without doubled prefixes or a bare
"Invalid argument", the README's commands run from a fresh clone, and every
relative link in the repository's markdown resolving inside it.

NSBOX: the binary; NSBOX_SOURCE: the source tree (or a copy of it)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

NSBOX = os.environ["NSBOX"]
SOURCE = os.path.realpath(os.environ["NSBOX_SOURCE"])

COMMANDS = ["run", "python", "judge", "test", "batch", "doctor", "image", "profile", "report"]
SANDBOX_COMMANDS = ["run", "python", "judge", "test", "batch"]


def nsbox(*args, **kw):
    return subprocess.run([NSBOX, *args], capture_output=True, timeout=120, **kw)


def sections(text):
    """{'Usage': ..., 'Limits': ..., 'Exit status': ...}: a heading is a line
    ending in ':' with no indent."""
    out, name = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            name = line[:-1]
            out[name] = []
        elif name:
            out[name].append(line)
    return {k: "\n".join(v).strip("\n") for k, v in out.items()}


class Help(unittest.TestCase):
    def test_every_command_teaches(self):
        for cmd in COMMANDS:
            with self.subTest(cmd=cmd):
                p = nsbox(cmd, "--help")
                self.assertEqual((p.returncode, p.stderr), (0, b""))
                text = p.stdout.decode()
                first = text.splitlines()[0]
                # one line of purpose
                self.assertRegex(first, r"^nsbox %s — \S.{15,}$" % cmd)
                self.assertRegex(text, r"\nUsage: nsbox %s " % cmd)
                secs = sections(text)
                self.assertIn("Exit status", secs)
                self.assertRegex(secs["Exit status"], r"(?m)^  \d+")
                self.assertIn("Example", secs)
                self.assertRegex(secs["Example"], r"^  nsbox %s " % cmd)
                self.assertEqual(secs["General"].split()[0], "--help")
                # -h is the same
                self.assertEqual(nsbox(cmd, "-h").stdout.decode(), text)

    def test_options_are_grouped_and_only_the_commands_own(self):
        groups = {"python": ["Profile and isolation", "Limits", "Filesystem", "Program environment", "Output",
                             "General"],
                  "batch": ["Profile and isolation", "Limits", "Filesystem", "Program environment", "Output",
                            "Batch", "General"],
                  "judge": ["Profile and isolation", "Limits", "Filesystem", "Program environment", "Output",
                            "Judge", "General"],
                  "doctor": ["Profile and isolation", "Filesystem", "Program environment", "Output", "General"]}
        for cmd, want in groups.items():
            with self.subTest(cmd=cmd):
                secs = sections(nsbox(cmd, "--help").stdout.decode())
                got = [k for k in secs if k not in ("Usage", "Exit status", "Example")]
                self.assertEqual(got, want)
        secs = sections(nsbox("python", "--help").stdout.decode())
        self.assertIn("--memory SIZE", secs["Limits"])
        self.assertIn("--wall-time DUR", secs["Limits"])
        self.assertIn("--workspace DIR", secs["Filesystem"])
        self.assertIn("--env NAME=VALUE", secs["Program environment"])
        self.assertNotIn("--shard", nsbox("python", "--help").stdout.decode())
        self.assertIn("--shard K/N", sections(nsbox("batch", "--help").stdout.decode())["Batch"])

    def test_every_option_in_the_help_is_accepted(self):
        """The help lists what the command takes: no option in it is refused
        as unknown."""
        d = tempfile.mkdtemp(prefix="nsbox-help.")     # --result=x writes x
        try:
            for cmd in SANDBOX_COMMANDS + ["doctor"]:
                text = nsbox(cmd, "--help").stdout.decode()
                opts = set(re.findall(r"(?m)^  (--[a-z-]+)", text))
                self.assertIn("--help", opts)
                for opt in opts - {"--help", "--json", "--fail-fast"}:
                    p = nsbox(cmd, opt + "=x", cwd=d)
                    self.assertNotIn(b"unknown option", p.stderr, (cmd, opt))
                    self.assertNotIn(b"is an option of", p.stderr, (cmd, opt))
        finally:
            shutil.rmtree(d)

    def test_exit_statuses_as_the_contract_says(self):
        run = sections(nsbox("run", "--help").stdout.decode())["Exit status"]
        for code in ("124", "125", "128+N", "130"):
            self.assertIn("  " + code, run)
        judge = sections(nsbox("judge", "--help").stdout.decode())["Exit status"]
        self.assertEqual(re.findall(r"(?m)^  (\d+)", judge), ["0", "1", "3", "125"])
        doctor = sections(nsbox("doctor", "--help").stdout.decode())["Exit status"]
        self.assertEqual(re.findall(r"(?m)^  (\d+)", doctor), ["0", "1", "125"])

    def test_doctor_json_is_described_as_doctor_prints_it(self):
        text = nsbox("doctor", "--help").stdout.decode()
        line = next(line for line in text.splitlines() if line.strip().startswith("--json"))
        self.assertIn("nsbox.doctor/1", line)
        self.assertNotIn("result object", line)
        p = nsbox("doctor", "--json")
        self.assertEqual(json.loads(p.stdout)["schema"], "nsbox.doctor/1")

    def test_top_level_help(self):
        for args in (["--help"], ["-h"], ["help"]):
            p = nsbox(*args)
            self.assertEqual(p.returncode, 0)
            text = p.stdout.decode()
            self.assertTrue(text.startswith("nsbox — "))
            secs = sections(text)
            self.assertEqual([line.split()[0] for line in secs["Commands"].splitlines()], COMMANDS)
            self.assertIn("Exit status", secs)
            self.assertRegex(secs["Example"], r"^  nsbox ")

    def test_a_synopsis_that_lists_options_lists_them_all(self):
        """doctor's and report's usage lines name their options: none may be
        missing (an option added to the table must reach the synopsis)."""
        for cmd in ("doctor", "report"):
            with self.subTest(cmd=cmd):
                text = nsbox(cmd, "--help").stdout.decode()
                usage = re.search(r"(?m)^Usage: (.*)$", text).group(1)
                opts = set(re.findall(r"(?m)^  (--[a-z-]+)", text)) - {"--help"}
                self.assertTrue(opts)
                for opt in opts:
                    self.assertIn("[" + opt, usage, opt)

    def test_help_names_a_command(self):
        """`nsbox help judge` is judge's help, as `git help commit` is; a
        name that is no command is refused with a suggestion."""
        for args in (["help", "judge"], ["--help", "judge"]):
            p = nsbox(*args)
            self.assertEqual((p.returncode, p.stdout), (0, nsbox("judge", "--help").stdout), args)
        p = nsbox("help", "pyhton")
        self.assertEqual((p.returncode, p.stdout), (125, b""))
        self.assertEqual(p.stderr.decode(), "nsbox: unknown command 'pyhton' (did you mean python?)\n")

    def test_each_commands_json_and_exit_statuses_are_its_own(self):
        def json_line(cmd):
            text = nsbox(cmd, "--help").stdout.decode()
            return next(line for line in text.splitlines() if line.strip().startswith("--json"))
        self.assertIn("changes nothing", json_line("batch"))
        self.assertIn("nsbox.verdict/1", json_line("judge"))
        self.assertIn("nsbox.tests/1", json_line("test"))
        # batch --json does change nothing: the same lines either way
        jobs = b'{"id": 1, "kind": "run", "argv": ["/bin/echo", "hi"]}\n'
        keys = [[sorted(json.loads(line)) for line in nsbox("batch", *a, input=jobs).stdout.splitlines()]
                for a in ([], ["--json"])]
        self.assertEqual(keys[0], keys[1])
        test = sections(nsbox("test", "--help").stdout.decode())["Exit status"]
        self.assertNotIn("cut output", test)
        self.assertIn("every test was skipped", test)
        # an all-skipped harness is undetermined (3), as the help now says
        d = tempfile.mkdtemp(prefix="nsbox-help.")
        try:
            os.mkdir(os.path.join(d, "h"))
            os.mkdir(os.path.join(d, "w"))
            with open(os.path.join(d, "h", "test_skip.py"), "w") as f:
                f.write("import unittest\n\ndef test_a():\n    raise unittest.SkipTest('x')\n")
            self.assertEqual(nsbox("test", "--harness", os.path.join(d, "h"), "--workspace",
                                   os.path.join(d, "w")).returncode, 3)
        finally:
            shutil.rmtree(d)
        top = sections(nsbox("--help").stdout.decode())["Exit status"]
        self.assertEqual(re.findall(r"(?m)^  (\w+)", top)[-2:], ["profile", "report"])

    def test_each_example_runs(self):
        """The example in each help is a command that works, from the source
        tree (batch's example, which writes a file, is the README's and runs
        in Readme)."""
        for cmd in ("run", "python", "judge", "test", "doctor", "profile", "report"):
            example = sections(nsbox(cmd, "--help").stdout.decode())["Example"].strip()
            argv = example.split(" ", 1)[1]
            p = subprocess.run("exec %s %s" % (NSBOX, argv), shell=True, capture_output=True, timeout=120,
                               cwd=SOURCE)
            if cmd == "doctor":
                self.assertEqual(json.loads(p.stdout)["schema"], "nsbox.doctor/1")
            else:
                self.assertEqual(p.returncode, 0, (example, p.stderr))


class Suggestions(unittest.TestCase):
    def usage_error(self, *args):
        p = nsbox(*args)
        self.assertEqual((p.returncode, p.stdout), (125, b""), args)
        err = p.stderr.decode()
        self.assertEqual(err.count("\n"), 1, err)
        self.assertNotIn("Invalid argument", err)
        return err.strip()

    def test_option(self):
        self.assertEqual(self.usage_error("python", "--wall-tme", "2s", "-c", "1"),
                         "nsbox: python: unknown option '--wall-tme' (did you mean --wall-time?)")
        self.assertEqual(self.usage_error("run", "--memroy=1G", "--", "true"),
                         "nsbox: run: unknown option '--memroy' (did you mean --memory?)")
        self.assertEqual(self.usage_error("batch", "--jbos", "2"),
                         "nsbox: batch: unknown option '--jbos' (did you mean --jobs?)")

    def test_command(self):
        self.assertEqual(self.usage_error("pyhton", "x.py"), "nsbox: unknown command 'pyhton' (did you mean python?)")
        self.assertEqual(self.usage_error("dcotor"), "nsbox: unknown command 'dcotor' (did you mean doctor?)")

    def test_odd_words(self):
        """What a user may type where a command or option belongs."""
        self.assertEqual(self.usage_error("--wall-tme", "2s"),
                         "nsbox: '--wall-tme' before the command: options come after it (nsbox COMMAND "
                         "--wall-time ..., and nsbox COMMAND --help lists them)")
        self.assertEqual(self.usage_error("--"),
                         "nsbox: '--' where the command belongs: nsbox COMMAND [OPTIONS] ARGS (nsbox --help "
                         "lists the commands)")
        self.assertEqual(self.usage_error("python", "--=", "-c", "1"),
                         "nsbox: python: unknown option '--=' (nsbox python --help lists the options)")
        self.assertEqual(self.usage_error("run", "--MEMORY", "1G", "--", "true"),
                         "nsbox: run: unknown option '--MEMORY' (did you mean --memory?)")
        self.assertEqual(self.usage_error("python", "--mémory", "1G", "-c", "1"),
                         "nsbox: python: unknown option '--mémory' (did you mean --memory?)")
        err = self.usage_error("python", "--" + "x" * 100000, "-c", "1")
        self.assertTrue(err.endswith("x...' (nsbox python --help lists the options)"), err[-200:])
        self.assertLess(len(err), 200)
        # a very long value is quoted cut: what is allowed still ends the line
        for args, end in ((["--network"], "...': expected none or loopback"),
                          (["--memory"], "...' (expected a number of bytes with an optional unit K, M, G or T, "
                                         "e.g. 512K, 256M, 1G)"),
                          (["--shard"], "...': expected K/N, e.g. 0/4"),
                          (["--profile"], "...' not found: not a built-in (python, minimal), and no "
                                          + "z" * 48 + "....ini in /etc/nsbox/profiles")):
            with self.subTest(option=args[0]):
                p = nsbox("batch", *args, "z" * 5000, "/dev/null")
                self.assertEqual((p.returncode, p.stdout), (125, b""))
                err = p.stderr.decode().strip()
                self.assertIn(end, err)
                self.assertLess(len(err), 300)

    def test_nothing_close(self):
        self.assertEqual(self.usage_error("python", "--frobnicate", "-c", "1"),
                         "nsbox: python: unknown option '--frobnicate' (nsbox python --help lists the options)")
        self.assertEqual(self.usage_error("xyzzy"), "nsbox: unknown command 'xyzzy' (nsbox --help lists the commands)")

    def test_only_that_commands_options(self):
        # --jobs is batch's: python is not offered it, and is told whose it is
        self.assertEqual(self.usage_error("python", "--jobs", "2", "-c", "1"),
                         "nsbox: python: '--jobs' is an option of batch, not of python")
        self.assertEqual(self.usage_error("python", "--jbos", "2", "-c", "1"),
                         "nsbox: python: unknown option '--jbos' (--jobs is an option of batch, not of python)")
        self.assertEqual(self.usage_error("doctor", "--memory", "1G"),
                         "nsbox: doctor: '--memory' is an option of run, python, judge, test and batch, not of doctor")


class Messages(unittest.TestCase):
    """No doubled prefix, and no bare strerror where nsbox knows the cause."""

    def error(self, *args, cwd=None):
        p = nsbox(*args, cwd=cwd)
        self.assertEqual(p.returncode, 125, (args, p.stderr))
        err = p.stderr.decode().strip()
        self.assertNotIn("Invalid argument", err)
        self.assertNotIn("Numerical result out of range", err)
        # "X: X ..." / "--network: --network"
        self.assertIsNone(re.search(r"(--?[a-z-]+|spec|tmpfs|bind): \1\b", err), err)
        return err

    def test_values(self):
        cases = [
            (["python", "--memory", "1x", "-c", "1"],
             "nsbox: --memory: malformed size '1x': unknown unit 'x' (use K, M, G or T)"),
            (["python", "--memory", "lots", "-c", "1"],
             "nsbox: --memory: malformed size 'lots' (expected a number of bytes with an optional unit K, M, G "
             "or T, e.g. 512K, 256M, 1G)"),
            (["python", "--memory", "0", "-c", "1"],
             "nsbox: --memory: '0' is out of range: allowed 1M to 1T (no program starts in less; 0 would turn the limit off)"),
            (["python", "--wall-time", "0", "-c", "1"], "nsbox: --wall-time: duration '0' must be positive"),
            (["python", "--wall-time", "soon", "-c", "1"],
             "nsbox: --wall-time: malformed duration 'soon' (expected a number with a unit ms, s, m or h, "
             "e.g. 500ms, 10s, 2m)"),
            (["python", "--pids", "0", "-c", "1"], "nsbox: --pids: number '0' is out of range (1 to 4194304)"),
            (["python", "--network", "wifi", "-c", "1"], "nsbox: --network: 'wifi': expected none or loopback"),
            (["python", "--isolation", "loose", "-c", "1"],
             "nsbox: --isolation: 'loose': expected strict or reduced"),
            (["python", "--env", "=x", "-c", "1"], "nsbox: --env: '=x': expected NAME=VALUE"),
            (["python", "--tmpfs", "scratch", "-c", "1"], "nsbox: --tmpfs: 'scratch': expected an absolute DST[:SIZE]"),
            (["batch", "--shard", "4/2"], "nsbox: --shard: '4/2': expected K/N with 0 <= K < N"),
            (["batch", "-j", "0"], "nsbox: -j: number '0' is out of range (1 to 4096)"),
        ]
        for args, want in cases:
            with self.subTest(args=args):
                self.assertEqual(self.error(*args), want)

    def test_nsbox_knows_the_cause(self):
        self.assertEqual(self.error("test", "--harness", "/etc/passwd"),
                         "nsbox: test: --harness '/etc/passwd' is not a directory")
        # a syscall name is checked with the flag, which the message names
        self.assertEqual(self.error("python", "--seccomp-deny", "no_such_call", "-c", "1"),
                         "nsbox: --seccomp-deny: 'no_such_call': not a system call of this architecture (as named "
                         "in syscalls(2), e.g. uname, getcpu)")
        self.assertEqual(self.error("python", "--ro-bind", "/nonexistent-src:/data", "-c", "1"),
                         "nsbox: sandbox error (config): --ro-bind '/nonexistent-src': No such file or directory")
        self.assertEqual(self.error("python", "no-such-script.py"),
                         "nsbox: python: script: 'no-such-script.py': No such file or directory")
        self.assertEqual(self.error("python", "-"),
                         "nsbox: python: SCRIPT '-': nsbox reads no program from its standard input; give a script "
                         "file, or -c CODE (--stdin - hands standard input to the program)")
        # a system error keeps its reason: here it is the only one
        p = nsbox("python", "--result", "/nonexistent-dir/r.json", "-c", "1")
        self.assertEqual(p.returncode, 125)
        self.assertEqual(p.stderr.decode().strip(),
                         "nsbox: --result: cannot open '/nonexistent-dir/r.json': No such file or directory")

    def profile(self, text, name="p.ini"):
        """A file @name holding @text in a directory removed after the test."""
        d = tempfile.mkdtemp(prefix="nsbox-help.")
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_profile_values(self):
        path = self.profile("[sandbox]\nnetwork = wifi\n")
        self.assertEqual(self.error("python", "--profile", path, "-c", "1"),
                         "nsbox: %s:2: [sandbox] network: 'wifi': expected none or loopback" % path)

    def test_profile_keys_and_names(self):
        path = self.profile("[limits]\nwall_time = 2s\nmemroy = 1G\n")
        self.assertEqual(self.error("profile", "show", path),
                         "nsbox: %s:3: unknown key 'memroy' in [limits] (did you mean memory?)" % path)
        path = self.profile("[sandbox]\nmemory = 1G\n")
        self.assertEqual(self.error("profile", "show", path),
                         "nsbox: %s:2: key 'memory' belongs in [limits], not in [sandbox]" % path)
        # a profile that is not found says where it was looked for, with no
        # errno text after that; a file here by that name is read as a path
        d = os.path.dirname(self.profile("[limits]\nmemory = 1G\n", "course.conf"))
        err = self.error("python", "--profile", "course.conf", "-c", "1", cwd=d)
        self.assertTrue(err.startswith("nsbox: profile 'course.conf' not found: not a built-in"), err)
        self.assertTrue(err.endswith("(to read the file in this directory, give its path: ./course.conf)"), err)
        self.assertNotIn("No such file", err)
        p = nsbox("profile", "show", "./course.conf", cwd=d)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_judge_spec(self):
        d = tempfile.mkdtemp(prefix="nsbox-help.")
        try:
            path = os.path.join(d, "spec.json")
            with open(path, "w") as f:
                json.dump({"program": {"source": "print(1)"}, "cases": [{"name": "a"}], "extra": 1}, f)
            self.assertEqual(self.error("judge", path),
                             "nsbox: judge: spec '%s': unknown key \"extra\" (expected one of: program, profile, "
                             "limits, cases, image)" % path)
            with open(path, "w") as f:
                json.dump({"program": {"source": "print(1)"}, "cases": [{"name": "a"}],
                           "limits": {"memory": "1k0"}}, f)
            self.assertIn("limits.memory: malformed size '1k0'", self.error("judge", path))
            # a system error keeps its errno text
            p = nsbox("judge", os.path.join(d, "missing.json"))
            self.assertIn(b"No such file or directory", p.stderr)
        finally:
            shutil.rmtree(d)

    def test_batch_line(self):
        p = nsbox("batch", input=b'{"id": "a", "kind": "python", "code": "1", "limits": {"memory": "0"}}\n')
        line = json.loads(p.stdout)
        self.assertEqual(line["status"], "error")
        self.assertNotIn("Invalid argument", line["error"]["message"])
        self.assertNotIn("out of range: Numerical", line["error"]["message"])
        p = nsbox("batch", input=b'{"id": "a", "kind": "python", "cod": "1"}\n{"id": "b", "kind": "pyton"}\n')
        msgs = sorted(json.loads(line)["error"]["message"] for line in p.stdout.splitlines())
        self.assertEqual(msgs, ['line 1: unknown key "cod" for a python job (expected id, kind, code, test_code, '
                               'timeout, limits, stdin, files, fetch_files, image)',
                                'line 2: "kind": unknown kind "pyton" (expected "python", "judge", "run" or "test")'])


def console_commands(readme):
    """The commands of the README's first console block, without the '$ '."""
    m = re.search(r"```console\n(.*?)```", readme, re.S)
    return [line[2:] for line in m.group(1).splitlines() if line.startswith("$ ")]


class Readme(unittest.TestCase):
    def test_top_commands_run_from_a_fresh_clone(self):
        """Each command of the README's top block, run as written from a
        copy of the clone's files (build/nsbox is the built binary)."""
        with open(os.path.join(SOURCE, "README.md")) as f:
            cmds = console_commands(f.read())
        self.assertGreaterEqual(len(cmds), 6)
        d = tempfile.mkdtemp(prefix="nsbox-readme.", dir="/var/tmp")
        try:
            shutil.copytree(os.path.join(SOURCE, "examples"), os.path.join(d, "examples"))
            os.mkdir(os.path.join(d, "build"))
            os.symlink(NSBOX, os.path.join(d, "build", "nsbox"))
            for cmd in cmds:
                with self.subTest(cmd=cmd):
                    self.assertTrue(cmd.startswith("build/nsbox "), cmd)
                    p = subprocess.run(["/bin/sh", "-c", cmd], capture_output=True, timeout=300, cwd=d)
                    self.assertEqual(p.returncode, 0, (cmd, p.stdout[-2000:], p.stderr[-2000:]))
            # and they did what they say
            with open(os.path.join(d, "results.jsonl")) as f:
                results = [json.loads(line) for line in f]
            with open(os.path.join(SOURCE, "examples", "jobs.jsonl")) as f:
                jobs = [json.loads(line) for line in f if line.strip()]
            self.assertEqual(sorted(r["id"] for r in results), sorted(j["id"] for j in jobs))
            self.assertFalse([r for r in results if r.get("status") == "error"], results)
        finally:
            shutil.rmtree(d)

    def test_every_file_the_readme_names_exists(self):
        with open(os.path.join(SOURCE, "README.md")) as f:
            cmds = console_commands(f.read())
        for cmd in cmds:
            for word in cmd.split():
                if word.startswith("examples/"):
                    self.assertTrue(os.path.isfile(os.path.join(SOURCE, word)), word)


LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|^\[[^\]]+\]:\s*(\S+)", re.M)


def markdown_files():
    for root, dirs, files in os.walk(SOURCE):
        rel = os.path.relpath(root, SOURCE)
        dirs[:] = [n for n in dirs if not n.startswith((".", "build")) and n != "node_modules"]
        if rel.split(os.sep)[0].startswith("build"):
            continue
        for n in files:
            if n.endswith(".md"):
                yield os.path.join(root, n)


class Links(unittest.TestCase):
    def test_every_relative_link_resolves_inside_the_repository(self):
        files = list(markdown_files())
        self.assertIn(os.path.join(SOURCE, "README.md"), files)
        self.assertIn(os.path.join(SOURCE, "docs", "contract.md"), files)
        checked, bad = 0, []
        for path in files:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            text = re.sub(r"```.*?```", "", text, flags=re.S)      # code blocks hold no links
            text = re.sub(r"`[^`\n]*`", "", text)                    # nor does inline code
            for m in LINK.finditer(text):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue   # http:, mailto:, an anchor in the same page
                target = target.split("#")[0]
                full = os.path.realpath(os.path.join(os.path.dirname(path), target))
                checked += 1
                if not (full == SOURCE or full.startswith(SOURCE + os.sep)):
                    bad.append("%s: %s leaves the repository" % (os.path.relpath(path, SOURCE), target))
                elif not os.path.exists(full):
                    bad.append("%s: %s does not exist" % (os.path.relpath(path, SOURCE), target))
        self.assertGreater(checked, 10)
        self.assertEqual(bad, [])

    def test_the_checker_catches_a_broken_link(self):
        text = "see [the contract](../shared/CONTRACT.md) and [x](docs/nope.md#a) and [ok](https://x.org)"
        self.assertEqual([m.group(1) for m in LINK.finditer(text)],
                         ["../shared/CONTRACT.md", "docs/nope.md#a", "https://x.org"])


if __name__ == "__main__":
    unittest.main()
