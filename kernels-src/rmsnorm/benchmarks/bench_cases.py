"""Benchmark cases for rmsnorm, in the contract of `pipeline/bench.py`.

Shapes (bf16): the Qwen3-8B decoder (hidden 4096; 128 to 32768 tokens, and
decode batches of 1 to 64 tokens), Qwen3's per-head q/k norms (tokens x heads
rows of head_dim 128, and 64), the hidden sizes of larger models (5120:
Qwen3-32B; 7168: DeepSeek-V3; 8192: Llama-3-70B; 16384: Llama-3-405B, with
their decode batches), and the LTX-Video transformer (hidden 2048 and 3072).
Cases of at most 8 MiB are also timed under CUDA-graph replay (pipeline/bench.py).
`bench_cases(dtype)` gives the same shapes in float16 or float32 (`pipeline bench
--dtype`). Baselines:

* eager: the composite the Hugging Face blog post measured against
  (`x.float()`, `pow(2).mean(-1)`, `rsqrt`, multiply, cast back, times weight),
* F.rms_norm: PyTorch's fused op,
* torch.compile: the eager composite through torch.compile (inductor).

fused_add_rms_norm is measured against eager `x + residual` followed by
F.rms_norm, and against torch.compile of add + composite.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

EPS = 1e-6

QWEN3_TOKENS = (128, 512, 1024, 2048, 4096, 8192, 16384, 32768)
DECODE_TOKENS = (1, 8, 32, 64)
LTX_TOKENS = (1024, 4096, 8192, 16384)
# Per-head norms: rows = tokens x heads (Qwen3-8B: 32 q heads, 8 k heads).
# 512 tokens of q heads, 4096 tokens of k heads and of q heads: the bounds of rows_head's rule.
PER_HEAD = ((2048 * 32, 128), (70000, 128), (8192 * 32, 128), (2048 * 32, 64), (8192 * 32, 64), (64 * 32, 128),
            (512 * 32, 128), (4096 * 8, 128), (4096 * 32, 128))
# (group, rows, hidden): larger models' hidden sizes, prefill and decode.
WIDE = (
    ("Qwen3-32B", 8192, 5120),
    ("DeepSeek-V3", 2048, 7168), ("DeepSeek-V3", 8192, 7168), ("DeepSeek-V3", 64, 7168),
    ("Llama-3-70B", 4096, 8192), ("Llama-3-70B", 1, 8192), ("Llama-3-70B", 64, 8192),
    ("Llama-3-405B", 2048, 16384), ("Llama-3-405B", 1, 16384), ("Llama-3-405B", 64, 16384),
)


def eager_rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    # The blog post's baseline (transformers' LlamaRMSNorm.forward).
    input_dtype = x.dtype
    h = x.float()
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return weight * h.to(input_dtype)


def eager_add_rms_norm(x, residual, weight, eps: float = EPS):
    s = x + residual
    return eager_rms_norm(s, weight, eps), s


def add_then_f_rms_norm(x, residual, weight, eps: float = EPS):
    s = x + residual
    return F.rms_norm(s, (s.shape[-1],), weight, eps), s


def _rms_norm_case(group: str, tokens: int, hidden: int, dtype: str) -> dict:
    scalar = getattr(torch, dtype)

    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(tokens * 7 + hidden)
        x = torch.randn(tokens, hidden, generator=g, device=device, dtype=scalar)
        w = torch.randn(hidden, generator=g, device=device, dtype=scalar)
        out = torch.empty_like(x)
        compiled = torch.compile(eager_rms_norm, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.rms_norm(x, w, EPS, out=out),
            "eager": lambda: eager_rms_norm(x, w, EPS),
            "F.rms_norm": lambda: F.rms_norm(x, (hidden,), w, EPS),
            "torch.compile": lambda: compiled(x, w, EPS),
        }

    # Fewest bytes: read x, write out, read the weight once.
    nbytes = 2 * tokens * hidden * scalar.itemsize + hidden * scalar.itemsize
    return {
        "name": f"rms_norm/{tokens}x{hidden}",
        "op": "rms_norm",
        "group": group,
        "shape": f"{tokens}x{hidden}",
        "dtype": dtype,
        "bytes": nbytes,
        "setup": setup,
        "baselines": ("eager", "F.rms_norm", "torch.compile"),
    }


def _fused_case(group: str, tokens: int, hidden: int, dtype: str) -> dict:
    scalar = getattr(torch, dtype)

    def setup(kernel, device):
        g = torch.Generator(device=device).manual_seed(tokens * 11 + hidden)
        x = torch.randn(tokens, hidden, generator=g, device=device, dtype=scalar)
        r = torch.randn(tokens, hidden, generator=g, device=device, dtype=scalar)
        w = torch.randn(hidden, generator=g, device=device, dtype=scalar)
        out, res_out = torch.empty_like(x), torch.empty_like(x)
        compiled = torch.compile(eager_add_rms_norm, dynamic=False, fullgraph=True)
        return {
            "kernel": lambda: kernel.fused_add_rms_norm(x, r, w, EPS, out=out, residual_out=res_out),
            "add + F.rms_norm": lambda: add_then_f_rms_norm(x, r, w, EPS),
            "torch.compile": lambda: compiled(x, r, w, EPS),
        }

    # Read x and residual, write out and residual_out, read the weight once.
    nbytes = 4 * tokens * hidden * scalar.itemsize + hidden * scalar.itemsize
    return {
        "name": f"fused_add_rms_norm/{tokens}x{hidden}",
        "op": "fused_add_rms_norm",
        "group": group,
        "shape": f"{tokens}x{hidden}",
        "dtype": dtype,
        "bytes": nbytes,
        "setup": setup,
        "baselines": ("add + F.rms_norm", "torch.compile"),
    }


def bench_cases(dtype: str = "bfloat16") -> list[dict]:
    cases = [_rms_norm_case("Qwen3-8B decode", t, 4096, dtype) for t in DECODE_TOKENS]
    cases += [_rms_norm_case("Qwen3-8B", t, 4096, dtype) for t in QWEN3_TOKENS]
    cases += [_rms_norm_case("Qwen3 q/k norm", rows, hidden, dtype) for rows, hidden in PER_HEAD]
    cases += [_rms_norm_case(group, rows, hidden, dtype) for group, rows, hidden in WIDE]
    for hidden in (2048, 3072):
        cases += [_rms_norm_case("LTX-Video", t, hidden, dtype) for t in LTX_TOKENS]
    cases += [_fused_case("Qwen3-8B decode", t, 4096, dtype) for t in DECODE_TOKENS]
    cases += [_fused_case("Qwen3-8B", t, 4096, dtype) for t in QWEN3_TOKENS]
    return cases
