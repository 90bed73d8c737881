"""Triton kernels for the row softmax (imported only for CUDA tensors).

Rows of up to FUSED_MAX elements are held in registers by one program: one
read, one write, which is the least memory traffic there is. Longer rows
(vocabulary-sized logits) take two passes over tiles: an online maximum and
sum (each tile rescales the running sum to the new maximum), then the
normalised write; the second read is mostly served from L2.

Arithmetic is float32 whatever the input dtype; the store rounds once.
Offsets are 64-bit: rows x columns can exceed 2**31 elements.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

FUSED_MAX = 16384  # the longest row one program keeps in registers
TILE = 4096  # tile of the two-pass kernel


@triton.jit
def _softmax_fused(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    e = tl.where(mask, e, 0.0)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_two_pass(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * n_cols
    cols = tl.arange(0, BLOCK)
    # Per-lane running maximum and sum, reduced once at the end.
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # A lane that has seen only -inf keeps a zero sum (exp(-inf - -inf) would be NaN).
        safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - safe) + tl.where(mask, tl.exp(x - safe), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    inv = 1.0 / total
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) * inv
        tl.store(out_ptr + base + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def _warps(block: int) -> int:
    return 4 if block <= 2048 else 8 if block <= 8192 else 16


def softmax_rows(out: torch.Tensor, x: torch.Tensor) -> None:
    """out = softmax(x, dim=-1); both on one CUDA device, same shape and dtype."""
    n_cols = x.shape[-1]
    x2 = x.contiguous().view(-1, n_cols)
    target = out if out.is_contiguous() else torch.empty_like(x2)
    y2 = target.view(-1, n_cols)
    grid = (x2.shape[0],)
    with torch.cuda.device(x.device):
        if n_cols <= FUSED_MAX:
            block = triton.next_power_of_2(n_cols)
            _softmax_fused[grid](y2, x2, n_cols, BLOCK=block, num_warps=_warps(block))
        else:
            _softmax_two_pass[grid](y2, x2, n_cols, BLOCK=TILE, num_warps=8)
    if target is not out:
        out.copy_(target.view(out.shape))
