"""kernels-community's own kernels through their contracts: the CPU variants of
rmsnorm, activation and rotary, built here from a checkout (PIPELINE_KC, default
/work/kc; skipped without one) copied and built once for the run (tests/shared_builds.py),
loaded as smoke loads them, and every op bound (inferred, or by --contract) and run.
Nothing of kernels-community is in this tree. PIPELINE_KC_BUILT=DIR reuses
builds made before (DIR/<project>/build), to iterate without rebuilding.

What the contracts find in rmsnorm is a real defect of that checkout:
`apply_rms_norm`'s CPU path returns `torch::empty({hidden_states.size(0)})` as
rstd (torch_binding.cpp), and the AVX-512 backward sums dweight over rows in
bf16/fp16 (`std::vector<scalar_t> all_acc`, rmsnorm_avx512.cpp)."""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import pytest
import torch

from pipeline.contracts import Binding, parse_bindings
from pipeline.smoke.harness import RunState, bookkeeping, run_seed
from pipeline.smoke.plan import contract_cases, plan_ops
from pipeline.smoke.run import load_variant
from shared_builds import shared_build

KC = Path(os.environ.get("PIPELINE_KC", "/work/kc"))
BUILT = os.environ.get("PIPELINE_KC_BUILT")
CPU = torch.device("cpu")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (KC / "rmsnorm" / "build.toml").is_file(),
                       reason=f"no kernels-community checkout at {KC} (set PIPELINE_KC)"),
]

@functools.lru_cache(maxsize=None)
def kc_build(name: str) -> Path:
    if BUILT and (Path(BUILT) / name / "build").is_dir():
        return Path(BUILT) / name / "build"
    return shared_build(KC / name)  # a copy: the checkout is read-only


def _ops(name: str):
    return load_variant(kc_build(name)).module.ops


def _run(ops, plan, only=lambda case: True, seed: int = 3):
    state, out = RunState(), []
    with bookkeeping(state):
        for case in contract_cases(plan, "cpu"):
            if only(case):
                out.append((case, run_seed(getattr(ops, case.op), case, CPU, seed, state)[0]))
    return out


def _vector_width(case) -> bool:
    # the AVX kernels refuse (TORCH_CHECK) rows that are no multiple of the vector width
    return case.shape is not None and case.shape[-1] % 16 == 0


def test_rmsnorm_ops_are_inferred_and_bindable():
    ops = _ops("rmsnorm")
    plans = {p.op: p for p in plan_ops(ops, {})}
    assert (plans["apply_rms_norm"].family, plans["apply_rms_norm"].how) == ("rms_norm", "inferred")
    assert plans["apply_rms_norm"].checked == ("y", "rstd")
    assert (plans["apply_rms_norm_backward"].family, plans["apply_rms_norm_backward"].how) == \
        ("rms_norm_backward", "inferred")
    # the binding the issue measured failing
    bound, = [p for p in plan_ops(ops, dict(parse_bindings(["apply_rms_norm=rms_norm"]))) if p.op == "apply_rms_norm"]
    assert bound.code == "" and bound.how == "--contract" and bound.forms


def test_rmsnorm_forward_is_right_but_its_rstd_is_uninitialised():
    ops = _ops("rmsnorm")
    plan, = [p for p in plan_ops(ops, {}) if p.op == "apply_rms_norm"]
    small = [(c, r) for c, r in _run(ops, plan, lambda c: _vector_width(c) and math.prod(c.shape) <= 1 << 20)]
    assert small
    failed = [(c, r) for c, r in small if not r.passed]
    assert failed and all("output rstd" in r.message for _, r in failed), [r.message for _, r in failed][:3]
    assert all("output y" not in r.message for _, r in small)
    # bound with rstd unchecked: the output itself passes every category it is not refused in
    plan, = [p for p in plan_ops(ops, {"apply_rms_norm": Binding("rms_norm", "workspace", unchecked=("rstd",)),
                                       "apply_rms_norm_backward": Binding("rms_norm_backward", "workspace")})
             if p.op == "apply_rms_norm"]
    results = _run(ops, plan, _vector_width)
    assert {c.category for c, _ in results} >= {"contiguous", "huge", "misaligned", "empty"}
    assert all(r.passed for _, r in results), [f"{c.name}: {r.message}" for c, r in results if not r.passed][:3]
    # rows of other widths are refused loudly, which fails those cases (an op that raises fails)
    odd = _run(ops, plan, lambda c: c.category == "contiguous" and not _vector_width(c) and c.dtype == "float32")
    assert odd and all(not r.passed and "hidden_size % VEC_ELEM_NUM" in r.message for _, r in odd)


def test_rmsnorm_backward_sums_dweight_in_low_precision():
    ops = _ops("rmsnorm")
    plan, = [p for p in plan_ops(ops, {}) if p.op == "apply_rms_norm_backward"]
    results = _run(ops, plan, _vector_width)
    failed = [(c, r) for c, r in results if not r.passed]
    assert any(c.category == "huge" and c.dtype == "bfloat16" for c, _ in failed)
    assert all("output dweight" in r.message and c.dtype != "float32" for c, r in failed), \
        [f"{c.name}: {r.message}" for c, r in failed][:3]
    assert all(r.passed for c, r in results if c.dtype == "float32")


ACTIVATION = {"silu_and_mul": "silu_and_mul", "mul_and_silu": "mul_and_silu", "gelu_and_mul": "gelu_and_mul",
              "gelu_tanh_and_mul": "gelu_tanh_and_mul", "fatrelu_and_mul": "fatrelu_and_mul",
              "gelu_new": "gelu_new", "gelu_fast": "gelu_fast", "gelu_quick": "gelu_quick",
              "gelu_tanh": "gelu_tanh", "silu": "silu", "gelu": "gelu"}


def test_every_activation_op_binds_and_the_cpu_one_passes_every_category():
    ops = _ops("activation")
    plans = {p.op: p for p in plan_ops(ops, {})}
    assert {op: (p.family, p.how) for op, p in plans.items()} == {op: (f, "inferred") for op, f in ACTIVATION.items()}
    results = _run(ops, plans["silu_and_mul"])  # the only op the CPU build implements
    assert {c.category for c, _ in results} == {"contiguous", "empty", "misaligned", "row-strided", "transposed", "huge"}
    assert all(r.passed for _, r in results), [f"{c.name}: {r.message}" for c, r in results if not r.passed][:3]


def test_rotary_passes_every_category():
    ops = _ops("rotary")
    plan, = plan_ops(ops, {})
    assert (plan.op, plan.family, plan.how) == ("apply_rotary", "rotary", "inferred")
    results = _run(ops, plan)
    assert {c.category for c, _ in results} == {"contiguous", "empty", "misaligned", "row-strided", "transposed", "huge"}
    assert all(r.passed for _, r in results), [f"{c.name}: {r.message}" for c, r in results if not r.passed][:3]
