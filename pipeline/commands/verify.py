"""`python -m pipeline verify ORG/NAME --version N`: load it the way users will."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from pipeline.commands._render import print_verify
from pipeline.consumers import MODEL_CONSUMERS, default_consumers, parse_specs
from pipeline.errors import PublishError, VerifyError
from pipeline.model_check import MODELS, ModelConfig, ModelReport, check_model
from pipeline.target import resolve_target, split_repo_id, started_target
from pipeline.verify import verify_publication
from pipeline.workspace import resolve_for_repo

HELP = "load a published kernel with get_kernel and check it"
DESCRIPTION = """\
Verify a published kernel with the kernels library itself, in a fresh process
with an empty KERNELS_CACHE:

  1. kernels.get_kernel(ORG/NAME, version=N) loads this host's variant, and its
     ops match the float64 reference on fresh random inputs (the kernel's
     tests/smoke_cases.py);
  2. for every cell of the build matrix, the published variant that kernels'
     own selection code picks for a system of that cell. A cell the
     publication promises (its torch, backend/CUDA major and platform were
     published; --require all: every cell) that resolves to nothing fails;
  3. the same load in each consumer environment (a cached venv per kernels
     release users have: kernels 0.16.2 + huggingface_hub 1.33.0, kernels
     0.17.2 + huggingface_hub 2.4.0), get_kernel called as a user would:
     without trust_remote_code unless the publisher is not trusted;
  4. with --model NAME: a small model (qwen3, llama, ltx-video) built from a
     config, its layers swapped in through kernels.kernelize and
     LayerRepository (transformers 5.17 + kernels 0.16.2, transformers 5.21.1
     + kernels 0.17.2), checked against the model in float32 and timed.

Offline, PIPELINE_CONSUMER_WHEELS=DIR installs the consumer environments from
a wheel directory; PIPELINE_CONSUMERS=none (or --consumers none) skips them.

Step 1 needs the kernel project (its smoke cases are the reference): the
workspace kernel NAME, or --kernel PATH; with neither, pass --load-only.

The Hub is chosen as for publish (--endpoint > HF_ENDPOINT > the Hugging Face
Hub with a token > the embedded Hub's data, served for the run).

examples:
  python -m pipeline verify kernels-pipeline/rmsnorm --version 1
  python -m pipeline verify kernels-pipeline/rmsnorm --version 1 --model qwen3
  python -m pipeline verify kernels-pipeline/rmsnorm --version 1 --model qwen3 --layers 4 --hidden 4096 \
      --intermediate 12288 --heads 32 --kv-heads 8 --head-dim 128 --vocab 151936 --tokens 128,2048
"""


def add_arguments(parser) -> None:
    parser.add_argument("repo", metavar="ORG/NAME", help="Hub repository")
    parser.add_argument("--version", type=int, required=True, help="the version (branch v<N>) to verify")
    parser.add_argument("--kernel", type=Path, default=None,
                        help="kernel project (reference cases, build matrix; default: the workspace kernel NAME)")
    parser.add_argument("--endpoint", default=None, help="Hub URL (overrides HF_ENDPOINT)")
    parser.add_argument("--require", choices=["published", "all"], default="published",
                        help="which matrix cells must resolve: those the publication covers (default) or all")
    parser.add_argument("--load-only", action="store_true", help="only check that get_kernel loads it")
    parser.add_argument("--consumers", default=None, metavar="SPECS",
                        help="consumer environments: 'none', or kernels==X[,huggingface_hub==Y][;...] "
                             "(default: PIPELINE_CONSUMERS, else the supported releases)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    model = parser.add_argument_group("model check (--model)")
    model.add_argument("--model", choices=MODELS, default=None, help="run the kernel inside this small model")
    model.add_argument("--model-consumers", default=None, metavar="SPECS",
                       help="the environments for the model check (default: transformers 5.17.0 + kernels 0.16.2, "
                            "transformers 5.21.1 + kernels 0.17.2)")
    defaults = ModelConfig()
    for flag in ("layers", "hidden", "intermediate", "heads", "kv-heads", "head-dim", "vocab", "reps", "warmup"):
        model.add_argument(f"--{flag}", type=int, default=getattr(defaults, flag.replace("-", "_")))
    model.add_argument("--tokens", default=",".join(map(str, defaults.tokens)), help="token counts, e.g. 128,2048")
    model.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default=defaults.dtype)
    model.add_argument("--device", default=defaults.device, help="auto (cuda when there is one), cuda or cpu")


@contextlib.contextmanager
def _as_verify_error() -> Iterator[None]:
    """The helpers verify shares with publish raise PublishError; verify exits with its own code."""
    try:
        yield
    except PublishError as exc:
        raise VerifyError(exc.message, hint=exc.hint, path=exc.path, line=exc.line, code=exc.code,
                          problems=exc.problems) from None


def run(args, output) -> int:
    name = args.repo.rsplit("/", 1)[-1]
    with _as_verify_error():
        source = resolve_for_repo(name, args.kernel, required=False)
        repo_id, _ = split_repo_id(args.repo, source.namespace)
    if source.kernel is None and not args.load_only:
        # Checking outputs needs the project's reference cases; say so now, not after the download.
        raise VerifyError(f"no kernel project for {name!r}: its tests/smoke_cases.py are the reference "
                          "the loaded kernel is checked against", code="kernel-not-found",
                          hint="pass --kernel PATH (the kernel project), or --load-only to check only "
                               "that get_kernel loads it")
    target = resolve_target(args.endpoint)
    output.info(f"  target  {target.describe()}")
    consumers = default_consumers() if args.consumers is None else \
        (() if args.consumers.strip() == "none" else parse_specs(args.consumers))
    models: tuple[ModelReport, ...] = ()
    with _as_verify_error(), started_target(target) as live, output.reporter() as report:
        report_ = verify_publication(live.endpoint, repo_id, args.version, kernel=source.kernel,
                                     token=live.token, require=args.require, load_only=args.load_only,
                                     consumers=consumers, report=report)
        if args.model:
            models = check_model(live.endpoint, live.token, repo_id, args.version, args.model,
                                 config=_model_config(args), consumers=_model_consumers(args), report=report)
    problems = report_.problems + tuple(p for m in models for p in m.problems())
    if output.json_mode:
        output.emit_json({**report_.to_json(), "models": [m.to_json() for m in models],
                          "problems": [p.to_json() for p in problems],
                          "ok": report_.ok and all(m.ok for m in models)})
    else:
        print_verify(report_, output)
        for m in models:
            _print_model(m, output)
        for problem in problems:
            output.problem(problem.format())
    return 0 if report_.ok and all(m.ok for m in models) else VerifyError.exit_code


def _model_config(args) -> ModelConfig:
    try:
        tokens = tuple(int(t) for t in args.tokens.split(",") if t.strip())
    except ValueError:
        raise VerifyError(f"--tokens {args.tokens!r} is not a list of integers", code="usage",
                          hint="e.g. --tokens 128,2048") from None
    return ModelConfig(layers=args.layers, hidden=args.hidden, intermediate=args.intermediate, heads=args.heads,
                       kv_heads=args.kv_heads, head_dim=args.head_dim, vocab=args.vocab, tokens=tokens,
                       dtype=args.dtype, device=args.device, warmup=args.warmup, reps=args.reps)


def _model_consumers(args):
    return MODEL_CONSUMERS if args.model_consumers is None else parse_specs(args.model_consumers)


def _print_model(m: ModelReport, output) -> None:
    head = f"model {m.model} with {m.consumer} on {m.device_name or m.device or '?'}"
    if m.error:
        output.result(f"  {head}: FAILED: {m.error}")
        return
    c = m.config
    output.result(f"  {head} ({c.layers} layers, hidden {c.hidden}, {c.dtype}); swapped: {', '.join(m.layers)}")
    for case in m.cases:
        output.result(f"    {case.tokens:>6} tokens: {'ok' if case.ok else 'FAILED'}: {case.replaced} module(s) "
                      f"swapped, {case.kernel_calls} kernel call(s); error vs float32 {case.kernel_error:.4g} "
                      f"(stock {case.stock_error:.4g}); forward {case.stock_ms:.3f} -> {case.kernel_ms:.3f} ms "
                      f"({case.speedup:.2f}x)")
