"""Launch-shape sweep: one tuning build of a kernel, every candidate configuration of
the shapes that decide its rules, in one process.

A tuning build is the kernel project with scripts/gpu/tune/<kernel>.patch applied
(`python scripts/gpu/run.py sweep --set NAME` makes one): its glue then reads the
configuration to launch from an environment variable on every call (RMSNORM_CONFIG,
ADALN_CONFIG, GEGLU_CONFIG; the formats are in each patch). The shipped build has no
such override. Each candidate is timed like `pipeline bench` times (the same
Timer: L2 read-flush before each repetition, CUDA events, median; graph replay
for cases of at most 8 MiB) and its output is compared with the rule's
default, so a configuration that computes something else is flagged, not timed.

    python3 scripts/gpu/sweep.py rmsnorm /tmp/build-tune-rmsnorm [--reps 100] [--json OUT]

Older sets (and the knobs they timed) are in git history: `git log -S rmsnorm-opq -- scripts/gpu/sweep.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # more_shapes, when imported from elsewhere

from pipeline import bench, bench_report  # noqa: E402
from pipeline.smoke import load_variant  # noqa: E402

import more_shapes  # noqa: E402  (scripts/gpu, beside this file)

SMALL = [f"6,{v},0,0,{r},0" for v, r in ((1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1))] + ["3,4,0,0,0,0", "0,0,0,0,0,0"]
DECODE = ["0,0,0,0,0,0", "7,0,0,0,0,2", "7,0,0,0,0,4", "7,0,0,0,0,8"]
WIDE = ["0,4,0,0,0,0", "0,8,0,0,0,0", "3,8,0,0,0,0", "3,16,0,0,0,0"]
# kernel -> (environment variable, {case name: [configurations]}); "" is the rule's choice.
SWEEPS = {
    # 2026-12-07 (thirteenth session), prepared, not run yet: adaln's LayerNorm rows of 384 (48 packs),
    # 10-15 % behind torch.compile in more_shapes.py on an H100 (7.84 | 3.71 against 7.09 | 3.21 us;
    # kernels-src/adaln/benchmarks/results/archive/v41-h100-more-shapes.txt at commit c1004d6). The rule
    # gives 8 lanes of 6 packs, 16 rows per 128-thread block; fields vpt, lanes per row, rows per block.
    "adaln-more": ("ADALN_CONFIG", {
        "adaln/layer/16x256x384": ["6,8,16", "6,8,32", "6,8,8", "4,16,8", "4,16,16", "2,32,4", "2,32,8",
                                   "1,64,2", "1,64,4"],
    }),
    # 2026-12-07 (thirteenth session), from more_shapes.py on an H100 (archive/v41-h100-more-shapes.*
    # at commit c1004d6):
    # the shapes outside the benchmark where torch.compile is ahead. Hidden 896 (112 vectors, Qwen2-0.5B)
    # is 10 % behind at 16384 rows (rows_async, 28 of 32 lanes) and 0.16-0.27 us under graph replay at 1
    # and 64 rows (rows_reg<4>: 4 rows of 28 busy lanes per block); 1536 (192 vectors) at 1 and 64 rows;
    # 12288 (1536 vectors) 1-3 % from 2048 rows; per-head rows of 96 and 256 by 1-2 %. Every launch
    # kind that can take the row, against the rule, torch.compile in the same process.
    "rmsnorm-more": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["0,4,0,0,0,0", "0,2,0,0,0,0", "0,1,0,0,0,0", "8,1,0,0,0,0", "3,4,0,0,0,0",
                             "3,4,0,1,0,0", "6,4,0,0,1,0", "0,4,0,8,0,0"]
           for s in ("16384x896", "64x896", "1x896", "2048x896")},
        **{f"rms_norm/{s}": ["0,4,0,0,0,0", "0,2,0,0,0,0", "0,1,0,0,0,0", "8,1,0,0,0,0"]
           for s in ("64x1536", "1x1536")},
        **{f"rms_norm/{s}": ["0,8,0,0,0,0", "0,4,0,0,0,0", "3,16,0,0,0,0", "7,0,0,0,0,2", "1,0,512,0,0,0"]
           for s in ("2048x12288", "16384x12288")},
        "rms_norm/65536x96": ["6,1,0,0,1,0", "6,1,0,0,4,0", "6,2,0,0,2,0", "6,4,0,0,1,0", "6,4,0,0,2,0"],
        "rms_norm/65536x256": ["6,1,0,0,1,0", "6,1,0,0,4,0", "6,2,0,0,2,0", "6,2,0,0,4,0", "6,4,0,0,2,0"],
    }),
    "rmsnorm": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": SMALL for s in ("262144x128", "70000x128", "65536x128", "262144x64", "65536x64",
                                             "2048x128")},
        **{f"rms_norm/{s}": DECODE for s in ("1x4096", "8x4096", "64x4096", "1x8192", "64x8192", "1x16384",
                                             "64x16384", "64x7168")},
        **{f"fused_add_rms_norm/{s}": DECODE for s in ("1x4096", "64x4096")},
        **{f"rms_norm/{s}": WIDE for s in ("8192x7168", "2048x7168", "8192x5120", "4096x8192", "2048x16384")},
        "rms_norm/512x4096": ["0,2,0,0,0,0", "0,4,0,0,0,0", "0,1,0,0,0,0", "3,4,0,0,0,0"],
    }),
    "adaln": ("ADALN_CONFIG", {
        **{f"adaln/rms/{s}": ["8,32,4", "8,32,8", "4,64,2", "4,64,4", "2,128,1", "8,32,2"]
           for s in ("1x6144x2048", "2x16384x2048")},
        **{f"adaln/layer/{s}": ["6,32,4", "6,32,8", "4,64,2", "2,128,1", "8,32,4", "6,32,2"]
           for s in ("2x4096x1152", "8x4096x1152")},
    }),
    "geglu": ("GEGLU_CONFIG", {
        **{f"geglu/{s}": ["1,128,0", "1,256,0", "2,128,0", "2,256,0", "4,128,0", "4,256,0", "0,0,1"]
           for s in ("none/4096x16384", "none/16384x16384", "tanh/4096x16384", "tanh/gate-first/2048x28672")},
        **{f"geglu/{s}": ["1,128,0", "1,64,0", "2,128,0", "2,256,0", "0,0,1"]
           for s in ("tanh/gate-first/1x28672", "tanh/gate-first/64x28672")},
    }),
}


# Sweep sets timed in another dtype than the cases' default (bfloat16).
SWEEP_DTYPES: dict[str, str] = {}

# Sweep sets whose cases also time SWEEP_BASELINE in the same process (a row "torch.compile"), so
# that each configuration is read against a figure of the same call.
SWEEP_BASELINE = "torch.compile"
SWEEPS_WITH_BASELINE = {"rmsnorm-more", "adaln-more"}


def project_of(sweep_set: str) -> str:
    """The kernel project a sweep set times: its name up to a digit or a dash (rmsnorm3, adaln-fp32)."""
    name = sweep_set.split("-")[0]
    return name.rstrip("0123456789")


def sweep_cases(sweep_set: str) -> dict[str, dict]:
    """The cases a sweep set may name, by name: its project's bench cases, then those of
    more_shapes.py (the shapes outside the benchmark), in the set's dtype."""
    project, dtype = project_of(sweep_set), SWEEP_DTYPES.get(sweep_set)
    cases = {c["name"]: c for c in bench.load_cases(REPO / "kernels-src" / project, dtype)}
    for c in more_shapes.CASES[project](dtype or bench_report.PRIMARY_DTYPE):
        cases.setdefault(c["name"], c)
    return cases


def _print_row(row: dict) -> None:
    print(f"{row['case']:<40} {row['config']:<16} " + (f"{row['us']:8.2f} us" if "us" in row else row["error"])
          + (f"  graph {row['graph_us']:6.2f} us" if "graph_us" in row else ""), flush=True)


def sweep(kernel: str, build: Path, reps: int) -> list[dict]:
    import torch

    var, plan = SWEEPS[kernel]
    loaded = load_variant(build)
    cases = sweep_cases(kernel)
    device = torch.device("cuda")
    timer = bench.Timer(device, reps=reps, warmup=5)
    rows = []
    for name, configs in plan.items():
        case = cases.get(name)
        if case is None:
            print(f"{name}: not a bench case", flush=True)
            continue
        os.environ.pop(var, None)
        with_baseline = kernel in SWEEPS_WITH_BASELINE
        if with_baseline:
            torch._dynamo.reset()  # a fresh torch.compile per case, as bench makes (recompile limit)
        fns = case["setup"](loaded.module, device)
        ref = bench._first(fns["kernel"]()).clone()
        graph = bench.wants_graph(case, device)

        def timed(row: dict, fn) -> None:
            row["us"] = timer(fn).median_us
            if graph:
                row["graph_us"] = timer.graph(fn).median_us

        for cfg in ["", *configs]:
            os.environ[var] = cfg
            out = bench._first(fns["kernel"]())
            diff = bench._rel(out, ref)
            row = {"case": name, "config": cfg or "rule", "bytes": case["bytes"], "rel_diff": diff}
            if diff > 1e-2 or diff != diff:
                row["error"] = "output differs from the rule's"
            else:
                timed(row, fns["kernel"])
            rows.append(row)
            _print_row(row)
        os.environ.pop(var, None)
        if with_baseline and SWEEP_BASELINE in fns:
            row = {"case": name, "config": SWEEP_BASELINE, "bytes": case["bytes"]}
            timed(row, fns[SWEEP_BASELINE])
            rows.append(row)
            _print_row(row)
        fns = None
        torch.cuda.empty_cache()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", choices=sorted(SWEEPS))
    ap.add_argument("build", type=Path)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with bench.fresh_compiles():  # torch.compile baselines generated and autotuned here, as bench does
        rows = sweep(args.kernel, args.build, args.reps)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
