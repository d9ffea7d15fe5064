"""Assert rewriting: applied to harness test files only, never learner files."""
import ast
from .base import _H_CMP, _H_PLAIN, _T_LEFT, _T_RIGHT, _T_VALUE


_OP_TEXT = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
    ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}


def _is_literal(node):
    try:
        ast.literal_eval(node)
        return True
    except Exception:
        return False


class _AssertRewriter(ast.NodeTransformer):
    def __init__(self, source):
        self.source = source

    def _src(self, node):
        text = None
        try:
            text = ast.get_source_segment(self.source, node)
        except Exception:
            text = None
        if text is None:
            try:
                text = ast.unparse(node)
            except Exception:
                text = "<expression>"
        if "\n" in text:
            text = " ".join(text.split())
        return text

    def visit_Assert(self, node):
        def load(name):
            return ast.Name(id=name, ctx=ast.Load())

        def store(name):
            return ast.Name(id=name, ctx=ast.Store())

        test = node.test
        has_msg = node.msg is not None
        msg = node.msg if has_msg else ast.Constant(value=None)
        if (isinstance(test, ast.Compare) and len(test.ops) == 1
                and type(test.ops[0]) in _OP_TEXT):
            left, right = test.left, test.comparators[0]
            left_src = None if _is_literal(left) else self._src(left)
            right_src = None if _is_literal(right) else self._src(right)
            failure = ast.Call(
                func=load(_H_CMP),
                args=[ast.Constant(value=_OP_TEXT[type(test.ops[0])]), load(_T_LEFT),
                      load(_T_RIGHT), ast.Constant(value=has_msg), msg,
                      ast.Constant(value=left_src), ast.Constant(value=right_src)],
                keywords=[])
            new = [
                ast.Assign(targets=[store(_T_LEFT)], value=left),
                ast.Assign(targets=[store(_T_RIGHT)], value=right),
                ast.If(test=ast.UnaryOp(op=ast.Not(), operand=ast.Compare(
                    left=load(_T_LEFT), ops=[test.ops[0]], comparators=[load(_T_RIGHT)])),
                    body=[ast.Raise(exc=failure, cause=None)], orelse=[]),
            ]
        else:
            show_value = not (_is_literal(test) or (
                isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)))
            failure = ast.Call(
                func=load(_H_PLAIN),
                args=[load(_T_VALUE), ast.Constant(value=has_msg), msg,
                      ast.Constant(value=self._src(test)), ast.Constant(value=show_value)],
                keywords=[])
            new = [
                ast.Assign(targets=[store(_T_VALUE)], value=test),
                ast.If(test=ast.UnaryOp(op=ast.Not(), operand=load(_T_VALUE)),
                       body=[ast.Raise(exc=failure, cause=None)], orelse=[]),
            ]
        for stmt in new:
            ast.copy_location(stmt, node)
        return new
