"""Benchmark cases for adaln, in the contract of `pipeline/bench.py`.

Shapes (bf16): LTX-Video blocks (hidden 2048, RMSNorm without weight, then
`* (1 + scale) + shift` with per-sample modulation [B, 1, 2048]; 6144 tokens
is a 121-frame 512x768 video) and DiT-XL/PixArt blocks (hidden 1152,
LayerNorm without affine). Baselines: the eager body as diffusers writes it,
and the same through torch.compile. `bench_cases(dtype)` gives the same shapes
in float16 or float32 (`pipeline bench --dtype`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

EPS = 1e-6


def eager_rms_modulate(x, scale, shift):
    # diffusers' RMSNorm (elementwise_affine=False) then LTX-Video's modulation.
    variance = x.float().pow(2).mean(-1, keepdim=True)
    h = (x.float() * torch.rsqrt(variance + EPS)).to(x.dtype)
    return h * (1 + scale) + shift


def eager_layer_modulate(x, scale, shift):
    # DiT's modulate(norm(x), shift, scale) with LayerNorm(elementwise_affine=False).
    return F.layer_norm(x, (x.shape[-1],), eps=EPS) * (1 + scale) + shift


def _case(group: str, norm: str, batch: int, tokens: int, hidden: int, dtype: str) -> dict:
    body = eager_rms_modulate if norm == "rms" else eager_layer_modulate
    scalar = getattr(torch, dtype)

    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(batch * 23 + tokens + hidden)
        x = torch.randn(batch, tokens, hidden, generator=g, device=device, dtype=scalar)
        scale = torch.randn(batch, 1, hidden, generator=g, device=device, dtype=scalar) * 0.1
        shift = torch.randn(batch, 1, hidden, generator=g, device=device, dtype=scalar)
        out = torch.empty_like(x)
        compiled = torch.compile(body, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.adaln(x, scale, shift, eps=EPS, norm=norm, out=out),
            "eager": lambda: body(x, scale, shift),
            "torch.compile": lambda: compiled(x, scale, shift),
        }

    # Read x, write out, read scale and shift once per sample.
    nbytes = 2 * batch * tokens * hidden * scalar.itemsize + 2 * batch * hidden * scalar.itemsize
    return {
        "name": f"adaln/{norm}/{batch}x{tokens}x{hidden}",
        "op": f"adaln ({'RMSNorm' if norm == 'rms' else 'LayerNorm'})",
        "group": group,
        "shape": f"{batch}x{tokens}x{hidden}",
        "dtype": dtype,
        "bytes": nbytes,
        "setup": setup,
        "baselines": ("eager", "torch.compile"),
    }


def bench_cases(dtype: str = "bfloat16") -> list[dict]:
    # LTX-Video: a 121-frame 512x768 video (6144 latent tokens), two of 16384, and
    # a short low-resolution clip (25 frames at 256x384: 4x8x12 = 384 tokens).
    cases = [_case("LTX-Video", "rms", 1, 6144, 2048, dtype), _case("LTX-Video", "rms", 2, 16384, 2048, dtype),
             _case("LTX-Video", "rms", 1, 384, 2048, dtype)]
    # PixArt at 1024 px (4096 tokens) and DiT-XL/2 at 256 px (256 tokens), batches of 2 and 8.
    cases += [_case("DiT-XL/PixArt", "layer", b, 4096, 1152, dtype) for b in (2, 8)]
    cases += [_case("DiT-XL/2 256px", "layer", b, 256, 1152, dtype) for b in (2, 8)]
    return cases
