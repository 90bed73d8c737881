"""What an output buffer holds when the op is called.

Drawn at random per call, so that a kernel cannot tell a test from real use:
NaN, random finite values, the previous call's output, or the reference answer
for a different input (another draw's reference, rows reversed): what a kernel
that skips its work, or serves a cached answer, would leave there. Every mode
comes once, in random order, before any repeats (over all calls of a case). A contiguous output is a view into a larger buffer whose guard
bands hold random values, checked bit for bit after the call; the buffer is
kept, so later calls write to the same addresses.
"""

from __future__ import annotations

import math
import random

from pipeline.smoke.compare import same_bits

MODES = ("nan", "random", "previous", "other-reference")
GUARD = 64  # elements of guard band on each side of an output


class Schedule:
    """The poison of each call of one case: a random order of every mode, repeated."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.queue: list[str] = []

    def next(self) -> str:
        if not self.queue:
            self.queue = list(MODES)
            self.rng.shuffle(self.queue)
        return self.queue.pop()


def random_values(n: int, dtype, device, rng: random.Random):
    """Finite values over a wide, random range of magnitudes, in `dtype`."""
    import torch

    # drawn where the output lives: a CPU draw of a benchmark-sized poison dominates a GPU call
    gen = torch.Generator(device=device).manual_seed(rng.getrandbits(62))
    v = torch.randn(n, generator=gen, dtype=torch.float32, device=device) * (10.0 ** rng.uniform(-2.0, 3.0))
    if dtype == torch.float16:
        v = v.clamp(-60000.0, 60000.0)
    return v.to(device=device, dtype=dtype)


def _fill(t, mode: str, rng: random.Random, other, previous) -> None:
    import torch

    n = t.numel()
    if n == 0 or not t.is_floating_point():
        return
    if mode == "nan":
        t.fill_(float("nan"))
        return
    if mode == "previous" and previous is not None and previous.numel() > 0:
        src = previous.reshape(-1).to(device=t.device, dtype=torch.float32)
        src = src.repeat(math.ceil(n / src.numel()))[:n].nan_to_num(0.0)
        t.copy_(src.view(t.shape).clamp(-60000.0, 60000.0) if t.dtype == torch.float16 else src.view(t.shape))
        return
    if mode == "other-reference" and other is not None and other.numel() == n:
        # flipped: the answer for yet another input (rows in reverse), not the previous output
        src = other.reshape(t.shape).to(device=t.device)
        src = src.flip(0) if src.dim() > 0 else src
        t.copy_(src.clamp(-60000.0, 60000.0) if t.dtype == torch.float16 else src)
        return
    t.copy_(random_values(n, t.dtype, t.device, rng).view(t.shape))


def prepare(call) -> None:
    """Replace each contiguous floating output by a view into a guarded buffer (once per call object)."""
    import torch

    for pos in call.poison:
        t = call.args[pos]
        if pos in call.guards or not isinstance(t, torch.Tensor) or not t.is_floating_point():
            continue
        if t.is_contiguous():
            buf = torch.empty(t.numel() + 2 * GUARD, dtype=t.dtype, device=t.device)
            call.args[pos] = buf[GUARD:GUARD + t.numel()].view(t.shape)
            call.guards[pos] = [buf, None]


def poison(call, mode: str, rng: random.Random, others: dict, previous) -> None:
    """Fill every out-of-place output (and its guard bands) for the next call."""
    import torch

    for pos in call.poison:
        t = call.args[pos]
        if not isinstance(t, torch.Tensor):
            continue
        if pos in call.guards:
            buf = call.guards[pos][0]
            band = random_values(2 * GUARD, buf.dtype, buf.device, rng)
            buf[:GUARD] = band[:GUARD]
            buf[-GUARD:] = band[GUARD:]
            call.guards[pos][1] = band
        _fill(t, mode, rng, others.get(pos), previous)


def guards_intact(call) -> list[str]:
    import torch

    problems = []
    for pos, (buf, band) in call.guards.items():
        seen = torch.cat([buf[:GUARD], buf[-GUARD:]])
        if band is not None and not same_bits(seen, band):
            problems.append(f"argument {pos}: wrote outside the output (guard band changed)")
    return problems
