"""Smoke cases for rope, in the contract of `pipeline/smoke.py`.

The op is `rope(out, x, cos, sin, interleaved, inner, mid)`: row t of x uses
table row ((t // (inner * mid)) * inner + t % inner) % R. Cases cover every
dtype (bf16, fp16, fp32), tables in float32 and in x's dtype, both pairings
(interleaved as LTX-Video/diffusers, rotate_half as Llama), and the layouts
the Python wrapper maps onto the op:

- LTX-Video: x [B, F*H*W, C] with a full-width table [B, F*H*W, C] whose
  first C % 6 channels are padding (cos 1, sin 0), as diffusers builds it;
- per-head tables shared over the batch: x [B, S, H*D], table [S, D];
- transformers' [B, H, S, D] with a per-sample table [B, 1, S, D] (mid = H);
- head widths whose halves are not a whole number of 16-byte packs (D = 10,
  36: the scalar path), a misaligned x, many rows, and an empty batch.

Angles are random in [-4 pi, 4 pi]; the reference rotates in float64.
"""

from __future__ import annotations

import math

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _tables(gen, rows, width, device, dtype, ltx_pad=0):
    half = torch.rand(rows, width // 2, generator=gen, dtype=torch.float64) * 8 * math.pi - 4 * math.pi
    if ltx_pad:
        half[:, : ltx_pad // 2] = 0.0  # padding channels: cos 1, sin 0
    return half


def _reference(out, x, cos, sin, interleaved, inner, mid):
    x = x.double()
    C = x.shape[-1]
    D = cos.shape[-1]
    rows = x.numel() // C if C else 0
    R = cos.numel() // D
    t = torch.arange(rows, device=x.device)
    trow = ((t // (inner * mid)) * inner + t % inner) % R
    c = cos.double().reshape(R, D)[trow].repeat(1, C // D)  # [rows, C]
    s = sin.double().reshape(R, D)[trow].repeat(1, C // D)
    xf = x.reshape(rows, C // D, D)
    if interleaved:
        a, b = xf[..., 0::2], xf[..., 1::2]
        rot = torch.stack([-b, a], dim=-1).reshape(rows, C)
    else:
        a, b = xf[..., : D // 2], xf[..., D // 2:]
        rot = torch.cat([-b, a], dim=-1).reshape(rows, C)
    return ((x.reshape(rows, C) * c + rot * s).reshape(x.shape),)


def _case(tag, dtype, table_dtype, layout, dims, interleaved, checks=()):
    """layout: ltx (B, N, C), perhead (B, S, H, D), bhsd and bhsd1 (B, H, S, D), raw (rows, D, R, inner, mid)."""

    def make(device, gen):
        tdt = dtype if table_dtype == "x" else torch.float32
        if layout == "ltx":
            B, N, C = dims
            angles = _tables(gen, B * N, C, device, tdt, ltx_pad=C % 6)
            x_shape, t_shape, inner, mid = (B, N, C), (B, N, C), B * N, 1
        elif layout == "perhead":
            B, S, H, D = dims
            angles = _tables(gen, S, D, device, tdt)
            x_shape, t_shape, inner, mid = (B, S, H * D), (S, D), S, 1
        elif layout == "bhsd1":  # transformers' [B, H, S, D] with one table [S, D] for every sample
            B, H, S, D = dims
            angles = _tables(gen, S, D, device, tdt)
            x_shape, t_shape, inner, mid = (B, H, S, D), (S, D), S, 1
        elif layout == "raw":  # the op's mapping as given, table rows wrapping modulo R
            rows, D, R, inner, mid = dims
            angles = _tables(gen, R, D, device, tdt)
            x_shape, t_shape = (rows, D), (R, D)
        else:  # bhsd
            B, H, S, D = dims
            angles = _tables(gen, B * S, D, device, tdt)
            x_shape, t_shape, inner, mid = (B, H, S, D), (B, 1, S, D), S, H
        if interleaved:
            full = angles.repeat_interleave(2, dim=-1)
        else:
            full = torch.cat([angles, angles], dim=-1)
        cos = full.cos().to(device=device, dtype=tdt).reshape(t_shape)
        sin = full.sin().to(device=device, dtype=tdt).reshape(t_shape)
        if layout == "ltx" and dims[2] % 6:
            pad = dims[2] % 6
            cos[..., :pad] = 1.0
            sin[..., :pad] = 0.0
        n = math.prod(x_shape)
        if "misaligned" in tag:
            x = torch.randn(n + 1, generator=gen).to(device=device, dtype=dtype)[1:].view(x_shape)
        else:
            x = torch.randn(x_shape, generator=gen).to(device=device, dtype=dtype)
        out = torch.empty(x_shape, dtype=dtype, device=device)
        return out, x, cos, sin, interleaved, inner, mid

    pairing = "interleaved" if interleaved else "rotate_half"
    return {
        "name": f"rope/{tag}/{layout}/{'x'.join(map(str, dims))}/{pairing}/table={table_dtype}",
        "op": "rope",
        "make": make,
        "outputs": (0,),
        "reference": _reference,
        "checks": checks,
    }


# (layout, dims, interleaved options, extra tag, checks)
LAYOUTS = [
    ("ltx", (2, 3 * 4 * 5, 2048), (True,), "", ("opcheck", "compile")),
    ("ltx", (1, 2 * 3 * 4, 100), (True,), "", ()),  # 100 % 6 = 4 padding channels
    ("perhead", (2, 7, 3, 64), (True, False), "", ()),
    ("perhead", (2, 7, 3, 10), (True, False), "", ()),
    ("bhsd", (2, 4, 9, 128), (True, False), "", ()),
    ("bhsd", (1, 2, 5, 36), (False,), "", ()),
    ("perhead", (1, 5000, 2, 64), (True,), "", ()),
    ("bhsd", (8, 32, 1, 128), (False, True), "", ()),  # decode: one position per sample
    ("bhsd", (3, 5, 7, 96), (False,), "", ()),  # divisors that are not powers of two
    ("perhead", (2, 5, 4, 64), (True, False), "misaligned", ()),
    ("perhead", (0, 5, 2, 64), (True,), "", ()),
    # Long enough for the slab launch (rope.cu: at least a block of head-rows per slab).
    ("bhsd", (2, 4, 300, 128), (False, True), "", ()),
    ("bhsd1", (2, 3, 200, 128), (False, True), "", ()),
    ("perhead", (2, 70, 3, 64), (True, False), "", ()),
    # Five heads of one table row on the grid's y blocks: an odd count, which any launch that
    # groups heads per thread must leave a short last group of (NOTES.md, "Table reuse over heads").
    ("bhsd", (2, 5, 260, 128), (False, True), "", ()),
    # Table rows wrapping: past R (1 + 2 * 40 rows of 50) and a last partial slab.
    ("raw", (2 * 40 * 3 + 17, 128, 50, 40, 3), (False, True), "", ()),
    ("raw", (1000, 64, 300, 1000, 1), (True,), "", ()),
]


def _inplace_case(dtype, layout, dims, interleaved):
    """rope_inplace(x, cos, sin, interleaved, inner, mid): x is input and output."""
    tag = next(t for t, d in DTYPES.items() if d == dtype)
    base = _case(f"{tag}/inplace", dtype, "x", layout, dims, interleaved)

    def make(device, gen):
        _, x, cos, sin, il, inner, mid = base["make"](device, gen)
        return x, cos, sin, il, inner, mid

    def reference(x, cos, sin, il, inner, mid):
        return _reference(None, x, cos, sin, il, inner, mid)

    return {**base, "name": base["name"].removesuffix("/table=x"), "op": "rope_inplace", "make": make,
            "reference": reference, "outputs": (0,), "inplace": (0,)}


def smoke_cases() -> list[dict]:
    cases = []
    for tag, dtype in DTYPES.items():
        for table_dtype in ("fp32", "x") if dtype != torch.float32 else ("fp32",):
            for layout, dims, pairings, extra, checks in LAYOUTS:
                for interleaved in pairings:
                    name_tag = f"{tag}/{extra}" if extra else tag
                    first = table_dtype == "fp32" and interleaved
                    cases.append(_case(name_tag, dtype, table_dtype, layout, dims, interleaved,
                                       checks if first else ()))
    # In place: rotate_half's one-thread-per-pair launch (rope.cu) at slab and flat sizes,
    # and a head width whose halves are not whole 16-byte packs (the scalar path).
    for dtype in (torch.bfloat16, torch.float32):
        for dims in ((2, 4, 300, 128), (2, 5, 260, 128), (8, 32, 1, 128), (2, 4, 9, 128), (1, 2, 5, 36)):
            for interleaved in (False, True):
                cases.append(_inplace_case(dtype, "bhsd", dims, interleaved))
    return cases
