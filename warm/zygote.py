# warm/zygote.py — the zygote: a CPython started exactly as a cold job's
# interpreter is (`python3 -I -B /program/main.py`, the cold environment, in
# a sandbox whose root is a cold run's), that forks one job per request.
#
# nsbox prepends one line to this file: _NSBOX_WARM_LIB = "<path>".
# This file is nsbox's own code, not the job's: it imports as little as it
# can (every module imported here is paid again by every job's fork), holds
# no job data, and never wraps its control socket (fd 3) in a Python object,
# so nothing a job inherits can close a descriptor the job reuses.
# It returns from nsbox_warm_serve() only in a job, and then runs the job's
# /program/main.py with the semantics of `python3 -I -B /program/main.py`.
import sys

_NSBOX_COLD_MODULES = frozenset(sys.modules)
if sys.implementation.name != "cpython" or sys.version_info < (3, 7):
    sys.stderr.write("nsbox warm: the interpreter is not CPython >= 3.7\n")
    raise SystemExit(3)

import gc
import ctypes
import atexit as _atexit      # builtin; held here so no job pays its import at exit

_lib = ctypes.PyDLL(_NSBOX_WARM_LIB)     # PyDLL: the GIL stays held across the call
_lib.nsbox_warm_serve.argtypes = [ctypes.c_int]
_lib.nsbox_warm_serve.restype = ctypes.c_int
_lib.nsbox_warm_job_argc.restype = ctypes.c_int
_lib.nsbox_warm_job_arg.argtypes = [ctypes.c_int]
_lib.nsbox_warm_job_arg.restype = ctypes.c_char_p
_path = list(sys.path)
_fsdecode = __import__("os").fsdecode

# The type of sys.unraisablehook's argument, which no module exposes: the
# job's exit reports a failed flush through it, as CPython's does.
_unraisable = []
_hook, sys.unraisablehook = sys.unraisablehook, lambda u: _unraisable.append(type(u))


class _Probe:
    def __del__(self):
        raise OSError


_Probe()
sys.unraisablehook = _hook
_UnraisableHookArgs = _unraisable[0]
del _hook, _unraisable, _Probe


def _exit_code(e):
    # CPython's rule for an unhandled SystemExit (Python/pythonrun.c)
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        sys.stderr.write(str(code) + "\n")
    except Exception:
        pass
    return 1


def _run(probe=None):
    # The job's file, compiled and run as `python3 FILE` does. (@probe: the
    # zygote's measure of this path's own frames, below.)
    if probe is None:
        name = _MAIN
        with open(name, "rb") as f:
            source = f.read()
        g = _main.__dict__
    else:
        name, source, g = "<nsbox depth probe>", probe, {"__builtins__": sys.modules["builtins"]}
    try:
        code = compile(source, name, "exec", dont_inherit=True)
    except SyntaxError:
        t, v, _ = sys.exc_info()
        v.__traceback__ = None      # as CPython prints a file that does not compile
        if v.lineno == 0 and str(v.msg).startswith("unknown encoding: "):
            # the file reader's words for a bad coding cookie
            sys.stderr.write("SyntaxError: encoding problem: %s\n" % v.msg[len("unknown encoding: "):])
            return 1
        sys.excepthook(t, v, None)
        return 1
    try:
        exec(code, g)
    except SystemExit as e:
        return _exit_code(e)
    except BaseException:
        t, v, tb = sys.exc_info()
        # The first frame is this function's exec: a cold traceback starts
        # at the file's own module frame (the hook prints the exception's
        # own __traceback__).
        tb = tb.tb_next if tb is not None else None
        v.__traceback__ = tb
        sys.excepthook(t, v, tb)
        if isinstance(v, KeyboardInterrupt):
            return -2
        return 1
    return g.get("R", 0) if probe is not None else 0


# This path puts frames under the job's own (this module, _run, exec): a
# cold file's deepest recursion is the limit less 2; the job gets the frames
# this path takes back, so it recurses as deep as a cold job does.
_EXTRA_DEPTH = max(0, (sys.getrecursionlimit() - 2) - _run(
    "def f(n):\n    try:\n        return f(n + 1)\n    except RecursionError:\n        return n\nR = f(0)\n"))

# Objects made before the fork are never collected in a job: a job that
# runs a full collection then copies no page of them.
gc.collect()
gc.freeze()
_role = _lib.nsbox_warm_serve(3)
if _role != 1:
    raise SystemExit(0 if _role == 0 else 3)

# ---- from here on: one job, PID 2 of its own namespaces, every protection
# applied. Make it look like the interpreter just started on the job's file.
# The job's argv from its program's path on, decoded as CPython decodes
# its own arguments.
sys.argv[:] = [_fsdecode(_lib.nsbox_warm_job_arg(i)) for i in range(_lib.nsbox_warm_job_argc())]
_MAIN = sys.argv[0]
if hasattr(sys, "orig_argv"):   # 3.10+
    sys.orig_argv[:] = sys.orig_argv[:len(sys.orig_argv) - 1] + sys.argv
del _lib, _role, _fsdecode
sys.path[:] = _path
if not sys.flags.isolated and not getattr(sys.flags, "safe_path", False):
    # Started as `python3 -E -s FILE` (a script in the workspace): the
    # job's real folder leads sys.path, where this file's (/program) was.
    sys.path[0] = sys.modules["os"].path.dirname(sys.modules["os"].path.realpath(_MAIN))
# __main__ with a cold script's globals, in their order
_main = type(sys)("__main__")
_main.__loader__ = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", _MAIN)
_main.__spec__ = None
_main.__package__ = None
_main.__annotations__ = {}
_main.__builtins__ = sys.modules["builtins"]
_main.__file__ = _MAIN
_main.__cached__ = None
sys.modules["__main__"] = _main
# What only this file imported is not the job's: a cold interpreter has
# not imported it, so neither has the job (an import runs it afresh).
for _m in [m for m in sys.modules if m not in _NSBOX_COLD_MODULES and m != "__main__"]:
    del sys.modules[_m]
if _EXTRA_DEPTH:
    # The frames this file holds under the job's are given back, and the
    # limit the job reads and sets is the one it would have cold.
    _get, _set = sys.getrecursionlimit, sys.setrecursionlimit

    def getrecursionlimit():
        return _get() - _EXTRA_DEPTH

    def setrecursionlimit(limit):
        if not isinstance(limit, int) or limit < 1:
            return _set(limit)      # CPython's own TypeError or ValueError
        return _set(limit + _EXTRA_DEPTH)

    for _f, _real in ((getrecursionlimit, _get), (setrecursionlimit, _set)):
        _f.__doc__, _f.__module__ = _real.__doc__, "sys"
    sys.getrecursionlimit, sys.setrecursionlimit = getrecursionlimit, setrecursionlimit
    _set(_get() + _EXTRA_DEPTH)
    del getrecursionlimit, setrecursionlimit, _f, _real


def _unraisable(hook, exc_type, exc, tb, err_msg, obj):
    # Reported as CPython's finalisation reports it: with no frame of this
    # file in the traceback (none is on the stack there).
    while tb is not None and tb.tb_frame.f_code is _shutdown.__code__:
        tb = tb.tb_next
    hook(_UnraisableHookArgs((exc_type, exc, tb, err_msg, obj)))


def _shutdown(status):
    # What a program can see of the interpreter's shutdown, in CPython's
    # order (Py_FinalizeEx): non-daemon threads joined, atexit handlers,
    # the standard streams flushed. Not the rest of it: tearing down every
    # module and object would write to every page shared with the zygote
    # (copy-on-write: milliseconds a job), and CPython promises no __del__
    # at exit.
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    hook = sys.unraisablehook

    def report(u):
        _unraisable(hook, u.exc_type, u.exc_value, u.exc_traceback, u.err_msg, u.object)

    sys.unraisablehook = report
    try:
        _atexit._run_exitfuncs()
    finally:
        if sys.unraisablehook is report:    # unless a handler set its own
            sys.unraisablehook = hook
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception as e:
            try:
                _unraisable(sys.unraisablehook, type(e), e, e.__traceback__, None, stream)
            except Exception:
                pass
            if status == 0:
                status = 120        # as CPython exits when it cannot flush
    import os
    if status == -2:
        # an unhandled KeyboardInterrupt: die of SIGINT, as CPython does
        import signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status & 0xff)


_shutdown(_run())
