"""The smoke stage: load the host's variant, plan each op's contract, run every
case (the contract's and the project's), and say what was verified."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import Problem, SmokeError
from pipeline.events import Event, Reporter, quiet
from pipeline.smoke.cases import Case, for_device, load_cases, project_case
from pipeline.smoke.coverage import coverage_of, plan_warnings
from pipeline.smoke.delegation import profile_call
from pipeline.smoke.harness import CaseStats, RunState, bookkeeping, generators, run_seed, schedule_for
from pipeline.smoke.opchecks import run_compile, run_opcheck
from pipeline.smoke.plan import Binding, OpPlan, bench_shapes, contract_cases, plan_ops
from pipeline.smoke.project_tests import run_project_tests
from pipeline.smoke.report import CaseResult, Delegation, SmokeReport
from pipeline.smoke.weak import weak_warnings

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.bundle import Bundle
    from pipeline.workspace import Kernel

DEFAULT_TRIALS = 3
DEFAULT_SEEDS = tuple(range(DEFAULT_TRIALS))  # run_cases' default: fixed, for callers that want them fixed


def new_seed() -> int:
    """A fresh seed per run, so runs differ; the report records it and `--seed` replays it."""
    return random.SystemRandom().randrange(1, 2**31)


def seeds_from(seed: int, trials: int) -> tuple[int, ...]:
    return tuple(seed + i for i in range(trials))


@dataclass(frozen=True)
class LoadedVariant:
    module: Any
    kernel_name: str
    kernel_id: str
    variant: str
    backend: str
    path: Path


def load_variant(build_dir: Path) -> LoadedVariant:
    """The host's variant of `build_dir`, imported with kernels.get_local_kernel."""
    try:
        import kernels
        from kernels.resolver import resolve_local_kernel
    except ImportError as exc:  # pragma: no cover - kernels is a dependency
        raise SmokeError(f"the kernels package is needed to load a build: {exc}", code="kernels-missing",
                         hint="pip install kernels==0.17.2") from None
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        raise SmokeError("no such build directory", path=str(build_dir), code="build-dir-missing",
                         hint="run `python -m pipeline build PROJECT` first")
    try:
        local = resolve_local_kernel(build_dir, backend=None)
    except (FileNotFoundError, ValueError) as exc:
        raise SmokeError(f"no variant in this build tree can run here: {exc}", path=str(build_dir), code="no-host-variant",
                         hint="build the host's variant: `python -m pipeline build PROJECT`") from None
    try:
        module = kernels.get_local_kernel(build_dir)
    except Exception as exc:
        raise SmokeError(f"kernels.get_local_kernel could not import the variant: {type(exc).__name__}: {exc}",
                         path=str(local.variant_path), code="variant-import-failed") from None
    meta = local.metadata
    return LoadedVariant(module=module, kernel_name=str(meta.name), kernel_id=meta.id,
                         variant=local.variant_path.name, backend=str(meta.backend.backend_type),
                         path=Path(local.variant_path))


def _ops_of(module):
    ops = getattr(module, "ops", None)
    if ops is None:
        raise SmokeError("the kernel module has no `ops` (expected `from ._ops import ops` in __init__.py)",
                         code="ops-missing")
    return ops


@dataclass
class Execution:
    plans: list[OpPlan]
    results: list[CaseResult] = field(default_factory=list)
    stats: list[CaseStats] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    delegation: list[Delegation] = field(default_factory=list)


def _first_seed_checks(op, case: Case, device, seed: int) -> list[CaseResult]:
    out = []
    gen, _ = generators(seed + 1, case.name)
    if "opcheck" in case.checks:
        try:
            msg = run_opcheck(op, case.make(device, gen))
            out.append(CaseResult(case.name, case.op, seed, "opcheck", not msg, message=msg))
        except Exception as exc:  # opcheck's own failure is the finding
            out.append(CaseResult(case.name, case.op, seed, "opcheck", False, message=f"{type(exc).__name__}: {exc}"[:500]))
    if "compile" in case.checks:
        try:
            err, bound, msg = run_compile(op, case, case.make(device, gen), device)
            out.append(CaseResult(case.name, case.op, seed, "compile", not msg, err, bound, msg))
        except Exception as exc:  # a graph break or a failed compile is the finding
            out.append(CaseResult(case.name, case.op, seed, "compile", False, message=f"{type(exc).__name__}: {exc}"[:500]))
    return out


def _run_one(ops, case: Case, device, seeds: tuple[int, ...], state: RunState, op_checks: bool,
             ex: Execution) -> None:
    op = getattr(ops, case.op, None)
    if op is None:
        ex.results.append(CaseResult(case.name, case.op, None, "values", False,
                                     message=f"the kernel has no op {case.op!r}", contract=case.contract))
        return
    schedule = schedule_for(case, seeds[0])
    for i, seed in enumerate(seeds):
        result, stats = run_seed(op, case, device, seed, state, schedule)
        ex.results.append(result)
        if i == 0 and stats is not None:
            ex.stats.append(stats)
        if i == 0 and op_checks and case.checks:
            ex.results.extend(_first_seed_checks(op, case, device, seed))
    ex.cases.append(case)


def _profile(ops, ex: Execution, device, seed: int) -> None:
    """One call per op under the profiler: a contract case with contiguous inputs when there is one."""
    namespace = getattr(ops, "name", None)
    if not namespace:
        return
    chosen: dict[str, Case] = {}
    for case in ex.cases:
        current = chosen.get(case.op)
        if current is None or (_plain(case) and not _plain(current)):
            chosen[case.op] = case
    for op_name, case in chosen.items():
        op = getattr(ops, op_name)
        try:
            call = case.make(device, generators(seed, case.name)[0])
        except Exception:  # the values check already reported it
            continue
        ex.delegation.append(profile_call(op_name, f"{namespace}::{op_name}", lambda: op(*call.args), device))


def _plain(case: Case) -> bool:
    """A contract case with ordinary storage and a modest size: what profiling one call should see."""
    return (case.contract is not None and not case.refusable and case.shape is not None
            and 0 < math.prod(case.shape) <= 1 << 20)


def execute(module, device, project: list[Case], bindings: dict, seeds: tuple[int, ...], *,
            report: Reporter = quiet, op_checks: bool = True, profile: bool = True,
            bench: dict | None = None) -> Execution:
    """Plan the ops, then run the project's cases and every contract case on `device`
    (with the benchmark's shapes, `bench`: op -> [(shape, dtype)])."""
    ops = _ops_of(module)
    ex = Execution(plans=plan_ops(ops, bindings))
    cases = list(project)
    for plan in ex.plans:
        if plan.failed:
            ex.results.append(CaseResult(f"{plan.op}:contract", plan.op, None, "contract", False,
                                         message=plan.note, contract=plan.family))
        cases.extend(contract_cases(plan, device.type, (bench or {}).get(plan.op, ())))
    state = RunState()
    with bookkeeping(state):
        for n, case in enumerate(cases):
            report(Event("progress", case.name, n, len(cases), stage="smoke"))
            _run_one(ops, case, device, seeds, state, op_checks, ex)
    ex.results[:] = dtype_refusals_declined(ex.results, cases)
    if profile:
        _profile(ops, ex, device, seeds[0])
    return ex


def dtype_refusals_declined(results: list[CaseResult], cases: list[Case]) -> list[CaseResult]:
    """A kernel may support fewer dtypes than a contract samples: when an op refuses (raises on)
    every contract case of one dtype, and answers correctly in another dtype, those cases are
    declined (reported), not failed. An op that refuses everything still fails."""
    dtype_of = {c.name: c.dtype for c in cases if c.contract is not None and c.dtype}
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(results):
        if r.check == "values" and r.name in dtype_of:
            groups.setdefault((r.op, dtype_of[r.name]), []).append(i)
    out = list(results)
    for (op, dtype), idx in groups.items():
        idx = [i for i in idx if not results[i].declined]  # e.g. an empty batch it declined already
        if not idx or not all(results[i].refused for i in idx):
            continue
        answered = any(results[i].passed and not results[i].declined and not results[i].refused
                       for (o, d), others in groups.items() if o == op and d != dtype for i in others)
        if answered:
            for i in idx:
                out[i] = replace(results[i], passed=True, declined=True,
                                 message=f"declined: {dtype} refused: {results[i].message}")
    return out


def _bindings(cli: tuple[tuple[str, Binding], ...], workspace: tuple[tuple[str, Binding], ...]) -> dict:
    """op -> Binding: --contract (parse_bindings, how=CLI) wins over the workspace file (how=WORKSPACE)."""
    found = dict(workspace)
    found.update(dict(cli))
    return found


def run_cases(module, cases: list[dict], device, *, seeds=DEFAULT_SEEDS, report: Reporter = quiet,
              op_checks: bool = True) -> list[CaseResult]:
    """Run case-file cases (dicts) meant for `device` against a loaded kernel module; no contracts."""
    kept, _ = for_device([project_case(c) for c in cases], device.type)
    ops = _ops_of(module)
    ex = Execution(plans=[])
    state = RunState()
    with bookkeeping(state):
        for n, case in enumerate(kept):
            report(Event("progress", case.name, n, len(kept), stage="smoke"))
            _run_one(ops, case, device, tuple(seeds), state, op_checks, ex)
    return ex.results


def check_module(module, device, *, seeds: tuple[int, ...], cases_file: Path | None = None,
                 contracts: tuple[tuple[str, str], ...] = (), report: Reporter = quiet,
                 op_checks: bool = False) -> list[CaseResult]:
    """A loaded kernel module's ops against their contracts (bound in `contracts`, else
    inferred) plus the project's cases (`cases_file`, if any). What verify runs."""
    project = [project_case(c) for c in load_cases(cases_file)] if cases_file is not None else []
    project, _ = for_device(project, device.type)
    return execute(module, device, project, _bindings(tuple(contracts), ()), tuple(seeds), report=report,
                   op_checks=op_checks, profile=False).results


def _device(loaded: LoadedVariant):
    import torch

    if loaded.backend == "cuda":
        if not torch.cuda.is_available():
            raise SmokeError("the host's variant is a CUDA build but no CUDA device is visible", code="no-cuda-device")
        return torch.device("cuda")
    return torch.device("cpu")


def run_smoke(bundle: "Bundle", kernel: "Kernel | None", *, seed: int | None = None, trials: int = DEFAULT_TRIALS,
              contracts: tuple[tuple[str, str], ...] = (), report: Reporter = quiet, op_checks: bool = True,
              seeds: tuple[int, ...] | None = None) -> SmokeReport:
    """Load the host's variant of `bundle`; run its contracts and the resolved kernel's cases.
    The run's seeds are `seed`, `seed + 1`, ... (`trials` of them; `seed` drawn afresh when
    None), or exactly `seeds` when given."""
    import torch

    loaded = load_variant(bundle.root)
    device = _device(loaded)
    if not seeds:
        seeds = seeds_from(new_seed() if seed is None else int(seed), trials)
    seeds = tuple(seeds)
    cases_file = kernel.smoke_cases if kernel is not None else None
    project, left_out = for_device([project_case(c) for c in load_cases(cases_file)] if cases_file else [],
                                   device.type)
    workspace = kernel.contracts if kernel is not None else ()
    bench = bench_shapes(kernel.bench_cases) if kernel is not None else {}
    ex = execute(loaded.module, device, project, _bindings(tuple(contracts), workspace), seeds, report=report,
                 op_checks=op_checks, bench=bench)
    tests = None
    if kernel is not None and cases_file is None:
        report(Event("step", "running the project's kernels_ci tests", stage="smoke"))
        tests = run_project_tests(kernel.root, loaded.path, bundle.root, kernel.project.python_name)
    where = kernel.shown if kernel is not None else str(bundle.root)
    warnings: list[Problem] = plan_warnings(ex, where) + weak_warnings(ex.stats, where, len(seeds))
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return SmokeReport(kernel=loaded.kernel_name, kernel_id=loaded.kernel_id, variant=loaded.variant,
                       device=device_name, project=kernel.shown if kernel is not None else "(no project)",
                       results=tuple(ex.results), left_out=tuple(left_out), seed=seeds[0], seeds=seeds,
                       coverage=tuple(coverage_of(ex, seeds)), warnings=tuple(warnings),
                       delegation=tuple(ex.delegation), project_tests=tests)
