"""`python -m pipeline check BUILD_DIR`: is a build tree fit to publish?"""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import CheckError

HELP = "check a build/ tree: metadata, digests, ABI, coverage"
DESCRIPTION = """\
Check a build tree (build/, or one kernel of a Nix result/) before publishing:

  - every variant's metadata.json parses with kernels' own Metadata,
  - its digest validates against the files (kernels' Digest),
  - the variant name parses (kernels.variants),
  - every .so passes kernel-abi-check (manylinux_2_28, abi3 Python 3.9),
  - no stray files (__pycache__, *.o, build logs),
  - all variants agree on the kernel name and version,
  - which cells of the build matrix are covered and which are missing.

Exit code 6 when any error is found.

example:
  python -m pipeline check kernels-src/rmsnorm/build
"""


def add_arguments(parser) -> None:
    parser.add_argument("build_dir", metavar="BUILD_DIR", type=Path, help="the build tree (or its kernel project)")
    parser.add_argument("--project", type=Path, default=None,
                        help="kernel project whose build matrix to compare with (default: found from BUILD_DIR)")
    parser.add_argument("--ci", action="store_true", help="compare with the reduced pull-request matrix")
    parser.add_argument("--no-matrix", action="store_true", help="skip the matrix coverage report")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def run(args, output) -> int:
    from pipeline.bundle import check_bundle, expected_variants, find_build_dir, project_for_build_dir

    build_dir = find_build_dir(args.build_dir)
    expected = None
    coverage_note = ""
    if not args.no_matrix:
        project = args.project or project_for_build_dir(build_dir)
        if project is None:
            coverage_note = "coverage: no kernel project found for this tree (pass --project)"
        else:
            expected = expected_variants(project, ci=args.ci)
    report = check_bundle(build_dir, expected=expected)
    if output.json_mode:
        output.emit_json(report.to_json())
        return 0 if report.ok else CheckError.exit_code
    print_report(report, output, coverage_note=coverage_note)
    return 0 if report.ok else CheckError.exit_code


def print_report(report, output, *, coverage_note: str = "") -> None:
    bundle = report.bundle
    version = bundle.version if bundle.version is not None else "?"
    output.result(f"{bundle.name or '?'} v{version}: {len(bundle.variants)} variant(s) in {bundle.root}")
    rows = []
    for v in bundle.variants:
        errors = [p for p in report.errors if v.name in Path(p.path).parts]
        status = "ok" if not errors else f"{len(errors)} error(s)"
        rows.append((v.name, v.framework or "?", v.target or "?", v.platform or "any",
                     f"{len(v.files)} files", status))
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(6)]
    for row in rows:
        output.result("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    if report.expected is not None:
        output.result(f"coverage: {len(report.covered)}/{len(report.expected)} matrix cells built")
        for name in report.covered:
            output.result(f"  built:   {name}")
        for name in report.missing:
            output.result(f"  missing: {name}")
        for name in report.extra:
            output.result(f"  not in the matrix: {name}")
    elif coverage_note:
        output.result(coverage_note)
    for problem in report.problems:
        output.problem(problem.format())
    if report.ok:
        warnings = len(report.problems)
        output.result(f"check: ok ({len(bundle.variants)} variant(s)"
                      + (f", {warnings} warning(s))" if warnings else ")"))
    else:
        output.problem(f"check: {len(report.errors)} error(s) in {bundle.root}")
