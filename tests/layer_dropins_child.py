"""Run in a consumer environment (transformers + diffusers + kernels): the
published rmsnorm's `layers.RMSNorm` against the real classes it claims to
replace. For each: kernels' own layer check (`_validate_layer`, what
kernelize applies), then the module's output with the kernel layer's forward
against float64, next to the stock forward's error. Prints JSON."""

import json
import sys
import types

import kernels
import torch
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm
from kernels.layer.layer import _validate_layer
from transformers.models.llama.modeling_llama import LlamaRMSNorm
from transformers.models.qwen3.modeling_qwen3 import Qwen3RMSNorm


def reference(module, x):
    eps = getattr(module, "variance_epsilon", None) or module.eps
    x64 = x.double()
    out = x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps)
    if getattr(module, "weight", None) is not None:
        out = out * module.weight.double()
    if getattr(module, "bias", None) is not None:
        out = out + module.bias.double()
    return out


def main() -> None:
    repo_id, version = sys.argv[1], int(sys.argv[2])
    layer = kernels.get_kernel(repo_id, version=version).layers.RMSNorm
    hidden = 384
    cases = {
        "transformers Qwen3RMSNorm": (Qwen3RMSNorm, lambda: Qwen3RMSNorm(hidden, eps=1e-6)),
        "transformers LlamaRMSNorm": (LlamaRMSNorm, lambda: LlamaRMSNorm(hidden, eps=1e-5)),
        "diffusers RMSNorm (elementwise_affine=False)":
            (DiffusersRMSNorm, lambda: DiffusersRMSNorm(hidden, eps=1e-6, elementwise_affine=False)),
        "diffusers RMSNorm (weight and bias)":
            (DiffusersRMSNorm, lambda: DiffusersRMSNorm(hidden, eps=1e-6, elementwise_affine=True, bias=True)),
    }
    out = {}
    torch.manual_seed(0)
    for name, (cls, make) in cases.items():
        _validate_layer(check_cls=cls, cls=layer, repo=repo_id)  # TypeError: not a drop-in
        module = make()
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(1 + 0.1 * torch.randn_like(p))
        module = module.to(torch.bfloat16)
        x = torch.randn(3, 5, hidden, dtype=torch.bfloat16)
        ref = reference(module, x)
        with torch.no_grad():
            stock = module(x)
            swapped = types.MethodType(layer.forward, module)(x)
        err = lambda y: float((y.double() - ref).norm() / ref.norm())  # noqa: E731
        out[name] = {"weight_is_none": module.weight is None, "stock_error": err(stock), "kernel_error": err(swapped),
                     "dtype": str(swapped.dtype), "shape": list(swapped.shape)}
    print(json.dumps(out))


main()
