"""Cases, from the project's case file or from a contract, as one type the harness runs.

A `Case` makes `Call`s: the op's arguments for one draw of random inputs, which
positions are outputs, how to read the outputs after the call, and the float64
reference for the inputs as drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipeline.casefile import load_case_list
from pipeline.errors import SmokeError

CASES_FILE = Path("tests") / "smoke_cases.py"

# Bounds on the relative norm error against float64 of a project case's outputs.
TOLERANCE = {
    "float64": 1e-12,
    "float32": 1e-5,
    "float16": 1e-3,
    "bfloat16": 8e-3,
}


@dataclass
class Call:
    args: list
    poison: tuple[int, ...]  # out-of-place outputs, poisoned and guarded by the harness
    written: tuple[int, ...]  # every position the op may write
    read: Callable[[list, Any], dict]  # (args, returned value) -> outputs by key
    reference: Callable[[], dict]  # float64 outputs by key, from the inputs as they are now
    dtype: Any = None  # every output's expected dtype (contracts), or None
    guards: dict = field(default_factory=dict)  # position -> guarded buffer, kept across calls


@dataclass(frozen=True)
class Case:
    name: str
    op: str
    make: Callable[[Any, Any], Call]  # (device, generator) -> Call
    bound: Callable[[Any], float]  # output dtype -> bound on its relative error
    contract: str | None = None  # family; None for the project's own case
    checks: frozenset = frozenset()
    devices: tuple[str, ...] = ()
    refusable: bool = False  # a correct kernel may refuse it with an error
    shape: tuple[int, ...] | None = None  # the main input's shape, when known before drawing
    dtype: str | None = None
    floor: float = 0.0  # errors are relative to max(|ref|, floor * sqrt(n)) (contracts.base.Contract)
    category: str = "project"  # a contract case's input category (pipeline.contracts.CATEGORIES); "project" for a project case

    def info(self) -> "CaseInfo":
        return CaseInfo(self.name, self.op, self.contract, self.category, self.shape, self.dtype,
                        tuple(sorted(self.checks)), self.refusable)


@dataclass(frozen=True)
class CaseInfo:
    """What the pipeline's process knows of a case that a worker runs: plain data."""

    name: str
    op: str
    contract: str | None
    category: str
    shape: tuple[int, ...] | None
    dtype: str | None
    checks: tuple[str, ...] = ()
    refusable: bool = False



# --------------------------------------------------------------------------
# The project's case file


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
                         path=str(path), code="smoke-cases-invalid", hint="see pipeline/smoke's docstring")
    return cases


def for_device(cases: list, device_type: str) -> tuple[list, list[str]]:
    """The cases (dicts or `Case`s) meant for `device_type`, and the names of the others."""
    kept, left_out = [], []
    for case in cases:
        devices = case.get("devices") if isinstance(case, dict) else case.devices
        name = case["name"] if isinstance(case, dict) else case.name
        if not devices or device_type in devices:
            kept.append(case)
        else:
            left_out.append(name)
    return kept, left_out


def project_bound(dtype, case: dict) -> float:
    default = TOLERANCE.get(str(dtype).removeprefix("torch."), 0.0)
    return min(default, float(case["tolerance"])) if "tolerance" in case else default


def project_case(case: dict) -> Case:
    """A case-file dict as a `Case`: its reference sees the outputs NaN-filled."""
    outputs = tuple(case["outputs"])
    returns = int(case.get("returns", 0))
    # Outputs that are also inputs (an in-place op's x): never poisoned, and
    # the reference sees their drawn values.
    inplace = tuple(case.get("inplace", ()))

    def make(device, gen) -> Call:
        import torch

        args = list(case["make"](device, gen))

        def reference() -> dict:
            ref_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
            for i in outputs:
                if i in inplace:
                    continue
                if isinstance(ref_args[i], torch.Tensor) and ref_args[i].is_floating_point():
                    ref_args[i].fill_(float("nan"))
            return {str(k): r for k, r in enumerate(case["reference"](*ref_args))}

        def read(call_args: list, returned) -> dict:
            out = {str(k): call_args[pos] for k, pos in enumerate(outputs)}
            values = returned if isinstance(returned, (tuple, list)) else (returned,)
            for j in range(returns):
                out[str(len(outputs) + j)] = values[j]
            return out

        floating = tuple(i for i in outputs if isinstance(args[i], torch.Tensor) and i not in inplace)
        return Call(args=args, poison=floating, written=outputs + inplace, read=read,
                    reference=reference)

    return Case(name=case["name"], op=case["op"], make=make, bound=lambda dtype: project_bound(dtype, case),
                checks=frozenset(case.get("checks", ())), devices=tuple(case.get("devices", ())))


# --------------------------------------------------------------------------
# Contract cases


def contract_case(op: str, contract, form, sample) -> Case:
    """One sample of a contract, laid out as `form`, for the op named `op`."""

    def make(device, gen) -> Call:
        inputs = contract.make(sample, gen, device)
        bound = form.bind(sample, inputs, device)
        return Call(args=bound.args, poison=bound.poison, written=bound.written, read=bound.read,
                    reference=lambda: form.checks(contract.reference(sample, inputs)), dtype=sample.torch_dtype)

    return Case(name=f"{op}:{sample.name}", op=op, make=make,
                bound=lambda dtype: contract.bound(str(dtype).removeprefix("torch."), sample),
                contract=contract.family, refusable=sample.refusable, shape=sample.shape, dtype=sample.dtype,
                floor=contract.floor, category=sample.category)
