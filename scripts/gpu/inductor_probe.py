"""What torch.compile runs at the bench cases a kernel still loses (issue 19): the
Triton source Inductor generates for the case's torch.compile baseline, and, for
that baseline and for our kernel, every CUDA kernel launched (name, grid, block,
registers per thread, shared memory, duration) as the PyTorch profiler records it.

    python3 scripts/gpu/inductor_probe.py rmsnorm /tmp/build-rmsnorm fused_add_rms_norm/64x4096 ... \\
        --out /tmp/results/inductor-rmsnorm [--dtype float32] [--compiles 6]

Writes OUT/<case, slashes as __>.py (the generated code, every graph of the call;
.<n>.py per compile with --compiles) and OUT/launches.json (with each callable's
graph-replay time and each Triton kernel's autotuned config); prints one line per launch. The durations are one call's,
hot caches, under the profiler: for the launch shapes, not for timing (bench does that).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pipeline import bench  # noqa: E402
from pipeline.smoke import load_variant  # noqa: E402


def autotuned_configs(skip: set[int]) -> list[dict]:
    """The config each Triton kernel of the output code loaded since `skip` (ids of modules
    seen before) runs: its autotuner's pick after the first call, and how many it chose from."""
    from torch._inductor.codecache import PyCodeCache

    picks = []
    for module in [*PyCodeCache.modules, *PyCodeCache.modules_no_attr.values()]:
        if id(module) in skip:
            continue
        skip.add(id(module))
        for name, obj in vars(module).items():
            launchers = getattr(obj, "launchers", None)
            if name.startswith("triton_") and launchers:
                config = launchers[0].config
                picks.append({"kernel": name, "kwargs": dict(config.kwargs), "num_warps": config.num_warps,
                              "num_stages": config.num_stages, "choices": len(getattr(obj, "configs", None) or ())})
    return picks


def kernel_launches(fn, calls: int = 3) -> list[dict]:
    """The CUDA kernels `fn` launches (its last call of `calls`), from a chrome trace."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text()).get("traceEvents", [])
    out = []
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        out.append({"name": e.get("name", "")[:160], "grid": a.get("grid"), "block": a.get("block"),
                    "registers": a.get("registers per thread"), "shared_memory": a.get("shared memory"),
                    "occupancy_pct": a.get("est. achieved occupancy %"), "dur_us": e.get("dur")})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", help="the project under kernels-src/")
    ap.add_argument("build", type=Path)
    ap.add_argument("cases", nargs="+", help="bench case names")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--baseline", default="torch.compile")
    ap.add_argument("--dtype", default=None, help="the cases' dtype (default: the case file's own)")
    ap.add_argument("--compiles", type=int, default=1,
                    help="compile each case's baseline this many times afresh (Inductor's autotuning pick "
                         "differs between compiles), each with its launches and its graph-replay time")
    args = ap.parse_args()

    import torch
    from torch._inductor.utils import run_and_get_code

    args.out.mkdir(parents=True, exist_ok=True)
    loaded = load_variant(args.build)
    cases = {c["name"]: c for c in bench.load_cases(REPO / "kernels-src" / args.kernel, args.dtype)}
    device = torch.device("cuda")
    timer = bench.Timer(device, reps=100, warmup=5)
    record = []
    seen_modules: set[int] = set()
    with bench.fresh_compiles():  # Inductor's caches off: each compile autotunes afresh, as bench's samples do
        for name in args.cases:
            if name not in cases:
                print(f"{name}: no such case", flush=True)
                continue
            for compile_no in range(args.compiles):
                torch._dynamo.reset()
                fns = cases[name]["setup"](loaded.module, device)
                _, codes = run_and_get_code(fns[args.baseline])
                picks = autotuned_configs(seen_modules)
                for pick in picks:
                    print(f"{name:32s} {args.baseline:14s} #{compile_no} picked {pick}", flush=True)
                suffix = f".{compile_no}" if args.compiles > 1 else ""
                (args.out / (name.replace("/", "__") + suffix + ".py")).write_text(
                    "\n\n# ---- next graph ----\n\n".join(codes))
                for who in (("kernel",) if compile_no == 0 else ()) + (args.baseline,):
                    launches = kernel_launches(fns[who])
                    graph_us = timer.graph(fns[who]).median_us
                    record.append({"case": name, "who": who, "compile": compile_no, "graph_us": graph_us,
                                   "launches": launches, **({"picked": picks} if who != "kernel" else {})})
                    for k in launches:
                        print(f"{name:32s} {who:14s} #{compile_no} graph {graph_us:6.3f} us grid={k['grid']} "
                              f"block={k['block']} regs={k['registers']} smem={k['shared_memory']} "
                              f"occ={k['occupancy_pct']} {k['dur_us']} us  {k['name'][:60]}", flush=True)
                fns = None
    (args.out / "launches.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
