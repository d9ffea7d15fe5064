"""Tracebacks without the runner's frames."""
import os
import traceback

from .base import _exc_text, is_runner_file


def _keep_frame(frame):
    filename = frame.f_code.co_filename
    if is_runner_file(filename) or filename.startswith("<frozen importlib"):
        return False
    try:
        return "__unittest" not in frame.f_globals  # unittest's own machinery
    except Exception:
        return True


# Directories whose code is "the test's or the learner's" (set in the child).
_CODE_DIRS = ()


def set_code_dirs(*dirs):
    """In the child, before test code runs: the harness and the workspace."""
    global _CODE_DIRS
    _CODE_DIRS = dirs


def _in_code_dirs(filename):
    return any(filename.startswith(d + os.sep) for d in _CODE_DIRS)


def _frames(tb):
    """(frame, lineno) of a traceback, without the runner's or unittest's frames,
    starting at the first harness or workspace frame (asyncio etc. before it go)."""
    kept = []
    while tb is not None:
        if _keep_frame(tb.tb_frame):
            kept.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    for index, (frame, _) in enumerate(kept):
        if _in_code_dirs(frame.f_code.co_filename):
            return kept[index:]
    return kept


def _last_frame(tb):
    """(filename, lineno) of the innermost harness/workspace frame, else innermost."""
    frames = [(f.f_code.co_filename, lineno) for f, lineno in _frames(tb)]
    mine = [entry for entry in frames if _in_code_dirs(entry[0])]
    return (mine or frames or [None])[-1]


def format_exception(exc):
    parts, seen = [], set()

    def walk(err, depth):
        if err is None or id(err) in seen or depth > 20:
            return
        seen.add(id(err))
        if err.__cause__ is not None:
            walk(err.__cause__, depth + 1)
            parts.append("\nThe above exception was the direct cause of the following exception:\n\n")
        elif err.__context__ is not None and not err.__suppress_context__:
            walk(err.__context__, depth + 1)
            parts.append("\nDuring handling of the above exception, another exception occurred:\n\n")
        stack = traceback.StackSummary.extract(_frames(err.__traceback__), capture_locals=False)
        if stack:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(stack.format())
        parts.extend(traceback.format_exception_only(type(err), err))

    try:
        walk(exc, 0)
        return "".join(parts)
    except BaseException as failure:  # never let formatting hide the result
        return "(traceback unavailable: %s)\n%s\n" % (type(failure).__name__, _exc_text(exc))
