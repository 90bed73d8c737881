"""GEGLU: a gated GELU, `value * gelu(gate)`, fused into one pass over memory.

The input's last dimension holds the two halves. By default it is
`[value | gate]`, as diffusers' `GEGLU` splits `proj(x).chunk(2, -1)`;
`gate_first=True` reads `[gate | value]`, as vLLM's `gelu_and_mul` does.
`approximate` is `"none"` (erf) or `"tanh"`, as in `torch.nn.functional.gelu`.
"""

from __future__ import annotations

from typing import Optional

import torch

from ._ops import add_op_namespace_prefix, ops

_APPROXIMATE = {"none": False, "tanh": True}


def _out_shape(x: torch.Tensor) -> torch.Size:
    if x.dim() == 0 or x.shape[-1] % 2:
        raise ValueError(f"geglu: the last dimension must be even, got shape {tuple(x.shape)}")
    return x.shape[:-1] + (x.shape[-1] // 2,)


def geglu(
    x: torch.Tensor,
    approximate: str = "none",
    *,
    gate_first: bool = False,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Return `value * gelu(gate, approximate)` for `x = [value | gate]` on the last dimension."""
    if approximate not in _APPROXIMATE:
        raise ValueError(f"geglu: approximate must be 'none' or 'tanh', got {approximate!r}")
    shape = _out_shape(x)
    x = x.contiguous()
    if out is None:
        out = torch.empty(shape, dtype=x.dtype, device=x.device)
    ops.geglu(out, x, _APPROXIMATE[approximate], gate_first)
    return out


# torch.compile traces the op through this fake: it writes `out` in place and
# returns nothing, so there is nothing to allocate.
@torch.library.register_fake(add_op_namespace_prefix("geglu"))
def _geglu_fake(out: torch.Tensor, input: torch.Tensor, approximate_tanh: bool, gate_first: bool) -> None:
    return None


from . import layers  # noqa: E402  (layers use geglu above)

__all__ = ["geglu", "layers"]
