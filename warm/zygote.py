# warm/zygote.py — the zygote: a CPython started exactly as a cold job's
# interpreter is (`python3 -I -B /program/main.py`, the cold environment, in
# a sandbox whose root is a cold run's), that forks one job per request.
#
# nsbox prepends two lines to this file: _NSBOX_WARM_LIB = "<path>" and
# _NSBOX_PRELOAD = ("<module>", ...), the profile's [python] preload (dotted
# names of ASCII identifiers: config/schema.c's opt_preload).
# This file is nsbox's own code, not the job's: it imports as little as it
# can (every module imported here is paid again by every job's fork), holds
# no job data, and never wraps its control socket (fd 3) in a Python object,
# so nothing a job inherits can close a descriptor the job reuses.
# In a job, _lib.serve() never returns: C calls _start() below with the
# job's argv, and runs the job's /program/main.py with the semantics
# of `python3 -I -B /program/main.py`: _job() below, driven from C by
# nsbox_warm_run (warm/warm_job.c).
import sys

_NSBOX_COLD_MODULES = frozenset(sys.modules)
_NSBOX_COLD_IMPORTER_CACHE = frozenset(sys.path_importer_cache)
if sys.implementation.name != "cpython" or sys.version_info < (3, 7):
    sys.stderr.write("nsbox warm: the interpreter is not CPython >= 3.7\n")
    raise SystemExit(3)


# ---- the import path. The zygote runs without seccomp and Landlock and
# forks every later job: it runs only code from the read-only tree. A
# directory of sys.path on a writable mount (a read-write --bind over a
# site-packages directory: the zygote's tree holds the jobs' shared binds)
# is one where a job could write a module, a .pth file or a sitecustomize
# that the next zygote's start-up would run. Refused before any job exists
# (_PATH_WRITABLE: warm_pool.c then starts no zygote for the rest of the
# batch); the jobs run cold.
def _writable(path):
    # A path not there (yet) is as writable as the nearest directory above
    # it that is: a job could make it (a PYTHONPATH directory on a
    # read-write --bind, made by a job with a sitecustomize in it, ran in the
    # next zygote before this check existed).
    posix = sys.modules["posix"]
    while isinstance(path, str) and path:
        try:
            return not posix.statvfs(path).f_flag & posix.ST_RDONLY and posix.stat(path).st_dev not in _OWN
        except (FileNotFoundError, NotADirectoryError):
            up = path.rstrip("/").rpartition("/")[0] or ("/" if path[:1] == "/" else ".")
            if up == path:
                return False
            path = up
        except (OSError, TypeError, ValueError):
            return False
    return False


def _own():
    # The zygote's own /tmp and /dev/shm (each its own tmpfs): every job
    # mounts a fresh one over each (mnt_plan_build_warm_job), so no job can
    # write there; HOME=/tmp (the default) puts the user site directory there.
    posix, own = sys.modules["posix"], set()
    for d, up in (("/tmp", "/"), ("/dev/shm", "/dev")):
        try:
            dev = posix.stat(d).st_dev
            if dev != posix.stat(up).st_dev:
                own.add(dev)
        except OSError:
            pass
    return own


_OWN = _own()


def _check_path():
    for p in sys.path:
        if isinstance(p, str) and p and _writable(p):
            _refuse("sys.path: %s is on a writable mount (a job could write code there that a zygote would run)"
                    % p, _PATH_WRITABLE, "")
    # Where the start-up would read code from that is on sys.path only once
    # it exists: the user site directory (without -s: HOME on a shared
    # --workspace, a job's .pth ran in the next zygote), and bytecode under
    # a pycache prefix (-X pycache_prefix, allowed with -I: a job's forged
    # .pyc of json ran in the next zygote). Both shown at pid 3 before.
    site = sys.modules.get("site")
    if site is not None and getattr(site, "ENABLE_USER_SITE", False) and not sys.flags.no_user_site:
        p = getattr(site, "USER_SITE", None)
        if isinstance(p, str) and p and _writable(p):
            _refuse("the user site directory: %s is on a writable mount (a job could write code there that a"
                    " zygote would run)" % p, _PATH_WRITABLE, "")
    p = getattr(sys, "pycache_prefix", None)
    if isinstance(p, str) and p and _writable(p):
        _refuse("sys.pycache_prefix: %s is on a writable mount (a job could write bytecode there that a zygote"
                " would run)" % p, _PATH_WRITABLE, "")
    # What the dynamic loader loads into the interpreter before any of
    # this runs: LD_PRELOAD (--env LD_PRELOAD=/shared/x.so, missing at
    # first: job 0 wrote a library whose constructor ran in the next zygote,
    # pid 3, which then served), LD_LIBRARY_PATH, LD_AUDIT, and iconv's
    # GCONV_PATH. (Separators: ':' for paths, also ' ' and ';' for lists.)
    env = sys.modules["posix"].environ
    for var in (b"LD_PRELOAD", b"LD_LIBRARY_PATH", b"LD_AUDIT", b"GCONV_PATH"):
        v = env.get(var, b"").decode("utf-8", "surrogateescape")
        for p in v.replace(";", ":").replace(" ", ":").split(":"):
            if p and _writable(p):
                _refuse("%s: %s is on a writable mount (a job could write a library there that a zygote would load)"
                        % (var.decode(), p), _PATH_WRITABLE, "")
    for p in ("/etc/ld.so.preload", "/etc/ld.so.cache"):     # read by ld.so whatever the environment
        if _writable(p):
            _refuse("%s is on a writable mount (a job could name a library there that a zygote would load)" % p,
                    _PATH_WRITABLE, "")
    # The interpreter, and where its start-up looks for a pyvenv.cfg (its
    # directory and the one above): a job that could write there could
    # replace it, or name a site directory of its own that the next
    # zygote's `site` runs a .pth from (shown with a job's .pth, pid 3).
    exe = sys.executable
    if isinstance(exe, str) and exe[:1] == "/":
        real = _real(exe)
        bindir = exe.rpartition("/")[0] or "/"
        for p in (exe, real, bindir, bindir.rpartition("/")[0] or "/"):
            if _writable(p):
                _refuse("the interpreter: %s is on a writable mount (a job could replace it, or leave a pyvenv.cfg"
                        " that a zygote would read)" % p, _PATH_WRITABLE, "")
    # What the start-up read, or would read, through a link out of those
    # directories (Debian's /usr/lib/python3.X/sitecustomize.py is a link
    # to /etc/python3.X/sitecustomize.py, not in the sandbox: with a
    # read-write bind there, a job's sitecustomize ran in the next zygote):
    # the file of every module it ran, and the names `site` looks for.
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if isinstance(f, str) and _writable(_real(f)):
            _refuse("the start-up's module %s: %s is on a writable mount (a job could write code there that a"
                    " zygote would run)" % (getattr(m, "__name__", "?"), _real(f)), _PATH_WRITABLE, "")
    posix = sys.modules["posix"]
    for d in sys.path:
        try:
            names = posix.listdir(d) if isinstance(d, str) and d else ()
        except OSError:
            continue
        for n in names:
            if n.endswith(".pth") or n.partition(".")[0] in ("sitecustomize", "usercustomize"):
                f = _real("%s/%s" % (d, n))
                if _writable(f):
                    _refuse("%s/%s -> %s is on a writable mount (a job could write code a zygote would run)"
                            % (d, n, f), _PATH_WRITABLE, "")


def _real(path):
    # the file a path names, through its links (os is loaded but under -S)
    return sys.modules["os"].path.realpath(path) if "os" in sys.modules else path


# ---- preloaded packages ([python] preload; docs/warm-start.md, "Preloaded
# packages"). Imported first, in order, before anything of the harness's own,
# so that every module their import added is in the job's sys.modules, as
# the job's own `import` of them would have left it cold (their import-time
# work is done once, here); what the harness imports below is still dropped
# in each job. A zygote must be single-threaded when it forks: a preload that
# fails (any exception, a SystemExit) or leaves a thread running ends the
# zygote before it is ready, with one line on stderr that becomes the jobs'
# start_reason (they run cold); os._exit, so no thread of the preload is
# joined and no finaliser of its runs.
def _preload(names):
    os = sys.modules["posix"]     # always loaded (os is not, under -S)
    fds = _fds(os)
    for name in names:
        before = frozenset(sys.modules)
        try:
            __import__(name)
        except BaseException as e:
            try:
                why = __import__("traceback").format_exception_only(type(e), e)[-1].strip()
            except BaseException:
                why = type(e).__name__
            _refuse("%s: %s" % (name, why))
        try:
            tasks = len(os.listdir("/proc/self/task"))
        except OSError:
            tasks = sys.modules["threading"].active_count() if "threading" in sys.modules else 1
        if tasks != 1:
            _refuse("%s: it left %d threads running (a zygote must be single-threaded to fork)" % (name, tasks))
        # A process it started (a helper, a server) would outlive the
        # batch's end, which waits for the zygote's children: the batch hung
        # until it ended. One that ended is reaped here.
        try:
            while True:
                pid = os.waitpid(-1, os.WNOHANG)[0]
                if pid == 0:
                    _refuse("%s: it left a child process running (a zygote's only children are its jobs)" % name)
        except ChildProcessError:
            pass
        # Memory it mapped shared and writable (mmap.mmap(-1, n), a
        # multiprocessing.Value): every job's fork shares those pages, so
        # one job read what another wrote there (a channel, and state that
        # outlives a job), where a copy-on-write fork shares nothing.
        for where in _shared_writable(os):
            _refuse("%s: it left memory mapped shared and writable (%s): the jobs would share it" % (name, where))
        # A descriptor it left open is closed in every job (a job starts
        # with 0-2 only): its file object would read or close a closed
        # descriptor, or the job's own file that reused the number; kept
        # open, the jobs would share its offset.
        for fd in _fds(os) - fds:
            try:
                what = os.readlink("/proc/self/fd/%d" % fd)
            except OSError:
                what = "?"
            _refuse("%s: it left file descriptor %d open (%s): a job starts with 0-2 only" % (name, fd, what))
        # The zygote runs without seccomp and Landlock, and every later job
        # is its child: it runs only code from the read-only tree. A module
        # file on a writable mount (a --bind, the --workspace: the zygote's
        # tree holds the jobs' shared ones) could be one a job wrote, for
        # the next generation to run.
        for m in [sys.modules[k] for k in sys.modules if k not in before]:
            f = getattr(m, "__file__", None)
            for p in [f] if isinstance(f, str) else list(getattr(m, "__path__", None) or ()):
                if _writable(p) or (isinstance(p, str) and _writable(_real(p))):
                    _refuse("%s: %s is on a writable mount (%s): a job could change what the zygote runs" % (
                        name, getattr(m, "__name__", "a module"), p))


def _fds(os):
    # the descriptors open now (not the one the listing itself used)
    open_now = set()
    for n in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(n))
            open_now.add(int(n))
        except (OSError, ValueError):
            pass
    return open_now


def _shared_writable(os):
    # the mappings other processes share that could be written: "sh" and
    # "mw" among an smaps entry's VmFlags (a read-only file mapped shared
    # from a read-only descriptor cannot be made writable: no "mw");
    # /proc/self/maps first, smaps only when a shared mapping is there
    fd = os.open("/proc/self/maps", os.O_RDONLY)
    try:
        maps = b"".join(iter(lambda: os.read(fd, 65536), b""))
    finally:
        os.close(fd)
    if not any(len(f) > 1 and f[1][3:4] == b"s" for f in (l.split() for l in maps.splitlines())):
        return []
    fd = os.open("/proc/self/smaps", os.O_RDONLY)
    try:
        smaps = b"".join(iter(lambda: os.read(fd, 65536), b""))
    finally:
        os.close(fd)
    found, head = [], None
    for line in smaps.splitlines():
        f = line.split()
        if f and b"-" in f[0] and not f[0].endswith(b":"):
            head = line
        elif f[:1] == [b"VmFlags:"] and b"sh" in f and b"mw" in f and head is not None:
            h = head.decode("utf-8", "replace").split()
            found.append(" ".join(h[:1] + h[5:]))
    return found


def _refuse(why, status=None, prefix="preload "):
    # fd 2 itself: the preload may have replaced or closed sys.stderr. One
    # line: the keeper reports the last line of the zygote's stderr.
    os = sys.modules["posix"]
    try:
        os.write(2, ("%s%s\n" % (prefix, " ".join(why.split()))).encode("utf-8", "backslashreplace"))
    finally:
        os._exit(_PRELOAD_FAILED if status is None else status)


# the zygote's exit statuses for these (warm/warm_pool.c): a start that
# would fail the same way again
_PRELOAD_FAILED, _PATH_WRITABLE = 4, 5
def _mapped():
    # this process's address space (VmSize, /proc/self/statm's first field), in bytes
    os = sys.modules["posix"]
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 128).split()[0]) * os.sysconf("SC_PAGE_SIZE")
        finally:
            os.close(fd)
    except (OSError, ValueError, IndexError):
        return 0


_check_path()
# What the preloads map is not a job's: a job lowers RLIMIT_AS (rlimit
# backend) to its own limit on top of it (serve's third argument).
_MAPPED_BEFORE = _mapped()
_preload(globals().get("_NSBOX_PRELOAD", ()))
_PRELOAD_MAPPED = max(0, _mapped() - _MAPPED_BEFORE) if globals().get("_NSBOX_PRELOAD") else 0
# What the start-up (a .pth) or a preload wrote and left buffered (`this`
# prints the Zen, an extension's printf): out now, to the zygote's own
# streams, or every job's streams (the same objects over the job's fds 0-2)
# would begin with it. C's stdio: nsbox_warm_serve.
for _f in {id(f): f for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)}.values():
    try:
        _f.flush()
    except BaseException:
        pass
del _writable, _own, _OWN, _check_path, _real, _preload, _refuse, _fds, _shared_writable, _f
# A warning a preload's import raised against the line that imported it
# (`imp`'s DeprecationWarning, shown for __main__) made linecache read this
# file, under the name every job's program has: a job's own warning then
# showed this file's line, not its own. (The job's file is read afresh.)
if "linecache" in sys.modules:
    getattr(sys.modules["linecache"], "cache", {}).pop(__file__, None)
# What a job starts with: the interpreter's start-up modules and finders,
# and (above) the preloads'.
_NSBOX_COLD_MODULES = frozenset(sys.modules)
_NSBOX_COLD_IMPORTER_CACHE = frozenset(sys.path_importer_cache)
# The context variables a preload set: a job runs on a thread state of its
# own (fresh_thread_state), whose context starts empty; _job() sets them
# again, as the job's own import would have left them.
_PRELOAD_CONTEXT = tuple(sys.modules["_contextvars"].copy_context().items()) if "_contextvars" in sys.modules else ()

import gc
import _imp
import atexit as _atexit      # builtin; held here so no job pays its import at exit


class _Spec:
    # what _imp.create_dynamic reads of a module spec: libnsbox_warm.so is
    # the extension module _nsbox_warm (no ctypes: nothing of it, nor
    # libffi or struct, is copied into every job)
    name = "_nsbox_warm"
    origin = _NSBOX_WARM_LIB


_lib = _imp.create_dynamic(_Spec)
del _Spec
_path = list(sys.path)
_fsencode = __import__("os").fsencode

# ---- a job's run and exit, as `python3 FILE` runs and ends: CPython's
# _PyRun_SimpleFileObject, Py_RunMain and Py_FinalizeEx, in their order.
# _job() is a generator that warm/warm_job.c drives in the job: every step
# that runs the job's code, or code that a cold interpreter calls from C
# (sys.excepthook, threading's shutdown, atexit handlers, finalisers run by
# a deletion), is yielded and run by C with no frame of this file under it
# (the generator is suspended meanwhile). So the generator holds no object
# of the job across a step that may free it.
(_CALL, _RUN, _PRINT, _UNRAISABLE, _EXIT, _CHANGED, _FINALIZING, _METHOD, _EXIT_STATUS, _REMOVE_MODULES, _COLLECT, _HIDE,
 _CLEAR, _CLEAR_WEAKLIST) = range(14)
# What the harness calls at a job's exit, taken now: a job that rebinds
# them (_signal.getsignal = None, gc.collect = ...) changes nothing here, as
# cold, where C calls them.
_run_exitfuncs = _atexit._run_exitfuncs
_collect = gc.collect
_callbacks = gc.callbacks       # the collector's own list, whatever a job binds to gc.callbacks
_signal = __import__("_signal")
_getsignal, _setsignal, _SIG_DFL, _NSIG = _signal.getsignal, _signal.signal, _signal.SIG_DFL, _signal.NSIG
_ModuleType = type(sys)
_SystemExit, _KeyboardInterrupt = SystemExit, KeyboardInterrupt
_sys = sys.__dict__
_modules = sys.modules      # the interpreter's, whatever a job binds to sys.modules
_builtins = sys.modules["builtins"].__dict__
# The harness's own builtins (the functions below are made with them): a
# copy, so that what a job does to builtins (a patched len, the dict
# emptied at the end) never reaches this code.
__builtins__ = dict(_builtins)
# What finalisation restores builtins to (finalize_restore_builtins): the
# interpreter's copy, made before `open` was set, importlib named the
# module, and `site` added exit, help and the like (the same in 3.7-3.13).
_BUILTINS_COPY = {k: v for k, v in _builtins.items() if type(v).__module__ != "_sitebuiltins" and k != "open"}
_BUILTINS_COPY.update(__package__=None, __loader__=None, __spec__=None)
_SYS_NONE = ("path", "argv", "ps1", "ps2") + (("last_exc",) if sys.version_info >= (3, 12) else ()) + (
    "last_type", "last_value", "last_traceback", "path_hooks", "path_importer_cache", "meta_path", "__interactivehook__")
_SYS_RESET = frozenset(_SYS_NONE + ("stdin", "stdout", "stderr"))


def _job():
    # Now on the job's own thread state (warm_job.c, fresh_thread_state).
    # threading imported in the zygote (by a preload): its main thread's
    # sentinel lock belonged to the zygote's thread state, released when C
    # deleted it; a fresh one, held as cold (main_thread().is_alive(), the
    # exit's threading._shutdown, which it joins). Its native_id is the
    # zygote's (threading's after-fork hook keeps it before 3.12): the job's.
    threading = _modules.get("threading")
    if threading is not None:
        t = threading._main_thread
        if hasattr(t, "_set_tstate_lock"):      # 3.7-3.12
            t._set_tstate_lock()
        if hasattr(t, "_set_native_id"):
            t._set_native_id()
        del t
    del threading
    [var.set(value) for var, value in _PRELOAD_CONTEXT]
    main = _modules["__main__"]
    ok, exc = yield _RUN, _fsencode(_MAIN), main.__dict__
    # flush_io: after the script, its exception kept aside; errors ignored
    for name in ("stderr", "stdout"):
        if _sys.get(name) is not None:
            yield _METHOD, _sys[name], "flush", ()
    status, sigint = 0, False
    if not ok and isinstance(exc, _SystemExit):
        # CPython exits from PyErr_Print (Py_Exit), leaving __file__ be
        status = yield _EXIT_STATUS, exc
    else:
        if not ok:
            sigint = type(exc) is _KeyboardInterrupt     # Py_RunMain's exit_sigint()
            status = 1
            yield _PRINT, exc
        for name in ("__file__", "__cached__"):
            main.__dict__.pop(name, None)
    del main, exc
    g = _finalize()
    yield _HIDE, g
    if (yield from g) < 0:
        status = 120        # as Py_FinalizeEx's failed flush makes it
    yield _EXIT, status, sigint


def _finalize():
    """What a program can see of Py_FinalizeEx, in its order, for what the
    job made. Not the teardown of the zygote's own modules and objects: it
    would write to every page shared with the zygote (about 2.5 ms a job),
    and changes nothing the job can observe but what is said in
    docs/warm-start.md. Returns -1 when the standard streams failed to
    flush."""
    threading = _modules.get("threading")
    if threading is not None:
        ok, r = yield _METHOD, threading, "_shutdown", ()
        if not ok:
            yield _UNRAISABLE, r, threading
        del r
    del threading
    yield _CALL, _run_exitfuncs, ()
    # _PyRuntimeState_SetFinalizing: another thread that waits for the GIL
    # from now on ends (daemon threads), sys.is_finalizing() is true
    yield _FINALIZING,
    # flush_std_files: -1 when stdout or stderr (not closed) fails to
    # flush; stdout's error is reported, stderr's is not
    status = 0
    for name in ("stdout", "stderr"):
        f = _sys.get(name)
        ok, closed = (True, True) if f is None else (yield _METHOD, f, "closed", None)
        if not (ok and closed):
            ok, r = yield _METHOD, f, "flush", ()
            if not ok:
                status = -1
                if name == "stdout":
                    yield _UNRAISABLE, r, f
            del r
        del f, closed
    # _PySignal_Fini: no Python handler runs from here on
    for s in range(1, _NSIG):
        h = _getsignal(s)
        if callable(h):
            yield _CALL, _setsignal, (s, _SIG_DFL)
        del h
    yield _COLLECT, _collect, _callbacks, True
    g = _finalize_modules()
    yield _HIDE, g
    yield from g
    # what the finalisers wrote: flushed as the streams' deallocation does
    for name in ("__stdout__", "__stderr__"):
        if _SYS_AT_FORK.get(name) is not None:
            yield _METHOD, _SYS_AT_FORK[name], "flush", ()
    return status


def _keys(ds, outcome):
    # what a _CHANGED step found for the dicts ds: on a failure (no memory),
    # every key
    ok, keys = outcome
    return keys if ok else [list(d) for d in ds]


def _finalize_modules():
    # finalize_modules_delete_special
    yield _CALL, _builtins.__setitem__, ("_", None)
    for name in _SYS_NONE:
        yield _CALL, _sys.__setitem__, (name, None)
    for name in ("stdin", "stdout", "stderr"):
        yield _CALL, _sys.__setitem__, (name, _sys.get("__%s__" % name))
    # finalize_remove_modules: every module's entry set to None, in order,
    # and a weak reference to each kept; in C (warm_finalize.c, finalize_remove_modules),
    # one step for all, as CPython walks them: objects are told apart by
    # address there (id() would raise audit events), and a job's module
    # that nothing else holds goes with no frame of this file under its
    # finalisers. A zygote's module is kept as its index in _ZYGOTE: it is
    # held, so its entry goes without anything of the job running.
    ok, alive = yield _REMOVE_MODULES, _modules, _ZYGOTE_INDEX
    if not ok:
        alive = []
    yield _CALL, _modules.clear, ()
    # finalize_restore_builtins: back to the interpreter's copy
    ds = (_builtins, _BUILTINS_COPY)
    added, lost = _keys(ds, (yield _CHANGED, ds, (_BUILTINS_COPY, _builtins)))
    if [name for name in added if type(name) is not str]:
        # a key of the job's own type: deleting it alone would call its
        # __hash__, which cold (PyDict_Clear, PyDict_Update) never calls
        yield _CALL, _builtins.clear, ()
        yield _CALL, _builtins.update, (_BUILTINS_COPY,)
        added = lost = ()
    for name in added:
        yield _CALL, _builtins.__delitem__, (name,)
    for name in lost:
        _builtins[name] = _BUILTINS_COPY[name]
    del added, lost
    yield _COLLECT, _collect, _callbacks, False
    # finalize_modules_clear_weaklist: the modules still alive, the last
    # imported first, their globals set to None (names with one leading
    # underscore, then the others but __builtins__), in C as
    # _PyModule_ClearDict (no key of the job's hashed or compared, a job's
    # module read as C reads it: no __dict__ or __getattribute__ of its
    # class runs). Of a zygote's module, only what is the job's at its turn
    # (what the job set, and what a finaliser run by an earlier wiping set):
    # the rest holds nothing of the job. A zygote's dict whose version tag
    # did not move is not read, one that did is compared with its copy made
    # in the zygote, reading only (no page of theirs is written).
    yield _CLEAR_WEAKLIST, alive, _ZYGOTE_DICTS, _ZYGOTE_DICTS_AT_FORK, (_builtins, _sys)
    del alive
    # finalize_clear_sys_builtins_dict, and the interpreter's last
    # collection: with sys and builtins empty, as cold (no stream, no hook,
    # no print for a finaliser). The collection first: the wiping above frees
    # enough for CPython's own collections to run then. The zygote's values
    # are held (the copies), so only what the job put there goes; when the
    # job left nothing there, emptying them would free nothing of its and
    # run no finaliser, and is not done (it writes to every page of theirs).
    yield _COLLECT, _collect, _callbacks, False
    ds = (_sys, _builtins)
    left_sys, left_builtins = _keys(ds, (yield _CHANGED, ds, (_SYS_AT_FORK, _BUILTINS_COPY)))
    if left_builtins or [k for k in left_sys if type(k) is not str or k not in _SYS_RESET]:
        # set to None as _PyModule_ClearDict does, not emptied: a finaliser
        # run by it (of what the job bound to sys.modules) finds sys.stderr
        # still there, and then None, as cold
        yield _CLEAR, _sys
        yield _CLEAR, _builtins
        yield _COLLECT, _collect, _callbacks, False
    # A zygote's module the job took out of sys.modules was not in the walk
    # above: cold, it is freed once nothing holds it, and what the job set
    # in it goes then; here its values that are the job's go last (the
    # others, wiped above, have none left).
    yield _CLEAR_WEAKLIST, _ZYGOTE_ALL, _ZYGOTE_DICTS, _ZYGOTE_DICTS_AT_FORK, _ZYGOTE_SKIP


def _renamed(code):
    # this file runs as /program/main.py, the job's own name: the harness's
    # code is named as what it is, so that nothing (a traceback, linecache,
    # tracemalloc) ever shows a line of the job's file for it
    consts = tuple(_renamed(c) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename="<nsbox-warm>", co_consts=consts)


if hasattr(_job.__code__, "replace"):     # 3.8+
    for _f in (_job, _finalize, _finalize_modules, _keys):
        _f.__code__ = _renamed(_f.__code__)
    del _f


def _not_cold():
    # What only this file imported, and the finders only its imports made;
    # and how many modules there were then.
    keep = ("__main__", "atexit") if sys.version_info < (3, 10) else ("__main__",)
    return ([m for m in sys.modules if m not in _NSBOX_COLD_MODULES and m not in keep],
            [p for p in sys.path_importer_cache if p not in _NSBOX_COLD_IMPORTER_CACHE], len(sys.modules))


def _reseed():
    # What a preloaded package drew from the kernel once, at its import in
    # the zygote, that every job would otherwise share. The stdlib's random
    # re-seeds itself (its after-fork hook, run by PyOS_AfterFork_Child);
    # numpy's legacy global generator (numpy.random.seed/rand/...) does not:
    # it is made again as numpy's import made it, RandomState() on a fresh
    # MT19937 (kernel entropy). Generators a job makes (default_rng()) are
    # its own already.
    rs = getattr(sys.modules.get("numpy.random.mtrand"), "_rand", None)
    bg = getattr(rs, "_bit_generator", None)
    if bg is not None:
        rs.__init__(type(bg)())
    # multiprocessing's authentication key, drawn at its import (a preload
    # of multiprocessing, scipy, joblib ...): every job of a generation had
    # the same one, where each cold process draws its own
    mp = sys.modules.get("multiprocessing.process")
    config = getattr(getattr(mp, "_current_process", None), "_config", None)
    if isinstance(config, dict) and "authkey" in config:
        config["authkey"] = mp.AuthenticationString(sys.modules["posix"].urandom(32))


def _start(argv):
    """In a job (PID 2 of its own namespaces, every protection applied),
    called from C with the job's argv from its program's path on, decoded
    as CPython decodes its own arguments: make it look like the interpreter
    just started on the job's file; returns the generator C runs."""
    global _MAIN
    sys.argv[:] = argv
    _MAIN = sys.argv[0]
    if hasattr(sys, "orig_argv"):   # 3.10+
        sys.orig_argv[:] = sys.orig_argv[:len(sys.orig_argv) - 1] + sys.argv
    sys.path[:] = _path
    if not sys.flags.isolated and not getattr(sys.flags, "safe_path", False):
        # Started as `python3 -E -s FILE` (a script in the workspace): the
        # job's real folder leads sys.path, where this file's (/program) was.
        sys.path[0] = sys.modules["os"].path.dirname(sys.modules["os"].path.realpath(_MAIN))
    # __main__ with a cold script's globals, in their order
    main = type(sys)("__main__")
    main.__loader__ = sys.modules["_frozen_importlib_external"].SourceFileLoader("__main__", _MAIN)
    main.__spec__ = None
    main.__package__ = None
    main.__annotations__ = {}
    main.__builtins__ = sys.modules["builtins"]
    main.__file__ = _MAIN
    main.__cached__ = None
    harness = sys.modules["__main__"]
    sys.modules["__main__"] = main
    # Other names of the zygote's __main__ (this file), made by a preload's
    # import: multiprocessing's `__mp_main__`. Cold, they name the job's
    # __main__; left to name this file, the job's exit cleared this file's
    # globals as the job's, and every job of a zygote that preloaded
    # multiprocessing exited 1, silently.
    for name in _MAIN_ALIASES:
        if sys.modules.get(name) is harness:
            sys.modules[name] = main
    del harness
    # What only this file imported is not the job's: a cold interpreter has
    # not imported it, so neither has the job (an import runs it afresh).
    # Before 3.10, atexit's handlers live in the state of the module object
    # last imported: the job's `import atexit` must find the one whose
    # _run_exitfuncs the harness holds (a new one's handlers would never run).
    # Listed in the zygote (_not_cold): walking every entry here would write
    # to the page of each name (its reference count) in every job.
    drop, finders, _n = _DROP if len(sys.modules) == _DROP[2] else _not_cold()
    for m in drop:
        del sys.modules[m]
    # and the finders of the folders only its imports searched
    for m in finders:
        del sys.path_importer_cache[m]
    _reseed()
    # The job runs from C, on a thread state of its own: none of this file's
    # frames is under the job's (sys._getframe, inspect.stack, tracebacks,
    # warnings' stack levels, the recursion depth are a cold job's).
    return _job()


if hasattr(_start.__code__, "replace"):     # 3.8+: named as the harness, as _job
    _start.__code__ = _renamed(_start.__code__)
    _not_cold.__code__ = _renamed(_not_cold.__code__)
    _reseed.__code__ = _renamed(_reseed.__code__)

_DROP = _not_cold()
_MAIN_ALIASES = tuple(k for k, v in sys.modules.items() if v is sys.modules["__main__"] and k != "__main__")
# What the job's finalisation leaves alone: the zygote's modules (held, so
# none is torn down; every value of sys.modules is, the same way), and the
# entries of theirs and of sys that the job did not change. Tuples, indexed
# as _ZYGOTE_INDEX says (a module's address: its index), made here so that
# no job writes to the count of a module or of its dict to find them.
_ZYGOTE_HELD = tuple(sys.modules.values())
_ZYGOTE = tuple({id(m): m for m in _ZYGOTE_HELD if isinstance(m, _ModuleType)}.values())
_ZYGOTE_INDEX = {id(m): i for i, m in enumerate(_ZYGOTE)}
_ZYGOTE_DICTS = tuple(m.__dict__ for m in _ZYGOTE)
_ZYGOTE_DICTS_AT_FORK = tuple(dict(d) for d in _ZYGOTE_DICTS)
_SYS_AT_FORK = dict(_sys)
# every module of the zygote's, for the end of the job's finalisation; not
# sys, builtins, nor this file's (its globals are the harness's)
_ZYGOTE_ALL = list(range(len(_ZYGOTE)))
_ZYGOTE_SKIP = (_builtins, _sys, globals())
gc.collect()
gc.freeze()
# Returns in the zygote only (in a job, C runs _start's generator to the
# job's exit). C notes each of _ZYGOTE_DICTS' version tags now: a job's
# finalisation reads no entry of a dict whose tag is still the same.
_role = _lib.serve(3, _start, _PRELOAD_MAPPED, _ZYGOTE_DICTS)
raise SystemExit(0 if _role == 0 else 3)
