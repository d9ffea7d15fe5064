"""Argument checks for nsbox_client: a caller's mistake raises TypeError or
ValueError before anything starts, never comes back as a result.

The limit grammar and ranges are nsbox's own (config/units_parse.c: the
flags, profiles, judge specs and batch lines share them), so a value passes
here exactly when nsbox would take it.
"""
from __future__ import annotations

import difflib
import math
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from .jobs import JudgeJob

LIMIT_KEYS: Tuple[str, ...] = ("wall_time", "cpu_time", "memory", "pids", "output_limit", "file_size", "tmp_size")

KIB, MIB, GIB, TIB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
DAY_MS = 24 * 3600 * 1000
PIDS_MAX = 1 << 22
JOBS_MAX = 4096
# The least memory limit CPython starts under (nsbox's CFG_PYTHON_MEMORY_MIN).
PYTHON_MEMORY_MIN = 16 * MIB

# key: (least, most, as the user writes them)
_SIZE_RANGE: Dict[str, Tuple[int, int, str, str]] = {
    "memory": (MIB, TIB, "1M", "1T"),
    "output_limit": (1, GIB, "1", "1G"),
    "file_size": (1, TIB, "1", "1T"),
    "tmp_size": (4 * KIB, TIB, "4K", "1T"),
}
_SIZE_UNIT = {"": 1, "b": 1, "k": KIB, "kb": KIB, "kib": KIB, "m": MIB, "mb": MIB, "mib": MIB,
              "g": GIB, "gb": GIB, "gib": GIB, "t": TIB, "tb": TIB, "tib": TIB}
_DURATION_UNIT = {"": 1000, "ms": 1, "s": 1000, "m": 60000, "h": 3600000}
_NUMBER = re.compile(r"(\d+)(?:\.(\d{1,9}))?([A-Za-z]*)\Z")

LimitValue = Union[str, int, float]
_T = TypeVar("_T")
Item = Union[str, Tuple[str, Optional[str]], JudgeJob]


def _kind(value: object) -> str:
    return type(value).__name__


def suggest(key: str, allowed: Sequence[str]) -> str:
    """ " -- did you mean 'wall_time'?" for a near miss, else ""."""
    close = difflib.get_close_matches(key.lower().replace("-", "_"), list(allowed), n=1, cutoff=0.6)
    return " -- did you mean %r?" % close[0] if close else ""


def parse_size(text: str, where: str) -> int:
    m = _NUMBER.match(text)
    unit = m.group(3).lower() if m else ""
    if not m or unit not in _SIZE_UNIT or (m.group(2) and _SIZE_UNIT[unit] == 1):
        raise ValueError("%s: malformed size %r (expected e.g. '512K', '256M', '1G')" % (where, text))
    mult = _SIZE_UNIT[unit]
    frac = m.group(2) or ""
    return int(m.group(1)) * mult + (int(frac) * mult // int(10 ** len(frac)) if frac else 0)


def parse_duration_ms(text: str, where: str) -> int:
    m = _NUMBER.match(text)
    if not m or m.group(3) not in _DURATION_UNIT:
        raise ValueError("%s: malformed duration %r (expected e.g. '500ms', '10s', '2m')" % (where, text))
    mult = _DURATION_UNIT[m.group(3)]
    frac = m.group(2) or ""
    if frac and (int(frac) * mult) % 10 ** len(frac):
        raise ValueError("%s: duration %r is finer than a millisecond" % (where, text))
    return int(m.group(1)) * mult + (int(frac) * mult // int(10 ** len(frac)) if frac else 0)


def seconds_text(value: float) -> str:
    """A number of seconds as nsbox reads a JSON number (judge/spec_parse.c
    number_text: nine decimals, trailing zeros dropped), so 2.01, whose
    double is 2.00999..., is the 2010ms nsbox makes of it."""
    text = "%.9f" % value
    return text.rstrip("0").rstrip(".") if "." in text else text


def _seconds_ms(value: float, where: str) -> int:
    """A finite number of seconds at most a day -> whole milliseconds as
    nsbox counts them; ValueError when nsbox would refuse it."""
    if not math.isfinite(value) or value <= 0 or value * 1000 > DAY_MS:
        raise ValueError("%s=%r is out of range: a number of seconds > 0, at most 86400" % (where, value))
    try:
        ms = parse_duration_ms(seconds_text(value), where)
    except ValueError:
        ms = -1
    if ms <= 0:
        raise ValueError("%s=%r is finer than a millisecond" % (where, value))
    return ms


def _duration(key: str, value: object, where: str) -> LimitValue:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError("%s: expected a duration string like '2s' or a number of seconds, not %s"
                        % (where, _kind(value)))
    if isinstance(value, (int, float)) and not isinstance(value, str):
        if not math.isfinite(value):
            raise ValueError("%s: %r is not a number of seconds" % (where, value))
        if value <= 0 or value * 1000 > DAY_MS:
            raise ValueError("%s: %r is out of range: allowed 1ms to 24h" % (where, value))
        _seconds_ms(value, where)   # what nsbox will parse: it must take it too
        return value
    ms = parse_duration_ms(value, where)
    if ms <= 0 or ms > DAY_MS:
        raise ValueError("%s: %r is out of range: allowed 1ms to 24h" % (where, value))
    return value


def _size(key: str, value: object, where: str, python: bool) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError("%s: expected a size string like '256M' or a number of bytes, not %s" % (where, _kind(value)))
    n = value if isinstance(value, int) else parse_size(value, where)
    least, most, least_text, most_text = _SIZE_RANGE[key]
    if n < least or n > most:
        raise ValueError("%s: %r is out of range: allowed %s to %s" % (where, value, least_text, most_text))
    if key == "memory" and python and n < PYTHON_MEMORY_MIN:
        raise ValueError("%s: %r is below 16M, the least a Python interpreter needs to start" % (where, value))
    return str(value)


def limits(value: object, *, python: bool = True, where: str = "limits") -> Dict[str, LimitValue]:
    """A limits mapping as nsbox reads it (judge spec / batch line keys),
    checked: the JSON-ready copy. @python: the program runs under Python
    (its memory floor applies)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError("%s must be a dict of limits, not %s" % (where, _kind(value)))
    out: Dict[str, LimitValue] = {}
    for key, v in value.items():
        if not isinstance(key, str):
            raise TypeError("%s: keys must be str, not %s" % (where, _kind(key)))
        at = "%s[%r]" % (where, key)
        if key not in LIMIT_KEYS:
            raise ValueError("%s: unknown limit key %r%s (allowed: %s)"
                             % (where, key, suggest(key, LIMIT_KEYS), ", ".join(LIMIT_KEYS)))
        if key in ("wall_time", "cpu_time"):
            out[key] = _duration(key, v, at)
        elif key == "pids":
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("%s: expected an int, not %s" % (at, _kind(v)))
            if not 1 <= v <= PIDS_MAX:
                raise ValueError("%s: %r is out of range: allowed 1 to %d" % (at, v, PIDS_MAX))
            out[key] = v
        else:
            out[key] = _size(key, v, at, python)
    return out


def timeout(value: object, where: str = "timeout") -> Optional[float]:
    """None, or a number of seconds > 0 (at most a day)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("%s must be a number of seconds (int or float), not %s %r" % (where, _kind(value), value))
    _seconds_ms(value, where)
    return float(value)


def text(value: object, where: str, optional: bool = False) -> Optional[str]:
    """Program text: a str that UTF-8 can hold (no lone surrogates)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError("%s must be a str%s, not %s" % (where, " or None" if optional else "", _kind(value)))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:   # a lone surrogate: no file, no JSON line can hold it
        raise ValueError("%s is not valid Unicode text: %s" % (where, e)) from None
    if "\0" in value:
        raise ValueError("%s must not contain a NUL character" % where)
    return value


def stdin(value: object, where: str = "stdin") -> Optional[str]:
    """A job's standard input: None, or a str UTF-8 can hold (a JSON line
    carries it; NUL is allowed, as nsbox reads it)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError("%s must be a str or None, not %s" % (where, _kind(value)))
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError("%s is not valid Unicode text: %s" % (where, e)) from None
    return value


def warm(value: object, where: str = "warm") -> Optional[bool]:
    """None (as nsbox doctor reports), True (always --warm) or False (never)."""
    if value is not None and not isinstance(value, bool):
        raise TypeError("%s must be True, False or None (use warm starts when nsbox doctor reports them), not %s %r"
                        % (where, _kind(value), value))
    return value


def count(value: object, where: str, most: int) -> Optional[int]:
    """None, or an int from 1 to @most."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int, not %s" % (where, _kind(value)))
    if not 1 <= value <= most:
        raise ValueError("%s=%r is out of range: allowed 1 to %d" % (where, value, most))
    return value


def jobs(value: object) -> Optional[int]:
    return count(value, "jobs", JOBS_MAX)


def spec(value: object, where: str = "spec") -> Dict[str, Any]:
    """The parts of a judge spec a caller gets wrong most: its shape, its
    program, its cases and its limits (nsbox checks the rest)."""
    if not isinstance(value, Mapping):
        raise TypeError("%s must be a dict (a judge spec), not %s" % (where, _kind(value)))
    prog = value.get("program")
    if not isinstance(prog, Mapping) or sum(k in prog for k in ("path", "source")) != 1:
        raise ValueError("%s['program'] must be {'path': FILE} or {'source': TEXT}" % where)
    if "source" in prog:
        text(prog["source"], "%s['program']['source']" % where)
    elif not isinstance(prog["path"], (str, os.PathLike)):
        raise TypeError("%s['program']['path'] must be a str path, not %s" % (where, _kind(prog["path"])))
    cases = value.get("cases")
    if not isinstance(cases, Sequence) or isinstance(cases, str) or not cases:
        raise ValueError("%s['cases'] must be a non-empty list of cases" % where)
    for i, case in enumerate(cases):
        if not isinstance(case, Mapping) or not isinstance(case.get("name"), str):
            raise ValueError("%s['cases'][%d] must be a dict with a str 'name'" % (where, i))
    if "profile" in value and not isinstance(value["profile"], str):
        raise TypeError("%s['profile'] must be a str, not %s" % (where, _kind(value["profile"])))
    out = dict(value)
    if "limits" in value:
        out["limits"] = limits(value["limits"], python=True, where="%s['limits']" % where)
    return out


def item(index: int, value: object) -> Item:
    """One batch item: code, (code, test_code) or a JudgeJob."""
    where = "pairs[%d]" % index
    if isinstance(value, JudgeJob):
        return JudgeJob(spec(value.spec, where + ".spec"))
    if isinstance(value, str):
        return text(value, where) or ""
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 2:
        raise TypeError("%s must be code (str), a (code, test_code) pair or a JudgeJob, not %s"
                        % (where, _kind(value)))
    code = text(value[0], where + " code") or ""
    return (code, text(value[1], where + " test_code", optional=True) if len(value) > 1 else None)


def collection(values: _T, where: str = "pairs") -> _T:
    """@values itself, when it can be a collection of batch items: a str (or
    bytes, or a dict) iterates as characters (keys), each of which would
    run as a job of its own."""
    if isinstance(values, (str, bytes, bytearray, Mapping)):
        raise TypeError("%s must be a list (or other iterable) of jobs, not a %s, whose every %s would run as a "
                        "job: wrap a single job in a list" % (where, _kind(values),
                                                              "key" if isinstance(values, Mapping) else "character"))
    return values


def arguments(value: object, where: str) -> List[str]:
    """Command-line words: a list of str (a str alone would be split into
    its characters, each a word nsbox refuses with a puzzling message)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError("%s must be a list of str, e.g. ['--memory', '128M'], not %s" % (where, _kind(value)))
    for i, word in enumerate(value):
        if not isinstance(word, str):
            raise TypeError("%s[%d] must be a str, not %s %r" % (where, i, _kind(word), word))
        if "\0" in word:
            raise ValueError("%s[%d] must not contain a NUL character" % (where, i))
    return list(value)


def items(values: Sequence[object]) -> List[Item]:
    """Every item checked before the first one runs."""
    return [item(i, v) for i, v in enumerate(collection(values))]


def directory(value: object, where: str) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError("%s must be a path (str or os.PathLike), not %s" % (where, _kind(value)))
    path = os.fspath(value)
    if not isinstance(path, str):
        raise TypeError("%s must be a str path, not bytes" % where)
    if not os.path.isdir(path):
        raise ValueError("%s %r is not a directory" % (where, path))
    return os.path.abspath(path)
