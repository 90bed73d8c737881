"""Shapes outside the benchmark, timed like `pipeline bench` times its cases: does a kernel's
launch rule hold where nobody tuned it?

Every kernel's rule was tuned on the shapes of its `benchmarks/bench_cases.py`; users run
others (Qwen2/Qwen3's smaller hidden sizes, Gemma's head width 256, batched decode, other
diffusion transformers). This script builds such cases with the kernel's own case builders
(same inputs, same baselines, torch.compile compiled afresh per case) and times them with
`pipeline.bench.run_cases`, then prints the kernel's figure against the fastest baseline and
every shape where a baseline wins, with the margin. A loss of a few per cent says the rule is
near its limit there; a loss of 1.5x says a launch shape is wrong for that size.

    python3 scripts/gpu/more_shapes.py rmsnorm /tmp/build-rmsnorm [--reps 50] [--samples 1] [--out JSON]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pipeline import bench, bench_report  # noqa: E402
from pipeline.casefile import import_case_function  # noqa: E402
from pipeline.smoke import load_variant  # noqa: E402


def _builder(kernel: str, name: str):
    path = REPO / "kernels-src" / kernel / bench.CASES_FILE
    return import_case_function(path, name, error=bench.BenchError, code="bench-cases-failed")


def rmsnorm_cases(dtype: str) -> list[dict]:
    plain, fused = _builder("rmsnorm", "_rms_norm_case"), _builder("rmsnorm", "_fused_case")
    # Qwen2-0.5B 896, Qwen2-1.5B 1536, Qwen3-4B 2560, Qwen2-7B 3584, 6144 (Mixtral-8x22B),
    # 12288 (GPT-3-size, Grok): decode, a batch, prefill.
    cases = [plain("more", rows, hidden, dtype) for hidden in (896, 1536, 2560, 3584, 6144, 12288)
             for rows in (1, 64, 2048, 16384)]
    # Per-head norms of head width 256 (Gemma-2/3) and 96 (Phi-3-mini).
    cases += [plain("more per-head", rows, hidden, dtype) for rows, hidden in ((65536, 256), (65536, 96))]
    cases += [fused("more", rows, hidden, dtype) for hidden in (2560, 3584, 7168) for rows in (1, 2048)]
    return cases


def geglu_cases(dtype: str) -> list[dict]:
    case = _builder("geglu", "_case")
    # Gemma-2-2B (9216) and Gemma-3-27B (21504) MLPs, gate first; diffusers' GEGLU at 10240 wide.
    cases = [case("more", rows, inner, "tanh", dtype, gate_first=True) for inner in (9216, 21504)
             for rows in (1, 64, 4096)]
    return cases + [case("more", 8192, 10240, "none", dtype)]


def rope_cases(dtype: str) -> list[dict]:
    text, ltx = _builder("rope", "_text_case"), _builder("rope", "_ltx_case")
    # Qwen3-32B q (64 heads), head width 64 (Llama-3.2-1B: 32 q heads of 64), a batch of 32 decode steps.
    return [text(2048, dtype, heads=64), text(2048, dtype, head_dim=64), text(1, dtype, batch=32),
            text(1, dtype, heads=8, batch=64), ltx(1, 1536, dtype)]


def adaln_cases(dtype: str) -> list[dict]:
    case = _builder("adaln", "_case")
    # Flux/SD3-like widths (3072, 1536) and a small DiT.
    return [case("more", "rms", 1, 4096, 3072, dtype), case("more", "layer", 2, 4096, 1536, dtype),
            case("more", "layer", 16, 256, 384, dtype)]


def _print_row(c: bench.CaseBench) -> None:
    t = {k: v.median_us for k, v in c.timings.items()}
    best = min(c.baselines, key=lambda b: t[b])
    g = {k: v.median_us for k, v in c.graph_timings.items()}
    graph = f"{g['kernel']:7.2f} {g.get('torch.compile', float('nan')):7.2f}" if "kernel" in g else ""
    print(f"{c.name:<44} {t['kernel']:9.2f} {best:>14} {t[best]:9.2f} {t[best] / t['kernel']:6.2f} | {graph}", flush=True)


CASES = {"rmsnorm": rmsnorm_cases, "geglu": geglu_cases, "rope": rope_cases, "adaln": adaln_cases}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", choices=sorted(CASES))
    ap.add_argument("build", type=Path)
    ap.add_argument("--dtype", default="bfloat16", choices=bench.DTYPES)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--samples", type=int, default=1)
    ap.add_argument("--only", default=None, help="only cases whose name contains this")
    ap.add_argument("--out", type=Path, default=None, help="write the record (pipeline bench's JSON) here")
    args = ap.parse_args()
    import torch

    cases = CASES[args.kernel](args.dtype)
    if problems := bench.case_problems(cases, args.dtype):
        raise SystemExit("more_shapes: " + "; ".join(problems))
    if args.only:
        cases = [c for c in cases if args.only in c["name"]]
    loaded = load_variant(args.build)
    device = torch.device("cuda" if loaded.backend == "cuda" else "cpu")
    # One case at a time, each printed as it is timed: a run cut off by its deadline still says something.
    copy_gbs, results = 0.0, []
    print(f"{'case':<44} {'kernel':>9} {'best baseline':>24} {'x':>6} | graph: {'kernel':>7} {'compile':>7}", flush=True)
    for case in cases:
        gbs, (result,) = bench.run_cases(loaded.module, [case], device, reps=args.reps, warmup=bench.WARMUP,
                                         samples=args.samples)
        copy_gbs = max(copy_gbs, gbs)
        results.append(result)
        _print_row(result)
    report = bench.BenchReport(
        kernel=loaded.kernel_name, kernel_id=loaded.kernel_id, variant=loaded.variant,
        device=torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu", torch=torch.__version__,
        copy_gbs=copy_gbs, cases=tuple(results), command=" ".join(["python3", *sys.argv]),
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        method=bench.method_record(device, reps=args.reps, warmup=bench.WARMUP, samples=args.samples))
    data = report.to_json()
    if args.out:
        args.out.write_text(json.dumps(data, indent=1) + "\n")
    misses = [m for m in bench_report.target_misses(data) if "of copy bandwidth" not in m]
    print(f"{len(misses)} figures where a baseline is faster:" if misses else "the kernel is ahead everywhere")
    for line in misses:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
