"""Layers for `kernels.kernelize`: pure `forward`s, no constructor, no state of their own."""

from __future__ import annotations

import torch
from torch import nn

from . import geglu


class GEGLU(nn.Module):
    """diffusers' `GEGLU` (`proj`, then `value * gelu(gate)`) with the fused kernel."""

    proj: nn.Linear
    can_torch_compile: bool = True
    has_backward: bool = False

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        return geglu(self.proj(hidden_states), getattr(self, "approximate", "none"))
