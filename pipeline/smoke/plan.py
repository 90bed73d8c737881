"""Which contract each of a kernel's ops must pass.

The ops are the ones the loaded build registers in its namespace
(`torch.ops.<kernel id>`), read from the dispatcher with their schemas, so the
project's Python code has no say in what is tested. Bindings come from
`--contract OP=FAMILY` first, then the workspace file; an op bound to nothing
is matched against the contract library by name and schema (inferred).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.casefile import load_case_list
from pipeline.errors import SmokeError
from pipeline.smoke.cases import Case, contract_case

# how a binding was made, as reports and the card say it
CLI, WORKSPACE, INFERRED = "--contract", "workspace", "inferred"


@dataclass(frozen=True)
class OpPlan:
    op: str
    schema: str | None  # None: the build registers no such op
    family: str | None
    how: str  # CLI, WORKSPACE, INFERRED, or "" (no contract)
    forms: tuple = ()  # the family's forms the op is called as
    code: str = ""  # what is wrong, when something is (see `note`)
    note: str = ""

    @property
    def failed(self) -> bool:
        """A binding that cannot be honoured fails the run (an inference that finds nothing does not)."""
        return self.code in ("contract-op-missing", "contract-schema-mismatch")


def _registry():
    from pipeline.contracts import registry  # imports torch; the CLI starts without it

    return registry


def registered_ops(ops: Any) -> dict[str, Any]:
    """op name -> FunctionSchema (its default overload's) for every op of the namespace."""
    import torch

    name = getattr(ops, "name", None)
    if not isinstance(ops, torch._ops._OpNamespace) or not name:
        return {}
    prefix = f"{name}::"
    found: dict[str, Any] = {}
    for full in sorted(torch._C._dispatch_get_all_op_names()):
        if not full.startswith(prefix):
            continue
        op, _, overload = full[len(prefix):].partition(".")
        try:
            schema = getattr(getattr(ops, op), overload or "default")._schema
        except (AttributeError, RuntimeError):
            continue
        if not overload or op not in found:
            found[op] = schema
    return found


# The dispatch key a device type's kernels are registered under.
DISPATCH_KEYS = {"cpu": "CPU", "cuda": "CUDA", "xpu": "XPU", "mps": "MPS", "hip": "CUDA"}


def available_on(ops: Any, op: str, device_type: str) -> bool:
    """Whether the build has a kernel of `op` that runs for `device_type`: one registered
    for its dispatch key, or a composite one (a Python custom op, CompositeImplicitAutograd).
    A build's CPU variant may ship only some of its ops for the CPU: the others are
    "not available on cpu", not failures."""
    import torch

    name = getattr(ops, "name", None)
    key = DISPATCH_KEYS.get(device_type)
    if not name or key is None or not isinstance(ops, torch._ops._OpNamespace):
        return True
    try:
        return bool(torch._C._dispatch_has_computed_kernel_for_dispatch_key(f"{name}::{op}", key))
    except RuntimeError:  # not a registered operator: the call will say so
        return True


def _bound_plan(op: str, schema: Any, family: str, how: str) -> OpPlan:
    registry = _registry()
    match = registry.bound(family, schema)
    text = registry.schema_text(schema)
    if not match.forms:
        accepted = "; ".join(f"{op}{f.schema}" for f in match.contract.forms)
        return OpPlan(op, text, family, how, code="contract-schema-mismatch",
                      note=f"{op} is bound to {family} ({how}) but its schema {text} is none the family accepts: "
                           f"{accepted}")
    named = [f for f in match.forms if op in match.contract.names_of(f)]
    return OpPlan(op, text, family, how, forms=tuple(named or match.forms)[:1])


def _inferred_plan(op: str, schema: Any) -> OpPlan:
    registry = _registry()
    text = registry.schema_text(schema)
    found = registry.infer(op, schema)
    if len(found) == 1:
        return OpPlan(op, text, found[0].contract.family, INFERRED, forms=found[0].forms[:1])
    if found:
        families = ", ".join(m.contract.family for m in found)
        return OpPlan(op, text, None, "", code="contract-ambiguous",
                      note=f"{op}{text} fits several contracts ({families}): bind one with --contract {op}=FAMILY")
    return OpPlan(op, text, None, "", code="op-not-covered",
                  note=f"no contract matches {op}{text}: bind one with --contract {op}=FAMILY, "
                       "or cover it with tests/smoke_cases.py")


def plan_ops(ops: Any, bindings: dict[str, tuple[str, str]]) -> list[OpPlan]:
    """One plan per registered op, plus one per binding that names no registered op.
    `bindings`: op -> (family, how)."""
    registered = registered_ops(ops)
    plans = []
    for op, schema in registered.items():
        if op in bindings:
            plans.append(_bound_plan(op, schema, *bindings[op]))
        else:
            plans.append(_inferred_plan(op, schema))
    for op, (family, how) in bindings.items():
        if op not in registered:
            known = ", ".join(registered) or "none"
            plans.append(OpPlan(op, None, family, how, code="contract-op-missing",
                                note=f"{op} is bound to {family} ({how}) but the build registers no op {op!r} "
                                     f"(its ops: {known})"))
    return plans


# The project's benchmark shapes join the contract's: on the CPU the largest of at
# most 8M elements, on a GPU the three largest of at most 32M.
BENCH_LIMITS = {"cpu": (1, 1 << 23)}
BENCH_LIMIT_GPU = (3, 1 << 25)


def pick_bench(shapes: list[tuple[tuple[int, ...], str]], device_type: str) -> list[tuple[tuple[int, ...], str]]:
    count, limit = BENCH_LIMITS.get(device_type, BENCH_LIMIT_GPU)
    fitting = sorted({s for s in shapes if 0 < math.prod(s[0]) <= limit}, key=lambda s: (-math.prod(s[0]), s))
    return fitting[:count]


def contract_cases(plan: OpPlan, device_type: str, bench: list | tuple = ()) -> list[Case]:
    """The contract's samples for the op, plus samples of the benchmark's own shapes
    (`bench`: (shape, dtype) pairs the project benchmarks this op at)."""
    if not plan.forms:
        return []
    contract = _registry().CONTRACTS[plan.family]
    cases, names = [], set()
    for form in plan.forms:
        samples = list(contract.samples(device_type, form))
        if contract.shaped is not None:
            samples += [s for shape, dtype in pick_bench(list(bench), device_type)
                        if (s := contract.shaped(shape, dtype, form)) is not None]
        for sample in samples:
            if sample.name not in names:
                names.add(sample.name)
                cases.append(contract_case(plan.op, contract, form, sample))
    return cases


def bench_shapes(path: Path | None) -> dict[str, list[tuple[tuple[int, ...], str]]]:
    """op -> [(shape, dtype)] from the project's benchmarks/bench_cases.py: the sizes the
    kernel is timed (and so tuned) at. The op is the first word of a case's `op` label."""
    if path is None:
        return {}
    found: dict[str, list] = {}
    for case in load_case_list(path, "bench_cases", error=SmokeError, code="smoke-cases-failed"):
        label, shape, dtype = str(case.get("op", "")), str(case.get("shape", "")), str(case.get("dtype", ""))
        op = re.split(r"[\s(]", label.strip(), maxsplit=1)[0]
        if op and re.fullmatch(r"\d+(x\d+)*", shape):
            found.setdefault(op, []).append((tuple(int(d) for d in shape.split("x")), dtype.removeprefix("torch.")))
    return found
