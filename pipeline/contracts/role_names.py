"""The names real projects give ops and their arguments: what inference and role
matching read (`roles.py`). Plain data and two small functions; no torch."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Words that change what an op computes: an op whose name adds one of them to a
# family's name is not that family (rms_norm_quant, gelu_and_mul, f32_bf16w_rmsnorm).
SEMANTIC_WORDS = frozenset({
    "add", "and", "mul", "sum", "residual", "dropout", "parallel", "bwd", "backward", "grad", "quant", "quantize",
    "dequant", "scaled", "scale", "dynamic", "static", "gated", "gate", "tanh", "quick", "fast", "new", "approx",
    "erf", "varlen", "partial", "split", "mask", "masked", "softcap", "clamp", "oai", "lse", "gemm", "gemv",
    "matmul", "mm", "bmm", "moe", "topk", "expert", "experts", "attention", "attn", "conv",
})
_DTYPE_WORD = re.compile(r"^(b?f|fp|u?int|e\d?m\d|mxfp|nvfp|mx|nv)\d+")


def words(name: str) -> list[str]:
    return [w for w in re.split(r"[_\W]+", name.lower()) if w]


def name_score(op: str, names: tuple[str, ...]) -> int:
    """How strongly `op`'s name says one of `names`: the number of words of the
    longest name found whole in it (0: none), the other words of the op's name
    being decoration (apply, fwd, forward, impl, a project's name) and never
    one that changes what is computed."""
    have = words(op)
    best = 0
    for name in names:
        want = words(name)
        for start in range(len(have) - len(want) + 1):
            if have[start:start + len(want)] != want:
                continue
            rest = have[:start] + have[start + len(want):]
            if any(w in SEMANTIC_WORDS or _DTYPE_WORD.match(w) for w in rest):
                continue
            best = max(best, len(want))
    return best


# Names real projects give their arguments, shared by the families

X = ("x", "input", "inp", "inputs", "hidden_states", "hidden", "self", "src")
Y = ("out", "output", "result", "y", "o", "dst")
WEIGHT = ("weight", "w", "gamma", "norm_weight", "ln_weight", "weight_bf16")
BIAS = ("bias", "b", "beta", "norm_bias", "ln_bias")
EPS = ("eps", "epsilon", "variance_epsilon", "variance_eps", "norm_eps", "layer_norm_eps", "rms_norm_eps")
RESIDUAL = ("residual", "residual_in", "skip")
RESIDUAL_OUT = ("residual_out", "new_residual", "residual_output", "res_out")
RSTD = ("rstd", "rms_inv", "inv_rms", "rsigma", "invvar", "inv_var", "rrms", "inv_std")
MEAN = ("mean", "mu")
DY = ("dy", "dz", "grad_output", "grad_out", "dout", "grad", "grad_y", "d_out", "do")
DX = ("dx", "grad_input", "grad_x", "dx0", "d_x", "dinput", "grad_in")
DWEIGHT = ("dweight", "dw", "grad_weight", "dgamma", "d_weight", "grad_w")
DBIAS = ("dbias", "db", "grad_bias", "dbeta", "d_bias", "grad_b")
FORWARD_OUTPUT = ("output", "out", "y", "fwd_output", "z")


@dataclass(frozen=True)
class Fixed:
    """An argument that selects the family's semantics among a fused kernel's
    options, matched by name only: `dropout_p` = 0.0 (no dropout), `is_rms_norm`."""

    names: tuple[str, ...]
    value: Any


# The options of fused norm kernels (flash-attention's layer norm, apex) set to
# what the plain family computes: no dropout, no row scale, no subset, no
# second input, residual not kept in float32, weight used as given.
NORM_OPTIONS = (
    Fixed(("dropout_p", "p_dropout", "dropout_prob"), 0.0),
    Fixed(("rowscale_const",), 1.0),
    Fixed(("z_numrows", "x0_numrows"), 0),
    Fixed(("residual_in_fp32",), False),
    Fixed(("zero_centered_weight",), False),
    Fixed(("return_dropout_mask",), False),
    Fixed(("has_residual", "has_x1", "prenorm", "recompute_output"), False),
    Fixed(("input_requires_grad", "weight_requires_grad", "bias_requires_grad", "need_input_grad",
           "need_weight_grad", "compute_dx", "compute_dweight"), True),
)
