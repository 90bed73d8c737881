"""Benchmark cases for geglu, in the contract of `pipeline/bench.py`.

Shapes (bf16), tokens x 2*inner:
- diffusers' GEGLU blocks, `[value | gate]`, erf form: LTX-Video-sized
  (hidden 2048, inner 8192) at 4096, 6144 (a 121-frame 512x768 video) and
  16384 tokens, and SDXL-sized (inner 5120); the tanh form at 4096 tokens.
- Gemma-2-9B's MLP as vLLM's `gelu_and_mul` runs it (`[gate | value]`, tanh
  form, intermediate 14336): 2048 tokens of prefill and decode batches of 1
  to 64 tokens (cases of at most 8 MiB are also timed under CUDA-graph replay).
Baselines: eager (`hidden, gate = x.chunk(2, -1); hidden * F.gelu(gate)`, or
vLLM's reference `F.gelu(x[..., :d]) * x[..., d:]` for gate-first) and the
same body through torch.compile (inductor). `bench_cases(dtype)` gives the same
shapes in float16 or float32 (`pipeline bench --dtype`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def eager_geglu(x: torch.Tensor, approximate: str) -> torch.Tensor:
    hidden, gate = x.chunk(2, dim=-1)
    return hidden * F.gelu(gate, approximate=approximate)


def eager_gelu_and_mul(x: torch.Tensor, approximate: str) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.gelu(x[..., :d], approximate=approximate) * x[..., d:]


def _case(group: str, tokens: int, inner: int, approximate: str, dtype: str, gate_first: bool = False) -> dict:
    body = eager_gelu_and_mul if gate_first else eager_geglu
    scalar = getattr(torch, dtype)

    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(tokens * 13 + inner)
        x = torch.randn(tokens, 2 * inner, generator=g, device=device, dtype=scalar)
        out = torch.empty(tokens, inner, device=device, dtype=scalar)
        compiled = torch.compile(body, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.geglu(x, approximate, gate_first=gate_first, out=out),
            "eager": lambda: body(x, approximate),
            "torch.compile": lambda: compiled(x, approximate),
        }

    # Read both halves once, write the output once.
    nbytes = 3 * tokens * inner * scalar.itemsize
    order = "gate-first/" if gate_first else ""
    return {
        "name": f"geglu/{approximate}/{order}{tokens}x{2 * inner}",
        "op": f"geglu ({approximate}{', gate first' if gate_first else ''})",
        "group": group,
        "shape": f"{tokens}x{2 * inner}",
        "dtype": dtype,
        "bytes": nbytes,
        "setup": setup,
        "baselines": ("eager", "torch.compile"),
    }


def bench_cases(dtype: str = "bfloat16") -> list[dict]:
    cases = [_case("LTX-Video FF", t, 8192, "none", dtype) for t in (4096, 6144, 16384)]
    cases += [_case("LTX-Video FF", 4096, 8192, "tanh", dtype), _case("SDXL FF", 4096, 5120, "none", dtype)]
    cases += [_case("Gemma-2-9B MLP", t, 14336, "tanh", dtype, gate_first=True) for t in (2048, 1, 8, 32, 64)]
    return cases
