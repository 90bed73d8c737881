"""Load a published softmax-triton with `kernels.get_kernel`, as a user would, and record what happened.

    HF_ENDPOINT=http://127.0.0.1:N HF_HUB_DISABLE_XET=1 \\
        python3 scripts/gpu/noarch_get_kernel.py kernels-pipeline/softmax-triton --out RESULT.json

Run in a fresh process with an empty KERNELS_CACHE (the caller sets it). It
records: the versions (torch, triton, kernels), which variant `get_kernel`
picked and its kernel id, the largest error against a float64 softmax for a
few shapes and dtypes (both Triton code paths on CUDA), and whether
`kernels.kernelize` swaps `layers.Softmax` into a `torch.nn.Softmax(dim=-1)`
module and gives the same output. Exit 0 when everything matched.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

import torch

# (rows, cols, dtype, bound on the max abs error of a probability): one row per Triton program
# below 16384 columns, the two-pass kernel above.
CASES = [(32 * 1024, 1024, torch.bfloat16, 8e-3), (64, 16385, torch.float16, 1e-3),
         (4, 151936, torch.float32, 1e-5), (8192, 4096, torch.float32, 1e-5)]


def _versions() -> dict:
    out = {"torch": torch.__version__, "cuda": torch.version.cuda}
    for name in ("kernels", "triton"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    out["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return out


def _errors(module, device: str) -> list[dict]:
    rows = []
    for r, c, dtype, bound in CASES:
        x = torch.randn(r, c, device=device, dtype=dtype) * 3
        y = module.softmax(x)
        err = (y.double() - torch.softmax(x.double(), dim=-1)).abs().max().item()
        rows.append({"shape": f"{r}x{c}", "dtype": str(dtype).removeprefix("torch."), "max_abs_error": err,
                     "bound": bound, "ok": bool(err <= bound) and not y.isnan().any().item()})
    return rows


def _kernelize(repo_id: str, version: int, device: str) -> dict:
    from kernels import LayerRepository, Mode, kernelize, use_kernel_forward_from_hub, use_kernel_mapping

    @use_kernel_forward_from_hub("Softmax")
    class Softmax(torch.nn.Softmax):
        pass

    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), Softmax(dim=-1)).to(device)
    x = torch.randn(8, 256, device=device)
    expected = model(x)
    mapping = {"Softmax": {device: LayerRepository(repo_id=repo_id, layer_name="Softmax", version=version)}}
    with use_kernel_mapping(mapping):
        kernelize(model, mode=Mode.INFERENCE, device=device, use_fallback=False)
    got = model(x)
    forward = model[1].forward
    where = f"{getattr(forward, '__module__', '?')}.{getattr(forward, '__qualname__', forward)}"
    return {"forward": where, "from_kernel": where.startswith("_softmax_triton_"),
            "max_abs_error": (got - expected).abs().max().item(),
            "ok": where.startswith("_softmax_triton_") and bool(torch.allclose(got, expected, atol=1e-6, rtol=1e-5))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo_id")
    parser.add_argument("--version", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    record: dict = {"repo_id": args.repo_id, "version": args.version, "versions": _versions(), "ok": False}
    try:
        import kernels

        module = kernels.get_kernel(args.repo_id, version=args.version)
        loaded = next((k for k in kernels.get_loaded_kernels() if k.module is module), None)
        record["variant"] = Path(module.__file__).parent.name
        record["kernel_id"] = loaded.metadata.id if loaded else module.__name__
        record["backend"] = str(loaded.metadata.backend.backend_type) if loaded else None
        record["cases"] = _errors(module, device)
        record["kernelize"] = _kernelize(args.repo_id, args.version, device)
        record["ok"] = all(c["ok"] for c in record["cases"]) and record["kernelize"]["ok"]
    except Exception as exc:  # the finding is recorded, not raised
        record["error"] = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc()[-3000:]
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "traceback"}, indent=2))
    return 0 if record["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
