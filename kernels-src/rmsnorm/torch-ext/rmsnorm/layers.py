"""Layers for `kernels.kernelize`: drop-in forwards for a model's RMSNorm."""

import torch
import torch.nn as nn

from ._ops import ops


class RMSNorm(nn.Module):
    """Replaces the forward of the RMSNorm modules kernels' mapping names
    `RMSNorm`: transformers' (`weight`, `variance_epsilon`: LlamaRMSNorm,
    Qwen3RMSNorm, ...) and diffusers' (`weight`, `eps`, optional `bias`;
    `weight` is None with `elementwise_affine=False`). Inference only: the op
    has no backward. Stateless, as kernels requires: it only reads the
    replaced module's attributes."""

    can_torch_compile: bool = True
    has_backward: bool = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        eps = getattr(self, "variance_epsilon", None)
        if eps is None:
            eps = self.eps
        weight = getattr(self, "weight", None)
        if weight is None:
            weight = torch.ones(hidden_states.shape[-1], dtype=hidden_states.dtype, device=hidden_states.device)
        elif weight.dtype != hidden_states.dtype:
            weight = weight.to(hidden_states.dtype)
        out = torch.empty(hidden_states.shape, dtype=hidden_states.dtype, device=hidden_states.device)
        ops.rms_norm(out, hidden_states, weight, float(eps))
        bias = getattr(self, "bias", None)
        if bias is not None:
            out = out + bias.to(out.dtype)
        return out


__all__ = ["RMSNorm"]
