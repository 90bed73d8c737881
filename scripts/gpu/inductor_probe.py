"""What torch.compile runs at the bench cases a kernel still loses (issue 19): the
Triton source Inductor generates for the case's torch.compile baseline, and, for
that baseline and for our kernel, every CUDA kernel launched (name, grid, block,
registers per thread, shared memory, duration) as the PyTorch profiler records it.

    python3 scripts/gpu/inductor_probe.py rmsnorm /tmp/build-rmsnorm fused_add_rms_norm/64x4096 ... \\
        --out /tmp/results/inductor-rmsnorm [--dtype float32]

Writes OUT/<case, slashes as __>.py (the generated code, every graph of the call)
and OUT/launches.json; prints one line per launch. The durations are one call's,
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
    args = ap.parse_args()

    import torch
    from torch._inductor.utils import run_and_get_code

    args.out.mkdir(parents=True, exist_ok=True)
    loaded = load_variant(args.build)
    cases = {c["name"]: c for c in bench.load_cases(REPO / "kernels-src" / args.kernel, args.dtype)}
    device = torch.device("cuda")
    record = []
    for name in args.cases:
        if name not in cases:
            print(f"{name}: no such case", flush=True)
            continue
        torch._dynamo.reset()
        fns = cases[name]["setup"](loaded.module, device)
        _, codes = run_and_get_code(fns[args.baseline])
        (args.out / (name.replace("/", "__") + ".py")).write_text("\n\n# ---- next graph ----\n\n".join(codes))
        for who in ("kernel", args.baseline):
            launches = kernel_launches(fns[who])
            record.append({"case": name, "who": who, "launches": launches})
            for k in launches:
                print(f"{name:40s} {who:14s} grid={k['grid']} block={k['block']} regs={k['registers']} "
                      f"smem={k['shared_memory']} occ={k['occupancy_pct']} {k['dur_us']} us  {k['name'][:70]}",
                      flush=True)
    (args.out / "launches.json").write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
