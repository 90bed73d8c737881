"""RMSNorm and fused residual-add RMSNorm over the last dimension.

    rms_norm:            y = x / sqrt(mean(x**2) + eps) * weight
    fused_add_rms_norm:  s = x + residual (rounded to x's dtype), y = rms_norm(s)

Forms: ours and vLLM's out-argument `rms_norm(Tensor! out, Tensor input,
Tensor weight, float eps)`, the functional `rms_norm(Tensor x, Tensor weight,
float eps) -> Tensor` (kernels-community's Metal example); for the fused op,
ours with both outputs as arguments, vLLM's in-place
`fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float eps)`
(input <- y, residual <- s) and a functional one returning (y, s).
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts.base import REDUCTION_TOLERANCE, Contract, Inputs, Outputs, Sample, spec_form


def _extra(i: int, shape: tuple[int, ...]) -> dict:
    return {"eps": gen_inputs.rotate(gen_inputs.EPS_VALUES, i)}


def _samples(family: str):
    def samples(device_type: str, form) -> list[Sample]:
        shapes = gen_inputs.row_shapes(device_type)
        return [s for s in gen_inputs.samples_over(family, shapes, form.sweep, form.fixed, _extra)
                if form.supports(s)]

    return samples


def rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _shapes(sample: Sample, inputs: Inputs) -> dict:
    return {"y": sample.shape, "s": sample.shape}


# --- rms_norm ---------------------------------------------------------------------

def _make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    # Small inputs with eps 0.1 or 1.0 make eps matter: placing it wrongly shows.
    scale = 0.3 if sample.knob("eps", 0) >= 0.1 else None
    x = gen_inputs.tensor(gen, sample.shape, sample, device, scale=scale)
    return {"x": x, "weight": gen_inputs.weight(gen, sample.shape[-1], sample, device),
            "eps": float(sample.knob("eps"))}


def _reference(sample: Sample, inputs: Inputs) -> Outputs:
    return {"y": rms(inputs["x"], inputs["eps"]) * inputs["weight"].double()}


RMS_NORM = Contract(
    family="rms_norm",
    summary="y = x / sqrt(mean(x**2, -1) + eps) * weight",
    names=("rms_norm", "rmsnorm", "rms_norm_forward", "rmsnorm_forward"),
    forms=(
        spec_form("(Tensor! out, Tensor input, Tensor weight, float eps) -> ()",
                  ("out:y", "x", "weight", "eps"), shapes=_shapes),
        spec_form("(Tensor input, Tensor weight, float eps) -> Tensor", ("x", "weight", "eps"), ("y",),
                  shapes=_shapes),
    ),
    samples=_samples("rms_norm"),
    make=_make,
    reference=_reference,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=gen_inputs.shaped_sample("rms_norm", _extra),
)


# --- fused_add_rms_norm -----------------------------------------------------------

def _make_fused(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    found = _make(sample, gen, device)
    residual_layout = "row-strided" if sample.layout == "row-strided" else "contiguous"
    found["residual"] = gen_inputs.tensor(gen, sample.shape, sample, device, layout=residual_layout)
    return found


def _reference_fused(sample: Sample, inputs: Inputs) -> Outputs:
    exact = inputs["x"].double() + inputs["residual"].double()
    # The sum is rounded to the dtype (it is stored as the new residual) and
    # that rounded sum is what gets normalised.
    rounded = exact.to(inputs["x"].dtype)
    return {"y": rms(rounded, inputs["eps"]) * inputs["weight"].double(), "s": exact}


FUSED_ADD_RMS_NORM = Contract(
    family="fused_add_rms_norm",
    summary="s = x + residual (in x's dtype); y = s / sqrt(mean(s**2, -1) + eps) * weight",
    names=("fused_add_rms_norm", "add_rms_norm", "fused_add_rmsnorm", "residual_rms_norm"),
    forms=(
        spec_form("(Tensor! out, Tensor! residual_out, Tensor input, Tensor residual, Tensor weight, float eps) -> ()",
                  ("out:y", "out:s", "x", "residual", "weight", "eps"), shapes=_shapes),
        spec_form("(Tensor! input, Tensor! residual, Tensor weight, float eps) -> ()",
                  ("io:x:y", "io:residual:s", "weight", "eps"), shapes=_shapes),
        spec_form("(Tensor input, Tensor residual, Tensor weight, float eps) -> (Tensor, Tensor)",
                  ("x", "residual", "weight", "eps"), ("y", "s"), shapes=_shapes),
    ),
    samples=_samples("fused_add_rms_norm"),
    make=_make_fused,
    reference=_reference_fused,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=gen_inputs.shaped_sample("fused_add_rms_norm", _extra),
)

CONTRACTS = (RMS_NORM, FUSED_ADD_RMS_NORM)
