"""Counters for the shapes where a kernel still loses to torch.compile (issue 19):
our kernel and torch.compile's Triton kernel at the same bench case, one launch
each, inside a cudaProfilerStart/Stop range so that Nsight Compute profiles only
those (warm-up and compilation happen outside it).

    ncu --profile-from-start off --set full --csv --page details \\
        python3 scripts/gpu/ncu_probe.py rmsnorm /tmp/build-rmsnorm rms_norm/8x4096 ...

Without ncu it just runs the launches (a dry run of the script itself).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pipeline import bench  # noqa: E402
from pipeline.smoke import load_variant  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", help="the project under kernels-src/")
    ap.add_argument("build", type=Path)
    ap.add_argument("cases", nargs="+", help="bench case names")
    ap.add_argument("--contenders", default="kernel,torch.compile")
    ap.add_argument("--dtype", default=None, help="the cases' dtype (default: the case file's own)")
    args = ap.parse_args()

    import torch

    loaded = load_variant(args.build)
    cases = {c["name"]: c for c in bench.load_cases(REPO / "kernels-src" / args.kernel, args.dtype)}
    device = torch.device("cuda")
    launch = 0
    with bench.fresh_compiles():  # Inductor's caches off, as bench runs its baselines
        for name in args.cases:
            # A fresh torch.compile per case, as `pipeline bench` makes: without it the third shape in one
            # process gets a dynamic-shape kernel, not the one the bench times (2026-12-03, v34's 65536x128).
            torch._dynamo.reset()
            fns = cases[name]["setup"](loaded.module, device)
            contenders = args.contenders.split(",")
            for who in contenders:
                for _ in range(3):  # compile and warm outside the profiled range
                    fns[who]()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()  # one range per case: its compiled functions stay valid inside it
            for who in contenders:
                torch.cuda.nvtx.range_push(f"{name} {who}")
                fns[who]()
                torch.cuda.synchronize()
                torch.cuda.nvtx.range_pop()
            torch.cuda.profiler.stop()
            for who in contenders:
                print(f"launch {launch}: {name} {who}", flush=True)
                launch += 1
            fns = None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
