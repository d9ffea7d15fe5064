"""Failure messages for rewritten asserts (called in the child, from test code)."""

from .base import _clip, _safe_repr, _safe_str


def _explain_eq(left, right):
    lines = []
    try:
        if isinstance(left, dict) and isinstance(right, dict):
            only_left = [k for k in left if k not in right]
            only_right = [k for k in right if k not in left]
            differing = [k for k in left if k in right and left[k] != right[k]]
            if differing:
                lines.append("  differing items: %s != %s" % (
                    _clip("{%s}" % ", ".join("%r: %r" % (k, left[k]) for k in differing)),
                    _clip("{%s}" % ", ".join("%r: %r" % (k, right[k]) for k in differing))))
            if only_left:
                lines.append("  keys only on the left: %s" % _clip(repr(only_left)))
            if only_right:
                lines.append("  keys only on the right: %s" % _clip(repr(only_right)))
        elif (isinstance(left, (list, tuple)) and isinstance(right, (list, tuple))) or (
                isinstance(left, str) and isinstance(right, str)):
            for index, (a, b) in enumerate(zip(left, right)):
                if a != b:
                    lines.append("  first difference at index %d: %s != %s"
                                 % (index, _safe_repr(a), _safe_repr(b)))
                    break
            if len(left) != len(right):
                unit = "characters" if isinstance(left, str) else "items"
                lines.append("  left has %d %s, right has %d" % (len(left), unit, len(right)))
    except BaseException:  # odd __eq__/__hash__ in learner objects: no explanation
        return []
    return lines


def _with_user_message(has_msg, msg, lines):
    text = "\n".join(lines)
    if has_msg:
        text = _safe_str(msg) + "\n" + text
    return text


def _compare_failure(op, left, right, has_msg, msg, left_src, right_src):
    """Build (not raise) the AssertionError for a failed `assert left OP right`."""
    left_repr, right_repr = _safe_repr(left), _safe_repr(right)
    lines = ["assert %s %s %s" % (left_repr, op, right_repr)]
    if left_src is not None and left_src != left_repr:
        lines.append("  where %s = %s" % (left_repr, _clip(left_src)))
    if right_src is not None and right_src != right_repr:
        lines.append("  where %s = %s" % (right_repr, _clip(right_src)))
    if op == "==":
        lines.extend(_explain_eq(left, right))
    return AssertionError(_with_user_message(has_msg, msg, lines))


def _assert_failure(value, has_msg, msg, src, show_value):
    """Build the AssertionError for a failed `assert EXPR` of any other form."""
    lines = ["assert %s" % _clip(src)]
    if show_value:
        lines.append("  where %s = %s" % (_clip(src), _safe_repr(value)))
    return AssertionError(_with_user_message(has_msg, msg, lines))
