"""Why one timed call reads slower under `pipeline bench`'s Timer than under the
standalone tuner (benchmarks/tune), for the same bytes (kernels-src/rmsnorm/benchmarks/NOTES.md).

Times a device copy of 134 MB (rms_norm 8192x4096 bf16: x read, out written)
five ways in one process, CUDA events around one call, median of --reps:

* bench: `pipeline.bench.Timer` as it is (sum-reduction flush of 512 MiB, every
  repetition queued before the first ends);
* bench-sync: the same, but the host waits for each repetition (as the tuner does);
* amax64-flush / max-flush: other reading flushes (`amax` of the buffer seen as
  int64, or as int32), in case the sum's own kernel is the difference;
* no-flush: hot L2, for scale.

    python3 scripts/gpu/probe_method.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pipeline.bench import Timer  # noqa: E402


def timed(fn, flush_fn, reps: int, sync_each: bool) -> float:
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if flush_fn is not None:
            flush_fn()
        starts[i].record()
        fn()
        ends[i].record()
        if sync_each:
            ends[i].synchronize()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    dev = torch.device("cuda")
    timer = Timer(dev, reps=args.reps, warmup=10)
    flush, sink = timer.flush, timer._flush_sink
    src = torch.randn(8192, 4096, device=dev, dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    copy = lambda: dst.copy_(src)  # noqa: E731
    empty = torch.empty(0, device=dev)
    nothing = lambda: empty.add_(1)  # noqa: E731  (one empty kernel)
    ways = {
        "bench": lambda fn: timer(fn).median_us,
        "bench-sync": lambda fn: timed(fn, lambda: torch.sum(flush, dim=0, out=sink), args.reps, True),
        "amax64-flush": lambda fn: timed(fn, lambda: flush.view(torch.int64).amax(), args.reps, False),
        "max-flush": lambda fn: timed(fn, lambda: flush.amax(), args.reps, False),
        "no-flush": lambda fn: timed(fn, None, args.reps, False),
    }
    out: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for way, run in ways.items():
            for what, fn in (("copy 134 MB", copy), ("empty kernel", nothing)):
                out.setdefault(way, {}).setdefault(what, []).append(round(run(fn), 3))
    for way, rows in out.items():
        print(f"{way:<11} " + "  ".join(f"{what}: {statistics.median(v):7.2f} us {v}" for what, v in rows.items()))
    if args.json:
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                         "reps": args.reps, "median_us": out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
