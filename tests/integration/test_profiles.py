"""Profiles (issue #4): a profile file limits a real run, flags override it,
bad profiles exit 125 with FILE:LINE and run nothing, `profile show` round-trips,
every result carries policy_sha256, packages and venvs mount only what is named."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from nsbtest import SandboxTest, skip_or_fail

PYTHON = "/usr/bin/python3"


def show_body(text):
    """`profile show` output without its comment header: what is hashed."""
    return "".join(l for l in text.splitlines(True) if not l.startswith(";"))


class Profiles(SandboxTest):
    def setUp(self):
        super().setUp()
        # not under /tmp: the sandbox owns /tmp, so nothing there can be mounted
        self.dir = tempfile.mkdtemp(prefix="nsbox-prof.", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    # ---- a profile limits a real run; flags override it -------------------

    def test_profile_wall_time_limits_and_flag_overrides(self):
        prof = self.write("p.ini", "[limits]\nwall_time = 1s\n")
        code = "import time; time.sleep(2.5); print('done')"
        p, res = self.run_json("python", "--profile", prof, "-c", code)
        self.assertEqual(res["status"], "limit", res)
        self.assertEqual(res["limit"], "wall_time")
        self.assertEqual(p.returncode, 124)
        p, res = self.run_json("python", "--profile", prof, "--wall-time", "20s", "-c", code)
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], "done\n")

    def test_profile_memory_limits_a_run(self):
        prof = self.write("m.ini", "[limits]\nmemory = 96M\nwall_time = 20s\n")
        code = "b = bytearray(300 << 20); print('allocated')"
        p, res = self.run_json("python", "--profile", prof, "-c", code)
        if res["protections"]["memory"] in ("cgroup1", "cgroup2"):
            self.assertEqual(res["status"], "limit", res)
            self.assertEqual(res["limit"], "memory")
        else:
            self.assertEqual(res["protections"]["memory"], "rlimit")
            self.assertIn("MemoryError", res["stderr"]["text"])
        self.assertNotIn("allocated", res["stdout"]["text"])
        # the same program with the flag raised: it allocates
        p, res = self.run_json("python", "--profile", prof, "--memory", "1G", "-c", code)
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], "allocated\n")

    def test_profile_env_and_mounts(self):
        data = os.path.join(self.dir, "data")
        self.write("data/hello.txt", "from the host\n")
        os.chmod(data, 0o755)
        os.chmod(os.path.join(data, "hello.txt"), 0o644)
        prof = self.write("e.ini", "[env]\nCOURSE = cs101\n[mounts]\nro_bind = %s:/data\n" % data)
        code = "import os; print(os.environ['COURSE'], open('/data/hello.txt').read().strip())"
        p, res = self.run_json("python", "--profile", prof, "-c", code)
        self.assertEqual(res["stdout"]["text"], "cs101 from the host\n", res)
        # a flag's --env replaces the profile's value
        p, res = self.run_json("python", "--profile", prof, "--env", "COURSE=cs102", "-c", code)
        self.assertEqual(res["stdout"]["text"], "cs102 from the host\n", res)

    def test_tmpfs_from_profile(self):
        prof = self.write("t.ini", "[mounts]\ntmpfs = /scratch:4M\n")
        code = ("import os\nopen('/scratch/a', 'w').write('x')\n"
                "st = os.statvfs('/scratch')\nprint(st.f_blocks * st.f_frsize)\n"
                "try:\n    open('/scratch/b', 'wb').write(b'x' * (5 << 20))\n"
                "except OSError as e:\n    print(e.errno)\n")
        p, res = self.run_json("python", "--profile", prof, "-c", code)
        self.assertEqual(res["stdout"]["text"], "%d\n28\n" % (4 << 20), res)   # ENOSPC

    def test_seccomp_deny_from_profile(self):
        prof = self.write("s.ini", "[sandbox]\nseccomp_deny = uname\n")
        code = ("import os\ntry:\n    os.uname(); print('allowed')\n"
                "except PermissionError: print('denied')\n")
        p, res = self.run_json("python", "--profile", prof, "-c", code)
        self.assertEqual(res["stdout"]["text"], "denied\n", res)
        p, res = self.run_json("python", "-c", code)
        self.assertEqual(res["stdout"]["text"], "allowed\n", res)

    def test_unknown_syscall_is_an_error_not_skipped(self):
        """Refused as a bad profile line (FILE:LINE, nothing runs), never a
        rule silently left out."""
        prof = self.write("s.ini", "[sandbox]\nseccomp_deny = no_such_syscall\n")
        p = self.nsbox("python", "--json", "--profile", prof, "-c", "print('ran')")
        self.assertEqual((p.returncode, p.stdout), (125, b""))
        self.assertIn(prof + ":2: [sandbox] seccomp_deny: 'no_such_syscall': not a system call",
                      p.stderr.decode())

    # ---- bad profiles -------------------------------------------------------

    def test_bad_profiles_exit_125_with_file_line_and_run_nothing(self):
        ws = os.path.join(self.dir, "ws")
        os.mkdir(ws)
        os.chmod(ws, 0o777)
        cases = {
            "section": ("[limits]\nmemory = 1M\n[bogus]\n", ":3: unknown section [bogus]"),
            "key": ("[limits]\nmemroy = 1M\n", ":2: unknown key 'memroy' in [limits]"),
            "size": ("[limits]\n\nmemory = lots\n", ":3: [limits] memory: malformed size 'lots'"),
            "duration": ("[limits]\nwall_time = 10 parsecs\n", ":2: [limits] wall_time: malformed duration"),
            "relative": ("[mounts]\nro_bind = data:/data\n", ":2: [mounts] ro_bind: source 'data' is not an absolute path"),
            "missing": ("[mounts]\nro_bind = /nonexistent/nsbox:/data\n", ":2: [mounts] ro_bind: source '/nonexistent/nsbox' does not exist"),
            "owned": ("[mounts]\nbind = /etc:/workspace\n", ":2: [mounts] bind: destination '/workspace' is a path the sandbox owns"),
            "twice": ("[limits]\npids = 8\npids = 9\n", ":3: [limits] pids is given twice"),
            "conflict": ("[mounts]\nro_bind = /etc:/x\nro_bind = /usr:/x\n", ":3: [mounts] ro_bind: destination '/x' is mounted twice"),
        }
        for name, (text, want) in cases.items():
            with self.subTest(name):
                prof = self.write("bad-%s.ini" % name, text)
                marker = os.path.join(ws, "ran-" + name)
                code = "open('/workspace/ran-%s', 'w').write('x')" % name
                p = self.nsbox("python", "--profile", prof, "--workspace", ws, "-c", code)
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertIn(prof + want, p.stderr.decode())
                self.assertFalse(os.path.exists(marker), "the program ran")

    def test_unknown_profile_name(self):
        p = self.nsbox("run", "--profile", "no-such-profile", "--", "/bin/true")
        self.assertEqual(p.returncode, 125)
        self.assertIn("profile 'no-such-profile' not found", p.stderr.decode())

    # ---- profile show, search path, hash ----------------------------------

    def test_show_round_trip(self):
        for name in ("python", "minimal"):
            with self.subTest(name):
                first = self.nsbox("profile", "show", name)
                self.assertEqual(first.returncode, 0, first.stderr)
                saved = self.write(name + "-shown.ini", first.stdout.decode())
                second = self.nsbox("profile", "show", saved)
                self.assertEqual(second.returncode, 0, second.stderr)
                self.assertEqual(show_body(first.stdout.decode()), show_body(second.stdout.decode()))
        text = self.nsbox("profile", "show", "python").stdout.decode()
        self.assertIn("interpreter = /usr/bin/python3\n", text)
        self.assertIn("memory = 256M\n", text)
        self.assertNotIn("[python]", self.nsbox("profile", "show", "minimal").stdout.decode())

    def test_show_bad_profile(self):
        prof = self.write("bad.ini", "[limits]\nnope = 1\n")
        p = self.nsbox("profile", "show", prof)
        self.assertEqual(p.returncode, 125)
        self.assertIn(prof + ":2: unknown key 'nope'", p.stderr.decode())

    def test_user_search_path(self):
        conf = os.path.join(self.dir, "xdg")
        self.write("xdg/nsbox/profiles/course.ini", "[limits]\npids = 17\n")
        env = dict(os.environ, XDG_CONFIG_HOME=conf)
        p = self.nsbox("profile", "show", "course", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("pids = 17\n", p.stdout.decode())
        p, res = self.run_json("run", "--profile", "course", "--", "/bin/true", env=env)
        self.assertEqual(res["status"], "exited", res)
        # a built-in name is never looked up on disk
        self.write("xdg/nsbox/profiles/python.ini", "[limits]\npids = 3\n")
        p = self.nsbox("profile", "show", "python", env=env)
        self.assertIn("pids = 64\n", p.stdout.decode())

    def test_system_dir_before_user_dir(self):
        if os.geteuid() != 0:
            self.skipTest("writing /etc/nsbox/profiles needs root (the root run covers it)")
        name = "nsbox-test-%d" % os.getpid()
        sysdir = "/etc/nsbox/profiles"
        made = [d for d in ("/etc/nsbox", sysdir) if not os.path.isdir(d)]
        os.makedirs(sysdir, exist_ok=True)
        path = os.path.join(sysdir, name + ".ini")
        with open(path, "w") as f:
            f.write("[limits]\npids = 21\n")

        def cleanup():
            os.unlink(path)
            for d in reversed(made):
                os.rmdir(d)
        self.addCleanup(cleanup)
        self.write("xdg/nsbox/profiles/%s.ini" % name, "[limits]\npids = 22\n")
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.dir, "xdg"))
        p = self.nsbox("profile", "show", name, env=env)
        self.assertIn("pids = 21\n", p.stdout.decode(), p.stderr)

    def test_policy_sha256_is_the_hash_of_show(self):
        p, res = self.run_json("run", "--", "/bin/true")
        shown = self.nsbox("profile", "show", "minimal").stdout.decode()
        self.assertEqual(res["policy_sha256"], hashlib.sha256(show_body(shown).encode()).hexdigest())
        p, res = self.run_json("python", "-c", "pass")
        shown = self.nsbox("profile", "show", "python").stdout.decode()
        self.assertEqual(res["policy_sha256"], hashlib.sha256(show_body(shown).encode()).hexdigest())

    def test_policy_sha256_stable_and_changing(self):
        prof = self.write("h.ini", "[limits]\nmemory = 128M\n")
        hashes = []
        for opts in ((), (), ("--memory", "128M"), ("--memory", "129M"), ("--pids", "63")):
            p, res = self.run_json("python", "--profile", prof, *opts, "-c", "pass")
            self.assertEqual(res["status"], "exited", res)
            self.assertRegex(res["policy_sha256"], "^[0-9a-f]{64}$")
            hashes.append(res["policy_sha256"])
        self.assertEqual(hashes[0], hashes[1])          # same policy, same hash
        self.assertEqual(hashes[0], hashes[2])          # a flag that says the same
        self.assertNotEqual(hashes[0], hashes[3])       # any limit changes it
        self.assertNotEqual(hashes[0], hashes[4])
        self.assertNotEqual(hashes[3], hashes[4])

    def test_test_command_carries_the_policy_hash(self):
        src = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
        course = os.path.join(src, "examples", "course")
        p, res = self.run_json("python", "-c", "pass")
        p = self.nsbox("test", "--json", "--harness", os.path.join(course, "harness"),
                       "--workspace", os.path.join(course, "workspace"))
        report = json.loads(p.stdout)
        self.assertEqual(report["result"]["policy_sha256"], res["policy_sha256"])
        prof = self.write("t.ini", "[limits]\npids = 40\n")
        p = self.nsbox("test", "--json", "--profile", prof, "--harness", os.path.join(course, "harness"),
                       "--workspace", os.path.join(course, "workspace"))
        self.assertNotEqual(json.loads(p.stdout)["result"]["policy_sha256"], res["policy_sha256"])

    # ---- judge: default < profile < spec limits < flags --------------------

    def test_judge_precedence_and_hash(self):
        prof = self.write("j.ini", "[limits]\nwall_time = 1s\npids = 20\n")
        spec = {"program": {"source": "import time; time.sleep(2); print('ok')\n"},
                "profile": prof,
                "cases": [{"name": "slow", "expect": {"stdout": {"equals": "ok\n"}}}]}
        path = self.write("spec.json", json.dumps(spec))
        p = self.nsbox("judge", "--json", path)
        v = json.loads(p.stdout)
        self.assertEqual(v["cases"][0]["result"]["limit"], "wall_time", v)   # the spec's profile
        h1 = v["cases"][0]["result"]["policy_sha256"]
        self.assertRegex(h1, "^[0-9a-f]{64}$")
        spec["limits"] = {"wall_time": "10s"}                                # spec over profile
        self.write("spec.json", json.dumps(spec))
        p = self.nsbox("judge", "--json", path)
        v = json.loads(p.stdout)
        self.assertEqual(v["verdict"], "pass", v)
        self.assertNotEqual(v["cases"][0]["result"]["policy_sha256"], h1)
        p = self.nsbox("judge", "--json", "--wall-time", "1s", path)      # flag over spec
        v = json.loads(p.stdout)
        self.assertEqual(v["cases"][0]["result"]["limit"], "wall_time", v)
        self.assertEqual(v["cases"][0]["result"]["policy_sha256"], h1)

    def test_judge_bad_profile_is_bad_spec(self):
        prof = self.write("bad.ini", "[limits]\nmemory = -1\n")
        spec = {"program": {"source": "print(1)\n"}, "profile": prof, "cases": [{"name": "a"}]}
        p = self.nsbox("judge", self.write("spec.json", json.dumps(spec)))
        self.assertEqual(p.returncode, 125)
        self.assertIn(prof + ":2:", p.stderr.decode())

    def test_judge_missing_profile_file_says_why(self):
        prof = os.path.join(self.dir, "no-such-profile.ini")
        spec = {"program": {"source": "print(1)\n"}, "profile": prof, "cases": [{"name": "a"}]}
        p = self.nsbox("judge", self.write("spec.json", json.dumps(spec)))
        self.assertEqual(p.returncode, 125)
        self.assertIn("'%s': No such file or directory" % prof, p.stderr.decode())

    # ---- packages and virtual environments --------------------------------

    def make_packages(self, site):
        for name, value in (("mypkg", 42), ("otherpkg", 7)):
            self.write(os.path.join(site, name, "__init__.py"), "VALUE = %d\n" % value)
        # readable by uid 65534 too; never through a symlink (a venv's
        # bin/python points at the host's interpreter)
        for root, dirs, files in os.walk(self.dir):
            for name, mode in [(d, 0o755) for d in dirs] + [(f, 0o644) for f in files]:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    os.chmod(path, mode)

    IMPORTS = ("import sys\nimport mypkg\nprint(sys.prefix, mypkg.VALUE)\n"
               "try:\n    import otherpkg\n    print('other visible')\n"
               "except ImportError:\n    print('other hidden')\n")

    def test_packages_only_the_named_one(self):
        site = os.path.join(self.dir, "site")
        self.make_packages("site")
        prof = self.write("pk.ini", "[python]\npackages = %s/mypkg\n" % site)
        code = "import sys; sys.path.insert(0, %r)\n" % site + self.IMPORTS
        p, res = self.run_json("python", "--profile", prof, "-c", code)
        self.assertEqual(res["stdout"]["text"], "/usr 42\nother hidden\n", res)

    def test_dist_packages_package(self):
        # meson (a build dependency) is Debian's mesonbuild package in
        # dist-packages, which is on the default sys.path even under -I
        pkg = "/usr/lib/python3/dist-packages/mesonbuild"
        if not os.path.isdir(pkg):
            skip_or_fail(self, "no %s" % pkg)
        code = "import mesonbuild; print(mesonbuild.__path__[0])"
        p, res = self.run_json("python", "--package", pkg, "-c", code)
        self.assertEqual(res["stdout"]["text"], pkg + "\n", res)
        p, res = self.run_json("python", "-c", code)
        self.assertIn("No module named 'mesonbuild'", res["stderr"]["text"], res)
        # under run too: the directory is there, read-only
        p, res = self.run_json("run", "--package", pkg, "--", "/bin/ls", pkg + "/__init__.py")
        self.assertEqual(res["stdout"]["text"], pkg + "/__init__.py\n", res)

    def test_venv_with_one_allowed_package(self):
        venv = os.path.join(self.dir, "venv")
        r = subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], capture_output=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        site = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True).stdout.strip()
        self.make_packages(os.path.relpath(site, self.dir))
        prof = self.write("venv.ini", "[python]\ninterpreter = %s/bin/python\npackages = %s/mypkg\n" % (venv, site))
        p, res = self.run_json("python", "--profile", prof, "-c", self.IMPORTS)
        self.assertEqual(res["stdout"]["text"], "%s 42\nother hidden\n" % venv, res)
        self.assertEqual(res["command"][0], venv + "/bin/python")
        # without the package line the venv runs, and sees neither
        prof = self.write("venv0.ini", "[python]\ninterpreter = %s/bin/python\n" % venv)
        p, res = self.run_json("python", "--profile", prof, "-c", "import mypkg")
        self.assertIn("No module named 'mypkg'", res["stderr"]["text"], res)


if __name__ == "__main__":
    unittest.main()
