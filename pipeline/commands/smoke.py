"""`pipeline smoke BUILD_DIR`: correctness of the host's variant on this device."""

from __future__ import annotations

from pathlib import Path

from pipeline.bundle import check_bundle, find_build_dir
from pipeline.errors import SmokeError
from pipeline.smoke import DEFAULT_SEEDS, TOLERANCE, run_smoke
from pipeline.workspace import resolve, resolve_for_build

HELP = "correctness of the host's variant against a float64 reference"
DESCRIPTION = f"""\
Load the host's variant from BUILD_DIR with kernels.get_local_kernel and run the
kernel project's cases (tests/smoke_cases.py; contract in pipeline/smoke.py):
fresh random inputs per seed, outputs poisoned with NaN and guarded, relative
error against float64 within {', '.join(f'{k} {v:g}' for k, v in TOLERANCE.items() if k != 'float64')},
torch.library.opcheck and torch.compile(fullgraph=True) on the marked cases.

example:
  python -m pipeline smoke kernels-src/rmsnorm/build
  python -m pipeline smoke build/ --kernel kernels-src/rmsnorm --json
"""


def add_arguments(parser) -> None:
    parser.add_argument("build_dir", metavar="BUILD_DIR", type=Path,
                        help="a build tree holding variant directories (or its parent)")
    parser.add_argument("--kernel", type=Path, default=None, metavar="PATH",
                        help="the kernel project whose cases to run (default: the workspace kernel named in the build)")
    parser.add_argument("--seeds", type=int, default=len(DEFAULT_SEEDS), metavar="N",
                        help=f"random trials per case (default {len(DEFAULT_SEEDS)})")
    parser.add_argument("--no-op-checks", action="store_true", help="skip opcheck and torch.compile checks")
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")


def run(args, output) -> int:
    if args.seeds < 1:
        raise SmokeError(f"--seeds {args.seeds}: at least one seed is needed", code="usage",
                         hint="e.g. --seeds 3 (the default)")
    bundle = check_bundle(find_build_dir(args.build_dir)).bundle
    kernel = resolve(args.kernel) if args.kernel else resolve_for_build(bundle.root, bundle.name)
    with output.reporter() as report:
        result = run_smoke(bundle, kernel, seeds=tuple(range(args.seeds)), report=report,
                           op_checks=not args.no_op_checks)
    if output.json_mode:
        output.emit_json(result.to_json())
    else:
        _print(result, output)
    return 0 if result.passed else SmokeError.exit_code


def _print(report, output) -> None:
    output.result(f"{report.kernel} {report.variant} on {report.device} ({report.project})")
    for r in report.failures:
        seed = "" if r.seed is None else f" seed {r.seed}"
        output.result(f"FAIL {r.check:8s} {r.name}{seed}: {r.message}")
    values = [r for r in report.results if r.check == "values" and r.error is not None and r.bound]
    if values:
        worst = max(values, key=lambda r: r.error / r.bound)
        output.result(f"worst error/bound: {worst.error:.3g} / {worst.bound:g} ({worst.name})")
    n = len(report.results)
    if report.left_out:
        output.info(f"{len(report.left_out)} case(s) are declared for other device types and were not run here")
    output.result(f"{'PASS' if report.passed else 'FAIL'}: {n - len(report.failures)}/{n} checks passed")
