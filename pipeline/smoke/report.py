"""The values smoke returns: one result per case and seed, coverage per op,
warnings, what each op ran (delegation), the project's own tests. No torch here:
the card and the publish gate read these."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pipeline.errors import Problem


@dataclass(frozen=True)
class CaseResult:
    name: str
    op: str
    seed: int | None
    check: str  # "values", "opcheck" or "compile"
    passed: bool
    error: float | None = None  # worst relative error over the outputs and calls
    bound: float | None = None
    message: str = ""
    contract: str | None = None  # the family whose case this is; None: the project's own case
    declined: bool = False  # the op refused an input a correct kernel may refuse (passed, reported)
    refused: bool = False  # the op raised on its first call (not a wrong answer)
    # How it failed ("" when it passed): wrong (an output or input check), raised, cuda-error,
    # crash (the worker died), timeout, not-run (skipped after repeated crashes or timeouts),
    # case-error (making the project case's inputs failed)
    kind: str = ""
    category: str = ""  # the input's class (cases.category_of); "project" for the project's own cases


# Failure kinds that mean the kernel took its process down or never answered.
FATAL_KINDS = ("crash", "timeout", "cuda-error")


@dataclass(frozen=True)
class OpCoverage:
    """What was verified for one op, as the card shows it."""

    op: str
    schema: str
    contract: str | None  # family, or None
    how: str  # "--contract", "workspace", "inferred" or "" (no contract)
    contract_cases: int = 0
    project_cases: int = 0
    shapes: tuple[str, ...] = ()  # distinct input shapes run, as "2x3x4096"
    dtypes: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    declined: tuple[str, ...] = ()  # contract cases the op refused
    note: str = ""  # why no contract applies (ambiguous inference, schema mismatch)
    available: bool = True  # False: the variant has no kernel for this device ("not available on <device>")
    project_tests: int = 0  # passing tests of the project's own suite that called the op
    categories_declined: tuple[str, ...] = ()  # declined by the binding (`declines = [...]`)
    categories_limited: tuple[str, ...] = ()  # categories the bound form's documented limits leave without cases
    unchecked: tuple[str, ...] = ()  # outputs the op produces that no check reads (named, never passed off)

    @property
    def tier(self) -> str:
        """How strongly the op is verified: contract > project-cases > project-tests > untested;
        "unavailable" for an op this variant ships no kernel of for the device."""
        if not self.available:
            return "unavailable"
        if self.contract_cases:
            return "contract"
        if self.project_cases:
            return "project-cases"
        if self.project_tests:
            return "project-tests"
        return "untested"

    @property
    def tested(self) -> bool:
        return self.tier in ("contract", "project-cases", "project-tests", "unavailable")

    def shape_summary(self, limit: int = 6) -> str:
        shown = ", ".join(self.shapes[:limit])
        return shown + (f" and {len(self.shapes) - limit} more" if len(self.shapes) > limit else "")


@dataclass(frozen=True)
class Delegation:
    """What running the op once made PyTorch do (torch.profiler)."""

    op: str
    aten: tuple[str, ...]  # compute operators called (layout and copy operators left out)
    kernels: tuple[str, ...]  # device kernels launched (CUDA)
    delegates: bool  # the op's work is done by PyTorch's operators
    note: str = ""


@dataclass(frozen=True)
class ProjectTests:
    """The project's own `kernels_ci` pytest tests, run against the build."""

    command: str
    ran: int
    failed: int
    skipped: int
    output: str = ""  # the tail, when something failed
    ops: tuple[str, ...] = ()  # the kernel's ops that the passing tests called
    unavailable: int = 0  # tests that failed only by calling an op not available on the device, or for want of a GPU
    missing: tuple[str, ...] = ()  # packages the tests import and this environment lacks (those tests gave no verdict)

    @property
    def passed(self) -> bool:
        return self.failed == 0


@dataclass(frozen=True)
class SmokeReport:
    kernel: str
    kernel_id: str
    variant: str
    device: str
    project: str
    results: tuple[CaseResult, ...] = field(default_factory=tuple)
    left_out: tuple[str, ...] = ()  # cases declared for other device types
    seed: int | None = None  # the run's seed: `--seed` replays it
    seeds: tuple[int, ...] = ()
    coverage: tuple[OpCoverage, ...] = ()
    warnings: tuple[Problem, ...] = ()
    delegation: tuple[Delegation, ...] = ()
    project_tests: ProjectTests | None = None
    device_type: str = ""  # "cpu", "cuda", ...: what "not available on" names
    timeout_s: float | None = None  # the per-call timeout the worker ran under
    workers: int = 1  # worker processes started (1 + one per crash, timeout or sticky CUDA error)

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    @property
    def unavailable(self) -> tuple[str, ...]:
        """Ops this variant has no kernel of for the device: not run, not failed."""
        return tuple(c.op for c in self.coverage if not c.available)

    @property
    def nothing_available(self) -> bool:
        return bool(self.coverage) and all(not c.available for c in self.coverage)

    @property
    def passed(self) -> bool:
        """Something ran, nothing failed, and the variant ships at least one op for the device."""
        ran = bool(self.results) or (self.project_tests is not None and self.project_tests.ran > 0)
        tests_ok = self.project_tests is None or self.project_tests.passed
        return ran and not self.failures and tests_ok and not self.nothing_available

    def failures_by_category(self) -> dict[str, dict[str, int]]:
        """category -> failure kind -> failed checks: what the report and the card group by."""
        found: dict[str, dict[str, int]] = {}
        for r in self.failures:
            kinds = found.setdefault(r.category or "project", {})
            kinds[r.kind or "wrong"] = kinds.get(r.kind or "wrong", 0) + 1
        return found

    @property
    def untested(self) -> tuple[str, ...]:
        """Ops no contract and no project case checked."""
        return tuple(c.op for c in self.coverage if not c.tested)

    def to_json(self) -> dict:
        return {
            "kernel": self.kernel,
            "kernel_id": self.kernel_id,
            "variant": self.variant,
            "device": self.device,
            "project": self.project,
            "passed": self.passed,
            "seed": self.seed,
            "seeds": list(self.seeds),
            "counts": {"total": len(self.results), "failed": len(self.failures),
                       "declined": sum(r.declined for r in self.results)},
            "failures_by_category": self.failures_by_category(),
            "untested": list(self.untested),
            "not_available": {"device": self.device_type, "ops": list(self.unavailable)},
            "tiers": {c.op: c.tier for c in self.coverage},
            "timeout_s": self.timeout_s,
            "workers": self.workers,
            "coverage": [asdict(c) for c in self.coverage],
            "warnings": [w.to_json() for w in self.warnings],
            "delegation": [asdict(d) for d in self.delegation],
            "project_tests": asdict(self.project_tests) if self.project_tests is not None else None,
            "left_out": {"reason": "the case's `devices` excludes this device type", "cases": list(self.left_out)},
            "results": [asdict(r) for r in self.results],
        }


def untested_hint(ops: tuple[str, ...] | list[str]) -> str:
    """What to do about ops nothing tests (smoke and the publish gate say the same)."""
    first = ops[0] if ops else "OP"
    return (f"bind each op to a pipeline contract: --contract {first}=FAMILY (or [workspace.contracts.<kernel>] "
            "in the workspace build.toml; families: python -m pipeline smoke --help), or add the case-file "
            "contract tests/smoke_cases.py (documented in pipeline/smoke/__init__.py); "
            "publish --allow-untested publishes anyway and marks the card untested")
