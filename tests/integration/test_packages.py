"""Named packages work, unnamed ones are absent, interpreters anywhere work
(issue #26).

- a `packages` entry brings its native closure: docs/profiles.md's numpy
  course runs as the docs write it (the INI is read from the docs here, so
  the two cannot drift), BLAS included (libblas.so.3 -> /etc/alternatives ->
  .../blas/libblas.so.3); a wheel's bundled `*.libs` directory, found through
  RUNPATH $ORIGIN, comes whole (with its data files);
- the closure cache's key follows the package list, and the cache is not
  used under a directory others can rename in;
- a package in a site/dist-packages directory under the standard library is
  an ImportError unless named (Debian's python3-numpy puts one there);
- venvs in a 0700 directory, --copies venvs and conda-style trees (libpython
  through RUNPATH $ORIGIN/../lib, site-packages inside lib/python3.X) run.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

from nsbtest import SandboxTest, skip_or_fail

PYTHON = "/usr/bin/python3"
NUMPY = "/usr/lib/python3/dist-packages/numpy"
SOURCE = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))

# what a small BLAS-backed computation gives; compared with bare python's answer
BLAS_CODE = ("import numpy\n"
             "a = numpy.arange(36, dtype=float).reshape(6, 6)\n"
             "print(numpy.arange(10).sum(), numpy.dot(a, a.T).sum(), numpy.linalg.det(a + numpy.eye(6)).round(6))\n")


def docs_numpy_ini():
    """The INI of docs/profiles.md's 'Example: a course that allows numpy'."""
    with open(os.path.join(SOURCE, "docs", "profiles.md")) as f:
        text = f.read()
    m = re.search(r"^## Example: a course that allows numpy\n.*?^```ini\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise AssertionError("docs/profiles.md has no numpy course example")
    return m.group(1)


def bare(code, interpreter=PYTHON):
    r = subprocess.run([interpreter, "-I", "-B", "-c", code], capture_output=True, text=True,
                       env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1"})
    if r.returncode != 0:
        raise AssertionError("bare %s failed: %s" % (interpreter, r.stderr[-2000:]))
    return r.stdout


class Packages(SandboxTest):
    def setUp(self):
        super().setUp()
        # not under /tmp: the sandbox owns /tmp, so nothing there can be mounted
        self.dir = tempfile.mkdtemp(prefix="nsbox-pkg.", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def need_numpy(self):
        if not os.path.isfile(os.path.join(NUMPY, "__init__.py")):
            skip_or_fail(self, "python3-numpy is not installed (scripts/deps)")

    def need(self, path, why):
        if not os.path.exists(path):
            skip_or_fail(self, "no %s (%s; scripts/deps)" % (path, why))

    def write(self, name, text, mode=0o644):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    def cc(self, *args):
        gcc = shutil.which("gcc") or shutil.which("cc")
        if not gcc:
            skip_or_fail(self, "no C compiler")
        r = subprocess.run([gcc, *args], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    # ---- a named package brings its native closure ------------------------

    def test_docs_numpy_course_runs_as_written(self):
        self.need_numpy()
        prof = self.write("numpy-course.ini", docs_numpy_ini())
        p, res = self.run_json("python", "--profile", prof, "-c", "import numpy; print(numpy.arange(10).sum())")
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], "45\n", res["stderr"]["text"][-2000:])
        # BLAS and LAPACK (numpy.dot, numpy.linalg) load through /etc/alternatives
        want = bare(BLAS_CODE)
        self.assertTrue(want, "bare python3 could not run the numpy computation")
        p, res = self.run_json("python", "--profile", prof, "-c", BLAS_CODE)
        self.assertEqual(res["stdout"]["text"], want, res["stderr"]["text"][-2000:])

    def test_unnamed_numpy_is_module_not_found(self):
        self.need_numpy()
        code = ("try:\n    import numpy\n    print('imported', getattr(numpy, '__file__', None), list(numpy.__path__))\n"
                "except ImportError as e:\n    print(type(e).__name__, e.name)\n"
                "import sys, os\nprint([p for p in sys.path if p.endswith('-packages') and os.listdir(p)])\n")
        p, res = self.run_json("python", "-c", code)
        self.assertEqual(res["stdout"]["text"], "ModuleNotFoundError numpy\n[]\n", res)
        # named, it is the real package, not a namespace of fragments
        p, res = self.run_json("python", "--package", NUMPY, "-c", "import numpy; print(numpy.__file__)")
        self.assertEqual(res["stdout"]["text"], NUMPY + "/__init__.py\n", res)

    def stdlib_packages_dir(self):
        stdlib = subprocess.run([PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"],
                                capture_output=True, text=True).stdout.strip()
        for d in ("dist-packages", "site-packages"):
            if os.path.isdir(os.path.join(stdlib, d)) and os.listdir(os.path.join(stdlib, d)):
                return os.path.join(stdlib, d)
        skip_or_fail(self, "%s holds no dist-packages (python3-numpy puts one there; scripts/deps)" % stdlib)

    def test_reduced_isolation_runs_with_a_stdlib_holding_packages(self):
        # reduced isolation grants the stdlib whole by Landlock (no mount
        # namespace covers its dist-packages: docs/profiles.md says so)
        self.stdlib_packages_dir()
        p, res = self.run_json("python", "--isolation", "reduced", "-c", "import json, ssl; print('ok')")
        self.assertEqual(res["stdout"]["text"], "ok\n", res)

    def test_stdlib_packages_dir_is_an_empty_read_only_cover(self):
        # the stdlib is one bind and its dist-packages one empty tmpfs (not
        # ~200 mounts, one per stdlib entry: +5 ms a cold start); the
        # program can neither see nor write into it; a package named inside
        # it is mounted on top of the cover
        hidden = self.stdlib_packages_dir()
        code = ("import os, errno\nd = %r\nprint(sorted(os.listdir(d)))\n"
                "try:\n    open(os.path.join(d, 'x.py'), 'w')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])\n"
                "with open('/proc/self/mountinfo') as f:\n    m = [l.split() for l in f]\n"
                "print([(l[l.index('-') + 1], sorted({'ro', 'nosuid', 'nodev', 'noexec'} - set(l[5].split(','))))"
                " for l in m if l[4] == d], len(m) < 60)\n" % hidden)
        p, res = self.run_json("python", "-c", code)
        self.assertEqual(res["stdout"]["text"], "[]\nEROFS\n[('tmpfs', [])] True\n", res)
        named = os.path.join(hidden, sorted(os.listdir(hidden))[0])
        code = "import os; print(sorted(os.listdir(%r)), sorted(os.listdir(%r)))" % (hidden, named)
        p, res = self.run_json("python", "--package", named, "-c", code)
        self.assertEqual(res["stdout"]["text"], "%s %s\n" % ([os.path.basename(named)], sorted(os.listdir(named))),
                         res)

    def make_wheel_like(self, site):
        """site/fakepkg: a module loading core/_native.so, which needs
        libfake.so from site/fakepkg.libs through RUNPATH
        ${ORIGIN}/../../fakepkg.libs (how auditwheel lays out numpy.libs, in
        ld.so's other spelling; the conda tree below uses $ORIGIN), and
        libfake reads a data file there."""
        src = self.write("src/fake.c", '#include <stdio.h>\n'
                         'int fake_value(const char *dir) { char p[4096]; int v = 0; FILE *f;\n'
                         '  snprintf(p, sizeof p, "%s/../fakepkg.libs/data.txt", dir);\n'
                         '  if (!(f = fopen(p, "r"))) return -1;\n'
                         '  if (fscanf(f, "%d", &v) != 1) v = -2; fclose(f); return v; }\n')
        nat = self.write("src/native.c", "int fake_value(const char *dir);\n"
                         "int native_value(const char *dir) { return fake_value(dir) + 1; }\n")
        libs = os.path.join(site, "fakepkg.libs")
        os.makedirs(libs)
        self.cc("-shared", "-fPIC", "-o", os.path.join(libs, "libfake-1a2b.so"), "-Wl,-soname,libfake-1a2b.so", src)
        self.write(os.path.relpath(os.path.join(libs, "data.txt"), self.dir), "41\n")
        pkg = os.path.join(site, "fakepkg")
        os.makedirs(os.path.join(pkg, "core"))
        self.cc("-shared", "-fPIC", "-o", os.path.join(pkg, "core", "_native.so"), nat,
                "-L" + libs, "-l:libfake-1a2b.so", "-Wl,--enable-new-dtags,-rpath,${ORIGIN}/../../fakepkg.libs")
        self.write(os.path.relpath(os.path.join(pkg, "__init__.py"), self.dir),
                   "import ctypes, os\n"
                   "_dir = os.path.join(os.path.dirname(__file__), 'core')\n"
                   "VALUE = ctypes.CDLL(os.path.join(_dir, '_native.so')).native_value(_dir.encode() + b'/..')\n")
        for root, dirs, files in os.walk(site):
            for name in dirs + files:
                os.chmod(os.path.join(root, name), 0o755)
        return pkg

    def test_wheel_bundled_libs_dir_comes_whole(self):
        site = os.path.join(self.dir, "site")
        pkg = self.make_wheel_like(site)
        code = "import sys; sys.path.insert(0, %r)\nimport fakepkg; print(fakepkg.VALUE)\n" % site
        self.assertEqual(bare(code), "42\n")
        # only fakepkg is named: its .libs sibling (library and data file)
        # comes with it, found through _native.so's RUNPATH
        p, res = self.run_json("python", "--package", pkg, "-c", code)
        self.assertEqual(res["stdout"]["text"], "42\n", res)

    def test_closure_cache_key_follows_the_package_list(self):
        # first a list without the native package (cached), then one with it:
        # a key that ignored the list would serve the first closure (no .libs)
        site = os.path.join(self.dir, "site")
        pkg = self.make_wheel_like(site)
        plain = os.path.join(site, "plainpkg")
        self.write(os.path.relpath(os.path.join(plain, "__init__.py"), self.dir), "VALUE = 1\n")
        os.chmod(plain, 0o755)
        code = ("import sys; sys.path.insert(0, %r)\nimport plainpkg\n"
                "try:\n    import fakepkg; print(fakepkg.VALUE)\nexcept OSError as e:\n    print('OSError')\n"
                "except ImportError:\n    print('absent')\n" % site)
        cache = os.path.join(self.dir, "cache")
        os.mkdir(cache, 0o700)
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        # a walk is cached only if nothing it saw changed in the second
        # before it began (ctime cannot be set back): let the tree age
        time.sleep(2.2)
        p, res = self.run_json("python", "--package", plain, "-c", code, env=env)
        self.assertEqual(res["stdout"]["text"], "absent\n", res)
        stored = os.listdir(os.path.join(cache, "nsbox"))
        self.assertEqual(len(stored), 2, stored)    # the interpreter's closure, the package list's
        p, res = self.run_json("python", "--package", plain, "--package", pkg, "-c", code, env=env)
        self.assertEqual(res["stdout"]["text"], "42\n", res)
        self.assertEqual(len(os.listdir(os.path.join(cache, "nsbox"))), 3)

    def test_closure_cache_refused_under_an_unsafe_parent(self):
        # whoever can rename in a directory above the cache could swap it for
        # a tree of their own (which host files a sandbox binds): under such
        # a parent the cache is neither read nor written, the run resolves
        # afresh. The control (a safe parent) shows the cache is observed.
        cases = [("safe", 0o755, None, 1), ("open", 0o777, None, 0)]
        if os.geteuid() == 0:
            cases.append(("foreign", 0o755, 65534, 0))
        for name, mode, owner, want in cases:
            with self.subTest(parent=name):
                parent = os.path.join(self.dir, name)
                os.mkdir(parent)
                os.chmod(parent, mode)
                cache = os.path.join(parent, "cache")
                os.mkdir(cache, 0o700)
                if owner is not None:
                    os.chown(parent, owner, owner)
                p, res = self.run_json("python", "-c", "print(6 * 7)", env=dict(os.environ, XDG_CACHE_HOME=cache))
                self.assertEqual(res["stdout"]["text"], "42\n", res)
                store = os.path.join(cache, "nsbox")
                stored = os.listdir(store) if os.path.isdir(store) else []
                self.assertEqual(len(stored), want, "%s parent (mode %o, owner %s): %s" % (name, mode, owner, stored))

    # ---- interpreters anywhere ---------------------------------------------

    def venv(self, path, *opts):
        r = subprocess.run([PYTHON, "-m", "venv", "--without-pip", *opts, path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return os.path.join(path, "bin", "python3")

    PREFIX = "import sys, ssl, json; print(sys.prefix, sys.base_prefix)"

    def test_venv_in_a_0700_directory(self):
        # /root/.pyenv, /root/venv: only the caller may search the directory
        # (for root, the sandbox init runs as another uid and could not open it)
        private = os.path.join(self.dir, "private")
        os.mkdir(private, 0o700)
        interp = self.venv(os.path.join(private, "v"))
        p, res = self.run_json("python", "--interpreter", interp, "-c", self.PREFIX)
        self.assertEqual(res["stdout"]["text"], bare(self.PREFIX, interp), res)
        self.assertTrue(res["stdout"]["text"].startswith(os.path.join(private, "v") + " "), res)

    def test_venv_with_copies(self):
        interp = self.venv(os.path.join(self.dir, "vc"), "--copies")
        self.assertFalse(os.path.islink(interp))
        p, res = self.run_json("python", "--interpreter", interp, "-c", self.PREFIX)
        self.assertEqual(res["status"], "exited", res)
        self.assertEqual(res["stdout"]["text"], bare(self.PREFIX, interp), res)

    def test_venv_interpreter_under_run(self):
        # nsbox run -- VENV/bin/python3: the venv's pyvenv.cfg comes with it,
        # so sys.prefix is the venv as bare (it was the base interpreter's)
        for opts in ((), ("--copies",)):
            interp = self.venv(os.path.join(self.dir, "r%d" % len(opts)), *opts)
            p, res = self.run_json("run", "--", interp, "-I", "-c", "import sys; print(sys.prefix)")
            self.assertEqual(res["stdout"]["text"], os.path.dirname(os.path.dirname(interp)) + "\n", res)

    def test_conda_style_tree(self):
        # PREFIX/bin/python3.11 finds PREFIX/lib/libpython3.11.so.1.0 through
        # RUNPATH $ORIGIN/../lib; its stdlib is PREFIX/lib/python3.11, which
        # holds its installed packages (visible only for what is named)
        libpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"
        stdlib = "/usr/lib/python3.11"
        self.need(libpython, "libpython3.11")
        prefix = os.path.join(self.dir, "conda")
        os.makedirs(os.path.join(prefix, "bin"))
        os.makedirs(os.path.join(prefix, "lib"))
        shutil.copy(libpython, os.path.join(prefix, "lib", "libpython3.11.so.1.0"))
        shutil.copytree(stdlib, os.path.join(prefix, "lib", "python3.11"), symlinks=True,
                        ignore=shutil.ignore_patterns("test", "dist-packages", "site-packages", "__pycache__"))
        # the copied stdlib is Debian's, whose site.py reads lib/python3.X's
        # dist-packages where upstream's (conda's) reads site-packages
        site = os.path.join(prefix, "lib", "python3.11", "dist-packages")
        for name in ("named", "unnamed"):
            self.write(os.path.relpath(os.path.join(site, name, "__init__.py"), self.dir), "WHO = %r\n" % name)
        main = self.write("src/main.c", "int Py_BytesMain(int, char **);\n"
                          "int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }\n")
        interp = os.path.join(prefix, "bin", "python3.11")
        self.cc("-o", interp, main, os.path.join(prefix, "lib", "libpython3.11.so.1.0"),
                "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib")
        for root, dirs, files in os.walk(prefix):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
        code = ("import sys, ssl, named; print(sys.prefix, named.WHO)\n"
                "try:\n    import unnamed; print('unnamed visible')\nexcept ImportError:\n    print('unnamed absent')\n")
        want = "%s named\nunnamed visible\n" % prefix
        self.assertEqual(bare(code, interp), want)
        p, res = self.run_json("python", "--interpreter", interp, "--package", os.path.join(site, "named"), "-c", code)
        self.assertEqual(res["stdout"]["text"], want.replace("unnamed visible", "unnamed absent"), res)

    TMP_CODE = ("import sys, os, errno\nprint(sys.prefix, sorted(os.listdir(sys.prefix)))\n"
                "with open('/tmp/other', 'w') as f:\n    print(f.write('x'))\n"
                "for what in ('x', 'bin/x'):\n"
                "    try:\n        open(os.path.join(sys.prefix, what), 'w')\n"
                "    except OSError as e:\n        print(errno.errorcode[e.errno])\n"
                "top = '/tmp/' + sys.prefix.split('/')[2]\n"
                "try:\n    os.rename(top, '/tmp/moved')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])\n"
                "with open('/proc/self/mountinfo') as f:\n"
                "    print({tuple(sorted({'ro', 'nosuid', 'nodev'} - set(l.split()[5].split(',')))) for l in f"
                " if l.split()[4] == top})\n")

    def tmp_venv(self):
        # a venv made by the caller in the host's /tmp, which the sandbox
        # covers with its own private /tmp
        path = tempfile.mkdtemp(prefix="nsbox-v.", dir="/tmp")
        self.addCleanup(shutil.rmtree, path, True)
        os.chmod(path, 0o755)
        return path, self.venv(os.path.join(path, "v"))

    def test_venv_in_tmp(self):
        # the sandbox's private /tmp carries the venv over, read-only: it
        # runs as bare, cannot be written into (EROFS whatever Landlock
        # allows in /tmp) or moved away (EBUSY: its top directory under /tmp
        # is a mount point), while the rest of /tmp is the program's
        path, interp = self.tmp_venv()
        prefix = os.path.join(path, "v")
        # (a warm job's mountinfo lists its zygote's copy too, covered by the job's /tmp)
        want = "%s ['bin', 'pyvenv.cfg']\n1\nEROFS\nEROFS\nEBUSY\n{()}\n" % prefix
        p, res = self.run_json("python", "--interpreter", interp, "-c", self.TMP_CODE)
        self.assertEqual(res["stdout"]["text"], want, res)
        self.assertEqual(res["stdout"]["text"].split(" ")[0], bare(self.PREFIX, interp).split(" ")[0])
        jobs = self.write("jobs.jsonl", json.dumps({"id": "a", "kind": "python", "code": self.TMP_CODE}) + "\n"
                          + json.dumps({"id": "b", "kind": "python", "code": self.TMP_CODE}) + "\n")
        p = self.nsbox("batch", "--warm", "--interpreter", interp, jobs, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        for line in p.stdout.splitlines():
            res = json.loads(line)
            self.assertEqual(res["start"], "warm", res)
            self.assertEqual(res["stdout"]["text"], want, res)

    def test_warm_batch_with_a_private_venv(self):
        private = os.path.join(self.dir, "private")
        os.mkdir(private, 0o700)
        interp = self.venv(os.path.join(private, "v"))
        jobs = self.write("jobs.jsonl", '{"id": "a", "kind": "python", "code": "import sys; print(sys.prefix)"}\n')
        p = self.nsbox("batch", "--warm", "--interpreter", interp, jobs, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        res = json.loads(p.stdout)
        self.assertEqual(res["start"], "warm", res)
        self.assertEqual(res["stdout"]["text"], os.path.join(private, "v") + "\n", res)


if __name__ == "__main__":
    unittest.main()
