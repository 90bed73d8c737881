"""Adversarial inputs shared by the families: sizes, storage layouts, random values.

Every family draws its shapes from here, so each one meets last dimensions that
are and are not multiples of any vector width (1, 7, 127, 128, 4097, 8191), a
very long row, many rows (past a CUDA grid dimension), one to three leading
dimensions, benchmark-sized inputs (at least 4M elements, on every device:
a kernel that takes a shortcut for large inputs must meet one here too:
category "huge"), strided, transposed and misaligned storage, and empty
batches: every category of `pipeline.contracts.CATEGORIES` in every dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pipeline.contracts.base import HUGE_ELEMENTS, Sample

DTYPES = ("bfloat16", "float16", "float32")
ODD_LAST_DIMS = (1, 7, 127, 128, 4097, 8191)
LONG_ROW = 262144
BENCH_ELEMENTS = HUGE_ELEMENTS
EPS_VALUES = (1e-6, 1e-5, 0.1, 1.0)
LAYOUTS = ("contiguous", "row-strided", "transposed", "misaligned")


@dataclass(frozen=True)
class Sizes:
    """The large shapes, per device type: CPU keeps them affordable, never absent."""

    many_rows: tuple[int, int]  # (rows, last dim): more rows than a CUDA grid's y/z dimension
    bench: tuple[int, ...]  # the benchmark's shape: >= BENCH_ELEMENTS
    long_rows: int  # rows of LONG_ROW elements


def sizes(device_type: str) -> Sizes:
    if device_type == "cpu":
        return Sizes(many_rows=(70000, 16), bench=(1024, 4096), long_rows=2)
    return Sizes(many_rows=(70000, 128), bench=(4096, 4096), long_rows=16)


def row_shapes(device_type: str, *, even: bool = False) -> list[tuple[tuple[int, ...], str]]:
    """(shape, layout) pairs for a row-wise op over the last dimension; with
    `even` every last dimension is doubled (the input of a gated op)."""
    big = sizes(device_type)
    f = 2 if even else 1
    shapes = [
        ((5, 1 * f), "contiguous"),
        ((3, 7 * f), "contiguous"),
        ((2, 3, 127 * f), "contiguous"),
        ((4, 128 * f), "contiguous"),
        ((2, 2, 2, 4097 * f), "contiguous"),
        ((3, 8191 * f), "contiguous"),
        ((big.long_rows, LONG_ROW), "contiguous"),
        ((big.many_rows[0], big.many_rows[1] * f), "contiguous"),
        (big.bench, "contiguous"),
        ((6, 3072 * f), "row-strided"),
        ((6, 37 * f), "row-strided"),
        ((3, 4, 1024 * f), "transposed"),
        ((9, 129 * f), "transposed"),
        ((16, 1024 * f), "transposed"),  # 2-D with a hidden size kernels accept (a multiple of 8)
        ((5, 2048 * f), "misaligned"),
        ((3, 127 * f), "misaligned"),
        ((0, 4096 * f), "contiguous"),
        ((2, 0, 7 * f), "contiguous"),
    ]
    return shapes


def rotate(values: tuple, i: int):
    return values[i % len(values)]


def knob_space(sweep: tuple[tuple[str, tuple], ...], i: int) -> dict:
    """The i-th combination of a form's swept knobs, visiting every combination
    once in each run of len(product) consecutive samples."""
    out, stride = {}, 1
    for key, values in sweep:
        out[key] = values[(i // stride) % len(values)]
        stride *= len(values)
    return out


def samples_over(family: str, shapes: list[tuple[tuple[int, ...], str]], sweep: tuple, fixed: tuple,
                 extra=lambda i, shape: {}) -> list[Sample]:
    """Every (shape, layout) in every dtype, the form's knobs rotating over them."""
    out = []
    i = 0
    for dtype in DTYPES:
        for shape, layout in shapes:
            knobs = {**dict(fixed), **knob_space(sweep, i), **extra(i, shape)}
            out.append(Sample(family, dtype, tuple(shape), layout, tuple(sorted(knobs.items()))))
            i += 1
    return out


def shaped_sample(family: str, extra=lambda i, shape: {}):
    """For `Contract.shaped`: one contiguous sample of a given shape and dtype, the
    form's knobs at their first combination."""
    def shaped(shape: tuple, dtype: str, form) -> Sample | None:
        if dtype not in DTYPES or not shape:
            return None
        knobs = {**dict(form.fixed), **knob_space(form.sweep, 0), **extra(0, shape)}
        sample = Sample(family, dtype, tuple(shape), "contiguous", tuple(sorted(knobs.items())))
        return sample if form.supports(sample) else None

    return shaped


def uniform(gen: torch.Generator, low: float, high: float) -> float:
    return float(torch.empty(()).uniform_(low, high, generator=gen))


def values(gen: torch.Generator, shape: tuple[int, ...], *, scale: float | None = None,
           offset: float = 0.0) -> torch.Tensor:
    """Random normal values in float32 on the CPU, randomly scaled unless `scale` is given."""
    if scale is None:
        scale = uniform(gen, 0.25, 4.0)
    return torch.randn(shape, generator=gen, dtype=torch.float32) * scale + offset


def lay_out(v: torch.Tensor, dtype: torch.dtype, device: torch.device, layout: str) -> torch.Tensor:
    """`v`'s values stored as `layout` says, same logical shape."""
    shape = tuple(v.shape)
    if layout == "contiguous" or v.numel() == 0 or v.dim() == 0:
        return v.to(device=device, dtype=dtype)
    if layout == "row-strided":  # a slice of a wider tensor: rows are not adjacent
        n = shape[-1]
        start = 3 if n % 8 else 8
        wide = torch.zeros((*shape[:-1], n + start + 5), dtype=dtype, device=device)
        wide[..., start:start + n] = v.to(device=device, dtype=dtype)
        return wide[..., start:start + n]
    if layout == "transposed":
        if v.dim() >= 3:  # leading dims stored swapped: they do not fold into one row index
            return v.transpose(0, 1).contiguous().to(device=device, dtype=dtype).transpose(0, 1)
        # 2-D (or 1-D as one row): column-major, the last dimension is not unit-stride
        m = v.reshape(-1, shape[-1])
        return m.t().contiguous().to(device=device, dtype=dtype).t().reshape(shape)
    if layout == "misaligned":  # data pointer one element past the allocation's alignment
        flat = torch.zeros(v.numel() + 1, dtype=dtype, device=device)
        flat[1:] = v.reshape(-1).to(device=device, dtype=dtype)
        return flat[1:].view(shape)
    raise ValueError(f"unknown layout {layout!r}")


def tensor(gen: torch.Generator, shape: tuple[int, ...], sample: Sample, device: torch.device, *,
           layout: str | None = None, scale: float | None = None, offset: float = 0.0,
           dtype: torch.dtype | None = None) -> torch.Tensor:
    return lay_out(values(gen, shape, scale=scale, offset=offset), dtype or sample.torch_dtype, device,
                   sample.layout if layout is None else layout)


def weight(gen: torch.Generator, n: int, sample: Sample, device: torch.device) -> torch.Tensor:
    """A random weight: normal, so it has negative entries and no pattern a kernel could assume."""
    return values(gen, (n,), scale=uniform(gen, 0.5, 2.0)).to(device=device, dtype=sample.torch_dtype)


