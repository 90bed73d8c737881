"""Rotary position embedding (RoPE) for 1D text and 3D video positions.

`apply_rotary_emb(x, cos, sin)` rotates channel pairs of `x` by the angles
whose cosines and sines are given as full-width tables (one value per
channel), the layout diffusers and transformers use:

- `interleaved=True` (LTX-Video, Flux, GPT-J): pairs are channels (2i, 2i+1),
  as in diffusers' `apply_rotary_emb` for LTX-Video;
- `interleaved=False` (Llama, GPT-NeoX, `rotate_half`): pairs are channels
  j and j + D/2 of each head of width D.

The table's width D is the rotated width: the whole hidden size when the
table spans all heads (LTX-Video: `x` and `cos` both `[B, S, heads*head_dim]`)
or one head (`x` `[..., heads*D]` or `[B, H, S, D]` with `cos` `[S, D]`).
Table dims broadcast against `x`'s leading dims like PyTorch broadcasting;
the kernel handles one broadcast block in the middle (`[B, 1, S, D]` against
`[B, H, S, D]`) without copying, and materialises other patterns.

`ltx_video_rotary_freqs` and `rotary_freqs_1d` build the tables (in float32,
as diffusers does); the kernel reads float32 or `x`'s dtype tables.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["apply_rotary_emb", "apply_rotary_emb_", "rotary_freqs_1d", "ltx_video_rotary_freqs"]


def _plan(x: torch.Tensor, table: torch.Tensor) -> Tuple[torch.Tensor, int, int]:
    """The table to hand the kernel and its (inner, mid) row mapping."""
    if table.dim() > x.dim():
        raise ValueError(f"rope: table {tuple(table.shape)} has more dims than x {tuple(x.shape)}")
    if x.shape[-1] % table.shape[-1] or table.shape[-1] % 2:
        raise ValueError(f"rope: table width {table.shape[-1]} must be even and divide x's last dim {x.shape[-1]}")
    lead_x = list(x.shape[:-1])
    lead_t = [1] * (x.dim() - table.dim()) + list(table.shape[:-1])
    kinds = []
    for xs, ts in zip(lead_x, lead_t):
        if ts == xs:
            kinds.append("eq")
        elif ts == 1:
            kinds.append("one")
        else:
            raise ValueError(f"rope: table {tuple(table.shape)} does not broadcast against x {tuple(x.shape)}")
    # Leading broadcast dims cost nothing (the row index wraps modulo the table).
    while kinds and kinds[0] == "one":
        kinds.pop(0)
        lead_x.pop(0)
    blocks = []  # runs of equal kinds: [kind, product of x's sizes]
    for kind, size in zip(kinds, lead_x):
        if blocks and blocks[-1][0] == kind:
            blocks[-1][1] *= size
        else:
            blocks.append([kind, size])
    table = table.contiguous()
    if not any(kind == "one" for kind, _ in blocks):
        return table, max(1, table.numel() // table.shape[-1]), 1
    if len(blocks) <= 3 and blocks[0][0] == "eq" and blocks[1][0] == "one":
        inner = blocks[2][1] if len(blocks) == 3 else 1
        return table, inner, blocks[1][1]
    expanded = table.reshape(lead_t + [table.shape[-1]]).expand(*x.shape[:-1], table.shape[-1])
    return expanded.contiguous(), max(1, expanded.numel() // table.shape[-1]), 1


def _tables(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    if cos.shape != sin.shape:
        raise ValueError(f"rope: cos {tuple(cos.shape)} and sin {tuple(sin.shape)} differ in shape")
    if cos.dtype not in (torch.float32, x.dtype) or sin.dtype != cos.dtype:
        cos, sin = cos.float(), sin.float()
    cos_k, inner, mid = _plan(x, cos)
    sin_k, _, _ = _plan(x, sin)
    return cos_k, sin_k, inner, mid


def apply_rotary_emb(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    *,
    interleaved: bool = True,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Out of place: return `x` rotated by the angles of `cos`/`sin`."""
    x_c = x.contiguous()
    cos_k, sin_k, inner, mid = _tables(x_c, cos, sin)
    if out is None:
        out = torch.empty_like(x_c)
    ops.rope(out, x_c, cos_k, sin_k, interleaved, inner, mid)
    return out


def apply_rotary_emb_(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, interleaved: bool = True) -> torch.Tensor:
    """In place: rotate `x` and return it."""
    if not x.is_contiguous():
        return x.copy_(apply_rotary_emb(x, cos, sin, interleaved=interleaved))
    cos_k, sin_k, inner, mid = _tables(x, cos, sin)
    ops.rope_inplace(x, cos_k, sin_k, interleaved, inner, mid)
    return x


def rotary_freqs_1d(
    positions,
    dim: int,
    *,
    theta: float = 10000.0,
    interleaved: bool = True,
    device: Optional[torch.device] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables `[S, dim]` for 1D (text) positions: an int (0..S-1) or a tensor of positions."""
    if dim % 2:
        raise ValueError(f"rope: dim must be even, got {dim}")
    if isinstance(positions, int):
        positions = torch.arange(positions, device=device, dtype=torch.float32)
    positions = positions.to(device=device, dtype=torch.float32)
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32) / dim))
    angles = positions[..., None] * inv_freq  # [..., dim/2]
    if interleaved:
        angles = angles.repeat_interleave(2, dim=-1)
    else:
        angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def ltx_video_rotary_freqs(
    batch_size: int,
    num_frames: int,
    height: int,
    width: int,
    dim: int,
    *,
    theta: float = 10000.0,
    base_num_frames: int = 20,
    base_height: int = 2048,
    base_width: int = 2048,
    patch_size: int = 1,
    patch_size_t: int = 1,
    rope_interpolation_scale: Optional[Sequence[float]] = None,
    device: Optional[torch.device] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables `[B, F*H*W, dim]` for a 3D video grid, as diffusers' LTXVideoRotaryPosEmbed makes them.

    Positions run frame-major (f, h, w); each third of the `dim // 6 * 6`
    channels past a padding of `dim % 6` (cos 1, sin 0) rotates by one axis.
    """
    grid = torch.stack(
        torch.meshgrid(
            torch.arange(num_frames, dtype=torch.float32, device=device),
            torch.arange(height, dtype=torch.float32, device=device),
            torch.arange(width, dtype=torch.float32, device=device),
            indexing="ij",
        ),
        dim=0,
    )  # [3, F, H, W]
    if rope_interpolation_scale is not None:
        scale = (
            rope_interpolation_scale[0] * patch_size_t / base_num_frames,
            rope_interpolation_scale[1] * patch_size / base_height,
            rope_interpolation_scale[2] * patch_size / base_width,
        )
        grid = grid * torch.tensor(scale, dtype=torch.float32, device=device).view(3, 1, 1, 1)
    grid = grid.flatten(1).transpose(0, 1)  # [F*H*W, 3]
    freqs = theta ** torch.linspace(
        math.log(1.0, theta), math.log(theta, theta), dim // 6, device=device, dtype=torch.float32
    )
    freqs = freqs * math.pi / 2.0
    freqs = freqs * (grid.unsqueeze(-1) * 2 - 1)  # [N, 3, dim//6]
    freqs = freqs.transpose(-1, -2).flatten(1)  # [N, dim//6 * 3]
    cos = freqs.cos().repeat_interleave(2, dim=-1)
    sin = freqs.sin().repeat_interleave(2, dim=-1)
    pad = dim % 6
    if pad:
        cos = torch.cat([torch.ones_like(cos[:, :pad]), cos], dim=-1)
        sin = torch.cat([torch.zeros_like(sin[:, :pad]), sin], dim=-1)
    return cos.unsqueeze(0).expand(batch_size, -1, -1), sin.unsqueeze(0).expand(batch_size, -1, -1)


# torch.compile traces the ops through these fakes: both write in place.
@torch.library.register_fake(add_op_namespace_prefix("rope"))
def _rope_fake(out, x, cos, sin, interleaved, inner, mid) -> None:
    return None


@torch.library.register_fake(add_op_namespace_prefix("rope_inplace"))
def _rope_inplace_fake(x, cos, sin, interleaved, inner, mid) -> None:
    return None
