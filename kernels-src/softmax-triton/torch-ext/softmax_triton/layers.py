"""Layers for `kernels.kernelize`: pure `forward`s, no constructor, no state of their own."""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from . import softmax


class Softmax(nn.Module):
    """`torch.nn.Softmax`: the kernel for the last dimension, torch's own op for any other."""

    dim: Optional[int]  # set by the module it replaces (an annotation, not a member)
    can_torch_compile: bool = True
    has_backward: bool = False

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        dim = getattr(self, "dim", None)
        if input.dim() > 0 and dim in (-1, input.dim() - 1):
            return softmax(input)
        # Another dimension, or dim=None (torch's legacy implicit choice): torch's own op.
        return nn.functional.softmax(input, dim)
