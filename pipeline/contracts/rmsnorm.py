"""RMSNorm and fused residual-add RMSNorm over the last dimension.

    rms_norm:            y = x / sqrt(mean(x**2) + eps) * weight   (weight optional: tinygrad's has none)
                         rstd = 1 / sqrt(mean(x**2) + eps)          (an extra output, per row)
    fused_add_rms_norm:  s = x + residual (rounded to x's dtype), y = rms_norm(s)

Any schema the roles fit: ours and vLLM's out-argument `rms_norm(Tensor! out,
Tensor input, Tensor weight, float eps)`, the functional one returning a
tensor or kernels-community's `apply_rms_norm(...) -> Tensor[]` ([y, rstd]),
tinygrad's weightless `tinygrad_rms_norm(Tensor! out, Tensor! rms_inv, Tensor
input, float epsilon)`, in place, or flash-attention's `dropout_add_ln_fwd`
with `is_rms_norm` bound true; for the fused op ours with both outputs as
arguments, vLLM's in-place `fused_add_rms_norm(Tensor! input, Tensor! residual,
Tensor weight, float eps)` (input <- y, residual <- s) and a functional one
returning (y, s).
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts import roles
from pipeline.contracts.base import REDUCTION_TOLERANCE, Contract, Inputs, Outputs, Sample
from pipeline.contracts.roles import In, Out, Preset, Signature


def _extra(i: int, shape: tuple[int, ...]) -> dict:
    return {"eps": gen_inputs.rotate(gen_inputs.EPS_VALUES, i)}


def _samples(family: str):
    def samples(device_type: str, form) -> list[Sample]:
        shapes = gen_inputs.row_shapes(device_type)
        return [s for s in gen_inputs.samples_over(family, shapes, form.sweep, form.fixed, _extra)
                if form.supports(s)]

    return samples


def inv_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """1 / sqrt(mean(x**2, -1) + eps) in float64, keeping the last dimension (size 1)."""
    x = x.double()
    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x.double() * inv_rms(x, eps)


def weight_of(sample: Sample, inputs: Inputs) -> torch.Tensor | float:
    return 1.0 if sample.knob("weight") == "none" else inputs["weight"].double()


# --- rms_norm ---------------------------------------------------------------------

def make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    # Small inputs with eps 0.1 or 1.0 make eps matter: placing it wrongly shows.
    scale = 0.3 if sample.knob("eps", 0) >= 0.1 else None
    x = gen_inputs.tensor(gen, sample.shape, sample, device, scale=scale)
    return {"x": x, "weight": gen_inputs.weight(gen, sample.shape[-1], sample, device),
            "eps": float(sample.knob("eps"))}


def _reference(sample: Sample, inputs: Inputs) -> Outputs:
    r = inv_rms(inputs["x"], inputs["eps"])
    return {"y": inputs["x"].double() * r * weight_of(sample, inputs), "rstd": r.squeeze(-1)}


WEIGHTLESS = (("weight", "none"),)
X = In("x", names=roles.X, inplace="y")
WEIGHT = In("weight", names=roles.WEIGHT, optional=True, absent=WEIGHTLESS)
EPS = In("eps", "float", names=roles.EPS)
RSTD = Out("rstd", names=roles.RSTD, extra=True, shape=roles.flat_rows, rows=True)

SIGNATURE = Signature(
    inputs=(X, WEIGHT, EPS),
    outputs=(Out("y", names=roles.Y), RSTD),
    fixed=roles.NORM_OPTIONS + (roles.Fixed(("is_rms_norm",), True),),
    presets=(Preset("apply_rms_norm", returns=("y", "rstd")),
             Preset("dropout_add_ln_fwd", returns=("y", "", "", "", "rstd"))),
)

SCHEMAS = (
    "(Tensor! out, Tensor input, Tensor weight, float eps) -> ()",
    "(Tensor input, Tensor weight, float eps) -> Tensor",
    "(Tensor hidden_states, Tensor weight, float variance_epsilon) -> Tensor[]",
    "(Tensor! out, Tensor! rms_inv, Tensor input, float epsilon) -> ()",
    "(Tensor! x, Tensor weight, float eps) -> ()",
)

RMS_NORM = Contract(
    family="rms_norm",
    summary="y = x / sqrt(mean(x**2, -1) + eps) * weight (weight optional); rstd = 1 / sqrt(mean(x**2, -1) + eps)",
    names=("rms_norm", "rmsnorm", "rms_norm_forward", "rmsnorm_forward", "rms_norm_fwd", "rmsnorm_fwd"),
    forms=roles.forms_of(SIGNATURE, SCHEMAS, "rms_norm"),
    samples=_samples("rms_norm"),
    make=make,
    reference=_reference,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=gen_inputs.shaped_sample("rms_norm", _extra),
    signature=SIGNATURE,
)


# --- fused_add_rms_norm -----------------------------------------------------------

def _make_fused(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    found = make(sample, gen, device)
    residual_layout = "row-strided" if sample.layout == "row-strided" else "contiguous"
    found["residual"] = gen_inputs.tensor(gen, sample.shape, sample, device, layout=residual_layout)
    return found


def _reference_fused(sample: Sample, inputs: Inputs) -> Outputs:
    exact = inputs["x"].double() + inputs["residual"].double()
    # The sum is rounded to the dtype (it is stored as the new residual) and
    # that rounded sum is what gets normalised.
    rounded = exact.to(inputs["x"].dtype)
    r = inv_rms(rounded, inputs["eps"])
    return {"y": rounded.double() * r * weight_of(sample, inputs), "s": exact, "rstd": r.squeeze(-1)}


FUSED_SIGNATURE = Signature(
    # weight required: with writable x and residual, a third tensor is the weight, not an output
    inputs=(X, In("residual", names=roles.RESIDUAL, inplace="s"), In("weight", names=roles.WEIGHT), EPS),
    outputs=(Out("y", names=roles.Y), Out("s", names=roles.RESIDUAL_OUT), RSTD),
    fixed=roles.NORM_OPTIONS + (roles.Fixed(("is_rms_norm",), True),),
)

FUSED_SCHEMAS = (
    "(Tensor! out, Tensor! residual_out, Tensor input, Tensor residual, Tensor weight, float eps) -> ()",
    "(Tensor! input, Tensor! residual, Tensor weight, float eps) -> ()",
    "(Tensor input, Tensor residual, Tensor weight, float eps) -> (Tensor, Tensor)",
)

FUSED_ADD_RMS_NORM = Contract(
    family="fused_add_rms_norm",
    summary="s = x + residual (in x's dtype); y = s / sqrt(mean(s**2, -1) + eps) * weight",
    names=("fused_add_rms_norm", "add_rms_norm", "fused_add_rmsnorm", "residual_rms_norm", "add_rmsnorm",
           "rms_norm_add", "skip_rms_norm"),
    forms=roles.forms_of(FUSED_SIGNATURE, FUSED_SCHEMAS, "fused_add_rms_norm"),
    samples=_samples("fused_add_rms_norm"),
    make=_make_fused,
    reference=_reference_fused,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=gen_inputs.shaped_sample("fused_add_rms_norm", _extra),
    signature=FUSED_SIGNATURE,
)

CONTRACTS = (RMS_NORM, FUSED_ADD_RMS_NORM)
