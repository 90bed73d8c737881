"""Benchmark cases for geglu, in the contract of `pipeline/bench.py`.

Shapes (bf16): the feed-forward of diffusers' GEGLU blocks, tokens x 2*inner:
SDXL-sized (inner 5120) and LTX-Video-sized (hidden 2048, inner 8192), 4096
and 16384 tokens. Baselines: eager (diffusers' GEGLU body:
`hidden, gate = x.chunk(2, -1); hidden * F.gelu(gate)`) and the same body
through torch.compile (inductor). Both GELU forms are measured.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

DTYPE = torch.bfloat16


def eager_geglu(x: torch.Tensor, approximate: str) -> torch.Tensor:
    hidden, gate = x.chunk(2, dim=-1)
    return hidden * F.gelu(gate, approximate=approximate)


def _case(group: str, tokens: int, inner: int, approximate: str) -> dict:
    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(tokens * 13 + inner)
        x = torch.randn(tokens, 2 * inner, generator=g, device=device, dtype=DTYPE)
        out = torch.empty(tokens, inner, device=device, dtype=DTYPE)
        compiled = torch.compile(eager_geglu, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.geglu(x, approximate, out=out),
            "eager": lambda: eager_geglu(x, approximate),
            "torch.compile": lambda: compiled(x, approximate),
        }

    # Read both halves once, write the output once.
    nbytes = 3 * tokens * inner * DTYPE.itemsize
    return {
        "name": f"geglu/{approximate}/{tokens}x{2 * inner}",
        "op": f"geglu ({approximate})",
        "group": group,
        "shape": f"{tokens}x{2 * inner}",
        "dtype": "bfloat16",
        "bytes": nbytes,
        "setup": setup,
        "baselines": ("eager", "torch.compile"),
    }


def bench_cases() -> list[dict]:
    cases = [_case("LTX-Video FF", t, 8192, "none") for t in (4096, 16384)]
    cases += [_case("LTX-Video FF", 4096, 8192, "tanh"), _case("SDXL FF", 4096, 5120, "none")]
    return cases
