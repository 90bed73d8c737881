"""LayerNorm over the last dimension, with weight and bias.

    y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias     (biased variance)

Forms: out-argument `layer_norm(Tensor! out, Tensor input, Tensor weight,
Tensor bias, float eps)` (bias may be `Tensor?`), the functional one, and
kernels-community's `dropout_add_ln_fwd` (flash-attention's fused LayerNorm)
called with no dropout, no residual, no row/column scale: its first returned
tensor is y. That kernel is documented for 2-D inputs whose hidden size is a
multiple of 8 up to 8192, so its form is only given those samples.
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts.base import REDUCTION_TOLERANCE, Contract, Inputs, Outputs, Sample, spec_form


def _extra(i: int, shape: tuple[int, ...]) -> dict:
    return {"eps": gen_inputs.rotate(gen_inputs.EPS_VALUES, i)}


def _samples(device_type: str, form) -> list[Sample]:
    shapes = gen_inputs.row_shapes(device_type)
    # A large common offset: a one-pass variance (E[x^2] - E[x]^2) cancels.
    shapes.append(((8, 1024), "contiguous"))
    found = gen_inputs.samples_over("layer_norm", shapes, form.sweep, form.fixed, _extra)
    found = [s.with_knobs(offset=20.0) if s.shape == (8, 1024) else s for s in found]
    return [s for s in found if form.supports(s)]


def _make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    scale = 0.3 if sample.knob("eps", 0) >= 0.1 else None
    x = gen_inputs.tensor(gen, sample.shape, sample, device, scale=scale, offset=float(sample.knob("offset", 0.0)))
    n = sample.shape[-1]
    return {"x": x, "weight": gen_inputs.weight(gen, n, sample, device),
            "bias": gen_inputs.weight(gen, n, sample, device), "eps": float(sample.knob("eps"))}


def _reference(sample: Sample, inputs: Inputs) -> Outputs:
    x = inputs["x"].double()
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    y = (x - mean) * torch.rsqrt(var + inputs["eps"])
    return {"y": y * inputs["weight"].double() + inputs["bias"].double()}


def _shapes(sample: Sample, inputs: Inputs) -> dict:
    return {"y": sample.shape}


def _flash_ln_limits(sample: Sample) -> bool:
    n = sample.shape[-1]
    return len(sample.shape) == 2 and n % 8 == 0 and 0 < n <= 8192 and sample.layout == "contiguous"


LAYER_NORM = Contract(
    family="layer_norm",
    summary="y = (x - mean(x, -1)) / sqrt(var(x, -1) + eps) * weight + bias",
    names=("layer_norm", "layernorm", "layer_norm_forward", "layernorm_forward"),
    forms=(
        spec_form("(Tensor! out, Tensor input, Tensor weight, Tensor bias, float eps) -> ()",
                  ("out:y", "x", "weight", "bias", "eps"), shapes=_shapes),
        spec_form("(Tensor input, Tensor weight, Tensor bias, float eps) -> Tensor",
                  ("x", "weight", "bias", "eps"), ("y",), shapes=_shapes),
        spec_form("(Tensor input, Tensor gamma, Tensor? beta, Tensor? rowscale, Tensor? colscale, Tensor? x0_subset, "
                  "Tensor? z_subset, float dropout_p, float epsilon, float rowscale_const, int z_numrows, "
                  "Generator? gen, bool residual_in_fp32, bool is_rms_norm) -> Tensor[]",
                  ("x", "weight", "bias", None, None, None, None, 0.0, "eps", 1.0, 0, None, False, False),
                  ("y",), shapes=_shapes, names=("dropout_add_ln_fwd",), supports=_flash_ln_limits),
    ),
    samples=_samples,
    make=_make,
    reference=_reference,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=gen_inputs.shaped_sample("layer_norm", _extra),
)

CONTRACTS = (LAYER_NORM,)
