"""Benchmark cases for rope, in the contract of `pipeline/bench.py`.

Shapes (bf16 x):
- LTX-Video 3D: x [B, F*H*W, 2048] with diffusers' full-width float32 tables
  [B, F*H*W, 2048] (a 121-frame 512x768 video is 16x16x24 = 6144 latent
  tokens), interleaved pairs. Baseline: diffusers' `apply_rotary_emb` for
  LTX-Video (unflatten, unbind, stack, then `x.float() * cos + rot * sin`).
- Qwen3-8B / Llama-3-8B 1D text: q [1, 32, S, 128] and k [1, 8, S, 128] with
  transformers' per-sample tables [1, 1, S, 128] in bf16, rotate_half; decode
  q [B, 32, 1, 128] with [B, 1, 1, 128]. Baseline: transformers'
  `q * cos + rotate_half(q) * sin`.
Each baseline is also measured through torch.compile. `bench_cases(dtype)` gives
the same shapes with x (and the text tables) in float16 or float32 (`pipeline
bench --dtype`); LTX-Video's tables stay float32, as diffusers makes them.
"""

from __future__ import annotations

import torch


def diffusers_ltx_rope(x, cos, sin):
    x_real, x_imag = x.unflatten(2, (-1, 2)).unbind(-1)
    x_rotated = torch.stack([-x_imag, x_real], dim=-1).flatten(2)
    return (x.float() * cos + x_rotated.float() * sin).to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def transformers_rope(q, cos, sin):
    return (q * cos) + (rotate_half(q) * sin)


def _ltx_case(batch: int, tokens: int, dtype: str, dim: int = 2048) -> dict:
    scalar = getattr(torch, dtype)

    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(batch * 17 + tokens)
        x = torch.randn(batch, tokens, dim, generator=g, device=device, dtype=scalar)
        angles = torch.rand(batch, tokens, dim // 2, generator=g, device=device) * 6.283
        cos = angles.cos().repeat_interleave(2, dim=-1)
        sin = angles.sin().repeat_interleave(2, dim=-1)
        out = torch.empty_like(x)
        compiled = torch.compile(diffusers_ltx_rope, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.apply_rotary_emb(x, cos, sin, interleaved=True, out=out),
            "diffusers eager": lambda: diffusers_ltx_rope(x, cos, sin),
            "torch.compile": lambda: compiled(x, cos, sin),
        }

    # Read x and both float32 tables, write out.
    nbytes = 2 * batch * tokens * dim * scalar.itemsize + 2 * batch * tokens * dim * 4
    return {
        "name": f"rope/ltx/{batch}x{tokens}x{dim}",
        "op": "rope 3D (LTX-Video)",
        "group": "LTX-Video",
        "shape": f"{batch}x{tokens}x{dim}",
        "dtype": dtype,
        "bytes": nbytes,
        "setup": setup,
        "baselines": ("diffusers eager", "torch.compile"),
    }


def _text_case(seq: int, dtype: str, heads: int = 32, head_dim: int = 128, batch: int = 1) -> dict:
    # Prefill: q [1, H, S, 128] with the table [1, 1, S, 128]. Decode (seq 1):
    # one new position per sequence, q [B, 32, 1, 128] with each sample's own
    # table row [B, 1, 1, 128], as transformers' rotary embedding hands it over.
    decode = seq == 1
    scalar = getattr(torch, dtype)

    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(batch * 29 + heads if decode else seq * 19 + heads)
        q = torch.randn(batch, heads, seq, head_dim, generator=g, device=device, dtype=scalar)
        angles = torch.rand(batch, seq, head_dim // 2, generator=g, device=device) * 6.283
        emb = torch.cat([angles, angles], dim=-1)
        cos = emb.cos().to(scalar)[:, None]
        sin = emb.sin().to(scalar)[:, None]
        out = torch.empty_like(q)
        compiled = torch.compile(transformers_rope, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.apply_rotary_emb(q, cos, sin, interleaved=False, out=out),
            "transformers eager": lambda: transformers_rope(q, cos, sin),
            "torch.compile": lambda: compiled(q, cos, sin),
        }

    # Read q and both tables once, write out.
    nbytes = 2 * batch * heads * seq * head_dim * scalar.itemsize + 2 * batch * seq * head_dim * scalar.itemsize
    shape = f"{batch}x{heads}x{seq}x{head_dim}"
    return {
        "name": f"rope/qwen3/decode/{shape}" if decode else f"rope/qwen3/{shape}",
        "op": "rope 1D (Qwen3-8B q, decode)" if decode else f"rope 1D (Qwen3-8B {'q' if heads == 32 else 'k'})",
        "group": "Qwen3-8B decode" if decode else "Qwen3-8B",
        "shape": shape,
        "dtype": dtype,
        "bytes": nbytes,
        "setup": setup,
        "baselines": ("transformers eager", "torch.compile"),
    }


def bench_cases(dtype: str = "bfloat16") -> list[dict]:
    # Qwen3-8B and Llama-3-8B share the text shapes: 32 query heads and 8 key/value heads of 128.
    cases = [_ltx_case(1, 6144, dtype), _ltx_case(2, 16384, dtype)]
    cases += [_text_case(4096, dtype), _text_case(16384, dtype), _text_case(4096, dtype, heads=8)]
    return cases + [_text_case(1, dtype, batch=b) for b in (1, 8, 64)]
