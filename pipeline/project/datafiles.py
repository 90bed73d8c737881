"""Files the package reads next to itself when it loads: does the build ship them?

kernel-builder copies into a build only the Python package
(torch-ext/<python_name>/) and, of its files, those whose extension `pyext`
lists (nix-builder/lib/source-set.nix; default py and pyi). Code that runs at
load time and opens `Path(__file__).parent.parent / "x.json"` (outside the
package) or `Path(__file__).parent / "x.json"` without "json" in pyext
therefore builds fine and fails on import with FileNotFoundError.

The path is worked out statically from `__file__` (.parent, .parents[n],
/ "name", os.path.dirname/join, names assigned earlier in the same scope);
a read is judged when it runs unconditionally at load time: at module level,
or in a module-level function the module calls at module level. Reads under
an `if` or a `try` are taken as optional and left alone.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import PurePosixPath

_PATH_CALLS = {"Path", "PurePath", "PosixPath", "PurePosixPath", "fspath", "str", "abspath", "realpath",
               "normpath", "expanduser"}
_SAME_METHODS = {"resolve", "absolute", "expanduser"}
_READ_METHODS = {"open", "read_text", "read_bytes"}
_LOADERS = {"load", "loadtxt", "fromfile", "load_file", "safe_open"}  # np/torch/safetensors, first arg a path


@dataclass(frozen=True)
class DataRead:
    module: str          # project-relative path of the module that reads
    line: int
    target: str          # project-relative, normalised path it reads
    shown: str           # the expression as written


class _Scope:
    """Evaluates path expressions of one module to project-relative paths (None: not static)."""

    def __init__(self, module_rel: str, env: dict[str, str] | None = None) -> None:
        self.module_rel = module_rel
        self.env: dict[str, str] = dict(env or {})

    def path(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.module_rel if node.id == "__file__" else self.env.get(node.id)
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            base = self.path(node.value)
            return _parent(base, 1) if base is not None else None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                node.value.attr == "parents" and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, int):
            base = self.path(node.value.value)
            return _parent(base, node.slice.value + 1) if base is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            base, part = self.path(node.left), _const(node.right)
            return _join(base, [part]) if base is not None and part is not None else None
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _call(self, node: ast.Call) -> str | None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if isinstance(func, ast.Attribute) and name in _SAME_METHODS and not node.args:
            return self.path(func.value)
        if isinstance(func, ast.Attribute) and name == "joinpath":
            base, parts = self.path(func.value), [_const(a) for a in node.args]
            return _join(base, parts) if base is not None and None not in parts else None
        if name in _PATH_CALLS and len(node.args) == 1:
            return self.path(node.args[0])
        if name == "dirname" and len(node.args) == 1:
            base = self.path(node.args[0])
            return _parent(base, 1) if base is not None else None
        if name == "join" and node.args:
            base, parts = self.path(node.args[0]), [_const(a) for a in node.args[1:]]
            return _join(base, parts) if base is not None and None not in parts else None
        return None

    def assign(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = self.path(node.value)
            if value is not None:
                self.env[node.targets[0].id] = value
            else:
                self.env.pop(node.targets[0].id, None)

    def reads(self, node: ast.AST) -> list[tuple[int, str, ast.expr]]:
        """(line, target, expression) of every static path this expression opens."""
        found = []
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            arg = _read_argument(call)
            target = self.path(arg) if arg is not None else None
            if target is not None:
                found.append((call.lineno, target, arg))
        return found


def _const(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _parent(path: str, levels: int) -> str:
    for _ in range(levels):
        path = os.path.dirname(path) or "."
        if path == ".":
            path = ".."  # climbing above the project root: outside anyway
    return path


def _join(base: str, parts: list[str | None]) -> str:
    return os.path.normpath(os.path.join(base, *[p for p in parts if p])).replace(os.sep, "/")


def _read_argument(call: ast.Call) -> ast.expr | None:
    """The path argument of a call that reads a file, or None."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name == "open" and isinstance(func, ast.Name) or (name == "open" and isinstance(func, ast.Attribute)
                                                         and isinstance(func.value, ast.Name)
                                                         and func.value.id in ("io", "builtins", "codecs")):
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
            return None
        return call.args[0] if call.args else None
    if isinstance(func, ast.Attribute) and name in _READ_METHODS:
        mode = call.args[0] if name == "open" and call.args else None
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
            return None
        return func.value
    if isinstance(func, ast.Attribute) and name in _LOADERS and call.args:
        return call.args[0]
    return None


def _unconditional(body: list[ast.stmt]):
    """What always runs when `body` runs, as expressions to inspect: simple
    statements whole, the context expressions of `with`, class bodies; the
    bodies of `if`/`try`/loops/functions left out."""
    for st in body:
        if isinstance(st, ast.ClassDef):
            yield from _unconditional(st.body)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                yield item.context_expr
            yield from _unconditional(st.body)
        elif not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.Try, ast.For, ast.AsyncFor,
                                 ast.While, ast.Match)) and type(st).__name__ != "TryStar":
            yield st


def _local_calls(node: ast.AST, functions: dict) -> list[str]:
    return [n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in functions]


def load_time_reads(tree: ast.Module, module_rel: str) -> list[DataRead]:
    """Reads that run when this module is imported (module level, and local functions it calls there)."""
    functions = {st.name: st for st in tree.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    module = _Scope(module_rel)
    found: list[DataRead] = []
    called: list[str] = []

    def visit(scope: _Scope, body: list[ast.stmt]) -> None:
        for node in _unconditional(body):
            found.extend(DataRead(module_rel, line, target, ast.unparse(arg)) for line, target, arg in scope.reads(node))
            called.extend(_local_calls(node, functions))
            if isinstance(node, ast.stmt):
                scope.assign(node)

    visit(module, tree.body)
    seen: set[str] = set()
    while called:
        name = called.pop()
        if name not in seen:
            seen.add(name)
            visit(_Scope(module_rel, module.env), functions[name].body)
    return found


def shipped_problem(read: DataRead, package_rel: str, pyext: tuple[str, ...], exists, is_dir) -> str:
    """Why the build does not ship what `read` opens ("" when it does)."""
    target = PurePosixPath(read.target)
    package = PurePosixPath(package_rel)
    if target != package and package not in target.parents:
        return (f"`{read.shown}` reads {read.target}, outside the package {package_rel}/: the build ships "
                "only the package, so loading the kernel fails with FileNotFoundError")
    if is_dir(read.target):
        return ""
    if not exists(read.target):
        return f"`{read.shown}` reads {read.target}, which does not exist"
    ext = target.suffix.lstrip(".")
    if ext not in pyext:
        return (f"`{read.shown}` reads {read.target}, but pyext ({', '.join(pyext)}) does not list {ext!r}: "
                "the build leaves the file out")
    return ""
