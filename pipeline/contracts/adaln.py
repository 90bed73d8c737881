"""Adaptive LayerNorm (AdaLN) scale-shift modulation, as in DiT, PixArt, LTX-Video:

    y = norm(x) * (1 + scale) + shift

norm is LayerNorm without affine ("layer") or RMSNorm without weight ("rms"),
over the last dimension D of x [B, S, D]; scale and shift are per sample
([B, D]), per token ([B, S, D]) or shared ([D]).

Forms: ours, `adaln(Tensor! out, Tensor x, Tensor scale, Tensor shift, float
eps, bool rms, int seq)`, with modulation rows [M, D] where row r of x uses
r when M is x's row count, else (r // seq) % M, modulation in float32 or x's
dtype; and a functional LayerNorm one, `(Tensor x, Tensor scale, Tensor shift,
float eps) -> Tensor`, with scale/shift broadcast as [B, 1, D] / [B, S, D] / [D].
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts.base import REDUCTION_TOLERANCE, Bound, Contract, Form, Inputs, Outputs, Sample


def _specs(device_type: str) -> list[tuple]:
    """(B, S, D, modulation, layout, offset)"""
    big = gen_inputs.sizes(device_type)
    rows, width = big.bench
    return [
        (2, 5, 2048, "sample", "contiguous", 0.0),
        (3, 4, 7, "sample", "contiguous", 0.0),
        (2, 3, 1, "token", "contiguous", 0.0),
        (2, 3, 127, "token", "contiguous", 0.0),
        (2, 6, 128, "shared", "contiguous", 0.0),
        (1, 3, 4097, "shared", "contiguous", 0.0),
        (2, 2, 8191, "sample", "contiguous", 0.0),
        (1, big.long_rows, gen_inputs.LONG_ROW, "sample", "contiguous", 0.0),
        (2, 8, 1024, "sample", "contiguous", 20.0),  # a large mean: one-pass variance cancels
        (4, big.many_rows[0] // 4, big.many_rows[1], "sample", "contiguous", 0.0),
        (2, rows // 2, width, "sample", "contiguous", 0.0),
        (2, 3, 2048, "sample", "misaligned", 0.0),
        (2, 3, 1000, "token", "row-strided", 0.0),
        (3, 4, 256, "sample", "transposed", 0.0),
        (0, 5, 2048, "shared", "contiguous", 0.0),
    ]


def _samples(device_type: str, form: Form) -> list[Sample]:
    out, i = [], 0
    for dtype in gen_inputs.DTYPES:
        for B, S, D, modulation, layout, offset in _specs(device_type):
            knobs = {**dict(form.fixed), **gen_inputs.knob_space(form.sweep, i), "modulation": modulation,
                     "eps": gen_inputs.rotate(gen_inputs.EPS_VALUES, i)}
            if offset:
                knobs["offset"] = offset
            sample = Sample("adaln", dtype, (B, S, D), layout, tuple(sorted(knobs.items())))
            if form.supports(sample):
                out.append(sample)
            i += 1
    return out


def _bench_knobs(i: int, shape) -> dict:
    return {"modulation": "sample", "eps": 1e-6}


def _make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    B, S, D = sample.shape
    scale = 0.3 if sample.knob("eps") >= 0.1 else None
    x = gen_inputs.tensor(gen, sample.shape, sample, device, scale=scale, offset=float(sample.knob("offset", 0.0)))
    mod_shape = {"sample": (B, 1, D), "token": (B, S, D), "shared": (D,)}[sample.knob("modulation")]
    mod_dtype = torch.float32 if sample.knob("mod_dtype", "x") == "fp32" else sample.torch_dtype
    found = {"x": x, "eps": float(sample.knob("eps"))}
    for key, spread in (("scale", 0.5), ("shift", 1.0)):
        found[key] = gen_inputs.values(gen, mod_shape, scale=spread).to(device=device, dtype=mod_dtype)
    return found


def _reference(sample: Sample, inputs: Inputs) -> Outputs:
    x = inputs["x"].double()
    if sample.knob("norm") == "rms":
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + inputs["eps"])
    else:
        mean = x.mean(-1, keepdim=True)
        y = (x - mean) * torch.rsqrt((x - mean).pow(2).mean(-1, keepdim=True) + inputs["eps"])
    return {"y": y * (1.0 + inputs["scale"].double()) + inputs["shift"].double()}


def _rows_and_seq(sample: Sample, mod: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Modulation as [M, D] rows and the `seq` of the row mapping."""
    B, S, D = sample.shape
    kind = sample.knob("modulation")
    if kind == "token":
        return mod.reshape(B * S, D).contiguous(), 1
    if kind == "sample":
        return mod.reshape(B, D).contiguous(), S
    return mod.reshape(1, D).contiguous(), max(B * S, 1)


def _bind_ours(sample: Sample, inputs: Inputs, device: torch.device) -> Bound:
    x = inputs["x"]
    scale, seq = _rows_and_seq(sample, inputs["scale"])
    shift, _ = _rows_and_seq(sample, inputs["shift"])
    out = torch.empty(x.shape, dtype=x.dtype, device=device)
    args = [out, x, scale, shift, inputs["eps"], sample.knob("norm") == "rms", seq]
    return Bound(args, poison=(0,), written=(0,), read=lambda a, r: {"y": a[0]})


def _bind_functional(sample: Sample, inputs: Inputs, device: torch.device) -> Bound:
    args = [inputs["x"], inputs["scale"], inputs["shift"], inputs["eps"]]
    return Bound(args, poison=(), written=(), read=lambda a, r: {"y": r})


ADALN = Contract(
    family="adaln",
    summary="y = norm(x) * (1 + scale) + shift, norm = LayerNorm or RMSNorm without affine, over the last dim",
    names=("adaln", "ada_layer_norm", "adaptive_layer_norm", "adaln_modulate", "fused_adaln"),
    forms=(
        Form("(Tensor! out, Tensor x, Tensor scale, Tensor shift, float eps, bool rms, int seq) -> ()", _bind_ours,
             sweep=(("norm", ("layer", "rms")), ("mod_dtype", ("fp32", "x"))), outputs=("y",)),
        Form("(Tensor x, Tensor scale, Tensor shift, float eps) -> Tensor", _bind_functional,
             fixed=(("norm", "layer"),), outputs=("y",)),
    ),
    samples=_samples,
    make=_make,
    reference=_reference,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=lambda shape, dtype, form: (gen_inputs.shaped_sample("adaln", _bench_knobs)(shape, dtype, form)
                                       if len(shape) == 3 else None),
)

CONTRACTS = (ADALN,)
