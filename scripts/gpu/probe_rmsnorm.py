"""Where rmsnorm's time goes at the Qwen3 sizes on the GPU (kernels-src/rmsnorm/benchmarks/NOTES.md).

Three views of the same calls, bf16:

* events: the Timer `pipeline bench` uses (read flush, CUDA events, median);
* kernel-only: the device's own start/end of each kernel (CUPTI, through
  torch.profiler) after the same flush, so launch latency and event overhead
  are out;
* back-to-back: per-call time of a queue of calls over inputs rotated through
  more memory than the L2 (the host queues everything behind a sleep first).

Beside the kernel: an empty kernel (the floor of one timed launch), a copy of
the same bytes, and the 1 GiB copy that sets the bench's ceiling.

    python3 scripts/gpu/probe_rmsnorm.py BUILD_DIR [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pipeline.bench import Timer  # noqa: E402


def kernel_only_us(fn, flush, sink, reps: int = 20) -> float:
    """Median over reps of the summed device time of the kernels `fn` launches."""
    from torch.profiler import ProfilerActivity, profile

    def names_of(run):
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
            torch.cuda.synchronize()
        return [(e.name, e.time_range.elapsed_us()) for e in prof.events()
                if e.device_type == torch.autograd.DeviceType.CUDA]

    flush_names = {n for n, _ in names_of(lambda: torch.sum(flush, dim=0, out=sink))}
    per_rep = []
    for _ in range(reps):
        evs = names_of(lambda: (torch.sum(flush, dim=0, out=sink), fn()))
        per_rep.append(sum(d for n, d in evs if n not in flush_names))
    return statistics.median(per_rep)


def back_to_back_us(make_sets, fn, l2_bytes: int, set_bytes: int, reps: int = 20) -> float:
    n_sets = max(3, -(-4 * l2_bytes // max(set_bytes, 1)))
    sets = [make_sets() for _ in range(n_sets)]
    calls = max(n_sets, 24)
    for s in sets:
        fn(*s)
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)  # ~1 ms: the host queues every call before `a` fires
        a.record()
        for i in range(calls):
            fn(*sets[i % n_sets])
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / calls)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("build_dir")
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--ncu", action="store_true", help="only launch the kernels, twice per shape, for ncu")
    args = ap.parse_args()
    import kernels

    mod = kernels.get_local_kernel(Path(args.build_dir))
    dev = torch.device("cuda")
    if args.ncu:
        for rows, hidden in ((2048, 4096), (8192, 4096), (32768, 4096)):
            x = torch.randn(rows, hidden, device=dev, dtype=torch.bfloat16)
            w = torch.randn(hidden, device=dev, dtype=torch.bfloat16)
            for _ in range(2):
                mod.rms_norm(x, w, 1e-6)
                mod.fused_add_rms_norm(x, torch.randn_like(x), w, 1e-6)
        torch.cuda.synchronize()
        return 0
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    timer = Timer(dev, reps=args.reps, warmup=10)
    rows_out = []

    def record(label, nbytes, ev, ko, b2b):
        row = {"what": label, "bytes": nbytes, "events_us": round(ev, 2), "kernel_only_us": round(ko, 2),
               "back_to_back_us": round(b2b, 2)}
        rows_out.append(row)
        print(f"{label:<34} {nbytes / 1e6:8.1f} MB  events {ev:7.2f} us  kernel-only {ko:7.2f} us  "
              f"back-to-back {b2b:7.2f} us", flush=True)

    empty = lambda: torch.cuda._sleep(0)  # noqa: E731
    record("empty kernel", 0, timer(empty).median_us, kernel_only_us(empty, timer.flush, timer._flush_sink),
           back_to_back_us(lambda: (), lambda: torch.cuda._sleep(0), l2, 1 << 40))

    def copy_case(nbytes):
        src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device=dev).normal_()
        dst = torch.empty_like(src)
        fn = lambda: dst.copy_(src)  # noqa: E731
        mk = lambda: (torch.empty_like(src).normal_(), torch.empty_like(src))  # noqa: E731
        record(f"copy {nbytes >> 20} MiB", 2 * nbytes, timer(fn).median_us,
               kernel_only_us(fn, timer.flush, timer._flush_sink),
               back_to_back_us(mk, lambda s, d: d.copy_(s), l2, 2 * nbytes))

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels-src" / "rmsnorm" / "benchmarks"))
    from bench_cases import eager_rms_norm  # the bench's own torch.compile baseline

    for rows, hidden in ((2048, 4096), (4096, 2048), (8192, 4096), (32768, 4096)):
        n = rows * hidden
        big = rows * hidden >= 8192 * 4096
        if big:
            copy_case(n * 2)
        x = torch.randn(rows, hidden, device=dev, dtype=torch.bfloat16)
        r = torch.randn_like(x)
        w = torch.randn(hidden, device=dev, dtype=torch.bfloat16)
        out, rout = torch.empty_like(x), torch.empty_like(x)
        torch._dynamo.reset()
        compiled = torch.compile(eager_rms_norm, dynamic=False, fullgraph=True)
        plain = 2 * n * 2 + hidden * 2
        contenders = [
            ("rms_norm", lambda xi, oi: mod.rms_norm(xi, w, 1e-6, out=oi)),
            ("F.rms_norm", lambda xi, oi: F.rms_norm(xi, (hidden,), w, 1e-6)),
            ("torch.compile", lambda xi, oi: compiled(xi, w, 1e-6)),
        ]
        for label, f in contenders:
            one = lambda f=f: f(x, out)  # noqa: E731
            record(f"{label} {rows}x{hidden}", plain, timer(one).median_us,
                   kernel_only_us(one, timer.flush, timer._flush_sink),
                   back_to_back_us(lambda: (torch.randn_like(x), torch.empty_like(x)), f, l2, 2 * n * 2))
        if big:
            fu = lambda: mod.fused_add_rms_norm(x, r, w, 1e-6, out=out, residual_out=rout)  # noqa: E731
            record(f"fused_add_rms_norm {rows}x{hidden}", 4 * n * 2 + hidden * 2, timer(fu).median_us,
                   kernel_only_us(fu, timer.flush, timer._flush_sink),
                   back_to_back_us(lambda: (torch.randn_like(x), torch.randn_like(x), torch.empty_like(x),
                                            torch.empty_like(x)),
                                   lambda xi, ri, oi, so: mod.fused_add_rms_norm(xi, ri, w, 1e-6, out=oi,
                                                                                 residual_out=so), l2, 4 * n * 2))
        torch.cuda.empty_cache()
    copy_case(1 << 30)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
                                               "l2_bytes": l2, "rows": rows_out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
