"""Softmax over the last dimension: y = exp(x - max(x)) / sum(exp(x - max(x))).

Forms: any schema the roles fit, among them the out-argument `softmax(Tensor!
out, Tensor input) -> ()`, functional `softmax(Tensor input) -> Tensor` and
`softmax(Tensor input, int dim) -> Tensor` called with dim = -1. Some samples have inputs of magnitude ~100: an
implementation that does not subtract the row maximum overflows.
"""

from __future__ import annotations

import torch

from pipeline.contracts import inputs as gen_inputs
from pipeline.contracts import roles
from pipeline.contracts.base import REDUCTION_TOLERANCE, Contract, Inputs, Outputs, Sample
from pipeline.contracts.roles import Fixed, In, Out, Signature


def _samples(device_type: str, form) -> list[Sample]:
    def extra(i: int, shape) -> dict:
        return {"scale": 30.0} if i % 4 == 3 else {}

    found = gen_inputs.samples_over("softmax", gen_inputs.row_shapes(device_type), form.sweep, form.fixed, extra)
    return [s for s in found if form.supports(s)]


def _make(sample: Sample, gen: torch.Generator, device: torch.device) -> Inputs:
    return {"x": gen_inputs.tensor(gen, sample.shape, sample, device, scale=sample.knob("scale"))}


def _reference(sample: Sample, inputs: Inputs) -> Outputs:
    return {"y": torch.softmax(inputs["x"].double(), dim=-1)}


SIGNATURE = Signature(inputs=(In("x", names=roles.X, inplace="y"),), outputs=(Out("y", names=roles.Y),),
                      fixed=(Fixed(("dim", "axis"), -1),))
SCHEMAS = ("(Tensor! out, Tensor input) -> ()", "(Tensor input) -> Tensor", "(Tensor input, int dim) -> Tensor")


SOFTMAX = Contract(
    family="softmax",
    summary="y = exp(x - max(x, -1)) / sum(exp(x - max(x, -1)), -1)",
    names=("softmax", "softmax_lastdim", "fused_softmax", "online_softmax"),
    forms=roles.forms_of(SIGNATURE, SCHEMAS, "softmax"),
    samples=_samples,
    make=_make,
    reference=_reference,
    tolerance=REDUCTION_TOLERANCE,
    reduces_last=True,
    shaped=gen_inputs.shaped_sample("softmax"),
    signature=SIGNATURE,
)

CONTRACTS = (SOFTMAX,)
