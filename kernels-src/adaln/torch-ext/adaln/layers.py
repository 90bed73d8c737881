"""Layers for `kernels.kernelize`: pure `forward`s, no constructor, no state of their own."""

from __future__ import annotations

import torch
from torch import nn

from . import adaln


class AdaLayerNormModulate(nn.Module):
    """`norm(x) * (1 + scale) + shift` for a block that keeps `eps` (LayerNorm without affine)."""

    eps: float
    can_torch_compile: bool = True
    has_backward: bool = False

    def forward(self, x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
        return adaln(x, scale, shift, eps=getattr(self, "eps", 1e-6), norm="layer")
