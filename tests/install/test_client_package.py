"""The Python client as a package: client/python/pyproject.toml built by
Debian's setuptools with `pip install --no-build-isolation` (no index, no
network) into a virtual environment, importable as nsbox_client, typed
(py.typed: mypy --strict reads its annotations from the installed package),
and the client's source clean under mypy --strict (python3-mypy)."""
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

GOOD = '''from nsbox_client import RunResult, run_code


def score(code: str) -> int:
    r: RunResult = run_code(code, test_code="assert f(1) == 2")
    return r.label
'''
BAD = '''from nsbox_client import run_code

status: int = run_code("print(1)").status
'''


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, **kw)


class ClientPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.top = tempfile.mkdtemp(prefix="nsbox-client.", dir="/var/tmp")
        # a copy: a setuptools build writes build/ and *.egg-info next to
        # the pyproject, and the source tree stays untouched
        cls.src = os.path.join(cls.top, "src")
        shutil.copytree(CLIENT, cls.src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        cls.venv = os.path.join(cls.top, "venv")
        r = run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", cls.venv])
        assert r.returncode == 0, r.stdout
        cls.python = os.path.join(cls.venv, "bin", "python")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_NO_INDEX"] = "1"
        cls.pip = run([cls.python, "-m", "pip", "install", "--no-build-isolation", cls.src], env=env)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.top, ignore_errors=True)

    def site(self):
        return os.path.join(self.venv, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")

    def test_pip_install_no_build_isolation(self):
        self.assertEqual(self.pip.returncode, 0, self.pip.stdout)
        self.assertIn("Successfully installed nsbox-client-%s" % VERSION, self.pip.stdout)
        pkg = os.path.join(self.site(), "nsbox_client")
        self.assertTrue(os.path.isfile(os.path.join(pkg, "__init__.py")))
        self.assertTrue(os.path.isfile(os.path.join(pkg, "py.typed")))
        with open(os.path.join(self.site(), "nsbox_client-%s.dist-info" % VERSION, "METADATA"),
                  encoding="utf-8") as f:
            self.assertRegex(f.read(), r"(?m)^Version: %s$" % re.escape(VERSION))

    def test_importable_and_runs(self):
        code = ("import nsbox_client, sys\n"
                "assert nsbox_client.__file__.startswith(sys.argv[1]), nsbox_client.__file__\n"
                "r = nsbox_client.run_code('def f(x):\\n    return x + 1', test_code='assert f(1) == 2')\n"
                "print(r.status, r.label)\n")
        r = run([self.python, "-c", code, self.site()], cwd=self.top, env=dict(os.environ, NSBOX=NSBOX))
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
        self.assertIn('expression has type "str", variable has type "int"', r.stdout)

    def test_client_source_is_mypy_strict_clean(self):
        r = self.mypy(os.path.join(CLIENT, "nsbox_client"))
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("Success: no issues found", r.stdout)


if __name__ == "__main__":
    unittest.main()
