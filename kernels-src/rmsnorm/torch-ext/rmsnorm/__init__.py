"""RMSNorm and fused residual-add RMSNorm (CUDA and CPU).

    out = x * rsqrt(mean(x**2, -1) + eps) * weight

`fused_add_rms_norm` first forms `residual_out = x + residual` (rounded to the
input dtype) and normalises that, as a decoder layer does between blocks.
Any number of leading dimensions; any hidden size; float32/float16/bfloat16.
"""

from typing import Optional, Tuple

import torch

from . import layers
from ._ops import add_op_namespace_prefix, ops


def _new_like(x: torch.Tensor) -> torch.Tensor:
    # torch.empty, not empty_like: outputs are always contiguous, whatever
    # the input's strides.
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """RMSNorm over the last dimension of `x`. `out` (contiguous, x's shape
    and dtype) receives the result if given."""
    if out is None:
        out = _new_like(x)
    ops.rms_norm(out, x, weight, float(eps))
    return out


def fused_add_rms_norm(
    x: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
    residual_out: Optional[torch.Tensor] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Returns `(rms_norm(x + residual), x + residual)`. `out` and
    `residual_out` must not alias the inputs."""
    if out is None:
        out = _new_like(x)
    if residual_out is None:
        residual_out = _new_like(x)
    ops.fused_add_rms_norm(out, residual_out, x, residual, weight, float(eps))
    return out, residual_out


# Shapes for tracing (torch.compile, FakeTensor): the ops only write their
# output arguments, so the fakes have nothing to return.
@torch.library.register_fake(add_op_namespace_prefix("rms_norm"))
def _rms_norm_fake(out: torch.Tensor, input: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    torch._check(out.shape == input.shape, lambda: "rms_norm: out must have the input's shape")
    torch._check(weight.dim() == 1 and weight.shape[0] == input.shape[-1], lambda: "rms_norm: bad weight shape")
    return None


@torch.library.register_fake(add_op_namespace_prefix("fused_add_rms_norm"))
def _fused_add_rms_norm_fake(
    out: torch.Tensor,
    residual_out: torch.Tensor,
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
) -> None:
    torch._check(out.shape == input.shape, lambda: "fused_add_rms_norm: out must have the input's shape")
    torch._check(residual.shape == input.shape, lambda: "fused_add_rms_norm: residual must have the input's shape")
    torch._check(residual_out.shape == input.shape, lambda: "fused_add_rms_norm: bad residual_out shape")
    return None


__all__ = ["rms_norm", "fused_add_rms_norm", "layers", "ops"]
