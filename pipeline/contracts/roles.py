"""A family's arguments and outputs as roles, and how an op's own schema is matched to them.

A `Signature` lists a family's input roles (x, weight, residual, eps, ...), its
outputs (y first, then extras such as rstd) and the arguments that select its
semantics among a fused kernel's options (`Fixed`: no dropout, not RMS). `match`
lays an op's schema out as roles, in this order, each step only for what the
earlier ones left:

1. the binding's `roles` (role -> argument) and `args` (argument -> value);
2. the family's fixed arguments, by name (`dropout_p` = 0.0);
3. names: an argument whose name is a role's (`out`, `rms_inv`, `hidden_states`,
   `gamma`, `variance_epsilon`) plays it; writable arguments are tried as outputs first;
4. type and position: read-only tensors fill the required input roles in order
   (then the optional ones); when too few are read-only, the first writable ones
   are in-place (the input role they take is overwritten with its output); the
   other writable tensors are outputs, in order; floats, ints and bools fill the
   scalar roles in order;
5. what is left: an optional argument is passed None, a defaulted one its default;
   anything else needs a value from the binding;
6. returns: a returned `Tensor`, tuple or `Tensor[]` gives the outputs no argument
   holds, in order; extra outputs (rstd, mean) only by the return's name, the
   binding's `returns` or the family's preset for a known op, else they are
   named as unchecked.

An optional input role the schema lacks fixes the sample's knobs (`weight=none`:
an RMSNorm without weight). The result is a `Layout`, plain data, from which
`form_of` makes the `Form` the harness calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from pipeline.contracts.base import Bound, Form, Inputs, Outputs, Sample, _everything, _has_default, _is_write, \
    schema_text, type_name
from pipeline.contracts.role_names import (BIAS, DBIAS, DWEIGHT, DX, DY, EPS, FORWARD_OUTPUT, MEAN,  # noqa: F401
                                           NORM_OPTIONS, RESIDUAL, RESIDUAL_OUT, RSTD, SEMANTIC_WORDS, WEIGHT, X, Y,
                                           Fixed, name_score, words)


def like_x(sample: Sample) -> tuple[int, ...]:
    return tuple(sample.shape)


def per_row(sample: Sample) -> tuple[int, ...]:
    """One value per row of the main input: its shape without the last dimension."""
    return tuple(sample.shape[:-1])


def flat_rows(sample: Sample) -> tuple[int, ...]:
    """One value per row, flat: how kernels allocate rstd and mean ([rows])."""
    return (sample.elements // sample.shape[-1] if sample.shape[-1] else 0,) if sample.shape else ()


@dataclass(frozen=True)
class In:
    """An input role: `inputs[key]` is passed for it."""

    key: str
    kind: str = "tensor"  # tensor, float, int, bool
    names: tuple[str, ...] = ()  # argument names that say this role
    optional: bool = False  # a schema may lack it ...
    absent: tuple[tuple[str, Any], ...] = ()  # ... and then these knobs are fixed
    inplace: str = ""  # the output an in-place op writes over this input


@dataclass(frozen=True)
class Out:
    """An output role: `reference(...)[key]` is what it must hold."""

    key: str
    names: tuple[str, ...] = ()
    extra: bool = False  # rstd, mean: checked when the op produces it, never required
    optional: bool = False  # a primary output a form may lack (the bias gradient of a bias-less form)
    shape: Callable[[Sample], tuple] = like_x  # for an out-argument the harness allocates
    rows: bool = False  # one value per row: read back from any shape of that many elements, any float dtype,
    #                     as the reference's per_row shape


@dataclass(frozen=True)
class Preset:
    """What the family knows of one real op, by name: which outputs it returns
    (when its schema cannot say) and its documented limits."""

    name: str
    returns: tuple[str, ...] = ()
    supports: Callable[[Sample], bool] = _everything
    note: str = ""


@dataclass(frozen=True)
class Signature:
    inputs: tuple[In, ...]
    outputs: tuple[Out, ...]
    fixed: tuple[Fixed, ...] = ()
    presets: tuple[Preset, ...] = ()

    def preset(self, op: str | None) -> Preset | None:
        return next((p for p in self.presets if p.name == op), None)

    def input(self, key: str) -> In | None:
        return next((r for r in self.inputs if r.key == key), None)

    def output(self, key: str) -> Out | None:
        return next((r for r in self.outputs if r.key == key), None)


@dataclass(frozen=True)
class Slot:
    """What one argument of the op is given."""

    kind: str  # "in" (inputs[key]), "out" (a new tensor for output key), "io" (inputs[key], overwritten
    #            with output `out`), "value", "none", "default" (the schema's default), "omit" (trailing default)
    key: str = ""
    out: str = ""
    value: Any = None


@dataclass(frozen=True)
class Layout:
    """An op's schema laid out as a family's roles. Plain data."""

    slots: tuple[Slot, ...]
    returns: tuple[str, ...]  # the output key of each returned value, in order ("" = not checked)
    knobs: tuple[tuple[str, Any], ...]  # knobs the schema fixes (an optional role it lacks)
    outputs: tuple[str, ...]  # the outputs checked
    unchecked: tuple[str, ...]  # what the op produces that nothing checks, as the report names it
    given: tuple[tuple[str, Any], ...]  # arguments no role fills and the value they are given
    names: tuple[str, ...] = ()  # the schema's argument names
    inplace: bool = False  # some input is overwritten with an output

    def describe(self) -> str:
        """`out->y, input->x, weight->weight, epsilon->eps` for the report."""
        parts = []
        for name, slot in zip(self.names, self.slots):
            if slot.kind in ("in", "out"):
                parts.append(f"{name}->{slot.key}")
            elif slot.kind == "io":
                parts.append(f"{name}->{slot.key} (in place: {slot.out})")
        return ", ".join(parts)


class Mismatch(Exception):
    """The schema cannot be laid out as the family's roles (the message says why)."""


# --------------------------------------------------------------------------
# Matching


def normal(name: str) -> str:
    return name.strip("_").lower()


_SCALAR = {"float": ("float",), "int": ("int",), "bool": ("bool",)}


def _kind_fits(kind: str, arg: Any) -> bool:
    t = type_name(arg.type)
    if kind == "tensor":
        return t in ("Tensor", "Tensor?")
    return t in _SCALAR.get(kind, ())


def _optional(arg: Any) -> bool:
    return type_name(arg.type).endswith("?")


def coerce(value: Any, arg: Any) -> Any:
    """A binding's or the family's value as `arg`'s type (an int for a float argument, ...)."""
    t = type_name(arg.type)
    base = t.rstrip("?")
    if value is None:
        if t.endswith("?"):
            return None
        raise Mismatch(f"argument {arg.name} ({t}) cannot be None")
    if base == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if base == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if base == "bool" and isinstance(value, bool):
        return value
    raise Mismatch(f"argument {arg.name} is {t}, not {type(value).__name__} ({value!r})")


def _value_fits(value: Any, arg: Any) -> bool:
    try:
        coerce(value, arg)
    except Mismatch:
        return False
    return True


class _Matching:
    """The state of one `match`: each argument's slot so far and the roles taken."""

    def __init__(self, sig: Signature, schema: Any, family: str, binding: Any):
        self.sig, self.schema, self.family, self.binding = sig, schema, family, binding
        self.args = list(schema.arguments)
        self.slots: list[Slot | None] = [None] * len(self.args)
        self.by_name = {a.name: i for i, a in enumerate(self.args)}
        self.taken_in: set[str] = set()
        self.taken_out: set[str] = set()
        self.writes = [_is_write(a) for a in self.args]

    def free(self, i: int) -> bool:
        return self.slots[i] is None

    def take_input(self, i: int, role: In) -> None:
        if role.kind == "tensor" and self.writes[i] and role.inplace and role.inplace not in self.taken_out:
            self.slots[i] = Slot("io", role.key, out=role.inplace)
            self.taken_out.add(role.inplace)
        else:
            self.slots[i] = Slot("in", role.key)
        self.taken_in.add(role.key)

    def take_output(self, i: int, role: Out) -> None:
        self.slots[i] = Slot("out", role.key)
        self.taken_out.add(role.key)

    def from_binding(self) -> None:
        """1. the binding's roles and values."""
        sig, args = self.sig, self.args
        for role_key, arg_name in getattr(self.binding, "roles", ()) or ():
            if arg_name not in self.by_name:
                raise Mismatch(f"the binding gives role {role_key} to {arg_name!r}, which is no argument of the op")
            i = self.by_name[arg_name]
            in_role, out_role = sig.input(role_key), sig.output(role_key)
            if in_role is not None and _kind_fits(in_role.kind, args[i]):
                self.take_input(i, in_role)
            elif out_role is not None and self.writes[i]:
                self.take_output(i, out_role)
            else:
                roles = ", ".join([r.key for r in sig.inputs] + [r.key for r in sig.outputs])
                raise Mismatch(f"the binding gives role {role_key!r} to {arg_name!r}, but {self.family} has no such "
                               f"role for a {type_name(args[i].type)}{'!' if self.writes[i] else ''} argument "
                               f"(roles: {roles})")
        for arg_name, value in getattr(self.binding, "args", ()) or ():
            if arg_name not in self.by_name:
                raise Mismatch(f"the binding gives a value to {arg_name!r}, which is no argument of the op")
            i = self.by_name[arg_name]
            self.slots[i] = Slot("value", value=coerce(value, args[i]))

    def fixed_and_named(self) -> None:
        """2. the family's fixed arguments; 3. names, outputs first (an op may mark its input
        writable without writing it)."""
        for i, a in enumerate(self.args):
            if self.free(i):
                fixed = next((f for f in self.sig.fixed if normal(a.name) in f.names and _value_fits(f.value, a)), None)
                if fixed is not None:
                    self.slots[i] = Slot("value", value=coerce(fixed.value, a))
        for i, a in enumerate(self.args):
            if self.free(i) and self.writes[i]:
                role = next((r for r in self.sig.outputs if normal(a.name) in r.names and r.key not in self.taken_out),
                            None)
                if role is not None:
                    self.take_output(i, role)
        for i, a in enumerate(self.args):
            if self.free(i):
                role = next((r for r in self.sig.inputs if normal(a.name) in r.names and r.key not in self.taken_in
                             and _kind_fits(r.kind, a)), None)
                if role is not None:
                    self.take_input(i, role)

    def tensors_by_position(self) -> None:
        """4. type and position, tensors: read-only ones fill the required input roles, then the
        optional ones; too few, and the first writable ones are in place; the rest are outputs."""
        sig, args, family = self.sig, self.args, self.family
        required = [r for r in sig.inputs if r.kind == "tensor" and not r.optional and r.key not in self.taken_in]
        reads = [i for i, a in enumerate(args) if self.free(i) and not self.writes[i] and type_name(a.type) == "Tensor"]
        written = [i for i, a in enumerate(args) if self.free(i) and self.writes[i] and type_name(a.type) == "Tensor"]
        if len(reads) < len(required):
            short = len(required) - len(reads)
            inplace = [r for r in required if r.inplace and r.inplace not in self.taken_out][:short]
            if len(inplace) < short or len(written) < short:
                missing = ", ".join(r.key for r in required[len(reads):])
                raise Mismatch(f"no tensor argument for {missing}")
            for role, i in zip(inplace, written):
                self.take_input(i, role)
            written = written[short:]
            required = [r for r in required if r not in inplace]
        for role, i in zip(required, reads):
            self.take_input(i, role)
        reads = reads[len(required):]
        for role in [r for r in sig.inputs if r.kind == "tensor" and r.optional and r.key not in self.taken_in]:
            if reads:
                self.take_input(reads.pop(0), role)
        if reads:
            names = ", ".join(args[i].name for i in reads)
            raise Mismatch(f"tensor argument(s) {names} fill no role of {family}")
        for i in written:
            role = next((r for r in sig.outputs if r.key not in self.taken_out), None)
            if role is None:
                raise Mismatch(f"writable argument {args[i].name} is none of {family}'s outputs")
            self.take_output(i, role)

    def scalars_and_rest(self) -> list[Slot]:
        """4. scalars by type and position; 5. what is left: None for an optional argument, the
        default for a defaulted one, else the binding must give a value. Returns the final slots."""
        args, family = self.args, self.family
        for role in [r for r in self.sig.inputs if r.kind != "tensor" and r.key not in self.taken_in]:
            i = next((i for i, a in enumerate(args) if self.free(i) and _kind_fits(role.kind, a)), None)
            if i is not None:
                self.take_input(i, role)
            elif not role.optional:
                raise Mismatch(f"no {role.kind} argument for {role.key}")
        needs = []
        for i, a in enumerate(args):
            if not self.free(i):
                continue
            if _optional(a) and not (_has_default(a) and a.default_value is not None):
                self.slots[i] = Slot("none")
            elif _has_default(a):
                self.slots[i] = Slot("default", value=a.default_value)
            else:
                needs.append(f"{a.name} ({type_name(a.type)}{'!' if self.writes[i] else ''})")
        if needs:
            raise Mismatch(f"argument(s) {', '.join(needs)} fill no role of {family}: give them values in the "
                           f"binding (args = {{ NAME = VALUE }}, or --contract OP={family}:NAME=VALUE)")
        missing = [r.key for r in self.sig.inputs if r.kind == "tensor" and not r.optional and r.key not in self.taken_in]
        if missing:
            raise Mismatch(f"no argument for {', '.join(missing)}")
        slots = self.slots
        for i, a in enumerate(args):  # passed positionally: a keyword-only argument must be left to its default
            if a.kwarg_only and slots[i].kind not in ("default", "none"):
                raise Mismatch(f"keyword-only argument {a.name} would need a value")
        # trailing defaults are left out: the op's own default applies
        cut = len(args)
        while cut and (slots[cut - 1].kind == "default" or (slots[cut - 1].kind == "none" and _has_default(args[cut - 1]))
                       or args[cut - 1].kwarg_only):
            cut -= 1
        return [s if i < cut else Slot("omit") for i, s in enumerate(slots)]

    def layout(self, final: list[Slot], preset: "Preset | None") -> Layout:
        """6. returns, then the layout."""
        sig, binding = self.sig, self.binding
        returns, unchecked = _returns(sig, self.schema, self.family, self.taken_out, binding, preset)
        produced = set(self.taken_out) | {k for k in returns if k}
        lacking = [r.key for r in sig.outputs if not r.extra and not r.optional and r.key not in produced]
        if lacking:
            raise Mismatch(f"the op produces no {', '.join(lacking)} (neither a writable argument nor a returned value)")
        skipped = tuple(getattr(binding, "unchecked", ()) or ())
        for key in skipped:
            if key not in produced:
                raise Mismatch(f"the binding leaves {key!r} unchecked, but the op produces no such output "
                               f"(it produces {', '.join(sorted(produced))})")
        outputs = tuple(r.key for r in sig.outputs if r.key in produced and r.key not in skipped)
        unchecked = tuple(f"{k} (binding)" for k in skipped) + unchecked
        knobs = tuple(sorted(kv for r in sig.inputs if r.optional and r.key not in self.taken_in for kv in r.absent))
        given = tuple((self.args[i].name, s.value) for i, s in enumerate(final) if s.kind in ("value", "default"))
        return Layout(slots=tuple(final), returns=returns, knobs=knobs, outputs=outputs, unchecked=unchecked,
                      given=given, names=tuple(a.name for a in self.args), inplace=any(s.kind == "io" for s in final))


def match(sig: Signature, schema: Any, family: str, *, op: str | None = None, binding: Any = None) -> Layout:
    """`schema` laid out as `sig`'s roles (raises Mismatch with the reason when it cannot be)."""
    m = _Matching(sig, schema, family, binding)
    m.from_binding()
    m.fixed_and_named()
    m.tensors_by_position()
    return m.layout(m.scalars_and_rest(), sig.preset(op))


def _returns(sig: Signature, schema: Any, family: str, taken_out: set, binding: Any,
             preset: Preset | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the output key of each returned value, what the op returns that is not checked)."""
    rets = list(schema.returns)
    for r in rets:
        if type_name(r.type) not in ("Tensor", "Tensor?", "Tensor[]"):
            raise Mismatch(f"it returns {type_name(r.type)}, not tensors")
    listed = len(rets) == 1 and type_name(rets[0].type) == "Tensor[]"
    given = tuple(getattr(binding, "returns", ()) or ()) or (preset.returns if preset else ())
    if given:
        for key in given:
            if key and sig.output(key) is None:
                raise Mismatch(f"returns names {key!r}, which is no output of {family} "
                               f"({', '.join(r.key for r in sig.outputs)})")
        if not listed and len(given) != len(rets):
            raise Mismatch(f"returns names {len(given)} value(s) but the op returns {len(rets)}")
        unchecked = tuple(f"returned value {i}" for i, k in enumerate(given) if not k)
        if listed:
            unchecked += (f"any returned value after the first {len(given)}",)
        return given, unchecked
    if listed:
        # a list's extra elements cannot be named: only the outputs no argument holds, primary first
        primary = [r.key for r in sig.outputs if not r.extra and r.key not in taken_out]
        return tuple(primary), (f"any returned value after the first {len(primary)}",)
    keys, unchecked = [], []
    left = [r for r in sig.outputs if not r.extra and r.key not in taken_out]
    for n, r in enumerate(rets):
        if r.alias_info is not None and r.alias_info.is_write:
            keys.append("")  # the out-argument itself, read from there
            continue
        named = next((o for o in sig.outputs if r.name and normal(r.name) in o.names and o.key not in taken_out
                      and o.key not in keys), None)
        if named is not None:
            keys.append(named.key)
            if named in left:
                left.remove(named)
        elif left:  # by position: the primary outputs no argument holds, in order
            keys.append(left.pop(0).key)
        else:
            keys.append("")
            unchecked.append(f"returned {r.name or f'value {n}'}")
    return tuple(keys), tuple(unchecked)


# --------------------------------------------------------------------------
# The form the harness calls


def _rows(value: Any, sample: Sample, shape: tuple) -> Any:
    """A per-row output as the reference holds it: any shape of that many elements, in the sample's dtype."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return value
    if tuple(value.shape) != shape and value.numel() == int(torch.Size(shape).numel()):
        value = value.reshape(shape)
    return value if value.dtype == sample.torch_dtype else value.to(sample.torch_dtype)


def bind_of(sig: Signature, layout: Layout) -> Callable[[Sample, Inputs, torch.device], Bound]:
    stop = next((i for i, s in enumerate(layout.slots) if s.kind == "omit"), len(layout.slots))
    checked = set(layout.outputs)

    def bind(sample: Sample, inputs: Inputs, device: torch.device) -> Bound:
        args: list = []
        poison, written, reads = [], [], {}
        for i, slot in enumerate(layout.slots[:stop]):
            if slot.kind == "in":
                args.append(inputs[slot.key])
            elif slot.kind == "out":
                role = sig.output(slot.key)
                args.append(torch.empty(role.shape(sample), dtype=sample.torch_dtype, device=device))
                poison.append(i)
                written.append(i)
                reads[slot.key] = i
            elif slot.kind == "io":
                args.append(inputs[slot.key])
                written.append(i)
                reads[slot.out] = i
            elif slot.kind == "none":
                args.append(None)
            else:  # value, default
                args.append(slot.value)

        def read(call_args: list, returned: Any) -> Outputs:
            out = {key: call_args[pos] for key, pos in reads.items()}
            if layout.returns:
                values = returned if isinstance(returned, (tuple, list)) else (returned,)
                for key, value in zip(layout.returns, values):
                    if key:
                        out[key] = value
            found = {}
            for key, value in out.items():
                if key not in checked:
                    continue  # never compared, so never read: not even for determinism
                role = sig.output(key)
                found[key] = _rows(value, sample, per_row(sample)) if role.rows else value
            return found

        return Bound(args=args, poison=tuple(poison), written=tuple(written), read=read)

    return bind


def form_of(sig: Signature, layout: Layout, schema: Any, *, supports: Callable[[Sample], bool] = _everything,
            names: tuple[str, ...] = ()) -> Form:
    return Form(schema=schema_text(schema), bind=bind_of(sig, layout), names=names, supports=supports,
                fixed=layout.knobs, outputs=layout.outputs, layout=layout)


def forms_of(sig: Signature, schemas: tuple[str, ...], family: str) -> tuple[Form, ...]:
    """The family's own schemas as forms (what `pipeline contracts` shows and the tests sample)."""
    out = []
    for text in schemas:
        schema = torch._C.parse_schema("op" + text)
        out.append(form_of(sig, match(sig, schema, family), schema))
    return tuple(out)


# --------------------------------------------------------------------------
# Names (the words and argument names live in role_names)
