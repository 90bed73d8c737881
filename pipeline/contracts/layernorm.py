"""LayerNorm over the last dimension, with weight and bias (either optional).

    y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias     (biased variance)
    mean, rstd = mean(x), 1 / sqrt(var(x) + eps)               (extra outputs, per row)

Any schema the roles fit: out-argument `layer_norm(Tensor! out, Tensor input,
Tensor weight, Tensor bias, float eps)` (bias may be `Tensor?`), the functional
one, flash-attention's fused `dropout_add_ln_fwd` and its parallel-residual
form (no dropout, no residual, no row/column scale: [y, _, _, mean, rstd]),
and its Triton `layer_norm_fwd_impl`. flash-attention's CUDA kernel is
documented for 2-D inputs whose hidden size is a multiple of 8 up to 8192, so
its forms are given only those samples.
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts import roles
from pipeline.contracts.base import REDUCTION_TOLERANCE, Contract, Inputs, Outputs, Sample
from pipeline.contracts.roles import In, Out, Preset, Signature


def _extra(i: int, shape: tuple[int, ...]) -> dict:
    return {"eps": gen_inputs.rotate(gen_inputs.EPS_VALUES, i)}


OFFSET_SHAPE = (8, 1024)  # a large common offset: a one-pass variance (E[x^2] - E[x]^2) cancels


def samples_of(family: str):
    def samples(device_type: str, form) -> list[Sample]:
        shapes = gen_inputs.row_shapes(device_type) + [(OFFSET_SHAPE, "contiguous")]
        found = gen_inputs.samples_over(family, shapes, form.sweep, form.fixed, _extra)
        found = [s.with_knobs(offset=20.0) if s.shape == OFFSET_SHAPE else s for s in found]
        return [s for s in found if form.supports(s)]

    return samples


def make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    scale = 0.3 if sample.knob("eps", 0) >= 0.1 else None
    x = gen_inputs.tensor(gen, sample.shape, sample, device, scale=scale, offset=float(sample.knob("offset", 0.0)))
    n = sample.shape[-1]
    return {"x": x, "weight": gen_inputs.weight(gen, n, sample, device),
            "bias": gen_inputs.weight(gen, n, sample, device), "eps": float(sample.knob("eps"))}


def affine(sample: Sample, inputs: Inputs) -> tuple:
    """(weight, bias) in float64 as the sample uses them (1 and 0 when the form has none)."""
    w = 1.0 if sample.knob("weight") == "none" else inputs["weight"].double()
    b = 0.0 if sample.knob("bias") == "none" else inputs["bias"].double()
    return w, b


def normalized(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x_hat, mean, rstd) in float64; mean and rstd keep the last dimension (size 1)."""
    x = x.double()
    mean = x.mean(-1, keepdim=True)
    rstd = torch.rsqrt((x - mean).pow(2).mean(-1, keepdim=True) + eps)
    return (x - mean) * rstd, mean, rstd


def _reference(sample: Sample, inputs: Inputs) -> Outputs:
    x_hat, mean, rstd = normalized(inputs["x"], inputs["eps"])
    w, b = affine(sample, inputs)
    return {"y": x_hat * w + b, "mean": mean.squeeze(-1), "rstd": rstd.squeeze(-1)}


def flash_ln_limits(sample: Sample) -> bool:
    """flash-attention's layer norm: 2-D inputs, hidden size a multiple of 8 up to 8192."""
    n = sample.shape[-1]
    return len(sample.shape) == 2 and n % 8 == 0 and 0 < n <= 8192


WEIGHT = In("weight", names=roles.WEIGHT + ("gamma0",), optional=True, absent=(("weight", "none"),))
BIAS = In("bias", names=roles.BIAS + ("beta0",), optional=True, absent=(("bias", "none"),))
MEAN = Out("mean", names=roles.MEAN, extra=True, shape=roles.flat_rows, rows=True)
RSTD = Out("rstd", names=roles.RSTD, extra=True, shape=roles.flat_rows, rows=True)

SIGNATURE = Signature(
    inputs=(In("x", names=roles.X, inplace="y"), WEIGHT, BIAS, In("eps", "float", names=roles.EPS)),
    outputs=(Out("y", names=roles.Y), MEAN, RSTD),
    fixed=roles.NORM_OPTIONS + (roles.Fixed(("is_rms_norm",), False),),
    presets=(
        # returns {z, x, dmask, mu, rsigma}: x and dmask only with a residual or dropout
        Preset("dropout_add_ln_fwd", returns=("y", "", "", "mean", "rstd"), supports=flash_ln_limits),
        # returns {z0, z1, x, dmask0, dmask1, mu, rsigma}
        Preset("dropout_add_ln_parallel_residual_fwd", returns=("y", "", "", "", "", "mean", "rstd"),
               supports=flash_ln_limits),
    ),
)

SCHEMAS = (
    "(Tensor! out, Tensor input, Tensor weight, Tensor bias, float eps) -> ()",
    "(Tensor input, Tensor weight, Tensor bias, float eps) -> Tensor",
    "(Tensor input, Tensor weight, Tensor? bias, float eps) -> (Tensor output, Tensor mean, Tensor rstd)",
    "(Tensor! x, Tensor weight, Tensor bias, float eps) -> ()",
)

LAYER_NORM = Contract(
    family="layer_norm",
    summary="y = (x - mean(x, -1)) / sqrt(var(x, -1) + eps) * weight + bias; mean, rstd per row",
    names=("layer_norm", "layernorm", "layer_norm_forward", "layernorm_forward", "layer_norm_fwd",
           "layernorm_fwd", "dropout_add_ln_fwd", "dropout_add_layer_norm"),
    forms=roles.forms_of(SIGNATURE, SCHEMAS, "layer_norm"),
    samples=samples_of("layer_norm"),
    make=make,
    reference=_reference,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=gen_inputs.shaped_sample("layer_norm", _extra),
    signature=SIGNATURE,
)

CONTRACTS = (LAYER_NORM,)
