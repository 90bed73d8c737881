"""Op naming rewrites in the Python package, for `migrate`.

A build registers its ops under a namespace unique to the build, which the
generated `_ops` module exposes as `ops` (torch.ops.<namespace>) and through
`add_op_namespace_prefix`. So, in every module of the package:
  - `from . import _ops as ops` (the extension module itself)  → `from ._ops import ops`
  - torch.ops.<old name>.f                                       → ops.f
  - custom_op("<old name>::f", ...) and the other torch.library
    calls that name an op with a literal                         → custom_op(add_op_namespace_prefix("f"), ...)
A Python op whose name the C++ binding now also registers in that namespace
is renamed f_py (both would otherwise claim <namespace>::f), here and where it
is called. Edits are made at the AST's positions; the rest of the text stays.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from pipeline.project.package import OP_NAMING_CALLS

_NAMING = OP_NAMING_CALLS | {"define", "impl", "_register_fake"}


@dataclass(frozen=True)
class PyResult:
    text: str
    notes: tuple[str, ...]


def _name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _offsets(source: bytes) -> list[int]:
    starts, total = [0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


class _Edits:
    def __init__(self, source: bytes) -> None:
        self.source, self.starts = source, _offsets(source)
        self.edits: list[tuple[int, int, str]] = []

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.starts[node.lineno - 1] + node.col_offset, self.starts[node.end_lineno - 1] + node.end_col_offset)

    def replace(self, node: ast.AST, text: str) -> None:
        start, end = self.span(node)
        self.edits.append((start, end, text))

    def insert(self, offset: int, text: str) -> None:
        self.edits.append((offset, offset, text))

    def apply(self) -> str:
        out = self.source
        for start, end, text in sorted(self.edits, key=lambda e: (e[0], e[1]), reverse=True):
            out = out[:start] + text.encode() + out[end:]
        return out.decode("utf-8")


def python_ops(tree: ast.Module, namespaces: set[str]) -> set[str]:
    """Op names this module defines with a literal '<ns>::name' in one of `namespaces`."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node) in ("custom_op", "triton_op", "define") and node.args:
            literal = node.args[0]
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str) and "::" in literal.value:
                ns, _, op = literal.value.partition("::")
                if ns in namespaces:
                    found.add(op.split("(")[0].split(".")[0])
    return found


def _is_torch_ops(node: ast.AST, namespaces: set[str]) -> bool:
    """torch.ops.<one of namespaces>"""
    return (isinstance(node, ast.Attribute) and node.attr in namespaces and isinstance(node.value, ast.Attribute)
            and node.value.attr == "ops" and isinstance(node.value.value, ast.Name) and node.value.value.id == "torch")


def _ops_imports(tree: ast.Module) -> list[ast.ImportFrom]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level >= 1 and (
        n.module == "_ops" or (n.module is None and any(a.name == "_ops" for a in n.names)))]


def rewrite_module(source: bytes, depth: int, namespaces: set[str], renames: dict[str, str]) -> PyResult:
    """One module's rewrites; `depth` is how deep it sits below the package (0 for its top level)."""
    tree = ast.parse(source)
    edits, notes = _Edits(source), []
    needs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node) in _NAMING and node.args:
            literal = node.args[0]
            if isinstance(literal, ast.Constant) and isinstance(literal.value, str) and "::" in literal.value:
                ns, _, rest = literal.value.partition("::")
                if ns in namespaces:
                    op = rest.split("(")[0]
                    new = renames.get(op, op) + rest[len(op):]
                    edits.replace(literal, f'add_op_namespace_prefix("{new}")')
                    needs.add("add_op_namespace_prefix")
        elif _is_torch_ops(node, namespaces):
            edits.replace(node, "ops")
            needs.add("ops")
    for node in ast.walk(tree):  # calls through the renamed Python ops: ops.f → ops.f_py
        if isinstance(node, ast.Attribute) and node.attr in renames and _is_torch_ops(node.value, namespaces):
            start, end = edits.span(node)
            edits.edits.append((end - len(node.attr), end, renames[node.attr]))
    _fix_imports(tree, edits, depth, needs, notes)
    if not edits.edits:
        return PyResult(source.decode("utf-8"), ())
    if needs & {"ops", "add_op_namespace_prefix"}:
        notes.append("op names: " + ", ".join(sorted(needs)) + " from the build's _ops")
    return PyResult(edits.apply(), tuple(notes))


def _fix_imports(tree: ast.Module, edits: _Edits, depth: int, needs: set[str], notes: list[str]) -> None:
    """`from . import _ops as X` → `from ._ops import ops as X`; the names `needs` added to an _ops import."""
    dots = "." * (depth + 1)
    existing = _ops_imports(tree)
    for node in existing:
        names = []
        for alias in node.names:
            if node.module is None and alias.name == "_ops":
                names.append("ops" if alias.asname in (None, "ops") else f"ops as {alias.asname}")
                notes.append("`from . import _ops` imported the extension module, not its ops")
            elif node.module is None:
                other = alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"
                edits.insert(edits.span(node)[1], f"\n{' ' * node.col_offset}from {dots} import {other}")
            else:
                names.append(alias.name if alias.asname is None else f"{alias.name} as {alias.asname}")
        plain = {n.split(" as ")[0] for n in names}
        names += sorted(needs - plain)
        edits.replace(node, f"from {dots}_ops import {', '.join(sorted(set(names)))}")
    if existing or not needs:
        return
    # No _ops import at all: add one after the module's leading imports.
    at = 0
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom)) or (isinstance(st, ast.Expr) and
                                                             isinstance(st.value, ast.Constant)):
            at = edits.span(st)[1]
        else:
            break
    line = f"from {dots}_ops import {', '.join(sorted(needs))}"
    edits.insert(at, f"\n{line}" if at else f"{line}\n")
