"""Measure the package's shape: module sizes, function sizes, import cycles,
function-local imports. Exit 1 when a limit is broken (issue #13's limits).

    python scripts/arch_check.py [--max-module 500] [--max-function 60]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "pipeline"
ALLOWED_LONG: set[str] = set()  # no function is exempt


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(tree: ast.AST, name: str, is_pkg: bool) -> tuple[set[str], int]:
    """Top-level (module-scope, not TYPE_CHECKING) imports, and the count of function-local ones."""
    top: set[str] = set()
    local_ours: set[str] = set()
    local = 0
    package = name if is_pkg else name.rpartition(".")[0]

    def targets(node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if node.level:
            base = package.split(".")
            base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        # `from pkg import name`: an edge to pkg.name when that is a module,
        # else to pkg (resolved in main, which knows the modules).
        return [f"{mod}:{a.name}" for a in node.names]

    def walk(node, in_function: bool, in_type_checking: bool):
        nonlocal local
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                ours = [t for t in targets(child) if t.startswith("pipeline")]
                if in_function:
                    local += 1
                    local_ours.update(ours)
                if not in_type_checking:
                    # A function-local import of our own module is still an edge:
                    # hiding a cycle inside a function does not remove it.
                    top.update(ours)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, True, in_type_checking)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                walk(child, in_function, True)
            else:
                walk(child, in_function, in_type_checking)

    walk(tree, False, False)
    return top, local, local_ours


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-module", type=int, default=500)
    parser.add_argument("--max-function", type=int, default=60)
    args = parser.parse_args(argv)
    modules: dict[str, set[str]] = {}
    failures: list[str] = []
    local_total = 0
    local_ours_total = 0  # function-local imports of our own modules: only for heavy dependencies (torch, hub)
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.count("\n") + 1
        rel = path.relative_to(ROOT.parent)
        if lines > args.max_module:
            failures.append(f"{rel}: module has {lines} lines (limit {args.max_module})")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in ALLOWED_LONG:
                size = node.end_lineno - node.lineno + 1
                if size > args.max_function:
                    failures.append(f"{rel}:{node.lineno}: function {node.name} has {size} lines "
                                    f"(limit {args.max_function})")
        name = module_name(path)
        top, local, ours = imports_of(tree, name, path.name == "__init__.py")
        local_total += local
        local_ours_total += len(ours)
        modules[name] = top
    # Resolve `from pipeline.x import y` to module pipeline.x.y when that is a module, else pipeline.x.
    graph: dict[str, set[str]] = {}
    for name, targets in modules.items():
        deps = set()
        for t in targets:
            if ":" in t:
                mod, _, member = t.partition(":")
                t = f"{mod}.{member}" if f"{mod}.{member}" in modules else mod
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                deps.add(t)
        graph[name] = deps
    cycles = find_cycles(graph)
    for cycle in cycles:
        failures.append("import cycle: " + " -> ".join(cycle))
    print(f"{len(modules)} modules, largest {max_lines()} lines; {local_total} function-local imports "
          f"({local_ours_total} of them of pipeline modules); {len(cycles)} import cycle(s)")
    for f in failures:
        print(f)
    return 1 if failures else 0


def max_lines() -> str:
    sizes = [(p.read_text(encoding='utf-8').count("\n") + 1, p) for p in ROOT.rglob("*.py")]
    n, p = max(sizes)
    return f"{p.relative_to(ROOT.parent)} {n}"


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
