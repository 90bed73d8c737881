"""Benchmark the host's variant of a built kernel against PyTorch.

`run_bench(build_dir, project_root)` loads the variant the way `smoke` does
(kernels.get_local_kernel), imports the project's `benchmarks/bench_cases.py`
and times every case and baseline on the device.

The case contract (`kernels-src/<name>/benchmarks/bench_cases.py`)
-------------------------------------------------------------------
One function::

    def bench_cases() -> list[dict]

Each dict:

    name       str, unique: "rms_norm/8192x4096"
    op         str: a label for the op (tables and plots group by it)
    group      str: the shape set ("Qwen3-8B")
    shape      str: "8192x4096"
    dtype      str: "bfloat16"
    bytes      int: the fewest bytes the op must move through device memory
               (every input read once, every output written once); the
               bandwidth figures are bytes / median time
    setup      setup(kernel_module, device) -> dict[str, callable]: allocates
               the inputs and returns zero-argument callables: "kernel" (the
               kernel under test) and one per baseline. Each returns its
               output (a tensor or a tuple whose first item is the output
               compared); create torch.compile'd functions here
    baselines  tuple[str, ...]: the keys of the baselines, in table order

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
"""

from __future__ import annotations

import json
import math
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.casefile import load_case_list
from pipeline.errors import BenchError, SmokeError
from pipeline.events import Event, Reporter, quiet
from pipeline.smoke import load_variant

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.bundle import Bundle
    from pipeline.workspace import Kernel

CASES_FILE = Path("benchmarks") / "bench_cases.py"
COPY_BYTES = 1 << 30


@dataclass(frozen=True)
class Timing:
    median_us: float
    min_us: float
    p90_us: float
    reps: int


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

    def speedup(self, baseline: str) -> float:
        return self.timings[baseline].median_us / self.timings["kernel"].median_us

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
        return {
            "kernel": self.kernel, "kernel_id": self.kernel_id, "variant": self.variant, "device": self.device,
            "torch": self.torch, "command": self.command, "created": self.created, "method": self.method,
            "copy_bandwidth_gbs": _sig(self.copy_gbs), "results": rows,
        }


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


# --------------------------------------------------------------------------


def load_cases(path: Path) -> list[dict]:
    """The cases of a case file (a kernel's `benchmarks/bench_cases.py`, or the project holding it)."""
    path = Path(path)
    if path.is_dir() or not path.suffix:
        path = path / CASES_FILE
    if not path.is_file():
        raise BenchError(f"no such case file: {path}", path=str(path), code="bench-cases-missing",
                         hint="see pipeline/bench.py for the case contract")
    cases = load_case_list(path, "bench_cases", error=BenchError, code="bench-cases-failed")
    problems = []
    for i, case in enumerate(cases):
        for key in ("name", "op", "group", "shape", "dtype", "bytes", "setup", "baselines"):
            if key not in case:
                problems.append(f"case {i} has no {key!r}")
    if problems or not cases:
        raise BenchError("the case file does not follow the contract: " + ("; ".join(problems) or "no cases"),
                         path=str(path), code="bench-cases-invalid", hint="see pipeline/bench.py's docstring")
    return cases


class Timer:
    """Median-of-reps timing: CUDA events with an L2 flush, or a host clock on CPU."""

    def __init__(self, device, *, reps: int, warmup: int):
        import torch

        self.device = device
        self.reps = reps
        self.warmup = warmup
        self.flush = None
        if device.type == "cuda":
            l2 = torch.cuda.get_device_properties(device).L2_cache_size
            # Several times the L2, and long enough (~0.1 ms of reads on an
            # H200) that the host has queued the timed call before it ends.
            n = max(8 * l2, 512 << 20)
            self.flush = torch.ones(n // 4, dtype=torch.int32, device=device)
            self._flush_sink = torch.empty((), dtype=torch.int64, device=device)

    def __call__(self, fn) -> Timing:
        import torch

        for _ in range(self.warmup):
            fn()
        times: list[float] = []
        if self.device.type == "cuda":
            torch.cuda.synchronize()
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            for i in range(self.reps):
                # Flush by *reading*: the L2 is left holding clean lines. A
                # writing flush (zero_) leaves up to a whole L2 of dirty lines
                # that the timed call must write back first — ~50 MB of extra
                # traffic charged to a 134 MB kernel, but only ~5 % to the 1 GiB
                # copy that sets the ceiling, which skews every fraction.
                torch.sum(self.flush, dim=0, out=self._flush_sink)
                starts[i].record()
                fn()
                ends[i].record()
            torch.cuda.synchronize()
            times = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]
        else:
            for _ in range(self.reps):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e6)
        times.sort()
        return Timing(median_us=statistics.median(times), min_us=times[0],
                      p90_us=times[min(len(times) - 1, int(0.9 * len(times)))], reps=len(times))


def copy_bandwidth(timer: Timer, device, nbytes: int = COPY_BYTES) -> float:
    """Device copy bandwidth in GB/s, counting bytes read plus bytes written."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    t = timer(lambda: dst.copy_(src))
    del src, dst
    return 2 * nbytes / (t.median_us * 1e3)


def _first(value):
    return value[0] if isinstance(value, (tuple, list)) else value


def _rel(a, b) -> float:
    import torch

    a = a.detach().double()
    b = b.detach().double()
    d = b.norm().item()
    return (a - b).norm().item() / d if d > 0 else (a - b).norm().item()


def run_cases(module, cases: list[dict], device, *, reps: int = 100, warmup: int = 10,
              report: Reporter = quiet) -> tuple[float, list[CaseBench]]:
    import torch

    if reps < 1:
        raise BenchError("reps must be at least 1", code="usage")
    timer = Timer(device, reps=reps, warmup=warmup)
    copy_gbs = copy_bandwidth(timer, device, COPY_BYTES if device.type == "cuda" else 64 << 20)
    results = []
    for n, case in enumerate(cases):
        report(Event("progress", case["name"], n, len(cases), stage="bench"))
        torch._dynamo.reset()  # each case's torch.compile baseline compiles for its own static shape
        try:
            fns = case["setup"](module, device)
            ref = _first(fns["kernel"]())
            diffs = {b: round(_rel(_first(fns[b]()), ref), 6) for b in case["baselines"]}
            timings = {"kernel": timer(fns["kernel"])}
            for b in case["baselines"]:
                timings[b] = timer(fns[b])
        except Exception as exc:
            raise BenchError(f"case {case['name']} failed: {type(exc).__name__}: {exc}", code="bench-case-failed") from None
        finally:
            fns = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
        results.append(CaseBench(name=case["name"], op=case["op"], group=case["group"], shape=case["shape"],
                                 dtype=case["dtype"], bytes=int(case["bytes"]), timings=timings, max_rel_diff=diffs,
                                 baselines=tuple(case["baselines"])))
    # Measured again at the end: the report uses the larger, so no drift makes
    # the kernel look closer to the ceiling than it is.
    copy_gbs = max(copy_gbs, copy_bandwidth(timer, device, COPY_BYTES if device.type == "cuda" else 64 << 20))
    return copy_gbs, results


def run_bench(bundle: "Bundle", kernel: "Kernel | None", *, reps: int = 100, warmup: int = 10,
              only: str | None = None, cases: list[dict] | None = None, report: Reporter = quiet,
              command: str = "") -> BenchReport:
    """Time the host's variant of `bundle` on the resolved kernel's bench cases."""
    import torch

    try:
        loaded = load_variant(bundle.root)
    except SmokeError as exc:
        raise BenchError(exc.message, hint=exc.hint, path=exc.path, code=exc.code) from None
    if cases is None:
        if kernel is None or kernel.bench_cases is None:
            where = kernel.shown if kernel is not None else str(bundle.root)
            raise BenchError(f"no {CASES_FILE} for this build", path=where, code="bench-cases-missing",
                             hint="pass the kernel project with --kernel PATH; see the case contract in pipeline/bench.py")
        cases = load_cases(kernel.bench_cases)
    if only:
        cases = [c for c in cases if only in c["name"]]
        if not cases:
            raise BenchError(f"no case name contains {only!r}", code="bench-no-case-matches")
    if loaded.backend == "cuda":
        if not torch.cuda.is_available():
            raise BenchError("the host's variant is a CUDA build but no CUDA device is visible", code="no-cuda-device")
        device = torch.device("cuda")
        device_name = torch.cuda.get_device_name(device)
    else:
        device = torch.device("cpu")
        device_name = f"cpu ({platform.processor() or platform.machine()})"
    copy_gbs, results = run_cases(loaded.module, cases, device, reps=reps, warmup=warmup, report=report)
    method = {
        "timer": "cuda events" if device.type == "cuda" else "host perf_counter",
        "statistic": "median", "reps": reps, "warmup": warmup,
        "l2_flush": "read (sum) a buffer of max(8 x L2, 512 MiB) before every repetition, leaving the L2 clean" if device.type == "cuda" else None,
        "copy": "device-to-device copy of 1 GiB, bytes read + written, max of start and end of run",
    }
    return BenchReport(kernel=loaded.kernel_name, kernel_id=loaded.kernel_id, variant=loaded.variant,
                       device=device_name, torch=torch.__version__, copy_gbs=copy_gbs, method=method,
                       cases=tuple(results), command=command,
                       created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))


# --------------------------------------------------------------------------
# Presenting results (from the JSON, so the card can be made without a GPU)


def _load(results_json) -> dict:
    path = None
    if isinstance(results_json, dict):
        data = results_json
    else:
        path = Path(results_json)
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise BenchError(f"cannot read benchmark results: {exc}", path=str(path), code="bench-results-unreadable") from None
    missing = [k for k in ("device", "torch", "variant", "method", "copy_bandwidth_gbs", "results") if k not in data]
    if missing or not isinstance(data.get("results"), list):
        raise BenchError(f"not a `pipeline bench` results file (missing {', '.join(missing) or 'results'})",
                         path=str(path) if path else None, code="bench-results-invalid")
    return data


def markdown_table(results_json) -> str:
    """A Markdown section for the kernel card: one table per op."""
    data = _load(results_json)
    lines = [
        f"Measured on {data['device']} (torch {data['torch']}, variant `{data['variant']}`), "
        f"{data['results'][0]['dtype'] if data['results'] else ''}; median of {data['method']['reps']} "
        f"repetitions timed with {data['method']['timer']}"
        f"{', L2 flushed between repetitions' if data['method'].get('l2_flush') else ''}. "
        f"Device copy bandwidth in the same run: {data['copy_bandwidth_gbs']:.0f} GB/s.",
        "",
    ]
    ops: dict[str, list[dict]] = {}
    for row in data["results"]:
        ops.setdefault(row["op"], []).append(row)
    for op, rows in ops.items():
        baselines = rows[0]["baselines"]
        head = ["set", "shape", "kernel (µs)", "of copy BW"] + [f"{b} (µs)" for b in baselines] + \
               [f"× vs {b}" for b in baselines]
        lines.append(f"**{op}**")
        lines.append("")
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
        for row in rows:
            t = row["times_us"]
            cells = [row["group"], row["shape"], f"{t['kernel']:.1f}", f"{row['copy_fraction']['kernel']:.2f}"]
            cells += [f"{t[b]:.1f}" for b in baselines]
            cells += [f"{row['speedup'][b]:.2f}" for b in baselines]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    if data.get("command"):
        lines.append(f"Produced by `{data['command']}`.")
    return "\n".join(lines).rstrip() + "\n"


def plot(results_json, out_png: Path) -> Path:
    """Speed-up over each baseline and fraction of copy bandwidth, by shape."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = _load(results_json)
    rows = data["results"]
    ops = list(dict.fromkeys(r["op"] for r in rows))
    fig, axes = plt.subplots(2, len(ops), figsize=(7 * len(ops), 8), squeeze=False)
    for col, op in enumerate(ops):
        sel = [r for r in rows if r["op"] == op]
        labels = [f"{r['group']}\n{r['shape']}" for r in sel]
        baselines = sel[0]["baselines"]
        width = 0.8 / max(1, len(baselines))
        ax = axes[0][col]
        for i, b in enumerate(baselines):
            xs = [k + (i - (len(baselines) - 1) / 2) * width for k in range(len(sel))]
            ax.bar(xs, [r["speedup"][b] for r in sel], width, label=f"vs {b}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_title(f"{op}: speed-up of the kernel")
        ax.set_ylabel("baseline time / kernel time")
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels(labels, rotation=60, fontsize=7)
        ax.legend(fontsize=8)
        ax = axes[1][col]
        impls = ["kernel", *baselines]
        width = 0.8 / len(impls)
        for i, impl in enumerate(impls):
            xs = [k + (i - (len(impls) - 1) / 2) * width for k in range(len(sel))]
            ax.bar(xs, [r["copy_fraction"][impl] for r in sel], width, label=impl)
        ax.axhline(0.9, color="red", linewidth=0.8, linestyle="--", label="0.90")
        ax.set_ylim(0, 1.1)
        ax.set_title(f"{op}: fraction of copy bandwidth ({data['copy_bandwidth_gbs']:.0f} GB/s)")
        ax.set_xticks(range(len(sel)))
        ax.set_xticklabels(labels, rotation=60, fontsize=7)
        ax.legend(fontsize=8)
    fig.suptitle(f"{data['kernel']} on {data['device']} ({data['variant']})")
    fig.tight_layout()
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_png, dpi=110)
    plt.close(fig)
    return out_png
