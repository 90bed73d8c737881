"""The small models of the model check (`pipeline.model_check`), and how it
measures them. Imported only in a consumer environment: transformers,
diffusers, kernels and torch are that environment's."""

from __future__ import annotations

import copy
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Built:
    model: Any  # the stock model in the checked dtype, eval mode
    reference: Any  # the same weights in float32
    inputs: Callable[[int], dict]  # tokens -> forward kwargs (checked dtype)
    to_reference: Callable[[dict], dict]  # those kwargs for the float32 model


def build(name: str, config, device) -> Built:
    import torch

    dtype = getattr(torch, config.dtype)
    torch.manual_seed(config.seed)
    with torch.device(device):
        reference = _ltx_block(config) if name == "ltx-video" else _causal_lm(name, config)
    reference.eval()
    _perturb_norm_weights(reference, config.seed)
    model = copy.deepcopy(reference).to(dtype).eval()
    if name == "ltx-video":
        inputs = _ltx_inputs(config, device, dtype)
    else:
        def inputs(tokens: int) -> dict:
            g = torch.Generator(device="cpu").manual_seed(config.seed + tokens)
            return {"input_ids": torch.randint(config.vocab, (1, tokens), generator=g).to(device), "use_cache": False}
    return Built(model, reference, inputs, _as_float32)


def _perturb_norm_weights(model, seed: int) -> None:
    """Norm weights of 1 + N(0, 0.1): models initialise them to ones, and with
    ones a kernel that mishandles the weight would go unseen."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            weight = getattr(m, "weight", None)
            if hasattr(type(m), "kernel_layer_name") and isinstance(weight, torch.Tensor):
                weight.copy_(1 + 0.1 * torch.randn(weight.shape, generator=g))


def _causal_lm(name: str, config):
    import transformers

    classes = {"qwen3": ("Qwen3Config", "Qwen3ForCausalLM"), "llama": ("LlamaConfig", "LlamaForCausalLM")}
    config_cls, model_cls = (getattr(transformers, n) for n in classes[name])
    cfg = config_cls(vocab_size=config.vocab, hidden_size=config.hidden, intermediate_size=config.intermediate,
                     num_hidden_layers=config.layers, num_attention_heads=config.heads,
                     num_key_value_heads=config.kv_heads, head_dim=config.head_dim,
                     max_position_embeddings=max(4096, 2 * max(config.tokens)), tie_word_embeddings=False,
                     rms_norm_eps=1e-6)
    cfg._attn_implementation = "sdpa"
    return model_cls(cfg)


def _ltx_block(config):
    """One LTX-Video transformer block; diffusers' RMSNorm gets a kernel layer
    name, as a diffusers user must give it (diffusers does not declare one)."""
    from diffusers.models.normalization import RMSNorm
    from diffusers.models.transformers.transformer_ltx import LTXVideoTransformerBlock
    from kernels import replace_kernel_forward_from_hub

    if not hasattr(RMSNorm, "kernel_layer_name"):
        replace_kernel_forward_from_hub(RMSNorm, "RMSNorm")
    return LTXVideoTransformerBlock(dim=config.hidden, num_attention_heads=config.heads,
                                    attention_head_dim=config.hidden // config.heads,
                                    cross_attention_dim=config.hidden)


def _ltx_inputs(config, device, dtype) -> Callable[[int], dict]:
    import torch

    def inputs(tokens: int) -> dict:
        g = torch.Generator(device="cpu").manual_seed(config.seed + tokens)
        def rand(*shape):
            return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)
        return {"hidden_states": rand(1, tokens, config.hidden), "encoder_hidden_states": rand(1, 16, config.hidden),
                "temb": rand(1, 1, 6 * config.hidden) * 0.1}
    return inputs


def _as_float32(inputs: dict) -> dict:
    import torch

    return {k: v.float() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in inputs.items()}


def layer_names(model) -> list[str]:
    """The kernel layer names the model's module classes declare (kernels' `kernel_layer_name`)."""
    return [type(m).kernel_layer_name for m in model.modules() if hasattr(type(m), "kernel_layer_name")]


def kernel_layers(module) -> list[str]:
    """The layer classes a kernel exports in its `layers` module."""
    import torch

    layers = getattr(module, "layers", None)
    return sorted(n for n, v in vars(layers).items() if isinstance(v, type) and issubclass(v, torch.nn.Module)
                  and v.__module__ == layers.__name__) if layers is not None else []


def op_namespace(module) -> str:
    """The torch op namespace of the kernel's ops (`torch.ops.<id>`)."""
    return module.ops.name


def kernelized_copy(model, repo_id: str, version: int, names: list[str], device, *, trusted: bool):
    """A copy of `model` with `names` swapped through kernels.kernelize, a
    LayerRepository per name, mode inference; trust_remote_code only when the
    publisher is not trusted (as for get_kernel)."""
    from kernels import LayerRepository, Mode, kernelize, use_kernel_mapping

    swapped = copy.deepcopy(model).eval()
    mapping = {name: {device.type: LayerRepository(repo_id=repo_id, layer_name=name, version=version,
                                                   trust_remote_code=not trusted)} for name in names}
    with use_kernel_mapping(mapping, inherit_mapping=False):
        kernelize(swapped, mode=Mode.INFERENCE, device=device.type)
    return swapped


def replaced_modules(model, names: list[str]) -> int:
    """Modules whose forward kernelize replaced with a kernel layer's (a bound
    method of a class named like the layer, from another module than theirs)."""
    count = 0
    for m in model.modules():
        func = getattr(m.__dict__.get("forward"), "__func__", None)
        if func is not None and func.__qualname__.split(".")[0] in names and func.__module__ != type(m).__module__:
            count += 1
    return count


def _output(model, inputs: dict):
    import torch

    with torch.inference_mode():
        out = model(**inputs)
    out = getattr(out, "logits", out)
    return out[0] if isinstance(out, (tuple, list)) else out


def forward(model, inputs: dict):
    """The model's output (logits, or the block's hidden states) in float32."""
    return _output(model, inputs).float()


def rel_error(out, reference) -> float:
    return float((out - reference).norm() / reference.norm())


def op_calls(model, inputs: dict, namespace: str, device) -> int:
    """Calls of the kernel's ops during one forward, as the profiler saw them."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        forward(model, inputs)
    return sum(e.count for e in prof.key_averages() if e.key.startswith(f"{namespace}::"))


def time_forward(model, inputs: dict, device, warmup: int, reps: int) -> float:
    """Median forward time in ms: CUDA events on a GPU, wall clock on CPU."""
    import torch

    for _ in range(warmup):
        _output(model, inputs)
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            _output(model, inputs)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            _output(model, inputs)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)
