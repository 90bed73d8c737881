"""Smoke cases for geglu, in the contract of `pipeline/smoke.py`.

Every dtype (bf16, fp16, fp32) x both GELU forms (erf, tanh) x both halves
orders (diffusers' [value | gate], vLLM's [gate | value]) over: widths that
are and are not multiples of the 16-byte pack (1, 7, 33, 2048, 4096), one to
three leading dims, more rows than one grid dimension holds (70000), a
misaligned data pointer (the scalar path), large inputs (the tails of GELU),
and an empty batch. The reference is the same formula in float64.
"""

from __future__ import annotations

import math

import torch

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _gelu(x: torch.Tensor, tanh: bool) -> torch.Tensor:
    if tanh:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _input(gen, shape, device, dtype, layout, scale):
    n = math.prod(shape)
    if layout == "misaligned":  # one element past 16-byte alignment: the scalar path
        flat = (torch.randn(n + 1, generator=gen) * scale).to(device=device, dtype=dtype)
        return flat[1:].view(shape)
    return (torch.randn(shape, generator=gen) * scale).to(device=device, dtype=dtype)


def _case(tag, dtype, shape, tanh, gate_first, layout="contiguous", scale=1.0, checks=()):
    d = shape[-1] // 2

    def make(device, gen):
        x = _input(gen, shape, device, dtype, layout, scale)
        out = torch.empty((*shape[:-1], d), dtype=dtype, device=device)
        return out, x, tanh, gate_first

    def reference(out, x, tanh_, gate_first_):
        x = x.double()
        first, second = x[..., :d], x[..., d:]
        value, gate = (second, first) if gate_first_ else (first, second)
        return (value * _gelu(gate, tanh_),)

    dims = "x".join(str(s) for s in shape)
    form = "tanh" if tanh else "erf"
    order = "gate-first" if gate_first else "value-first"
    return {
        "name": f"geglu/{tag}/{form}/{order}/{dims}/{layout}" + (f"/scale={scale:g}" if scale != 1.0 else ""),
        "op": "geglu",
        "make": make,
        "outputs": (0,),
        "reference": reference,
        "checks": checks,
    }


# (shape, layout, scale, checks); the last dim is 2 * d
SHAPES = [
    ((5, 2), "contiguous", 1.0, ()),
    ((3, 14), "contiguous", 1.0, ()),
    ((2, 3, 66), "contiguous", 1.0, ()),
    ((4, 4096), "contiguous", 1.0, ()),
    ((2, 5, 8192), "contiguous", 1.0, ("opcheck", "compile")),
    ((2, 3, 2, 1024), "contiguous", 1.0, ()),
    ((70000, 16), "contiguous", 1.0, ()),
    ((6, 4096), "misaligned", 1.0, ()),
    ((64, 512), "contiguous", 8.0, ()),
    ((300, 8192), "contiguous", 1.0, ()),  # enough blocks for 2 packs per thread
    ((7, 28672), "contiguous", 4.0, ()),  # decode, Gemma-2-9B width
    ((4000, 64), "contiguous", 12.0, ()),  # the far tails of both GELU forms
    ((0, 512), "contiguous", 1.0, ()),
]


def smoke_cases() -> list[dict]:
    cases = []
    for tag, dtype in DTYPES.items():
        for shape, layout, scale, checks in SHAPES:
            for tanh in (False, True):
                for gate_first in (False, True):
                    # opcheck/compile once per dtype: they are slow.
                    extra = checks if (not tanh and not gate_first) else ()
                    cases.append(_case(tag, dtype, shape, tanh, gate_first, layout, scale, extra))
    return cases
