"""Smoke inside the worker: load the variant, plan its ops, run one case at a time.

`Session` is what a worker keeps for `smoke.load`; the same pieces run in
process for trusted callers (`run.execute`: the tests' fake kernels, verify's
consumer process, which is a supervised process of its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from pipeline.errors import SmokeError
from pipeline.smoke.cases import Case, CaseInfo, for_device, load_cases, project_case
from pipeline.smoke.delegation import profile_call
from pipeline.smoke.harness import RunState, bookkeeping, generators, healthy, run_seed, schedule_for
from pipeline.smoke.opchecks import run_compile, run_opcheck
from pipeline.smoke.plan import OpPlan, available_on, bench_shapes, contract_cases, plan_ops
from pipeline.smoke.report import CaseResult, Delegation
from pipeline.smoke.variant import load_variant

Emit = Callable[[tuple], None]


@dataclass(frozen=True)
class SmokeSpec:
    """Everything a worker needs to make the run's cases (plain data: it crosses the pipe)."""

    build_root: str
    bindings: dict  # op -> (family, how)
    cases_file: str | None
    bench_cases: str | None  # the project's benchmarks/bench_cases.py: its shapes join the contracts'
    # (read in the worker: the case file is the project's code, and importing it imports torch)
    seeds: tuple[int, ...]
    op_checks: bool = True
    only: tuple[str, ...] = ()  # case-name patterns (fnmatch); empty: every case


@dataclass(frozen=True)
class Loaded:
    kernel_name: str
    kernel_id: str
    variant: str
    backend: str
    path: str
    device: str  # "cpu" or the GPU's name
    device_type: str
    plans: tuple[OpPlan, ...]  # without forms (they hold functions)
    cases: tuple[CaseInfo, ...]
    left_out: tuple[str, ...]  # project cases declared for other device types
    unavailable: tuple[str, ...]  # ops with no kernel for this device's dispatch key


def ops_of(module) -> Any:
    """The build's op namespace: the package's `ops`, else its `_ops` module's (where
    kernel-builder puts it; a package may export only Python functions)."""
    ops = getattr(module, "ops", None)
    if ops is None:
        inner = getattr(module, "_ops", None)
        ops = getattr(inner, "ops", None)
    if ops is None:
        try:
            import importlib

            ops = getattr(importlib.import_module(f"{module.__name__}._ops"), "ops", None)
        except ImportError:
            ops = None
    if ops is None:
        raise SmokeError("the kernel module has no `ops`, neither in __init__.py nor in its _ops module "
                         "(expected `from ._ops import ops`)", code="ops-missing")
    return ops


def device_for(backend: str):
    import torch

    if backend == "cuda":
        if not torch.cuda.is_available():
            raise SmokeError("the host's variant is a CUDA build but no CUDA device is visible", code="no-cuda-device")
        return torch.device("cuda")
    return torch.device("cpu")


def matches_only(name: str, only: tuple[str, ...]) -> bool:
    import fnmatch

    return not only or any(fnmatch.fnmatchcase(name, p) or p == name for p in only)


def make_cases(ops, device, project: list[Case], bindings: dict, bench: dict | None,
               only: tuple[str, ...] = ()) -> tuple[list[OpPlan], list[Case], tuple[str, ...]]:
    """The plan of every op, the cases to run (project cases first, then each available
    op's contract cases), and the ops with no kernel for `device`."""
    plans = plan_ops(ops, bindings)
    unavailable = tuple(p.op for p in plans if p.schema is not None and not available_on(ops, p.op, device.type))
    cases = [c for c in project if c.op not in unavailable]
    for plan in plans:
        if plan.op not in unavailable:
            cases.extend(contract_cases(plan, device.type, (bench or {}).get(plan.op, ())))
    cases = [c for c in cases if matches_only(c.name, only)]
    return plans, cases, unavailable


def _first_seed_checks(op, case: Case, device, seed: int) -> list[CaseResult]:
    out = []
    gen, _ = generators(seed + 1, case.name)
    if "opcheck" in case.checks:
        try:
            msg = run_opcheck(op, case.make(device, gen))
            out.append(CaseResult(case.name, case.op, seed, "opcheck", not msg, message=msg,
                                  kind="" if not msg else "wrong", category=case.category))
        except Exception as exc:  # opcheck's own failure is the finding
            out.append(CaseResult(case.name, case.op, seed, "opcheck", False, message=f"{type(exc).__name__}: {exc}"[:500],
                                  kind="raised", category=case.category))
    if "compile" in case.checks:
        try:
            err, bound, msg = run_compile(op, case, case.make(device, gen), device)
            out.append(CaseResult(case.name, case.op, seed, "compile", not msg, err, bound, msg,
                                  kind="" if not msg else "wrong", category=case.category))
        except Exception as exc:  # a graph break or a failed compile is the finding
            out.append(CaseResult(case.name, case.op, seed, "compile", False, message=f"{type(exc).__name__}: {exc}"[:500],
                                  kind="raised", category=case.category))
    return out


def run_case(ops, case: Case, device, seeds: tuple[int, ...], state: RunState, op_checks: bool, emit: Emit) -> bool:
    """Every seed of one case, each result emitted as soon as it exists (a crash loses
    nothing already sent). False when the device is unusable afterwards."""
    op = getattr(ops, case.op, None)
    if op is None:
        emit(("result", CaseResult(case.name, case.op, None, "values", False, message=f"the kernel has no op {case.op!r}",
                                   contract=case.contract, kind="raised", category=case.category)))
        return True
    schedule = schedule_for(case, seeds[0])
    for i, seed in enumerate(seeds):
        emit(("begin", seed, "values"))
        result, stats = run_seed(op, case, device, seed, state, schedule)
        emit(("result", result))
        if i == 0 and stats is not None:
            emit(("stats", stats))
        if result.kind == "cuda-error" and not healthy(device):
            return False
        if i == 0 and op_checks and case.checks:
            emit(("begin", seed, "checks"))
            for r in _first_seed_checks(op, case, device, seed):
                emit(("result", r))
            if device.type == "cuda" and not healthy(device):
                return False
    return True


def _plain(case: Case) -> bool:
    """A contract case with ordinary storage and a modest size: what profiling one call should see."""
    return (case.contract is not None and not case.refusable and case.shape is not None
            and 0 < math.prod(case.shape) <= 1 << 20)


def profile_choices(cases: list[CaseInfo] | list[Case], passed: set[str]) -> list[tuple[str, int]]:
    """(op, case index) to profile: per op a passing case, a plain contract case when there is one."""
    chosen: dict[str, int] = {}
    for i, case in enumerate(cases):
        if case.name not in passed:
            continue
        current = chosen.get(case.op)
        if current is None or (_plain(case) and not _plain(cases[current])):
            chosen[case.op] = i
    return list(chosen.items())


def profile(ops, cases: list[Case], choices: list[tuple[str, int]], device, seed: int) -> list[Delegation]:
    namespace = getattr(ops, "name", None)
    if not namespace:
        return []
    found = []
    for op_name, index in choices:
        case = cases[index]
        op = getattr(ops, op_name)
        try:
            call = case.make(device, generators(seed, case.name)[0])
        except Exception:  # the values check already reported it
            continue
        found.append(profile_call(op_name, f"{namespace}::{op_name}", lambda: op(*call.args), device))
    return found


@dataclass
class Session:
    """A worker's loaded kernel: its ops, device and cases, for `smoke.case` requests."""

    spec: SmokeSpec
    ops: Any
    device: Any
    cases: list[Case]
    state: RunState = field(default_factory=RunState)
    _keep: Any = None  # the bookkeeping context, entered for the worker's life


def _load(state, spec: SmokeSpec, emit: Emit) -> bool:
    import torch

    loaded = load_variant(Path(spec.build_root))
    device = device_for(loaded.backend)
    ops = ops_of(loaded.module)
    project: list[Case] = []
    left_out: list[str] = []
    if spec.cases_file:
        project, left_out = for_device([project_case(c) for c in load_cases(Path(spec.cases_file))], device.type)
    bench = bench_shapes(Path(spec.bench_cases)) if spec.bench_cases else {}
    plans, cases, unavailable = make_cases(ops, device, project, spec.bindings, bench, spec.only)
    session = Session(spec=spec, ops=ops, device=device, cases=cases)
    session._keep = bookkeeping(session.state)
    session._keep.__enter__()
    state.session = session
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    emit(("loaded", Loaded(kernel_name=loaded.kernel_name, kernel_id=loaded.kernel_id, variant=loaded.variant,
                           backend=loaded.backend, path=str(loaded.path), device=name, device_type=device.type,
                           plans=tuple(replace(p, forms=()) for p in plans), cases=tuple(c.info() for c in cases),
                           left_out=tuple(left_out), unavailable=unavailable)))
    return True


def _case(state, index: int, emit: Emit) -> bool:
    s: Session = state.session
    if s is None:
        raise SmokeError("smoke.case before smoke.load", code="usage")
    ok = run_case(s.ops, s.cases[index], s.device, s.spec.seeds, s.state, s.spec.op_checks, emit)
    emit(("end", ok, "" if ok else "the device is in an error state after this case"))
    return ok


def _profile(state, choices: list[tuple[str, int]], emit: Emit) -> bool:
    s: Session = state.session
    emit(("delegation", profile(s.ops, s.cases, choices, s.device, s.spec.seeds[0])))
    return True


HANDLERS = {"smoke.load": _load, "smoke.case": _case, "smoke.profile": _profile}
