"""Discovery: static, so no harness or learner code runs in the main process."""
import ast
import importlib.util
import os
from .base import _exc_text
from .rewrite import _AssertRewriter


class TestItem:
    __slots__ = ("file", "path", "module", "cls", "func")

    def __init__(self, file, path, module, cls, func):
        self.file, self.path, self.module, self.cls, self.func = file, path, module, cls, func

    @property
    def name(self):
        if self.cls:
            return "%s::%s::%s" % (self.file, self.cls, self.func)
        return "%s::%s" % (self.file, self.func)


def _base_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _tests_in_tree(tree):
    """[(class or None, function)] in definition order."""
    found, seen_funcs = [], set()
    case_classes = {}  # local TestCase subclasses: name -> [test method names]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test") and node.name not in seen_funcs:
                seen_funcs.add(node.name)
                found.append((None, node.name))
        elif isinstance(node, ast.ClassDef):
            bases = [_base_name(b) for b in node.bases]
            local_bases = [b for b in bases if b in case_classes]
            if not (local_bases or any(b and b.endswith("TestCase") for b in bases)):
                continue
            methods = []
            for item in node.body:
                if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and item.name.startswith("test") and item.name not in methods):
                    methods.append(item.name)
            for base in local_bases:  # inherited test methods defined in this file
                methods.extend(m for m in case_classes[base] if m not in methods)
            case_classes[node.name] = methods
            found = [entry for entry in found if entry[0] != node.name]  # redefinition
            found.extend((node.name, m) for m in methods)
    return found


def _syntax_text(exc):
    return "%s in %s line %s: %s" % (type(exc).__name__, exc.filename, exc.lineno, exc.msg)


def discover(harness):
    """Return (items, codes, collect_errors); codes maps file -> code object."""
    items, codes, errors = [], {}, []
    try:
        names = sorted(n for n in os.listdir(harness)
                       if n.startswith("test_") and n.endswith(".py")
                       and os.path.isfile(os.path.join(harness, n)))
    except OSError as exc:
        return [], {}, [{"file": None, "message": "cannot list the harness directory %s: %s"
                         % (harness, exc.strerror or exc)}]
    for name in names:
        path = os.path.join(harness, name)
        try:
            with open(path, "rb") as handle:
                source = importlib.util.decode_source(handle.read())
            tree = ast.parse(source, filename=path)
            tests = _tests_in_tree(tree)
            tree = _AssertRewriter(source).visit(tree)
            ast.fix_missing_locations(tree)
            code = compile(tree, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            errors.append({"file": name, "message": _syntax_text(exc)})
            continue
        except Exception as exc:
            errors.append({"file": name, "message": "cannot load %s: %s" % (name, _exc_text(exc))})
            continue
        codes[name] = code
        module = name[:-3]
        items.extend(TestItem(name, path, module, cls, func) for cls, func in tests)
    return items, codes, errors
