"""`verify --model NAME`: the published kernel inside a real model.

In a consumer environment (`pipeline.consumers.MODEL_CONSUMERS`: transformers
with the kernels release it accepts), a small model is built from a config
(random weights, nothing downloaded): a transformers Qwen3 or Llama, or a
diffusers LTX-Video transformer block. Its layers are swapped for the
publication's through `kernels.kernelize` with a `LayerRepository` per layer
name (mode inference), as a user of transformers' kernel integration does.
Then, per token count:

- the swap happened: modules whose forward is now the kernel layer's, and
  calls of the kernel's ops during one forward (torch.profiler);
- accuracy: the relative error of the output against the same model in
  float32; the kernelized model's must not exceed the stock (same dtype)
  model's by more than `ERROR_FACTOR`;
- time: forward before and after (CUDA events on a GPU, wall clock on CPU;
  median of `reps`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipeline.consumers import MODEL_CONSUMERS, ConsumerSpec, ensure_env, run_child
from pipeline.errors import Problem, VerifyError
from pipeline.events import Event, Reporter, quiet
from pipeline import model_zoo
from pipeline.verify import _child_env, _versions, get_kernel_as_user

MODELS = ("qwen3", "llama", "ltx-video")
ERROR_FACTOR = 1.25  # kernelized error <= this x the stock model's error (both against float32)
CHILD_TIMEOUT_S = 900


@dataclass(frozen=True)
class ModelConfig:
    """The model's size; the defaults are a CPU-sized model for CI."""

    layers: int = 2
    hidden: int = 256
    intermediate: int = 512
    heads: int = 4
    kv_heads: int = 2
    head_dim: int = 64
    vocab: int = 1024
    tokens: tuple[int, ...] = (64,)
    dtype: str = "bfloat16"
    device: str = "auto"  # cuda when the consumer sees one, else cpu
    warmup: int = 2
    reps: int = 5
    seed: int = 0

    def to_json(self) -> dict:
        return {**asdict(self), "tokens": list(self.tokens)}


@dataclass(frozen=True)
class ModelCase:
    tokens: int
    replaced: int  # modules whose forward is the kernel layer's
    kernel_calls: int  # calls of the kernel's ops in one forward (profiler)
    stock_error: float  # relative error of the stock model's output against float32
    kernel_error: float
    stock_ms: float
    kernel_ms: float
    ok: bool
    message: str = ""

    @property
    def speedup(self) -> float:
        return self.stock_ms / self.kernel_ms if self.kernel_ms else 0.0

    def to_json(self) -> dict:
        return {**asdict(self), "speedup": round(self.speedup, 3)}


@dataclass(frozen=True)
class ModelReport:
    repo_id: str
    version: int
    model: str
    consumer: str  # the consumer environment's label
    config: ModelConfig
    device: str | None = None
    device_name: str | None = None
    layers: tuple[str, ...] = ()  # the layer names swapped
    trusted: bool | None = None
    versions: dict = field(default_factory=dict)
    cases: tuple[ModelCase, ...] = ()
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.cases) and all(c.ok for c in self.cases)

    def problems(self) -> tuple[Problem, ...]:
        where = f"{self.repo_id}@v{self.version}"
        if self.error:
            return (Problem(where, None, "model-check-failed", f"{self.model} with {self.consumer}: {self.error}",
                            hint="run `python -m pipeline verify ... --model NAME --json` for the details"),)
        return tuple(Problem(where, None, "model-check-failed", f"{self.model}, {c.tokens} tokens: {c.message}",
                             hint="the swap must happen and the kernelized output stay within "
                                  f"{ERROR_FACTOR}x the stock model's error against float32")
                     for c in self.cases if not c.ok)

    def to_json(self) -> dict:
        return {"ok": self.ok, "repo_id": self.repo_id, "version": self.version, "model": self.model,
                "consumer": self.consumer, "config": self.config.to_json(), "device": self.device,
                "device_name": self.device_name, "layers": list(self.layers), "trusted": self.trusted,
                "versions": self.versions, "error_factor": ERROR_FACTOR, "error": self.error,
                "cases": [c.to_json() for c in self.cases]}


def check_model(endpoint: str, token: str | None, repo_id: str, version: int, model: str, *,
                config: ModelConfig = ModelConfig(), consumers: tuple[ConsumerSpec, ...] = MODEL_CONSUMERS,
                report: Reporter = quiet) -> tuple[ModelReport, ...]:
    """The model check in each consumer environment, each with an empty kernels cache."""
    if model not in MODELS:
        raise VerifyError(f"unknown model {model!r}", code="usage", hint=f"choose one of {', '.join(MODELS)}")
    reports = []
    with tempfile.TemporaryDirectory(prefix="pipeline-model-") as tmp:
        for i, spec in enumerate(consumers):
            env = ensure_env(spec, report=report)
            report(Event("step", f"{model} with {spec.label}: kernelize, compare with float32, time", stage="verify"))
            cache = Path(tmp) / f"c{i}"
            (cache / "kernels").mkdir(parents=True)
            request = {"repo_id": repo_id, "version": version, "model": model, "config": config.to_json()}
            data = run_child(env, "pipeline.model_check", request, base_env=_child_env(endpoint, token, cache),
                             timeout=CHILD_TIMEOUT_S)
            reports.append(_report(repo_id, version, model, spec.label, config, data))
    return tuple(reports)


def _report(repo_id: str, version: int, model: str, label: str, config: ModelConfig, data: dict) -> ModelReport:
    return ModelReport(repo_id=repo_id, version=version, model=model, consumer=label, config=config,
                       device=data.get("device"), device_name=data.get("device_name"),
                       layers=tuple(data.get("layers") or ()), trusted=data.get("trusted"),
                       versions=data.get("versions") or {}, error=data.get("error") or "",
                       cases=tuple(ModelCase(**c) for c in data.get("cases") or ()))


def config_from_json(data: dict) -> ModelConfig:
    return ModelConfig(**{**data, "tokens": tuple(data.get("tokens") or ModelConfig.tokens)})


# --- the child process (in the consumer environment) ------------------------------

def _child_main() -> None:
    request = json.loads(sys.stdin.read())
    out: dict = {}
    try:
        out = _run(request)
    except Exception as exc:  # reported as the finding, with its type, not as a traceback
        out["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    Path(request["result"]).write_text(json.dumps(out))


def _run(request: dict) -> dict:
    import kernels
    import torch

    config = config_from_json(request["config"])
    device = torch.device("cuda" if config.device == "auto" and torch.cuda.is_available()
                          else ("cpu" if config.device == "auto" else config.device))
    repo_id, version = request["repo_id"], request["version"]
    module, trusted = get_kernel_as_user(kernels, repo_id, version)
    built = model_zoo.build(request["model"], config, device)
    names = sorted(set(model_zoo.layer_names(built.model)) & set(model_zoo.kernel_layers(module)))
    out = {"device": device.type, "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
           "trusted": trusted, "versions": {**_versions(), **_more_versions()}, "layers": names, "cases": []}
    if not names:
        out["error"] = (f"no layer of {repo_id} ({', '.join(model_zoo.kernel_layers(module)) or 'none'}) matches a "
                        f"layer of the model ({', '.join(sorted(set(model_zoo.layer_names(built.model)))) or 'none'})")
        return out
    swapped = model_zoo.kernelized_copy(built.model, repo_id, version, names, device, trusted=trusted)
    namespace = model_zoo.op_namespace(module)
    for tokens in config.tokens:
        out["cases"].append(_case(built, swapped, namespace, names, tokens, config, device))
    return out


def _more_versions() -> dict:
    out = {}
    for name in ("transformers", "diffusers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def _case(built, swapped, namespace: str, names: list[str], tokens: int, config: ModelConfig, device) -> dict:
    inputs = built.inputs(tokens)
    reference = model_zoo.forward(built.reference, built.to_reference(inputs))
    stock_error = model_zoo.rel_error(model_zoo.forward(built.model, inputs), reference)
    kernel_error = model_zoo.rel_error(model_zoo.forward(swapped, inputs), reference)
    del reference
    replaced = model_zoo.replaced_modules(swapped, names)
    calls = model_zoo.op_calls(swapped, inputs, namespace, device)
    stock_ms = model_zoo.time_forward(built.model, inputs, device, config.warmup, config.reps)
    kernel_ms = model_zoo.time_forward(swapped, inputs, device, config.warmup, config.reps)
    bound = ERROR_FACTOR * max(stock_error, 1e-7)
    reasons = []
    if not replaced:
        reasons.append("kernelize replaced no module")
    if not calls:
        reasons.append(f"no op of {namespace} ran during a forward")
    if not kernel_error <= bound:  # NaN fails too
        reasons.append(f"error {kernel_error:.4g} against float32 exceeds {ERROR_FACTOR} x stock {stock_error:.4g}")
    return {"tokens": tokens, "replaced": replaced, "kernel_calls": calls, "stock_error": stock_error,
            "kernel_error": kernel_error, "stock_ms": stock_ms, "kernel_ms": kernel_ms, "ok": not reasons,
            "message": "; ".join(reasons) or (f"{replaced} module(s) swapped, {calls} kernel call(s) per forward; "
                                              f"error {kernel_error:.4g} vs stock {stock_error:.4g}")}
