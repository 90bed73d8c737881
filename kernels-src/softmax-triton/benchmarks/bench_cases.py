"""Benchmark cases for softmax-triton, in the contract of `pipeline/bench.py`.

Shapes: attention scores of one layer (32 heads x 1024 queries, 1024 and
4096 keys), rows of 16384 (the longest one Triton program holds) and
vocabulary logits (Qwen3's 151936 columns: the two-pass kernel), in bfloat16,
plus rows of 4096 in float32. Baselines: eager (the textbook composite:
`exp(x - max)`, then divided by the sum, in float32), the fused torch op
`torch.softmax`, and the composite through torch.compile (inductor).
"""

from __future__ import annotations

import torch


def eager_softmax(x: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    e = (xf - xf.amax(dim=-1, keepdim=True)).exp()
    return (e / e.sum(dim=-1, keepdim=True)).to(x.dtype)


def _case(group: str, rows: int, cols: int, dtype: torch.dtype) -> dict:
    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(rows * 7 + cols)
        x = torch.randn(rows, cols, generator=g, device=device, dtype=dtype)
        out = torch.empty_like(x)
        compiled = torch.compile(eager_softmax, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.softmax(x, out=out),
            "eager": lambda: eager_softmax(x),
            "torch.softmax": lambda: torch.softmax(x, dim=-1),
            "torch.compile": lambda: compiled(x),
        }

    name = str(dtype).removeprefix("torch.")
    return {
        "name": f"softmax/{name}/{rows}x{cols}",
        "op": "softmax",
        "group": group,
        "shape": f"{rows}x{cols}",
        "dtype": name,
        "bytes": 2 * rows * cols * dtype.itemsize,  # read the input once, write the output once
        "setup": setup,
        "baselines": ("eager", "torch.softmax", "torch.compile"),
    }


def bench_cases() -> list[dict]:
    bf16 = torch.bfloat16
    return [
        _case("attention scores", 32 * 1024, 1024, bf16),
        _case("attention scores", 32 * 1024, 4096, bf16),
        _case("rows", 8192, 16384, bf16),
        _case("vocabulary logits", 1024, 151936, bf16),
        _case("rows (float32)", 16384, 4096, torch.float32),
    ]
