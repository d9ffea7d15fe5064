# nsbox split-process test harness: the program of a batch `test` job
# (docs/batch.md, "Test jobs"). nsbox places this file at /program/main.py
# and gives it, on stdin, one package:
#
#   NSBOX-SPLIT 1 CODE_LEN STDIN_LEN TESTS_LEN BUDGET_MS ENTRY\n
#   CODE   (CODE_LEN bytes: the code under test)
#   STDIN  (STDIN_LEN bytes: the code's own standard input)
#   KEY\n  (32 hex digits: marks this run's report lines)      } the tests part,
#   TESTS  (TESTS_LEN bytes: the dataset's test_code)           } read only after
#                                                               } the fork
# It reads the header, the code and the code's stdin, makes itself
# non-dumpable, and forks: the child becomes the code's process (it runs the
# code and then serves requests); the parent, the test process, only then
# reads the key and the tests, so neither is ever in the code's memory. The
# two talk over a pair of pipes in messages of plain data (numbers, strings,
# bytes, lists, tuples, dicts, sets, None, booleans) or handles to objects
# that stay in the code's process: the test process never unpickles, never
# runs an object of the code's, and compares every value itself.
#
# The report goes to the real stdout, which only the test process holds (the
# code's process has stderr on its fd 1 and 2 and /dev/null or its own input
# on fd 0 before any of its code runs), one line per event, each prefixed by
# KEY: "KEY {json}". nsbox trusts only those lines (batch/batch_tests.c).
# Standard library only. This file is nsbox's own code; it is public.
import os
import sys

# Imported once, before the fork: both processes use them.
import select as _select    # noqa: E402
import time as _time        # noqa: E402

_PROTOCOL = 1
_MSG_MAX = 64 << 20       # one message, either way
_TEXT_MAX = 400           # a test's message in the report


def _read_exact(fd, n):
    parts = []
    while n > 0:
        b = os.read(fd, min(n, 1 << 20))
        if not b:
            raise EOFError("stdin ended early")
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def _read_line(fd, limit=256):
    out = bytearray()
    while len(out) < limit:
        b = os.read(fd, 1)
        if not b or b == b"\n":
            return bytes(out)
        out += b
    raise ValueError("header line too long")


def _non_dumpable():
    # Why: the code's process runs as the same user in the same namespaces.
    # Without this it could ptrace us, read /proc/PID/mem (the tests and
    # their expected values) or reopen our descriptors through
    # /proc/PID/fd (the report). Set before the fork, so there is no instant
    # at which the test process is dumpable with the tests in it.
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.restype = ctypes.c_int
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    return libc.prctl(4, 0, 0, 0, 0) == 0          # PR_SET_DUMPABLE 0


# ---- messages: 4-byte length, then JSON of tagged values ------------------
# Values: JSON null, true/false, an integer, a string: None, a bool, an int,
# a str (the common cases, compact: a list of a million ints costs no
# object per item); else a tagged list: ["i", hex] a huge int,
# ["f", hex] float, ["c", [re_hex, im_hex]] complex, ["y", hex] bytes,
# ["l", [...]] list, ["t", [...]] tuple, ["d", [[k, v], ...]] dict,
# ["S", [...]] set, ["F", [...]] frozenset, ["h", id] a handle to an object
# of the code's process. Nothing else: no object of the code's choosing,
# not even a standard-library one, is ever made in the test process (a
# class like unittest.mock._ANY would build, there, a value equal to all).

_INT_BIG = 1 << 13000    # < 10 ** 4000: beyond it, int <-> str is limited (4300 digits)


def _int(v):
    # JSON integers, except near the int<->str limit: hex has none.
    return v if -_INT_BIG < v < _INT_BIG else ["i", hex(v)]


# JSON by json's own C parts (the _json module, built into the
# interpreter), not `import json`: that imports re and enum, ~7 ms of CPU,
# a quarter of a warm test job's (ast for the same reason: _ast below).
# Where _json is missing or differs, json itself.
class _ScanContext:
    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int = float, int

    @staticmethod
    def parse_constant(name):
        raise ValueError("%s is not a value of the protocol" % name)


def _json_codec():
    try:
        import _json

        def refuse(o):
            raise TypeError("not JSON: %s" % type(o).__name__)
        enc = _json.make_encoder(None, refuse, _json.encode_basestring_ascii, None, ":", ",", False, False, False)
        scan = _json.make_scanner(_ScanContext())
        if "".join(enc(["a", [1, None, True]], 0)) == '["a",[1,null,true]]' and scan('[1,"b"]', 0) == ([1, "b"], 7):
            return (lambda obj: "".join(enc(obj, 0))), scan
    except Exception:       # noqa: S110 -- any difference: json's own module
        pass
    import json
    dec = json.JSONDecoder(parse_constant=_ScanContext.parse_constant)
    return (lambda obj: json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)), dec.raw_decode


_dumps, _scan = _json_codec()


def _loads(data):
    """One message's JSON: the whole of it, one value."""
    text = data.decode("ascii")
    try:
        obj, end = _scan(text, 0)
    except StopIteration:   # the C scanner's "no value here"
        raise ValueError("malformed message") from None
    if end != len(text):
        raise ValueError("data after the message")
    return obj


def _send(ch, obj):
    """@ch: (read fd, write fd), one end of the pair of pipes."""
    data = _dumps(obj).encode()
    if len(data) > _MSG_MAX:
        raise ValueError("message too large")
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(ch[1], view):]


def _recv_exact(ch, n, deadline):
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            left = deadline - _time.monotonic()
            if left <= 0 or not _select.select([ch[0]], [], [], left)[0]:
                raise TimeoutError("timed out")
        b = os.read(ch[0], min(n - len(buf), 1 << 20))
        if not b:
            raise EOFError("the code's process ended")
        buf += b
    return bytes(buf)


def _recv(ch, deadline=None):
    n = int.from_bytes(_recv_exact(ch, 4, deadline), "big")
    if n > _MSG_MAX:
        raise ValueError("message too large")
    return _loads(_recv_exact(ch, n, deadline))


# ---- the code's process --------------------------------------------------

class _CodeSide:
    """Runs in the code's process: encodes its values, keeps its objects."""

    def __init__(self, sock):
        self.sock = sock
        self.objs = {}          # handle -> object (kept alive: ids stay unique)
        self.ids = {}           # id(object) -> handle

    def handle(self, obj):
        h = self.ids.get(id(obj))
        if h is None:
            h = len(self.objs) + 1
            self.objs[h] = obj
            self.ids[id(obj)] = h
        return ["h", h]

    def enc(self, v, depth=0):
        if depth > 200:
            return self.handle(v)
        t = type(v)
        if v is None:
            return None
        if t is bool:
            return v
        # Subclasses of the plain types cross as their plain content: an
        # overridden __eq__ stays behind, the value is compared as data.
        if isinstance(v, bool):
            return bool(v)
        if isinstance(v, int):
            return _int(int.__index__(v))
        if isinstance(v, float):
            return ["f", float.hex(float.__float__(v))]
        if isinstance(v, complex):
            return ["c", [float.hex(v.real), float.hex(v.imag)]]
        if isinstance(v, str):
            return str.__str__(v)
        if isinstance(v, (bytes, bytearray)):
            return ["y", bytes(v).hex()]
        d = depth + 1
        if isinstance(v, tuple):
            return ["t", [self.enc(x, d) for x in tuple.__iter__(v)]]
        if isinstance(v, list):
            return ["l", [self.enc(x, d) for x in list.__iter__(v)]]
        if isinstance(v, dict):
            return ["d", [[self.enc(k, d), self.enc(x, d)] for k, x in dict.items(v)]]
        if isinstance(v, frozenset):
            return ["F", [self.enc(x, d) for x in frozenset.__iter__(v)]]
        if isinstance(v, set):
            return ["S", [self.enc(x, d) for x in set.__iter__(v)]]
        # A numpy scalar (numpy.int64, bool_, float32, a 0-d array: not
        # subclasses of int, bool or float) crosses as its Python value, as
        # it compares bare (numpy.sum([1, 2]) == 3). An array stays a handle:
        # its == is elementwise, which a list's is not.
        if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0:
            try:
                item = v.item()
            except Exception:
                item = None
            if type(item) in (bool, int, float, complex, str, bytes):
                return self.enc(item, depth)
        return self.handle(v)

    def dec(self, v):
        if type(v) is list and len(v) == 2 and v[0] == "h":
            return self.objs[v[1]]
        return _decode(v, self.dec)

    def changed_args(self, res, args, a, kwargs, k):
        """A call that changed a list, dict or set it was given (LeetCode's
        in-place problems: nums[:] = ..., matrix rotated): their new
        contents ride on the answer, as [index or name, value], so the tests
        see the change as appended code's tests would."""
        back = [[i, e] for i, e in ((i, self.enc(x)) for i, x in enumerate(a) if type(x) in (list, dict, set))
                if e != args[i]]
        back += [[key, e] for key, e in ((key, self.enc(x)) for key, x in k.items() if type(x) in (list, dict, set))
                 if e != dict(kwargs)[key]]
        if back:
            res.append(back)

    def serve(self, ns):
        import builtins
        ops = {
            "call": lambda o, *a, **k: o(*a, **k),
            "getattr": getattr, "setattr": setattr, "delattr": delattr,
            "iter": iter, "next": next, "len": len, "bool": bool, "str": str, "repr": repr,
            "getitem": lambda o, k: o[k],
            "setitem": lambda o, k, x: o.__setitem__(k, x), "delitem": lambda o, k: o.__delitem__(k),
        }
        while True:
            try:
                req = _recv(self.sock)
            except Exception:
                os._exit(0)
            op, h, args, kwargs = req[0], req[1], req[2], req[3]
            try:
                target = self.objs[h] if h else ns.get
                a = [self.dec(x) for x in args]
                k = {key: self.dec(x) for key, x in kwargs}
                res = ["ok", self.enc(ops[op](target, *a, **k))] if op != "global" else ["ok", self.enc(ns[a[0]])]
                if op == "call":
                    self.changed_args(res, args, a, kwargs, k)
            except BaseException as ex:     # noqa: B036 -- everything the code raises is an answer
                t = type(ex)
                name = t.__name__ if getattr(builtins, t.__name__, None) is t else ""
                try:
                    msg = str(ex)[:_TEXT_MAX]
                except BaseException:       # noqa: B036
                    msg = ""
                res = ["raise", name, msg if isinstance(msg, str) else ""]
            try:
                _send(self.sock, res)
            except Exception as ex:
                _send(self.sock, ["raise", "TypeError", "cannot send the result: %s" % ex])


_STDLIB = None


def _stdlib_names():
    global _STDLIB
    if _STDLIB is None:
        _STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | frozenset(sys.builtin_module_names)
    return _STDLIB


def _code_main(sock, code):
    side = _CodeSide(sock)
    ns = {"__name__": "__main__", "__builtins__": __builtins__, "__file__": "/program/main.py"}
    try:
        exec(compile(code, "<code>", "exec"), ns)
        names = []
        for name in list(ns):
            if isinstance(name, str) and not (name.startswith("__") and name.endswith("__")):
                names.append([name, side.enc(ns[name])])
        _send(sock, ["ready", names])
    except BaseException as ex:     # noqa: B036 -- the code's exit at its top level is its failure
        try:
            _send(sock, ["failed", "%s: %s" % (type(ex).__name__, str(ex)[:_TEXT_MAX])])
        except BaseException:       # noqa: B036
            pass
        os._exit(1)
    side.serve(ns)
    os._exit(0)


# ---- decoding in the test process ----------------------------------------

def _decode(v, sub):
    """One tagged value into exact built-in types; @sub decodes members.
    Anything malformed raises (a protocol error: the test fails)."""
    t = type(v)
    if v is None or t is bool or t is int or t is str:
        return v
    if t is not list or len(v) != 2 or type(v[0]) is not str:
        raise ValueError("malformed value")   # a JSON float included: floats come tagged, exact
    tag, x = v
    if tag == "i" and type(x) is str:
        return int(x, 16)
    if tag == "f" and type(x) is str:
        return float.fromhex(x)
    if tag == "c" and type(x) is list and len(x) == 2:
        return complex(float.fromhex(x[0]), float.fromhex(x[1]))
    if tag == "s" and type(x) is str:
        return x
    if tag == "y" and type(x) is str:
        return bytes.fromhex(x)
    if tag in "ltSF" and type(x) is list:
        items = [sub(i) for i in x]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if tag == "d" and type(x) is list:
        out = {}
        for pair in x:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("malformed dict item")
            out[sub(pair[0])] = sub(pair[1])
        return out
    raise ValueError("malformed value")


class CodeGone(BaseException):
    """The code's process cannot answer (ended, hung, sent garbage): a
    BaseException, so a test's `except Exception` cannot swallow it; the
    test is failed whatever it does with it."""


class CodeError(Exception):
    """An exception of the code's that is not a built-in one (a class of its
    own, unittest.SkipTest, ...): its name and message, as data."""


class _TestSide:
    def __init__(self, sock, deadline, pid):
        self.sock = sock
        self.deadline = deadline
        self.pid = pid
        self.proxies = {}
        self.gone = None        # why the code's process can no longer answer
        self.poisoned = None    # why the running test is failed whatever it does
        self.code_names = {}    # every name the code defined (check's candidate)
        import builtins
        self.exc = {n: t for n, t in vars(builtins).items()
                    if isinstance(t, type) and issubclass(t, Exception)}

    def proxy(self, h):
        p = self.proxies.get(h)
        if p is None:
            p = Handle.__new__(Handle)
            object.__setattr__(p, "_nsb", (self, h))
            self.proxies[h] = p
        return p

    def dec(self, v):
        if isinstance(v, list) and v and v[0] == "h" and len(v) == 2 and type(v[1]) is int:
            return self.proxy(v[1])
        return _decode(v, self.dec)

    def enc(self, v, depth=0):
        if depth > 200:
            raise TypeError("too deeply nested to pass to the code")
        if type(v) is Handle:
            side, h = object.__getattribute__(v, "_nsb")
            if side is self:
                return ["h", h]
        if v is None:
            return None
        if isinstance(v, bool):
            return bool(v)
        if isinstance(v, int):
            return _int(int(v))
        if isinstance(v, float):
            return ["f", float.hex(float(v))]
        if isinstance(v, complex):
            return ["c", [float.hex(v.real), float.hex(v.imag)]]
        if isinstance(v, str):
            return str(v)
        if isinstance(v, (bytes, bytearray)):
            return ["y", bytes(v).hex()]
        d = depth + 1
        for t, tag in ((tuple, "t"), (list, "l"), (frozenset, "F"), (set, "S")):
            if isinstance(v, t):
                return [tag, [self.enc(x, d) for x in v]]
        if isinstance(v, dict):
            return ["d", [[self.enc(k, d), self.enc(x, d)] for k, x in v.items()]]
        raise TypeError("cannot pass a %s to the code: only plain data and the code's own objects cross"
                        % type(v).__name__)

    def write_back(self, back, args, kwargs):
        """The new contents of the lists, dicts and sets a call changed,
        into the tests' own objects (their identity kept, as a mutation in
        place keeps it): only an argument of the call, only its top level,
        and only with a value of its own type; the code could have read and
        changed nothing else of the tests', here as bare."""
        if type(back) is not list:
            raise ValueError("malformed changes")
        for item in back:
            if type(item) is not list or len(item) != 2:
                raise ValueError("malformed change")
            where, new = item[0], self.dec(item[1])
            if type(where) is int and 0 <= where < len(args):
                obj = args[where]
            elif type(where) is str and where in kwargs:
                obj = kwargs[where]
            else:
                raise ValueError("a change to no argument")
            if isinstance(obj, list) and type(new) is list:
                obj[:] = new
            elif (isinstance(obj, dict) and type(new) is dict) or (isinstance(obj, set) and type(new) is set):
                obj.clear()
                obj.update(new)

    def fail_gone(self, why):
        import signal
        if self.gone is None:
            self.gone = why
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        self.poisoned = self.poisoned or why
        raise CodeGone(why)

    def ask(self, op, h, args=(), kwargs=None):
        if self.gone is not None:
            self.poisoned = self.poisoned or self.gone
            raise CodeGone(self.gone)
        req = [op, h, [self.enc(a) for a in args], [[k, self.enc(x)] for k, x in (kwargs or {}).items()]]
        try:
            _send(self.sock, req)
            res = _recv(self.sock, self.deadline)
        except TimeoutError:
            self.fail_gone("timed out: the code did not answer within the time budget")
        except (EOFError, BrokenPipeError):
            self.fail_gone("the code's process ended (an exit, a crash or a signal)")
        except Exception as ex:
            self.fail_gone("the code's process sent a malformed message (%s)" % type(ex).__name__)
        if type(res) is list and len(res) in (2, 3) and res[0] == "ok":
            try:
                value = self.dec(res[1])
                if len(res) == 3:
                    self.write_back(res[2], args, kwargs or {})
                return value
            except Exception as ex:
                self.fail_gone("the code's process sent a malformed value (%s)" % type(ex).__name__)
        if type(res) is list and len(res) == 3 and res[0] == "raise" and type(res[1]) is str \
                and type(res[2]) is str:
            if res[1] in ("StopIteration", "StopAsyncIteration") and op != "next":
                # Out of a call it would end the test's loop over map(f, ...)
                # unseen, as a skip would: a failure (PEP 479's rule, harder).
                self.poisoned = self.poisoned or "the code raised %s out of a call" % res[1]
                raise RuntimeError(self.poisoned)
            if res[1] in ("SystemExit", "KeyboardInterrupt", "GeneratorExit"):
                self.poisoned = self.poisoned or "the code raised %s" % res[1]
                raise CodeGone(self.poisoned)
            exc = self.exc.get(res[1])
            if exc is None:
                raise CodeError(("%s: %s" % (res[1] or "an exception of the code's", res[2]))[:_TEXT_MAX])
            raise _builtin_exc(exc, res[2])
        self.fail_gone("the code's process sent a malformed message")


def _builtin_exc(exc, msg):
    """@exc (a built-in Exception class) with the message @msg. The Unicode
    errors take 4-5 arguments and ExceptionGroup 2: a UnicodeDecodeError of
    the code's must still be one (and a ValueError) in the tests, not the
    TypeError its constructor would raise here."""
    try:
        return exc(msg)
    except Exception:
        pass
    try:
        e = exc.__new__(exc)
        e.args = (msg,)
        return e
    except Exception:
        return CodeError(("%s: %s" % (exc.__name__, msg))[:_TEXT_MAX])


class Handle:
    """An object that stays in the code's process. Calls, attributes, items,
    iteration, len, bool, str and repr cross as messages. Comparison does
    not: a handle equals only itself (the expected value never crosses), so
    an object whose __eq__ always answers True compares as what it is, an
    object that is not the expected data."""
    __slots__ = ("_nsb",)

    def _ask(self, op, *args, **kwargs):
        side, h = object.__getattribute__(self, "_nsb")
        return side.ask(op, h, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Handle._ask(self, "getattr", name)

    def __setattr__(self, name, value):
        Handle._ask(self, "setattr", name, value)

    def __delattr__(self, name):
        Handle._ask(self, "delattr", name)

    def __call__(self, *args, **kwargs):
        return Handle._ask(self, "call", *args, **kwargs)

    def __iter__(self):
        it = Handle._ask(self, "iter")
        return it if type(it) is Handle else iter(it)

    def __next__(self):
        return Handle._ask(self, "next")

    def __len__(self):
        n = Handle._ask(self, "len")
        if type(n) is not int:
            raise TypeError("len() of the code's object is not an int")
        return n

    def __bool__(self):
        b = Handle._ask(self, "bool")
        if type(b) is not bool:
            raise TypeError("bool() of the code's object is not a bool")
        return b

    def __getitem__(self, key):
        return Handle._ask(self, "getitem", key)

    def __setitem__(self, key, value):
        Handle._ask(self, "setitem", key, value)

    def __delitem__(self, key):
        Handle._ask(self, "delitem", key)

    # No __contains__, __eq__ or ordering: `expected in handle` would hand
    # the code the expected value to answer True to. Without __contains__,
    # `in` iterates the handle and compares each (plain) item here.

    def __str__(self):
        s = Handle._ask(self, "str")
        return s if type(s) is str else "<the code's object>"

    def __repr__(self):
        try:
            s = Handle._ask(self, "repr")
        except Exception:
            s = None
        return s if type(s) is str else "<the code's object>"

    __hash__ = object.__hash__       # identity: a handle equals only itself


# ---- splitting the tests ---------------------------------------------------

def _is_main_guard(node):
    import _ast as ast
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq) and len(t.comparators) == 1
            and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value == "__main__"
            and not node.orelse)


def _flat(body):
    """The top-level statements, with the body of an `if __name__ ==
    "__main__":` block taken as top-level too (the tests run as __main__)."""
    for node in body:
        if _is_main_guard(node):
            yield from _flat(node.body)
        else:
            yield node


def _names_testcase(base):
    import _ast as ast
    return (isinstance(base, ast.Name) and base.id.endswith("TestCase")) or \
        (isinstance(base, ast.Attribute) and base.attr.endswith("TestCase"))


def _is_unittest_main(node):
    import _ast as ast
    f = node.value.func if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) else None
    return isinstance(f, ast.Attribute) and f.attr == "main" and isinstance(f.value, ast.Name) \
        and f.value.id == "unittest"


def _run_case(ns, cls_name, meth):
    """One unittest.TestCase method, as unittest runs it (setUp, tearDown):
    passed only when it ran and succeeded (a skip is not a pass)."""
    import unittest
    import warnings
    cls = _tests_own(ns, cls_name)
    fn = getattr(cls, meth, None)
    if getattr(getattr(fn, "__code__", None), "co_flags", 0) & 0x2a0 and \
            not any(c.__name__ == "IsolatedAsyncioTestCase" for c in getattr(cls, "__mro__", ())):
        # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR: see the warning below
        raise AssertionError("an async def or generator test method of a plain TestCase does not run")
    result = unittest.TestResult()
    with warnings.catch_warnings(record=True) as seen:
        # unittest calls an `async def` (or a yield) method of a plain
        # TestCase, gets a coroutine (a generator) back without running a
        # line of it, warns (3.11 on; before, not even that) and counts a
        # success: here a failure, seen by the flags above or, for one
        # behind a decorator, by this warning.
        warnings.filterwarnings("always", _RETURNED_VALUE, DeprecationWarning)
        unittest.TestSuite([cls(meth)]).run(result)
    problems = result.errors + result.failures
    if problems:
        raise AssertionError(problems[0][1].strip().splitlines()[-1])
    if result.skipped or result.expectedFailures or result.unexpectedSuccesses or result.testsRun != 1:
        raise AssertionError("skipped, an expected failure or not run")
    if any(str(w.message).startswith(_RETURNED_VALUE) for w in seen):
        raise AssertionError("the test method returned a value (an async def or a generator in a plain "
                             "TestCase?): unittest did not run its body")


_RETURNED_VALUE = "It is deprecated to return a value that is not None from a test case"


def _tests_own(ns, name):
    """The tests' own function or class @name. A handle there (the code's
    object of that name, left when the tests' definition failed) is never
    run as the test: it would pass whenever the code answers."""
    fn = ns.get(name)
    if fn is None or type(fn) is Handle:
        raise NameError("test_code did not define %r" % name)
    return fn


def _settle(value):
    """What a test's own call returned. Calling an `async def` or a function
    with a `yield` runs none of its body; a test that did not run must never
    count as passed. A coroutine is run to its end (asyncio, imported only
    then); a generator fails (pytest refuses such tests too: its items are
    not tests). Anything else (a handle included) is just a value."""
    import types
    if type(value) is types.CoroutineType:
        import asyncio
        asyncio.run(value)
    elif type(value) in (types.GeneratorType, types.AsyncGeneratorType):
        value.close()
        raise TypeError("a test that is a generator (a yield in it) does not run as a test")


def _split(tests_text, entry):
    """([(name, kind, payload)], names): kind 'setup' or 'test' (a code
    object of one top-level statement), 'expr' (a top-level call statement,
    its value settled), 'call'/'check' (a test_* function or check(),
    called after the module's statements), 'case' (a TestCase method);
    names: every name test_code reads. A syntax error is one failing test.
    A function or method defined twice is one test, as Python keeps one."""
    import _ast as ast
    try:
        tree = compile(tests_text, "<test_code>", "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as ex:
        return [("test_code", "broken", "SyntaxError: %s (line %s)" % (ex.msg, ex.lineno))], frozenset()
    steps, called, defined, cases, read = [], set(), {}, {}, set()
    for node in _flat(tree.body):
        line = getattr(node, "lineno", 0)
        if _is_unittest_main(node):
            continue    # the TestCase methods are tests of their own, below
        code = compile(ast.Module(body=[node], type_ignores=[]), "<test_code>", "exec")
        _code_names(code, read)
        if isinstance(node, ast.ClassDef) and any(_names_testcase(b) for b in node.bases):
            # The last class of a name is the one the tests' namespace keeps.
            cases[node.name] = list(dict.fromkeys(
                f.name for f in node.body
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test")))
            steps.append(("line %d" % line, "setup", code))
        elif isinstance(node, ast.Assert):
            steps.append(("assert line %d" % line, "test", code))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and not isinstance(node.value.func, ast.Attribute):
            fn = node.value.func
            name = fn.id if isinstance(fn, ast.Name) else "call"
            called.add(name)
            expr = compile(ast.Expression(body=node.value), "<test_code>", "eval")
            steps.append(("%s() line %d" % (name, line), "expr", expr))
        else:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                    (node.name.startswith("test") or node.name == "check"):
                defined[node.name] = True
            steps.append(("line %d" % line, "setup", code))
    seen = {}
    for i, (name, kind, payload) in enumerate(steps):
        if kind != "setup":
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                steps[i] = ("%s #%d" % (name, seen[name]), kind, payload)
    for cls, meths in cases.items():
        steps += [("%s.%s" % (cls, meth), "case", (cls, meth)) for meth in meths]
    for name in defined:
        if name in called:
            continue
        if name == "check":
            steps.append(("check(%s)" % (entry or "?"), "check", entry))
        else:
            steps.append((name + "()", "call", name))
    return steps, frozenset(read)


def _code_names(code, into):
    """Into the set @into: the names @code and the code nested in it
    (functions, classes, comprehensions) look up as globals or attributes."""
    into.update(code.co_names)
    for c in code.co_consts:
        if type(c) is type(code):
            _code_names(c, into)


def _run_setup(side, ns, name, code, report):
    """One setup statement. One that raises (the code lacks a name the
    tests import or use) is a failed step of its own; so is one during
    which the code misbehaved (an exit, a hang, a StopIteration out of a
    call: the poison a test gets), even when the statement swallowed it."""
    side.poisoned = None
    try:
        exec(code, ns)
    except BaseException as ex:     # noqa: B036
        report(name, False, 0.0, _why(ex, side))
        return
    if side.poisoned is not None:
        report(name, False, 0.0, side.poisoned)


def _run_test(side, ns, kind, payload):
    """One test's body; it passed when this returns."""
    if kind == "broken":
        raise SyntaxError(payload)
    if kind == "test":
        exec(payload, ns)
    elif kind == "expr":
        _settle(eval(payload, ns))
    elif kind == "call":
        _settle(_tests_own(ns, payload)())
    elif kind == "case":
        _run_case(ns, *payload)
    else:
        if not payload:
            raise NameError("check(candidate) needs the job's entry_point (the function's name)")
        _settle(_tests_own(ns, "check")(_entry(side, payload)))


def _run(side, ns, steps, report):
    import time
    for name, kind, payload in steps:
        if kind == "setup":
            _run_setup(side, ns, name, payload, report)
            continue
        side.poisoned = None
        t0 = time.monotonic()
        ok, why = False, None
        try:
            _run_test(side, ns, kind, payload)
            ok = True
        except SystemExit as ex:
            # The tests' own exit (unittest.main() ends so): 0 is their pass.
            # The code's exits never arrive as SystemExit (CodeGone instead).
            ok, why = ex.code in (0, None), "the tests exited with status %r" % (ex.code,)
        except BaseException as ex:     # noqa: B036 -- any exception, skips included, is not a pass
            why = _why(ex, side)
            if isinstance(ex, KeyboardInterrupt):
                raise
        if side.poisoned is not None:
            ok, why = False, side.poisoned
        report(name, ok, (time.monotonic() - t0) * 1e3, why)


def _entry(side, text):
    """The entry_point: a name of the code's (`add`), or an attribute or
    argument-less call chain on one (`Solution().twoSum`, LeetCode's
    datasets), each step a message to the code's process."""
    import _ast as ast

    def ev(n):
        if isinstance(n, ast.Name):
            if n.id not in side.code_names:
                raise NameError("the code defines no %r (the job's entry_point)" % n.id)
            return side.code_names[n.id]
        if isinstance(n, ast.Attribute):
            return getattr(ev(n.value), n.attr)
        if isinstance(n, ast.Call) and not n.args and not n.keywords:
            return ev(n.func)()
        raise ValueError("entry_point: a name, attributes and calls without arguments only")
    return ev(compile(text, "<entry_point>", "eval", ast.PyCF_ONLY_AST).body)


def _why(ex, side):
    """Why a test failed, as text. str() of the exception may ask the code
    (`assert f(x) == y, f(x)`: the message is a handle), which may hang or
    be gone: CodeGone then, a BaseException, must not end the test process
    with the tests after this one unreported (the code's poison says why)."""
    if side.poisoned is None:
        try:
            text = "%s: %s" % (type(ex).__name__, ex)
        except BaseException:       # noqa: B036 -- CodeGone included, see above
            text = type(ex).__name__
    return (side.poisoned if side.poisoned is not None else text)[:_TEXT_MAX]


def _take_name(ns, side, name, value, read):
    """One of the code's names into the tests' namespace, as appended code
    would see it, except where that would let the code see an expected
    value: a builtin the tests call on expected values (set, sorted, abs,
    ...) is never the code's, and a standard-library module's name (math,
    re, ...) is always the real module, imported here only when test_code
    reads that name (@read): the code's names must not choose what the
    test process imports (every module of the standard library: `this`
    printing, seconds of imports, whatever an import does). A dunder name is
    never the code's: `__builtins__` would make every builtin the tests
    use (set, sorted, len, isinstance) a lookup the code answers."""
    if type(name) is not str:
        raise TypeError("a name that is not a str")
    if name.startswith("__") and name.endswith("__"):
        # The honest side never sends one (_code_main skips them); only a
        # code that rewrote its side of the harness does.
        return
    side.code_names[name] = side.dec(value)
    import builtins
    if name in vars(builtins):
        return
    if name in _stdlib_names():
        if name not in read:
            return
        import importlib
        try:
            ns[name] = importlib.import_module(name)
        except ImportError:
            pass
        return
    ns[name] = side.code_names[name]


def _test_main(sock, pid, budget_ms, entry, out):
    import time
    key = _read_line(0, 64).decode("ascii")
    tests_len = _HEADER[2]
    tests_text = _read_exact(0, tests_len).decode("utf-8", "surrogateescape")

    def emit(obj):
        line = (key + " " + _dumps(obj) + "\n").encode()
        while line:
            line = line[os.write(out, line):]

    deadline = time.monotonic() + budget_ms / 1e3
    side = _TestSide(sock, deadline, pid)
    steps, read = _split(tests_text, entry)
    names = [s[0] for s in steps if s[1] != "setup"]
    emit({"event": "start", "protocol": _PROTOCOL, "tests": names})
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        msg = _recv(sock, deadline)
    except TimeoutError:
        msg = ["failed", "the code did not finish its top level within the time budget"]
    except BaseException as ex:     # noqa: B036
        msg = ["failed", "the code's process ended before its names were known (%s)" % type(ex).__name__]
    if type(msg) is list and len(msg) == 2 and msg[0] == "ready" and type(msg[1]) is list:
        try:
            for pair in msg[1]:
                _take_name(ns, side, pair[0], pair[1], read)
        except Exception as ex:
            side.gone = "the code's process sent malformed names (%s)" % type(ex).__name__
    else:
        side.gone = msg[1] if (type(msg) is list and len(msg) == 2 and type(msg[1]) is str) else "malformed"
        side.gone = ("the code failed before the tests: " + side.gone)[:_TEXT_MAX]
    # The tests' own globals, whatever the names did: the interpreter's
    # builtins, never an object of the code's.
    ns["__name__"] = "__main__"
    ns["__builtins__"] = __builtins__
    counts = {"passed": 0, "failed": 0}

    def report(name, ok, ms, why):
        counts["passed" if ok else "failed"] += 1
        emit({"event": "test", "name": name, "outcome": "passed" if ok else "failed",
              "duration_ms": round(ms, 3), "message": None if ok else (why or "failed")[:_TEXT_MAX]})

    if side.gone is not None:
        for n in names[:]:
            report(n, False, 0.0, side.gone)
    else:
        _run(side, ns, steps, report)
    emit({"event": "done", "counts": counts})
    try:
        os.kill(pid, 9)
    except OSError:
        pass


_HEADER = None


def _stdin_file(data):
    """A descriptor holding @data from its start: a memfd, else an unlinked
    file in /tmp (the code's own input, nothing else)."""
    try:
        fd = os.memfd_create("stdin", 0)
    except (AttributeError, OSError):
        import tempfile
        fd, path = tempfile.mkstemp()
        os.unlink(path)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, 0)
    return fd


_SETUP_FAILED = 3   # exit status: the harness could not set up (nsbox's failure: `error`)


def _setup_failed(why):
    # Only before the fork: no code has run, so this status is nsbox's own,
    # never the code's (the test process otherwise ends 0, 1 or by a signal).
    sys.stderr.write("nsbox split harness: %s\n" % why)
    sys.stderr.flush()
    os._exit(_SETUP_FAILED)


def main():
    global _HEADER
    try:
        head = _read_line(0).decode("ascii").split(" ")
        if len(head) != 7 or head[0] != "NSBOX-SPLIT" or head[1] != str(_PROTOCOL):
            _setup_failed("bad header")
        code_len, stdin_len, tests_len, budget_ms = (int(x) for x in head[2:6])
        entry = head[6] if head[6] != "-" else None
        _HEADER = (code_len, stdin_len, tests_len)
        code = _read_exact(0, code_len).decode("utf-8", "surrogateescape")
        code_stdin = _read_exact(0, stdin_len)
        if not _non_dumpable():
            _setup_failed("PR_SET_DUMPABLE failed")
        req_r, req_w = os.pipe()            # requests: test process -> code's process
        ans_r, ans_w = os.pipe()            # answers: code's process -> test process
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
    except Exception as ex:
        _setup_failed("%s: %s" % (type(ex).__name__, ex))
    if pid == 0:
        # The code's process: nothing of the tests was read yet. Before any
        # of the code runs: its stdin is its own input (never the rest of
        # the package), its stdout is stderr (never the report's stdout).
        # No descriptor but 0-2 and its pipe ends: whatever else this
        # process inherited (a warm job's plumbing) stays out of its reach.
        keep = sorted((req_r, ans_w))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 20)
        stdin_fd = _stdin_file(code_stdin)
        os.dup2(stdin_fd, 0)
        os.close(stdin_fd)
        os.dup2(2, 1)
        sys.stdin = open(0, "r", closefd=False)
        _code_main((req_r, ans_w), code)
        os._exit(0)
    os.close(req_r)
    os.close(ans_w)
    del code, code_stdin
    # The test process: the report's stdout on a private descriptor, fd 1
    # (what the tests print) on stderr with the code's output.
    out = os.dup(1)
    os.set_inheritable(out, False)
    os.dup2(2, 1)
    # A SIGINT from the code's process ends us (a fail) rather than raising
    # KeyboardInterrupt at an instant of its choosing inside a test.
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        _test_main((ans_r, req_w), pid, budget_ms, entry, out)
    finally:
        # Whatever happened, the code's process ends with the tests.
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except OSError:
            pass
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
