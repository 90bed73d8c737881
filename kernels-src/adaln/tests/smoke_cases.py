"""Smoke cases for adaln, in the contract of `pipeline/smoke.py`.

The op is `adaln(out, x, scale, shift, eps, rms, seq)`: out = norm(x) *
(1 + scale[m]) + shift[m] with m = r when scale has as many rows as x, else
(r // seq) % M. Cases cover every dtype (bf16, fp16, fp32), modulation in
float32 and in x's dtype, LayerNorm and RMSNorm, and: per-sample modulation
(DiT/LTX-Video [B, D] over S tokens), per-token modulation, one shared row;
widths that are and are not multiples of the 16-byte pack (7, 64, 256, 1152,
2048, 3072, 4100, 8192, 16384) and one too wide to keep in registers (16392: the re-reading path);
inputs with a large mean (the variance must not cancel); a misaligned x; and
an empty batch. The reference normalises in float64.
"""

from __future__ import annotations

import math

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _reference(out, x, scale, shift, eps, rms, seq):
    x = x.double()
    D = x.shape[-1]
    rows = x.numel() // D if D else 0
    xr = x.reshape(rows, D)
    if rms:
        y = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + eps)
    else:
        mean = xr.mean(-1, keepdim=True)
        var = (xr - mean).pow(2).mean(-1, keepdim=True)
        y = (xr - mean) * torch.rsqrt(var + eps)
    M = scale.numel() // D
    r = torch.arange(rows, device=x.device)
    m = r if M == rows else (r // seq) % M
    sc = scale.double().reshape(M, D)[m]
    sh = shift.double().reshape(M, D)[m]
    return ((y * (1.0 + sc) + sh).reshape(x.shape),)


def _case(tag, dtype, mod_dtype, B, S, D, mode, rms, layout="contiguous", offset=0.0, checks=()):
    def make(device, gen):
        mdt = dtype if mod_dtype == "x" else torch.float32
        rows = B * S
        n = rows * D
        scale_x = float(torch.empty(()).uniform_(0.5, 3.0, generator=gen))
        flat = torch.randn(n + 1, generator=gen) * scale_x + offset
        x = flat[1:] if layout == "misaligned" else flat[:n]
        x = x.to(device=device, dtype=dtype)
        if layout == "misaligned":
            x = torch.cat([torch.zeros(1, dtype=dtype, device=device), x])[1:]
        x = x.view(rows, D)
        M, seq = {"sample": (B, S), "token": (rows, 1), "shared": (1, rows or 1)}[mode]
        scale = (torch.randn(M, D, generator=gen) * 0.5).to(device=device, dtype=mdt)
        shift = torch.randn(M, D, generator=gen).to(device=device, dtype=mdt)
        out = torch.empty(rows, D, dtype=dtype, device=device)
        return out, x, scale, shift, 1e-6, rms, seq

    norm = "rms" if rms else "layer"
    return {
        "name": f"adaln/{tag}/{norm}/{B}x{S}x{D}/{mode}/mod={mod_dtype}/{layout}"
        + (f"/offset={offset:g}" if offset else ""),
        "op": "adaln",
        "make": make,
        "outputs": (0,),
        "reference": _reference,
        "checks": checks,
    }


# (B, S, D, mode, layout, offset, checks)
SHAPES = [
    (2, 5, 2048, "sample", "contiguous", 0.0, ("opcheck", "compile")),
    (3, 4, 7, "sample", "contiguous", 0.0, ()),
    (2, 3, 64, "token", "contiguous", 0.0, ()),
    (2, 6, 3072, "sample", "contiguous", 0.0, ()),
    (1, 3, 4100, "shared", "contiguous", 0.0, ()),
    (2, 2, 16392, "sample", "contiguous", 0.0, ()),
    (2, 8, 1024, "sample", "contiguous", 20.0, ()),
    (2, 3, 2048, "sample", "misaligned", 0.0, ()),
    (4, 1000, 64, "sample", "contiguous", 0.0, ()),
    # launch shapes by width: 4 lanes per row (256), one warp of 6 packs (1152,
    # DiT/PixArt) with a row count that leaves the last block part empty, 128
    # and 256 threads per row (8192, 16384)
    (3, 5, 256, "token", "contiguous", 0.0, ()),
    (2, 7, 1152, "sample", "contiguous", 0.0, ()),
    (1, 37, 1152, "shared", "contiguous", 5.0, ()),
    # the one-wave launch (one row per block, one pack per thread, two in float32) with idle
    # lanes: 145 packs of bf16 on 160 threads, 290 of float32 on 160 x 2
    (3, 11, 1160, "token", "contiguous", 0.0, ()),
    (2, 2, 8192, "sample", "contiguous", 20.0, ()),
    (1, 3, 16384, "shared", "contiguous", 0.0, ()),
    (0, 5, 2048, "sample", "contiguous", 0.0, ()),
]


def smoke_cases() -> list[dict]:
    cases = []
    for tag, dtype in DTYPES.items():
        for mod_dtype in ("fp32", "x") if dtype != torch.float32 else ("fp32",):
            for rms in (False, True):
                for B, S, D, mode, layout, offset, checks in SHAPES:
                    first = mod_dtype == "fp32" and not rms
                    cases.append(_case(tag, dtype, mod_dtype, B, S, D, mode, rms, layout, offset,
                                       checks if first else ()))
    return cases
