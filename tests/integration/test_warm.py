"""Warm starts (`nsbox batch --warm`, issue #14, docs/warm-start.md).

- Parity: 200 generated snippets run cold and warm: equal status, limit,
  exit code, signal, stdout and stderr; warm lines say `start: warm` and
  `protections.net: shared-empty`, with every other protection as cold.
- Leakage: what a job leaves (files, abstract sockets, SysV IPC, an mqueue,
  monkeypatches, sys.modules, a thread, a daemon, the environment, ...) is
  not seen by the next job of the same zygote nor by a concurrent job; no job
  reaches the zygote or another job (signal, ptrace, pidfd, connect).
- Faults: the zygote and nsbox SIGKILLed at seeded random moments: every
  written line is right or `status: error`, never a wrong answer; nothing is
  left on the host; after a zygote's death later jobs run warm again.
- Refusals: where a warm start is not had, the job runs cold and says why.

- judge --warm: every case starts warm, with the cold outcome.

This file is the meson test `warm` (and `warm-unprivileged`, through
as_nobody.sh); the integration suite's discovery leaves it out (load_tests
below) so that it runs once per user, in its own suite.
"""
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest
import uuid

import hoststate
import warmtree
from nsbtest import NSBOX, SandboxTest, processes_with

ROOT = os.geteuid() == 0
SEED = int(os.environ.get("NSBOX_WARM_SEED", "0")) or random.SystemRandom().randrange(1, 1 << 30)
_probe = {}


def load_tests(loader, tests, pattern):
    # the integration suite discovers test_*.py: this file is its own suite
    if pattern is not None and pattern != "test_warm.py":
        return unittest.TestSuite()
    return tests


def jsonl(jobs):
    return "".join(json.dumps(j) + "\n" for j in jobs).encode()


def py(id_, code, **kw):
    return dict(id=id_, kind="python", code=code, **kw)


def warm_missing():
    """None when `nsbox batch --warm` runs a job; else why not (cached)."""
    if "why" not in _probe:
        try:
            p = subprocess.run([NSBOX, "batch", "--warm", "-j", "1", "-"], input=jsonl([py("probe", "print(6 * 7)")]),
                               capture_output=True, timeout=120)
            why = None
            if p.returncode == 125 or not p.stdout.strip():
                why = "exit %d, stderr: %s" % (p.returncode, p.stderr.decode(errors="replace").strip()[-600:])
        except subprocess.TimeoutExpired:
            why = "a one-job warm batch did not end within 120 s"
        _probe["why"] = why
    return _probe["why"]


class WarmTest(SandboxTest):
    def setUp(self):
        super().setUp()
        why = warm_missing()
        if why:
            # not a skip: the suite tests a feature that must exist
            self.fail("`nsbox batch --warm` is not available: " + why)

    def batch(self, jobs, *opts, timeout=900):
        """Runs one batch over @jobs; returns (proc, {id: result line})."""
        p = self.nsbox("batch", *opts, "-", input=jsonl(jobs), timeout=timeout)
        out = {}
        for line in p.stdout.decode().splitlines():
            d = json.loads(line)
            self.assertNotIn(d["id"], out, "two lines for one job")
            out[d["id"]] = d
        self.assertEqual(sorted(map(str, out)), sorted(str(j["id"]) for j in jobs),
                         "not one line per job; stderr: %s" % p.stderr.decode(errors="replace")[-2000:])
        return p, out

    def live(self, *args):
        b = warmtree.LiveBatch(NSBOX, *args)
        self.addCleanup(b.kill)
        return b

    def assert_warm(self, res):
        self.assertEqual(res.get("start"), "warm", "not started warm: start=%r start_reason=%r error=%r"
                         % (res.get("start"), res.get("start_reason"), res.get("error")))
        self.assertIsNone(res.get("start_reason"), res)
        self.assertEqual(res["protections"]["net"], "shared-empty", res["protections"])

    def assert_ok(self, res, stdout=None):
        self.assertEqual((res["status"], res["exit_code"]), ("exited", 0),
                         (res.get("error"), res["stderr"]["text"][-3000:], res["stdout"]["text"][-1000:]))
        if stdout is not None:
            self.assertEqual(res["stdout"]["text"], stdout)


def elf(path):
    """Whether @path is an executable ELF binary."""
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF" and os.access(path, os.X_OK)
    except OSError:
        return False


# ---------------------------------------------------------------- parity

NORMAL = {"wall_time": "30s"}

IDENTITY = r'''
G = sorted(globals())
import json, os, resource, signal, sys
def fds():
    return sorted(int(x) for x in os.listdir("/proc/self/fd"))
status = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    if k in ("Uid", "Gid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Groups"):
        status[k] = v.split()
rl = {n: resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n.startswith("RLIMIT_")}
sig = {n: str(signal.getsignal(getattr(signal, n))) for n in ("SIGINT", "SIGTERM", "SIGPIPE", "SIGXFSZ", "SIGCHLD", "SIGHUP", "SIGUSR1")}
streams = {n: [s.encoding, s.errors, s.line_buffering, s.write_through, s.isatty(), s.fileno()]
           for n, s in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr))}
print(json.dumps({
    "k": %(k)d, "file": __file__, "argv": sys.argv, "path": sys.path, "name": __name__,
    "globals": G, "cached": __cached__, "package": __package__, "spec": repr(__spec__),
    "loader": type(__loader__).__name__, "builtins": type(__builtins__).__name__, "doc": __doc__,
    "flags": [sys.flags.isolated, sys.flags.dont_write_bytecode, sys.flags.safe_path, sys.flags.ignore_environment,
              sys.flags.no_user_site, sys.flags.optimize, sys.flags.hash_randomization],
    "orig_argv": sys.orig_argv, "executable": sys.executable, "prefix": sys.prefix,
    "environ": sorted(os.environ.items()), "cwd": os.getcwd(), "root": sorted(os.listdir("/")),
    "dev": sorted(os.listdir("/dev")), "tmp": sorted(os.listdir("/tmp")), "workspace": sorted(os.listdir("/workspace")),
    "cmdline": open("/proc/self/cmdline").read(), "umask": os.umask(0o22), "fds": fds(), "status": status,
    "rlimits": rl, "signals": sig, "streams": streams, "recursionlimit": sys.getrecursionlimit(),
    "main_is_globals": sys.modules["__main__"].__dict__ is globals(), "pid": os.getpid(), "ppid": os.getppid(),
    "pgrp_is_pid": os.getpgrp() == os.getpid(), "sid_is_pid": os.getsid(0) == os.getpid(),
    "hostname": os.uname().nodename, "cgroup": open("/proc/self/cgroup").read(),
    "stdin": sys.stdin.read(), "threads": __import__("threading").active_count(),
}, sort_keys=True))
'''


# The job's stack is its own (#26): no frame of the zygote's under it.
FRAME_SNIPPETS = [
    ("getframe", lambda k: py(0, "import sys\ntry:\n    sys._getframe(1)\n    print('a caller', %d)\n"
                                 "except ValueError as e:\n    print('ValueError', e, %d)\n" % (k, k))),
    ("inspect_stack", lambda k: py(0, "import inspect\ndef f():\n    return [(x.function, x.filename, x.lineno) for x in inspect.stack()]\n"
                                      "print(inspect.stack()[0][1:4], len(inspect.stack()), %d)\nprint(f())\n" % k)),
    ("print_stack", lambda k: py(0, "import traceback\ntraceback.print_stack()\ndef f():\n    traceback.print_stack()\nf()\n"
                                    "print(len(traceback.extract_stack()), %d)\n" % k)),
    ("warn_stacklevel", lambda k: py(0, "import warnings\nwarnings.warn('two %d', stacklevel=2)\nwarnings.warn('three', stacklevel=3)\n"
                                        "def f():\n    warnings.warn('in f', stacklevel=3)\nf()\n" % k)),
    ("recursion_depth", lambda k: py(0, "import sys\nprint(type(sys.getrecursionlimit).__name__, type(sys.setrecursionlimit).__name__,\n"
                                        "      sys.getrecursionlimit())\nn = 0\ndef f():\n    global n\n    n += 1\n    f()\n"
                                        "for limit in (None, %d):\n    if limit:\n        sys.setrecursionlimit(limit)\n    n = 0\n"
                                        "    try:\n        f()\n    except RecursionError:\n        print('depth', n, sys.getrecursionlimit())\n"
                                        % (120 + k))),
    ("hook_stack", lambda k: py(0, "import sys, traceback\ndef hook(t, v, tb):\n    print('hook stack', len(traceback.extract_stack()), %d)\n"
                                   "    sys.__excepthook__(t, v, tb)\nsys.excepthook = hook\nraise ValueError('v')\n" % k)),
]

# At a warm job's exit, what a cold interpreter's finalisation does (#26).
FINALISATION_SNIPPETS = [
    ("del_at_exit", lambda k: py(0, "class A:\n    def __init__(self, n):\n        self.n = n\n    def __del__(self):\n"
                                    "        print('del', self.n)\na = A(1)\n_b = A(2)\nc = [A(3)]\nprint('main %d')\n" % k)),
    ("del_sees_globals", lambda k: py(0, "import sys\nNAME = 'n%d'\nclass A:\n    def __del__(self):\n"
                                         "        print('del sees', NAME, sys is None)\na = A()\n" % k)),
    ("del_main_held", lambda k: py(0, "import json\nclass A:\n    def __del__(self):\n        print('del sees', repr(X), json)\n"
                                      "X = %d\na = A()\nimport __main__\njson.main = __main__\n" % k)),
    ("generator_finally", lambda k: py(0, "def g():\n    try:\n        yield 1\n    finally:\n        print('finally %d')\n"
                                          "x = g()\nnext(x)\nprint('main')\n" % k)),
    ("weakref_finalize", lambda k: py(0, "import weakref\nclass A:\n    pass\na, b = A(), A()\n"
                                         "weakref.finalize(a, print, 'finalized a %d')\nweakref.finalize(b, print, 'finalized b')\n"
                                         "r = weakref.ref(b, lambda r: print('callback'))\n" % k)),
    ("atexit_order", lambda k: py(0, "import atexit, sys\nfor i in range(3):\n    atexit.register(print, 'atexit', i)\n"
                                     "atexit.register(lambda: print('__file__' in globals(), sys.argv, %d))\n" % k)),
    ("atexit_last_traceback", lambda k: py(0, "import atexit, sys\natexit.register(lambda: print('last', getattr(sys, 'last_type', None), "
                                              "'__file__' in globals()))\nraise KeyError(%d)\n" % k)),
    ("del_raises", lambda k: py(0, "class A:\n    def __del__(self):\n        raise ValueError('in del %d')\na = A()\nprint('main')\n" % k)),
    ("flush_fails_exit3", lambda k: py(0, "import os, sys\nprint('lost %d')\nos.close(1)\nsys.exit(3)\n" % k)),
    ("keyboard_interrupt_subclass", lambda k: py(0, "class K(KeyboardInterrupt):\n    pass\nprint('pre', flush=True)\nraise K(%d)\n" % k)),
    ("exit_big_int", lambda k: py(0, "import sys\nsys.exit(%d + (1 << 32))\n" % (k % 7))),
    ("c_stdio", lambda k: py(0, "import ctypes\nctypes.CDLL(None).printf(b'from C %d\\n')\nprint('from python')\n" % k)),
    ("stdout_replaced", lambda k: py(0, "import io, sys\nclass W(io.StringIO):\n    def __del__(self):\n        sys.__stdout__.write('W gone: ' + self.getvalue())\n"
                                        "sys.stdout = W()\nprint('captured %d')\n" % k)),
    # a finaliser run as its module's entry goes (finalize_remove_modules):
    # the entries before it are None, those after it not yet
    ("del_in_job_module", lambda k: py(0, "import sys, types, json\nm = types.ModuleType('jobmod')\nclass A:\n"
                                          "    def __del__(self, sys=sys):\n        ms = sys.modules\n"
                                          "        print('del', len(ms), [k for k, v in ms.items() if v is None][-3:], ms.get('json') is None,\n"
                                          "              ms.get('jobmod2') is None, ms.get('late') is None, list(ms).index('jobmod'), %d)\n"
                                          "m.a = A()\nsys.modules['jobmod'] = m\nsys.modules['jobmod2'] = types.ModuleType('jobmod2')\n"
                                          "sys.modules['late'] = sys.modules['posixpath']\ndel m\n" % k)),
    ("del_in_zygote_module", lambda k: py(0, "import os, sys\nclass A:\n    def __del__(self):\n"
                                             "        print('del', sys.argv, sys.path is None, %d)\nos.keep = A()\n" % k)),
    ("unraisablehook_at_exit", lambda k: py(0, "import sys\ndef hook(u):\n    print('hook', u.exc_type.__name__)\n"
                                               "sys.unraisablehook = hook\nclass A:\n    def __del__(self):\n        1 / 0\na = A()\n"
                                               "class B:\n    def __del__(self):\n        {}[%d]\nb = [B()]\nb.append(b)\n" % k)),
    ("builtins_at_exit", lambda k: py(0, "import json, builtins\nB = builtins.__dict__\nbefore = dict(B)\nclass A:\n"
                                         "    def __del__(self):\n        print(sorted(set(before) - set(B)), sorted(set(B) - set(before)),\n"
                                         "              [(k, B[k]) for k in B if k in before and B[k] is not before[k]], %d)\n"
                                         "json.a = A()\n" % k)),
    ("low_recursion_limit", lambda k: py(0, "import sys\nclass A:\n    def __del__(self):\n"
                                            "        print('del', sys.getrecursionlimit(), %d)\na = A()\nsys.setrecursionlimit(5)\n" % k)),
    ("builtins_patched", lambda k: py(0, "import builtins, sys\nfor name in ('list', 'isinstance', 'getattr', 'id', 'len', 'zip'):\n"
                                         "    setattr(builtins, name, None)\nsys.modules = {}\nclass A:\n    def __del__(self):\n"
                                         "        sys.stdout.write('del %d\\n')\na = A()\n" % k)),
    ("daemon_stops", lambda k: py(0, "import json, sys, threading, time\nticks = []\ndef spin():\n    while True:\n"
                                     "        time.sleep(0.001)\n        ticks.append(1)\n"
                                     "threading.Thread(target=spin, daemon=True).start()\nclass A:\n    def __del__(self):\n"
                                     "        n = len(ticks)\n        time.sleep(0.05)\n"
                                     "        print('daemon ran on', len(ticks) > n, sys.is_finalizing(), %d)\n"
                                     "json.a = A()\ntime.sleep(0.01)\n" % k)),
    # a key of the job's own str subclass in a module still alive at exit
    # (held by a codec search function), in builtins and in sys: its
    # __hash__ runs only where cold's _PyModule_ClearDict sets it to None,
    # never for a lookup of the harness's (review5)
    ("str_subclass_keys", lambda k: py(0, "import builtins, codecs, os, sys, types\nw = os.write\nclass S(str):\n"
                                          "    def __hash__(self, w=w):\n        w(1, b'hash ' + str.__str__(self).encode() + b'\\n')\n"
                                          "        return str.__hash__(self)\nm = types.ModuleType('jm')\nm.__dict__[S('yy')] = 2\n"
                                          "m.__dict__['_p'] = 3\nsys.modules['jm'] = m\ncodecs.register(lambda name, m=m: None)\n"
                                          "builtins.__dict__[S('bq')] = 1\nsys.__dict__[S('sq')] = 2\ndel m\nprint('main %d')\n" % k)),
    # sys.modules rebound to a dict of the job's: what it holds goes as
    # cold's _PyModule_ClearDict(sys) sets sys's names to None, sys.stderr
    # still there (not as the dict is emptied) (review5)
    ("sys_modules_rebound", lambda k: py(0, "import sys, types, os, builtins\nw = os.write\nB, S = builtins.__dict__, sys.__dict__\n"
                                            "class A:\n    def __del__(self, w=w, B=B, S=S):\n"
                                            "        w(2, ('del %%r %%r %%r\\n' %% (B.get('__import__') is not None, S.get('stderr') is not None,\n"
                                            "              type(S.get('modules')).__name__)).encode())\n"
                                            "m = types.ModuleType('jm')\nm.a = A()\nsys.modules = {'jm': m, 'x': %d}\ndel m\n" % k)),
    # a job's module subclass with a __dict__ property and a
    # __getattribute__, alive at exit: its own dict is wiped as C reads it
    # (neither runs, what it holds goes) (review5)
    ("module_dict_property", lambda k: py(0, "import codecs, sys, types, os\nw = os.write\nclass A:\n"
                                             "    def __del__(self, w=w):\n        w(1, b'A del %d\\n')\nclass M(types.ModuleType):\n"
                                             "    @property\n    def __dict__(self, w=w):\n        w(1, b'__dict__ read\\n')\n        return {}\n"
                                             "    def __getattribute__(self, n, w=w):\n        w(1, b'getattribute ' + n.encode() + b'\\n')\n"
                                             "        return types.ModuleType.__getattribute__(self, n)\n"
                                             "m = M('jm')\ntypes.ModuleType.__setattr__(m, 'a', A())\nsys.modules['jm'] = m\n"
                                             "codecs.register(lambda name, m=m: None)\ndel m\nprint('main')\n" % k)),
    # what a finaliser stores in a zygote's module while the modules are
    # wiped (one run by a job's module wiped before, one by the zygote
    # module's own wiping) goes when that module is wiped, as cold (review5)
    ("set_while_wiping", lambda k: py(0, "import codecs, sys, types, os, stat\nw = os.write\nclass A:\n"
                                         "    def __init__(self, n):\n        self.n = n\n"
                                         "    def __del__(self, w=w):\n        w(1, b'A del %%d\\n' %% self.n)\nclass B:\n"
                                         "    def __init__(self, mod, n):\n        self.mod, self.n = mod, n\n"
                                         "    def __del__(self, w=w, A=A):\n        w(1, b'B del %%d\\n' %% self.n)\n"
                                         "        setattr(self.mod, 'late', A(self.n))\nm = types.ModuleType('jm')\nm.b = B(stat, 1)\n"
                                         "sys.modules['jm'] = m\ncodecs.register(lambda name, m=m: None)\nos.b = B(os, 2)\n"
                                         "del m\nprint('main %d')\n" % k)),
    # what the job set in a zygote's module it then took out of
    # sys.modules goes at exit, as cold (review5)
    ("zygote_module_taken_out", lambda k: py(0, "import os, sys\nw = os.write\nclass A:\n"
                                                "    def __del__(self, w=w):\n        w(1, b'A del %d\\n')\n"
                                                "os.x = A()\ndel sys.modules['os']\nprint('main')\n" % k)),
    ("daemonless_threads", lambda k: py(0, "import threading, time\ndef late():\n    time.sleep(0.1)\n    print('late %d')\n"
                                           "t = threading.Thread(target=late)\nt.start()\nimport atexit\natexit.register(print, 'atexit after join', t.is_alive())\n" % k)),
]


# The harness that ends a warm job is not the job's: a tracer, profiler,
# audit hook or gc callback the job left sees only what it sees cold, and an
# error at exit is reported as cold reports it (#26, the review's F1-F5, F7).
HARNESS_SNIPPETS = [
    ("trace_budget", lambda k: py(0, "import sys\nn = [0]\ndef tr(frame, event, arg):\n    n[0] += 1\n"
                                     "    if n[0] > 200:\n        raise TimeoutError('budget')\n    return tr\n"
                                     "sys.settrace(tr)\nfor i in range(3):\n    print(i, %d)\n" % k)),
    ("trace_foreign", lambda k: py(0, "import sys\ndef tr(frame, event, arg):\n    if frame.f_code.co_filename != __file__:\n"
                                      "        raise TimeoutError(frame.f_code.co_name)\n    return tr\n"
                                      "sys.settrace(tr)\nprint('buffered %d', end='')\n" % k)),
    ("trace_at_exit", lambda k: py(0, "import sys, atexit, threading\nev = []\ndef tr(frame, event, arg):\n"
                                      "    ev.append(frame.f_code.co_name)\n    return tr\n"
                                      "atexit.register(lambda: sys.__stdout__.write('%%s %d\\n' %% sorted(set(ev))))\n"
                                      "threading.settrace(tr)\nsys.settrace(tr)\n" % k)),
    ("setprofile", lambda k: py(0, "import sys, atexit\ncalls = []\ndef prof(frame, event, arg):\n"
                                   "    calls.append((event, frame.f_code.co_name, frame.f_code.co_filename))\n"
                                   "sys.setprofile(prof)\ndef f():\n    return %d\nf()\n"
                                   "atexit.register(lambda: sys.__stdout__.write('%%d %%s\\n' %% (len(calls), sorted(set(calls)))))\n" % k)),
    ("cprofile_atexit", lambda k: py(0, "import cProfile, pstats, atexit\npr = cProfile.Profile()\npr.enable()\n"
                                        "def f():\n    return sum(range(%d))\nf()\ndef report():\n    pr.disable()\n"
                                        "    s = pstats.Stats(pr)\n    print(s.total_calls, sorted(k[2] for k in s.stats))\n"
                                        "atexit.register(report)\n" % k)),
    ("audit_allow_list", lambda k: py(0, "import sys\nseen = {}\n"
                                         "exec('def hook(ev, args):\\n    seen[ev] = seen.get(ev, 0) + 1\\n"
                                         "    if ev not in (\"import\", \"open\", \"os.listdir\"):\\n        raise RuntimeError(\"not allowed: \" + ev)\\n',"
                                         " {'seen': seen}, ns := {})\nsys.addaudithook(ns['hook'])\nimport atexit\n"
                                         "atexit.register(lambda: print(sorted(seen.items())))\nclass A:\n"
                                         "    def __del__(self, out=sys.__stdout__, seen=seen):\n"
                                         "        out.write('del %%s %d\\n' %% sorted(seen.items()))\n        out.flush()\na = A()\n" % k)),
    ("gc_at_exit", lambda k: py(0, "import gc, sys, types\nn = []\nexec('def cb(phase, info):\\n    n.append(phase)', {'n': n}, ns := {})\n"
                                   "gc.callbacks.append(ns['cb'])\n%sclass A:\n"
                                   "    def __del__(self, out=sys.__stdout__, gc=gc, n=n, G=types.GeneratorType):\n"
                                   "        out.write('%%d %%s %d\\n' %% (len(n), [o.__name__ for o in gc.get_objects() if isinstance(o, G)]))\n"
                                   "        out.flush()\na = A()\n" % ("gc.disable()\n" if k % 2 else "", k))),
    ("stdout_without_flush", lambda k: py(0, "import sys\nclass Upper:\n    def write(self, s):\n        sys.__stdout__.write(s.upper())\n"
                                             "sys.stdout = Upper()\nprint('hello %d')\n" % k)),
    ("exit_code_property", lambda k: py(0, "class E(SystemExit):\n    code = property(lambda s: 1 / 0)\nraise E(%d)\n" % k)),
    ("exit_str_raises", lambda k: py(0, "import sys\nclass O:\n    def __str__(self):\n        raise ValueError('no str %d')\n"
                                        "print('main')\nsys.exit(O())\n" % k)),
    ("exit_stderr_closed", lambda k: py(0, "import sys\nprint('main %d')\nsys.stderr.close()\nsys.exit('msg')\n" % k)),
    ("harness_names_patched", lambda k: py(0, "import _signal, gc, atexit, signal\nsignal.signal(signal.SIGUSR1, print)\n"
                                              "_signal.getsignal = _signal.signal = None\ngc.collect = None\n"
                                              "atexit._run_exitfuncs = None\nprint('patched %d')\n" % k)),
    # the finders of the folders only the zygote's imports searched are gone
    ("importer_cache", lambda k: py(0, "import sys\nprint(sorted(sys.path_importer_cache), %d)\n" % k)),
]


def parity_snippets():
    """[(category, job)]: 200 jobs over every category, parameters varied
    with k so that no two jobs are the same program."""
    cats = [
        ("pass", lambda k: py(0, "x = %d\nassert x * 2 == 2 * x\nprint('ok', x)\n" % k)),
        ("assertion", lambda k: py(0, "def check(v):\n    assert v == %d, 'want %%d' %% %d\n\ncheck(%d)\n" % (k + 1, k + 1, k))),
        ("exception", lambda k: py(0, "d = {'k': %d}\nprint(d['k'])\nprint(d['missing%d'])\n" % (k, k))),
        ("traceback", lambda k: py(0, "def a(n):\n    return b(n) + 1\n\ndef b(n):\n    return c(n) * 2\n\n"
                                      "def c(n):\n    return n // (n - %d)\n\nprint('start')\nprint(a(%d))\n" % (k, k))),
        ("chained", lambda k: py(0, "try:\n    int('x%d')\nexcept ValueError as e:\n"
                                    "    raise RuntimeError('wrapped %d') from e\n" % (k, k))),
        ("context", lambda k: py(0, "try:\n    [][%d]\nexcept IndexError:\n    {}['k%d']\n" % (k, k))),
        ("syntax", lambda k: py(0, "print('never %d')\nx = (1 +\ndef f(:\n    pass\n" % k)),
        ("indentation", lambda k: py(0, "if True:\nprint(%d)\n" % k)),
        ("exit0", lambda k: py(0, "import sys\nprint('bye %d')\nsys.exit(0)\nprint('after')\n" % k)),
        ("exit1", lambda k: py(0, "import sys\nprint('bye %d')\nsys.exit(1)\n" % k)),
        ("exit3", lambda k: py(0, "import sys\nprint('bye %d', end='')\nsys.exit(3)\n" % k)),
        ("exit255", lambda k: py(0, "import sys\nsys.stderr.write('e%d\\n')\nsys.exit(255)\n" % k)),
        ("exit_text", lambda k: py(0, "import sys\nprint('bye')\nsys.exit('text %d')\n" % k)),
        ("exit_none", lambda k: py(0, "import sys\nprint(%d)\nsys.exit(None)\n" % k)),
        ("exit_builtin", lambda k: py(0, "print(%d)\nexit(%d)\n" % (k, k % 7))),
        ("os_exit_buffered", lambda k: py(0, "import os\nprint('lost %d')\nos._exit(%d)\n" % (k, 5 + k % 3))),
        ("keyboard_interrupt", lambda k: py(0, "print('pre %d', flush=True)\nraise KeyboardInterrupt\n" % k)),
        ("cpu_loop", lambda k: py(0, "x = %d\nwhile True:\n    x += 1\n" % k,
                                  limits={"cpu_time": "1s", "wall_time": "30s"})),
        ("wall_loop", lambda k: py(0, "x = %d\nwhile True:\n    x += 1\n" % k,
                                   limits={"wall_time": "700ms", "cpu_time": "30s"})),
        ("sleep_loop", lambda k: py(0, "import time\nprint('sleeping %d', flush=True)\nwhile True:\n    time.sleep(0.05)\n" % k,
                                    limits={"wall_time": "500ms"})),
        ("flood", lambda k: py(0, "line = 'flood %d ' * 9\nwhile True:\n    print(line)\n" % k,
                               limits={"output_limit": "16K", "wall_time": "30s"})),
        ("memory_bomb", lambda k: py(0, "x = []\nwhile True:\n    x.append(b'%d' * (1 << 20))\n" % (k % 10),
                                     limits={"memory": "64M", "wall_time": "30s"})),
        ("fork_bomb", lambda k: py(0, "import os, time\nn = 0\ntry:\n    while n < 500:\n"
                                      "        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n"
                                      "        n += 1\nexcept OSError as e:\n    print('refused', type(e).__name__, %d)\n" % k,
                                   limits={"pids": "8", "wall_time": "30s"})),
        ("stdin_read", lambda k: py(0, "import sys\ndata = sys.stdin.read()\nprint(len(data), data.upper())\n",
                                    stdin="line %d\nsecond line\n" % k)),
        ("stdin_lines", lambda k: py(0, "import sys\nfor line in sys.stdin:\n    print(line.strip()[::-1])\n",
                                     stdin="".join("row %d-%d\n" % (k, i) for i in range(k % 5 + 1)))),
        ("stdin_eof", lambda k: py(0, "print('ask %d')\nname = input()\n" % k)),
        ("tmp_writer", lambda k: py(0, "import os\nopen('/tmp/f%d', 'w').write('x' * %d)\n"
                                       "print(sorted(os.listdir('/tmp')), os.path.getsize('/tmp/f%d'), open('/tmp/f%d').read(3))\n"
                                       % (k, k + 1, k, k))),
        ("workspace_writer", lambda k: py(0, "import os\nos.mkdir('/workspace/d%d')\nopen('/workspace/d%d/w', 'w').write('%d')\n"
                                             "print(sorted(os.listdir('/workspace')), open('d%d/w').read())\n" % (k, k, k, k))),
        ("atexit", lambda k: py(0, "import atexit\natexit.register(print, 'atexit %d')\nprint('main')\n" % k)),
        ("atexit_raise", lambda k: py(0, "import atexit\natexit.register(lambda: print('cleanup %d'))\n"
                                         "print('main', end='')\nraise ValueError('v%d')\n" % (k, k))),
        ("no_newline", lambda k: py(0, "import sys\nprint('partial %d', end='')\nsys.stdout.write('+more')\n" % k)),
        ("stderr_mix", lambda k: py(0, "import sys\nfor i in range(%d):\n    print('out', i)\n    print('err', i, file=sys.stderr)\n"
                                       % (k % 6 + 1))),
        ("cookie_latin1", lambda k: py(0, "# -*- coding: latin-1 -*-\ns = 'caf\u00e9 %d'\nprint(len(s), ascii(s))\n" % k)),
        ("cookie_bad", lambda k: py(0, "# coding: nsbox-no-such-codec-%d\nprint(1)\n" % k)),
        ("self_sigkill", lambda k: py(0, "import os\nprint('before %d', flush=True)\nos.kill(os.getpid(), 9)\nprint('after')\n" % k)),
        ("self_sigterm", lambda k: py(0, "import os, signal\nprint('before %d', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\n"
                                         "import time\ntime.sleep(5)\nprint('after')\n" % k)),
        ("pids", lambda k: py(0, "import os\nprint(%d, os.getpid(), os.getppid(), os.getpgrp() == os.getpid())\n" % k)),
        ("child_pids", lambda k: py(0, "import os\nr, w = os.pipe()\npid = os.fork()\nif pid == 0:\n"
                                       "    os.write(w, b'%%d %%d' %% (os.getpid(), os.getppid()))\n    os._exit(0)\n"
                                       "os.waitpid(pid, 0)\nprint(%d, pid, os.read(r, 100).decode())\n" % k)),
        ("signal_init", lambda k: py(0, "import os, signal\nfor s in (signal.SIGKILL, signal.SIGTERM, 0):\n    try:\n"
                                        "        os.kill(1, s)\n        print('sent', int(s))\n    except OSError as e:\n"
                                        "        print('refused', int(s), e.errno)\nprint(%d)\n" % k)),
        ("identity", lambda k: py(0, IDENTITY % {"k": k}, stdin="in %d" % k)),
        ("warning", lambda k: py(0, "import warnings\nwarnings.warn('careful %d')\nprint('went on')\n" % k)),
        ("thread_exception", lambda k: py(0, "import threading\nt = threading.Thread(target=lambda: 1 / 0)\nt.start()\nt.join()\n"
                                             "print('main %d', threading.current_thread().name)\n" % k)),
        ("recursion", lambda k: py(0, "def f(n):\n    return f(n + 1)\n\nprint(%d)\nf(0)\n" % k)),
        ("inspect_source", lambda k: py(0, "import inspect\n\ndef g(x):\n    return x * %d\n\nprint(inspect.getsource(g), g(2))\n" % k)),
        ("self_read", lambda k: py(0, "src = open(__file__).read()\nprint(len(src), src.splitlines()[-1])\n# tail %d\n" % k)),
        ("seeded_random", lambda k: py(0, "import random\nr = random.Random(%d)\nprint(r.random(), r.randrange(1000))\n" % k)),
        ("big_output", lambda k: py(0, "print('y' * %d)\nprint('end')\n" % (20000 + k))),
        ("test_code", lambda k: py(0, "def f(x):\n    return x + %d\n" % k, test_code="assert f(1) == %d\nprint('tested')\n" % (k + 1))),
        ("test_code_fail", lambda k: py(0, "def f(x):\n    return x\n", test_code="assert f(1) == %d, 'f(1)'\n" % (k + 2))),
        ("stdout_closed", lambda k: py(0, "import os\nprint('lost %d')\nos.close(1)\n" % k)),
        ("excepthook", lambda k: py(0, "import sys\ndef hook(t, v, tb):\n    print('hooked', t.__name__, v)\n    sys.stdout.flush()\n"
                                       "sys.excepthook = hook\nraise LookupError(%d)\n" % k)),
        ("atexit_error", lambda k: py(0, "import atexit\nclass Bad:\n    def __repr__(self):\n        return 'Bad()'\n"
                                         "    def __call__(self):\n        raise OSError(%d, 'in atexit')\n"
                                         "atexit.register(Bad())\nprint('main')\n" % k)),
        ("atexit_exit", lambda k: py(0, "import atexit, sys\natexit.register(sys.exit, %d)\nprint('main')\n" % (k % 5))),
        ("non_daemon_thread", lambda k: py(0, "import threading, time\ndef late():\n    time.sleep(0.2)\n    print('thread done %d')\n"
                                              "threading.Thread(target=late).start()\nprint('main done')\n" % k)),
        ("sigterm_handler", lambda k: py(0, "import os, signal, sys\ndef h(s, f):\n    print('handled', s)\n    sys.exit(%d)\n"
                                            "signal.signal(signal.SIGTERM, h)\nos.kill(os.getpid(), signal.SIGTERM)\n"
                                            "import time\ntime.sleep(5)\n" % (k % 9))),
        ("abort", lambda k: py(0, "import os\nprint('aborting %d', flush=True)\nos.abort()\n" % k)),
        ("segfault", lambda k: py(0, "import ctypes\nprint('crash %d', flush=True)\nctypes.string_at(0)\n" % k)),
        ("stderr_flood", lambda k: py(0, "import sys\nwhile True:\n    sys.stderr.write('err %d ' * 9 + '\\n')\n" % k,
                                      limits={"output_limit": "16K", "wall_time": "30s"})),
        ("program_file", lambda k: py(0, "import os, errno\nst = os.stat(__file__)\n"
                                         "print(%d, oct(st.st_mode), st.st_uid, st.st_gid, st.st_size, oct(os.stat('/program').st_mode),\n"
                                         "      os.access(__file__, os.W_OK), sorted(os.listdir('/program')))\n"
                                         "try:\n    open(__file__, 'a').write('x')\nexcept OSError as e:\n    print(errno.errorcode[e.errno])\n"
                                         % k)),
        # the mount in effect at each place the job writes or reads (the
        # last one listed: a warm job's stack the zygote's below its own)
        ("mounts", lambda k: py(0, "import os\nm = {}\nfor line in open('/proc/self/mountinfo'):\n    f = line.split()\n"
                                   "    i = f.index('-')\n    if f[4] in ('/tmp', '/workspace', '/dev', '/proc'):\n"
                                   "        m[f[4]] = (f[5], f[i + 1], ','.join(sorted(o for o in f[i + 3].split(',') if o.startswith(('size=', 'nr_inodes=')))))\n"
                                   "    if f[4] == '/':\n        m['/'] = f[5]\n"
                                   "print(sorted(m.items()))\n"
                                   "for d in ('/tmp', '/workspace'):\n    s = os.statvfs(d)\n    print(d, s.f_bsize * s.f_blocks, s.f_flag)\n"
                                   "print(%d)\n" % k)),
        ("write_attempts", lambda k: py(0, "import errno, os\nfor p in ('/x', '/usr/x', '/dev/shm/x', '/proc/x', '/program/x', '/lib/x', '/tmp/x', '/workspace/x'):\n"
                                           "    try:\n        open(p, 'w').close()\n        print(p, 'ok')\n"
                                           "    except OSError as e:\n        print(p, errno.errorcode[e.errno])\nprint(%d)\n" % k)),
        ("sockets", lambda k: py(0, "import errno, socket\nfor fam, typ in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM),\n"
                                    "                 (socket.AF_NETLINK, socket.SOCK_RAW), (socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_UNIX, socket.SOCK_STREAM)):\n"
                                    "    try:\n        socket.socket(fam, typ).close()\n        print(int(fam), 'ok')\n"
                                    "    except OSError as e:\n        print(int(fam), errno.errorcode[e.errno])\n"
                                    "a, b = socket.socketpair()\na.send(b'%d')\nprint(b.recv(10))\n" % k)),
        ("subprocess", lambda k: py(0, "import subprocess, sys\nr = subprocess.run([sys.executable, '-c', 'import os, sys; print(os.getpid(), os.getppid(), sys.argv)', '%d'],\n"
                                       "                   capture_output=True, text=True)\nprint(r.returncode, r.stdout, r.stderr)\n" % k)),
        ("nice_and_ids", lambda k: py(0, "import os\nprint(%d, os.getuid(), os.geteuid(), os.getgid(), os.getgroups(), os.nice(0), os.getpriority(os.PRIO_PROCESS, 0))\n"
                                         "try:\n    os.nice(-1)\nexcept OSError as e:\n    print('nice', e.errno)\n" % k)),
    ] + FRAME_SNIPPETS + FINALISATION_SNIPPETS + HARNESS_SNIPPETS
    jobs = []
    for i in range(200):
        name, make = cats[i % len(cats)]
        job = make(i)
        job["id"] = "%03d-%s" % (i, name)
        job.setdefault("limits", NORMAL)
        jobs.append((name, job))
    return jobs


COMPARED = ("status", "limit", "exit_code", "signal", "signal_name")


def unaddressed(text):
    """@text without the objects' addresses (`<function f at 0x7f...>`),
    which differ between any two runs."""
    return re.sub(r"\b0x[0-9a-f]{6,16}\b", "0x...", text)


def diff_at(cold, warm, context=150):
    """Both texts around where they first differ."""
    n = 0
    while n < min(len(cold), len(warm)) and cold[n] == warm[n]:
        n += 1
    lo = max(0, n - context)
    return "  at char %d of %d/%d:\n  cold ...%r\n  warm ...%r" % (n, len(cold), len(warm), cold[lo:n + context],
                                                                     warm[lo:n + context])


class Parity(WarmTest):
    def test_200_snippets_cold_and_warm(self):
        snippets = parity_snippets()
        jobs = [j for _, j in snippets]
        cat = {j["id"]: c for c, j in snippets}
        pc, cold = self.batch(jobs, "-j", "2")
        pw, warm = self.batch(jobs, "-j", "2", "--warm")
        # the counts of outcomes (pass/fail/timeout), not an error among them
        self.assertEqual(pc.returncode, pw.returncode, (pc.stderr[-300:], pw.stderr[-300:]))
        diffs = []
        for job in jobs:
            i = job["id"]
            c, w = cold[i], warm[i]
            if c.get("start") != "cold" or c.get("start_reason") is not None:
                diffs.append("%s: cold line says start=%r start_reason=%r" % (i, c.get("start"), c.get("start_reason")))
            if w.get("start") != "warm" or w.get("start_reason") is not None:
                diffs.append("%s: warm line says start=%r start_reason=%r error=%r"
                             % (i, w.get("start"), w.get("start_reason"), w.get("error")))
            if c["status"] == "error":
                diffs.append("%s: the cold run failed: %r" % (i, c["error"]))
            for k in COMPARED:
                if c[k] != w[k]:
                    diffs.append("%s: %s cold %r, warm %r (warm error %r, stderr %r)"
                                 % (i, k, c[k], w[k], w.get("error"), w["stderr"]["text"][-300:]))
            for stream in ("stdout", "stderr"):
                if stream == "stderr" and c["status"] == "limit":
                    continue   # stopped at an arbitrary point: only stdout is whole (or cut at the limit)
                ct, wt = unaddressed(c[stream]["text"]), unaddressed(w[stream]["text"])
                if (ct, c[stream]["truncated"]) != (wt, w[stream]["truncated"]):
                    diffs.append("%s: %s differs:\n%s" % (i, stream, diff_at(ct, wt)))
            cp, wp = dict(c["protections"]), dict(w["protections"])
            if (cp.pop("net"), wp.pop("net")) != ("empty-netns", "shared-empty"):
                diffs.append("%s: protections.net cold %r, warm %r" % (i, c["protections"]["net"], w["protections"]["net"]))
            if cp != wp:
                diffs.append("%s: protections differ beyond net: cold %r, warm %r" % (i, cp, wp))
        self.assertEqual(diffs, [], "%d of %d parity checks failed (categories: %s):\n%s" % (
            len(diffs), len(jobs), sorted({cat[d.split(":")[0]] for d in diffs if d.split(":")[0] in cat}),
            "\n".join(diffs[:60])))
        # the snippets do what they are meant to: they prove something cold
        kinds = {(cat[i], c["status"], c["limit"]) for i, c in cold.items()}
        for need in (("cpu_loop", "limit", "cpu_time"), ("wall_loop", "limit", "wall_time"),
                     ("flood", "limit", "output"), ("self_sigkill", "signaled", None),
                     ("syntax", "exited", None), ("pass", "exited", None)):
            self.assertIn(need, kinds, "cold runs never gave %r: the parity proves less than it says" % (need,))

    def test_unclosed_files_are_written_cold_and_warm(self):
        """A file the program wrote and never closed has its content in the
        workspace after the job, warm as cold (#26: it was empty warm), and
        on a KeyboardInterrupt, sys.exit and an uncaught exception alike."""
        holders = {
            "global": "f = open('/workspace/%(n)s', 'w')\nf.write('%(n)s')\n",
            "binary": "f = open('/workspace/%(n)s', 'wb')\nf.write(b'%(n)s')\n",
            "function_global": "def w():\n    global F\n    F = open('/workspace/%(n)s', 'w')\n    F.write('%(n)s')\nw()\n",
            "cycle": "class Box:\n    pass\nb = Box()\nb.me = b\nb.f = open('/workspace/%(n)s', 'w')\nb.f.write('%(n)s')\ndel b\n",
            "class_attribute": "class K:\n    f = open('/workspace/%(n)s', 'w')\nK.f.write('%(n)s')\n",
            "frame_local": "def w():\n    f = open('/workspace/%(n)s', 'w')\n    f.write('%(n)s')\n    raise RuntimeError('with f open')\nw()\n",
            "job_module": "import json\njson.f = open('/workspace/%(n)s', 'w')\njson.f.write('%(n)s')\n",
            "zygote_module": "import os\nos.f = open('/workspace/%(n)s', 'w')\nos.f.write('%(n)s')\n",
            "sys_attribute": "import sys\nsys.f = open('/workspace/%(n)s', 'w')\nsys.f.write('%(n)s')\n",
            "builtins": "import builtins\nbuiltins.f = open('/workspace/%(n)s', 'w')\nbuiltins.f.write('%(n)s')\n",
            "generator": "def g():\n    f = open('/workspace/%(n)s', 'w')\n    f.write('%(n)s')\n    yield\ng = g()\nnext(g)\n",
        }
        endings = {"end": "", "exit": "import sys\nsys.exit(4)\n", "raise": "raise ValueError\n",
                   "interrupt": "raise KeyboardInterrupt\n"}
        jobs = [py("%s.%s" % (h, e), code % {"n": "%s.%s" % (h, e)} + end)
                for h, code in sorted(holders.items()) for e, end in sorted(endings.items())]
        got = {}
        for mode in ("cold", "warm"):
            ws = tempfile.mkdtemp(prefix="nsbox-warm-files-")
            self.addCleanup(shutil.rmtree, ws, True)
            _, out = self.batch(jobs, "-j", "2", "--workspace", ws, *(["--warm"] if mode == "warm" else []))
            for j in jobs:
                self.assertEqual(out[j["id"]].get("start"), mode, out[j["id"]])
            got[mode] = {}
            for j in jobs:
                with open(os.path.join(ws, j["id"])) as f:
                    got[mode][j["id"]] = (f.read(), out[j["id"]]["exit_code"], out[j["id"]]["signal"])
        self.assertEqual(got["warm"], got["cold"])
        # what the comparison proves: cold writes each file whole, but the
        # one in an unreachable cycle (its FileIO may be finalised, closed,
        # before the TextIOWrapper that would flush into it)
        self.assertEqual({i: v[0] for i, v in got["cold"].items() if not i.startswith("cycle.")},
                         {j["id"]: j["id"] for j in jobs if not j["id"].startswith("cycle.")})

    def test_interpreter_args_hold_warm(self):
        """--interpreter-args reach a warm job as they reach a cold one (-O
        strips asserts, -u unbuffers, -S drops site and its exit(), -X dev
        and -W error change warnings)."""
        snippets = [py("identity", IDENTITY % {"k": 0}, stdin="s"),
                    py("assert", "assert False, 'stripped by -O'\nprint('after assert', __debug__)\n"),
                    py("exit_builtin", "print('x')\nexit(4)\n"),
                    py("warning", "import warnings\nwarnings.warn('w')\nprint('after warning')\n"),
                    py("buffered", "import os\nprint('lost unless -u')\nos._exit(3)\n")]
        diffs = []
        for args in ("-I -B -u -O", "-S -I -B", "-I -B -X dev -W error"):
            _, cold = self.batch(snippets, "-j", "2", "--interpreter-args", args)
            _, warm = self.batch(snippets, "-j", "2", "--warm", "--interpreter-args", args)
            for j in snippets:
                c, w = cold[j["id"]], warm[j["id"]]
                if w.get("start") != "warm":
                    diffs.append("%s %s: start %r (%r)" % (args, j["id"], w.get("start"), w.get("start_reason")))
                for k in COMPARED:
                    if c[k] != w[k]:
                        diffs.append("%s %s: %s cold %r, warm %r" % (args, j["id"], k, c[k], w[k]))
                for stream in ("stdout", "stderr"):
                    if c[stream]["text"] != w[stream]["text"]:
                        diffs.append("%s %s: %s differs:\n%s" % (args, j["id"], stream,
                                                                 diff_at(c[stream]["text"], w[stream]["text"])))
        self.assertEqual(diffs, [], "\n".join(diffs))

    def test_atexit_handlers_run_on_older_interpreters(self):
        """Before 3.10, atexit's handlers live in the module object last
        imported: a warm job's `import atexit` once made a new one, and its
        handlers (and an atexit-printed cProfile report) never ran warm.
        Runs with each CPython 3.7-3.9 found (NSBOX_TEST_PYTHONS, colon-
        separated, or python3.7-3.9 on PATH, in /opt/*/bin or pyenv's
        versions) that runs cold here."""
        found = [p for p in os.environ.get("NSBOX_TEST_PYTHONS", "").split(":") if p]
        for v in ("3.7", "3.8", "3.9"):
            found += [shutil.which("python" + v) or ""] + sorted(glob.glob("/opt/*/bin/python" + v)) + sorted(
                glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin/python" + v)))
        found = [p for p in dict.fromkeys(map(os.path.realpath, filter(None, found))) if elf(p)]   # not a pyenv shim
        if not found:
            self.skipTest("no CPython 3.7-3.9 interpreter found (NSBOX_TEST_PYTHONS)")
        jobs = [py("atexit", "import atexit\natexit.register(print, 'at exit')\nprint('main')\n"),
                py("unregister", "import atexit\natexit.register(print, 'gone')\natexit.unregister(print)\n"
                                 "atexit.register(print, 'kept')\n")]
        ran = []
        for interp in found:
            _, cold = self.batch(jobs, "-j", "2", "--interpreter", interp)
            if any(c["status"] == "error" for c in cold.values()):
                continue    # not runnable in a sandbox here at all (its closure): nothing to compare
            _, warm = self.batch(jobs, "-j", "2", "--warm", "--interpreter", interp)
            for j in jobs:
                self.assert_warm(warm[j["id"]])
                self.assert_ok(cold[j["id"]])
                self.assertEqual(warm[j["id"]]["stdout"]["text"], cold[j["id"]]["stdout"]["text"], (interp, j["id"]))
            ran.append(interp)
        if not ran:
            self.skipTest("no CPython 3.7-3.9 found runs cold here: %s" % found)

    def test_identity_is_a_fresh_main(self):
        """The identity snippet, one warm run read closely: what `python3 -I
        -B /program/main.py` gives (the parity test compares it to cold)."""
        _, out = self.batch([py("id", IDENTITY % {"k": 1}, stdin="abc")], "-j", "1", "--warm")
        res = out["id"]
        self.assert_warm(res)
        self.assert_ok(res)
        o = json.loads(res["stdout"]["text"])
        self.assertEqual((o["file"], o["argv"], o["name"], o["cached"]), ("/program/main.py", ["/program/main.py"], "__main__", None))
        self.assertEqual(o["globals"], ["__annotations__", "__builtins__", "__cached__", "__doc__", "__file__",
                                        "__loader__", "__name__", "__package__", "__spec__"])
        self.assertEqual((o["pid"], o["ppid"], o["stdin"], o["threads"]), (2, 1, "abc", 1))
        self.assertEqual(o["cmdline"], "python3\0-I\0-B\0/program/main.py\0")
        self.assertEqual((o["status"]["NoNewPrivs"], o["status"]["Seccomp"]), (["1"], ["2"]))
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(o["status"][cap][0], 16), 0, cap)
        self.assertEqual(o["tmp"], [])
        self.assertLessEqual(set(o["fds"]), {0, 1, 2, 3})


# ---------------------------------------------------------------- leakage

POLLUTER = r'''
import builtins, ctypes, json, os, random, resource, signal, socket, sys, threading, time, types
T = %(tag)r
HOLD_UNTIL = %(hold)r        # concurrent: stay alive (everything held) until then
libc = ctypes.CDLL(None, use_errno=True)
obs = {"t_start": time.time(), "hash": hash("nsbox-warm-hash"), "random_first": random.random()}
def errname(e):
    import errno
    return errno.errorcode.get(e, str(e))
def c_ok(r):
    return "ok" if r >= 0 else errname(ctypes.get_errno())
def attempt(name, fn):
    try:
        r = fn()
        obs[name] = r if isinstance(r, str) else "ok"
    except OSError as e:
        obs[name] = errname(e.errno)
keep = []
attempt("tmp_file", lambda: open("/tmp/leak-" + T, "w").write(T))
attempt("workspace_file", lambda: open("/workspace/leak-" + T, "w").write(T))
def abstract(kind, name):
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind("\0" + name)
    if kind == socket.SOCK_STREAM:
        s.listen(8)
    s.setblocking(False)
    keep.append(s)
    return s
attempt("abstract_stream", lambda: abstract(socket.SOCK_STREAM, "leak-s-" + T) and None)
attempt("abstract_dgram", lambda: abstract(socket.SOCK_DGRAM, "leak-d-" + T) and None)
KEY = %(key)d
attempt("sem", lambda: c_ok(libc.semget(KEY, 1, 0o1000 | 0o666)))
attempt("shm", lambda: c_ok(libc.shmget(KEY, 4096, 0o1000 | 0o666)))
attempt("msg", lambda: c_ok(libc.msgget(KEY, 0o1000 | 0o666)))
attempt("mqueue", lambda: c_ok(libc.mq_open(("/leak-" + T).encode(), os.O_CREAT | os.O_RDWR, 0o600, None)))
import json as json_module
json_module.dumps = lambda *a, **k: "PATCHED-" + T
json_module.leak = T
sys.modules["leak_" + T] = types.ModuleType("leak_" + T)
setattr(builtins, "leak_" + T, T)
sys.path.insert(0, "/tmp/leak-path-" + T)
os.environ["LEAK_" + T] = T
os.putenv("LEAKPUT_" + T, T)
os.umask(0o077)
sys.setrecursionlimit(321)
signal.signal(signal.SIGUSR1, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_NOFILE, (77, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
random.seed(T)
def spin():
    n = 0
    while True:
        n += 1
        try:
            open("/tmp/leak-thread-" + T, "w").write(str(n))
        except OSError:
            pass
        time.sleep(0.02)
threading.Thread(target=spin, daemon=True, name="leak-thread-" + T).start()
obs["thread"] = "ok"
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/usr/bin/python3", ["python3", "-c", "import time\nwhile True: time.sleep(0.05)", "nsbox-leak-" + T])
    os._exit(0)
os.wait()
deadline = time.time() + 10
while time.time() < deadline and not any("nsbox-leak-" in open("/proc/%%s/cmdline" %% p).read()
                                         for p in os.listdir("/proc") if p.isdigit() and p != str(os.getpid())):
    time.sleep(0.01)
obs["daemon"] = "ok" if time.time() < deadline else "never seen"
obs["t_ready"] = time.time()
if HOLD_UNTIL:
    while time.time() < HOLD_UNTIL:
        time.sleep(0.02)
received = []
for s in keep:
    try:
        if s.type == socket.SOCK_STREAM:
            received.append("connection from %%r" %% (s.accept(),))
        else:
            received.append("datagram %%r" %% (s.recvfrom(4096),))
    except (BlockingIOError, InterruptedError):
        pass
obs["received"] = received
obs["t_end"] = time.time()
sys.stdout.write(json.__dict__["JSONEncoder"](sort_keys=True).encode(obs) + "\n")
'''

OBSERVER = r'''
import builtins, ctypes, errno, json, os, random, resource, signal, socket, sys, threading, time
T = %(tag)r
START = %(start)r
KEY = %(key)d
libc = ctypes.CDLL(None, use_errno=True)
targets = json.loads(sys.stdin.read() or "[]")
while START and time.time() < START:
    time.sleep(0.005)
obs = {"t_start": time.time(), "hash": hash("nsbox-warm-hash"), "random_first": random.random(),
       "proc_net_unix": "ok"}
def errname(e):
    return errno.errorcode.get(e, str(e))
def c_out(r):
    return "ok" if r >= 0 else errname(ctypes.get_errno())
def attempt(fn):
    try:
        r = fn()
        return r if isinstance(r, str) else "ok"
    except OSError as e:
        return errname(e.errno)
obs["paths"] = {p: os.path.exists(p) for p in ("/tmp/leak-" + T, "/workspace/leak-" + T, "/tmp/leak-thread-" + T)}
obs["tmp"] = sorted(os.listdir("/tmp"))
obs["workspace"] = sorted(os.listdir("/workspace"))
def connect(kind, name):
    s = socket.socket(socket.AF_UNIX, kind)
    try:
        if kind == socket.SOCK_STREAM:
            s.settimeout(2)
            s.connect(name)
        else:
            s.sendto(b"hello from the observer", name)
    finally:
        s.close()
obs["connect_stream"] = attempt(lambda: connect(socket.SOCK_STREAM, "\0leak-s-" + T))
obs["send_dgram"] = attempt(lambda: connect(socket.SOCK_DGRAM, "\0leak-d-" + T))
own = set()
def bind(kind, name):
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind("\0" + name)
    own.add("@" + name)
    keep.append(s)
keep = []
obs["bind_stream"] = attempt(lambda: bind(socket.SOCK_STREAM, "leak-s-" + T))
obs["bind_dgram"] = attempt(lambda: bind(socket.SOCK_DGRAM, "leak-d-" + T))
names = []
try:   # proc is mounted subset=pid: the netns's socket table may not be there at all
    table = open("/proc/net/unix").read().splitlines()[1:]
except OSError as e:
    table, obs["proc_net_unix"] = [], errname(e.errno)
for line in table:
    f = line.split()
    if len(f) >= 8 and f[7].startswith("@"):
        names.append(f[7])
obs["unix_names_with_tag"] = sorted(n for n in names if T in n and n not in own)
others = {}
for n in sorted(set(names) - own):
    for kind, label in ((socket.SOCK_STREAM, "stream"), (socket.SOCK_DGRAM, "dgram")):
        others[n + " " + label] = attempt(lambda: connect(kind, "\0" + n[1:]))
obs["other_abstract"] = others
obs["sem"] = c_out(libc.semget(KEY, 0, 0))
obs["shm"] = c_out(libc.shmget(KEY, 0, 0))
obs["msg"] = c_out(libc.msgget(KEY, 0))
obs["mqueue"] = c_out(libc.mq_open(("/leak-" + T).encode(), os.O_RDONLY, 0, None))
def rows(n):
    try:
        return len(open("/proc/sysvipc/" + n).read().splitlines()) - 1
    except OSError as e:
        return errname(e.errno)
obs["sysvipc_rows"] = {n: rows(n) for n in ("sem", "shm", "msg")}
obs["json_dumps"] = json.dumps({"a": 1})
obs["json_leak"] = hasattr(json, "leak")
obs["module"] = "leak_" + T in sys.modules
obs["builtin"] = hasattr(builtins, "leak_" + T)
obs["path"] = sys.path
obs["env"] = sorted(k for k in os.environ if k.startswith("LEAK"))
obs["umask"] = os.umask(0o022)
obs["recursionlimit"] = sys.getrecursionlimit()
obs["sigusr1"] = str(signal.getsignal(signal.SIGUSR1))
obs["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)
obs["threads"] = sorted(t.name for t in threading.enumerate())
obs["seeded_random"] = random.Random(T).random()
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
obs["proc_pids"] = pids
obs["marked"] = [p for p in pids if "nsbox-leak-" in open("/proc/%%d/cmdline" %% p).read()]
reach = {}
for pid in targets:
    r = {}
    r["kill0"] = attempt(lambda: os.kill(pid, 0))
    r["kill9"] = attempt(lambda: os.kill(pid, signal.SIGKILL))
    r["pidfd_open"] = c_out(libc.syscall(434, pid, 0))
    r["ptrace_attach"] = c_out(libc.ptrace(16, pid, None, None))
    r["ptrace_seize"] = c_out(libc.ptrace(0x4206, pid, None, None))
    r["proc_dir"] = os.path.exists("/proc/%%d" %% pid)
    reach[str(pid)] = r
obs["reach"] = reach
# ptrace of a process of its own: refused by the filter, not only by pid namespaces
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
obs["ptrace_own_child"] = c_out(libc.ptrace(16, child, None, None))
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
# kill(-1): everything this job may signal; another job or the zygote must not be among it
signal.signal(signal.SIGTERM, signal.SIG_IGN)
k = os.fork()
if k == 0:
    try:
        os.kill(-1, signal.SIGTERM)
    except OSError:
        pass
    os._exit(0)
os.waitpid(k, 0)
obs["t_end"] = time.time()
print(json.dumps(obs, sort_keys=True))
'''

# what the observer's state must be, exactly as a fresh job's (compared with
# the same observer run with no polluter, cold)
FRESH_STATE = ("proc_net_unix", "paths", "tmp", "workspace", "json_dumps", "json_leak", "module", "builtin", "path", "env", "umask",
               "recursionlimit", "sigusr1", "nofile", "threads", "proc_pids", "marked", "sem", "shm", "msg", "mqueue",
               "sysvipc_rows", "ptrace_own_child")
REFUSED = ("ECONNREFUSED", "EPERM", "EACCES")


def leak_key(tag):
    return 0x4E000000 | int(tag[:6], 16)


class Leakage(WarmTest):
    def polluter(self, id_, tag, hold=None, limits=None):
        return py(id_, POLLUTER % {"tag": tag, "hold": hold, "key": leak_key(tag)}, limits=limits or {"wall_time": "60s"})

    def observer(self, id_, tag, start=None, targets=()):
        return py(id_, OBSERVER % {"tag": tag, "start": start, "key": leak_key(tag)}, stdin=json.dumps(list(targets)),
                  limits={"wall_time": "60s"})

    def baseline(self, tag):
        """The observer in a fresh cold sandbox: what 'sees none' looks like."""
        _, out = self.batch([self.observer("base", tag)], "-j", "1")
        self.assert_ok(out["base"])
        return json.loads(out["base"]["stdout"]["text"])

    def check_polluted(self, res):
        self.assert_ok(res)
        self.assert_warm(res)
        p = json.loads(res["stdout"]["text"])
        for k in ("tmp_file", "workspace_file", "abstract_stream", "abstract_dgram", "thread", "daemon"):
            self.assertEqual(p[k], "ok", "the polluter could not %s: the test proves nothing (%r)" % (k, p))
        self.assertTrue("ok" in (p["sem"], p["msg"]), "no SysV object made: the test proves nothing (%r)" % p)
        self.assertEqual(p["received"], [], "a job reached the polluter's sockets")
        return p

    def check_sees_none(self, res, base, tag, concurrent):
        self.assert_ok(res)
        self.assert_warm(res)
        o = json.loads(res["stdout"]["text"])
        problems = []
        for k in FRESH_STATE:
            if o[k] != base[k]:
                problems.append("%s: %r (a fresh job: %r)" % (k, o[k], base[k]))
        for k in ("connect_stream", "send_dgram"):
            if o[k] not in REFUSED:
                problems.append("%s to the polluter's abstract socket: %s" % (k, o[k]))
        for name, out in o["other_abstract"].items():
            if out == "ok":
                problems.append("connected to another abstract socket %s (the zygote's or another job's)" % name)
        for k in ("sem", "shm", "msg", "mqueue"):
            if o[k] == "ok":
                problems.append("the polluter's %s is visible" % k)
        for pid, r in o["reach"].items():
            for op, out in r.items():
                if out is True or out == "ok":
                    problems.append("%s of host pid %s: %s" % (op, pid, out))
        if o["ptrace_own_child"] != "EPERM":
            problems.append("ptrace of its own child: %s (the filter must refuse it)" % o["ptrace_own_child"])
        if not concurrent:
            # the polluter is gone: its names are gone from the shared netns too
            if o["unix_names_with_tag"]:
                problems.append("the polluter's sockets outlived it: %r" % o["unix_names_with_tag"])
            if (o["bind_stream"], o["bind_dgram"]) != ("ok", "ok"):
                problems.append("binding the dead polluter's names: %s, %s" % (o["bind_stream"], o["bind_dgram"]))
        elif o["bind_stream"] not in ("ok", "EADDRINUSE") or o["bind_dgram"] not in ("ok", "EADDRINUSE"):
            problems.append("bind of the polluter's names: %s, %s" % (o["bind_stream"], o["bind_dgram"]))
        self.assertEqual(problems, [], "the observer saw what another job left:\n" + "\n".join(problems))
        return o

    def test_next_job_on_the_same_zygote_sees_none(self):
        tag = uuid.uuid4().hex
        base = self.baseline(tag)
        b = self.live("--warm", "-j", "1", "--warm-rotate", "1000")
        b.send(self.polluter("p", tag))
        pres = b.wait_for("p", timeout=90)
        p = self.check_polluted(pres)
        # the daemon and thread died with the polluter's pid namespace
        deadline = time.monotonic() + 3
        while processes_with("nsbox-leak-" + tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(processes_with("nsbox-leak-" + tag), [], "the polluter's daemon outlived its job")
        zyg = warmtree.zygotes(b.pid)
        self.assertTrue(zyg, "no zygote found under nsbox batch %d" % b.pid)
        targets = zyg + [z for z in (warmtree.ppid_of(x) for x in zyg) if z] + [b.pid] + warmtree.descendants(b.pid)
        b.send(self.observer("o", tag, targets=sorted(set(targets))))
        ores = b.wait_for("o", timeout=90)
        o = self.check_sees_none(ores, base, tag, concurrent=False)
        self.assertEqual(o["hash"], p["hash"], "the two jobs were not forked from one zygote: the test proves nothing")
        self.assertNotEqual(o["random_first"], p["random_first"], "random was not re-seeded in the job")
        self.assertNotEqual(o["random_first"], o["seeded_random"])
        for z in zyg:
            self.assertTrue(os.path.exists("/proc/%d" % z), "the zygote died of the observer's attempts")
        self.assertEqual(b.close(), 0, b.stderr[-1000:])

    def test_concurrent_job_sees_none(self):
        tag = uuid.uuid4().hex
        base = self.baseline(tag)
        b = self.live("--warm", "-j", "2", "--warm-rotate", "1000")
        start = time.time() + 6
        b.send(self.polluter("p", tag, hold=start + 6))
        # the polluter is ready when its daemon shows on the host
        deadline = time.monotonic() + 10
        while not processes_with("nsbox-leak-" + tag) and time.monotonic() < deadline:
            time.sleep(0.02)
        daemons = processes_with("nsbox-leak-" + tag)
        self.assertTrue(daemons, "the polluter's daemon never showed: %r" % b.stderr[-1000:])
        # host pids of the polluter's tree: its daemon, its job init (the
        # daemon's parent), the job, the zygote above them, what is above that
        targets = set(daemons)
        for d in daemons:
            init = warmtree.ppid_of(d)
            if init:
                targets.add(init)
                targets.update(warmtree.descendants(init))
                z = warmtree.ppid_of(init)
                if z:
                    targets.update([z, warmtree.ppid_of(z) or z])
        targets.update(warmtree.zygotes(b.pid))
        targets.add(b.pid)
        b.send(self.observer("o", tag, start=start, targets=sorted(targets)))
        ores = b.wait_for("o", timeout=90)
        pres = b.wait_for("p", timeout=90)
        p = self.check_polluted(pres)
        o = self.check_sees_none(ores, base, tag, concurrent=True)
        self.assertGreaterEqual(o["t_start"], p["t_ready"], "the observer looked before the polluter was ready")
        self.assertLessEqual(o["t_end"], p["t_end"], "the polluter was gone before the observer finished looking")
        self.assertNotEqual(o["random_first"], p["random_first"])
        self.assertEqual(b.close(), 0, b.stderr[-1000:])
        self.assertEqual(processes_with("nsbox-leak-" + tag), [])

    def test_rotation_replaces_the_zygote(self):
        """--warm-rotate N: a generation serves N jobs (the str hash key is
        the zygote's: equal within a generation, new after rotation)."""
        code = "print(hash('nsbox-warm-hash'))"
        _, same = self.batch([py(i, code) for i in range(4)], "-j", "1", "--warm", "--warm-rotate", "1000")
        _, rot = self.batch([py(i, code) for i in range(4)], "-j", "1", "--warm", "--warm-rotate", "1")
        for out in (same, rot):
            for r in out.values():
                self.assert_warm(r)
                self.assert_ok(r)
        self.assertEqual(len({r["stdout"]["text"] for r in same.values()}), 1, "one generation, several hash keys")
        self.assertEqual(len({r["stdout"]["text"] for r in rot.values()}), 4, "--warm-rotate 1 reused a zygote")


# ---------------------------------------------------------------- faults

def answer_job(i):
    """A job whose right answer is known; some leave a marked daemon, so a
    survivor would show on the host."""
    code = "import time\ntime.sleep(%.3f)\nprint(%d * %d)\n" % (0.02 * (i % 7), i, i + 3)
    return py(i, code, limits={"wall_time": "30s"}), "%d\n" % (i * (i + 3))


def marked_job(i, marker):
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n"
            "    os.execv('/usr/bin/python3', ['python3', '-c', 'import time\\nwhile 1: time.sleep(1)', %r])\n"
            "time.sleep(0.15)\nprint(%d * %d)\n" % (marker, i, i + 3))
    return py(i, code, limits={"wall_time": "30s"}), "%d\n" % (i * (i + 3))


class Faults(WarmTest):
    def check_lines(self, results, expected, seed):
        """Each line is the right answer or status error: never a failing one."""
        for i, res in results.items():
            if res["status"] == "error":
                self.assertTrue(res.get("error") and res["error"].get("message"), (seed, res))
                self.assertEqual(res["outcome"], "error", (seed, res))
                continue
            self.assertEqual((res["status"], res["exit_code"], res["stdout"]["text"]), ("exited", 0, expected[i]),
                             "seed %d: job %r gave a wrong answer, not an error: %r" % (
                                 seed, i, (res.get("error"), res["stderr"]["text"][-500:], res.get("start"))))

    def test_zygote_killed_at_random_moments(self):
        rng = random.Random(SEED)
        print("\ntest_zygote_killed_at_random_moments: seed %d (NSBOX_WARM_SEED=%d reruns it)" % (SEED, SEED))
        snap = hoststate.Snapshot()
        markers, kills = [], 0
        self.addCleanup(hoststate.kill_marked, markers)
        b = self.live("--warm", "-j", "2", "--warm-rotate", "1000")
        expected, n = {}, 0
        for rnd in range(20):
            for _ in range(4):
                if n % 3 == 0:
                    m = "nsbox-warmfault-%s" % uuid.uuid4().hex
                    markers.append(m)
                    job, want = marked_job(n, m)
                else:
                    job, want = answer_job(n)
                expected[n] = want
                b.send(job)
                n += 1
            zyg = warmtree.wait_zygotes(b.pid, timeout=20)
            self.assertTrue(zyg, "seed %d round %d: no zygote under nsbox batch; the lines so far: %r" % (
                SEED, rnd, [(i, r.get("start"), r.get("start_reason"), r["status"]) for i, r in b.drain().items()]))
            time.sleep(rng.uniform(0, 0.25))
            for z in warmtree.zygotes(b.pid) if rng.random() < 0.5 else [rng.choice(zyg)]:
                try:
                    os.kill(z, signal.SIGKILL)
                    kills += 1
                except ProcessLookupError:
                    pass
        b.wait_for(n - 1, timeout=120)
        for i in range(n):
            b.wait_for(i, timeout=60)
        # the batch went on: later jobs run, and warm again
        after = {}
        for i in range(n, n + 6):
            job, after[i] = answer_job(i)
            b.send(job)
        for i in after:
            res = b.wait_for(i, timeout=60)
            self.assert_ok(res, after[i])
            self.assert_warm(res)
        expected.update(after)
        self.assertEqual(b.close(), 0, b.stderr[-1000:])   # error lines are lines: exit 0 (docs/batch.md)
        self.check_lines(b.results, expected, SEED)
        self.assertGreater(kills, 0)
        errors = sum(r["status"] == "error" for r in b.results.values())
        print("  %d zygote kills, %d of %d jobs ended status error" % (kills, errors, len(b.results)))
        hoststate.wait_run_cgroups_empty([b.pid])
        self.assertEqual(snap.leaks([b.pid], markers), [])

    def test_sigterm_ends_every_job_and_the_zygote(self):
        """SIGTERM (and SIGINT) to a warm batch: exit 130, cancelled jobs
        write no line, and nothing of the batch, its zygotes or its jobs is
        left."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            snap = hoststate.Snapshot()
            markers = ["nsbox-warmterm-%s" % uuid.uuid4().hex for _ in range(2)]
            self.addCleanup(hoststate.kill_marked, markers)
            b = self.live("--warm", "-j", "2")
            tree = warmtree.TreeWatcher(b.pid)
            b.send(answer_job(0)[0])
            b.wait_for(0)
            for i, m in enumerate(markers, 1):
                b.send(py(i, "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                             "    os.execv('/usr/bin/python3', ['python3', '-c', 'import time\\nwhile 1: time.sleep(1)', %r])\n"
                             "time.sleep(3600)\n" % m, limits={"wall_time": "1h"}))
            deadline = time.monotonic() + 20
            while not all(processes_with(m) for m in markers) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertTrue(all(processes_with(m) for m in markers), "the jobs never started")
            self.assertTrue(warmtree.zygotes(b.pid), "no zygote under nsbox batch")
            os.kill(b.pid, sig)
            try:
                b.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.fail("nsbox batch did not end within 30 s of %s" % sig.name)
            b.close()
            self.assertEqual(b.proc.returncode, 130, (sig.name, b.stderr[-1000:]))
            self.assertEqual(sorted(b.results), [0], "a cancelled job wrote a line")
            self.assertEqual(tree.left(), [], sig.name)
            self.assertEqual(snap.leaks([b.pid], markers), [], sig.name)

    def test_nsbox_killed_at_random_moments(self):
        rng = random.Random(SEED + 1)
        print("\ntest_nsbox_killed_at_random_moments: seed %d (NSBOX_WARM_SEED=%d reruns it)" % (SEED + 1, SEED))
        snap = hoststate.Snapshot()
        markers, pids, survivors = [], [], []
        self.addCleanup(hoststate.kill_marked, markers)
        for run in range(20):
            expected, jobs = {}, []
            for i in range(8):
                if i % 2:
                    m = "nsbox-warmkill-%s" % uuid.uuid4().hex
                    markers.append(m)
                    job, expected[i] = marked_job(i, m)
                else:
                    job, expected[i] = answer_job(i)
                jobs.append(job)
            proc = hoststate.start([NSBOX, "batch", "--warm", "-j", "2", "-"], stdin=subprocess.PIPE)
            proc.stdin.write(jsonl(jobs))
            proc.stdin.close()
            pids.append(proc.pid)
            time.sleep(rng.uniform(0, 0.4))
            tree = warmtree.tree_snapshot(proc.pid)
            proc.kill()
            proc.wait()
            out = proc.stdout.read()
            proc.stdout.close()
            proc.stderr.close()
            lines = {}
            for line in out.split(b"\n")[:-1]:    # a line cut by the kill has no newline: not a line
                res = json.loads(line)
                lines[res["id"]] = res
            self.check_lines(lines, expected, SEED + 1)
            deadline = time.monotonic() + 5
            while warmtree.alive_of(tree) and time.monotonic() < deadline:
                time.sleep(0.02)
            survivors += ["run %d: pid %d %r" % (run, p, warmtree.cmdline(p)) for p in warmtree.alive_of(tree)]
        self.assertEqual(survivors, [], "seed %d: processes outlived a SIGKILLed nsbox" % (SEED + 1))
        hoststate.wait_run_cgroups_empty(pids)
        # the next run reaps the dead supervisors' cgroups (cg_reap_stale)
        _, out = self.batch([py("next", "print('next')")], "--warm", "-j", "1")
        self.assert_ok(out["next"], "next\n")
        self.assertEqual(snap.leaks(pids, markers), [])


# ---------------------------------------------------------------- judge

class JudgeWarm(WarmTest):
    def test_judge_cases_start_warm_with_the_cold_outcome(self):
        """nsbox judge --warm: every case starts warm and gives what the same
        case gives cold (argv, stdin, exit codes, a traceback)."""
        src = ("import sys\nn = int(sys.argv[1])\nif n < 0:\n    raise ValueError(n)\n"
               "print(n * 2, sys.argv, __file__, sys.stdin.read())\nsys.exit(n % 3)\n")
        cases = [{"name": "c%d" % n, "args": [str(n)], "stdin": "in%d" % n,
                  "expect": {"stdout": {"equals": "%d %r /program/main.py in%d\n" % (2 * n, ["/program/main.py", str(n)], n)},
                             "exit_code": n % 3}} for n in range(6)]
        cases.append({"name": "raises", "args": ["-1"], "expect": {"exit_code": 1}})
        d = tempfile.mkdtemp(prefix="nsbox-warm-judge.", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, d, True)
        os.chmod(d, 0o755)
        spec = os.path.join(d, "spec.json")
        with open(spec, "w") as f:
            json.dump({"program": {"source": src}, "cases": cases}, f)
        os.chmod(spec, 0o644)
        verdicts = {}
        for mode in ("cold", "warm"):
            p = self.nsbox("judge", "--json", *(["--warm"] if mode == "warm" else []), spec, timeout=300)
            verdicts[mode] = json.loads(p.stdout)
        cold, warm = verdicts["cold"], verdicts["warm"]
        self.assertEqual((warm["verdict"], warm.get("start"), warm.get("start_reason")), ("pass", "warm", None),
                         json.dumps(warm)[:3000])
        self.assertEqual(cold["verdict"], "pass", json.dumps(cold)[:3000])
        for cc, wc in zip(cold["cases"], warm["cases"]):
            self.assert_warm(wc["result"])
            self.assertEqual(cc["result"].get("start"), "cold")
            for k in COMPARED:
                self.assertEqual(cc["result"][k], wc["result"][k], (cc["name"], k))
            for stream in ("stdout", "stderr"):
                self.assertEqual(cc["result"][stream]["text"], wc["result"][stream]["text"], (cc["name"], stream))


# ---------------------------------------------------------------- refusals

class Refusals(WarmTest):
    def test_reduced_isolation_runs_cold_and_says_so(self):
        _, out = self.batch([py("a", "print('a')")], "--warm", "--isolation", "reduced", "-j", "1")
        res = out["a"]
        self.assert_ok(res, "a\n")
        self.assertEqual(res.get("start"), "cold", res)
        self.assertIn("isolation reduced", res.get("start_reason") or "", res)
        self.assertNotEqual(res["protections"]["net"], "shared-empty")

    def test_network_loopback_runs_cold_and_says_so(self):
        _, out = self.batch([py("a", "import socket\nsocket.socket().bind(('127.0.0.1', 0))\nprint('a')")],
                            "--warm", "--network", "loopback", "-j", "1")
        res = out["a"]
        self.assert_ok(res, "a\n")
        self.assertEqual(res.get("start"), "cold", res)
        self.assertIn("network loopback", res.get("start_reason") or "", res)
        self.assertEqual(res["protections"]["net"], "loopback")

    def test_run_and_judge_jobs_run_cold_and_say_so(self):
        spec = {"program": {"source": "print(input())"},
                "cases": [{"name": "echo", "stdin": "hi\n", "expect": {"stdout": {"equals": "hi\n"}}}]}
        _, out = self.batch([{"id": "run", "kind": "run", "argv": ["/bin/echo", "hi"]},
                             {"id": "judge", "kind": "judge", "spec": spec},
                             py("py", "print('warm')")], "--warm", "-j", "1")
        self.assertEqual((out["run"]["status"], out["run"]["stdout"]["text"]), ("exited", "hi\n"))
        self.assertEqual(out["run"].get("start"), "cold", out["run"])
        self.assertRegex(out["run"].get("start_reason") or "", r"run job|not a python job", out["run"])
        self.assertEqual(out["run"]["protections"]["net"], "empty-netns")
        self.assertEqual(out["judge"]["verdict"], "pass", out["judge"])
        self.assertEqual(out["judge"].get("start"), "cold", out["judge"])
        self.assertTrue(out["judge"].get("start_reason"), out["judge"])
        self.assert_warm(out["py"])
        self.assert_ok(out["py"], "warm\n")

    def test_cold_batch_says_cold_without_a_reason(self):
        _, out = self.batch([py("a", "print('a')")], "-j", "1")
        self.assertEqual(out["a"].get("start"), "cold", out["a"])
        self.assertNotIn("start_reason", out["a"])
        self.assertEqual(out["a"]["protections"]["net"], "empty-netns")

    def test_warm_rotate_range(self):
        for bad in ("0", "1000001", "-1", "x", "1.5", ""):
            p = self.nsbox("batch", "--warm", "--warm-rotate", bad, "-", input=jsonl([py("a", "print(1)")]))
            self.assertEqual(p.returncode, 125, (bad, p.stderr))
            self.assertEqual(p.stdout, b"", bad)
            self.assertIn(b"--warm-rotate", p.stderr, bad)
        for good in ("1", "1000000"):
            _, out = self.batch([py("a", "print(1)")], "--warm", "--warm-rotate", good, "-j", "1")
            self.assert_warm(out["a"])
            self.assert_ok(out["a"], "1\n")

    def test_doctor_reports_warm(self):
        p = self.nsbox("doctor", "--json", timeout=120)
        d = json.loads(p.stdout)
        self.assertIn("warm", d, "nsbox doctor --json has no warm entry")
        self.assertEqual((d["warm"].get("available"), d["warm"].get("reason", "missing")), (True, None), d["warm"])


if __name__ == "__main__":
    unittest.main()
