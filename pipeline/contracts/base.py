"""What a contract is made of, and how an op's schema is matched to one of its forms.

A `Contract` (one per family) generates `Sample`s: problem instances described
before any tensor exists (dtype, shape, storage layout, the family's knobs
such as eps or the rotary pairing), each of one input category. `make` draws a
sample's canonical inputs, `reference` computes its canonical outputs in
float64. A `Form` is one way of calling an op of the family; its `bind` lays the
canonical inputs out as the op's arguments (allocating out-arguments, passing
in-place ones) and says how to read the canonical outputs back after the call.
So one reference serves every form, and a project never supplies either. Most
families describe their arguments as roles (`roles.Signature`): a form is then
made for the op's own schema; a few keep hand-written forms (`Form`s with a
fixed schema) for layouts roles cannot say (rotary's pair views).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch

Inputs = dict  # canonical inputs of a sample: tensors and scalars by role ("x", "weight", "eps", ...)
Outputs = dict  # canonical outputs by role ("y", ...): float64 for references

SHORT_DTYPE = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}

# Bounds on the relative norm error against float64, per output dtype.
# Reductions (norms, softmax) sum thousands of products in float32, hence
# their looser float32 bound.
ELEMENTWISE_TOLERANCE = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3}
REDUCTION_TOLERANCE = {"float32": 3e-5, "float16": 1e-3, "bfloat16": 8e-3}
# A float32 sum of n terms accumulated in order is off by ~sqrt(n) x 2^-24
# relative (random rounding), and everything after a row sum inherits that: at
# the 262144-element rows PyTorch's own CPU softmax lands at 2.5e-5 against the
# 3e-5 above, over it for some draws and thread counts. So a reduction's
# float32 bound grows with its length: at least this many times sqrt(n) x 2^-24
# (from ~16 K elements; 1.2e-4 at 262144).
FP32_SUM_GROWTH = 4.0
# GELU and friends in float32 lose digits in the negative tail (1 + erf(x) and
# 1 + tanh(x) cancel): PyTorch's own float32 GELU is 1e-4 off on one element there.
ACTIVATION_TOLERANCE = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 8e-3}
ACTIVATION_FLOOR = 1e-2  # outputs of the far tail are ~0 and judged absolutely

# A sample of at least this many elements is of category "huge": the size a
# benchmark runs at, where kernels switch to other code paths (split reductions,
# 64-bit indexing, a "too big, copy it through" shortcut). Every contract has
# one on every device, the CPU included (4M elements stays affordable there).
HUGE_ELEMENTS = 4 * 1024 * 1024


@dataclass(frozen=True)
class Sample:
    """One problem instance of a family, before any tensor is drawn."""

    family: str
    dtype: str  # torch dtype name: "bfloat16", "float16", "float32"
    shape: tuple[int, ...]  # the main input's logical shape
    layout: str = "contiguous"  # contiguous, row-strided, transposed, misaligned
    knobs: tuple[tuple[str, Any], ...] = ()  # the family's parameters: eps, pairing, approximate, ...

    def knob(self, key: str, default: Any = None) -> Any:
        return dict(self.knobs).get(key, default)

    def with_knobs(self, **values: Any) -> "Sample":
        merged = {**dict(self.knobs), **values}
        return Sample(self.family, self.dtype, self.shape, self.layout, tuple(sorted(merged.items())))

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def refusable(self) -> bool:
        """A correct kernel may refuse this input with an error (never answer wrongly):
        non-contiguous or misaligned storage, or an empty batch."""
        return self.layout != "contiguous" or self.elements == 0

    @property
    def category(self) -> str:
        """What kind of input this is (`pipeline.contracts.CATEGORIES`): empty, its
        storage layout when that is not contiguous, huge, else contiguous."""
        if self.elements == 0:
            return "empty"
        if self.layout != "contiguous":
            return self.layout
        return "huge" if self.elements >= HUGE_ELEMENTS else "contiguous"

    @property
    def name(self) -> str:
        dims = "x".join(str(d) for d in self.shape)
        knobs = "".join(f"/{k}={_show(v)}" for k, v in self.knobs)
        return f"{self.family}/{SHORT_DTYPE.get(self.dtype, self.dtype)}/{dims}/{self.layout}{knobs}"


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass
class Bound:
    """A sample laid out as one form's arguments."""

    args: list
    poison: tuple[int, ...]  # out-of-place outputs: the harness poisons and guards these
    written: tuple[int, ...]  # every position the op may write (out-of-place and in place)
    read: Callable[[list, Any], Outputs]  # (args, returned value) -> the canonical outputs


def _everything(sample: Sample) -> bool:
    return True


@dataclass(frozen=True)
class Form:
    """One schema a family accepts, and how a sample becomes its arguments."""

    schema: str  # without the op name: "(Tensor! out, Tensor input) -> ()"
    bind: Callable[[Sample, Inputs, torch.device], Bound]
    names: tuple[str, ...] = ()  # op names inferred as this form (default: the family's names)
    supports: Callable[[Sample], bool] = _everything  # the form's documented limits
    sweep: tuple[tuple[str, tuple], ...] = ()  # knobs this form's arguments choose, with their values
    fixed: tuple[tuple[str, Any], ...] = ()  # knobs this form's semantics fix
    outputs: tuple[str, ...] = ()  # the reference's outputs this form checks (empty: all of them)
    layout: Any = None  # roles.Layout of a form made from the family's roles (None: hand-written)

    @property
    def parsed(self) -> torch.FunctionSchema:
        return torch._C.parse_schema("op" + self.schema)

    def checks(self, outputs: Outputs) -> Outputs:
        """The reference outputs this form's op is checked against."""
        return outputs if not self.outputs else {k: v for k, v in outputs.items() if k in self.outputs}


@dataclass(frozen=True)
class Contract:
    family: str
    summary: str  # the formula, one line
    names: tuple[str, ...]  # op names that infer this family (as whole words of the op's name)
    forms: tuple[Form, ...]  # hand-written forms, and the roles' forms of the family's own schemas
    samples: Callable[[str, Form], list[Sample]]  # (device type, form) -> adversarial samples
    make: Callable[[Sample, torch.Generator, torch.device], Inputs]
    reference: Callable[[Sample, Inputs], Outputs]
    tolerance: Mapping[str, float] = field(default_factory=lambda: ELEMENTWISE_TOLERANCE)
    # The error is relative to max(|ref|, floor * sqrt(n)): an output whose RMS is
    # below `floor` (an activation's far tail) is judged by absolute error.
    floor: float = 0.0
    # (main input shape, dtype, form) -> a sample of that shape: how the project's
    # benchmark shapes join the contract's (None: the family cannot read one)
    shaped: Callable[[tuple, str, "Form"], Sample | None] | None = None
    # The family reduces over the main input's last dimension (norms, softmax):
    # its float32 bound then grows with that length (FP32_SUM_GROWTH).
    reduces_last: bool = False
    # ... and over its rows too (a weight's gradient sums every row)
    reduces_rows: bool = False
    # The family's roles (`roles.Signature`): any schema they can be matched to is a form.
    signature: Any = None

    def bound(self, dtype: str, sample: Sample | None = None) -> float:
        base = float(self.tolerance.get(dtype, 0.0))
        if dtype != "float32" or sample is None or not sample.shape:
            return base
        length = sample.shape[-1] if self.reduces_last else 0
        if self.reduces_rows:
            length = max(length, sample.elements // max(sample.shape[-1], 1))
        if length:
            base = max(base, FP32_SUM_GROWTH * math.sqrt(max(length, 1)) * 2.0 ** -24)
        return base

    def names_of(self, form: Form) -> tuple[str, ...]:
        return form.names or self.names


# --------------------------------------------------------------------------
# Schemas


def type_name(t: Any) -> str:
    """A schema argument type in schema spelling: Tensor, Tensor?, Tensor[], float, int, bool, ..."""
    text = str(t)
    optional = re.fullmatch(r"Optional\[(.*)\]", text)
    if optional:
        return type_name(optional.group(1)) + "?"
    listed = re.fullmatch(r"List\[(.*)\]", text)
    if listed:
        return type_name(listed.group(1)) + "[]"
    return {"SymInt": "int", "number": "Scalar"}.get(text, text)


def _is_write(arg: Any) -> bool:
    return bool(arg.alias_info is not None and arg.alias_info.is_write)


def _has_default(arg: Any) -> bool:
    return bool(arg.has_default_value()) if hasattr(arg, "has_default_value") else arg.default_value is not None


def _compatible(want: Any, have: Any) -> bool:
    w, h = type_name(want.type), type_name(have.type)
    if _is_write(want) != _is_write(have):
        return False
    # A form that always passes a tensor may call an op that also accepts None.
    return w == h or (w + "?" == h)


def matches(pattern: torch.FunctionSchema, schema: Any) -> bool:
    """Whether an op with `schema` can be called as `pattern` says: the same
    positional arguments (types and mutation), trailing defaulted ones of the op
    left out, and the same returns."""
    have = list(schema.arguments)
    want = list(pattern.arguments)
    while len(have) > len(want) and _has_default(have[-1]):
        have.pop()
    if len(have) != len(want) or any(a.kwarg_only for a in have):
        return False
    if not all(_compatible(w, h) for w, h in zip(want, have)):
        return False
    return [type_name(r.type) for r in pattern.returns] == [type_name(r.type) for r in schema.returns]


def schema_text(schema: Any) -> str:
    """`(Tensor! out, Tensor input) -> ()` for an op's FunctionSchema."""
    def arg(a) -> str:
        kind = type_name(a.type)
        if _is_write(a):
            kind = kind.replace("Tensor", "Tensor!", 1)
        return f"{kind} {a.name}"

    returns = ", ".join(type_name(r.type) for r in schema.returns)
    returns = returns if len(schema.returns) == 1 else f"({returns})"
    return f"({', '.join(arg(a) for a in schema.arguments)}) -> {returns}"


# --------------------------------------------------------------------------
# Forms described by an argument list


def spec_form(schema: str, spec: tuple, returns: tuple = (), *, shapes: Callable[[Sample, Inputs], dict],
              **form: Any) -> Form:
    """A form whose arguments are listed as: "x" (the canonical input x), "out:y"
    (a new output for y, shaped by `shapes`), "io:x:y" (input x, overwritten with
    y) or any non-string constant; `returns` names the returned values in order
    (None for one that is not checked)."""

    def bind(sample: Sample, inputs: Inputs, device: torch.device) -> Bound:
        args: list = []
        poison, written, reads = [], [], {}
        for i, item in enumerate(spec):
            if not isinstance(item, str):
                args.append(item)
            elif item.startswith("out:"):
                key = item[4:]
                args.append(torch.empty(shapes(sample, inputs)[key], dtype=sample.torch_dtype, device=device))
                poison.append(i)
                written.append(i)
                reads[key] = i
            elif item.startswith("io:"):
                _, source, key = item.split(":")
                args.append(inputs[source])
                written.append(i)
                reads[key] = i
            else:
                args.append(inputs[item])

        def read(call_args: list, returned: Any) -> Outputs:
            out = {key: call_args[pos] for key, pos in reads.items()}
            values = returned if isinstance(returned, (tuple, list)) else (returned,)
            for key, value in zip(returns, values):
                if key is not None:
                    out[key] = value
            return out

        return Bound(args=args, poison=tuple(poison), written=tuple(written), read=read)

    keys = [i.split(":")[-1] for i in spec if isinstance(i, str) and ":" in i] + [r for r in returns if r]
    form.setdefault("outputs", tuple(dict.fromkeys(keys)))
    return Form(schema=schema, bind=bind, **form)
