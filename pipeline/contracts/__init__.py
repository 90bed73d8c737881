"""Op contracts: what "correct" means for a family of ops, owned by the pipeline.

A kernel project's own smoke cases are written by whoever wrote the kernel, so
they cannot be what decides that it is correct. A contract is: the roles of the
family's arguments and outputs (input, weight, eps, residual, out, rstd, ...),
a float64 reference, a tolerance per dtype, and an input generator that is
adversarial by construction (odd and large last dimensions, many rows,
strided/transposed/misaligned inputs, huge inputs on every device, random
weights with negative entries, several eps, empty batches). Every sample has a
category (`CATEGORIES`), so a failure says what kind of input broke the kernel.

An op is called as its own schema says: the roles are matched to its arguments
by name where a name says which role it is, else by type and position; `Tensor!`
arguments are out-variants or in-place; a returned `Tensor`, tuple or
`Tensor[]` gives the output first and then the extra outputs (`rstd`, `mean`)
the family checks; anything the op returns that no role reads is named as
unchecked. Arguments that no role fills take the value the family fixes (no
dropout: `dropout_p = 0`), the schema's default, None when optional, or a value
the binding gives.

One module per op family (`activation`, `glu`, `rmsnorm`, `layernorm`,
`rotary`, `adaln`, `softmax`, `backward`); `registry` holds them all and matches
an op's name and schema to a family; `roles` does the matching. This module
imports no torch: the workspace file and the command line build `Binding`s
without it.

How an op gets its contract, first match wins:
1. `--contract OP=FAMILY[:KEY=VALUE,...]` on the command line (smoke, publish, verify);
2. the workspace file: `[workspace.contracts.<kernel>]` with `OP = "FAMILY"` or
   `OP = { family = "FAMILY", declines = [...], args = {...}, ... }`;
3. inferred: the op's name is one a family uses (as whole words: `apply_rms_norm`,
   `tinygrad_rms_norm`, `rms_norm_fwd`) and its schema fits the family's roles.
An op that matches none is reported as not covered by a contract.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from pipeline.errors import SmokeError

# Every family a binding may name; `registry.CONTRACTS` has one contract per name
# (a test keeps the two equal).
FAMILIES: tuple[str, ...] = (
    "adaln",
    "fatrelu_and_mul",
    "fused_add_rms_norm",
    "geglu",
    "gelu",
    "gelu_and_mul",
    "gelu_fast",
    "gelu_new",
    "gelu_quick",
    "gelu_tanh",
    "gelu_tanh_and_mul",
    "layer_norm",
    "layer_norm_backward",
    "mul_and_silu",
    "relu",
    "rms_norm",
    "rms_norm_backward",
    "rotary",
    "silu",
    "silu_and_mul",
    "softmax",
    "swigluoai_and_mul",
)

# What kind of input a contract case is (`Sample.category`). A dtype is not a
# category: every category is drawn in every dtype. A binding may decline a
# category (its cases are then not run, and the report and the card say so).
CATEGORIES: tuple[str, ...] = ("contiguous", "empty", "misaligned", "row-strided", "transposed", "huge")

# how a binding was made, as reports and the card say it
CLI, WORKSPACE, INFERRED = "--contract", "workspace", "inferred"

# The options a binding may carry besides its family (`Binding`'s fields).
OPTIONS = ("declines", "unchecked", "returns", "args", "roles")

Value = Any  # an argument's value in a binding: float, int, bool or None


@dataclass(frozen=True)
class Binding:
    """An op bound to a family by the user, and how to call it. Plain data only."""

    family: str
    how: str = CLI  # CLI or WORKSPACE
    declines: tuple[str, ...] = ()  # categories whose cases are not run (CATEGORIES)
    args: tuple[tuple[str, Value], ...] = ()  # schema argument -> value, for arguments no role fills
    roles: tuple[tuple[str, str], ...] = ()  # role -> schema argument, where name and position mislead
    returns: tuple[str, ...] = ()  # the role of each returned value, in order ("" = not checked)
    unchecked: tuple[str, ...] = ()  # output roles the op produces that are not checked

    def shown(self) -> str:
        """The binding as --contract would spell it."""
        options = []
        if self.declines:
            options.append("declines=" + "+".join(self.declines))
        if self.unchecked:
            options.append("unchecked=" + "+".join(self.unchecked))
        if self.returns:
            options.append("returns=" + "+".join(r or "-" for r in self.returns))
        options += [f"{k}={_spell(v)}" for k, v in self.args]
        options += [f"{k}={v}" for k, v in self.roles]
        return self.family + (":" + ",".join(options) if options else "")


def _spell(value: Value) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def unknown_family_hint(family: str) -> str:
    close = difflib.get_close_matches(family, FAMILIES, n=1)
    return (f"did you mean {close[0]!r}? " if close else "") + f"families: {', '.join(FAMILIES)}"


def unknown_category_hint(category: str) -> str:
    close = difflib.get_close_matches(category, CATEGORIES, n=1)
    return (f"did you mean {close[0]!r}? " if close else "") + f"categories: {', '.join(CATEGORIES)}"


def check_categories(values: tuple[str, ...], error: type, where: str, **location: Any) -> tuple[str, ...]:
    for value in values:
        if value not in CATEGORIES:
            raise error(f"{where}: no input category {value!r}", code="contract-category-unknown",
                        hint=unknown_category_hint(value), **location)
    return tuple(dict.fromkeys(values))


_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def parse_value(text: str) -> Value | str:
    """A command-line value: true/false, none, an int, a float; anything else stays a string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if re.fullmatch(r"[+-]?\d+", low):
        return int(low)
    if _NUMBER.fullmatch(low) or low in ("inf", "-inf", "+inf"):
        return float(low)
    return text.strip()


_USAGE = ("e.g. --contract rms_norm=rms_norm, --contract apply_rms_norm=rms_norm:declines=empty+misaligned,"
          "unchecked=rstd or --contract dropout_add_ln_fwd=layer_norm:z_numrows=0")


def parse_binding(value: str) -> tuple[str, Binding]:
    """One `--contract OP=FAMILY[:KEY=VALUE,...]` value. KEY is `declines`, `unchecked`
    or `returns` (lists joined with `+`; `-` for a returned value that is not checked),
    an argument of the op's schema (VALUE: a number, true, false or none), or one of
    the family's roles (VALUE: the argument that plays it)."""
    op, sep, rest = value.partition("=")
    op = op.strip()
    family, _, options = rest.partition(":")
    family = family.strip()
    if not sep or not op or not family:
        raise SmokeError(f"--contract {value!r}: expected OP=FAMILY[:KEY=VALUE,...]", code="usage",
                         hint=_USAGE + " (families: " + ", ".join(FAMILIES) + ")")
    if family not in FAMILIES:
        raise SmokeError(f"--contract {value!r}: no contract family {family!r}", code="contract-unknown",
                         hint=unknown_family_hint(family))
    lists: dict[str, tuple[str, ...]] = {}
    args: dict[str, Value] = {}
    roles: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in options.split(","))):
        key, eq, text = item.partition("=")
        key, text = key.strip(), text.strip()
        if not eq or not key:
            raise SmokeError(f"--contract {value!r}: {item!r} is not KEY=VALUE", code="usage", hint=_USAGE)
        if key in ("declines", "unchecked", "returns"):
            items = tuple(t.strip() for t in text.split("+")) if text else ()
            lists[key] = tuple("" if t == "-" else t for t in items)
            continue
        parsed = parse_value(text)
        if isinstance(parsed, str):
            roles[key] = parsed
        else:
            args[key] = parsed
    declines = check_categories(lists.get("declines", ()), SmokeError, f"--contract {value!r}")
    return op, Binding(family, CLI, declines=declines, args=tuple(args.items()), roles=tuple(roles.items()),
                       returns=lists.get("returns", ()), unchecked=lists.get("unchecked", ()))


def parse_bindings(values: list[str] | tuple[str, ...] | None) -> tuple[tuple[str, Binding], ...]:
    """`--contract` values -> ((op, Binding), ...), checked; a later one for the same op wins."""
    out: dict[str, Binding] = {}
    for value in values or ():
        op, binding = parse_binding(value)
        out[op] = binding
    return tuple(out.items())
