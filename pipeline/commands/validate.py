"""`validate PATH`: check a kernel project (or every kernel of the workspace)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.console import Output
from pipeline.project import ValidationReport, validate, validate_workspace
from pipeline.workspace_file import is_workspace_file

HELP = "check a kernel project's layout and build.toml"
DESCRIPTION = """\
Check a kernel-builder project: build.toml through kernels' own parser, then the
files the build needs (src, listed headers, torch-ext/<python_name>/__init__.py),
op registration (TORCH_LIBRARY_EXPAND, add_op_namespace_prefix), imports of the
Python package, CUDA capabilities, committed build output and flake.nix.

PATH is a project directory, its build.toml, or the workspace root (every kernel
listed in [workspace].kernels). Problems print as `path:line: code: message`
with a hint; exit 1 when any is an error, 0 with warnings only.

examples:
  python -m pipeline validate kernels-src/rmsnorm
  python -m pipeline validate . --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", type=Path,
                        help="kernel project directory or workspace root (default: .)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _summary(report: ValidationReport) -> str:
    if report.project is not None:
        what = f"{report.project.name} (edition {report.project.edition}, {report.project.framework}, " \
               f"backends: {', '.join(report.project.backends)})"
    else:
        what = report.path
    if report.ok:
        tail = f", {report.warnings} warning(s)" if report.warnings else ""
        return f"{report.path}: ok: {what}{tail}"
    return f"{report.path}: {report.errors} error(s), {report.warnings} warning(s)"


def run(args: argparse.Namespace, output: Output) -> int:
    kernels: tuple[ValidationReport, ...] = ()
    if is_workspace_file(args.path):
        kernels = validate_workspace(args.path)  # a bad workspace file raises WorkspaceError: cli prints it
        report = ValidationReport(None, tuple(p for r in kernels for p in r.problems), str(args.path))
    else:
        report = validate(args.path)
    if output.json_mode:
        document = report.to_json()
        if kernels:
            document["kernels"] = [r.to_json() | {"name": r.project.name if r.project else None} for r in kernels]
        output.emit_json(document)
        return 0 if report.ok else 1
    for problem in report.problems:
        output.problem(problem.format())
    if kernels:
        for r in kernels:
            output.result(_summary(r))
        bad = sum(not r.ok for r in kernels)
        output.result(f"workspace: {len(kernels)} kernel(s), {bad} with errors, "
                      f"{report.errors} error(s), {report.warnings} warning(s)")
    else:
        output.result(_summary(report))
    return 0 if report.ok else 1
