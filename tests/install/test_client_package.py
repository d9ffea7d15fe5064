"""The Python client as a package: client/python/pyproject.toml, whose build
backend is in the tree (backend/nsbox_client_build.py, standard library only,
`requires = []`), installed with pip offline (no index, no network) into a
virtual environment that has pip but no setuptools and no wheel (the
Pythons of pyenv and conda): with build isolation, without it, editable
(PEP 660), and from the sdist the backend writes. Importable as
nsbox_client, typed (py.typed: mypy --strict reads its annotations from the
installed package), the client's source clean under mypy --strict
(python3-mypy), and Apache-2.0 like the rest of nsbox (LICENSE). Where
other CPythons >= 3.8 are found (pyenv's, or $NSBOX_CLIENT_PYTHONS), the
offline install is tried with each of them too."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ["NSBOX_SOURCE"]
NSBOX = os.environ["NSBOX"]
VERSION = os.environ["NSBOX_VERSION"]
CLIENT = os.path.join(SOURCE, "client", "python")
PIP_ENV = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
PIP_ENV.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
PIP = ["-m", "pip", "install", "--no-index", "--no-cache-dir"]
CHECK = ("import nsbox_client, sys\n"
         "assert nsbox_client.__file__.startswith(sys.argv[1]), nsbox_client.__file__\n"
         "r = nsbox_client.run_code('def f(x):\\n    return x + 1', test_code='assert f(1) == 2')\n"
         "print(r.status, r.label)\n")


def other_pythons():
    """CPythons >= 3.8 besides /usr/bin/python3: $NSBOX_CLIENT_PYTHONS
    (colon-separated), else pyenv's versions where readable."""
    listed = os.environ.get("NSBOX_CLIENT_PYTHONS")
    found = listed.split(":") if listed else sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    out = []
    for py in found:
        r = subprocess.run([py, "-c", "import sys; print(sys.version_info >= (3, 8))"], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == "True":
            out.append(py)
    return out


GOOD = '''from typing import List, Optional, Tuple

from nsbox_client import RunResult, batch_run, run_code


def score(code: str) -> int:
    r: RunResult = run_code(code, test_code="assert f(1) == 2", timeout=2, warm=False)
    return r.label


def labels(pairs: List[Tuple[str, Optional[str]]]) -> List[int]:
    return [r.label for r in batch_run(pairs)]
'''
BAD = '''from nsbox_client import run_code

status: int = run_code("print(1)").status
'''


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, **kw)


def bare_venv(python, path):
    """A venv at @path with pip and without setuptools or wheel; its python."""
    r = run([python, "-m", "venv", path])
    assert r.returncode == 0, r.stdout
    venv_python = os.path.join(path, "bin", "python")
    # ensurepip puts setuptools in before 3.12: taken out, as pyenv's and
    # conda's Pythons may well lack it
    r = run([venv_python, "-m", "pip", "uninstall", "-y", "setuptools", "wheel"], env=PIP_ENV)
    assert r.returncode == 0, r.stdout
    return venv_python


def venv_files(venv):
    """Every path under @venv (files, links, folders), relative."""
    out = set()
    for d, dirs, files in os.walk(venv):
        out.update(os.path.relpath(os.path.join(d, n), venv) for n in dirs + files)
    return out


def site_of(venv_python):
    return run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()


class ClientPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.top = tempfile.mkdtemp(prefix="nsbox-client.", dir="/var/tmp")
        # a copy: pip builds in the tree, and the source tree stays untouched
        cls.src = os.path.join(cls.top, "src")
        shutil.copytree(CLIENT, cls.src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        cls.venv = os.path.join(cls.top, "venv")
        cls.python = bare_venv("/usr/bin/python3", cls.venv)
        cls.no_setuptools = run([cls.python, "-c", "import setuptools"])
        cls.no_wheel = run([cls.python, "-c", "import wheel"])
        # with build isolation (pip makes an empty environment: requires = [])
        cls.files_before = venv_files(cls.venv)
        cls.pip_isolated = run([cls.python, *PIP, cls.src], env=PIP_ENV)
        cls.import_compiled = run([cls.python, "-c", "import nsbox_client.aio, nsbox_client.service"], cwd="/")
        cls.uninstall = run([cls.python, "-m", "pip", "uninstall", "-y", "nsbox-client"], env=PIP_ENV)
        cls.files_after = venv_files(cls.venv)
        # editable (PEP 660), then gone again
        cls.pip_editable = run([cls.python, *PIP, "-e", cls.src], env=PIP_ENV)
        cls.editable_file = run([cls.python, "-c", "import nsbox_client; print(nsbox_client.__file__)"], cwd="/")
        run([cls.python, "-m", "pip", "uninstall", "-y", "nsbox-client"], env=PIP_ENV)
        # the installation the other tests use: without build isolation
        cls.pip = run([cls.python, *PIP, "--no-build-isolation", cls.src], env=PIP_ENV)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.top, ignore_errors=True)

    def site(self):
        return site_of(self.python)

    def test_venv_has_no_setuptools_nor_wheel(self):
        self.assertIn("No module named 'setuptools'", self.no_setuptools.stdout)
        self.assertIn("No module named 'wheel'", self.no_wheel.stdout)

    def test_pip_install_no_build_isolation(self):
        self.assertEqual(self.pip.returncode, 0, self.pip.stdout)
        self.assertIn("Successfully installed nsbox-client-%s" % VERSION, self.pip.stdout)
        pkg = os.path.join(self.site(), "nsbox_client")
        self.assertTrue(os.path.isfile(os.path.join(pkg, "__init__.py")))
        self.assertTrue(os.path.isfile(os.path.join(pkg, "py.typed")))
        info = os.path.join(self.site(), "nsbox_client-%s.dist-info" % VERSION)
        with open(os.path.join(info, "METADATA"), encoding="utf-8") as f:
            meta = f.read()
        self.assertRegex(meta, r"(?m)^Version: %s$" % re.escape(VERSION))
        self.assertRegex(meta, r"(?m)^License: Apache-2.0$")
        with open(os.path.join(info, "LICENSE"), encoding="utf-8") as f, \
                open(os.path.join(SOURCE, "LICENSE"), encoding="utf-8") as g:
            self.assertEqual(f.read(), g.read())

    def test_pip_install_with_build_isolation(self):
        self.assertEqual(self.pip_isolated.returncode, 0, self.pip_isolated.stdout)
        self.assertIn("Successfully installed nsbox-client-%s" % VERSION, self.pip_isolated.stdout)
        self.assertEqual(self.uninstall.returncode, 0, self.uninstall.stdout)
        # installed, imported (its .pyc written), uninstalled: nothing left
        self.assertEqual(self.import_compiled.returncode, 0, self.import_compiled.stdout)
        self.assertEqual(sorted(self.files_after ^ self.files_before), [])

    def test_pip_install_editable(self):
        self.assertEqual(self.pip_editable.returncode, 0, self.pip_editable.stdout)
        self.assertEqual(self.editable_file.stdout.strip(), os.path.join(self.src, "nsbox_client", "__init__.py"),
                         self.editable_file.stdout)

    def test_sdist_builds_and_installs(self):
        """The backend's sdist holds what building it again needs: pip
        installs it (isolated, offline) into a second bare venv."""
        out = os.path.join(self.top, "dist")
        os.makedirs(out, exist_ok=True)
        r = run([self.python, "-c", "import sys; sys.path.insert(0, 'backend'); import nsbox_client_build as b;"
                 "print(b.build_sdist(sys.argv[1]))", out], cwd=self.src)
        self.assertEqual(r.returncode, 0, r.stdout)
        sdist = os.path.join(out, r.stdout.strip())
        self.assertEqual(os.path.basename(sdist), "nsbox_client-%s.tar.gz" % VERSION)
        python = bare_venv("/usr/bin/python3", os.path.join(self.top, "venv-sdist"))
        r = run([python, *PIP, sdist], env=PIP_ENV)
        self.assertEqual(r.returncode, 0, r.stdout)
        r = run([python, "-c", CHECK, site_of(python)], cwd=self.top, env=dict(os.environ, NSBOX=NSBOX))
        self.assertEqual((r.returncode, r.stdout), (0, "pass 1\n"))

    def test_other_pythons(self):
        """Each other CPython found: a bare venv, pip install --no-index, a
        run. (None found, as on CI's Debian 12: nothing more to try.)"""
        for py in other_pythons():
            with self.subTest(python=py):
                venv = os.path.join(self.top, "venv-" + re.sub(r"\W", "_", py))
                python = bare_venv(py, venv)
                r = run([python, *PIP, self.src], env=PIP_ENV)
                self.assertEqual(r.returncode, 0, r.stdout)
                r = run([python, "-c", CHECK, site_of(python)], cwd=self.top, env=dict(os.environ, NSBOX=NSBOX))
                self.assertEqual((r.returncode, r.stdout), (0, "pass 1\n"))

    def test_backend_reads_pyproject_as_tomllib_does(self):
        """The backend's own reader (Pythons before 3.11) and tomllib agree."""
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib: Python 3.11+")
        sys.path.insert(0, os.path.join(CLIENT, "backend"))
        try:
            import nsbox_client_build
        finally:
            sys.path.pop(0)
        with open(os.path.join(CLIENT, "pyproject.toml"), "rb") as f:
            data = f.read()
        self.assertEqual(nsbox_client_build.read_project(data.decode()), tomllib.loads(data.decode())["project"])

    def test_license_apache(self):
        with open(os.path.join(SOURCE, "LICENSE"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("Apache License\n                           Version 2.0, January 2004", text)
        with open(os.path.join(CLIENT, "LICENSE"), encoding="utf-8") as f:
            self.assertEqual(f.read(), text, "client/python/LICENSE is a copy of LICENSE")
        with open(os.path.join(CLIENT, "pyproject.toml"), encoding="utf-8") as f:
            self.assertIn('license = {text = "Apache-2.0"}', f.read())
        with open(os.path.join(SOURCE, "meson.build"), encoding="utf-8") as f:
            self.assertIn("license : 'Apache-2.0'", f.read())
        with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as f:
            self.assertIn("[`LICENSE`](LICENSE) (SPDX: `Apache-2.0`)", f.read())
        copyright_file = os.path.join(SOURCE, "debian", "copyright")
        if os.path.exists(copyright_file):   # not in as_nobody.sh's copy
            with open(copyright_file, encoding="utf-8") as f:
                self.assertRegex(f.read(), r"(?m)^Files: \*\n.*\nLicense: Apache-2.0$")

    def test_importable_and_runs(self):
        r = run([self.python, "-c", CHECK, self.site()], cwd=self.top, env=dict(os.environ, NSBOX=NSBOX))
        self.assertEqual((r.returncode, r.stdout), (0, "pass 1\n"))

    def mypy(self, *args, cwd=None):
        return run(["/usr/bin/python3", "-m", "mypy", "--strict", "--cache-dir=/dev/null", *args], cwd=cwd or self.top)

    def test_installed_package_is_typed(self):
        """mypy --strict reads the installed package through py.typed: a
        correct caller passes, a wrong one is caught with the real types."""
        for name, text in (("good.py", GOOD), ("bad.py", BAD)):
            with open(os.path.join(self.top, name), "w", encoding="utf-8") as f:
                f.write(text)
        r = self.mypy("--python-executable", self.python, "good.py")
        self.assertEqual(r.returncode, 0, r.stdout)
        r = self.mypy("--python-executable", self.python, "bad.py")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn('''expression has type "Literal['pass', 'fail', 'timeout', 'error']", variable has type "int"''',
                      r.stdout)

    def test_client_source_is_mypy_strict_clean(self):
        r = self.mypy(os.path.join(CLIENT, "nsbox_client"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("Success: no issues found", r.stdout)


class BackendFiles(unittest.TestCase):
    """What the backend puts in its wheel and sdist: the whole package, a
    module or subpackage added later included (meson installs the folder
    whole, dist/meson.build; a listed set would leave it out: ImportError
    from the wheel only), never __pycache__; RECORD's hashes and sizes
    those of the archive's files."""

    def test_subpackage_and_stub_are_packaged(self):
        import base64
        import csv
        import hashlib
        import io
        import tarfile
        import zipfile
        with tempfile.TemporaryDirectory() as top:
            src = os.path.join(top, "src")
            shutil.copytree(CLIENT, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            sub = os.path.join(src, "nsbox_client", "extra")
            os.makedirs(os.path.join(sub, "__pycache__"))
            for name, text in (("__init__.py", "X = 1\n"), ("more.pyi", "Y: int\n"), ("__pycache__/a.pyc", "")):
                with open(os.path.join(sub, name), "w", encoding="utf-8") as f:
                    f.write(text)
            r = run(["/usr/bin/python3", "-c", "import sys; sys.path.insert(0, 'backend');"
                     "import nsbox_client_build as b;"
                     "print(b.build_wheel(sys.argv[1])); print(b.build_sdist(sys.argv[1]))", top], cwd=src)
            self.assertEqual(r.returncode, 0, r.stdout)
            wheel, sdist = r.stdout.split()
            with zipfile.ZipFile(os.path.join(top, wheel)) as z:
                names = z.namelist()
                record = [n for n in names if n.endswith(".dist-info/RECORD")][0]
                rows = list(csv.reader(io.StringIO(z.read(record).decode())))
                for path, digest, size in rows:
                    if path == record:
                        continue
                    data = z.read(path)
                    want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, size), ("sha256=" + want, str(len(data))), path)
                self.assertEqual(sorted(r[0] for r in rows), sorted(names))
            self.assertIn("nsbox_client/extra/__init__.py", names)
            self.assertIn("nsbox_client/extra/more.pyi", names)
            self.assertIn("nsbox_client/py.typed", names)
            self.assertFalse([n for n in names if "__pycache__" in n], names)
            with tarfile.open(os.path.join(top, sdist)) as t:
                members = t.getnames()
            base = "nsbox_client-%s/" % VERSION
            self.assertIn(base + "nsbox_client/extra/__init__.py", members)
            self.assertIn(base + "nsbox_client/extra/more.pyi", members)
            self.assertFalse([n for n in members if "__pycache__" in n], members)


if __name__ == "__main__":
    unittest.main()
