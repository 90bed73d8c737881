"""Layers for `kernels.kernelize`: drop-in forwards for a model's RMSNorm."""

import torch
import torch.nn as nn

from ._ops import ops


class RMSNorm(nn.Module):
    """Replaces the forward of an RMSNorm module that has `weight` and
    `variance_epsilon` (the Hugging Face transformers convention, e.g.
    LlamaRMSNorm, Qwen3RMSNorm). Inference only: the op has no backward."""

    can_torch_compile: bool = True
    has_backward: bool = False

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        if weight.dtype != hidden_states.dtype:
            weight = weight.to(hidden_states.dtype)
        out = torch.empty(hidden_states.shape, dtype=hidden_states.dtype, device=hidden_states.device)
        ops.rms_norm(out, hidden_states, weight, float(self.variance_epsilon))
        return out


__all__ = ["RMSNorm"]
