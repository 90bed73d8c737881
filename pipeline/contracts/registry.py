"""Every contract, by family; which family and form an op is, by binding or inference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.contracts import activation, adaln, backward, glu, layernorm, rmsnorm, rotary, softmax
from pipeline.contracts.base import Contract, Form, _everything, matches, schema_text
from pipeline.contracts.roles import Mismatch, form_of, match, name_score

__all__ = ["CONTRACTS", "Match", "bound", "forms_matching", "infer", "schema_text"]

CONTRACTS: dict[str, Contract] = {
    c.family: c
    for module in (activation, glu, rmsnorm, layernorm, backward, rotary, adaln, softmax)
    for c in module.CONTRACTS
}


@dataclass(frozen=True)
class Match:
    contract: Contract
    forms: tuple[Form, ...]  # the forms the op is called as (usually one)
    why: str = ""  # why no form fits, when none does


def _signature_form(contract: Contract, schema: Any, op: str | None, binding: Any) -> tuple[Form | None, str]:
    sig = contract.signature
    if sig is None:
        return None, ""
    try:
        layout = match(sig, schema, contract.family, op=op, binding=binding)
    except Mismatch as exc:
        return None, str(exc)
    preset = sig.preset(op)
    return form_of(sig, layout, schema, supports=preset.supports if preset else _everything), ""


def forms_matching(contract: Contract, schema: Any, op_name: str | None = None, *, inferring: bool = False,
                   binding: Any = None) -> Match:
    """The forms of `contract` an op with `schema` can be called as: a hand-written
    form whose schema it has, else the family's roles laid out as its schema. When
    `inferring`, a hand-written form that lists names must list `op_name`."""
    found = []
    for form in contract.forms:
        if form.layout is not None:
            continue  # made from the roles: the op's own schema is matched below
        if inferring and form.names and op_name not in form.names:
            continue
        if matches(form.parsed, schema):
            found.append(form)
    if found:
        options = [k for k in ("args", "roles", "returns", "unchecked") if getattr(binding, k, ())]
        if options:
            return Match(contract, (), f"its schema is one of {contract.family}'s hand-written forms, which take no "
                                       f"{', '.join(options)} (only declines)")
        named = [f for f in found if op_name in contract.names_of(f)]
        return Match(contract, tuple(named or found)[:1])
    form, why = _signature_form(contract, schema, op_name, binding)
    return Match(contract, (form,) if form is not None else (), why)


def bound(family: str, schema: Any, op_name: str | None = None, binding: Any = None) -> Match:
    """The form of a bound family that fits the op (none: the binding cannot call it; `why` says why)."""
    return forms_matching(CONTRACTS[family], schema, op_name, binding=binding)


def _candidates(op_name: str, schema: Any) -> list[tuple[int, Match]]:
    """(how strongly the name says it, the match) for every family the op's name says:
    a hand-written form that lists the name exactly (strongest), or the family's
    roles when the name holds one of the family's names as whole words."""
    out = []
    for contract in CONTRACTS.values():
        exact = [f for f in contract.forms if f.layout is None and op_name in f.names]
        fitting = [f for f in exact if matches(f.parsed, schema)]
        if fitting:
            out.append((100, Match(contract, tuple(fitting[:1]))))
            continue
        score = name_score(op_name, contract.names)
        if score:
            found = forms_matching(contract, schema, op_name, inferring=True)
            out.append((score, found))
    return out


def infer(op_name: str, schema: Any) -> tuple[Match, ...]:
    """The families whose names the op's name says most strongly (whole words:
    `apply_rms_norm`, `rms_norm_fwd`), among those that fit its schema."""
    fitting = [(score, m) for score, m in _candidates(op_name, schema) if m.forms]
    if not fitting:
        return ()
    best = max(score for score, _ in fitting)
    return tuple(m for score, m in fitting if score == best)


def named(op_name: str, schema: Any) -> tuple[Match, ...]:
    """The families the op's name says, none fitting its schema (`why` says why), for the note
    of an op nothing covers."""
    found = _candidates(op_name, schema)
    if not found:
        return ()
    best = max(score for score, _ in found)
    return tuple(m for score, m in found if score == best)
