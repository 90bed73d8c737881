"""`pipeline smoke BUILD_DIR`: correctness of the host's variant on this device."""

from __future__ import annotations

from pathlib import Path

from pipeline.bundle import check_bundle, find_build_dir
from pipeline.contracts import FAMILIES, parse_bindings
from pipeline.errors import SmokeError
from pipeline.smoke import DEFAULT_TIMEOUT_S, DEFAULT_TRIALS, TOLERANCE, run_smoke, untested_hint
from pipeline.workspace import resolve, resolve_for_build

HELP = "correctness of the host's variant against a float64 reference"
DESCRIPTION = f"""\
Load the host's variant from BUILD_DIR with kernels.get_local_kernel and run
every op's contract (pipeline/contracts/: the pipeline's adversarial inputs,
float64 reference and tolerances), then the project's own cases
(tests/smoke_cases.py; contract in pipeline/smoke/__init__.py), or without a
case file the project's kernels_ci pytest tests. Outputs are poisoned at random
and guarded; inputs must stay unchanged; each case runs twice with new data at
the same addresses and repeats must be bit-identical. Project cases' bounds:
{', '.join(f'{k} {v:g}' for k, v in TOLERANCE.items() if k != 'float64')} (relative norm error).

An op's contract: --contract OP=FAMILY, else [workspace.contracts.<kernel>] in
the workspace build.toml, else inferred from the op's name and schema. A binding
may add KEY=VALUE options: declines=empty+huge (input categories not run, said
on the card), unchecked=rstd, args=..., roles=... (pipeline/contracts/).
Families: {', '.join(FAMILIES)}.

The kernel runs in a worker process: a case that crashes it, hangs past
--timeout (per case and seed) or leaves a sticky CUDA error is a failed case
(named, with the signal, timeout or CUDA error) and a fresh worker runs the
rest. An op with no kernel for this device is "not available", not failed.
The project's own tests run when it has no case file: ops only they call are
"tested by the project's own tests only".

The seed changes every run and is printed; --seed S replays a run, and
--only NAME (repeatable, fnmatch patterns) runs only the cases named.

example:
  python -m pipeline smoke kernels-src/rmsnorm/build
  python -m pipeline smoke build/ --kernel kernels-src/rmsnorm --json
  python -m pipeline smoke relu/build --kernel relu --contract relu=relu --seed 1234
"""


def add_arguments(parser) -> None:
    parser.add_argument("build_dir", metavar="BUILD_DIR", type=Path,
                        help="a build tree holding variant directories (or its parent)")
    parser.add_argument("--kernel", type=Path, default=None, metavar="PATH",
                        help="the kernel project whose cases to run (default: the workspace kernel named in the build)")
    parser.add_argument("--contract", action="append", default=[], metavar="OP=FAMILY[:KEY=VALUE,...]",
                        help="check op OP against contract FAMILY (repeatable; overrides the workspace file)")
    parser.add_argument("--seeds", type=int, default=DEFAULT_TRIALS, metavar="N",
                        help=f"random trials per case (default {DEFAULT_TRIALS})")
    parser.add_argument("--seed", type=int, default=None, metavar="S",
                        help="the run's seed (default: a new one each run, printed): replays a run")
    parser.add_argument("--only", action="append", default=[], metavar="CASE",
                        help="run only the cases whose names match (fnmatch pattern; repeatable)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                        help=f"seconds one seed of one case may take before it counts as hung "
                             f"(default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--no-op-checks", action="store_true", help="skip opcheck and torch.compile checks")
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")


def run(args, output) -> int:
    if args.seeds < 1:
        raise SmokeError(f"--seeds {args.seeds}: at least one seed is needed", code="usage",
                         hint="e.g. --seeds 3 (the default)")
    if not args.timeout > 0:
        raise SmokeError(f"--timeout {args.timeout:g}: must be more than 0 seconds", code="usage",
                         hint=f"e.g. --timeout {DEFAULT_TIMEOUT_S:g} (the default)")
    contracts = parse_bindings(args.contract)
    bundle = check_bundle(find_build_dir(args.build_dir)).bundle
    kernel = resolve(args.kernel) if args.kernel else resolve_for_build(bundle.root, bundle.name)
    with output.reporter() as report:
        result = run_smoke(bundle, kernel, seed=args.seed, trials=args.seeds, contracts=contracts, report=report,
                           op_checks=not args.no_op_checks, timeout_s=args.timeout, only=tuple(args.only))
    nothing = not result.results and result.project_tests is None
    if output.json_mode:
        output.emit_json(result.to_json())
        return 0 if result.passed else SmokeError.exit_code
    _print(result, output)
    if nothing:
        raise SmokeError(f"nothing tested {', '.join(result.untested) or 'this build'}: no op has a contract or a "
                         "case", code="smoke-untested", hint=untested_hint(result.untested))
    return 0 if result.passed else SmokeError.exit_code


def _print_coverage(report, output) -> None:
    for c in report.coverage:
        if not c.available:
            output.result(f"  {c.op}: not available on {report.device_type or report.device} (this variant ships "
                          "no kernel of it for the device)")
            continue
        if c.contract:
            what = f"contract {c.contract} ({c.how}): {c.contract_cases} case(s)"
        else:
            what = "no contract"
        what += f", {c.project_cases} project case(s)" if c.project_cases else ""
        if c.tier == "project-tests":
            what += f"; tested by the project's own tests only ({c.project_tests} passing test(s) call it)"
        elif c.tested:
            what += f"; dtypes {', '.join(c.dtypes) or '-'}; {len(c.shapes)} shape(s)"
        if c.categories_declined:
            what += f"; declines {', '.join(c.categories_declined)} (binding)"
        if c.categories_limited:
            what += f"; no {', '.join(c.categories_limited)} cases (the form's limits)"
        if c.unchecked:
            what += f"; unchecked outputs: {', '.join(c.unchecked)}"
        output.result(f"  {c.op}: {what}" + ("" if c.tested else "  UNTESTED"))


def _print_categories(report, output) -> None:
    groups = report.failures_by_category()
    if not groups:
        return
    parts = [f"{category}: " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
             for category, kinds in sorted(groups.items())]
    output.result("failures by category: " + "; ".join(parts))


def _print(report, output) -> None:
    output.result(f"{report.kernel} {report.variant} on {report.device} ({report.project}); "
                  f"seed {report.seed} (replay: --seed {report.seed})")
    _print_coverage(report, output)
    for r in report.failures:
        seed = "" if r.seed is None else f" seed {r.seed}"
        what = f" [{r.category}, {r.kind}]" if r.kind else ""
        output.result(f"FAIL {r.check:8s} {r.name}{seed}{what}: {r.message}")
    _print_categories(report, output)
    for w in report.warnings:
        output.problem(w.format())
    tests = report.project_tests
    if tests is not None:
        absent = (f", {tests.unavailable} not run here (an op not available on {report.device_type or report.device}, "
                  "no GPU, or a package the tests need)" if tests.unavailable else "")
        if tests.missing:
            absent += f"; install the tests' dependencies: pip install {' '.join(tests.missing)}"
        output.result(f"project tests ({tests.command}): {tests.ran} ran, {tests.failed} failed, "
                      f"{tests.skipped} skipped{absent}")
        if tests.output and not tests.passed:
            output.result(tests.output)
    values = [r for r in report.results if r.check == "values" and r.error is not None and r.bound]
    if values:
        worst = max(values, key=lambda r: r.error / r.bound)
        output.result(f"worst error/bound: {worst.error:.3g} / {worst.bound:g} ({worst.name})")
    n = len(report.results)
    if report.workers > 1:
        output.info(f"{report.workers - 1} fresh worker(s) were started after crashes, timeouts or CUDA errors")
    if report.nothing_available:
        output.result(f"FAIL: {report.variant} ships no kernel of any op for {report.device_type or report.device}")
    if report.left_out:
        output.info(f"{len(report.left_out)} case(s) are declared for other device types and were not run here")
    tail = ""
    if tests is not None and not tests.passed:
        tail = f"; the project's own tests: {tests.failed} failed"
    output.result(f"{'PASS' if report.passed else 'FAIL'}: {n - len(report.failures)}/{n} checks passed{tail}")
