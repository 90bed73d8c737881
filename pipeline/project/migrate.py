"""`migrate PATH`: rewrite a legacy or agent-written project to edition 5.

What it changes, and nothing else:
  build.toml     the name made valid; version, license and edition added to
                 [general]; a framework table when there is none
  flake.nix      kernel-builder's input (github:huggingface/kernels) and
                 genKernelFlakeOutputs { inherit self; ... }; written when absent
  the binding    ([torch].src only) PYBIND11_MODULE → TORCH_LIBRARY_EXPAND +
                 REGISTER_EXTENSION, TORCH_LIBRARY(name) → _EXPAND(TORCH_EXTENSION_NAME)
  the package    torch.ops.<name> → ops, literal "name::op" → add_op_namespace_prefix,
                 `from . import _ops as ops` → `from ._ops import ops`; moved to
                 torch-ext/<python_name>/ when it is the only package there
Kernel sources ([kernel.*].src) are never opened for writing. `plan_migration`
computes every change first (a Migration, shown as a unified diff);
`apply_migration` writes them all to temporary files, then moves each into
place. What cannot be rewritten mechanically is listed in `Migration.left`.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import toml
from pipeline.errors import ValidationError
from pipeline.project.migrate_cpp import Unmigratable, rewrite_binding
from pipeline.project.migrate_py import python_ops, rewrite_module
from pipeline.project.migrate_toml import add_framework, detect_license, rewrite_build_toml, rewrite_flake
from pipeline.project.model import EXT_DIRS, FRAMEWORKS
from pipeline.project.sources import C_LIKE, read_source

DEFAULT_LICENSE = "apache-2.0"


@dataclass(frozen=True)
class FileChange:
    rel: str
    old: str | None  # None: a new file
    new: str | None  # None: the file is removed (moved elsewhere)


@dataclass(frozen=True)
class Migration:
    root: Path
    name: str
    changes: tuple[FileChange, ...]
    notes: tuple[str, ...] = ()
    left: tuple[str, ...] = ()  # what needs a person: not mechanical

    def diff(self) -> str:
        out = []
        for c in self.changes:
            old = (c.old or "").splitlines(keepends=True)
            new = (c.new or "").splitlines(keepends=True)
            out += difflib.unified_diff(old, new, "/dev/null" if c.old is None else f"a/{c.rel}",
                                        "/dev/null" if c.new is None else f"b/{c.rel}")
        return "".join(line if line.endswith("\n") else line + "\n" for line in out)

    def to_json(self) -> dict:
        return {"path": str(self.root), "name": self.name, "files": [c.rel for c in self.changes],
                "notes": list(self.notes), "left": list(self.left), "diff": self.diff()}


@dataclass
class _Plan:
    root: Path
    files: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def change(self, rel: str, old: str | None, new: str | None) -> None:
        if old != new:
            self.files[rel] = (old, new)


def _read_build(root: Path) -> tuple[str, dict]:
    build = root / "build.toml"
    try:
        text = toml.read_text(build)
        data = toml.loads(text)
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError) as exc:
        raise ValidationError(f"{build}: cannot read a build.toml to migrate ({exc})", path=str(build),
                              code="migrate-not-a-project",
                              hint="pass the directory holding the kernel project's build.toml") from None
    if "workspace" in data:
        raise ValidationError(f"{build} is a workspace file, not a kernel project", path=str(build),
                              code="migrate-not-a-project", hint="pass one kernel's directory, e.g. kernels-src/NAME")
    return text, data


def plan_migration(path: Path, license_id: str | None = None) -> Migration:
    """Every change `migrate` would make to the project at `path` (nothing is written)."""
    root = Path(path)
    text, data = _read_build(root)
    plan = _Plan(root)
    license_id = license_id or detect_license(root)
    if license_id is None and "license" not in (data.get("general") or {}):
        license_id = DEFAULT_LICENSE
        plan.notes.append(f"license: none found (LICENSE, pyproject.toml); wrote {DEFAULT_LICENSE!r}, "
                          "change it if your code is under another license")
    try:
        new_text, name, notes = rewrite_build_toml(text, root, license_id or DEFAULT_LICENSE)
        new_text, more = add_framework(new_text, root)
    except ValueError as exc:
        raise ValidationError(f"{root / 'build.toml'}: {exc}", path=str(root / "build.toml"),
                              code="migrate-not-a-project", hint="fix [general] by hand, then migrate") from None
    plan.change("build.toml", text, new_text)
    plan.notes += notes + more
    flake = root / "flake.nix"
    old_flake = read_source(flake) if flake.is_file() else None
    new_flake, notes = rewrite_flake(old_flake)
    plan.change("flake.nix", old_flake, new_flake)
    plan.notes += notes
    data = toml.loads(new_text)
    framework = next((fw for fw in FRAMEWORKS if isinstance(data.get(fw), dict)), "torch")
    backends = tuple(b for b in data["general"].get("backends", []) if isinstance(b, str))
    ops, namespaces = _bindings(plan, data, backends)
    old_python = str(toml.loads(text)["general"].get("name", "")).replace("-", "_")
    _package(plan, EXT_DIRS[framework], name.replace("-", "_"), {old_python, *namespaces}, set(ops))
    changes = tuple(FileChange(rel, old, new) for rel, (old, new) in plan.files.items())
    return Migration(root, name, changes, tuple(plan.notes), tuple(plan.left))


def _bindings(plan: _Plan, data: dict, backends: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Registration rewrites of the [torch].src sources; (C++ op names, old namespaces)."""
    srcs = [s for s in (data.get("torch") or {}).get("src", []) if isinstance(s, str)
            and os.path.splitext(s)[1].lower() in C_LIKE and (plan.root / s).is_file()]
    texts = {s: read_source(plan.root / s) for s in srcs}
    registered = any("REGISTER_EXTENSION" in t for t in texts.values())
    ops: list[str] = []
    namespaces: list[str] = []
    for rel, text in texts.items():
        # the functions PYBIND11_MODULE binds may be declared in another [torch].src file (torch_binding.h)
        context = "\n".join(t for r, t in texts.items() if r != rel)
        try:
            result = rewrite_binding(text, backends, registered, context)
        except Unmigratable as exc:
            plan.left.append(f"{rel}: {exc}; register the ops with TORCH_LIBRARY_EXPAND by hand")
            continue
        plan.change(rel, text, result.text)
        plan.notes += [f"{rel}: {n}" for n in result.notes]
        registered = registered or "REGISTER_EXTENSION" in result.text
        ops += result.op_names
        namespaces += result.namespaces
    return ops, namespaces


def _package(plan: _Plan, ext_dir: str, python_name: str, namespaces: set[str], cpp_ops: set[str]) -> None:
    """The Python package: moved to ext_dir/python_name when it is the only one, op names rewritten."""
    ext = plan.root / ext_dir
    target = ext / python_name
    source = target
    if not (target / "__init__.py").is_file() and ext.is_dir():
        others = [d for d in ext.iterdir() if d.is_dir() and (d / "__init__.py").is_file()]
        if len(others) == 1:
            source = others[0]
            plan.notes.append(f"{ext_dir}/{source.name}/ → {ext_dir}/{python_name}/")
    if not source.is_dir():
        return
    files = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
    namespaces = {n for n in namespaces | {python_name} if n}
    parsed: dict[Path, ast.Module] = {}
    for path in files:
        try:
            parsed[path] = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            plan.left.append(f"{path.relative_to(plan.root).as_posix()}: does not parse, so it was not rewritten")
    py_ops = set().union(*(python_ops(tree, namespaces) for tree in parsed.values()))
    renames = {op: f"{op}_py" for op in py_ops & cpp_ops}
    if renames:
        plan.notes.append("Python ops renamed, the C++ binding now registers their names: "
                          + ", ".join(f"{a} → {b}" for a, b in renames.items()))
    for path in files:
        rel_in = path.relative_to(source)
        old = read_source(path)
        new = old
        if path in parsed:
            new = rewrite_module(path.read_bytes(), len(rel_in.parts) - 1, namespaces, renames).text
        new_rel = (target / rel_in).relative_to(plan.root).as_posix()
        old_rel = path.relative_to(plan.root).as_posix()
        if new_rel != old_rel:
            plan.change(old_rel, old, None)
            plan.change(new_rel, None, new)
        else:
            plan.change(old_rel, old, new)


def apply_migration(migration: Migration) -> None:
    """Write every change: all to temporary files next to their targets first, then each moved into place."""
    staged: list[tuple[str, Path]] = []
    try:
        for change in migration.changes:
            if change.new is None:
                continue
            target = migration.root / change.rel
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(change.new)
            if target.exists():
                shutil.copymode(target, tmp)
            staged.append((tmp, target))
    except OSError as exc:
        for tmp, _target in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise ValidationError(f"cannot write the migrated files: {exc}", path=str(migration.root),
                              code="migrate-write-failed", hint="check the project's permissions; nothing was changed")
    for tmp, target in staged:
        os.replace(tmp, target)
    for change in migration.changes:
        if change.new is None:
            with contextlib.suppress(FileNotFoundError):
                (migration.root / change.rel).unlink()
    for change in migration.changes:  # folders a moved package left empty
        if change.new is None:
            parent = (migration.root / change.rel).parent
            while parent != migration.root and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent


def migrated_copy(migration: Migration, into: Path) -> Path:
    """The project as migrate would leave it, copied under `into` (for --dry-run's validation)."""
    copy = into / migration.root.resolve().name
    shutil.copytree(migration.root, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", "build", "result"))
    apply_migration(Migration(copy, migration.name, migration.changes))
    return copy
