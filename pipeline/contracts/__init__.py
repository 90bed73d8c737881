"""Op contracts: what "correct" means for a family of ops, owned by the pipeline.

A kernel project's own smoke cases are written by whoever wrote the kernel, so
they cannot be what decides that it is correct. A contract is: the op schemas
the family accepts (an out-argument form such as
`rms_norm(Tensor! out, Tensor input, Tensor weight, float eps) -> ()` and a
functional form), a float64 reference, a tolerance per dtype, and an input
generator that is adversarial by construction (odd and large last dimensions,
many rows, strided/transposed/misaligned inputs, benchmark-sized inputs on every
device, random weights with negative entries, several eps, empty batches).

One module per op family (`activation`, `glu`, `rmsnorm`, `layernorm`,
`rotary`, `adaln`, `softmax`); `registry` holds them all and matches an op's
name and schema to a family. This module imports no torch: the workspace file
and the command line check family names against `FAMILIES` without it.

How an op gets its contract, first match wins:
1. `--contract OP=FAMILY` on the command line (smoke, publish, verify);
2. the workspace file: `[workspace.contracts.<kernel>]` with `OP = "FAMILY"`;
3. inferred: the op's name is one a family lists and its schema matches one of
   the family's forms (the smoke report says which contract it inferred).
An op that matches none is reported as not covered by a contract.
"""

from __future__ import annotations

import difflib

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
    "gelu_quick",
    "gelu_tanh",
    "gelu_tanh_and_mul",
    "layer_norm",
    "mul_and_silu",
    "relu",
    "rms_norm",
    "rotary",
    "silu",
    "silu_and_mul",
    "softmax",
)


def unknown_family_hint(family: str) -> str:
    close = difflib.get_close_matches(family, FAMILIES, n=1)
    return (f"did you mean {close[0]!r}? " if close else "") + f"families: {', '.join(FAMILIES)}"


def parse_bindings(values: list[str] | tuple[str, ...] | None) -> tuple[tuple[str, str], ...]:
    """`--contract OP=FAMILY` values -> ((op, family), ...), checked."""
    out: dict[str, str] = {}
    for value in values or ():
        op, sep, family = value.partition("=")
        op, family = op.strip(), family.strip()
        if not sep or not op or not family:
            raise SmokeError(f"--contract {value!r}: expected OP=FAMILY", code="usage",
                             hint="e.g. --contract rms_norm=rms_norm (families: " + ", ".join(FAMILIES) + ")")
        if family not in FAMILIES:
            raise SmokeError(f"--contract {value!r}: no contract family {family!r}", code="contract-unknown",
                             hint=unknown_family_hint(family))
        out[op] = family
    return tuple(out.items())
