"""Descriptors the caller hands in (issue #27), on the posix platform (a
-Dplatform=posix build, $NSBOX with $NSBOX_PLATFORM=posix): --stdin FILE and
--stdin - reach the program as a private copy, never the caller's file or
description; a directory is refused. fixtures/hostile/stdin_levers.py pulls
the levers; the host is checked as in test_caller_fds. Not named
test_*.py: the Linux build's suite has its own (test_caller_fds)."""
import fcntl
import json
import os
import subprocess
import time
import unittest

from nsbtest import NSBOX
from test_caller_fds import DATA, LEVERS, CallerDescriptions, HostFile


class PosixCallerFds(unittest.TestCase):
    def setUp(self):
        if os.environ.get("NSBOX_PLATFORM") != "posix":
            self.fail("posix_caller_fds.py runs against a -Dplatform=posix nsbox (NSBOX_PLATFORM=posix)")

    def levers(self, *opts, **kw):
        p = subprocess.run([NSBOX, "python", "--json", "--isolation", "reduced", *opts, LEVERS],
                           capture_output=True, timeout=60, **kw)
        res = json.loads(p.stdout)
        self.assertEqual((res["status"], res.get("exit_code")), ("exited", 0), res.get("error") or res["stderr"])
        return json.loads(res["stdout"]["text"].splitlines()[0])

    def test_file_by_name(self):
        h = HostFile(self)
        obs = self.levers("--stdin", h.path)
        h.check(self)
        h.not_the_file(self, obs)
        self.assertEqual((obs["fd0"]["kind"], obs["fd0"]["size"]), ("regular", len(DATA)))

    def test_own_stdin_file_and_pipe(self):
        h = HostFile(self)
        with open(h.path, "rb") as f:
            flags = fcntl.fcntl(f, fcntl.F_GETFL)
            obs = self.levers("--stdin", "-", stdin=f)
            self.assertEqual(fcntl.fcntl(f, fcntl.F_GETFL), flags, "the caller's description's flags changed")
            h.check(self)
        h.not_the_file(self, obs)
        r, w = os.pipe()
        try:
            os.write(w, DATA)
            os.close(w)
            ino = os.fstat(r).st_ino
            obs = self.levers("--stdin", "-", stdin=r)
            self.assertEqual(fcntl.fcntl(r, fcntl.F_GETFL), os.O_RDONLY, "the caller's pipe's flags changed")
        finally:
            os.close(r)
        self.assertNotEqual(obs["fd0"]["ino"], ino, "fd 0 is the caller's pipe")
        self.assertEqual(obs["head"], "ok:" + DATA.decode())

    def test_keeper_holds_no_caller_description(self):
        """The keeper runs as the program's user: it keeps none of nsbox's
        0-2 nor the caller's other descriptions, and nsbox and the keeper
        are not dumpable (reopen via /proc/<ppid>/fd, pidfd_getfd)."""
        c = CallerDescriptions(self)
        out, err = c.run([NSBOX, "python", "--json", "--isolation", "reduced", "--stdin", "-"])
        c.check_program(out)

    def test_stream_copy_bounded(self):
        """A stream is copied to disk whole first on this platform: past
        --file-size it is refused (an endless source must not fill
        $TMPDIR), and one that never ends is refused at the wall time."""
        r, w = os.pipe()
        try:
            os.write(w, b"x" * 4096)
            os.close(w)
            w = -1
            p = subprocess.run([NSBOX, "python", "--isolation", "reduced", "--file-size", "1K", "--stdin", "-",
                                "-c", "print(len(input()))"], stdin=r, capture_output=True, timeout=60)
        finally:
            os.close(r)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"--stdin -: more than 1024 bytes (--file-size)", p.stderr)
        r, w = os.pipe()   # a writer that never closes: no end of input
        try:
            os.write(w, b"partial line")
            t0 = time.monotonic()
            p = subprocess.run([NSBOX, "python", "--isolation", "reduced", "--wall-time", "1s", "--stdin", "-",
                                "-c", "print(input())"], stdin=r, capture_output=True, timeout=30)
            took = time.monotonic() - t0
        finally:
            os.close(r)
            os.close(w)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"--stdin -: the input did not end within the wall time", p.stderr)
        self.assertLess(took, 10)
        # within the bound, a stream still arrives whole
        p = subprocess.run([NSBOX, "python", "--isolation", "reduced", "--file-size", "1K", "--stdin", "-",
                            "-c", "print(len(input()))"], input=b"y" * 1000 + b"\n", capture_output=True,
                           timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, b"1000\n"), p.stderr)

    def test_directory_refused(self):
        h = HostFile(self)
        p = subprocess.run([NSBOX, "python", "--isolation", "reduced", "--stdin", h.dir, "-c", "pass"],
                           capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"is a directory", p.stderr)
        h.check(self)


if __name__ == "__main__":
    unittest.main()
