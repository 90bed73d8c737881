"""The op `softmax(Tensor! out, Tensor input) -> ()`: softmax over the last dimension.

Registered from Python with `torch.library.custom_op` in this build's
namespace (`add_op_namespace_prefix`), so the noarch package has no compiled
extension. CUDA tensors go to the Triton kernels (`_triton.py`, imported on
first use: the CPU variant needs no Triton). Other devices take torch's own
fused softmax computed in float32 (the same arithmetic: subtract the row
maximum, exponentiate, divide by the sum; one rounding on the store), so the
CPU variant is as fast there as torch is.
"""

from __future__ import annotations

import torch

from ._ops import add_op_namespace_prefix


def _softmax_torch(out: torch.Tensor, x: torch.Tensor) -> None:
    out.copy_(torch.softmax(x, dim=-1, dtype=torch.float32))


@torch.library.custom_op(add_op_namespace_prefix("softmax"), mutates_args={"out"})
def _softmax(out: torch.Tensor, input: torch.Tensor) -> None:
    if out.shape != input.shape or out.dtype != input.dtype or out.device != input.device:
        raise ValueError(f"softmax: out must match input (shape {tuple(input.shape)}, {input.dtype}, "
                         f"{input.device}); got shape {tuple(out.shape)}, {out.dtype}, {out.device}")
    if input.dim() == 0:
        raise ValueError("softmax: input must have at least one dimension")
    if out.numel() == 0:
        return
    if input.device.type == "cuda":
        from . import _triton  # Triton ships with CUDA torch; the CPU variant never imports it

        _triton.softmax_rows(out, input)
    else:
        _softmax_torch(out, input)


@_softmax.register_fake
def _(out: torch.Tensor, input: torch.Tensor) -> None:
    return None
