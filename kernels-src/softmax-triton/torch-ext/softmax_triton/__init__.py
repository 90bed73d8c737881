"""Softmax over the last dimension: Triton on CUDA, torch's own softmax (float32) on the CPU.

A noarch kernel (`[torch-noarch]`): pure Python, packaged once per backend
(`torch-cuda`, `torch-cpu`) and loaded with `kernels.get_kernel`.
"""

from __future__ import annotations

from typing import Optional

import torch

from ._ops import ops
from .op import _softmax  # noqa: F401  (registers the op in this build's namespace)


def softmax(x: torch.Tensor, *, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """`torch.softmax(x, dim=-1)` in one pass over memory (float32 arithmetic, one rounding)."""
    x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    ops.softmax(out, x)
    return out


from . import layers  # noqa: E402  (layers use softmax above)

__all__ = ["layers", "softmax"]
