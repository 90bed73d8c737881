"""Elementwise activations: relu, silu, gelu (erf), gelu with the tanh
approximation, vLLM's gelu_new and gelu_fast (the tanh approximation as GPT-2
and vLLM's kernels write it: 0.79788456 for sqrt(2/pi), and for gelu_fast
x * (1 + 0.044715 x**2) for x + 0.044715 x**3), quick gelu.

Any schema the roles fit: the out-argument `relu(Tensor! out, Tensor input)
-> ()` that kernels-community's relu and activation kernels register (also
with the input marked writable, as megablocks' are), the functional
`relu(Tensor input) -> Tensor`, and in place `relu(Tensor! x) -> ()`.
"""

from __future__ import annotations

import math

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts import roles
from pipeline.contracts.base import ACTIVATION_FLOOR, ACTIVATION_TOLERANCE, Contract, Inputs, Outputs, Sample
from pipeline.contracts.roles import In, Out, Signature


def gelu(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def gelu_new(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * (x + 0.044715 * x.pow(3))))


def gelu_fast(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.79788456 * x * (1.0 + 0.044715 * x * x)))


def silu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


FUNCTIONS = {
    "relu": (lambda x: x.clamp_min(0.0), "y = max(x, 0)", ("relu",)),
    "silu": (silu, "y = x * sigmoid(x)", ("silu", "swish")),
    "gelu": (gelu, "y = x/2 * (1 + erf(x / sqrt(2)))", ("gelu", "gelu_erf")),
    "gelu_tanh": (gelu_tanh, "y = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x**3)))",
                  ("gelu_tanh", "gelu_pytorch_tanh", "gelu_approx", "approx_gelu")),
    "gelu_new": (gelu_new, "y = x/2 * (1 + tanh(0.79788456 * (x + 0.044715 x**3)))  (GPT-2)", ("gelu_new",)),
    "gelu_fast": (gelu_fast, "y = x/2 * (1 + tanh(0.79788456 x * (1 + 0.044715 x**2)))", ("gelu_fast",)),
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


SIGNATURE = Signature(inputs=(In("x", names=roles.X, inplace="y"),), outputs=(Out("y", names=roles.Y),))
SCHEMAS = ("(Tensor! out, Tensor input) -> ()", "(Tensor input) -> Tensor", "(Tensor! x) -> ()")


def _contract(family: str) -> Contract:
    fn, summary, names = FUNCTIONS[family]

    def reference(sample: Sample, inputs: Inputs) -> Outputs:
        return {"y": fn(inputs["x"].double())}

    return Contract(
        family=family, summary=summary, names=names, forms=roles.forms_of(SIGNATURE, SCHEMAS, family),
        samples=_samples(family), make=_make, reference=reference, tolerance=ACTIVATION_TOLERANCE,
        floor=ACTIVATION_FLOOR, shaped=gen_inputs.shaped_sample(family), signature=SIGNATURE,
    )


CONTRACTS = tuple(_contract(family) for family in FUNCTIONS)
