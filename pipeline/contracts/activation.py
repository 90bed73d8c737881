"""Elementwise activations: relu, silu, gelu (erf), gelu with the tanh
approximation (vLLM's gelu_new and gelu_fast are that formula), quick gelu.

Forms: the out-argument `relu(Tensor! out, Tensor input) -> ()` that
kernels-community's relu and activation kernels register, the functional
`relu(Tensor input) -> Tensor`, and in place `relu(Tensor! x) -> ()`.
"""

from __future__ import annotations

import math

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts.base import ACTIVATION_FLOOR, ACTIVATION_TOLERANCE, Contract, Inputs, Outputs, Sample, spec_form


def gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


FUNCTIONS = {
    "relu": (lambda x: x.clamp_min(0.0), "y = max(x, 0)", ("relu",)),
    "silu": (silu, "y = x * sigmoid(x)", ("silu", "swish")),
    "gelu": (gelu, "y = x/2 * (1 + erf(x / sqrt(2)))", ("gelu", "gelu_erf")),
    "gelu_tanh": (gelu_tanh, "y = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))",
                  ("gelu_tanh", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_approx")),
    "gelu_quick": (lambda x: x * torch.sigmoid(1.702 * x), "y = x * sigmoid(1.702 x)", ("gelu_quick", "quick_gelu")),
}


def shapes(device_type: str) -> list[tuple[tuple[int, ...], str]]:
    """Row shapes, plus flat ones: an elementwise op must not assume rows."""
    flat = [((1,), "contiguous"), ((7,), "contiguous"), ((8191,), "contiguous"), ((4097,), "misaligned")]
    return flat + gen_inputs.row_shapes(device_type)


def _samples(family: str):
    def samples(device_type: str, form) -> list[Sample]:
        def extra(i: int, shape) -> dict:
            return {"scale": 8.0} if i % 5 == 4 else {}  # the tails: large |x|

        found = gen_inputs.samples_over(family, shapes(device_type), form.sweep, form.fixed, extra)
        return [s for s in found if form.supports(s)]

    return samples


def _make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    return {"x": gen_inputs.tensor(gen, sample.shape, sample, device, scale=sample.knob("scale"))}


def _shapes(sample: Sample, inputs: Inputs) -> dict:
    return {"y": sample.shape}


def _contract(family: str) -> Contract:
    fn, summary, names = FUNCTIONS[family]

    def reference(sample: Sample, inputs: Inputs) -> Outputs:
        return {"y": fn(inputs["x"].double())}

    return Contract(
        family=family, summary=summary, names=names,
        forms=(
            spec_form("(Tensor! out, Tensor input) -> ()", ("out:y", "x"), shapes=_shapes),
            spec_form("(Tensor input) -> Tensor", ("x",), ("y",), shapes=_shapes),
            spec_form("(Tensor! x) -> ()", ("io:x:y",), shapes=_shapes),
        ),
        samples=_samples(family), make=_make, reference=reference, tolerance=ACTIVATION_TOLERANCE,
        floor=ACTIVATION_FLOOR, shaped=gen_inputs.shaped_sample(family),
    )


CONTRACTS = tuple(_contract(family) for family in FUNCTIONS)
