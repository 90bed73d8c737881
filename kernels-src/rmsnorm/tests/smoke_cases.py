"""Smoke cases for rmsnorm, in the contract of `pipeline/smoke.py`.

Every dtype (bf16, fp16, fp32) x both ops x these layouts: hidden sizes that
are and are not multiples of 8 (1, 7, 33, 64 to 512 for several rows per warp,
2048 to 65536, 4100; decode batches of long rows split over clusters), one to
three leading dimensions, a row-strided slice, a transposed (non-foldable)
input, a misaligned pointer (scalar path), more rows than the device holds at
once (grid-stride loop), batches large enough for the shared-memory kernel
(rows_async), a large eps, and empty batches. Weights are random
normal (negative entries included), inputs randomly scaled.
"""

from __future__ import annotations

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _randn(gen, shape, device, dtype, scale=1.0):
    return (torch.randn(shape, generator=gen, dtype=torch.float32) * scale).to(device=device, dtype=dtype)


def _input(layout, shape, gen, device, dtype):
    """x of `shape` laid out as `layout` says."""
    scale = float(torch.empty(()).uniform_(0.25, 4.0, generator=gen))
    if layout == "contiguous":
        return _randn(gen, shape, device, dtype, scale)
    if layout == "row-strided":  # a slice of a wider tensor: rows are not adjacent
        wide = _randn(gen, (*shape[:-1], shape[-1] + 24), device, dtype, scale)
        return wide[..., 3:3 + shape[-1]] if shape[-1] % 8 else wide[..., 8:8 + shape[-1]]
    if layout == "transposed":  # [b, s, h] stored as [s, b, h]: leading dims do not fold
        t = _randn(gen, (shape[1], shape[0], shape[2]), device, dtype, scale)
        return t.transpose(0, 1)
    if layout == "misaligned":  # data pointer 1 element past 16-byte alignment
        n = 1
        for d in shape:
            n *= d
        flat = _randn(gen, (n + 1,), device, dtype, scale)
        return flat[1:].view(shape)
    raise ValueError(layout)


def _rms_ref(s, w, eps):
    s = s.double()
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w.double()


def _rms_norm_case(tag, dtype, shape, layout="contiguous", eps=1e-6, checks=()):
    def make(device, gen):
        x = _input(layout, shape, gen, device, dtype)
        w = _randn(gen, (shape[-1],), device, dtype)
        out = torch.empty(shape, dtype=dtype, device=device)
        return out, x, w, eps

    def reference(out, x, w, eps_):
        return (_rms_ref(x, w, eps_),)

    dims = "x".join(str(d) for d in shape)
    return {
        "name": f"rms_norm/{tag}/{dims}/{layout}" + (f"/eps={eps:g}" if eps != 1e-6 else ""),
        "op": "rms_norm",
        "make": make,
        "outputs": (0,),
        "reference": reference,
        "checks": checks,
    }


def _fused_case(tag, dtype, shape, layout="contiguous", eps=1e-6, checks=()):
    def make(device, gen):
        x = _input(layout, shape, gen, device, dtype)
        r = _input("row-strided" if layout == "row-strided" else "contiguous", shape, gen, device, dtype)
        w = _randn(gen, (shape[-1],), device, dtype)
        out = torch.empty(shape, dtype=dtype, device=device)
        res_out = torch.empty(shape, dtype=dtype, device=device)
        return out, res_out, x, r, w, eps

    def reference(out, res_out, x, r, w, eps_):
        exact = x.double() + r.double()
        # The op defines residual_out as x + residual rounded to the dtype, and
        # normalises that rounded sum.
        rounded = exact.to(x.dtype)
        return _rms_ref(rounded, w, eps_), exact

    dims = "x".join(str(d) for d in shape)
    return {
        "name": f"fused_add_rms_norm/{tag}/{dims}/{layout}" + (f"/eps={eps:g}" if eps != 1e-6 else ""),
        "op": "fused_add_rms_norm",
        "make": make,
        "outputs": (0, 1),
        "reference": reference,
        "checks": checks,
    }


# (shape, layout, eps, checks[, devices])
LAYOUTS = [
    ((5, 1), "contiguous", 1e-6, ()),
    ((3, 7), "contiguous", 1e-6, ()),
    ((2, 3, 33), "contiguous", 1e-6, ()),
    ((4, 2048), "contiguous", 1e-6, ()),
    # rows_one (decode batches of 256-512 vectors): 257 vectors, so the block's last warp has
    # one working lane and the partials' warp count (9) is not a power of two
    ((7, 2056), "contiguous", 1e-6, ()),
    ((2, 5, 4096), "contiguous", 1e-6, ("opcheck", "compile")),
    ((2, 3, 2, 5120), "contiguous", 1e-6, ()),
    ((3, 8192), "contiguous", 1e-6, ()),
    ((3, 4100), "contiguous", 1e-6, ()),
    ((6, 3072), "row-strided", 1e-6, ()),
    ((6, 37), "row-strided", 1e-6, ()),
    ((3, 4, 1024), "transposed", 1e-6, ()),
    ((5, 2048), "misaligned", 1e-6, ()),
    ((9000, 256), "contiguous", 1e-6, ()),
    # 16-bit rows of 65-255 vectors: rows_one at Qwen2's 896 and 1536 (112 and 192 vectors: the
    # block's last warp part-filled), rows_reg past one wave; 12288 in batches (1536 vectors: four
    # per thread on 384 threads)
    ((64, 896), "contiguous", 1e-6, ()),
    ((2, 1536), "contiguous", 1e-6, ()),
    ((16384, 896), "contiguous", 1e-6, (), ("cuda",)),
    ((2048, 12288), "contiguous", 1e-6, (), ("cuda",)),
    # Large enough for the CUDA kernel's shared-memory path (rows_async):
    # CUDA only, where the path exists (they add ~20 s to a CPU run).
    ((4096, 4096), "contiguous", 1e-6, (), ("cuda",)),  # rms_norm and fused
    ((2048, 3072), "row-strided", 1e-6, (), ("cuda",)),  # rms_norm, with a row stride
    # rows_small (hidden <= 64 vectors: several rows per warp), row counts that
    # do not fill the last block, a row stride:
    ((1000, 128), "contiguous", 1e-6, ()),
    ((37, 512), "contiguous", 1e-6, ()),
    ((4097, 64), "contiguous", 1e-6, ()),
    ((9, 256), "row-strided", 1e-6, ()),
    ((70001, 128), "contiguous", 1e-6, (), ("cuda",)),
    # rows_head (per-head rows of the plain op from 16384 rows): both of the rule's shapes in every
    # dtype (70001x128 above: the deep one at 16 and 32 vectors), last blocks with idle row
    # groups, row strides
    ((33333, 64), "contiguous", 1e-6, (), ("cuda",)),
    ((70001, 64), "contiguous", 1e-6, (), ("cuda",)),
    ((40000, 128), "row-strided", 1e-6, (), ("cuda",)),
    ((66000, 128), "row-strided", 1e-6, (), ("cuda",)),
    ((2, 90001, 128), "contiguous", 1e-6, (), ("cuda",)),
    # rows_cluster (sm_90): decode batches of long rows, rows over 2048 vectors
    ((1, 8192), "contiguous", 1e-6, ()),
    ((64, 8192), "contiguous", 1e-6, ()),
    ((3, 16384), "contiguous", 1e-6, ()),
    ((2, 32768), "contiguous", 1e-6, ()),
    ((2, 65536), "contiguous", 1e-6, ()),
    ((20000, 8192), "contiguous", 1e-6, (), ("cuda",)),  # many long rows (rows_async, 8-16 vectors per thread)
    # rows_async with 16 vectors per thread (hidden 16384 bf16)
    ((300, 16384), "contiguous", 1e-6, (), ("cuda",)),
    ((64, 4096), "contiguous", 0.5, ()),
    ((0, 4096), "contiguous", 1e-6, ()),
    ((2, 0, 7), "contiguous", 1e-6, ()),
]


def smoke_cases() -> list[dict]:
    cases = []
    for tag, dtype in DTYPES.items():
        for shape, layout, eps, checks, *devices in LAYOUTS:
            for case in (_rms_norm_case(tag, dtype, shape, layout, eps, checks),
                         _fused_case(tag, dtype, shape, layout, eps, checks)):
                if devices:
                    case["devices"] = devices[0]
                cases.append(case)
    return cases
