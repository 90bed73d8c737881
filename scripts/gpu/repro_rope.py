"""Reproduce rope's first bench and smoke steps on the GPU, one synchronised
step at a time, printing each (device call 1 of issue 19's session: both
`pipeline smoke` and `pipeline bench` of the FastDiv build exited with status 1
and no message at the first LTX-Video case).

    python3 -X faulthandler scripts/gpu/repro_rope.py /tmp/build-rope
"""

from __future__ import annotations

import sys
import traceback

import torch

sys.path.insert(0, ".")
sys.path.insert(0, "kernels-src/rope")


def step(name, fn):
    print(f"-- {name}", flush=True)
    try:
        out = fn()
        torch.cuda.synchronize()
        print(f"   ok", flush=True)
        return out
    except BaseException:  # noqa: BLE001  (a diagnostic: print whatever it is)
        traceback.print_exc()
        sys.stdout.flush()
        raise


def main() -> None:
    from pipeline.smoke import load_variant

    mod = step("load", lambda: load_variant(sys.argv[1]).module)
    from benchmarks.bench_cases import diffusers_ltx_rope

    dev = torch.device("cuda")
    for shape in ((1, 16, 2048), (2, 60, 2048), (1, 6144, 2048)):
        x = torch.randn(*shape, device=dev, dtype=torch.bfloat16)
        ang = torch.rand(*shape[:2], shape[2] // 2, device=dev) * 6.283
        cos, sin = ang.cos().repeat_interleave(2, -1), ang.sin().repeat_interleave(2, -1)
        out = step(f"kernel {shape}", lambda: mod.apply_rotary_emb(x, cos, sin, interleaved=True))
        ref = diffusers_ltx_rope(x, cos, sin)
        print("   rel diff", ((out.double() - ref.double()).norm() / ref.double().norm()).item(), flush=True)
    q = torch.randn(1, 32, 64, 128, device=dev, dtype=torch.bfloat16)
    ang = torch.rand(1, 64, 64, device=dev)
    emb = torch.cat([ang, ang], -1)
    out = step("kernel rotate_half", lambda: mod.apply_rotary_emb(q, emb.cos().to(q.dtype)[:, None],
                                                                  emb.sin().to(q.dtype)[:, None], interleaved=False))
    compiled = torch.compile(diffusers_ltx_rope, dynamic=False, fullgraph=True)
    step("torch.compile baseline", lambda: compiled(x, cos, sin))
    print("done", flush=True)


if __name__ == "__main__":
    main()
