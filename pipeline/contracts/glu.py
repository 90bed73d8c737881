"""Gated activations: the input's last dimension holds two halves of width d.

    silu_and_mul       y = silu(x[..., :d]) * x[..., d:]        (SwiGLU; vLLM, kernels-community)
    mul_and_silu       y = x[..., :d] * silu(x[..., d:])
    gelu_and_mul       y = gelu(x[..., :d]) * x[..., d:]        (GeGLU, erf)
    gelu_tanh_and_mul  the same with the tanh approximation
    geglu              y = x[..., :d] * gelu(x[..., d:])        (diffusers' GEGLU: [value | gate])
    fatrelu_and_mul    y = where(g > t, g, 0) * x[..., d:], g = x[..., :d]
    swigluoai_and_mul  y = (clamp(u, -l, l) + 1) * g * sigmoid(alpha g), g = min(x[..., 0::2], l),
                       u = x[..., 1::2]                        (gpt-oss; interleaved, megablocks)

Forms: any schema the roles fit, among them the out-argument `(Tensor! out,
Tensor input) -> ()` of kernels-community's activation kernel (fatrelu adds
`float threshold`, swigluoai `float alpha, float limit`), the functional one,
and for gelu_and_mul also our geglu's `(Tensor! out, Tensor input, bool
approximate_tanh, bool gate_first) -> ()`, whose flags the contract sweeps: erf
and tanh, [gate | value] and [value | gate].
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts import roles
from pipeline.contracts.activation import gelu, gelu_tanh, silu
from pipeline.contracts.base import ACTIVATION_FLOOR, ACTIVATION_TOLERANCE, Contract, Inputs, Outputs, Sample, spec_form
from pipeline.contracts.roles import In, Out, Signature

# family -> (activation, gate_first, summary, op names)
FAMILIES = {
    "silu_and_mul": ("silu", True, "y = silu(x[..., :d]) * x[..., d:]", ("silu_and_mul", "swiglu", "silu_mul")),
    "mul_and_silu": ("silu", False, "y = x[..., :d] * silu(x[..., d:])", ("mul_and_silu",)),
    "gelu_and_mul": ("gelu", True, "y = gelu(x[..., :d]) * x[..., d:]", ("gelu_and_mul", "gelu_mul")),
    "gelu_tanh_and_mul": ("gelu_tanh", True, "y = gelu_tanh(x[..., :d]) * x[..., d:]",
                          ("gelu_tanh_and_mul", "gelu_new_and_mul", "gelu_fast_and_mul")),
    "geglu": ("gelu", False, "y = x[..., :d] * gelu(x[..., d:])  ([value | gate], diffusers)", ("geglu",)),
    "fatrelu_and_mul": ("fatrelu", True, "y = where(g > t, g, 0) * x[..., d:], g = x[..., :d]",
                        ("fatrelu_and_mul",)),
    "swigluoai_and_mul": ("swigluoai", True, "y = (clamp(u, -l, l) + 1) * g * sigmoid(alpha g), "
                          "g = min(x[..., 0::2], l), u = x[..., 1::2]", ("swigluoai_and_mul", "swiglu_oai")),
}

# alpha and limit of gpt-oss's clamped SwiGLU (the op's defaults), and others
SWIGLUOAI_KNOBS = ((1.702, 7.0), (1.0, 2.0), (1.702, 0.5))

_ACTIVATIONS = {"silu": silu, "gelu": gelu, "gelu_tanh": gelu_tanh}


def _samples(family: str):
    def samples(device_type: str, form) -> list[Sample]:
        shapes = gen_inputs.row_shapes(device_type, even=True)

        def extra(i: int, shape) -> dict:
            knobs = {"scale": 8.0} if i % 5 == 4 else {}
            if family == "fatrelu_and_mul":
                knobs["threshold"] = gen_inputs.rotate((0.0, 0.5, -0.25), i)
            if family == "swigluoai_and_mul":
                knobs["alpha"], knobs["limit"] = gen_inputs.rotate(SWIGLUOAI_KNOBS, i)
            return knobs

        found = gen_inputs.samples_over(family, shapes, form.sweep, form.fixed, extra)
        return [s for s in found if s.shape[-1] % 2 == 0 and form.supports(s)]

    return samples


def _make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    found = {"x": gen_inputs.tensor(gen, sample.shape, sample, device, scale=sample.knob("scale"))}
    for key in ("threshold", "alpha", "limit"):
        if sample.knob(key) is not None:
            found[key] = float(sample.knob(key))
    for key in ("approximate_tanh", "gate_first"):
        if sample.knob(key) is not None:
            found[key] = bool(sample.knob(key))
    return found


def half(sample: Sample) -> tuple[int, ...]:
    return (*sample.shape[:-1], sample.shape[-1] // 2)


def _shapes(sample: Sample, inputs: Inputs) -> dict:
    return {"y": half(sample)}


def _swigluoai(x: torch.Tensor, alpha: float, limit: float) -> torch.Tensor:
    gate, up = x[..., 0::2].clamp(max=limit), x[..., 1::2].clamp(-limit, limit)
    return (up + 1.0) * gate * torch.sigmoid(alpha * gate)


X = In("x", names=roles.X)
Y = Out("y", names=roles.Y, shape=half)
SCALARS = {
    "fatrelu_and_mul": (In("threshold", "float", names=("threshold", "thresh", "t")),),
    "swigluoai_and_mul": (In("alpha", "float", names=("alpha",)), In("limit", "float", names=("limit", "clamp"))),
}


def _contract(family: str) -> Contract:
    activation, gate_first, summary, names = FAMILIES[family]

    def reference(sample: Sample, inputs: Inputs) -> Outputs:
        x = inputs["x"].double()
        d = x.shape[-1] // 2
        first, second = x[..., :d], x[..., d:]
        order = sample.knob("gate_first", gate_first)
        gate, value = (first, second) if order else (second, first)
        if activation == "fatrelu":
            t = inputs["threshold"]
            return {"y": torch.where(gate > t, gate, torch.zeros_like(gate)) * value}
        if activation == "swigluoai":
            return {"y": _swigluoai(x, inputs["alpha"], inputs["limit"])}
        fn = gelu_tanh if sample.knob("approximate_tanh", activation == "gelu_tanh") else _ACTIVATIONS[activation]
        return {"y": fn(gate) * value}

    signature = Signature(inputs=(X,) + SCALARS.get(family, ()), outputs=(Y,))
    scalars = "".join(f", float {r.key}" for r in SCALARS.get(family, ()))
    schemas = (f"(Tensor! out, Tensor input{scalars}) -> ()", f"(Tensor input{scalars}) -> Tensor")
    forms = roles.forms_of(signature, schemas, family)
    if family == "gelu_and_mul":
        forms += (spec_form("(Tensor! out, Tensor input, bool approximate_tanh, bool gate_first) -> ()",
                            ("out:y", "x", "approximate_tanh", "gate_first"), shapes=_shapes,
                            names=("geglu", "gelu_and_mul", "gated_gelu"),
                            sweep=(("approximate_tanh", (False, True)), ("gate_first", (False, True)))),)
    knobs = {"fatrelu_and_mul": {"threshold": 0.5},
             "swigluoai_and_mul": dict(zip(("alpha", "limit"), SWIGLUOAI_KNOBS[0]))}.get(family, {})
    return Contract(family=family, summary=summary, names=names, forms=forms, samples=_samples(family),
                    make=_make, reference=reference, tolerance=ACTIVATION_TOLERANCE,
                    floor=ACTIVATION_FLOOR, shaped=_even(gen_inputs.shaped_sample(family, lambda i, shape: knobs)),
                    signature=signature)


def _even(shaped):
    """A gated op's input holds two halves: an odd last dimension is no input of it."""
    return lambda shape, dtype, form: shaped(shape, dtype, form) if shape and shape[-1] % 2 == 0 else None


CONTRACTS = tuple(_contract(family) for family in FAMILIES)
