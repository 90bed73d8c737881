"""`python -m pipeline check BUILD_DIR`: is a build tree fit to publish?"""

from __future__ import annotations

from pathlib import Path

from pipeline.bundle import check_bundle, find_build_dir
from pipeline.commands._render import print_check
from pipeline.errors import CheckError
from pipeline.workspace import resolve, resolve_for_build

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
    build_dir = find_build_dir(args.build_dir)
    kernel = None
    coverage_note = ""
    if not args.no_matrix:
        kernel = resolve(args.project) if args.project else resolve_for_build(build_dir, None)
        if kernel is None:
            coverage_note = "coverage: no kernel project found for this tree (pass --project)"
    report = check_bundle(build_dir, expected=kernel.expected(ci=args.ci) if kernel is not None else None)
    if output.json_mode:
        output.emit_json(report.to_json())
    else:
        print_check(report, output, coverage_note=coverage_note)
    return 0 if report.ok else CheckError.exit_code
