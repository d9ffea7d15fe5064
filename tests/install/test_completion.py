"""bash completion (generated from the option table) driven as bash drives it:
COMP_WORDS/COMP_CWORD set, _nsbox called, COMPREPLY read. The zsh one is
checked for syntax. NSBOX_TABLES is the table dump (dist/tables.c),
NSBOX_BASH_COMPLETION and NSBOX_ZSH_COMPLETION the generated files."""
import os
import shutil
import subprocess
import tempfile
import unittest

BASH = os.environ["NSBOX_BASH_COMPLETION"]
ZSH = os.environ["NSBOX_ZSH_COMPLETION"]
TABLES = os.environ["NSBOX_TABLES"]


def table():
    with open(TABLES, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    commands = [r[1] for r in rows if r[0] == "command"]
    options = {c: sorted("--" + r[1] for r in rows if r[0] == "option" and c in r[3].split(",")) for c in commands}
    return commands, options


class BashCompletion(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def complete(self, *words, env=None):
        """What completing the last of @words offers, sorted."""
        script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); '
                  '_nsbox; printf "%s\\n" "${COMPREPLY[@]}"')
        e = dict(os.environ, HOME=self.dir, XDG_CONFIG_HOME=os.path.join(self.dir, "config"))
        e.update(env or {})
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script, "bash", BASH, "nsbox", *words],
                           cwd=self.dir, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=30)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        return sorted(w for w in r.stdout.split("\n") if w)

    def test_commands(self):
        commands, _ = table()
        self.assertEqual(self.complete(""), sorted(commands + ["help", "--help", "--version"]))
        self.assertEqual(self.complete("ju"), ["judge"])
        # nsbox help COMMAND is that command's help
        self.assertEqual(self.complete("help", ""), sorted(commands))
        self.assertEqual(self.complete("--help", "ba"), ["batch"])
        self.assertEqual(self.complete("help", "judge", ""), [])

    def test_options_per_command_are_the_tables(self):
        commands, options = table()
        extra = {"batch": ["-j"], "python": ["-c"]}
        for c in commands:
            with self.subTest(command=c):
                self.assertEqual(self.complete(c, "-"), sorted(options[c] + extra.get(c, [])))
        self.assertEqual(self.complete("batch", "--re"), ["--result", "--resume"])
        self.assertNotIn("--jobs", self.complete("run", "--"))
        self.assertNotIn("--fail-fast", self.complete("python", "--f"))
        # after other options too
        self.assertEqual(self.complete("judge", "--json", "--memory", "1G", "--fail"), ["--fail-fast"])

    def test_option_values(self):
        self.assertEqual(self.complete("run", "--network", ""), ["loopback", "none"])
        self.assertEqual(self.complete("doctor", "--isolation", "r"), ["reduced"])
        self.assertEqual(self.complete("python", "--memory", ""), [])
        os.mkdir(os.path.join(self.dir, "subdir"))
        open(os.path.join(self.dir, "subfile"), "w").close()
        self.assertEqual(self.complete("test", "--workspace", "sub"), ["subdir"])
        self.assertEqual(self.complete("python", "--stdin", "sub"), ["subdir", "subfile"])

    def test_profile_names(self):
        self.assertEqual(self.complete("python", "--profile", ""), ["minimal", "python"])
        users = os.path.join(self.dir, "config", "nsbox", "profiles")
        os.makedirs(users)
        open(os.path.join(users, "course.ini"), "w").close()
        open(os.path.join(users, "notes.txt"), "w").close()
        open(os.path.join(self.dir, "local.ini"), "w").close()
        self.assertEqual(self.complete("python", "--profile", ""), ["course", "local.ini", "minimal", "python"])
        self.assertEqual(self.complete("profile", "show", "c"), ["course"])
        self.assertEqual(self.complete("profile", ""), ["--help", "show"])

    def test_program_words_are_files(self):
        open(os.path.join(self.dir, "prog.py"), "w").close()
        self.assertEqual(self.complete("run", "--json", "--", "./--js"), [])
        self.assertEqual(self.complete("run", "--", "./pro"), ["./prog.py"])
        self.assertIn("/bin/true", self.complete("run", "--", "/bin/tru"))
        self.assertEqual(self.complete("run", "--", "x", "pro"), ["prog.py"])
        self.assertEqual(self.complete("python", "pro"), ["prog.py"])

    def test_run_command_is_a_path_lookup(self):
        # run's COMMAND without a "/" is looked up on PATH: a file here by
        # its bare name exits 127, so it is not offered; PATH's executables
        # are (a non-executable one is not, nor a relative PATH entry's).
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        for name, mode in (("progtool", 0o755), ("prognotexec", 0o644)):
            with open(os.path.join(bin_dir, name), "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(os.path.join(bin_dir, name), mode)
        open(os.path.join(self.dir, "prog.py"), "w").close()
        os.chmod(os.path.join(self.dir, "prog.py"), 0o755)
        env = {"PATH": "bin:%s:/usr/bin:/bin" % bin_dir}
        self.assertEqual(self.complete("run", "--", "prog", env=env), ["progtool"])
        self.assertEqual(self.complete("run", "--json", "--", "progt", env=env), ["progtool"])
        self.assertIn("true", self.complete("run", "--", "tru", env=env))
        self.assertEqual(self.complete("run", "--", "./pro", env=env), ["./prog.py"])

    def test_unknown_command_offers_nothing(self):
        self.assertEqual(self.complete("pyhton", "--"), [])


class ZshCompletion(unittest.TestCase):
    def test_syntax_and_every_option(self):
        zsh = shutil.which("zsh")
        if not zsh:
            if os.environ.get("NSBOX_TESTS_MUST_RUN") == "1":
                self.fail("zsh is not installed (scripts/deps installs it)")
            self.skipTest("zsh is not installed")
        r = subprocess.run([zsh, "-n", ZSH], stderr=subprocess.PIPE, text=True)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(ZSH, encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.startswith("#compdef nsbox\n"))
        _, options = table()
        for c, opts in options.items():
            part = text[text.index("        %s)\n" % c):]
            part = part[:part.index(";;")]
            for o in opts:
                self.assertRegex(part, r"'\*?%s[=']" % o, "%s %s" % (c, o))


if __name__ == "__main__":
    unittest.main()
