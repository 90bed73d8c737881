"""Validate a kernel-builder project: `validate PATH` → KernelProject or problems.

kernels' own parser (`kernels._rust.Build.open`) is the judge of build.toml's
schema; this module turns its one-line refusals into located problems and then
checks what it leaves alone: the files the build will need (src, headers, the
Python package), how ops are registered, what the Python package imports,
CUDA capabilities, committed build output and flake.nix.

Every problem carries a code from pipeline/data/rules.toml (`load_rules()`);
the hint printed with it comes from there too, so the table is the one place
an agent learns how to fix each defect.

    model.py    KernelProject, KernelSpec, TorchExt, ValidationReport
    rules.py    the rule table, the problem sink, kernels' parser loaded fast
    schema.py   build.toml through Build.open; its refusals located by line
    config.py   backends, versions, repo-id, python-depends, CUDA capabilities
    sources.py  src lists, included headers, TORCH_LIBRARY_EXPAND registration
    package.py  torch-ext/<python_name>/: layout, imports, add_op_namespace_prefix
    layout.py   committed build output and generated files, flake.nix
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline import toml
from pipeline.errors import Problem, ValidationError
from pipeline.project.config import (
    check_backends,
    check_buildable,
    check_capabilities,
    check_cuda_flags,
    check_hub,
    check_local_build,
    check_python_depends,
    check_rocm_archs,
    check_versions,
    python_dep_table,
)
from pipeline.project.layout import check_committed, check_flake, listed_sources
from pipeline.project.model import (
    BUILD_TOML,
    EXT_DIRS,
    FRAMEWORKS,
    KernelProject,
    KernelSpec,
    TorchExt,
    ValidationReport,
)
from pipeline.project.package import check_package
from pipeline.project.rules import Rule, Sink, load_rules
from pipeline.project.schema import check_schema, project_from
from pipeline.project.sources import C_LIKE, check_headers, check_registration, check_src, read_source, Tree
from pipeline.workspace_file import load_workspace

__all__ = [
    "KernelProject", "KernelSpec", "TorchExt", "ValidationReport", "Rule",
    "load_rules", "load_project", "validate", "validate_workspace",
]


def _shown(path: Path) -> str:
    return str(path)


def validate(path: Path) -> ValidationReport:
    """Check one kernel project; never raises for a bad project. Given the
    workspace root, checks every kernel it lists (a broken workspace file
    raises WorkspaceError)."""
    path = Path(path)
    shown = _shown(path)
    sink = Sink(shown)
    if not path.exists() and not path.is_symlink():
        sink.add("path-missing", f"{shown} does not exist")
        return ValidationReport(None, tuple(sink.problems), shown)
    if path.is_file() and path.name == BUILD_TOML:
        path = path.parent
        shown = _shown(path)
        sink = Sink(shown)
    if not path.is_dir():
        sink.add("path-not-directory", f"{shown} is a file, not a project directory")
        return ValidationReport(None, tuple(sink.problems), shown)
    build_toml = path / BUILD_TOML
    if not build_toml.is_file():
        sink.add("build-toml-missing", f"no build.toml in {shown}", BUILD_TOML)
        return ValidationReport(None, tuple(sink.problems), shown)
    try:
        text = toml.read_text(build_toml)
    except UnicodeDecodeError:
        sink.add("build-toml-unreadable", "build.toml is not UTF-8 text (binary data?)", BUILD_TOML)
        return ValidationReport(None, tuple(sink.problems), shown)
    except OSError as exc:
        sink.add("build-toml-unreadable", f"cannot read build.toml: {exc.strerror or exc}", BUILD_TOML)
        return ValidationReport(None, tuple(sink.problems), shown)
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        sink.add("toml-syntax", f"malformed TOML: {exc}", BUILD_TOML, toml.error_line(exc))
        return ValidationReport(None, tuple(sink.problems), shown)
    if "workspace" in data:
        return _validate_workspace(path, shown)
    return _validate_project(path, shown, text, data)


def _validate_project(root: Path, shown: str, text: str, data: dict) -> ValidationReport:
    sink = Sink(shown)
    framework = next((fw for fw in FRAMEWORKS if isinstance(data.get(fw), dict)), "torch")
    check_flake(sink, root)
    general = data.get("general") if isinstance(data.get("general"), dict) else {}
    name = general.get("name") if isinstance(general.get("name"), str) else None
    check_committed(sink, root, EXT_DIRS[framework], listed_sources(data), name)
    accepted, edition = check_schema(sink, root, text, data)
    # A refused build.toml still describes most of the project: check the rest in the same run.
    project = project_from(root, data, edition)
    if project is not None:
        _check_project(sink, project, text, data)
    return ValidationReport(project if accepted else None, _ordered(sink.problems), shown)


def _check_project(sink: Sink, project: KernelProject, text: str, data: dict) -> None:
    backends = (data.get("general") or {}).get("backends") if isinstance(data.get("general"), dict) else None
    if isinstance(backends, list) and len(backends) == len(project.backends):
        check_backends(sink, project, text)  # with a malformed list every kernel would look undeclared
    check_versions(sink, project, text)
    check_buildable(sink, project, text)
    check_hub(sink, project, text)
    allowed = check_python_depends(sink, project, text, python_dep_table())
    check_capabilities(sink, project, text)
    check_rocm_archs(sink, project, text)
    check_cuda_flags(sink, project, text)
    check_local_build(sink, project, text)
    tree = Tree(project.root)
    index = check_src(sink, project, text, tree)
    sources = {rel: read_source(project.root / rel) for rel, _i, _o in index.files
               if os.path.splitext(rel)[1].lower() in C_LIKE}
    check_headers(sink, project, index, sources, tree)
    check_registration(sink, project, index, sources, text)
    check_package(sink, project, allowed)


def _ordered(problems: list[Problem]) -> tuple[Problem, ...]:
    return tuple(sorted(problems, key=lambda p: (not p.is_error, p.path, p.line or 0, p.code)))


def _validate_workspace(root: Path, shown: str) -> ValidationReport:
    problems: list[Problem] = []
    for report in validate_workspace(root):
        problems.extend(report.problems)
    return ValidationReport(None, tuple(problems), shown)


def validate_workspace(root: Path) -> tuple[ValidationReport, ...]:
    """One report per kernel the workspace file lists (raises WorkspaceError for a bad workspace file)."""
    ws = load_workspace(Path(root))
    reports = []
    for kernel_path in ws.kernel_paths:
        try:
            shown = os.path.relpath(kernel_path)
        except ValueError:
            shown = str(kernel_path)
        reports.append(validate(Path(shown)))
    return tuple(reports)


def load_project(path: Path) -> KernelProject:
    """The parsed project, or ValidationError carrying every problem when any is an error."""
    report = validate(Path(path))
    if report.project is None or not report.ok:
        errors = [p for p in report.problems if p.is_error]
        first = errors[0] if errors else None
        raise ValidationError(
            f"{len(errors)} error(s) in kernel project {report.path}" if errors else
            f"{report.path} is not a kernel project",
            path=first.path if first else report.path, line=first.line if first else None,
            code=first.code if first else "validate",
            hint=f"run `python -m pipeline validate {report.path}` for the full list",
            problems=report.problems)
    return report.project
