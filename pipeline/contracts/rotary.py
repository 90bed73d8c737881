"""Rotary position embedding: rotate channel pairs of x by per-position angles.

A sample is x of logical shape [B, S, H, D], stored as [B, S, H*D] ("bshd",
text models, diffusers) or [B, H, S, D] ("bhsd", transformers), angles
theta[Bt, S, D/2] shared over heads (Bt = 1: shared over the batch too), and a
pairing: "gptj" pairs channels (2i, 2i+1) (interleaved; Flux, LTX-Video),
"neox" pairs (i, i + D/2) (rotate_half; Llama). Pair i rotates by theta_i:

    (a, b) -> (a cos - b sin, a sin + b cos)

Forms:
- ours: `rope(Tensor! out, Tensor x, Tensor cos, Tensor sin, bool interleaved,
  int inner, int mid)` and in place `rope_inplace(Tensor! x, ...)`, with
  full-width tables [R, D] and row t of x using table row
  ((t // (inner * mid)) * inner + t % inner) % R; tables in float32 or x's dtype;
- kernels-community's `apply_rotary(Tensor x1, Tensor x2, Tensor cos,
  Tensor sin, Tensor! out1, Tensor! out2, bool conj)`: x1/x2 the two members of
  each pair (views of x), half-width tables broadcast over heads, in place
  (out1 is x1) or not; conj rotates by -theta.
"""

from __future__ import annotations

import math

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts.base import ELEMENTWISE_TOLERANCE, Bound, Contract, Form, Inputs, Outputs, Sample

def _specs(device_type: str) -> list[tuple]:
    """(B, S, H, D, storage, layout, Bt): head widths whose halves are odd (3, 5),
    tiny and large; many rows; one very long row; the benchmark's size; empty."""
    big = gen_inputs.sizes(device_type)
    return [
        (2, 7, 3, 64, "bshd", "contiguous", 1),
        (2, 7, 3, 10, "bshd", "contiguous", 2),
        (2, 4, 9, 128, "bhsd", "contiguous", 2),
        (1, 5, 2, 6, "bhsd", "contiguous", 1),
        (1, 3, 1, 2, "bshd", "contiguous", 1),
        (2, 3, 1, 2048, "bshd", "contiguous", 2),  # one table over all heads (LTX-Video)
        (1, 2, 3, 130, "bshd", "contiguous", 1),
        (1, 2, gen_inputs.LONG_ROW // 128, 128, "bshd", "contiguous", 1),
        (1, big.many_rows[0], 1, max(big.many_rows[1], 16), "bshd", "contiguous", 1),
        (1, gen_inputs.BENCH_ELEMENTS // (8 * 128), 8, 128, "bshd", "contiguous", 1),
        (2, 5, 4, 64, "bshd", "misaligned", 2),
        (2, 3, 2, 64, "bshd", "row-strided", 1),
        (2, 6, 2, 32, "bhsd", "transposed", 1),
        (0, 5, 2, 64, "bshd", "contiguous", 1),
    ]


def _samples(device_type: str, form: Form) -> list[Sample]:
    out, i = [], 0
    for dtype in gen_inputs.DTYPES:
        for B, S, H, D, storage, layout, bt in _specs(device_type):
            knobs = {**dict(form.fixed), **gen_inputs.knob_space(form.sweep, i), "storage": storage,
                     "table_batch": bt if B else 1, "heads": H, "head_dim": D}
            shape = (B, S, H * D) if storage == "bshd" else (B, H, S, D)
            sample = Sample("rotary", dtype, shape, layout, tuple(sorted(knobs.items())))
            if form.supports(sample):
                out.append(sample)
            i += 1
    return out


def _dims(sample: Sample) -> tuple[int, int, int, int]:
    H, D = sample.knob("heads"), sample.knob("head_dim")
    shape = sample.shape
    B, S = (shape[0], shape[1]) if sample.knob("storage") == "bshd" else (shape[0], shape[2])
    return B, S, H, D


def _make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    B, S, H, D = _dims(sample)
    theta = torch.rand(sample.knob("table_batch"), S, D // 2, generator=gen, dtype=torch.float64)
    x = gen_inputs.tensor(gen, sample.shape, sample, device)
    return {"x": x, "theta": (theta * 8 * math.pi - 4 * math.pi).to(device)}


def _heads(sample: Sample, t: torch.Tensor) -> torch.Tensor:
    """x (or y) as a 4-D view in storage order: [B, S, H, D] or [B, H, S, D]."""
    B, S, H, D = _dims(sample)
    return t.unflatten(-1, (H, D)) if sample.knob("storage") == "bshd" else t


def _table(sample: Sample, theta: torch.Tensor) -> torch.Tensor:
    """theta[Bt, S, D/2] broadcastable against the 4-D view: the heads' dim is 1."""
    return theta[:, :, None, :] if sample.knob("storage") == "bshd" else theta[:, None, :, :]


def _pairs(sample: Sample, x4: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    D = x4.shape[-1]
    if sample.knob("pairing") == "gptj":
        return x4[..., 0::2], x4[..., 1::2]
    return x4[..., : D // 2], x4[..., D // 2:]


def _reference(sample: Sample, inputs: Inputs) -> Outputs:
    x = inputs["x"].double()
    theta = _table(sample, inputs["theta"].double())
    cos, sin = theta.cos(), theta.sin()
    if sample.knob("table_dtype") == "x":  # the kernel is given tables rounded to x's dtype
        cos, sin = cos.to(inputs["x"].dtype).double(), sin.to(inputs["x"].dtype).double()
    if sample.knob("conj"):
        sin = -sin
    y = torch.empty_like(x)
    a, b = _pairs(sample, _heads(sample, x))
    ya, yb = _pairs(sample, _heads(sample, y))
    ya.copy_(a * cos - b * sin)
    yb.copy_(a * sin + b * cos)
    return {"y": y}


# --- ours: full-width tables with an (inner, mid) row mapping ---------------------

def _full_tables(sample: Sample, inputs: Inputs, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    theta = inputs["theta"]  # [Bt, S, D/2]
    full = theta.repeat_interleave(2, dim=-1) if sample.knob("pairing") == "gptj" else torch.cat([theta, theta], -1)
    dtype = torch.float32 if sample.knob("table_dtype") == "fp32" else sample.torch_dtype
    rows = full.reshape(-1, full.shape[-1])
    return rows.cos().to(device=device, dtype=dtype), rows.sin().to(device=device, dtype=dtype)


def _inner_mid(sample: Sample) -> tuple[int, int]:
    B, S, H, D = _dims(sample)
    return (S, H) if sample.knob("storage") == "bhsd" else (S, 1)


def _bind_ours(inplace: bool):
    def bind(sample: Sample, inputs: Inputs, device: torch.device) -> Bound:
        cos, sin = _full_tables(sample, inputs, device)
        inner, mid = _inner_mid(sample)
        flags = [sample.knob("pairing") == "gptj", inner, mid]
        x = inputs["x"]
        if inplace:
            return Bound([x, cos, sin, *flags], poison=(), written=(0,), read=lambda a, r: {"y": a[0]})
        out = torch.empty(x.shape, dtype=x.dtype, device=device)
        return Bound([out, x, cos, sin, *flags], poison=(0,), written=(0,), read=lambda a, r: {"y": a[0]})

    return bind


# --- kernels-community: the pair members as views, half-width tables ---------------

def _bind_halves(sample: Sample, inputs: Inputs, device: torch.device) -> Bound:
    x = inputs["x"]
    x1, x2 = _pairs(sample, _heads(sample, x))
    theta = _table(sample, inputs["theta"])
    cos = theta.cos().to(device=device, dtype=x.dtype)
    sin = theta.sin().to(device=device, dtype=x.dtype)
    conj = bool(sample.knob("conj"))
    if sample.knob("inplace"):
        return Bound([x1, x2, cos, sin, x1, x2, conj], poison=(), written=(0, 1, 4, 5),
                     read=lambda a, r: {"y": x})
    out1 = torch.empty(x1.shape, dtype=x.dtype, device=device)
    out2 = torch.empty(x2.shape, dtype=x.dtype, device=device)

    def read(args: list, returned) -> Outputs:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        ya, yb = _pairs(sample, _heads(sample, y))
        ya.copy_(args[4])
        yb.copy_(args[5])
        return {"y": y}

    return Bound([x1, x2, cos, sin, out1, out2, conj], poison=(4, 5), written=(4, 5), read=read)


_OURS = "(Tensor! out, Tensor x, Tensor cos, Tensor sin, bool interleaved, int inner, int mid) -> ()"
_OURS_INPLACE = "(Tensor! x, Tensor cos, Tensor sin, bool interleaved, int inner, int mid) -> ()"
_PAIRING = ("pairing", ("gptj", "neox"))

ROTARY = Contract(
    family="rotary",
    summary="pairs (2i, 2i+1) [gptj] or (i, i+D/2) [neox] of each head: (a, b) -> (a cos - b sin, a sin + b cos)",
    names=("rope", "rotary", "rotary_emb", "rotary_embedding", "apply_rotary", "apply_rotary_emb", "apply_rope"),
    forms=(
        Form(_OURS, _bind_ours(False), names=("rope", "rotary", "apply_rotary_emb", "rotary_emb"),
             sweep=(_PAIRING, ("table_dtype", ("fp32", "x"))), outputs=("y",)),
        Form(_OURS_INPLACE, _bind_ours(True), names=("rope_inplace", "rotary_inplace", "apply_rotary_emb_"),
             sweep=(_PAIRING, ("table_dtype", ("fp32", "x"))), outputs=("y",)),
        Form("(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor! out1, Tensor! out2, bool conj) -> ()",
             _bind_halves, names=("apply_rotary",),
             sweep=(_PAIRING, ("inplace", (False, True)), ("conj", (False, True))), fixed=(("table_dtype", "x"),),
             outputs=("y",)),
    ),
    samples=_samples,
    make=_make,
    reference=_reference,
    tolerance=ELEMENTWISE_TOLERANCE,
)

CONTRACTS = (ROTARY,)
