"""Backward ops of RMSNorm and LayerNorm: gradients against autograd of the float64 reference.

    rms_norm_backward:    (dx, dweight) = d/d(x, weight) of sum(dy * rms_norm(x, weight, eps))
    layer_norm_backward:  (dx, dweight, dbias), the same for layer_norm

The inputs are what a forward pass saved: x, weight, the upstream gradient dy,
and where the op takes them the forward's output y (rounded to x's dtype) and
its per-row statistics mean and rstd (float32, as the kernels that take them
keep them). Forms: any schema the roles fit, among them kernels-community
rmsnorm's `apply_rms_norm_backward(Tensor grad_output, Tensor hidden_states,
Tensor weight, Tensor output, Tensor rstd, float variance_epsilon, bool
input_requires_grad, bool weight_requires_grad) -> Tensor[]`, mlx-rmsnorm's
`launch_backward_kernel(..., Tensor(a!) grad_input, Tensor(a!)? grad_weight,
float epsilon)`, flash-attention's `dropout_add_ln_bwd` ([dx, _, dweight,
dbias, ...]) and its Triton `layer_norm_bwd_impl`.

The weight's gradient sums over every row: its float32 bound grows with the
row count as a row reduction's does with its length.
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts import layernorm, rmsnorm, roles
from pipeline.contracts.base import REDUCTION_TOLERANCE, Contract, Inputs, Outputs, Sample
from pipeline.contracts.roles import In, Out, Preset, Signature


def _extra(i: int, shape: tuple[int, ...]) -> dict:
    # A one-wide row's RMSNorm gradient is all eps: with a small eps it is the
    # difference of two equal terms, noise in any precision. A large eps there.
    if shape and shape[-1] == 1:
        return {"eps": 1.0}
    return {"eps": gen_inputs.rotate(gen_inputs.EPS_VALUES, i)}


def _samples(family: str):
    def samples(device_type: str, form) -> list[Sample]:
        shapes = gen_inputs.row_shapes(device_type)
        return [s for s in gen_inputs.samples_over(family, shapes, form.sweep, form.fixed, _extra)
                if form.supports(s)]

    return samples


def _grads(sample: Sample, inputs: Inputs, forward) -> dict:
    """dx, dweight (and dbias) of sum(dy * forward(x, weight, bias)) in float64."""
    x = inputs["x"].detach().double().requires_grad_(True)
    w = inputs["weight"].detach().double().requires_grad_(True)
    b = inputs["bias"].detach().double().requires_grad_(True) if "bias" in inputs else None
    with torch.enable_grad():
        y = forward(x, w, b)
        if y.numel():
            y.backward(inputs["dy"].double())
    found = {"dx": x.grad if x.grad is not None else torch.zeros_like(x),
             "dweight": w.grad if w.grad is not None else torch.zeros_like(w)}
    if b is not None:
        found["dbias"] = b.grad if b.grad is not None else torch.zeros_like(b)
    return {k: v.detach() for k, v in found.items()}


def _saved(sample: Sample, found: Inputs, y: torch.Tensor, mean: torch.Tensor | None, rstd: torch.Tensor,
           device: torch.device) -> Inputs:
    found["y"] = y.to(device=device, dtype=sample.torch_dtype)
    # one value per row, flat: [rows], as the kernels that take them keep them
    found["rstd"] = rstd.reshape(-1).to(device=device, dtype=torch.float32)
    if mean is not None:
        found["mean"] = mean.reshape(-1).to(device=device, dtype=torch.float32)
    return found


# --- rms_norm_backward ----------------------------------------------------------------

def _make_rms(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    found = rmsnorm.make(sample, gen, device)
    found["dy"] = gen_inputs.tensor(gen, sample.shape, sample, device)
    r = rmsnorm.inv_rms(found["x"], found["eps"])
    y = found["x"].double() * r * rmsnorm.weight_of(sample, found)
    return _saved(sample, found, y, None, r, device)


def _reference_rms(sample: Sample, inputs: Inputs) -> Outputs:
    # A weightless form's weight is 1: dweight is the gradient at weight = 1 (checked if the op returns it)
    if sample.knob("weight") == "none":
        inputs = {**inputs, "weight": torch.ones_like(inputs["weight"])}
    return _grads(sample, {k: v for k, v in inputs.items() if k != "bias"},
                  lambda x, w, b: rmsnorm.rms(x, inputs["eps"]) * w)


DY = In("dy", names=roles.DY)
X = In("x", names=roles.X)
SAVED_Y = In("y", names=roles.FORWARD_OUTPUT, optional=True)
SAVED_RSTD = In("rstd", names=roles.RSTD, optional=True)
SAVED_MEAN = In("mean", names=roles.MEAN, optional=True)
EPS = In("eps", "float", names=roles.EPS, optional=True)
DX = Out("dx", names=roles.DX)
DWEIGHT = Out("dweight", names=roles.DWEIGHT, optional=True, shape=lambda s: (s.shape[-1],))
DBIAS = Out("dbias", names=roles.DBIAS, optional=True, shape=lambda s: (s.shape[-1],))

RMS_SIGNATURE = Signature(
    inputs=(DY, X, In("weight", names=roles.WEIGHT, optional=True, absent=rmsnorm.WEIGHTLESS), SAVED_Y,
            SAVED_RSTD, EPS),
    outputs=(DX, DWEIGHT),
    fixed=roles.NORM_OPTIONS + (roles.Fixed(("is_rms_norm",), True),),
)

RMS_SCHEMAS = (
    "(Tensor grad_output, Tensor hidden_states, Tensor weight, Tensor output, Tensor rstd, float variance_epsilon, "
    "bool input_requires_grad, bool weight_requires_grad) -> Tensor[]",
    "(Tensor! dx, Tensor! dweight, Tensor dy, Tensor x, Tensor weight, float eps) -> ()",
    "(Tensor dy, Tensor x, Tensor weight, Tensor rstd) -> (Tensor, Tensor)",
)

RMS_NORM_BACKWARD = Contract(
    family="rms_norm_backward",
    summary="(dx, dweight) = gradients of sum(dy * rms_norm(x, weight, eps)), by autograd in float64",
    names=("rms_norm_backward", "rmsnorm_backward", "rms_norm_bwd", "rmsnorm_bwd", "rms_norm_grad",
           "rmsnorm_grad"),
    forms=roles.forms_of(RMS_SIGNATURE, RMS_SCHEMAS, "rms_norm_backward"),
    samples=_samples("rms_norm_backward"),
    make=_make_rms,
    reference=_reference_rms,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    reduces_rows=True,
    shaped=gen_inputs.shaped_sample("rms_norm_backward", _extra),
    signature=RMS_SIGNATURE,
)


# --- layer_norm_backward ----------------------------------------------------------------

def _make_ln(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    found = layernorm.make(sample, gen, device)
    found["dy"] = gen_inputs.tensor(gen, sample.shape, sample, device)
    x_hat, mean, rstd = layernorm.normalized(found["x"], found["eps"])
    w, b = layernorm.affine(sample, found)
    return _saved(sample, found, x_hat * w + b, mean, rstd, device)


def _reference_ln(sample: Sample, inputs: Inputs) -> Outputs:
    # The gradients do not depend on the bias; a weightless form's weight is 1.
    if sample.knob("weight") == "none":
        inputs = {**inputs, "weight": torch.ones_like(inputs["weight"])}
    return _grads(sample, inputs, lambda x, w, b: layernorm.normalized(x, inputs["eps"])[0] * w + b)


LN_SIGNATURE = Signature(
    # the bias changes no gradient: a kernel that takes it (to recompute y) gets it, one that does not needs none
    inputs=(DY, X, layernorm.WEIGHT, In("bias", names=layernorm.BIAS.names, optional=True), SAVED_MEAN, SAVED_RSTD,
            SAVED_Y, EPS),
    outputs=(DX, DWEIGHT, DBIAS),
    fixed=roles.NORM_OPTIONS + (roles.Fixed(("is_rms_norm",), False),),
    presets=(
        # returns {dx0, dresidual, dgamma, dbeta, dgamma_part, dbeta_part}
        Preset("dropout_add_ln_bwd", returns=("dx", "", "dweight", "dbias"), supports=layernorm.flash_ln_limits),
        # returns {dx0, dx1, dresidual, dgamma0, dbeta0, ...}
        Preset("dropout_add_ln_parallel_residual_bwd", returns=("dx", "", "", "dweight", "dbias"),
               supports=layernorm.flash_ln_limits),
    ),
)

LN_SCHEMAS = (
    "(Tensor dy, Tensor x, Tensor weight, Tensor mean, Tensor rstd) -> (Tensor dx, Tensor dweight, Tensor dbias)",
    "(Tensor! dx, Tensor! dweight, Tensor! dbias, Tensor dy, Tensor x, Tensor weight, Tensor bias, float eps) -> ()",
)

LAYER_NORM_BACKWARD = Contract(
    family="layer_norm_backward",
    summary="(dx, dweight, dbias) = gradients of sum(dy * layer_norm(x, weight, bias, eps)), by autograd in float64",
    names=("layer_norm_backward", "layernorm_backward", "layer_norm_bwd", "layernorm_bwd", "layer_norm_grad",
           "layernorm_grad", "dropout_add_ln_bwd", "dropout_add_layer_norm_backward"),
    forms=roles.forms_of(LN_SIGNATURE, LN_SCHEMAS, "layer_norm_backward"),
    samples=_samples("layer_norm_backward"),
    make=_make_ln,
    reference=_reference_ln,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    reduces_rows=True,
    shaped=gen_inputs.shaped_sample("layer_norm_backward", _extra),
    signature=LN_SIGNATURE,
)

CONTRACTS = (RMS_NORM_BACKWARD, LAYER_NORM_BACKWARD)
