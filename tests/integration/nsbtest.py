"""Shared helpers for nsbox's integration tests (stdlib only).

NSBOX    the built binary (meson passes it)
FIXTURES the fixtures directory
NSBOX_TESTS_MUST_RUN=1 turns every honest skip into a failure (CI sets it).
"""
import json
import re
import os
import subprocess
import unittest

NSBOX = os.environ.get("NSBOX", os.path.join(os.path.dirname(__file__), "..", "..", "build", "nsbox"))
FIXTURES = os.environ.get("FIXTURES", os.path.join(os.path.dirname(__file__), "..", "..", "fixtures"))
PY = os.path.join(FIXTURES, "py")
MUST_RUN = os.environ.get("NSBOX_TESTS_MUST_RUN") == "1"
# nsbox built with -Db_sanitize=address,undefined (scripts/test sets this for
# that pass): ASan reserves terabytes of address space for its shadow memory,
# so a sanitized init cannot run under the rlimit backend's RLIMIT_AS.
SANITIZED = os.environ.get("NSBOX_SANITIZED") == "1"


def userns_available():
    """Probe: can this user create a user namespace and map itself?"""
    try:
        r = subprocess.run(["unshare", "--user", "--map-current-user", "true"],
                           capture_output=True, timeout=10)
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def skip_or_fail(test, why):
    if MUST_RUN:
        test.fail("required capability missing (NSBOX_TESTS_MUST_RUN=1): " + why)
    raise unittest.SkipTest(why)


class SandboxTest(unittest.TestCase):
    def setUp(self):
        if not userns_available():
            skip_or_fail(self, "unprivileged user namespaces are unavailable")

    def nsbox(self, *args, timeout=60, **kw):
        return subprocess.run([NSBOX, *args], capture_output=True, timeout=timeout, **kw)

    def run_json(self, *args, timeout=60, **kw):
        """Runs nsbox with --json inserted after the command; returns (proc, result)."""
        args = list(args)
        args.insert(1, "--json")
        p = self.nsbox(*args, timeout=timeout, **kw)
        try:
            res = json.loads(p.stdout)
        except ValueError:
            self.fail("no JSON result (exit %d): stdout=%r stderr=%r" % (p.returncode, p.stdout[:500], p.stderr[:2000]))
        return p, res

    def py(self, script, *args, opts=(), **kw):
        return self.run_json("python", *opts, os.path.join(PY, script), *args, **kw)

    def observed(self, res):
        self.assertEqual(res["status"], "exited", res.get("error") or res["stderr"]["text"][-2000:])
        return json.loads(res["stdout"]["text"])


def processes_with(marker):
    """Host processes whose command line contains marker."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def reduced_leftovers(base):
    """The private directories of reduced runs under TMPDIR=base: in the
    user's own base/nsbox-reduced-UID, or base itself (its fallback)."""
    found = []
    for d in (base, os.path.join(base, "nsbox-reduced-%d" % os.geteuid())):
        try:
            found += [n for n in os.listdir(d) if re.fullmatch(r"nsbox-reduced-[0-9]+-.+", n)]
        except FileNotFoundError:
            pass
    return found
