"""The smoke stage: the host's variant's cases run in a supervised worker, and
what was verified is said.

`run_smoke` never runs kernel code itself. A worker process (`worker.py`,
`session.py`) loads the variant, plans each op's contract and runs one case
at a time; this process keeps every result. A case that kills the worker, does
not answer within the timeout or leaves the GPU in a sticky error state is a
failed case (its name, the signal, timeout or CUDA error, the seed to replay),
and a fresh worker takes the remaining cases. After an op's first timeout its
later cases get a shorter one (`SHORT_TIMEOUT_*`), and an op lost
`MAX_LOST_PER_OP` times has the rest of its cases recorded as not run, so a
kernel that hangs or crashes everywhere costs a bounded time.

`execute`, `run_cases` and `check_module` run cases in this process: for
trusted callers only (the tests' fake kernels, and verify, whose consumer
process is already one the pipeline supervises).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.errors import Problem, SmokeError
from pipeline.events import Event, Reporter, quiet
from pipeline.smoke.cases import Case, CaseInfo, for_device, load_cases, project_case
from pipeline.smoke.coverage import coverage_of, plan_warnings
from pipeline.smoke.harness import CaseStats, RunState, bookkeeping
from pipeline.smoke.plan import Binding, OpPlan
from pipeline.smoke.project_tests import run_project_tests
from pipeline.smoke.report import CaseResult, Delegation, SmokeReport
from pipeline.smoke.session import Loaded, SmokeSpec, make_cases, ops_of, profile_choices, run_case
from pipeline.smoke.session import profile as profile_calls
from pipeline.smoke.supervisor import Worker, WorkerGone
from pipeline.smoke.variant import LoadedVariant, load_variant
from pipeline.smoke.weak import weak_warnings

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.bundle import Bundle
    from pipeline.workspace import Kernel

DEFAULT_TRIALS = 3
DEFAULT_SEEDS = tuple(range(DEFAULT_TRIALS))  # run_cases' default: fixed, for callers that want them fixed
# Seconds one seed of one case may take (three calls, the reference and the checks).
DEFAULT_TIMEOUT_S = 60.0
# Loading the variant (importing torch and the kernel), and opcheck / torch.compile checks.
LOAD_TIMEOUT_S = 300.0
CHECKS_TIMEOUT_FACTOR = 5
# After an op's first timeout its later cases get a shorter one: this many times the
# slowest seed it answered, at least SHORT_TIMEOUT_S (an endless loop then costs seconds a case).
SHORT_TIMEOUT_FACTOR = 20
SHORT_TIMEOUT_S = 10.0
# An op that crashed or timed out this often has its remaining cases recorded as not run.
MAX_LOST_PER_OP = 16

__all__ = ["DEFAULT_SEEDS", "DEFAULT_TIMEOUT_S", "DEFAULT_TRIALS", "Execution", "LoadedVariant", "check_module",
           "execute", "load_variant", "new_seed", "run_cases", "run_smoke", "seeds_from"]


def new_seed() -> int:
    """A fresh seed per run, so runs differ; the report records it and `--seed` replays it."""
    return random.SystemRandom().randrange(1, 2**31)


def seeds_from(seed: int, trials: int) -> tuple[int, ...]:
    return tuple(seed + i for i in range(trials))


@dataclass
class Execution:
    plans: list[OpPlan]
    results: list[CaseResult] = field(default_factory=list)
    stats: list[CaseStats] = field(default_factory=list)
    cases: list = field(default_factory=list)  # Case (in process) or CaseInfo (from a worker)
    delegation: list[Delegation] = field(default_factory=list)
    unavailable: tuple[str, ...] = ()
    project_ops: dict = field(default_factory=dict)  # op -> passing project tests that called it


def _plan_failures(ex: Execution) -> None:
    for plan in ex.plans:
        if plan.failed:
            ex.results.append(CaseResult(f"{plan.op}:contract", plan.op, None, "contract", False,
                                         message=plan.note, contract=plan.family, kind="binding",
                                         category="binding"))


# --------------------------------------------------------------------------
# In process (trusted callers)


def execute(module, device, project: list[Case], bindings: dict, seeds: tuple[int, ...], *,
            report: Reporter = quiet, op_checks: bool = True, profile: bool = True,
            bench: dict | None = None) -> Execution:
    """Plan the ops, then run the project's cases and every contract case on `device`, here."""
    ops = ops_of(module)
    plans, cases, unavailable = make_cases(ops, device, project, bindings, bench)
    ex = Execution(plans=plans, unavailable=unavailable)
    _plan_failures(ex)

    def emit(message: tuple) -> None:
        if message[0] == "result":
            ex.results.append(message[1])
        elif message[0] == "stats":
            ex.stats.append(message[1])

    state = RunState()
    with bookkeeping(state):
        for n, case in enumerate(cases):
            report(Event("progress", case.name, n, len(cases), stage="smoke"))
            run_case(ops, case, device, seeds, state, op_checks, emit)
            ex.cases.append(case)
    ex.results[:] = dtype_refusals_declined(ex.results, ex.cases)
    if profile:
        passed = {r.name for r in ex.results if r.passed and not r.declined}
        ex.delegation.extend(profile_calls(ops, cases, profile_choices(cases, passed), device, seeds[0]))
    return ex


def run_cases(module, cases: list[dict], device, *, seeds=DEFAULT_SEEDS, report: Reporter = quiet,
              op_checks: bool = True) -> list[CaseResult]:
    """Run case-file cases (dicts) meant for `device` against a loaded kernel module, in this
    process; no contracts."""
    kept, _ = for_device([project_case(c) for c in cases], device.type)
    ops = ops_of(module)
    results: list[CaseResult] = []

    def emit(message: tuple) -> None:
        if message[0] == "result":
            results.append(message[1])

    state = RunState()
    with bookkeeping(state):
        for n, case in enumerate(kept):
            report(Event("progress", case.name, n, len(kept), stage="smoke"))
            run_case(ops, case, device, tuple(seeds), state, op_checks, emit)
    return results


def check_module(module, device, *, seeds: tuple[int, ...], cases_file: Path | None = None,
                 contracts: tuple[tuple[str, str], ...] = (), report: Reporter = quiet,
                 op_checks: bool = False) -> list[CaseResult]:
    """A loaded kernel module's ops against their contracts (bound in `contracts`, else
    inferred) plus the project's cases (`cases_file`, if any), in this process. What verify runs."""
    project = [project_case(c) for c in load_cases(cases_file)] if cases_file is not None else []
    project, _ = for_device(project, device.type)
    return execute(module, device, project, _bindings(tuple(contracts), ()), tuple(seeds), report=report,
                   op_checks=op_checks, profile=False).results


def dtype_refusals_declined(results: list[CaseResult], cases: list) -> list[CaseResult]:
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
                out[i] = replace(results[i], passed=True, declined=True, kind="",
                                 message=f"declined: {dtype} refused: {results[i].message}")
    return out


def _bindings(cli: tuple[tuple[str, Binding], ...], workspace: tuple[tuple[str, Binding], ...]) -> dict:
    """op -> Binding: --contract (parse_bindings, how=CLI) wins over the workspace file (how=WORKSPACE)."""
    found = dict(workspace)
    found.update(dict(cli))
    return found


# --------------------------------------------------------------------------
# Supervised (the smoke stage)


@dataclass(frozen=True)
class Limits:
    """How long the worker may take: per seed of a case, to load, and for opcheck/compile."""

    case_s: float = DEFAULT_TIMEOUT_S
    load_s: float = LOAD_TIMEOUT_S

    @property
    def checks_s(self) -> float:
        return max(self.case_s * CHECKS_TIMEOUT_FACTOR, self.case_s)


class SupervisedRun:
    """The cases of one spec, each sent to a worker; a dead worker is replaced and reloaded."""

    def __init__(self, spec: SmokeSpec, limits: Limits, report: Reporter):
        self.spec, self.limits, self.report = spec, limits, report
        self.worker = Worker()
        # After the first loss a spare worker loads in the background, so the next
        # loss costs no import of torch and the kernel: it takes over at once.
        self.spare: Worker | None = None
        self.loaded: Loaded | None = None
        self.started = 0

    def __enter__(self) -> "SupervisedRun":
        return self

    def __exit__(self, *exc) -> None:
        self.worker.stop()
        if self.spare is not None:
            self.spare.stop()

    def _start_spare(self) -> None:
        self.spare = Worker()
        try:
            self.spare.request("smoke.load", self.spec)
        except WorkerGone:
            self.spare = None

    def load(self) -> Loaded:
        if self.loaded is not None and self.spare is not None:  # a replacement: the spare has been loading
            self.worker, self.spare = self.spare, None
        else:
            self.worker.request("smoke.load", self.spec)
        self.started += 1
        try:
            kind, payload = self.worker.receive(self.limits.load_s)
        except WorkerGone as gone:
            raise SmokeError(f"loading the variant ended its worker process: {gone.exit.describe()}",
                             path=self.spec.build_root, code="variant-import-failed",
                             hint="the variant's import (or its op registration) crashes or hangs; "
                                  "run `python -c 'import kernels; kernels.get_local_kernel(...)'` to see it") from None
        if kind == "failed":
            raise SmokeError(payload.message, path=payload.path or self.spec.build_root,
                             code=payload.code or "variant-import-failed", hint=payload.hint) from None
        if self.loaded is not None and [c.name for c in payload.cases] != [c.name for c in self.loaded.cases]:
            raise SmokeError("a fresh worker planned other cases than the first one: the plan is not "
                             "deterministic", path=self.spec.build_root, code="variant-import-failed")
        self.loaded = payload
        return payload

    def _ensure(self) -> None:
        if not self.worker.alive:
            self.load()
            self._start_spare()

    def run(self, index: int, case_s: float) -> tuple[list[CaseResult], list[CaseStats], str, float]:
        """One case, each seed within `case_s`: its results, its stats, how the worker ended if it
        did ("" when it lives), and the slowest seed's seconds."""
        info = self.loaded.cases[index]
        results: list[CaseResult] = []
        stats: list[CaseStats] = []
        self._ensure()
        seed, phase = (self.spec.seeds[0] if self.spec.seeds else None), "values"
        self.worker.request("smoke.case", index)
        began, slowest = time.monotonic(), 0.0
        while True:
            deadline = max(self.limits.checks_s, case_s) if phase == "checks" else case_s
            try:
                kind, *payload = self.worker.receive(deadline)
            except WorkerGone as gone:
                results.append(self._lost(info, seed, phase, gone, deadline))
                return results, stats, gone.exit.kind, slowest
            if kind == "begin":
                seed, phase = payload
                began = time.monotonic()
            elif kind == "result":
                results.append(payload[0])
                if phase == "values":
                    slowest = max(slowest, time.monotonic() - began)
            elif kind == "stats":
                stats.append(payload[0])
            elif kind == "failed":  # the worker caught an error outside the case's own checks
                results.append(CaseResult(info.name, info.op, seed, "values", False, message=payload[0].message,
                                          contract=info.contract, kind="raised", category=info.category))
            elif kind == "end":
                ok, reason = payload
                if not ok:
                    self.worker.stop()  # a sticky CUDA error: the next case gets a fresh worker
                    return results, stats, "cuda-error", slowest
                return results, stats, "", slowest

    def _lost(self, info: CaseInfo, seed: int | None, phase: str, gone: WorkerGone, deadline: float) -> CaseResult:
        exit = gone.exit
        what = {"crash": "the worker died", "exit": "the worker exited",
                "timeout": "timed out"}.get(exit.kind, "the worker ended")
        if exit.kind == "timeout":
            shortened = "" if deadline >= self.limits.case_s else " (shortened after an earlier timeout of this op)"
            message = (f"timed out: {exit.describe()}{shortened}; the timeout per case and seed is --timeout "
                       f"{self.limits.case_s:g}")
        else:
            message = f"{what} with {exit.describe()}"
        replay = f"replay: --seed {seed} --seeds 1 --only '{info.name}'" if seed is not None else ""
        check = "values" if phase == "values" else "opcheck"
        return CaseResult(info.name, info.op, seed, check, False, message=f"{message}; {replay}".rstrip("; "),
                          contract=info.contract, kind="timeout" if exit.kind == "timeout" else "crash",
                          category=info.category)

    def profile(self, ex: Execution) -> list[Delegation]:
        passed = {r.name for r in ex.results if r.passed and not r.declined}
        choices = profile_choices(list(self.loaded.cases), passed)
        if not choices:
            return []
        try:
            self._ensure()
            self.worker.request("smoke.profile", choices)
            kind, payload = self.worker.receive(self.limits.checks_s)
        except (WorkerGone, SmokeError):  # profiling is a warning's source, never a verdict
            return []
        return payload if kind == "delegation" else []


def _not_run(info: CaseInfo, seed: int | None, why: str) -> CaseResult:
    return CaseResult(info.name, info.op, seed, "values", False, message=f"not run: {why}", contract=info.contract,
                      kind="not-run", category=info.category)


@dataclass
class _OpHistory:
    """What one op's cases did so far: how slow its answers were, how often it was lost."""

    slowest: float = 0.0
    timeouts: int = 0
    lost: list = field(default_factory=list)  # cases that crashed or timed out

    def deadline(self, limits: Limits) -> float:
        if not self.timeouts:
            return limits.case_s
        return min(limits.case_s, max(SHORT_TIMEOUT_S, SHORT_TIMEOUT_FACTOR * self.slowest))


def supervised(spec: SmokeSpec, limits: Limits, report: Reporter) -> tuple[Loaded, Execution, int]:
    """Every case of `spec` through workers; (what the first worker loaded, the execution, workers started)."""
    with SupervisedRun(spec, limits, report) as runner:
        loaded = runner.load()
        ex = Execution(plans=list(loaded.plans), unavailable=loaded.unavailable)
        _plan_failures(ex)
        history: dict[str, _OpHistory] = {}
        for n, info in enumerate(loaded.cases):
            report(Event("progress", info.name, n, len(loaded.cases), stage="smoke"))
            ex.cases.append(info)
            op = history.setdefault(info.op, _OpHistory())
            if len(op.lost) >= MAX_LOST_PER_OP:
                ex.results.append(_not_run(info, spec.seeds[0], f"{info.op} crashed or timed out on {len(op.lost)} "
                                           f"case(s) already (the first: {', '.join(op.lost[:3])})"))
                continue
            results, stats, ended, slowest = runner.run(n, op.deadline(limits))
            op.slowest = max(op.slowest, slowest)
            ex.results.extend(results)
            ex.stats.extend(stats)
            if ended in ("crash", "timeout", "exit"):
                op.lost.append(info.name)
                op.timeouts += ended == "timeout"
                report(Event("step", f"{info.name}: {results[-1].message}", stage="smoke"))
            elif ended == "cuda-error":
                report(Event("step", f"{info.name}: sticky CUDA error; a fresh worker takes the next case",
                             stage="smoke"))
        ex.results[:] = dtype_refusals_declined(ex.results, ex.cases)
        ex.delegation.extend(runner.profile(ex))
        return loaded, ex, runner.started


def run_smoke(bundle: "Bundle", kernel: "Kernel | None", *, seed: int | None = None, trials: int = DEFAULT_TRIALS,
              contracts: tuple[tuple[str, str], ...] = (), report: Reporter = quiet, op_checks: bool = True,
              seeds: tuple[int, ...] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              only: tuple[str, ...] = ()) -> SmokeReport:
    """The host's variant of `bundle` against its contracts and the resolved kernel's cases,
    in a supervised worker. The run's seeds are `seed`, `seed + 1`, ... (`trials` of them;
    `seed` drawn afresh when None), or exactly `seeds` when given. `timeout_s` bounds each
    seed of each case; `only` keeps the cases whose names match (fnmatch patterns)."""
    if not seeds:
        seeds = seeds_from(new_seed() if seed is None else int(seed), trials)
    seeds = tuple(seeds)
    cases_file = kernel.smoke_cases if kernel is not None else None
    workspace = kernel.contracts if kernel is not None else ()
    bench = str(kernel.bench_cases) if kernel is not None and kernel.bench_cases else None
    spec = SmokeSpec(build_root=str(Path(bundle.root).resolve()), bindings=_bindings(tuple(contracts), workspace),
                     cases_file=str(cases_file) if cases_file else None, bench_cases=bench, seeds=seeds,
                     op_checks=op_checks, only=tuple(only))
    loaded, ex, workers = supervised(spec, Limits(case_s=float(timeout_s)), report)
    tests = None
    if kernel is not None and cases_file is None and not only:
        report(Event("step", "running the project's own tests", stage="smoke"))
        tests = run_project_tests(kernel.root, Path(loaded.path), bundle.root, kernel.project.python_name,
                                  namespace=loaded.kernel_id, kernel_name=loaded.kernel_name,
                                  unavailable=loaded.unavailable)
        if tests is not None and tests.passed:
            ex.project_ops = {op: 1 for op in tests.ops}
    where = kernel.shown if kernel is not None else str(bundle.root)
    warnings: list[Problem] = plan_warnings(ex, where) + weak_warnings(ex.stats, where, len(seeds))
    return SmokeReport(kernel=loaded.kernel_name, kernel_id=loaded.kernel_id, variant=loaded.variant,
                       device=loaded.device, project=kernel.shown if kernel is not None else "(no project)",
                       results=tuple(ex.results), left_out=tuple(loaded.left_out), seed=seeds[0], seeds=seeds,
                       coverage=tuple(coverage_of(ex, seeds)), warnings=tuple(warnings),
                       delegation=tuple(ex.delegation), project_tests=tests, device_type=loaded.device_type,
                       timeout_s=float(timeout_s), workers=workers)
