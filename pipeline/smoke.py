"""Smoke test: is the host's variant of a built kernel correct on this device?

`run_smoke(bundle, kernel)` loads the host's variant of a checked bundle with
`kernels.get_local_kernel`, imports the resolved kernel's case file
`tests/smoke_cases.py` and runs every case on the device the variant targets
(CUDA for a cuda variant, else CPU).

The case contract (what `kernels-src/<name>/tests/smoke_cases.py` defines)
---------------------------------------------------------------------------
One function, importable without the kernel being built::

    def smoke_cases() -> list[dict]

Each dict is one case, called once per seed with fresh random inputs:

    name       str, unique: "rms_norm/bf16/2x5x4096"
    op         str: the op's name in the kernel's `ops` namespace
               (torch.ops.<kernel id>.<op>); it is called as op(*args)
    make       make(device, generator) -> tuple: the op's positional arguments,
               drawn from `generator` (a seeded torch.Generator on the CPU; move
               tensors to `device` yourself). Output arguments can hold anything.
    outputs    tuple[int, ...]: positions in args that the op writes
    reference  reference(*args) -> tuple[Tensor, ...]: one float64 tensor per
               output, in `outputs` order, computed from the inputs only (the
               outputs are NaN when it is called)
    checks     optional, subset of {"opcheck", "compile"}: also run
               torch.library.opcheck on this case, and compare the op under
               torch.compile(fullgraph=True) with eager (first seed only; these
               are slow, so mark a few cases per op)
    tolerance  optional float: a tighter bound than the dtype's default
    devices    optional, subset of {"cuda", "cpu", ...}: the device types the
               case is for (default: all). For large cases that only matter
               where a kernel switches code paths by size; the report counts
               the cases left out

What the harness does with each case and seed: draws the inputs; replaces each
contiguous output by a view into a NaN-filled buffer with a NaN guard band on
both sides (other outputs are filled with NaN); calls the op; then requires
that every output element was written (no NaN, no infinity left), that the
guard bands are untouched (no write out of bounds), and that the relative error
‖out - ref‖ / ‖ref‖ in float64 is within the bound for the output's dtype
(`TOLERANCE`). An empty output passes when the op accepts it without error.
A case that raises fails with the exception's message; nothing is skipped.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.casefile import load_case_list
from pipeline.errors import SmokeError
from pipeline.events import Event, Reporter, quiet

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.bundle import Bundle
    from pipeline.workspace import Kernel

CASES_FILE = Path("tests") / "smoke_cases.py"
DEFAULT_SEEDS = (0, 1, 2)
GUARD = 64  # elements of NaN guard band on each side of an output

# Bounds on the relative norm error against float64, per output dtype.
TOLERANCE = {
    "float64": 1e-12,
    "float32": 1e-5,
    "float16": 1e-3,
    "bfloat16": 8e-3,
}


@dataclass(frozen=True)
class CaseResult:
    name: str
    op: str
    seed: int | None
    check: str  # "values", "opcheck" or "compile"
    passed: bool
    error: float | None = None  # worst relative error over the outputs
    bound: float | None = None
    message: str = ""


@dataclass(frozen=True)
class SmokeReport:
    kernel: str
    kernel_id: str
    variant: str
    device: str
    project: str
    results: tuple[CaseResult, ...] = field(default_factory=tuple)
    left_out: tuple[str, ...] = ()  # cases declared for other device types

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[CaseResult, ...]:
        return tuple(r for r in self.results if not r.passed)

    def to_json(self) -> dict:
        return {
            "kernel": self.kernel,
            "kernel_id": self.kernel_id,
            "variant": self.variant,
            "device": self.device,
            "project": self.project,
            "passed": self.passed,
            "counts": {"total": len(self.results), "failed": len(self.failures)},
            "left_out": {"reason": "the case's `devices` excludes this device type", "cases": list(self.left_out)},
            "results": [asdict(r) for r in self.results],
        }


# --------------------------------------------------------------------------
# Finding things


@dataclass(frozen=True)
class LoadedVariant:
    module: Any
    kernel_name: str
    kernel_id: str
    variant: str
    backend: str


def load_variant(build_dir: Path) -> LoadedVariant:
    """The host's variant of `build_dir`, imported with kernels.get_local_kernel."""
    try:
        import kernels
        from kernels.resolver import resolve_local_kernel
    except ImportError as exc:  # pragma: no cover - kernels is a dependency
        raise SmokeError(f"the kernels package is needed to load a build: {exc}", code="kernels-missing",
                         hint="pip install kernels==0.17.2") from None
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        raise SmokeError("no such build directory", path=str(build_dir), code="build-dir-missing",
                         hint="run `python -m pipeline build PROJECT` first")
    try:
        local = resolve_local_kernel(build_dir, backend=None)
    except (FileNotFoundError, ValueError) as exc:
        raise SmokeError(f"no variant in this build tree can run here: {exc}", path=str(build_dir), code="no-host-variant",
                         hint="build the host's variant: `python -m pipeline build PROJECT`") from None
    try:
        module = kernels.get_local_kernel(build_dir)
    except Exception as exc:
        raise SmokeError(f"kernels.get_local_kernel could not import the variant: {type(exc).__name__}: {exc}",
                         path=str(local.variant_path), code="variant-import-failed") from None
    meta = local.metadata
    return LoadedVariant(module=module, kernel_name=str(meta.name), kernel_id=meta.id,
                         variant=local.variant_path.name, backend=str(meta.backend.backend_type))


def load_cases(path: Path) -> list[dict]:
    """The cases of a case file (a kernel's `tests/smoke_cases.py`), checked against the contract."""
    path = Path(path)
    cases = load_case_list(path, "smoke_cases", error=SmokeError, code="smoke-cases-failed")
    problems = []
    names = set()
    for i, case in enumerate(cases):
        for key in ("name", "op", "make", "outputs", "reference"):
            if key not in case:
                problems.append(f"case {i} has no {key!r}")
        if case.get("name") in names:
            problems.append(f"case name {case.get('name')!r} is used twice")
        names.add(case.get("name"))
        unknown = set(case.get("checks", ())) - {"opcheck", "compile"}
        if unknown:
            problems.append(f"case {case.get('name')!r}: unknown checks {sorted(unknown)}")
        devices = case.get("devices", ())
        if isinstance(devices, str) or not all(isinstance(d, str) for d in devices):
            problems.append(f"case {case.get('name')!r}: devices must be a tuple of device types, e.g. ('cuda',)")
    if problems or not cases:
        raise SmokeError("the case file does not follow the contract: " + ("; ".join(problems) or "no cases"),
                         path=str(path), code="smoke-cases-invalid", hint="see pipeline/smoke.py's docstring")
    return cases


# --------------------------------------------------------------------------
# Checking


def _bound(dtype, case: dict) -> float:
    default = TOLERANCE.get(str(dtype).removeprefix("torch."), 0.0)
    return min(default, float(case["tolerance"])) if "tolerance" in case else default


def _poison(args: list, outputs: tuple[int, ...]):
    """Outputs as NaN-filled views with guard bands; returns the backing buffers."""
    import torch

    guards = {}
    for i in outputs:
        t = args[i]
        if not isinstance(t, torch.Tensor):
            continue
        if t.is_floating_point() and t.is_contiguous():
            buf = torch.full((t.numel() + 2 * GUARD,), float("nan"), dtype=t.dtype, device=t.device)
            args[i] = buf[GUARD:GUARD + t.numel()].view(t.shape)
            guards[i] = buf
        elif t.is_floating_point():
            t.fill_(float("nan"))
    return guards


def _rel_error(out, ref) -> tuple[float, str]:
    import torch

    if tuple(out.shape) != tuple(ref.shape):
        return math.inf, f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}"
    if out.numel() == 0:
        return 0.0, ""
    o = out.detach().to("cpu", torch.float64)
    r = ref.detach().to("cpu", torch.float64)
    if not torch.isfinite(o).all():
        bad = int((~torch.isfinite(o)).sum())
        return math.inf, f"{bad} of {o.numel()} elements not written or not finite"
    denom = r.norm().item()
    err = (o - r).norm().item()
    return (err / denom if denom > 0 else err), ""


def _check_values(op, case: dict, args: list, device) -> tuple[float, float, str]:
    """Run once on poisoned outputs; (worst error, its bound, message)."""
    import torch

    outputs = tuple(case["outputs"])
    guards = _poison(args, outputs)
    ref_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    op(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
    refs = tuple(case["reference"](*ref_args))
    if len(refs) != len(outputs):
        return math.inf, 0.0, f"reference returned {len(refs)} tensors for {len(outputs)} outputs"
    worst, worst_bound, messages = 0.0, 0.0, []
    for pos, ref in zip(outputs, refs):
        out = args[pos]
        bound = _bound(out.dtype, case)
        err, msg = _rel_error(out, ref)
        if pos in guards:
            buf = guards[pos]
            if not (torch.isnan(buf[:GUARD]).all() and torch.isnan(buf[-GUARD:]).all()):
                err, msg = math.inf, "wrote outside the output (guard band changed)"
        if msg:
            messages.append(f"output {pos}: {msg}")
        elif err > bound:
            messages.append(f"output {pos}: relative error {err:.3g} > {bound:.1g}")
        if err / max(bound, 1e-300) >= worst / max(worst_bound, 1e-300):
            worst, worst_bound = err, bound
    return worst, worst_bound, "; ".join(messages)


def _check_opcheck(op, case: dict, args: list) -> str:
    import torch

    overload = op.default if hasattr(op, "default") else op
    result = torch.library.opcheck(overload, tuple(args), raise_exception=False)
    failed = {k: v for k, v in result.items() if v != "SUCCESS"}
    return "; ".join(f"{k}: {v}" for k, v in failed.items())


def _check_compile(op, case: dict, args: list, device) -> tuple[float, float, str]:
    """The op inside torch.compile(fullgraph=True) against eager, same inputs."""
    import torch

    outputs = tuple(case["outputs"])
    eager = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    compiled = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    for i in outputs:
        eager[i].fill_(float("nan"))
        compiled[i].fill_(float("nan"))
    op(*eager)

    def call(*a):
        op(*a)

    torch._dynamo.reset()  # each case compiles afresh: no silent fallback after recompiles
    fn = torch.compile(call, fullgraph=True)
    fn(*compiled)
    if device.type == "cuda":
        torch.cuda.synchronize()
    worst, worst_bound, messages = 0.0, 0.0, []
    for pos in outputs:
        bound = _bound(eager[pos].dtype, case)
        err, msg = _rel_error(compiled[pos], eager[pos].to(torch.float64))
        if msg:
            messages.append(f"output {pos}: {msg}")
        elif err > bound:
            messages.append(f"output {pos}: compiled differs from eager by {err:.3g} > {bound:.1g}")
        worst, worst_bound = max(worst, err), bound
    return worst, worst_bound, "; ".join(messages)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def for_device(cases: list[dict], device_type: str) -> tuple[list[dict], list[str]]:
    """The cases meant for `device_type`, and the names of the others."""
    kept, left_out = [], []
    for case in cases:
        devices = case.get("devices")
        (kept if not devices or device_type in devices else left_out).append(case)
    return kept, [c["name"] for c in left_out]


def run_cases(module, cases: list[dict], device, *, seeds=DEFAULT_SEEDS, report: Reporter = quiet,
              op_checks: bool = True) -> list[CaseResult]:
    """Run the cases meant for `device` against a loaded kernel module (its `ops` namespace)."""
    import torch

    cases, _ = for_device(cases, device.type)
    ops = getattr(module, "ops", None)
    if ops is None:
        raise SmokeError("the kernel module has no `ops` (expected `from ._ops import ops` in __init__.py)",
                         code="ops-missing")
    results: list[CaseResult] = []
    for n, case in enumerate(cases):
        name, op_name = case["name"], case["op"]
        report(Event("progress", name, n, len(cases), stage="smoke"))
        op = getattr(ops, op_name, None)
        if op is None:
            results.append(CaseResult(name, op_name, None, "values", False, message=f"the kernel has no op {op_name!r}"))
            continue
        for s_index, seed in enumerate(seeds):
            gen = torch.Generator().manual_seed(seed * 1_000_003 + n)
            try:
                args = list(case["make"](device, gen))
                err, bound, msg = _check_values(op, case, args, device)
                results.append(CaseResult(name, op_name, seed, "values", not msg, err, bound, msg))
            except Exception as exc:
                results.append(CaseResult(name, op_name, seed, "values", False, message=_short(exc)))
                continue
            if s_index != 0 or not op_checks:
                continue
            checks = set(case.get("checks", ()))
            if "opcheck" in checks:
                try:
                    msg = _check_opcheck(op, case, list(case["make"](device, gen)))
                    results.append(CaseResult(name, op_name, seed, "opcheck", not msg, message=msg))
                except Exception as exc:
                    results.append(CaseResult(name, op_name, seed, "opcheck", False, message=_short(exc)))
            if "compile" in checks:
                try:
                    err, bound, msg = _check_compile(op, case, list(case["make"](device, gen)), device)
                    results.append(CaseResult(name, op_name, seed, "compile", not msg, err, bound, msg))
                except Exception as exc:
                    results.append(CaseResult(name, op_name, seed, "compile", False, message=_short(exc)))
    return results


def run_smoke(bundle: "Bundle", kernel: "Kernel | None", *, seeds=DEFAULT_SEEDS, report: Reporter = quiet,
              op_checks: bool = True) -> SmokeReport:
    """Load the host's variant of `bundle` and run the resolved kernel's cases."""
    import torch

    loaded = load_variant(bundle.root)
    if kernel is None:
        raise SmokeError(f"no kernel project was found for this build of {loaded.kernel_name!r}",
                         path=str(bundle.root), code="kernel-not-found",
                         hint="pass the kernel project with --kernel PATH (smoke runs its tests/smoke_cases.py)")
    if kernel.smoke_cases is None:
        raise SmokeError(f"the kernel project has no {CASES_FILE}", path=str(kernel.root), code="smoke-cases-missing",
                         hint="see the case contract in pipeline/smoke.py and pipeline/bench.py")
    cases = load_cases(kernel.smoke_cases)
    if loaded.backend == "cuda":
        if not torch.cuda.is_available():
            raise SmokeError("the host's variant is a CUDA build but no CUDA device is visible", code="no-cuda-device")
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    cases, left_out = for_device(cases, device.type)
    results = run_cases(loaded.module, cases, device, seeds=tuple(seeds), report=report, op_checks=op_checks)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return SmokeReport(kernel=loaded.kernel_name, kernel_id=loaded.kernel_id, variant=loaded.variant,
                       device=device_name, project=kernel.shown, results=tuple(results), left_out=tuple(left_out))
