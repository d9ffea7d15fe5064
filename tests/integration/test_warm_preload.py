"""Preloaded packages: `[python] preload` / `--preload MODULE` (issue #28,
docs/warm-start.md "Preloaded packages").

- numpy preloaded: a job starts warm with numpy imported, and its
  sys.modules (and sys.path_importer_cache) at its first line is what a cold
  job has after `import numpy`: a module the zygote imported for itself is
  still not there;
- what numpy's import drew once is not shared: two jobs of one zygote draw
  different numpy.random values; threading (imported by numpy) and a
  preload's context variables are as cold;
- a preload that is missing, raises, calls sys.exit, leaves a thread running
  or comes from a writable mount: the jobs run cold, exit 0, and their
  start_reason names the module and why; a directory of sys.path on a
  writable mount (where a job could leave a .pth for the next zygote): no
  zygote, every job of the batch cold;
- a bad module name is a usage error naming the profile's file and line;
- (PreloadRedTeam, the outside review) what a preload leaves in the
  zygote -- buffered output, a child process, an open descriptor, shared
  writable memory, multiprocessing's key and __mp_main__, a linecache entry
  under the jobs' program name -- never reaches, hangs or misleads a job;
  and a job can write nowhere a later zygote's start-up reads code from
  (a sys.path directory not there yet, the interpreter and its pyvenv.cfg,
  a link out of sys.path, the user site, a pycache prefix, LD_PRELOAD).

In the integration suite's discovery, as test_warm_limits.py: CI runs it
as root (cgroup backend) and as uid 65534 (rlimits).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from nsbtest import NSBOX, SandboxTest

PYTHON = "/usr/bin/python3"
NUMPY = "/usr/lib/python3/dist-packages/numpy"
NUMPY_OPTS = ("--preload", "numpy", "--package", NUMPY)

# A job's view of what is imported at its first line, then numpy's answer.
FIRST_LINE = ("import sys\n"
              "first = sorted(sys.modules)\n"
              "cache = sorted(sys.path_importer_cache)\n"
              "import numpy\n"
              "print(' '.join(first))\n"
              "print(' '.join(cache))\n"
              "print(numpy.arange(10).sum())\n")
# The same, cold, after its own import of numpy.
AFTER_IMPORT = ("import sys\n"
                "import numpy\n"
                "print(' '.join(sorted(sys.modules)))\n"
                "print(' '.join(sorted(sys.path_importer_cache)))\n"
                "print(numpy.arange(10).sum())\n")
# threading, tempfile and contextvars as numpy's import leaves them.
THREADS = ("import os, tempfile, threading\n"
           "t = threading.main_thread()\n"
           "print(t.is_alive(), t.native_id == threading.get_native_id() == os.getpid(),"
           " t.ident == threading.get_ident(), threading.active_count(), len(threading._shutdown_locks))\n"
           "x = threading.Thread(target=print, args=('thread ran',))\n"
           "x.start()\n"
           "x.join()\n"
           "print(tempfile._name_sequence)\n"
           "import pl_context\n"
           "print(pl_context.V.get())\n"
           "import atexit\n"
           "atexit.register(print, 'at exit')\n")

# Modules for the refusals, on sys.path through a read-only bind over
# /usr/local/lib/python3.X/dist-packages (on the default sys.path, also -I).
MODULES = {
    "pl_ok": "X = 1\n",
    "pl_pathext": "import sys\nsys.path.append('/opt/nsb-rw')\n",
    "pl_context": "import contextvars\nV = contextvars.ContextVar('V', default=0)\nV.set(5)\n",
    "pl_raise": "raise ValueError('refused at import')\n",
    "pl_exit": "import sys\nsys.exit(3)\n",
    "pl_thread": "import threading, time\nthreading.Thread(target=time.sleep, args=(300,), daemon=True).start()\n",
}


def jsonl(jobs):
    return "".join(json.dumps(j) + "\n" for j in jobs).encode()


def local_site():
    """/usr/local/lib/python3.X/dist-packages, as the interpreter names it."""
    r = subprocess.run([PYTHON, "-I", "-c", "import sys; print('\\n'.join(sys.path))"], capture_output=True,
                       text=True, check=True)
    for p in r.stdout.split():
        if p.startswith("/usr/local/lib/python3") and p.endswith("/dist-packages"):
            return p
    raise AssertionError("no /usr/local/lib/python3.X/dist-packages on %s's sys.path: %s" % (PYTHON, r.stdout))


def module_dir(prefix, modules):
    """A directory holding MODULES (name: source), readable by all; not
    under /tmp: the sandbox owns /tmp, so nothing there can be mounted."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/var/tmp")
    os.chmod(d, 0o755)
    for name, text in modules.items():
        with open(os.path.join(d, name + ".py"), "w") as f:
            f.write(text)
        os.chmod(os.path.join(d, name + ".py"), 0o644)
    return d


class Preload(SandboxTest):
    @classmethod
    def setUpClass(cls):
        cls.dir = module_dir("nsbox-preload.", MODULES)
        cls.site = local_site()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def batch(self, jobs, *opts):
        p = self.nsbox("batch", *opts, "-", input=jsonl(jobs), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace")[-2000:])
        out = {}
        for line in p.stdout.decode().splitlines():
            d = json.loads(line)
            out[d["id"]] = d
        self.assertEqual(sorted(out), sorted(j["id"] for j in jobs), p.stderr.decode(errors="replace")[-2000:])
        return out

    def ok(self, res):
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0),
                         (res.get("error"), res["stderr"]["text"][-3000:], res.get("start_reason")))
        return res["stdout"]["text"]

    def warm(self, res):
        self.assertEqual((res.get("start"), res.get("start_reason")), ("warm", None), res.get("error"))
        return self.ok(res)

    def mods(self, *names):
        return ("--ro-bind", "%s:%s" % (self.dir, self.site)) + tuple(
            a for n in names for a in ("--preload", n))

    # -- what a job starts with

    def test_numpy_job_starts_with_numpy_as_cold_after_its_import(self):
        warm = self.batch([dict(id="w", kind="python", code=FIRST_LINE)], "--warm", "-j", "1", *NUMPY_OPTS)["w"]
        cold = self.batch([dict(id="c", kind="python", code=AFTER_IMPORT)], "-j", "1", "--package", NUMPY)["c"]
        w, c = self.warm(warm).splitlines(), self.ok(cold).splitlines()
        self.assertEqual((w[2], c[2]), ("45", "45"))
        first, cold_mods = set(w[0].split()), set(c[0].split())
        self.assertIn("numpy.random.mtrand", first)
        self.assertNotIn("_nsbox_warm", first)
        self.assertEqual(sorted(first - cold_mods), [], "in sys.modules at a warm job's first line, not cold's")
        self.assertEqual(sorted(cold_mods - first), [], "imported by numpy cold, missing warm")
        self.assertEqual(w[1], c[1], "sys.path_importer_cache differs")

    def test_no_preload_no_numpy(self):
        # the flag changes nothing for a job without it: numpy is not there
        code = "import sys\nprint('numpy' in sys.modules, 'threading' in sys.modules)\n"
        r = self.batch([dict(id="w", kind="python", code=code)], "--warm", "-j", "1", "--package", NUMPY)["w"]
        self.assertEqual(self.warm(r), "False False\n")

    def test_cold_runs_do_not_preload(self):
        code = "import sys\nprint('numpy' in sys.modules)\n"
        r = self.batch([dict(id="c", kind="python", code=code)], "-j", "1", *NUMPY_OPTS)["c"]
        self.assertEqual(self.ok(r), "False\n")
        self.assertEqual(r["start"], "cold")

    # -- what numpy's import drew once is not shared

    def test_a_small_memory_limit_holds_as_cold(self):
        """A warm job's processes are copies of the zygote: what a numpy
        zygote maps and holds is not the job's. Under the rlimit backend
        (uid 65534) it was counted: with --memory 16M, print() ended
        'limit: memory' with no output (the zygote's shared pages in the
        tree's sums), and with those left out it exited 1 with nothing on
        stderr (RLIMIT_AS below what the copy already mapped). Now each job
        ends as it does cold: prints, and 30 MB of its own is refused."""
        hog = "b = bytearray(30 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('held')\n"
        jobs = [{"id": "plain", "kind": "python", "code": "print('plain')\n"},
                {"id": "np", "kind": "python", "code": "import numpy\nprint(numpy.arange(10).sum())\n"},
                {"id": "hog", "kind": "python", "code": hog}]
        warm = self.batch(jobs, "-j", "1", "--warm", "--memory", "16M", *NUMPY_OPTS)
        cold = self.batch(jobs, "-j", "1", "--memory", "16M", *NUMPY_OPTS)
        self.assertEqual(self.warm(warm["plain"]), "plain\n")
        self.assertEqual(self.warm(warm["np"]), "45\n")
        self.assertLess(warm["plain"]["peak_memory_bytes"], 16 << 20, warm["plain"])
        self.assertEqual(warm["hog"]["start"], "warm", warm["hog"].get("start_reason"))
        ends = lambda r: (r["status"], r["limit"], r["exit_code"], r["stdout"]["text"])
        # (numpy's own import, cold, needs more than 16M: a preload's import
        # work is the zygote's, docs/warm-start.md)
        for job in ("plain", "hog"):
            self.assertEqual(ends(warm[job]), ends(cold[job]), (job, warm[job]["stderr"]["text"][-300:]))
        self.assertNotEqual(warm["hog"]["stdout"]["text"], "held\n")

    def test_two_jobs_of_one_zygote_draw_different_numpy_random(self):
        code = "import numpy\nprint(numpy.random.rand(), numpy.random.randint(1 << 30))\n"
        out = self.batch([dict(id=i, kind="python", code=code) for i in range(3)], "--warm", "-j", "1",
                         *NUMPY_OPTS)
        draws = [self.warm(out[i]) for i in range(3)]
        self.assertEqual(len(set(draws)), 3, "numpy's global generator is shared by the jobs: %r" % draws)

    def test_threading_tempfile_and_context_as_cold(self):
        jobs = [dict(id="t", kind="python", code=THREADS)]
        opts = NUMPY_OPTS + self.mods("pl_context")
        warm = self.warm(self.batch(jobs, "--warm", "-j", "1", *opts)["t"])
        cold = self.ok(self.batch(jobs, "-j", "1", *opts)["t"])
        self.assertEqual(warm, cold)
        self.assertEqual(cold, "True True True 1 1\nthread ran\nNone\n5\nat exit\n")

    # -- refusals: cold, exit 0, the reason names the module

    def assert_cold(self, res, *words):
        self.assertEqual(self.ok(res), "ran\n")
        self.assertEqual(res["start"], "cold")
        why = res.get("start_reason") or ""
        for w in words:
            self.assertIn(w, why)

    def test_failing_preloads_run_cold_with_the_reason(self):
        cases = [("nosuchmod", ("preload nosuchmod:", "ModuleNotFoundError: No module named 'nosuchmod'")),
                 ("pl_raise", ("preload pl_raise:", "ValueError: refused at import")),
                 ("pl_exit", ("preload pl_exit:", "SystemExit: 3")),
                 ("pl_thread", ("preload pl_thread:", "2 threads", "single-threaded"))]
        for name, words in cases:
            with self.subTest(name):
                out = self.batch([dict(id=i, kind="python", code="print('ran')") for i in range(2)],
                                 "--warm", "-j", "1", *self.mods("pl_ok", name))
                for i in range(2):
                    self.assert_cold(out[i], *words)

    def test_a_preload_from_a_writable_mount_runs_cold(self):
        # a read-write bind is in the zygote's tree (the jobs share it): a
        # job could write the module the next zygote imports. pl_pathext
        # puts one on sys.path (after the zygote checked sys.path itself).
        rw = tempfile.mkdtemp(prefix="nsbox-preload-rw.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, rw, ignore_errors=True)
        os.chmod(rw, 0o755)
        with open(os.path.join(rw, "pl_w.py"), "w") as f:
            f.write("X = 1\n")
        os.chmod(os.path.join(rw, "pl_w.py"), 0o644)
        out = self.batch([dict(id=0, kind="python", code="print('ran')")], "--warm", "-j", "1",
                         "--bind", rw + ":/opt/nsb-rw", *self.mods("pl_pathext", "pl_w"))
        self.assert_cold(out[0], "preload pl_w:", "writable mount", "/opt/nsb-rw/pl_w.py")

    def test_a_writable_sys_path_runs_cold_for_the_whole_batch(self):
        # A read-write bind over a site directory: job 0 leaves a .pth there
        # (code a zygote's start-up would run, without seccomp or Landlock);
        # no zygote ever starts on it, with or without a preload: every job
        # runs cold, and the .pth runs only in cold jobs (pid 2), never in a
        # zygote (pid 3).
        rw = tempfile.mkdtemp(prefix="nsbox-preload-rw.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, rw, ignore_errors=True)
        os.chmod(rw, 0o777)
        pth = ("import os; open(%r + '/ran-' + str(os.getpid()), 'w').close()\n"
               % self.site)
        plant = "open(%r, 'w').write(%r)\nprint('ran')\n" % (self.site + "/x.pth", pth)
        jobs = [dict(id=0, kind="python", code=plant)] + [dict(id=i, kind="python", code="print('ran')")
                                                          for i in range(1, 4)]
        out = self.batch(jobs, "--warm", "--warm-rotate", "1", "-j", "1", "--bind", "%s:%s" % (rw, self.site))
        for i in range(4):
            self.assert_cold(out[i], "sys.path: %s is on a writable mount" % self.site)
        self.assertNotIn("ran-3", os.listdir(rw), "a zygote ran the .pth a job wrote")

    # -- the policy key

    def test_bad_module_name_in_a_profile_is_a_usage_error(self):
        with tempfile.NamedTemporaryFile("w", suffix=".ini", dir="/var/tmp", delete=False) as f:
            f.write("[python]\npreload = numpy\npreload = numpy-x\n")
        self.addCleanup(os.unlink, f.name)
        os.chmod(f.name, 0o644)
        p = self.nsbox("batch", "--warm", "--profile", f.name, "-", input=b"")
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 125, err)
        self.assertIn("%s:3:" % f.name, err)
        self.assertIn("[python] preload: 'numpy-x': not a module name", err)

    def test_profile_show_and_policy_sha256(self):
        with tempfile.NamedTemporaryFile("w", suffix=".ini", dir="/var/tmp", delete=False) as f:
            f.write("[python]\npreload = numpy\npreload = xml.etree.ElementTree\n")
        self.addCleanup(os.unlink, f.name)
        os.chmod(f.name, 0o644)
        p = self.nsbox("profile", "show", f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"\n[python]\n", p.stdout)
        self.assertIn(b"\npreload = numpy\npreload = xml.etree.ElementTree\n", p.stdout)
        sha = {}
        for opts in ((), ("--preload", "numpy")):
            out = self.batch([dict(id=0, kind="python", code="print('ran')")], "-j", "1", *opts)
            sha[opts] = out[0]["policy_sha256"]
        self.assertNotEqual(sha[()], sha[("--preload", "numpy")])


# ---- red team of #28's preloads (outside review): what a preload or a job
# could still do to other jobs through the zygote.
RED_MODULES = {
    # import-time output left in the zygote's buffers: Python's stdout and
    # stderr (no newline: block- and line-buffered) and C's stdio
    "pl_out": ("import sys, ctypes\n"
               "sys.stdout.write('preload-stdout ')\n"
               "sys.stderr.write('preload-stderr ')\n"
               "ctypes.CDLL(None).printf(b'preload-c-stdio ')\n"),
    # a helper process started at import (a server, a tracker)
    "pl_child": ("import subprocess, sys\n"
                 "P = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(25)'])\n"),
    # a file held open at import (a log handler, a config file)
    "pl_fd": "F = open(__file__)\n",
    # memory mapped shared (anonymous mmap is MAP_SHARED)
    "pl_mmap": "import mmap\nM = mmap.mmap(-1, 4096)\n",
}


class PreloadRedTeam(SandboxTest):
    """What a preload leaves in the zygote (buffered output, a child
    process, an open descriptor) never reaches, hangs or misleads a job; a
    job can write nowhere a later zygote's start-up reads code from."""

    @classmethod
    def setUpClass(cls):
        cls.dir = module_dir("nsbox-preload-red.", RED_MODULES)
        cls.site = local_site()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    batch, ok, warm, mods, assert_cold = Preload.batch, Preload.ok, Preload.warm, Preload.mods, Preload.assert_cold

    def rw_dir(self):
        rw = tempfile.mkdtemp(prefix="nsbox-preload-rw.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, rw, ignore_errors=True)
        os.chmod(rw, 0o777)
        return rw

    def test_what_a_preload_printed_is_in_no_job(self):
        # `this` prints the Zen at import; pl_out leaves text in every
        # buffer. Before: every warm job's stdout began with the Zen and
        # ended with 'preload-c-stdio ', its stderr held 'preload-stderr '.
        out = self.batch([dict(id=i, kind="python", code="print('ran')") for i in range(2)],
                         "--warm", "-j", "1", *self.mods("this", "pl_out"))
        for i in range(2):
            self.assertEqual(self.warm(out[i]), "ran\n")
            self.assertEqual(out[i]["stderr"]["text"], "")

    def test_a_preload_that_leaves_a_child_running_runs_cold(self):
        # Before: the jobs ran warm and the batch waited for the child to
        # end (25 s) before it ended.
        p = subprocess.run([NSBOX, "batch", "--warm", "-j", "1", *self.mods("pl_child"), "-"],
                           input=jsonl([dict(id=0, kind="python", code="print('ran')")]), capture_output=True,
                           timeout=120)
        res = json.loads(p.stdout.decode().splitlines()[0])
        self.assert_cold(res, "preload pl_child:", "child process")
        self.assertNotIn("25.", p.stderr.decode())   # "1 line in 25.1s"

    def test_a_preload_that_holds_a_file_runs_cold(self):
        # A job starts with every descriptor but 0-2 closed: the preload's
        # file object would be left on a closed (or the job's own, reused)
        # descriptor. Before: warm, OSError: [Errno 9] Bad file descriptor.
        code = ("import pl_fd\npl_fd.F.seek(0)\n"
                "print('ran' if pl_fd.F.read().startswith('F = open') else 'another file')\n")
        out = self.batch([dict(id=0, kind="python", code=code)], "--warm", "-j", "1", *self.mods("pl_fd"))
        self.assert_cold(out[0], "preload pl_fd:", "file descriptor")

    def test_a_sys_path_entry_a_job_could_create_runs_cold(self):
        # PYTHONPATH (honoured without -I) names a directory not there yet
        # on a read-write bind: job 0 makes it and leaves a sitecustomize.
        # Before: the next zygote (pid 3, no seccomp, no Landlock) ran it;
        # it could have replaced the writable-mount check and every later
        # job's print.
        rw = self.rw_dir()
        site = ("import os; open('/opt/nsb-rw/ran-' + str(os.getpid()), 'w').close()\n")
        plant = ("import os\nos.makedirs('/opt/nsb-rw/lib')\n"
                 "open('/opt/nsb-rw/lib/sitecustomize.py', 'w').write(%r)\nprint('ran')\n" % site)
        jobs = [dict(id=0, kind="python", code=plant)] + [dict(id=i, kind="python", code="print('ran')")
                                                          for i in (1, 2)]
        out = self.batch(jobs, "--warm", "--warm-rotate", "1", "-j", "1", "--interpreter-args", "-B",
                         "--env", "PYTHONPATH=/opt/nsb-rw/lib", "--bind", rw + ":/opt/nsb-rw")
        for i in range(3):
            self.assert_cold(out[i], "sys.path: /opt/nsb-rw/lib is on a writable mount")
        self.assertNotIn("ran-3", os.listdir(rw), "a zygote ran the sitecustomize a job wrote")

    def test_an_interpreter_on_a_writable_mount_runs_cold(self):
        # The interpreter (a link to python3) in a read-write bind: job 0
        # leaves a pyvenv.cfg beside it and a .pth in the site directory it
        # names. Before: the next zygote ran the .pth (pid 3).
        rw = self.rw_dir()
        os.mkdir(os.path.join(rw, "bin"))
        os.symlink(os.path.realpath(PYTHON), os.path.join(rw, "bin", "python3"))
        ver = "python%d.%d" % sys.version_info[:2]
        pth = "import os; open(%r + '/ran-' + str(os.getpid()), 'w').close()\n" % rw
        plant = ("import os\nos.makedirs(%r)\nopen(%r, 'w').write('home = /usr/bin\\n')\n"
                 "open(%r, 'w').write(%r)\nprint('ran')\n"
                 % ("%s/lib/%s/site-packages" % (rw, ver), rw + "/pyvenv.cfg",
                    "%s/lib/%s/site-packages/x.pth" % (rw, ver), pth))
        jobs = [dict(id=0, kind="python", code=plant)] + [dict(id=i, kind="python", code="print('ran')")
                                                          for i in (1, 2)]
        out = self.batch(jobs, "--warm", "--warm-rotate", "1", "-j", "1", "--interpreter", rw + "/bin/python3",
                         "--bind", "%s:%s" % (rw, rw))
        self.assert_cold(out[0], "is on a writable mount", rw + "/bin")
        self.assertNotIn("ran-3", os.listdir(rw), "a zygote ran the .pth a job wrote")

    def test_a_link_out_of_sys_path_to_a_writable_mount_runs_cold(self):
        # Debian's /usr/lib/python3.X/sitecustomize.py is a link to
        # /etc/python3.X/sitecustomize.py, not in the sandbox: a read-write
        # bind there, and job 0 writes the file the link names. Before: the
        # next zygote (pid 3) ran it, every directory of sys.path being
        # read-only.
        ver = "python%d.%d" % sys.version_info[:2]
        link = "/usr/lib/%s/sitecustomize.py" % ver
        if os.path.realpath(link) != "/etc/%s/sitecustomize.py" % ver:
            self.skipTest("%s is not Debian's link to /etc/%s" % (link, ver))
        rw = self.rw_dir()
        site = "import os; open('/etc/%s/ran-' + str(os.getpid()), 'w').close()\n" % ver
        plant = "open('/etc/%s/sitecustomize.py', 'w').write(%r)\nprint('ran')\n" % (ver, site)
        jobs = [dict(id=0, kind="python", code=plant)] + [dict(id=i, kind="python", code="print('ran')")
                                                          for i in (1, 2)]
        out = self.batch(jobs, "--warm", "--warm-rotate", "1", "-j", "1", "--bind", "%s:/etc/%s" % (rw, ver))
        for i in range(3):
            self.assert_cold(out[i], "sitecustomize", "is on a writable mount")
        self.assertNotIn("ran-3", os.listdir(rw), "a zygote ran the sitecustomize a job wrote")

    def test_multiprocessing_authkey_is_drawn_per_job(self):
        # multiprocessing draws its authentication key at import. Before:
        # every job of a zygote that preloaded it had the same key.
        code = "import multiprocessing\nprint(multiprocessing.current_process().authkey.hex())\n"
        out = self.batch([dict(id=i, kind="python", code=code) for i in range(3)], "--warm", "-j", "1",
                         "--preload", "multiprocessing")
        keys = [self.warm(out[i]) for i in range(3)]
        self.assertEqual(len(set(keys)), 3, "the jobs share multiprocessing's authkey: %r" % keys)
        self.assertEqual(len(keys[0]), 65)

    def test_a_job_with_multiprocessing_preloaded_exits_as_cold(self):
        # multiprocessing's import names the zygote's __main__ (the
        # harness) `__mp_main__`. Before: every job exited 1 with nothing on
        # stderr (its exit cleared the harness's globals as the job's).
        code = "import sys\nprint(sys.modules['__mp_main__'] is sys.modules['__main__'])\n"
        out = self.batch([dict(id=i, kind="python", code=code) for i in range(2)], "--warm", "-j", "1",
                         "--preload", "multiprocessing")
        for i in range(2):
            self.assertEqual(self.warm(out[i]), "True\n")
            self.assertEqual(out[i]["stderr"]["text"], "")

    def test_a_job_warning_shows_its_own_line_after_a_preload_warned(self):
        # imp's import warns (DeprecationWarning, shown for __main__: the
        # zygote's file, which runs as /program/main.py). Before: a job's
        # own warning at line 2 showed the zygote's line 2
        # (`_NSBOX_PRELOAD = ("imp", )`), not its own.
        code = "import warnings\nwarnings.warn('job warning here')\n"
        out = self.batch([dict(id=0, kind="python", code=code)], "--warm", "-j", "1", "--preload", "imp")
        self.assertEqual(self.warm(out[0]), "")
        self.assertEqual(out[0]["stderr"]["text"], "/program/main.py:2: UserWarning: job warning here\n"
                                                  "  warnings.warn('job warning here')\n")

    def test_a_pycache_prefix_on_a_writable_mount_runs_cold(self):
        # -X pycache_prefix (allowed with -I): bytecode is read from there,
        # -B only stops writing it. Job 0 forges json's .pyc. Before: the
        # next zygote (pid 3) ran it when it preloaded json.
        rw = self.rw_dir()
        plant = ("import importlib.util, importlib._bootstrap_external as be, json, os\n"
                 "path = json.__file__\n"
                 "st = os.stat(path)\n"
                 "src = open(path, 'rb').read() + b'\\nopen(\"/opt/nsb-rw/ran-%d\" % __import__(\"os\").getpid(), \"w\")\\n'\n"
                 "pyc = importlib.util.cache_from_source(path)\n"
                 "os.makedirs(os.path.dirname(pyc), exist_ok=True)\n"
                 "open(pyc, 'wb').write(be._code_to_timestamp_pyc(compile(src, path, 'exec'), st.st_mtime, st.st_size))\n"
                 "print('ran')\n")
        jobs = [dict(id=0, kind="python", code=plant)] + [dict(id=i, kind="python", code="print('ran')")
                                                          for i in (1, 2)]
        out = self.batch(jobs, "--warm", "--warm-rotate", "1", "-j", "1", "--preload", "json",
                         "--interpreter-args", "-I -B -X pycache_prefix=/opt/nsb-rw/pyc", "--bind", rw + ":/opt/nsb-rw")
        for i in range(3):
            self.assert_cold(out[i], "sys.pycache_prefix: /opt/nsb-rw/pyc is on a writable mount")
        self.assertNotIn("ran-3", os.listdir(rw), "a zygote ran the bytecode a job wrote")

    def test_a_user_site_on_a_writable_mount_runs_cold(self):
        # Without -s, site adds ~/.local/lib/pythonX.Y/site-packages once it
        # exists: HOME on a shared --workspace. Before: job 0's .pth there
        # ran in the next zygote (pid 3).
        rw = self.rw_dir()
        plant = ("import os, site\nos.makedirs(site.USER_SITE)\n"
                 "open(site.USER_SITE + '/x.pth', 'w').write("
                 "'import os; open(\"/workspace/ran-%d\" % os.getpid(), \"w\").close()\\n')\nprint('ran')\n")
        jobs = [dict(id=0, kind="python", code=plant)] + [dict(id=i, kind="python", code="print('ran')")
                                                          for i in (1, 2)]
        out = self.batch(jobs, "--warm", "--warm-rotate", "1", "-j", "1", "--interpreter-args", "-B",
                         "--workspace", rw, "--env", "HOME=/workspace")
        for i in range(3):
            self.assert_cold(out[i], "the user site directory: /workspace/.local/")
        self.assertNotIn("ran-3", os.listdir(rw), "a zygote ran the .pth a job wrote")

    def test_a_loader_path_on_a_writable_mount_runs_cold(self):
        # --env LD_PRELOAD naming a library not there yet on a read-write
        # bind. Before: job 0 wrote one there, and the next zygote (pid 3,
        # no seccomp, no Landlock) loaded it and served every later job
        # (shown with a library whose constructor wrote /shared/ran-3).
        rw = self.rw_dir()
        plant = "open('/opt/nsb-rw/x.so', 'wb').write(b'not a library')\nprint('ran')\n"
        jobs = [dict(id=0, kind="python", code=plant)] + [dict(id=i, kind="python", code="print('ran')")
                                                          for i in (1, 2)]
        for var in ("LD_PRELOAD=/opt/nsb-rw/x.so", "LD_LIBRARY_PATH=/usr/lib:/opt/nsb-rw/lib"):
            with self.subTest(var):
                out = self.batch(jobs, "--warm", "--warm-rotate", "1", "-j", "1", "--env", var,
                                 "--bind", rw + ":/opt/nsb-rw")
                for i in range(3):
                    self.assertEqual(out[i]["start"], "cold", out[i].get("start_reason"))
                    self.assertIn("%s: /opt/nsb-rw/" % var.partition("=")[0], out[i]["start_reason"])

    def test_a_preload_that_maps_shared_memory_runs_cold(self):
        # mmap.mmap(-1, n) is MAP_SHARED: every job's fork shares its pages.
        # Before: job 1 of one zygote read b'secret-A', written by job 0.
        code = ("import pl_mmap\nseen = bytes(pl_mmap.M[:8])\npl_mmap.M[:8] = b'secret-A'\n"
                "print('ran' if seen == bytes(8) else 'saw %r' % seen)\n")
        out = self.batch([dict(id=i, kind="python", code=code) for i in range(2)], "--warm", "-j", "1",
                         *self.mods("pl_mmap"))
        for i in range(2):
            self.assert_cold(out[i], "preload pl_mmap:", "shared and writable")
