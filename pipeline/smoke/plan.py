"""Which contract each of a kernel's ops must pass.

The ops are the ones the loaded build registers in its namespace
(`torch.ops.<kernel id>`), read from the dispatcher with their schemas, so the
project's Python code has no say in what is tested. Bindings
(`pipeline.contracts.Binding`) come from `--contract OP=FAMILY[:...]` first,
then the workspace file; an op bound to nothing is matched against the
contract library by name and schema (inferred). A plan is plain data (it
crosses from the worker that loads the kernel to the parent), except `forms`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.casefile import load_case_list
from pipeline.contracts import CATEGORIES, CLI, INFERRED, WORKSPACE, Binding
from pipeline.errors import SmokeError
from pipeline.smoke.cases import Case, contract_case

__all__ = ["CLI", "INFERRED", "WORKSPACE", "Binding", "OpPlan", "bench_shapes", "contract_cases", "plan_ops"]


@dataclass(frozen=True)
class OpPlan:
    op: str
    schema: str | None  # None: the build registers no such op
    family: str | None
    how: str  # CLI, WORKSPACE, INFERRED, or "" (no contract)
    forms: tuple = ()  # the family's forms the op is called as (not plain data: never sent between processes)
    code: str = ""  # what is wrong, when something is (see `note`)
    note: str = ""
    declines: tuple[str, ...] = ()  # input categories the binding declines: their cases are not run
    limits: tuple[str, ...] = ()  # categories the form's documented limits leave without a case
    checked: tuple[str, ...] = ()  # the outputs checked ("y", "rstd", ...)
    unchecked: tuple[str, ...] = ()  # what the op produces that nothing checks, named
    given: tuple[tuple[str, object], ...] = ()  # arguments no role fills and the value they get
    roles: str = ""  # how its arguments were matched: "out->y, input->x, epsilon->eps"

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


def _binding(value: Any) -> Binding:
    """A binding; (family, how) pairs are taken too."""
    if isinstance(value, Binding):
        return value
    family, how = value
    return Binding(family, how)


def _categories(contract, form) -> set[str]:
    # the categories do not depend on the device (only the sizes do)
    return {s.category for s in contract.samples("cpu", form)}


def _planned(op: str, text: str, contract, form, how: str, binding: Binding | None) -> OpPlan:
    layout = form.layout
    declines = tuple(binding.declines) if binding is not None else ()
    limits = tuple(c for c in CATEGORIES if c not in declines and c not in _categories(contract, form))
    if layout is None:
        checked, unchecked, given, roles = form.outputs, (), (), ""
    else:
        checked, unchecked, given, roles = layout.outputs, layout.unchecked, layout.given, layout.describe()
    return OpPlan(op, text, contract.family, how, forms=(form,), declines=declines, limits=limits,
                  checked=checked, unchecked=unchecked, given=given, roles=roles)


def _bound_plan(op: str, schema: Any, binding: Binding) -> OpPlan:
    registry = _registry()
    family, how = binding.family, binding.how
    text = registry.schema_text(schema)
    match = registry.bound(family, schema, op, binding)
    if not match.forms:
        why = f": {match.why}" if match.why else ""
        hand = "; ".join(f"{op}{f.schema}" for f in match.contract.forms if f.layout is None)
        accepted = f" (or one of: {hand})" if hand and match.contract.signature is not None else \
            (f"; it accepts: {hand}" if hand else "")
        return OpPlan(op, text, family, how, code="contract-schema-mismatch",
                      note=f"{op} is bound to {family} ({how}) but its schema {text} does not fit the family's "
                           f"roles{why}{accepted}")
    return _planned(op, text, match.contract, match.forms[0], how, binding)


def _inferred_plan(op: str, schema: Any) -> OpPlan:
    registry = _registry()
    text = registry.schema_text(schema)
    found = registry.infer(op, schema)
    if len(found) == 1:
        return _planned(op, text, found[0].contract, found[0].forms[0], INFERRED, None)
    if found:
        families = ", ".join(m.contract.family for m in found)
        return OpPlan(op, text, None, "", code="contract-ambiguous",
                      note=f"{op}{text} fits several contracts ({families}): bind one with --contract {op}=FAMILY")
    said = [m for m in registry.named(op, schema) if m.why]
    why = "".join(f"; its name says {m.contract.family}, but {m.why}" for m in said[:2])
    return OpPlan(op, text, None, "", code="op-not-covered",
                  note=f"no contract matches {op}{text}{why}: bind one with --contract {op}=FAMILY, "
                       "or cover it with tests/smoke_cases.py")


def plan_ops(ops: Any, bindings: dict[str, Binding]) -> list[OpPlan]:
    """One plan per registered op, plus one per binding that names no registered op.
    `bindings`: op -> Binding (or (family, how))."""
    registered = registered_ops(ops)
    bindings = {op: _binding(b) for op, b in bindings.items()}
    plans = []
    for op, schema in registered.items():
        if op in bindings:
            plans.append(_bound_plan(op, schema, bindings[op]))
        else:
            plans.append(_inferred_plan(op, schema))
    for op, binding in bindings.items():
        if op not in registered:
            known = ", ".join(registered) or "none"
            plans.append(OpPlan(op, None, binding.family, binding.how, code="contract-op-missing",
                                note=f"{op} is bound to {binding.family} ({binding.how}) but the build registers no "
                                     f"op {op!r} (its ops: {known})"))
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
    (`bench`: (shape, dtype) pairs the project benchmarks this op at), less the
    categories the binding declines."""
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
            if sample.category in plan.declines:
                continue
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
