"""Adaptive layer norm: `norm(x) * (1 + scale) + shift`, fused into one pass.

The modulation of DiT, PixArt and LTX-Video transformer blocks: `x` is
`[B, S, D]` (or any `[..., D]`); `scale` and `shift` are per sample
(`[B, D]` or `[B, 1, D]`), per token (`[B, S, D]`) or shared (`[D]`).
`norm="layer"` is LayerNorm without affine (DiT, PixArt); `norm="rms"` is
RMSNorm without weight (LTX-Video's `norm1`/`norm2`).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["adaln", "layers"]

_NORMS = {"layer": False, "rms": True}


def _plan(x: torch.Tensor, mod: torch.Tensor) -> Tuple[torch.Tensor, int]:
    """The modulation to hand the kernel, and how many rows of x share one of its rows."""
    if mod.shape[-1] != x.shape[-1]:
        raise ValueError(f"adaln: scale/shift {tuple(mod.shape)} must end in x's last dim {x.shape[-1]}")
    if mod.dim() == 2 and x.dim() >= 3 and mod.shape[0] == x.shape[0]:
        mod = mod.unsqueeze(1)  # [B, D] is per sample, as diffusers' scale[:, None]
    if mod.dim() > x.dim():
        raise ValueError(f"adaln: scale/shift {tuple(mod.shape)} has more dims than x {tuple(x.shape)}")
    lead_x = list(x.shape[:-1])
    lead_m = [1] * (x.dim() - mod.dim()) + list(mod.shape[:-1])
    for xs, ms in zip(lead_x, lead_m):
        if ms not in (1, xs):
            raise ValueError(f"adaln: scale/shift {tuple(mod.shape)} does not broadcast against x {tuple(x.shape)}")
    # The kernel's mapping is row -> (row // seq) % M: sample dims first, then
    # broadcast dims. Leading broadcast dims wrap for free.
    kinds = ["eq" if ms == xs else "one" for xs, ms in zip(lead_x, lead_m)]
    first_eq = kinds.index("eq") if "eq" in kinds else len(kinds)
    rest = kinds[first_eq:]
    last_eq = -1
    for i, kind in enumerate(rest):
        if kind == "eq":
            last_eq = i
    mod = mod.contiguous()
    if all(k == "eq" for k in rest[: last_eq + 1]):
        seq = 1
        for size in lead_x[first_eq + last_eq + 1:]:
            seq *= size
        return mod, seq
    expanded = mod.reshape(lead_m + [mod.shape[-1]]).expand(*x.shape[:-1], mod.shape[-1])
    return expanded.contiguous(), 1


def adaln(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor,
    *,
    eps: float = 1e-6,
    norm: str = "layer",
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Return `norm(x) * (1 + scale) + shift`, normalising over the last dim."""
    if norm not in _NORMS:
        raise ValueError(f"adaln: norm must be 'layer' or 'rms', got {norm!r}")
    if scale.shape != shift.shape:
        raise ValueError(f"adaln: scale {tuple(scale.shape)} and shift {tuple(shift.shape)} differ in shape")
    if scale.dtype not in (torch.float32, x.dtype) or shift.dtype != scale.dtype:
        scale, shift = scale.float(), shift.float()
    x = x.contiguous()
    scale_k, seq = _plan(x, scale)
    shift_k, _ = _plan(x, shift)
    if out is None:
        out = torch.empty_like(x)
    ops.adaln(out, x, scale_k, shift_k, float(eps), _NORMS[norm], seq)
    return out


# torch.compile traces the op through this fake: it writes `out` in place.
@torch.library.register_fake(add_op_namespace_prefix("adaln"))
def _adaln_fake(out, x, scale, shift, eps, rms, seq) -> None:
    return None


from . import layers  # noqa: E402  (layers use adaln above)
