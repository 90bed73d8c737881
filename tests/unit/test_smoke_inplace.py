"""A project case whose output is also an input (`inplace`): never poisoned, and
its reference sees the drawn values, so an in-place op is judged on what it was
given; one that leaves x alone or writes garbage still fails."""

from __future__ import annotations

import torch

from pipeline.smoke.cases import project_case
from pipeline.smoke.harness import RunState, run_seed


def _case() -> dict:
    def make(device, gen):
        return (torch.randn(4, 8, generator=gen).to(device), 3.0)

    return {"name": "scale/inplace", "op": "scale_", "make": make, "outputs": (0,), "inplace": (0,),
            "reference": lambda x, k: (x.double() * k,)}


def _judge(op) -> bool:
    result, _ = run_seed(op, project_case(_case()), torch.device("cpu"), 0, RunState())
    return result.passed


def test_an_inplace_op_is_judged_on_the_values_it_was_given():
    assert _judge(lambda x, k: x.mul_(k))


def test_an_inplace_op_that_does_nothing_or_writes_garbage_fails():
    assert not _judge(lambda x, k: None)
    assert not _judge(lambda x, k: x.fill_(1.0))
