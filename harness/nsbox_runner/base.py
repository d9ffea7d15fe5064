"""Constants shared by the runner's parts, and text helpers (clipping, safe repr)."""
import os
import sys


PROTOCOL = 1
OUTCOMES = ("passed", "failed", "error", "skipped")
REPR_LIMIT = 200            # characters of each value shown in a failed comparison
MAX_MESSAGE = 4000          # characters of a test's message
MAX_TRACEBACK = 12000       # characters of a test's traceback (the tail is kept)
MAX_REPORT = 256 * 1024     # bytes read from a child's report pipe
MAX_CAPTURE = 8 * 1024      # bytes kept of what one test printed on stdout, and on stderr
DEFAULT_TEST_BUDGET = 5.0   # seconds per test unless --test-budget says otherwise
MIN_SLICE = 0.05            # a test is not started with less time than this

# The runner's own code: the entry script and this package, in the directory
# nsbox mounts at /nsbox. Its frames are left out of the tracebacks a test
# reports, and it is taken off sys.path before test code is imported.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
RUNNER_DIR = os.path.dirname(PACKAGE_DIR)
_ENTRY = os.path.join(RUNNER_DIR, "nsbox_test_runner.py")
RUNNER_FILES = {_ENTRY, os.path.realpath(_ENTRY)}
_PACKAGE_PREFIXES = (PACKAGE_DIR + os.sep, os.path.realpath(PACKAGE_DIR) + os.sep)


def is_runner_file(filename):
    return filename in RUNNER_FILES or filename.startswith(_PACKAGE_PREFIXES)

# Names used by rewritten asserts.  They start with "@" so that no Python
# source can spell them (the same trick pytest uses); code can still reach them
# through globals(), which harness/README.md states.
_H_CMP = "@nsbox_compare_failure"
_H_PLAIN = "@nsbox_assert_failure"
_T_LEFT = "@nsbox_left"
_T_RIGHT = "@nsbox_right"
_T_VALUE = "@nsbox_value"

# Learner code must never write bytecode into the workspace, even when the
# runner is started without -B (its own tests do use -B).
sys.dont_write_bytecode = True


def _clip(text, limit=REPR_LIMIT):
    if len(text) <= limit:
        return text
    keep = limit - 5
    head = (keep * 2) // 3
    return text[:head] + " ... " + text[len(text) - (keep - head):]


def _safe_repr(value):
    try:
        text = repr(value)
        if not isinstance(text, str):
            raise TypeError("__repr__ returned non-string")
    except BaseException as exc:  # learner __repr__ may do anything
        text = "<%s object; repr() raised %s>" % (type(value).__name__, type(exc).__name__)
    return _clip(text)


def _safe_str(value):
    try:
        text = str(value)
        if not isinstance(text, str):
            raise TypeError("__str__ returned non-string")
        return text
    except BaseException as exc:
        return "<%s object; str() raised %s>" % (type(value).__name__, type(exc).__name__)


def _exc_name(exc_type):
    name = getattr(exc_type, "__qualname__", None) or getattr(exc_type, "__name__", "Exception")
    module = getattr(exc_type, "__module__", "builtins")
    if module not in ("builtins", "__main__", None):
        name = "%s.%s" % (module, name)
    return name


def _exc_text(exc):
    """'ZeroDivisionError: division by zero' (or just the name)."""
    text = _safe_str(exc)
    name = _exc_name(type(exc))
    return "%s: %s" % (name, text) if text else name


def _seconds(value):
    value = round(value, 2)
    text = ("%.2f" % value).rstrip("0").rstrip(".")
    return text + "s"


def _clean(text):
    """Make a string safe for a strict JSON/UTF-8 reader (no lone surrogates, no NUL)."""
    if text is None:
        return None
    if not isinstance(text, str):
        text = _safe_str(text)
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def _clip_message(text):
    if text is None:
        return None
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "\n... (%d characters cut)" % (len(text) - MAX_MESSAGE)
    return text


def _clip_traceback(text):
    if text is None:
        return None
    if len(text) > MAX_TRACEBACK:
        cut = len(text) - MAX_TRACEBACK
        text = "... (%d characters cut)\n" % cut + text[cut:]
    return text
