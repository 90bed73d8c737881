"""Benchmark the host's variant of a built kernel against PyTorch.

The timing library: `run_cases` times case dicts against a loaded kernel module.
The bench stage itself, `pipeline.bench_run.run_bench`, has a worker process
(`bench_worker.py`) load the variant and the project's `benchmarks/bench_cases.py`
and time every case and baseline on the device there.

The case contract (`kernels-src/<name>/benchmarks/bench_cases.py`)
-------------------------------------------------------------------
One function::

    def bench_cases(dtype: str = "bfloat16") -> list[dict]

`dtype` (one of DTYPES) is optional in the signature: a file without it is
timed only in its own dtype, and `--dtype` refuses it (bench-dtype-unsupported).

Each dict:

    name       str, unique: "rms_norm/8192x4096"
    op         str: a label for the op (tables and plots group by it)
    group      str: the shape set ("Qwen3-8B")
    shape      str: "8192x4096"
    dtype      str: "bfloat16" (in a `--dtype` run, the dtype asked for)
    bytes      int: the fewest bytes the op must move through device memory
               (every input read once, every output written once); the
               bandwidth figures are bytes / median time
    setup      setup(kernel_module, device) -> dict[str, callable]: allocates
               the inputs and returns zero-argument callables: "kernel" (the
               kernel under test) and one per baseline. Each returns its
               output (a tensor or a tuple whose first item is the output
               compared); create torch.compile'd functions here
    baselines  tuple[str, ...]: the keys of the baselines, in table order
    graph      optional bool: also time every callable under CUDA-graph replay
               (default: on a CUDA device, when `bytes` <= GRAPH_MAX_BYTES)

How it times (what a sceptical reader should check): every callable runs once
and its first output is compared with the kernel's (relative norm error, which
goes in the report); then `warmup` untimed calls; then `reps` repetitions, each
preceded by reading (summing) a buffer of several times the L2 size (the L2 holds none of
the inputs, and the queue stays ahead of the host, so launch overhead on the
host is not timed) and bracketed by CUDA events; the median is reported. The
device-to-device copy bandwidth (bytes read + bytes written of a 1 GiB copy)
is measured the same way in the same run, and each time is also reported as a
fraction of it. On a CPU-only host the same loop runs with a host timer (no
flush): useful to test the harness, not to publish.

Small shapes (decode batches) are also timed under CUDA-graph replay, which is
how they run in serving and in torch.compile's reduce-overhead mode: each
callable is captured GRAPH_CALLS times back to back in one graph (after warm-up
calls on a side stream), the graph is replayed between CUDA events, and the
figure is the median replay time over GRAPH_CALLS. No flush between the calls:
as in a decode step, the inputs were just written by the op before. A callable
that cannot be captured gets no graph figure (its error is in the report).
"""

from __future__ import annotations

import contextlib
import inspect
import platform
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

# The tables and the plot live in pipeline.bench_report; importable from here too.
from pipeline.bench_report import load_results, markdown_table, plot, target_misses  # noqa: F401
# The timer lives in pipeline.bench_timing; importable from here too.
from pipeline.bench_timing import (COPY_BYTES, GRAPH_CALLS, Timer, Timing, combine_samples,  # noqa: F401
                                   copy_bandwidth, copy_timing)
from pipeline.casefile import call_cases, import_case_function
from pipeline.errors import BenchError
from pipeline.events import Event, Reporter, quiet
from pipeline.portable_paths import portable_command

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.workspace import Kernel

CASES_FILE = Path("benchmarks") / "bench_cases.py"
DTYPES = ("bfloat16", "float16", "float32")  # what `--dtype` may ask a case file for
GRAPH_MAX_BYTES = 8 << 20  # cases up to this size are also timed under graph replay
# Cases from this size also time a copy of their own bytes: the 1 GiB copy that sets the
# ceiling runs at a bandwidth that smaller transfers (launch, ramp, tail) do not reach, so
# this second reference says how much of a shortfall is the size's and how much the kernel's.
SAME_SIZE_MIN_BYTES = 64 << 20


@dataclass(frozen=True)
class CaseBench:
    name: str
    op: str
    group: str
    shape: str
    dtype: str
    bytes: int
    timings: dict  # impl -> Timing ("kernel" first, then baselines)
    max_rel_diff: dict  # baseline -> relative norm difference of its output to the kernel's
    baselines: tuple[str, ...]
    graph_timings: dict = field(default_factory=dict)  # impl -> Timing per call under graph replay
    graph_errors: dict = field(default_factory=dict)  # impl -> why it could not be captured
    same_size_copy: Timing | None = None  # a device copy moving the case's bytes (SAME_SIZE_MIN_BYTES)

    def speedup(self, baseline: str) -> float:
        return self.timings[baseline].median_us / self.timings["kernel"].median_us

    def graph_speedup(self, baseline: str) -> float | None:
        if "kernel" not in self.graph_timings or baseline not in self.graph_timings:
            return None
        return self.graph_timings[baseline].median_us / self.graph_timings["kernel"].median_us

    def bandwidth_gbs(self, impl: str = "kernel") -> float:
        return self.bytes / (self.timings[impl].median_us * 1e3)


@dataclass(frozen=True)
class BenchReport:
    kernel: str
    kernel_id: str
    variant: str
    device: str
    torch: str
    copy_gbs: float
    method: dict
    cases: tuple[CaseBench, ...] = field(default_factory=tuple)
    command: str = ""
    created: str = ""
    failed: tuple[tuple[str, str], ...] = ()  # (case, why): raised, crashed its worker, timed out

    def to_json(self) -> dict:
        rows = []
        for c in self.cases:
            rows.append({
                "name": c.name, "op": c.op, "group": c.group, "shape": c.shape, "dtype": c.dtype, "bytes": c.bytes,
                "baselines": list(c.baselines),
                "times_us": {k: round(t.median_us, 3) for k, t in c.timings.items()},
                "timings": {k: asdict(t) for k, t in c.timings.items()},
                "bandwidth_gbs": {k: _sig(c.bandwidth_gbs(k)) for k in c.timings},
                "copy_fraction": {k: _sig(c.bandwidth_gbs(k) / self.copy_gbs) for k in c.timings},
                "speedup": {b: _sig(c.speedup(b)) for b in c.baselines},
                "max_rel_diff": c.max_rel_diff,
            })
            if spread := _spreads(c.timings):
                rows[-1]["spread_us"] = spread
            if c.same_size_copy is not None:
                copy_us = c.same_size_copy.median_us
                rows[-1]["same_size_copy_us"] = round(copy_us, 3)
                rows[-1]["same_size_copy_fraction"] = {k: _sig(copy_us / t.median_us) for k, t in c.timings.items()}
            if c.graph_timings or c.graph_errors:
                rows[-1]["graph_times_us"] = {k: round(t.median_us, 3) for k, t in c.graph_timings.items()}
                if graph_spread := _spreads(c.graph_timings):
                    rows[-1]["graph_spread_us"] = graph_spread
                rows[-1]["graph_speedup"] = {b: _sig(v) for b in c.baselines
                                             if (v := c.graph_speedup(b)) is not None}
                if c.graph_errors:
                    rows[-1]["graph_errors"] = dict(c.graph_errors)
        return {
            "kernel": self.kernel, "kernel_id": self.kernel_id, "variant": self.variant, "device": self.device,
            "torch": self.torch, "command": self.command, "created": self.created, "method": self.method,
            "copy_bandwidth_gbs": _sig(self.copy_gbs), "results": rows,
            "failed": [{"name": n, "message": m} for n, m in self.failed],
        }


def _spreads(timings: dict) -> dict:
    """impl -> [fastest, slowest] sample median, for the timings taken in several samples."""
    return {k: [round(v, 3) for v in t.spread_us] for k, t in timings.items() if t.spread_us}


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


# --------------------------------------------------------------------------


def load_cases(path: Path, dtype: str | None = None) -> list[dict]:
    """The cases of a case file (a kernel's `benchmarks/bench_cases.py`, or the project holding it),
    in `dtype` when one is asked for (`bench_cases(dtype=...)`), else in the file's own default."""
    path = Path(path)
    if path.is_dir() or not path.suffix:
        path = path / CASES_FILE
    if not path.is_file():
        raise BenchError(f"no such case file: {path}", path=str(path), code="bench-cases-missing",
                         hint="see pipeline/bench.py for the case contract")
    if dtype is not None and dtype not in DTYPES:
        raise BenchError(f"unknown dtype {dtype!r}", code="bench-dtype-unknown", hint="one of " + ", ".join(DTYPES))
    make = import_case_function(path, "bench_cases", error=BenchError, code="bench-cases-failed")
    if dtype is not None and not _takes(make, "dtype"):
        raise BenchError(f"bench_cases() takes no dtype, so its cases cannot be timed in {dtype}", path=str(path),
                         code="bench-dtype-unsupported",
                         hint="def bench_cases(dtype: str = \"bfloat16\") -> list[dict], building each case's "
                              "tensors in that dtype and naming it in the case's \"dtype\"")
    cases = call_cases(make, path, error=BenchError, code="bench-cases-failed",
                       arguments={"dtype": dtype} if dtype is not None else None)
    problems = case_problems(cases, dtype)
    if problems or not cases:
        raise BenchError("the case file does not follow the contract: " + ("; ".join(problems) or "no cases"),
                         path=str(path), code="bench-cases-invalid", hint="see pipeline/bench.py's docstring")
    return cases


WARMUP = 10  # untimed calls before a case is timed (the CLI's and the scripts' default)
CASE_KEYS = ("name", "op", "group", "shape", "dtype", "bytes", "setup", "baselines")


def case_problems(cases: list[dict], dtype: str | None = None) -> list[str]:
    """What breaks the case contract (module docstring): missing keys, a dtype other than the
    run's, names that are not unique."""
    problems = []
    for i, case in enumerate(cases):
        problems += [f"case {i} has no {key!r}" for key in CASE_KEYS if key not in case]
        if dtype is not None and "dtype" in case and case["dtype"] != dtype:
            problems.append(f"case {case.get('name', i)!r} says dtype {case['dtype']!r} in a {dtype} run")
    names = [c.get("name") for c in cases]
    return problems + [f"case name {n!r} is not unique" for n in sorted({n for n in names if names.count(n) > 1})]


def _takes(function, name: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _first(value):
    return value[0] if isinstance(value, (tuple, list)) else value


def _rel(a, b) -> float:
    import torch

    a = a.detach().double()
    b = b.detach().double()
    d = b.norm().item()
    return (a - b).norm().item() / d if d > 0 else (a - b).norm().item()


def wants_graph(case: dict, device) -> bool:
    """Whether `case` is also timed under CUDA-graph replay (the contract's `graph` key)."""
    if "graph" in case:
        return bool(case["graph"])
    return device.type == "cuda" and int(case["bytes"]) <= GRAPH_MAX_BYTES


def _graph_timings(timer: Timer, fns: dict, impls: list[str]) -> tuple[dict, dict]:
    timings, errors = {}, {}
    for impl in impls:
        try:
            timings[impl] = timer.graph(fns[impl])
        except Exception as exc:  # one baseline that cannot be captured must not lose the case
            errors[impl] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return timings, errors


def _time_sample(timer: Timer, fns: dict, impls: list[str], graphed: bool) -> tuple[dict, dict, dict]:
    """One sample of a case: every impl timed in turn (flushed, then under graph replay)."""
    timings = {impl: timer(fns[impl]) for impl in impls}
    graph_timings, graph_errors = _graph_timings(timer, fns, impls) if graphed else ({}, {})
    return timings, graph_timings, graph_errors


def run_cases(module, cases: list[dict], device, *, reps: int = 100, warmup: int = WARMUP,
              report: Reporter = quiet, graph: bool | None = None,
              samples: int = 1, same_size_min_bytes: int = SAME_SIZE_MIN_BYTES) -> tuple[float, list[CaseBench]]:
    """Time every case; `graph` forces graph-replay timing on (True) or off (False) for
    every case, None leaves it to each case (`wants_graph`). `samples` > 1 times each case
    that many times, each from a fresh setup (new tensors at new addresses, a new
    torch.compile baseline), so that a figure's spread between samples shows what
    placement and run-to-run noise alone move it by; the figure is their median. Cases of
    `same_size_min_bytes` or more also time a copy of their own bytes, once per sample."""
    import torch

    if reps < 1:
        raise BenchError("reps must be at least 1", code="usage")
    if samples < 1:
        raise BenchError("samples must be at least 1", code="usage")
    timer = Timer(device, reps=reps, warmup=warmup)
    copy_gbs = copy_bandwidth(timer, device, COPY_BYTES if device.type == "cuda" else 64 << 20)
    results = []
    with fresh_compiles():
        for n, case in enumerate(cases):
            report(Event("progress", case["name"], n, len(cases), stage="bench"))
            results.append(_bench_case(timer, module, case, device, graph, samples, same_size_min_bytes))
    # Measured again at the end: the report uses the larger, so no drift makes
    # the kernel look closer to the ceiling than it is.
    copy_gbs = max(copy_gbs, copy_bandwidth(timer, device, COPY_BYTES if device.type == "cuda" else 64 << 20))
    return copy_gbs, results


@contextlib.contextmanager
def fresh_compiles():
    """Inductor's caches off for the run: each torch.compile baseline is generated and
    autotuned in this process, for this sample. With them on, a sample (or a later run on
    the same machine) would reuse the first one's kernel and the reduction config its
    autotuning picked, and the H200 records show that pick bimodal (torch.compile's
    fused add + RMSNorm at 64x4096 under graph replay 1.96-2.06 or 2.28-2.31 µs by run),
    so samples that share it hide half of what the baseline does."""
    import torch._inductor.config as inductor_config

    with inductor_config.patch(force_disable_caches=True):
        yield


def bench_case(timer: Timer, module, case: dict, device, samples: int) -> CaseBench:
    """One case as `run_cases` times it (what the bench worker runs per request)."""
    return _bench_case(timer, module, case, device, None, samples, SAME_SIZE_MIN_BYTES)


def _bench_case(timer: Timer, module, case: dict, device, graph: bool | None, samples: int,
                same_size_min_bytes: int) -> CaseBench:
    import torch

    impls = ["kernel", *case["baselines"]]
    graphed = graph if graph is not None else wants_graph(case, device)
    taken: list[tuple[dict, dict, dict]] = []
    copies: list[Timing] = []
    fns = previous = None
    try:
        for sample in range(samples):
            # A new torch.compile baseline per sample, for the case's own static shape:
            # dynamo would otherwise serve the last compile of the same code.
            torch._dynamo.reset()
            # Set up while the previous sample's tensors are still held, so that the
            # caching allocator cannot hand this sample the same addresses.
            fns = case["setup"](module, device)
            previous = None
            if sample == 0:
                ref = _first(fns["kernel"]())
                diffs = {b: round(_rel(_first(fns[b]()), ref), 6) for b in case["baselines"]}
                ref = None
            taken.append(_time_sample(timer, fns, impls, graphed))
            if case["bytes"] >= same_size_min_bytes:
                copies.append(copy_timing(timer, device, int(case["bytes"])))
            previous, fns = fns, None
    except Exception as exc:
        raise BenchError(f"case {case['name']} failed: {type(exc).__name__}: {exc}", code="bench-case-failed") from None
    finally:
        fns = previous = None
        if device.type == "cuda":
            torch.cuda.empty_cache()
    timings = {impl: combine_samples([t[0][impl] for t in taken]) for impl in impls}
    graph_timings = {impl: combine_samples([t[1][impl] for t in taken])
                     for impl in impls if all(impl in t[1] for t in taken)}
    graph_errors = {impl: why for t in taken for impl, why in t[2].items()}
    return CaseBench(name=case["name"], op=case["op"], group=case["group"], shape=case["shape"],
                     dtype=case["dtype"], bytes=int(case["bytes"]), timings=timings, max_rel_diff=diffs,
                     baselines=tuple(case["baselines"]), graph_timings=graph_timings, graph_errors=graph_errors,
                     same_size_copy=combine_samples(copies) if copies else None)


# A CPU-only run expected to take longer than this is refused unless asked for
# (`bench --allow-cpu`): its figures only test the harness.
CPU_LIMIT_S = 120.0


def cpu_estimate_s(module, cases: list[dict], device, *, reps: int, warmup: int) -> float | None:
    """Seconds `run_cases` would take on the CPU: the case of median size is set
    up and each callable called twice (the first call pays torch.compile and
    first-touch costs, paid again by every case); the second call's time per
    byte and callable is scaled to every case. None when the probe fails (the
    run itself then reports the case)."""
    import torch

    probe = sorted(cases, key=lambda c: int(c["bytes"]))[len(cases) // 2]
    impls = ("kernel", *probe["baselines"])
    torch._dynamo.reset()
    first = second = 0.0
    try:
        fns = probe["setup"](module, device)
        for impl in impls:
            t0 = time.perf_counter()
            fns[impl]()
            t1 = time.perf_counter()
            fns[impl]()
            first, second = first + (t1 - t0), second + (time.perf_counter() - t1)
    except Exception:  # the run reports a broken case with its own error
        return None
    once = max(first - second, 0.0) / len(impls)
    per_byte = second / len(impls) / max(int(probe["bytes"]), 1)
    calls = 2 + warmup + reps  # the output comparison, the warm-up, the timed repetitions
    return sum((1 + len(c["baselines"])) * (once + calls * per_byte * int(c["bytes"])) for c in cases)


def cpu_warning(cases: int, reps: int, estimate: float | None, limit_s: float | None, report: Reporter) -> None:
    """Say that CPU figures only test the harness, with an estimate; refuse a long run over `limit_s`."""
    import torch

    why = "a CPU variant" if torch.cuda.is_available() else "no CUDA device"
    about = "an unknown time" if estimate is None else (
        f"about {estimate / 60:.0f} min" if estimate >= 90 else f"about {estimate:.0f} s")
    what = f"{cases} case(s) x {reps} repetition(s)"
    if limit_s is not None and estimate is not None and estimate > limit_s:
        raise BenchError(f"{why}: timing {what} on the CPU would take {about}, and CPU figures are not "
                         "the kernel's (host clock, no L2 flush)", code="bench-cpu-only",
                         hint="run on a GPU host; to try the harness here, narrow the run "
                              "(--only NAME --reps 3) or pass --allow-cpu")
    report(Event("warning", f"{why}: timing {what} on the CPU ({about}); the figures test the "
                            "harness, they are not the kernel's", stage="bench"))


def _cpu_gate(module, cases: list[dict], device, *, reps: int, warmup: int, limit_s: float | None,
              report: Reporter) -> None:
    cpu_warning(len(cases), reps, cpu_estimate_s(module, cases, device, reps=reps, warmup=warmup), limit_s, report)


def device_of(backend: str):
    """(the torch device a variant of `backend` runs on here, its name for the report)."""
    import torch

    if backend == "cuda":
        if not torch.cuda.is_available():
            raise BenchError("the host's variant is a CUDA build but no CUDA device is visible", code="no-cuda-device")
        device = torch.device("cuda")
        return device, torch.cuda.get_device_name(device)
    return torch.device("cpu"), f"cpu ({platform.processor() or platform.machine()})"


def only_cases(cases: list[dict], only: str | None) -> list[dict]:
    if not only:
        return cases
    kept = [c for c in cases if only in c["name"]]
    if not kept:
        raise BenchError(f"no case name contains {only!r}", code="bench-no-case-matches")
    return kept


def recorded_command(argv: list[str], kernel: "Kernel | None") -> str:
    """The command a record keeps (`python -m pipeline bench ...`, from the verb on), with
    paths relative to the project: the card renders it, and a record taken on a rented
    machine must not carry that machine's directories (pipeline.portable_paths)."""
    if "bench" not in argv:
        return ""
    root = None if kernel is None else kernel.workspace.root if kernel.workspace is not None else kernel.root
    roots = {} if root is None else {Path(root): "", Path(root).resolve(): ""}
    return "python -m pipeline " + portable_command(argv[argv.index("bench"):], roots)


def method_record(device, *, reps: int, warmup: int, samples: int) -> dict:
    """How `run_cases` timed a record, as the record says it (bench_report reads "torch_compile"
    and "samples" to choose which figures the targets compare)."""
    method = {
        "timer": "cuda events" if device.type == "cuda" else "host perf_counter",
        "statistic": "median", "reps": reps, "warmup": warmup,
        "samples": samples,
        "torch_compile": "compiled and autotuned afresh for every case and sample (dynamo reset, Inductor caches off)",
        "l2_flush": "read (sum) a buffer of max(8 x L2, 512 MiB) before every repetition, leaving the L2 clean" if device.type == "cuda" else None,
        "copy": "device-to-device copy of 1 GiB, bytes read + written, max of start and end of run",
        "same_size_copy": (f"cases of {SAME_SIZE_MIN_BYTES >> 20} MiB or more: a device copy moving the case's "
                           "bytes (half read, half written), timed like the case; same_size_copy_fraction is "
                           "its time over each implementation's"),
    }
    if samples > 1:
        method["sampling"] = (f"{samples} samples per case, each from a fresh setup (new tensors, a new "
                              "torch.compile baseline), every implementation timed in turn; a figure is the "
                              "median of the samples' medians, spread_us their range")
    if device.type == "cuda":
        method["graph"] = (f"cases up to {GRAPH_MAX_BYTES >> 20} MiB (or marked graph=True): {GRAPH_CALLS} calls "
                           "captured back to back in one CUDA graph, median replay time over the calls, no flush")
    return method
