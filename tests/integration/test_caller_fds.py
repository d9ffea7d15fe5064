"""Descriptors the caller hands in (issue #27, class 1): whatever --stdin
names, the program never holds a file description the caller opened, nor
one of the caller's file. fixtures/hostile/stdin_levers.py pulls every
lever on fd 0 and /proc/self/fd/0 (mode, times, xattrs, owner, a reopen for
writing, status flags, flock, lease, a directory's entries); each test then
checks on the HOST that the file and the caller's own description are as
they were. Cold, warm (`nsbox batch --warm --stdin FILE`), reduced; root,
and uid 65534 through as_nobody.sh. On a build that handed the description
in, every test here fails."""
import errno
import fcntl
import json
import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import unittest

from nsbtest import FIXTURES, NSBOX, SandboxTest, userns_available

LEVERS = os.path.join(FIXTURES, "hostile", "stdin_levers.py")
DATA = b"caller's input line one\nline two\n"
XATTR = "user.nsbox_lever"


def xattrs(path):
    try:
        return sorted(os.listxattr(path))
    except OSError:
        return None   # a filesystem without user xattrs: nothing to compare


class HostFile:
    """A file of the caller's, in a directory of its own under /var/tmp, and
    what the host must still show after the run."""

    def __init__(self, t):
        self.dir = tempfile.mkdtemp(prefix="nsbox-callerfds.", dir="/var/tmp")
        t.addCleanup(shutil.rmtree, self.dir, True)
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "input.txt")
        with open(self.path, "wb") as f:
            f.write(DATA)
        os.chmod(self.path, 0o644)
        self.before = os.stat(self.path)
        self.dir_before = os.stat(self.dir)
        self.xattrs = xattrs(self.path)

    def check(self, t):
        st, d = os.stat(self.path), os.stat(self.dir)
        t.assertEqual(stat.S_IMODE(st.st_mode), 0o644, "the caller's file's mode changed")
        t.assertEqual((st.st_uid, st.st_gid), (self.before.st_uid, self.before.st_gid), "its owner changed")
        t.assertEqual(st.st_mtime_ns, self.before.st_mtime_ns, "its times changed")
        t.assertEqual(st.st_ctime_ns, self.before.st_ctime_ns, "its metadata changed (ctime)")
        t.assertEqual(xattrs(self.path), self.xattrs, "its xattrs changed")
        with open(self.path, "rb") as f:
            t.assertEqual(f.read(), DATA, "its contents changed")
        t.assertEqual(stat.S_IMODE(d.st_mode), 0o755, "the caller's directory's mode changed")
        t.assertEqual(sorted(os.listdir(self.dir)), ["input.txt"], "an entry appeared in the caller's directory")
        # No lock, no lease left on it: another description locks it, and
        # an open for writing is not held back by a lease (EWOULDBLOCK).
        with open(self.path, "rb") as other:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)

    def not_the_file(self, t, obs):
        """The program's fd 0 is not the caller's file."""
        t.assertNotIn(self.path, obs["fd0"]["link"], "/proc/self/fd/0 shows the host path")
        t.assertNotEqual(obs["fd0"]["ino"], self.before.st_ino, "fd 0 is the caller's file")


ANCESTORS = os.path.join(FIXTURES, "hostile", "ancestor_fds.py")


def descendants(pid):
    """Every process under @pid, read from /proc."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def fd_links(pid):
    """{fd: target} of @pid, or None when this user may not look."""
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None
    out = {}
    for n in names:
        try:
            out[n] = os.readlink("/proc/%d/fd/%s" % (pid, n))
        except OSError:
            pass
    return out


def same_pidns(a, b):
    try:
        return os.readlink("/proc/%d/ns/pid" % a) == os.readlink("/proc/%d/ns/pid" % b)
    except OSError:
        return False


class CallerDescriptions:
    """A caller that leaves its own files open when it runs nsbox: stdin a
    file of its, `5>>f5`, `7<f7` (a shell's redirections). run() starts
    nsbox with them, and while the program sleeps reads the fds of every
    process under nsbox (only root may read those of a process that is not
    dumpable: as another user that part is skipped); the program,
    ancestor_fds.py, looks at its ancestors itself. None of them may hold
    any of the three files: the caller's descriptions stay nsbox's alone."""

    def __init__(self, t):
        self.t = t
        self.dir = tempfile.mkdtemp(prefix="nsbox-callerdesc.", dir="/var/tmp")
        t.addCleanup(shutil.rmtree, self.dir, True)
        os.chmod(self.dir, 0o755)
        self.files = [os.path.join(self.dir, n) for n in ("f0", "f5", "f7")]
        for f in self.files:
            with open(f, "wb") as fh:
                fh.write(DATA)

    def run(self, nsbox_argv, sleep=3.0, program=True, sandboxed_only=False):
        f0, f5, f7 = self.files
        tail = [ANCESTORS, str(sleep)] if program else []
        argv = ["/bin/sh", "-c", 'exec "$@" 5>>"$F5" 7<"$F7"', "sh", *nsbox_argv, *tail]
        env = dict(os.environ, F5=f5, F7=f7)
        seen = {}
        with open(f0, "rb") as stdin:
            p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            self.nsbox_pid = p.pid
            try:
                time.sleep(sleep / 2)
                for pid in descendants(p.pid):
                    if sandboxed_only and same_pidns(pid, p.pid):
                        continue   # a batch worker: a supervisor, nsbox itself
                    seen[pid] = fd_links(pid)
                out, err = p.communicate(timeout=60)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        self.t.assertTrue(seen, "no process under nsbox seen during the run")
        for pid, links in seen.items():
            if links is None:
                continue
            held = sorted(t for t in links.values() if t in self.files)
            self.t.assertEqual(held, [], "process %d under nsbox holds the caller's files: %s" % (pid, links))
        return out, err

    def check_program(self, out):
        """ancestor_fds.py's view: no ancestor handed it a caller's file."""
        try:
            res = json.loads(out)
        except ValueError:
            self.t.fail("no JSON result: %r" % out[:500])
        if "stdout" in res:   # nsbox's own --json
            self.t.assertEqual(res["status"], "exited", res.get("error") or res["stderr"])
            res = json.loads(res["stdout"]["text"].splitlines()[0])
        ancestors = res["ancestors"]
        pids = [a["pid"] for a in ancestors]
        if self.nsbox_pid in pids:   # above nsbox: this test itself, which holds f0
            ancestors = ancestors[:pids.index(self.nsbox_pid) + 1]
        for a in ancestors:
            for what in ("reopened", "taken"):
                got = a[what] if what == "reopened" else list(a[what].values())
                self.t.assertEqual([g for g in got if g in self.files], [],
                                   "ancestor %d: %s a caller's file: %s" % (a["pid"], what, a))
            self.t.assertEqual([g for g in a["links"].values() if g in self.files], [],
                               "ancestor %d shows a caller's file: %s" % (a["pid"], a))


class CallerFds(SandboxTest):
    def setUp(self):
        super().setUp()
        if not userns_available():
            self.skipTest("no user namespaces")

    def levers(self, *opts, reduced=False, **kw):
        args = ["python", "--json", *(["--isolation", "reduced"] if reduced else []), *opts, LEVERS]
        p = self.nsbox(*args, **kw)
        try:
            res = json.loads(p.stdout)
        except ValueError:
            self.fail("no JSON result (exit %d): %r %r" % (p.returncode, p.stdout[:300], p.stderr[-2000:]))
        self.assertEqual((res["status"], res.get("exit_code")), ("exited", 0), res.get("error") or res["stderr"])
        return json.loads(res["stdout"]["text"].splitlines()[0])

    # -- --stdin FILE: a sealed copy
    def file_by_name(self, reduced):
        h = HostFile(self)
        obs = self.levers("--stdin", h.path, reduced=reduced)
        h.check(self)
        h.not_the_file(self, obs)
        self.assertEqual(obs["fd0"]["kind"], "regular")
        self.assertEqual(obs["fd0"]["size"], len(DATA), "fstat(0).st_size is the file's size")
        self.assertEqual(obs["head"], "ok:" + DATA.decode(), "pread from 0 reads the file's bytes")
        self.assertTrue(obs["fd0"]["link"].startswith("ok:/memfd:nsbox-stdin"), obs["fd0"])
        for where in ("fd", "proc"):
            self.assertNotEqual(obs[where]["reopen_write"], "ok", "%s: the copy reopened for writing" % where)

    def test_file_by_name(self):
        self.file_by_name(False)

    def test_file_by_name_reduced(self):
        self.file_by_name(True)

    def test_file_by_name_warm(self):
        h = HostFile(self)
        with open(LEVERS) as f:
            job = {"id": "levers", "kind": "python", "code": f.read()}
        p = self.nsbox("batch", "--warm", "-j", "1", "--stdin", h.path, "-", input=(json.dumps(job) + "\n").encode())
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 1, p.stdout + p.stderr)
        res = json.loads(lines[0])
        self.assertEqual((res["status"], res.get("start")), ("exited", "warm"), res)
        obs = json.loads(res["stdout"]["text"].splitlines()[0])
        h.check(self)
        h.not_the_file(self, obs)
        self.assertEqual((obs["fd0"]["kind"], obs["fd0"]["size"]), ("regular", len(DATA)))

    # -- --stdin - with a file redirected: a sealed copy, the caller's
    # -- description untouched (flags, lock, lease) but for its offset
    def own_stdin_file(self, reduced):
        h = HostFile(self)
        with open(h.path, "rb") as f:
            flags = fcntl.fcntl(f, fcntl.F_GETFL)
            obs = self.levers("--stdin", "-", reduced=reduced, stdin=f)
            self.assertEqual(fcntl.fcntl(f, fcntl.F_GETFL), flags, "the caller's description's flags changed")
            self.assertEqual(os.lseek(f.fileno(), 0, os.SEEK_CUR), len(DATA), "read to its end, as a reader leaves it")
            # the caller's own description locks: no lock was left on it
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
            h.check(self)
        h.not_the_file(self, obs)
        self.assertEqual((obs["fd0"]["kind"], obs["fd0"]["size"]), ("regular", len(DATA)))

    def test_own_stdin_file(self):
        self.own_stdin_file(False)

    def test_own_stdin_file_reduced(self):
        self.own_stdin_file(True)

    # -- --stdin - with a pipe (or a socket): a fresh pipe the supervisor feeds
    def own_stdin_stream(self, reduced, sock):
        a, b = socket.socketpair() if sock else (None, None)
        r, w = (a.fileno(), b.fileno()) if sock else os.pipe()
        try:
            flags = fcntl.fcntl(r, fcntl.F_GETFL)
            ino = os.fstat(r).st_ino
            os.write(w, DATA)
            if sock:
                b.shutdown(socket.SHUT_WR)
            else:
                os.close(w)
            obs = self.levers("--stdin", "-", reduced=reduced, stdin=r)
            self.assertEqual(fcntl.fcntl(r, fcntl.F_GETFL), flags, "the caller's description's flags changed")
        finally:
            for s in (a, b):
                if s:
                    s.close()
            if not sock:
                os.close(r)
        self.assertEqual(obs["fd0"]["kind"], "fifo", obs["fd0"])
        self.assertNotEqual(obs["fd0"]["ino"], ino, "fd 0 is the caller's pipe")
        self.assertEqual(obs["fd"]["setfl"], "ok:True", "flags set on the program's own pipe only")

    def test_own_stdin_pipe(self):
        self.own_stdin_stream(False, False)

    def test_own_stdin_pipe_reduced(self):
        self.own_stdin_stream(True, False)

    def test_own_stdin_socket_is_streamed(self):
        self.own_stdin_stream(False, True)

    def test_large_file_is_streamed(self):
        """Above 64 MiB a file is not copied into memory: it is streamed
        through a pipe, whole."""
        h = HostFile(self)
        big = os.path.join(h.dir, "big")
        size = (64 << 20) + 4097
        with open(big, "wb") as f:
            f.truncate(size)   # sparse: no disk, quick to read
        code = ("import os, stat, sys\n"
                "n = 0\n"
                "while True:\n"
                "    b = sys.stdin.buffer.read(1 << 20)\n"
                "    if not b: break\n"
                "    n += len(b)\n"
                "print(stat.S_ISFIFO(os.fstat(0).st_mode), n)\n")
        p = self.nsbox("python", "--stdin", big, "--wall-time", "60s", "-c", code, timeout=120)
        self.assertEqual((p.returncode, p.stdout), (0, b"True %d\n" % size), p.stderr)
        os.unlink(big)

    # -- /dev/null: by name, as nsbox's own stdin, and the default
    def test_dev_null(self):
        code = "import os, sys; print(os.readlink('/proc/self/fd/0'), repr(sys.stdin.read()))"
        for opts, stdin in ((("--stdin", "/dev/null"), None), (("--stdin", "-"), subprocess.DEVNULL), ((), None)):
            p = self.nsbox("python", *opts, "-c", code, stdin=stdin)
            self.assertEqual((p.returncode, p.stdout), (0, b"/dev/null ''\n"), (opts, p.stderr))

    # -- refused by name, before anything runs
    def test_refused_by_name(self):
        h = HostFile(self)
        fifo = os.path.join(h.dir, "fifo")
        os.mkfifo(fifo, 0o600)
        sock_path = os.path.join(h.dir, "sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(srv.close)
        srv.bind(sock_path)
        marker = os.path.join(h.dir, "ran")
        for path, what in ((h.dir, b"is a directory"), (fifo, b"is a FIFO"), (sock_path, b"is a socket"),
                           ("/dev/zero", b"is a character device other than /dev/null")):
            p = self.nsbox("run", "--stdin", path, "--workspace", h.dir, "--", "/bin/sh", "-c",
                           "echo ran > /workspace/ran")
            self.assertEqual(p.returncode, 125, (path, p.stderr))
            self.assertIn(b"--stdin '" + path.encode() + b"' " + what, p.stderr)
            self.assertFalse(os.path.exists(marker), "the program ran")
        # the directory given as nsbox's own stdin
        fd = os.open(h.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            p = self.nsbox("run", "--stdin", "-", "--", "/bin/true", stdin=fd)
        finally:
            os.close(fd)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"--stdin -: nsbox's standard input is a directory", p.stderr)
        os.unlink(fifo)
        os.unlink(sock_path)
        h.check(self)

    # -- the processes under nsbox (the init, the warm zygote's init, the
    # -- job's init, the program) hold none of the caller's descriptions
    def no_caller_descriptions_below(self, *opts):
        c = CallerDescriptions(self)
        out, _ = c.run([NSBOX, "python", "--json", *opts, "--stdin", "-"])
        c.check_program(out)

    def test_init_holds_no_caller_description(self):
        self.no_caller_descriptions_below()

    def test_init_holds_no_caller_description_reduced(self):
        self.no_caller_descriptions_below("--isolation", "reduced")

    def test_init_holds_no_caller_description_warm(self):
        c = CallerDescriptions(self)
        with open(ANCESTORS) as f:
            job = {"id": "fds", "kind": "python", "code": "import sys; sys.argv[1:] = ['3']\n" + f.read()}
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", dir=c.dir, delete=False) as jobs:
            jobs.write(json.dumps(job) + "\n")
        out, err = c.run([NSBOX, "batch", "--warm", "-j", "1", jobs.name], sleep=3.0, program=False,
                         sandboxed_only=True)
        lines = out.splitlines()
        self.assertEqual(len(lines), 1, out + err)
        res = json.loads(lines[0])
        self.assertEqual((res["status"], res.get("start")), ("exited", "warm"), res)
        c.check_program(json.dumps(res).encode())

    def test_anonymous_pipe_by_path_is_streamed(self):
        """--stdin <(cmd): /dev/fd/N, an anonymous pipe, is streamed like
        --stdin - (a fresh pipe, never the caller's), also once its writer
        is gone; a named FIFO stays refused, and a socket's refusal advises
        what works (socat), not a shell redirection."""
        r, w = os.pipe()
        try:
            ino = os.fstat(r).st_ino
            os.write(w, DATA)
            os.close(w)
            code = "import os, sys; st = os.fstat(0); print(st.st_ino, repr(sys.stdin.read()))"
            p = self.nsbox("python", "--stdin", "/dev/fd/%d" % r, "-c", code, pass_fds=(r,))
        finally:
            os.close(r)
        self.assertEqual(p.returncode, 0, p.stderr)
        got_ino, text = p.stdout.decode().split(" ", 1)
        self.assertNotEqual(int(got_ino), ino, "fd 0 is the caller's pipe")
        self.assertEqual(text.strip(), repr(DATA.decode()))
        h = HostFile(self)
        sock_path = os.path.join(h.dir, "sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(srv.close)
        srv.bind(sock_path)
        p = self.nsbox("run", "--stdin", sock_path, "--", "/bin/true")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"socat -u UNIX-CONNECT:", p.stderr)
        self.assertNotIn(b"< '", p.stderr)

    def test_closed_stdin_refused(self):
        """--stdin - with nsbox's own stdin closed is refused (125), as the
        contract says, never an empty input in its place; a batch's jobs
        from a closed stdin are unreadable input (125), not zero jobs."""
        for argv in (["python", "--stdin", "-", "-c", "print(input())"], ["run", "--stdin", "-", "--", "/bin/true"]):
            p = subprocess.run(["/bin/sh", "-c", 'exec "$@" 0<&-', "sh", NSBOX, *argv],
                               capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 125, (argv, p.stdout, p.stderr))
            self.assertIn(b"--stdin -: nsbox's standard input is closed", p.stderr)
        p = subprocess.run(["/bin/sh", "-c", 'exec "$@" 0<&-', "sh", NSBOX, "batch", "-"], capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 125, p.stdout + p.stderr)

    def test_refused_for_judge_and_batch_too(self):
        h = HostFile(self)
        job = {"id": "a", "kind": "python", "code": "print(1)"}
        p = self.nsbox("batch", "--stdin", h.dir, "-", input=(json.dumps(job) + "\n").encode())
        self.assertEqual(p.returncode, 125, p.stdout + p.stderr)
        self.assertIn(b"is a directory", p.stderr)


if __name__ == "__main__":
    unittest.main()
