"""Bench inside the worker process (`pipeline.smoke.worker`): load the variant and the
project's bench cases, then time one case per request. The case file and the kernel
are both the project's code, so both run here, never in the pipeline's process."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipeline import bench
from pipeline.errors import BenchError, SmokeError
from pipeline.smoke.supervisor import Failure

Emit = Callable[[tuple], None]


@dataclass(frozen=True)
class BenchSpec:
    build_root: str
    cases_file: str
    dtype: str | None
    only: str | None
    reps: int
    warmup: int
    samples: int


@dataclass(frozen=True)
class BenchLoaded:
    kernel_name: str
    kernel_id: str
    variant: str
    device: str
    device_type: str
    torch: str
    cases: tuple[str, ...]  # case names, in order


@dataclass
class BenchSession:
    spec: BenchSpec
    module: Any
    device: Any
    cases: list[dict]
    timer: Any = None
    extra: dict = field(default_factory=dict)


def _load(state, spec: BenchSpec, emit: Emit) -> bool:
    import torch


    from pipeline.smoke.variant import load_variant

    try:
        loaded = load_variant(Path(spec.build_root))
    except SmokeError as exc:
        raise BenchError(exc.message, hint=exc.hint, path=exc.path, code=exc.code) from None
    cases = bench.only_cases(bench.load_cases(Path(spec.cases_file), spec.dtype), spec.only)
    device, name = bench.device_of(loaded.backend)
    state.session = BenchSession(spec=spec, module=loaded.module, device=device, cases=cases,
                                 timer=bench.Timer(device, reps=spec.reps, warmup=spec.warmup))
    emit(("loaded", BenchLoaded(kernel_name=loaded.kernel_name, kernel_id=loaded.kernel_id, variant=loaded.variant,
                                device=name, device_type=device.type, torch=torch.__version__,
                                cases=tuple(c["name"] for c in cases))))
    return True


def _estimate(state, _payload, emit: Emit) -> bool:


    s: BenchSession = state.session
    emit(("estimate", bench.cpu_estimate_s(s.module, s.cases, s.device, reps=s.spec.reps * s.spec.samples,
                                           warmup=s.spec.warmup)))
    return True


def _copy(state, _payload, emit: Emit) -> bool:


    s: BenchSession = state.session
    size = bench.COPY_BYTES if s.device.type == "cuda" else 64 << 20
    emit(("copy", bench.copy_bandwidth(s.timer, s.device, size)))
    return True


def _case(state, index: int, emit: Emit) -> bool:

    from pipeline.smoke.harness import healthy

    s: BenchSession = state.session
    with bench.fresh_compiles():
        try:
            emit(("bench", bench.bench_case(s.timer, s.module, s.cases[index], s.device, s.spec.samples)))
        except BenchError as exc:
            emit(("failed", Failure.of(exc)))
    ok = healthy(s.device)
    emit(("end", ok, "" if ok else "the device is in an error state after this case"))
    return ok


HANDLERS = {"bench.load": _load, "bench.estimate": _estimate, "bench.copy": _copy, "bench.case": _case}
