"""`migrate PATH`: rewrite a legacy or agent-written project to edition 5, print the diff."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from pipeline.console import Output
from pipeline.project import ValidationReport, validate
from pipeline.project.migrate import Migration, apply_migration, migrated_copy, plan_migration

HELP = "rewrite a legacy or agent-written kernel project to edition 5"
DESCRIPTION = """\
Rewrite a kernel project to kernel-builder's edition 5, printing a unified diff:
the name made valid (my_kernel -> my-kernel); version, license and edition
added to [general]; flake.nix switched to github:huggingface/kernels and
genKernelFlakeOutputs (written when missing); PYBIND11_MODULE and
TORCH_LIBRARY(name, m) registrations rewritten to TORCH_LIBRARY_EXPAND(
TORCH_EXTENSION_NAME, ops) + REGISTER_EXTENSION; in the Python package,
torch.ops.<name> -> ops and literal "name::op" -> add_op_namespace_prefix("op").
Kernel sources are never changed. Files are written to temporary files and
moved into place. Then the result is validated: exit 0 when it validates,
1 when problems are left (they are printed, with what migrate could not do).

examples:
  python -m pipeline migrate path/to/agent-project --dry-run
  python -m pipeline migrate path/to/agent-project --license mit
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="the kernel project directory (holding build.toml)")
    parser.add_argument("--dry-run", action="store_true", help="print the diff and the verdict; write nothing")
    parser.add_argument("--license", default=None, metavar="ID",
                        help="Hub license identifier for [general].license when it is missing "
                             "(default: from LICENSE or pyproject.toml, else apache-2.0)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _verdict(migration: Migration, dry_run: bool) -> tuple[ValidationReport, str, str]:
    """The report on the migrated project, and (shown path, real path) to print problems at the real path."""
    if not dry_run:
        return validate(migration.root), str(migration.root), str(migration.root)
    with tempfile.TemporaryDirectory(prefix="pipeline-migrate-") as tmp:
        copy = migrated_copy(migration, Path(tmp))
        return validate(copy), str(copy), str(migration.root)


def run(args: argparse.Namespace, output: Output) -> int:
    migration = plan_migration(args.path, args.license)
    if migration.changes and not args.dry_run:
        apply_migration(migration)
    report, shown, real = _verdict(migration, args.dry_run)
    ok = report.ok and not migration.left
    if output.json_mode:
        output.emit_json(migration.to_json() | {"written": bool(migration.changes) and not args.dry_run,
                                                "result": report.to_json(), "ok": ok})
        return 0 if ok else 1
    if migration.changes:
        output.out.file.write(migration.diff())
    for note in migration.notes:
        output.info(f"migrate: {note}")
    for item in migration.left:
        output.problem(f"migrate: not rewritten: {item}")
    for problem in report.problems:
        output.problem(problem.format().replace(shown, real, 1))
    what = (f"{'would change' if args.dry_run else 'changed'} {len(migration.changes)} file(s)"
            if migration.changes else "nothing to change")
    verdict = "validates" if report.ok else f"{report.errors} error(s) left"
    output.result(f"{args.path}: {what}; the result {verdict}"
                  + (f", {report.warnings} warning(s)" if report.warnings else ""))
    return 0 if ok else 1
