"""Every contract, by family; which family and form an op is, by binding or inference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.contracts import activation, adaln, glu, layernorm, rmsnorm, rotary, softmax
from pipeline.contracts.base import Contract, Form, matches, schema_text

__all__ = ["CONTRACTS", "Match", "bound", "forms_matching", "infer", "schema_text"]

CONTRACTS: dict[str, Contract] = {
    c.family: c
    for module in (activation, glu, rmsnorm, layernorm, rotary, adaln, softmax)
    for c in module.CONTRACTS
}


@dataclass(frozen=True)
class Match:
    contract: Contract
    forms: tuple[Form, ...]  # the family's forms this schema matches (usually one)


def forms_matching(contract: Contract, schema: Any, op_name: str | None = None) -> tuple[Form, ...]:
    """The forms of `contract` an op with `schema` can be called as. With
    `op_name`, only forms that list the name (inference); without, any (a binding)."""
    found = []
    for form in contract.forms:
        if op_name is not None and op_name not in contract.names_of(form):
            continue
        if matches(form.parsed, schema):
            found.append(form)
    return tuple(found)


def bound(family: str, schema: Any) -> Match:
    """The forms of a bound family that fit the op (none: the binding cannot call it)."""
    contract = CONTRACTS[family]
    return Match(contract, forms_matching(contract, schema))


def infer(op_name: str, schema: Any) -> tuple[Match, ...]:
    """Every family whose names include `op_name` and one of whose forms fits the schema."""
    out = []
    for contract in CONTRACTS.values():
        found = forms_matching(contract, schema, op_name)
        if found:
            out.append(Match(contract, found))
    return tuple(out)
