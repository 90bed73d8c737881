"""Comparing an output with its float64 reference, and tensors bit for bit."""

from __future__ import annotations

import math

# No kernel can beat the exact answer rounded to its output dtype: where that rounding
# alone is off by more than a bound allows (fp16 outputs in the subnormal range, such as
# a softmax over 262144 elements, each ~4e-6), the bound grows to this many times it.
ROUNDING_FACTOR = 2.0

# An element may differ from the reference by ELEMENT_FACTOR x the norm bound,
# relative to its own magnitude plus the output's RMS. Wide enough for rounding
# (a bf16 element is within 2^-8 of exact), narrow enough that an element the
# op never wrote, holding finite poison, shows.
ELEMENT_FACTOR = 8.0


def _bits(t):
    import torch

    t = t.detach().contiguous()
    if t.is_floating_point() or t.is_complex():
        return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def same_bits(a, b) -> bool:
    import torch

    return (tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
            and torch.equal(_bits(a), _bits(b).to(a.device)))


def changed_elements(a, b) -> int:
    """How many elements of `a` differ bitwise from `b` (same shape and dtype)."""
    return int((_bits(a) != _bits(b).to(a.device)).sum())


def compare(out, ref, bound: float, floor: float = 0.0) -> tuple[float, str]:
    """(relative norm error, problem or ""): shape, finiteness, norm bound, then each element.
    The norm error is relative to max(|ref|, floor * sqrt(n)).
    Worked in float32 unless the bound needs float64 (float32's rounding, 6e-8, is far
    below every bound of a low-precision output)."""
    import torch

    if not isinstance(out, torch.Tensor):
        return math.inf, f"got {type(out).__name__}, expected a tensor"
    if tuple(out.shape) != tuple(ref.shape):
        return math.inf, f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.numel() == 0:
        return 0.0, ""
    work = torch.float64 if bound < 1e-6 else torch.float32
    # copies (copy=True): both are changed in place below, and neither may be
    r = ref.detach().to(device=out.device, dtype=work, copy=True)
    diff = out.detach().to(work, copy=True).sub_(r).abs_()
    denom = max(float(r.norm()), floor * math.sqrt(r.numel()))
    err_norm = float(diff.norm())
    if not math.isfinite(err_norm):
        bad = int((~torch.isfinite(out)).sum())
        return math.inf, f"{bad} of {out.numel()} elements not written or not finite"
    err = err_norm / denom if denom > 0 else err_norm
    if err > bound and out.dtype != work and out.is_floating_point():
        rounded = ref.detach().to(device=out.device, dtype=out.dtype).to(work).sub_(r).norm()
        floor_err = float(rounded) / denom if denom > 0 else float(rounded)
        bound = max(bound, ROUNDING_FACTOR * floor_err)
    if err > bound:
        return err, f"relative error {err:.3g} > {bound:.1g}"
    rms = denom / math.sqrt(r.numel())
    allowed = r.abs_().mul_(ELEMENT_FACTOR * bound).add_(ELEMENT_FACTOR * bound * rms)
    wrong = diff > allowed
    if bool(wrong.any()):
        count = int(wrong.sum())
        i = int(wrong.reshape(-1).nonzero()[0])
        got, want = float(out.reshape(-1)[i]), float(ref.reshape(-1)[i])
        return err, (f"{count} of {out.numel()} elements are wrong although the norm error {err:.3g} is within "
                     f"{bound:.1g} (first at flat index {i}: {got:.6g}, expected {want:.6g})")
    return err, ""
