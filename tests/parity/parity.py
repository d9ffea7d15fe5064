"""The parity suite: CPython's regression tests bare, in `nsbox python` and
in `nsbox batch --warm`, as root and as uid 65534, test by test.

    parity.py --nsbox build/nsbox --modules modules-ci.txt [--allow allow.txt]

For each user (root, and uid 65534 through setpriv when run as root; the
current user only otherwise) and each module, case_runner.py runs the module
in three modes:
  bare  /usr/bin/python3 -I -B, nsbox's scrubbed environment
        (supervisor/env_plan.c: PATH, LANG=LC_ALL=C.UTF-8, HOME=TMPDIR=a private
        directory, PYTHONDONTWRITEBYTECODE, PYTHONUNBUFFERED), cwd that directory
  cold  nsbox python --workspace DIR LIMITS case_runner.py ...
  warm  one nsbox batch --warm -j N --workspace DIR LIMITS, a job per module
and each test's outcome in cold and warm is compared with bare's for the same
user. A difference is first run again (just those tests, bare and sandboxed):
one that does not come back is reported as unconfirmed (timing), not counted.
A confirmed difference must match an allow-list entry (allow.txt: the format
is in its header); the run fails on one that does not, and on an entry that
matched nothing among the modules, modes and users that ran (stale: remove it).

A module that dies or hangs mid-way (a limit, a crash) gives its current test
the outcome `crash` and is run again without it, up to --max-crashes times,
so one bad test does not hide the rest.

Stdlib only; prints the table (modules, tests, differences per mode, the
allow-list's size) and, with --report FILE, every difference with both
outcomes' reasons. Limits (generous, so that no limit makes a difference):
LIMITS below, stated in docs/testing.md.
"""
import argparse
import concurrent.futures
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "case_runner.py")
PYTHON = "/usr/bin/python3"
# nsbox's program environment (supervisor/env_plan.c), HOME and TMPDIR filled in
SCRUBBED_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"}
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
MODES = ("bare", "cold", "warm")
OUTCOMES = ("pass", "fail", "error", "skip", "xfail", "xpass", "crash", "missing")


def limits(wall):
    """The sandbox's limits: none of them may be why a test differs."""
    # file_size and tmp_size above test_mmap's 5.3 GB sparse file (tmpfs
    # pages count only once written, against memory); memory above its 4 GB
    # mapping, which RLIMIT_AS (the rlimit backend) counts whole
    return {"wall_time": "%ds" % wall, "memory": "8G", "pids": "2048",
            "output_limit": "16M", "file_size": "8G", "tmp_size": "8G"}


def limit_flags(wall):
    flags = []
    for k, v in limits(wall).items():
        flags += ["--" + k.replace("_", "-"), v]
    return flags


class User:
    """Who runs: root, or uid 65534 from a world-readable copy of nsbox,
    its warm files and the runner (as tests/integration/as_nobody.sh)."""

    def __init__(self, name, base, nsbox):
        self.name = name
        self.dir = os.path.join(base, name)
        os.makedirs(self.dir)
        self.nsbox, self.runner, self.env = nsbox, RUNNER, {"HOME": "/tmp", "PATH": SCRUBBED_ENV["PATH"]}
        self.prefix, self.short_dirs = [], []
        if name == "unpriv" and os.getuid() == 0:
            self.prefix = NOBODY
            self.nsbox = os.path.join(self.dir, "nsbox")
            shutil.copy(nsbox, self.nsbox)
            warm = os.path.join(os.path.dirname(os.path.abspath(nsbox)), "warm")
            if os.path.isdir(warm):
                os.makedirs(os.path.join(self.dir, "warm"))
                for f in ("libnsbox_warm.so", "zygote.py"):
                    shutil.copy(os.path.join(warm, f), os.path.join(self.dir, "warm", f))
                self.env["NSBOX_WARM_DIR"] = os.path.join(self.dir, "warm")
            self.runner = os.path.join(self.dir, "case_runner.py")
            shutil.copy(RUNNER, self.runner)
            for root, dirs, files in os.walk(self.dir):
                for n in dirs + files:
                    os.chmod(os.path.join(root, n), 0o755)
            os.chmod(self.dir, 0o755)

    def mkdir(self, *parts, short=False):
        """A fresh directory this user owns. short: in /tmp with a short
        name (bare's HOME and TMPDIR), so that paths under it are as short
        as the sandbox's /tmp/... (an AF_UNIX socket's path has 108 bytes)."""
        if short:
            d = tempfile.mkdtemp(dir="/tmp", prefix="np")
            self.short_dirs.append(d)
        else:
            d = tempfile.mkdtemp(dir=os.path.join(self.dir, *parts[:-1]), prefix=parts[-1] + ".")
        if self.prefix:
            os.chown(d, 65534, 65534)
        return d

    def cleanup(self):
        for d in self.short_dirs:
            shutil.rmtree(d, ignore_errors=True)

    def run(self, argv, env, cwd, timeout, log):
        full = self.prefix + ["env", "-i"] + ["%s=%s" % kv for kv in sorted(env.items())] + argv
        with open(log, "ab") as f:
            # a session of its own: a timeout kills what the tests started too
            p = subprocess.Popen(full, cwd=cwd, stdin=subprocess.DEVNULL, stdout=f,
                                 stderr=subprocess.STDOUT, start_new_session=True)
            try:
                return p.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 15)  # nsbox cancels its sandbox on SIGTERM
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, 9)
                    p.wait()
                return "timeout"


def hung(log):
    """faulthandler's dump_traceback_later (the runner's per-test timeout)
    leaves this in the stderr it writes (the log, or the result's stderr
    in the log's JSON)."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            return "Timeout (" in f.read()
    except OSError:
        return False


def read_lines(path):
    """The runner's file: {id: (outcome, why)}, the test that was running
    when it stopped (None) and whether it reached its end."""
    tests, started, done = {}, None, False
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line cut by a kill
                if "start" in r:
                    started = r["start"]
                elif "id" in r:
                    tests[r["id"]] = (r["outcome"], r.get("why", ""))
                    started = None
                elif "done" in r:
                    done = True
    return tests, (None if done else started), done


class Runs:
    """Runs modules in one mode for one user, each to its end (a crashed
    test excluded and the module run again)."""

    def __init__(self, user, mode, args):
        self.user, self.mode, self.args = user, mode, args
        self.dir = os.path.join(user.dir, mode)
        os.makedirs(self.dir, exist_ok=True)
        if user.prefix:
            os.chown(self.dir, 65534, 65534)

    def _argv_bare(self, home, module, out, ids):
        env = dict(SCRUBBED_ENV, HOME=home, TMPDIR=home)
        return env, [PYTHON, "-I", "-B", self.user.runner, module, out, str(self.args.test_timeout)] + ids

    def once(self, modules, ids_of, tag):
        """One pass over MODULES ({module: ids or []}); the runner's files."""
        outs = {}
        if self.mode == "warm":
            return self._warm(modules, ids_of, tag)
        with concurrent.futures.ThreadPoolExecutor(self.args.jobs) as pool:
            futs = {m: pool.submit(self._one, m, ids_of.get(m, []), tag) for m in modules}
            for m, f in futs.items():
                outs[m] = f.result()
        return outs

    def _one(self, module, ids, tag):
        work = self.user.mkdir(self.mode, "%s.%s" % (module, tag), short=self.mode == "bare")
        log = os.path.join(self.dir, "%s.%s.log" % (module, tag))
        wall = self.args.wall_time
        if self.mode == "bare":
            out = os.path.join(work, "out.jsonl")
            env, argv = self._argv_bare(work, module, out, ids)
            rc = self.user.run(argv, env, work, wall + 30, log)
        else:
            out = os.path.join(work, "out.jsonl")
            argv = [self.user.nsbox, "python", "--json", "--workspace", work] + limit_flags(wall) + \
                ["--", self.user.runner, module, "/workspace/out.jsonl", str(self.args.test_timeout)] + ids
            rc = self.user.run(argv, self.user.env, work, wall + 60, log)
        return out, rc, log

    def _warm(self, modules, ids_of, tag):
        work = self.user.mkdir(self.mode, "batch.%s" % tag)
        src = open(RUNNER, encoding="utf-8").read()
        # outside the workspace: nsbox refuses a jobs file the jobs could change
        jobs = os.path.join(self.dir, "jobs.%s.jsonl" % tag)
        with open(jobs, "w") as f:
            for m in modules:
                args = [m, "/workspace/%s.jsonl" % m, str(self.args.test_timeout)] + ids_of.get(m, [])
                f.write(json.dumps({"id": m, "kind": "python", "limits": limits(self.args.wall_time),
                                    "code": "PARITY_ARGS = %r\n%s" % (args, src)}) + "\n")
        os.chmod(jobs, 0o644)
        log = os.path.join(self.dir, "batch.%s.log" % tag)
        results = os.path.join(self.dir, "batch.%s.jsonl" % tag)
        if self.user.prefix:
            open(results, "w").close()
            os.chown(results, 65534, 65534)
        # the limits as the batch's flags too, not only each job's: under the
        # rlimit backend a warm job got the batch's RLIMIT_AS (256M by
        # default), not its line's limits.memory (reported in issue #26)
        argv = [self.user.nsbox, "batch", "--warm", "-j", str(self.args.jobs), "--workspace", work] + \
            limit_flags(self.args.wall_time) + ["--result", results, jobs]
        rc = self.user.run(argv, self.user.env, work, self.args.wall_time * len(modules) + 120, log)
        lines = {}
        if os.path.exists(results):
            for line in open(results, encoding="utf-8", errors="replace"):
                try:
                    r = json.loads(line)
                    lines[r["id"]] = r
                except (ValueError, KeyError):
                    pass
        outs = {}
        for m in modules:
            r = lines.get(m)
            status = rc if r is None else "%s%s start=%s%s" % (
                r.get("status"), " " + r["limit"] if r.get("limit") else "", r.get("start"),
                " (%s)" % r["start_reason"] if r.get("start_reason") else "")
            mlog = log
            if r is not None:  # the job's own streams, as cold's log has them
                mlog = os.path.join(self.dir, "%s.%s.log" % (m, tag))
                with open(mlog, "w", encoding="utf-8") as f:
                    json.dump(r, f, indent=1)
            outs[m] = (os.path.join(work, "%s.jsonl" % m), status, mlog)
        return outs

    def complete(self, modules, ids_of=None, tag="main"):
        """{module: (tests, status)} with crashed tests excluded and rerun."""
        ids_of = dict(ids_of or {})
        results = {m: {} for m in modules}
        status = {}
        pending = list(modules)
        for attempt in range(self.args.max_crashes + 1):
            outs = self.once(pending, ids_of, "%s%d" % (tag, attempt))
            again = []
            for m in pending:
                out, rc, log = outs[m]
                tests, crashed, done = read_lines(out)
                results[m].update(tests)
                status.setdefault(m, []).append(str(rc))
                if done or crashed is None:
                    if not done:
                        results[m]["test.%s::run" % m] = ("crash", "no result (status %s), see %s" % (rc, log))
                    continue
                results[m][crashed] = ("crash", "%s, status %s, see %s" % (
                    "hung (over %ss)" % self.args.test_timeout if hung(log) else "died", rc, log))
                ids_of[m] = ids_of.get(m, []) + ["-" + crashed]
                if attempt < self.args.max_crashes:
                    again.append(m)
            pending = again
            if not pending:
                break
        return results, status


# ---------------------------------------------------------------- comparing

def differences(bare, other):
    """[(id, bare outcome, other outcome)] between two {id: (outcome, why)}.
    A test only one side ran is `missing` on the other."""
    out = []
    for i in sorted(set(bare) | set(other)):
        a = bare.get(i, ("missing", ""))[0]
        b = other.get(i, ("missing", ""))[0]
        if a != b:
            out.append((i, a, b))
    return out


class Entry:
    """One allow-list line: MODES USERS BARE>SANDBOX PATTERN CAUSE..."""

    def __init__(self, where, line):
        f = line.split(None, 4)
        if len(f) < 5 or ">" not in f[2]:
            raise ValueError("%s: want MODES USERS BARE>SANDBOX PATTERN CAUSE: %r" % (where, line))
        self.where, self.text = where, line
        self.modes = MODES[1:] if f[0] == "any" else f[0].split(",")
        self.users = ("root", "unpriv") if f[1] == "any" else f[1].split(",")
        self.before, self.after = (x.split("|") for x in f[2].split(">", 1))
        self.pattern, self.cause = f[3], f[4].strip()
        for m in self.modes:
            if m not in MODES[1:]:
                raise ValueError("%s: mode %r (cold, warm or any)" % (where, m))
        for u in self.users:
            if u not in ("root", "unpriv"):
                raise ValueError("%s: user %r (root, unpriv or any)" % (where, u))
        for o in self.before + self.after:
            if o != "*" and o not in OUTCOMES:
                raise ValueError("%s: outcome %r (one of %s or *)" % (where, o, ", ".join(OUTCOMES)))
        parts = self.pattern.split(".")
        # the module must be named literally: it decides where the entry is
        # checked (test.MODULE, or a helper module a test module loads, as
        # test_datetime's test.datetimetester)
        if len(parts) < 2 or parts[0] != "test" or not parts[1] or any(c in parts[1] for c in "*?["):
            raise ValueError("%s: pattern must start with test.MODULE (no wildcard there): %r"
                             % (where, self.pattern))
        self.module = parts[1].split("::")[0]
        self.hits = {}  # (user, mode): differences matched

    def matches(self, user, mode, test_id, a, b):
        return (mode in self.modes and user in self.users
                and ("*" in self.before or a in self.before)
                and ("*" in self.after or b in self.after)
                and fnmatch.fnmatchcase(test_id, self.pattern))


def read_allow(path):
    entries = []
    if not path:
        return entries
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                entries.append(Entry("%s:%d" % (path, n), line))
    return entries


def module_level(m):
    return ("test." + m, "test.%s::run" % m)


def diffs_of(m, bare, other):
    """The differences that mean something: a test missing on a side whose
    module did not import or did not finish is a consequence of that, which
    is its own difference."""
    out = []
    for i, a, b in differences(bare, other):
        if a == "missing" and any(x in bare for x in module_level(m)):
            continue
        if b == "missing" and any(x in other for x in module_level(m)):
            continue
        out.append((i, a, b))
    return out


RERUNNABLE = ("pass", "fail", "error", "skip", "xfail", "xpass")


def confirm(user, mode, args, bare, other, found):
    """Runs the differing tests again, bare and sandboxed; returns the set of
    (module, id) whose difference did not come back."""
    ids_of = {}
    for m, ds in found.items():
        ids = [i for i, a, b in ds if a in RERUNNABLE and b in RERUNNABLE and i not in module_level(m)]
        if ids:
            ids_of[m] = ids
    if not ids_of:
        return set()
    rb, _ = Runs(user, "bare", args).complete(list(ids_of), ids_of, "rerun")
    ro, _ = Runs(user, mode, args).complete(list(ids_of), ids_of, "rerun")
    gone = set()
    for m, ids in ids_of.items():
        for i in ids:
            if i in rb[m] and i in ro[m] and rb[m][i][0] == ro[m][i][0]:
                gone.add((m, i))
    return gone


def run_user(user, args, modules):
    """{mode: {module: [(id, a, b, why_a, why_b, confirmed)]}}, tests counted."""
    t0 = time.monotonic()
    bare, bare_status = Runs(user, "bare", args).complete(modules)
    print("%s bare: %d modules in %.0fs" % (user.name, len(modules), time.monotonic() - t0), flush=True)
    found_all, counts = {}, {"tests": sum(len(bare[m]) for m in modules),
                             "id_modules": {i.split(".")[1].split("::")[0] for m in modules
                                            for i in bare[m] if i.startswith("test.")}}
    for mode in args.modes:
        t1 = time.monotonic()
        other, status = Runs(user, mode, args).complete(modules)
        found = {m: diffs_of(m, bare[m], other[m]) for m in modules}
        found = {m: ds for m, ds in found.items() if ds}
        gone = confirm(user, mode, args, bare, other, found) if args.confirm else set()
        found_all[mode] = {
            m: [(i, a, b, bare[m].get(i, ("", ""))[1], other[m].get(i, ("", ""))[1], (m, i) not in gone)
                for i, a, b in ds] for m, ds in found.items()}
        print("%s %s: %d modules in %.0fs, %d differences (%d unconfirmed)" % (
            user.name, mode, len(modules), time.monotonic() - t1,
            sum(len(ds) for ds in found.values()), len(gone)), flush=True)
    return found_all, counts


def check(entries, results, users, modes, modules):
    """Matches each difference to the allow-list; the table's rows and the
    unexpected differences and stale entries."""
    rows, unexpected = [], []
    for u in users:
        found_all, counts = results[u]
        for mode in modes:
            n = allowed = unconfirmed = 0
            bad = []
            for m, ds in sorted(found_all[mode].items()):
                for i, a, b, wa, wb, confirmed in ds:
                    hit = [e for e in entries if e.matches(u, mode, i, a, b)]
                    for e in hit:
                        e.hits[(u, mode)] = e.hits.get((u, mode), 0) + 1
                    if not confirmed:
                        unconfirmed += 1
                        continue
                    n += 1
                    if hit:
                        allowed += 1
                    else:
                        bad.append("%s %s %s>%s %s  (bare: %s | %s: %s)" % (mode, u, a, b, i, wa, mode, wb))
            unexpected += bad
            rows.append((u, mode, len(modules), counts["tests"], n, allowed, len(bad), unconfirmed))
    # stale: an entry that matched nothing for a user and mode it names that
    # ran (its module included): it no longer differs there, so it must go
    # or name fewer users or modes
    ran = set(modules)  # and the helper modules whose tests they ran
    for u in users:
        ran |= results[u][1]["id_modules"]
    stale = []
    for e in entries:
        if e.module not in ran:
            continue
        for u in users:
            for mode in modes:
                if u in e.users and mode in e.modes and not e.hits.get((u, mode)):
                    stale.append((e, u, mode))
    return rows, unexpected, stale


def write_report(path, results, users, modes, entries):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# parity differences (bare > sandbox)\n\n")
        for u in users:
            found_all = results[u][0]
            for mode in modes:
                for m, ds in sorted(found_all[mode].items()):
                    f.write("## %s %s %s\n\n" % (m, mode, u))
                    for i, a, b, wa, wb, confirmed in ds:
                        hit = [e for e in entries if e.matches(u, mode, i, a, b)]
                        f.write("- `%s` %s>%s%s%s\n  - bare: %s\n  - %s: %s\n" % (
                            i, a, b, "" if confirmed else " (unconfirmed)",
                            " — allowed: " + hit[0].cause if hit else "", wa, mode, wb))
                    f.write("\n")


def read_modules(args):
    mods = list(args.module)
    for path in args.modules or []:
        with open(path) as f:
            mods += [w for line in f for w in line.split("#", 1)[0].split()]
    return mods


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module", nargs="*", help="test modules (test_json ...)")
    ap.add_argument("--modules", action="append", help="a file of module names (# comments)")
    ap.add_argument("--nsbox", default=os.environ.get("NSBOX", "nsbox"))
    ap.add_argument("--allow", help="the allow-list (default: none, every difference is listed)")
    ap.add_argument("--modes", default="cold,warm", help="sandboxed modes to compare with bare")
    ap.add_argument("--users", default=None,
                    help="root,unpriv, or self (the caller); default: both as root, else unpriv")
    ap.add_argument("--as-root-only", action="store_true",
                    help="skip (exit 77) unless run as root: as another user, --users self covers it")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="modules at once (and batch -j)")
    ap.add_argument("--wall-time", type=int, default=600, help="seconds a module may take")
    ap.add_argument("--test-timeout", type=int, default=60, help="seconds one test may take")
    ap.add_argument("--max-crashes", type=int, default=4, help="crashed or hung tests left out per module")
    ap.add_argument("--no-confirm", dest="confirm", action="store_false",
                    help="count every difference, without running it again")
    ap.add_argument("--report", help="write every difference to this markdown file")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (printed)")
    args = ap.parse_args(argv)
    args.modes = args.modes.split(",")
    modules = read_modules(args)
    if not modules:
        ap.error("no modules")
    if args.as_root_only and os.getuid() != 0:
        print("not root: the run as the caller (--users self) is already unprivileged")
        return 0 if os.environ.get("NSBOX_TESTS_MUST_RUN") == "1" else 77
    if not os.path.isdir("/usr/lib/python3.11/test/support"):
        # an honest skip, or a failure where every test must run (CI)
        print("no CPython test suite: install libpython3.11-testsuite (scripts/deps)")
        return 1 if os.environ.get("NSBOX_TESTS_MUST_RUN") == "1" else 77
    me = "root" if os.getuid() == 0 else "unpriv"
    users = args.users.split(",") if args.users else (["root", "unpriv"] if me == "root" else [me])
    users = [me if u == "self" else u for u in users]
    if "root" in users and os.getuid() != 0:
        ap.error("--users root needs root")
    entries = read_allow(args.allow)
    base = tempfile.mkdtemp(prefix="nsbox-parity.", dir="/var/tmp")
    os.chmod(base, 0o755)
    results = {}
    t0 = time.monotonic()
    try:
        for u in users:
            user = User(u, base, os.path.abspath(args.nsbox))
            try:
                results[u] = run_user(user, args, modules)
            finally:
                if not args.keep:
                    user.cleanup()
    finally:
        if args.keep:
            print("work directory:", base)
        else:
            shutil.rmtree(base, ignore_errors=True)
    rows, unexpected, stale = check(entries, results, users, args.modes, modules)
    if args.report:
        write_report(args.report, results, users, args.modes, entries)
    print("\n%-7s %-5s %8s %7s %12s %8s %11s %12s" % (
        "user", "mode", "modules", "tests", "differences", "allowed", "unexpected", "unconfirmed"))
    for r in rows:
        print("%-7s %-5s %8d %7d %12d %8d %11d %12d" % r)
    print("allow-list: %d entries, %d stale; %.0fs" % (len(entries), len(stale), time.monotonic() - t0))
    for line in unexpected:
        print("UNEXPECTED", line)
    for e, u, mode in stale:
        print("STALE %s: %s (no longer differs for %s %s: remove it, or narrow it)" % (e.where, e.text, u, mode))
    return 1 if (unexpected or stale) else 0


if __name__ == "__main__":
    sys.exit(main())
