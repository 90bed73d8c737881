"""The bench stage: `run_bench` times the host's variant of a bundle on the project's
bench cases, in a worker process it supervises (`bench_worker.py`): the case file and
the kernel are the project's code. A case that raises, crashes the worker or passes
the timeout is listed in `BenchReport.failed` and the others are timed; case dicts a
trusted caller passes are timed in this process (`pipeline.bench.run_cases`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.bench import (CASES_FILE, COPY_BYTES, DTYPES, WARMUP, BenchReport, CaseBench, _cpu_gate, cpu_warning,
                            device_of, method_record, only_cases, run_cases)
from pipeline.bench_worker import BenchLoaded, BenchSpec
from pipeline.errors import BenchError, SmokeError
from pipeline.events import Event, Reporter, quiet
from pipeline.smoke.supervisor import Worker, WorkerGone
from pipeline.smoke.variant import load_variant

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.bundle import Bundle
    from pipeline.workspace import Kernel

# Seconds one bench case (every sample, baselines and torch.compile included) may take.
CASE_TIMEOUT_S = 600.0
LOAD_TIMEOUT_S = 300.0

__all__ = ["CASE_TIMEOUT_S", "COPY_BYTES", "run_bench"]


@dataclass
class Timed:
    """What a run produced, in or out of process: what was loaded, then the figures."""

    loaded: BenchLoaded
    copy_gbs: float
    cases: list[CaseBench] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)


def _in_process(bundle: "Bundle", cases: list[dict], *, reps: int, warmup: int, only: str | None,
                report: Reporter, cpu_limit_s: float | None, samples: int) -> Timed:
    import torch

    try:
        loaded = load_variant(bundle.root)
    except SmokeError as exc:
        raise BenchError(exc.message, hint=exc.hint, path=exc.path, code=exc.code) from None
    cases = only_cases(cases, only)
    device, name = device_of(loaded.backend)
    if device.type != "cuda":
        _cpu_gate(loaded.module, cases, device, reps=reps * samples, warmup=warmup, limit_s=cpu_limit_s,
                  report=report)
    copy_gbs, results = run_cases(loaded.module, cases, device, reps=reps, warmup=warmup, report=report,
                                  samples=samples)
    about = BenchLoaded(loaded.kernel_name, loaded.kernel_id, loaded.variant, name, device.type, torch.__version__,
                        tuple(c["name"] for c in cases))
    return Timed(about, copy_gbs, list(results))


class _BenchWorker:
    """A worker holding the variant and the case file; reloaded after a loss."""

    def __init__(self, spec: BenchSpec, timeout_s: float):
        self.spec, self.timeout_s = spec, timeout_s
        self.worker = Worker()

    def load(self) -> BenchLoaded:
        self.worker.request("bench.load", self.spec)
        try:
            kind, payload = self.worker.receive(LOAD_TIMEOUT_S)
        except WorkerGone as gone:
            raise BenchError(f"loading the variant or the case file ended its worker: {gone.exit.describe()}",
                             path=self.spec.build_root, code="bench-cases-failed") from None
        if kind == "failed":
            raise BenchError(payload.message, path=payload.path, code=payload.code or "bench-cases-failed",
                             hint=payload.hint)
        return payload

    def ask(self, verb: str):
        """One answer to `verb`, or (None, None) when the worker is lost on the way."""
        try:
            if not self.worker.alive:
                self.load()
            self.worker.request(verb)
            return self.worker.receive(self.timeout_s)
        except WorkerGone:
            return None, None

    def case(self, index: int, name: str, timed: Timed, report: Reporter) -> None:
        if not self.worker.alive:
            self.load()
        self.worker.request("bench.case", index)
        try:
            while True:
                kind, *payload = self.worker.receive(self.timeout_s)
                if kind == "bench":
                    timed.cases.append(payload[0])
                elif kind == "failed":
                    timed.failed.append((name, payload[0].message))
                elif kind == "end":
                    if not payload[0]:  # a sticky CUDA error: the next case gets a fresh worker
                        self.worker.stop()
                    return
        except WorkerGone as gone:
            what = "timed out" if gone.exit.kind == "timeout" else "the worker died"
            timed.failed.append((name, f"{what}: {gone.exit.describe()}"))
            report(Event("step", f"{name}: {timed.failed[-1][1]}", stage="bench"))


def _supervised(bundle: "Bundle", cases_file: Path, *, reps: int, warmup: int, only: str | None, dtype: str | None,
                report: Reporter, cpu_limit_s: float | None, samples: int, timeout_s: float) -> Timed:
    spec = BenchSpec(build_root=str(Path(bundle.root).resolve()), cases_file=str(cases_file), dtype=dtype, only=only,
                     reps=reps, warmup=warmup, samples=samples)
    runner = _BenchWorker(spec, timeout_s)
    try:
        loaded = runner.load()
        if loaded.device_type != "cuda":
            _, estimate = runner.ask("bench.estimate")
            cpu_warning(len(loaded.cases), reps * samples, estimate, cpu_limit_s, report)
        copies = []
        kind, gbs = runner.ask("bench.copy")
        copies += [gbs] if kind == "copy" else []
        timed = Timed(loaded, float("nan"))
        for n, name in enumerate(loaded.cases):
            report(Event("progress", name, n, len(loaded.cases), stage="bench"))
            runner.case(n, name, timed, report)
        # Measured again at the end: the report uses the larger, so no drift makes
        # the kernel look closer to the ceiling than it is.
        kind, gbs = runner.ask("bench.copy")
        copies += [gbs] if kind == "copy" else []
        timed.copy_gbs = max(copies) if copies else float("nan")
        return timed
    finally:
        runner.worker.stop()


def run_bench(bundle: "Bundle", kernel: "Kernel | None", *, reps: int = 100, warmup: int = WARMUP,
              only: str | None = None, cases: list[dict] | None = None, report: Reporter = quiet,
              command: str = "", cpu_limit_s: float | None = None, dtype: str | None = None,
              samples: int = 1, timeout_s: float = CASE_TIMEOUT_S) -> BenchReport:
    """Time the host's variant of `bundle` on the resolved kernel's bench cases (in `dtype`,
    when given; `samples` fresh setups per case) in a supervised worker, each case within
    `timeout_s`. On a CPU-only host, warn with an estimate, and refuse when it exceeds
    `cpu_limit_s`."""
    if reps < 1:
        raise BenchError("reps must be at least 1", code="usage")
    if samples < 1:
        raise BenchError("samples must be at least 1", code="usage")
    if cases is not None:
        timed = _in_process(bundle, cases, reps=reps, warmup=warmup, only=only, report=report,
                            cpu_limit_s=cpu_limit_s, samples=samples)
    else:
        if kernel is None or kernel.bench_cases is None:
            where = kernel.shown if kernel is not None else str(bundle.root)
            raise BenchError(f"no {CASES_FILE} for this build", path=where, code="bench-cases-missing",
                             hint="pass the kernel project with --kernel PATH; see the case contract in pipeline/bench.py")
        if dtype is not None and dtype not in DTYPES:
            raise BenchError(f"unknown dtype {dtype!r}", code="bench-dtype-unknown", hint="one of " + ", ".join(DTYPES))
        timed = _supervised(bundle, kernel.bench_cases, reps=reps, warmup=warmup, only=only, dtype=dtype,
                            report=report, cpu_limit_s=cpu_limit_s, samples=samples, timeout_s=timeout_s)
    about = timed.loaded
    return BenchReport(kernel=about.kernel_name, kernel_id=about.kernel_id, variant=about.variant,
                       device=about.device, torch=about.torch, copy_gbs=timed.copy_gbs,
                       method=method_record(_DeviceType(about.device_type), reps=reps, warmup=warmup, samples=samples),
                       cases=tuple(timed.cases), command=command,
                       created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), failed=tuple(timed.failed))


@dataclass(frozen=True)
class _DeviceType:
    """What method_record reads of a device: its type."""

    type: str
