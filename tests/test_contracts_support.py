"""Shared by the contract tests (no tests here): real dispatcher ops, defined with
torch.library in a fresh namespace per call, written independently of the
contracts' references (so a contract and a correct implementation can
disagree), and a module-like object that smoke can load them from."""

from __future__ import annotations

import itertools
import math
import types

import torch
import torch.nn.functional as F

_LIBRARIES: list = []  # kept alive: a dropped Library unregisters its ops
_COUNTER = itertools.count()


def namespace(ops: dict[str, tuple[str, object]]) -> types.SimpleNamespace:
    """Register `ops` (name -> (schema without name, CPU implementation)) in a new
    namespace; returns an object with `.ops` = torch.ops.<namespace>, like a kernel module."""
    ns = f"_contract_test_{next(_COUNTER)}"
    lib = torch.library.Library(ns, "DEF")
    for name, (schema, fn) in ops.items():
        lib.define(name + schema)
        lib.impl(name, _returns_nothing(fn) if schema.endswith("-> ()") else fn, "CPU")
    _LIBRARIES.append(lib)
    return types.SimpleNamespace(ops=getattr(torch.ops, ns))


def _returns_nothing(fn):
    def op(*args):
        fn(*args)

    return op


# --- correct implementations, one per accepted schema ---------------------------

def rms(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def rms_norm_out(out, x, w, eps):
    out.copy_(rms(x, w, eps))


def fused_out(out, res_out, x, r, w, eps):
    s = (x.float() + r.float()).to(x.dtype)
    res_out.copy_(s)
    out.copy_(rms(s, w, eps))


def fused_inplace(x, r, w, eps):
    s = (x.float() + r.float()).to(x.dtype)
    r.copy_(s)
    x.copy_(rms(s, w, eps))


def fused_functional(x, r, w, eps):
    s = (x.float() + r.float()).to(x.dtype)
    return rms(s, w, eps), s


def layer_norm(x, w, b, eps):
    return F.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float() if b is not None else None,
                        eps).to(x.dtype)


def row_stats(x, eps, rms_only=False):
    """(mean, rstd) per row in float32, flat."""
    xf = x.float().reshape(-1, x.shape[-1]) if x.shape[-1] else x.float().reshape(0, 0)
    mean = torch.zeros(xf.shape[0]) if rms_only else xf.mean(-1)
    centred = xf if rms_only else xf - mean[:, None]
    return mean, torch.rsqrt(centred.pow(2).mean(-1) + eps)


def _empty():
    return torch.empty(0)


# --- the real projects' schemas, implemented in Python ------------------------------
# kernels-community rmsnorm: [y, rstd] and its backward

def apply_rms_norm(x, w, eps):
    return [rms(x, w, eps), row_stats(x, eps, rms_only=True)[1].reshape(x.shape[:-1])]


def _autograd(fn, x, w, b, dy):
    xs = x.detach().float().requires_grad_(True)
    ws = w.detach().float().requires_grad_(True)
    bs = b.detach().float().requires_grad_(True) if b is not None else None
    with torch.enable_grad():
        y = fn(xs, ws, bs)
        if y.numel():
            y.backward(dy.float())
    grads = [t.grad if t is not None and t.grad is not None else (torch.zeros_like(t) if t is not None else None)
             for t in (xs, ws, bs)]
    return [g.to(x.dtype) if g is not None else None for g in grads]


def _rms_f32(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def apply_rms_norm_backward(dy, x, w, y, rstd, eps, need_dx, need_dw):
    dx, dw, _ = _autograd(lambda a, b, c: _rms_f32(a, b, eps), x, w, None, dy)
    return [dx, dw]


# tinygrad-rms: weightless, 1/rms as an out-argument
def tinygrad_rms_norm(out, rms_inv, x, eps):
    rstd = row_stats(x, eps, rms_only=True)[1]
    rms_inv.copy_(rstd)
    out.copy_((x.float() * rstd.reshape(*x.shape[:-1], 1)).to(x.dtype))


def tinygrad_rms_norm_inplace(out, x, eps):
    tinygrad_rms_norm(out, torch.empty(x.numel() // max(x.shape[-1], 1)), x, eps)


# flash-attention's layer norm (kernels-community layer-norm)
def dropout_add_ln_fwd(x, gamma, beta, rowscale, colscale, x0_subset, z_subset, dropout_p, eps, rowscale_const,
                       z_numrows, gen, residual_in_fp32, is_rms_norm):
    assert dropout_p == 0.0 and rowscale is None and colscale is None and x0_subset is None
    if is_rms_norm:
        mean, rstd = row_stats(x, eps, rms_only=True)
        z = rms(x, gamma, eps) if beta is None else (rms(x, gamma, eps).float() + beta.float()).to(x.dtype)
    else:
        mean, rstd = row_stats(x, eps)
        z = layer_norm(x, gamma, beta, eps)
    return [z, _empty(), _empty(), mean, rstd]


def dropout_add_ln_bwd(dz, dx, x, x0, dmask, mu, rsigma, gamma, rowscale, colscale, x0_subset, z_subset, dropout_p,
                       rowscale_const, x0_numrows, has_residual, is_rms_norm):
    assert dx is None and dmask is None and not has_residual and not is_rms_norm
    # from the saved statistics, as the kernel does
    xf, dzf, g = x.float(), dz.float(), gamma.float()
    x_hat = (xf - mu[:, None]) * rsigma[:, None]
    wdy = dzf * g
    n = x.shape[-1]
    dx0 = rsigma[:, None] * (wdy - wdy.mean(-1, keepdim=True) - x_hat * (wdy * x_hat).mean(-1, keepdim=True))
    dgamma = (dzf * x_hat).sum(0)
    dbeta = dzf.sum(0)
    del n
    return [dx0.to(x.dtype), _empty(), dgamma.to(gamma.dtype), dbeta.to(gamma.dtype), _empty(), _empty()]


# mlx-rmsnorm: the output third, gradients as out-arguments
def launch_forward_kernel(x, w, out, eps):
    out.copy_(rms(x, w, eps))


def launch_backward_kernel(x, w, dy, grad_input, grad_weight, eps):
    dx, dw, _ = _autograd(lambda a, b, c: _rms_f32(a, b, eps), x, w, None, dy)
    grad_input.copy_(dx)
    grad_weight.copy_(dw)


def gelu_new(x):
    xf = x.float()
    return 0.5 * xf * (1.0 + torch.tanh(0.79788456 * (xf + 0.044715 * xf.pow(3))))


def gelu_fast(x):
    xf = x.float()
    return 0.5 * xf * (1.0 + torch.tanh(0.79788456 * xf * (1.0 + 0.044715 * xf * xf)))


def swigluoai_and_mul(out, x, alpha=1.702, limit=7.0):  # the dispatcher leaves defaults out
    gate, up = x.float()[..., 0::2].clamp(max=limit), x.float()[..., 1::2].clamp(-limit, limit)
    out.copy_(((up + 1) * gate * torch.sigmoid(alpha * gate)).to(x.dtype))


def _writes(fn):
    return lambda out, x: out.copy_(fn(x).to(x.dtype))


# name -> (schema as the project registers it, implementation, family it must get, binding or None (inferred))
REAL_PROJECT_OPS = {
    "apply_rms_norm": ("(Tensor hidden_states, Tensor weight, float variance_epsilon) -> Tensor[]", apply_rms_norm,
                       "rms_norm", None),
    "apply_rms_norm_backward": ("(Tensor grad_output, Tensor hidden_states, Tensor weight, Tensor output, Tensor rstd, "
                                "float variance_epsilon, bool input_requires_grad, bool weight_requires_grad) "
                                "-> Tensor[]", apply_rms_norm_backward, "rms_norm_backward", None),
    "tinygrad_rms_norm": ("(Tensor(a!) out, Tensor(b!) rms_inv, Tensor input, float epsilon) -> ()", tinygrad_rms_norm,
                          "rms_norm", None),
    "tinygrad_rms_norm_inplace": ("(Tensor(a!) out, Tensor input, float epsilon) -> ()", tinygrad_rms_norm_inplace,
                                  "rms_norm", None),
    "dropout_add_ln_fwd": ("(Tensor input, Tensor gamma, Tensor? beta, Tensor? rowscale, Tensor? colscale, "
                           "Tensor? x0_subset, Tensor? z_subset, float dropout_p, float epsilon, float rowscale_const, "
                           "int z_numrows, Generator? gen, bool residual_in_fp32, bool is_rms_norm) -> Tensor[]",
                           dropout_add_ln_fwd, "layer_norm", None),
    "dropout_add_ln_bwd": ("(Tensor dz, Tensor? dx, Tensor x, Tensor? x0, Tensor? dmask, Tensor mu, Tensor rsigma, "
                           "Tensor gamma, Tensor? rowscale, Tensor? colscale, Tensor? x0_subset, Tensor? z_subset, "
                           "float dropout_p, float rowscale_const, int x0_numrows, bool has_residual, "
                           "bool is_rms_norm) -> Tensor[]", dropout_add_ln_bwd, "layer_norm_backward", None),
    "launch_forward_kernel": ("(Tensor input, Tensor weight, Tensor(a!) output, float epsilon) -> ()",
                              launch_forward_kernel, "rms_norm", "rms_norm"),
    "launch_backward_kernel": ("(Tensor input, Tensor weight, Tensor grad_output, Tensor(a!) grad_input, "
                               "Tensor(a!)? grad_weight, float epsilon) -> ()", launch_backward_kernel,
                               "rms_norm_backward", "rms_norm_backward"),
    # activation's ops, and megablocks' with the input marked writable
    "gelu_new": ("(Tensor(a!) out, Tensor input) -> ()", _writes(gelu_new), "gelu_new", None),
    "gelu_fast": ("(Tensor(a!) out, Tensor(b!) input) -> ()", _writes(gelu_fast), "gelu_fast", None),
    "gelu_tanh_and_mul": ("(Tensor(a!) out, Tensor(b!) input) -> ()",
                          lambda out, x: out.copy_(glu(x, True, lambda g: F.gelu(g, approximate="tanh"))),
                          "gelu_tanh_and_mul", None),
    "swigluoai_and_mul": ("(Tensor(a!) out, Tensor input, float alpha=1.702, float limit=7.0) -> ()",
                          swigluoai_and_mul, "swigluoai_and_mul", None),
    # vLLM's rms_norm: an optional weight
    "rms_norm": ("(Tensor(a!) result, Tensor input, Tensor? weight, float epsilon) -> ()",
                 lambda out, x, w, eps: out.copy_(rms(x, w, eps)), "rms_norm", None),
}


def real_project_ops() -> types.SimpleNamespace:
    return namespace({name: (schema, fn) for name, (schema, fn, _, _) in REAL_PROJECT_OPS.items()})


def glu(x, gate_first: bool, act):
    d = x.shape[-1] // 2
    a, b = x[..., :d].float(), x[..., d:].float()
    gate, value = (a, b) if gate_first else (b, a)
    return (act(gate) * value).to(x.dtype)


def geglu_flags(out, x, approximate_tanh, gate_first):
    out.copy_(glu(x, gate_first, lambda g: F.gelu(g, approximate="tanh" if approximate_tanh else "none")))


def rope_ours(out, x, cos, sin, interleaved, inner, mid):
    C, D = x.shape[-1], cos.shape[-1]
    rows = x.numel() // C if C else 0
    R = cos.numel() // D
    t = torch.arange(rows)
    trow = ((t // (inner * mid)) * inner + t % inner) % R
    c = cos.float().reshape(R, D)[trow].repeat(1, C // D)
    s = sin.float().reshape(R, D)[trow].repeat(1, C // D)
    xf = x.float().reshape(rows, C // D, D)
    if interleaved:
        rot = torch.stack([-xf[..., 1::2], xf[..., 0::2]], dim=-1).reshape(rows, C)
    else:
        rot = torch.cat([-xf[..., D // 2:], xf[..., : D // 2]], dim=-1).reshape(rows, C)
    out.copy_((xf.reshape(rows, C) * c + rot * s).reshape(x.shape).to(x.dtype))


def rope_inplace(x, cos, sin, interleaved, inner, mid):
    rope_ours(x, x.clone(), cos, sin, interleaved, inner, mid)


def apply_rotary(x1, x2, cos, sin, out1, out2, conj):
    s = -sin if conj else sin
    a, b = x1.float(), x2.float()
    o1, o2 = a * cos.float() - b * s.float(), a * s.float() + b * cos.float()
    out1.copy_(o1)
    out2.copy_(o2)


def adaln_ours(out, x, scale, shift, eps, is_rms, seq):
    D = x.shape[-1]
    rows = x.numel() // D if D else 0
    xf = x.float().reshape(rows, D)
    if is_rms:
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    else:
        y = F.layer_norm(xf, (D,), eps=eps)
    M = scale.numel() // D
    r = torch.arange(rows)
    m = r if M == rows else (r // seq) % M
    out.copy_((y * (1 + scale.float().reshape(M, D)[m]) + shift.float().reshape(M, D)[m]).reshape(x.shape).to(x.dtype))


def adaln_functional(x, scale, shift, eps):
    y = F.layer_norm(x.float(), (x.shape[-1],), eps=eps)
    return (y * (1 + scale.float()) + shift.float()).to(x.dtype)


def gelu_quick(x):
    return x * torch.sigmoid(1.702 * x)


ACTIVATIONS = {"relu": F.relu, "silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"),
               "gelu_quick": gelu_quick}


def _act_out(fn):
    return lambda out, x: out.copy_(fn(x.float()).to(x.dtype))


def correct_ops() -> dict[str, tuple[str, object]]:
    """One correct op per accepted schema, named so that inference finds its family."""
    ops = {
        "rms_norm": ("(Tensor(a!) out, Tensor input, Tensor weight, float eps) -> ()", rms_norm_out),
        "rmsnorm": ("(Tensor x, Tensor weight, float eps) -> Tensor", rms),
        "fused_add_rms_norm": ("(Tensor(a!) out, Tensor(b!) residual_out, Tensor input, Tensor residual, "
                               "Tensor weight, float eps) -> ()", fused_out),
        "add_rms_norm": ("(Tensor(a!) input, Tensor(b!) residual, Tensor weight, float eps) -> ()", fused_inplace),
        "residual_rms_norm": ("(Tensor input, Tensor residual, Tensor weight, float eps) -> (Tensor, Tensor)",
                              fused_functional),
        "layer_norm": ("(Tensor(a!) out, Tensor input, Tensor weight, Tensor bias, float eps) -> ()",
                       lambda out, x, w, b, eps: out.copy_(layer_norm(x, w, b, eps))),
        "layernorm": ("(Tensor input, Tensor weight, Tensor bias, float eps) -> Tensor", layer_norm),
        "geglu": ("(Tensor(a!) out, Tensor input, bool approximate_tanh, bool gate_first) -> ()", geglu_flags),
        "silu_and_mul": ("(Tensor(a!) out, Tensor input) -> ()",
                         lambda out, x: out.copy_(glu(x, True, F.silu))),
        "mul_and_silu": ("(Tensor(a!) out, Tensor input) -> ()",
                         lambda out, x: out.copy_(glu(x, False, F.silu))),
        "gelu_and_mul": ("(Tensor input) -> Tensor", lambda x: glu(x, True, F.gelu)),
        "gelu_tanh_and_mul": ("(Tensor(a!) out, Tensor input) -> ()",
                              lambda out, x: out.copy_(glu(x, True, lambda g: F.gelu(g, approximate="tanh")))),
        "fatrelu_and_mul": ("(Tensor(a!) out, Tensor input, float threshold) -> ()",
                            lambda out, x, t: out.copy_(glu(x, True, lambda g: torch.where(g > t, g, 0.0)))),
        "rope": ("(Tensor(a!) out, Tensor x, Tensor cos, Tensor sin, bool interleaved, int inner, int mid) -> ()",
                 rope_ours),
        "rope_inplace": ("(Tensor(a!) x, Tensor cos, Tensor sin, bool interleaved, int inner, int mid) -> ()",
                         rope_inplace),
        "apply_rotary": ("(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor(a!) out1, Tensor(b!) out2, "
                         "bool conj) -> ()", apply_rotary),
        "adaln": ("(Tensor(a!) out, Tensor x, Tensor scale, Tensor shift, float eps, bool rms, int seq) -> ()",
                  adaln_ours),
        "ada_layer_norm": ("(Tensor x, Tensor scale, Tensor shift, float eps) -> Tensor", adaln_functional),
        "softmax": ("(Tensor(a!) out, Tensor input) -> ()",
                    lambda out, x: out.copy_(torch.softmax(x.float(), -1).to(x.dtype))),
        "softmax_lastdim": ("(Tensor input, int dim) -> Tensor",
                            lambda x, dim: torch.softmax(x.float(), dim).to(x.dtype)),
    }
    for family, fn in ACTIVATIONS.items():
        ops[family] = ("(Tensor(a!) out, Tensor input) -> ()", _act_out(fn))
    ops["swish"] = ("(Tensor input) -> Tensor", lambda x: F.silu(x.float()).to(x.dtype))
    ops["gelu_new"] = ("(Tensor(a!) x) -> ()", lambda x: x.copy_(F.gelu(x.float(), approximate="tanh").to(x.dtype)))
    return ops


# --- rms_norm with a planted flaw, each one what an agent's kernel might do ---------

def _ignore_weight(out, x, w, eps):
    out.copy_(rms(x, torch.ones_like(w), eps))


def _nan_only(out, x, w, eps):
    # correct only when the output arrives NaN-filled: it recognises the harness
    if out.numel() and math.isnan(float(out.reshape(-1)[0])):
        out.copy_(rms(x, w, eps))


def _stale_cache():
    cache: dict = {}

    def op(out, x, w, eps):
        key = (x.data_ptr(), tuple(x.shape))
        if key in cache:
            out.copy_(cache[key])
            return
        out.copy_(rms(x, w, eps))
        cache[key] = out.clone()

    return op


def _mutates_input(out, x, w, eps):
    out.copy_(rms(x, w, eps))
    x.mul_(0.5)  # e.g. normalising in place to save a buffer


def _shortcut_large(out, x, w, eps):
    if x.numel() >= 4 * 1024 * 1024:
        out.copy_(x)  # "too big to matter": copied through unnormalised
    else:
        out.copy_(rms(x, w, eps))


def _misses_last(out, x, w, eps):
    y = rms(x, w, eps)
    out.reshape(-1)[:-1].copy_(y.reshape(-1)[:-1]) if out.is_contiguous() else out.copy_(y)


def _not_deterministic(out, x, w, eps):
    y = rms(x, w, eps).float()
    out.copy_((y * (1 + 1e-6 * torch.randn(y.shape))).to(out.dtype))


FLAWED_RMS_NORM = {
    "ignore-weight": _ignore_weight,
    "nan-only": _nan_only,
    "stale-address": _stale_cache,  # a factory: the cache is per op
    "mutates-input": _mutates_input,
    "shortcut-large": _shortcut_large,
    "misses-last-element": _misses_last,
    "not-deterministic": _not_deterministic,
}

RMS_NORM_SCHEMA = "(Tensor(a!) out, Tensor input, Tensor weight, float eps) -> ()"


def flawed_rms_norm(flaw: str):
    fn = FLAWED_RMS_NORM[flaw]
    return namespace({"rms_norm": (RMS_NORM_SCHEMA, fn() if flaw == "stale-address" else fn)})
