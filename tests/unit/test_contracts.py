"""pipeline.contracts: schemas match the forms real projects register, the
generators are adversarial by construction, and every form's correct
implementation passes while planted flaws fail (real dispatcher ops from
torch.library: no build needed)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

import test_contracts_support as impls
from pipeline import contracts
from pipeline.contracts import base, inputs, registry
from pipeline.errors import SmokeError
from pipeline.smoke.harness import RunState, bookkeeping, run_seed
from pipeline.smoke.plan import contract_cases, plan_ops
from pipeline.smoke.run import execute
from pipeline.smoke.coverage import plan_warnings
from pipeline.workspace_file import load_workspace

REPO = Path(__file__).resolve().parents[2]
CPU = torch.device("cpu")


def schema(text: str):
    return torch._C.parse_schema(text)


# --- names and bindings ---------------------------------------------------------------

def test_every_family_name_has_one_contract():
    assert set(contracts.FAMILIES) == set(registry.CONTRACTS)
    assert list(contracts.FAMILIES) == sorted(contracts.FAMILIES)


def test_parse_bindings():
    assert contracts.parse_bindings(["rms_norm=rms_norm", " relu = relu "]) == (("rms_norm", "rms_norm"), ("relu", "relu"))
    with pytest.raises(SmokeError) as exc:
        contracts.parse_bindings(["rms_norm"])
    assert exc.value.code == "usage" and exc.value.exit_code == 2
    with pytest.raises(SmokeError) as exc:
        contracts.parse_bindings(["x=rmsnorm"])
    assert exc.value.code == "contract-unknown" and "did you mean 'rms_norm'" in exc.value.hint


# --- schemas: the forms real projects use --------------------------------------------

def _our_schemas() -> dict[str, str]:
    found = {}
    for cpp in REPO.glob("kernels-src/*/torch-ext/torch_binding.cpp"):
        text = re.sub(r'"\s*\n\s*"', "", cpp.read_text())  # join C++ string literals split over lines
        for m in re.finditer(r'ops\.def\(\s*"([^"]+)"', text):
            found[m.group(1).split("(")[0]] = m.group(1)
    return found


def test_our_kernels_ops_infer_the_contracts_the_workspace_binds():
    bound = {op: family for ops in load_workspace(REPO).contracts.values() for op, family in ops}
    schemas = _our_schemas()
    assert set(schemas) == set(bound), "every op of our four kernels is bound in build.toml"
    for op, text in schemas.items():
        found = registry.infer(op, schema(text))
        assert [m.contract.family for m in found] == [bound[op]], (op, text)
        assert registry.bound(bound[op], schema(text)).forms


KERNELS_COMMUNITY = {
    # kernels-community/relu and activation, vLLM's norms, flash-attention's rotary and layer norm
    "relu(Tensor! out, Tensor input) -> ()": "relu",
    "silu_and_mul(Tensor! out, Tensor input) -> ()": "silu_and_mul",
    "mul_and_silu(Tensor! out, Tensor input) -> ()": "mul_and_silu",
    "gelu_and_mul(Tensor! out, Tensor input) -> ()": "gelu_and_mul",
    "gelu_tanh_and_mul(Tensor! out, Tensor input) -> ()": "gelu_tanh_and_mul",
    "fatrelu_and_mul(Tensor! out, Tensor input, float threshold) -> ()": "fatrelu_and_mul",
    "gelu_new(Tensor! out, Tensor input) -> ()": "gelu_tanh",
    "gelu_fast(Tensor! out, Tensor input) -> ()": "gelu_tanh",
    "gelu_quick(Tensor! out, Tensor input) -> ()": "gelu_quick",
    "gelu(Tensor! out, Tensor input) -> ()": "gelu",
    "silu(Tensor! out, Tensor input) -> ()": "silu",
    "rms_norm(Tensor! result, Tensor input, Tensor? weight, float epsilon) -> ()": "rms_norm",
    "rms_norm(Tensor x, Tensor weight, float eps) -> Tensor": "rms_norm",
    "fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon) -> ()": "fused_add_rms_norm",
    "apply_rotary(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor! out1, Tensor! out2, bool conj) -> ()": "rotary",
    ("dropout_add_ln_fwd(Tensor input, Tensor gamma, Tensor? beta, Tensor? rowscale, Tensor? colscale, "
     "Tensor? x0_subset, Tensor? z_subset, float dropout_p, float epsilon, float rowscale_const, int z_numrows, "
     "Generator? gen, bool residual_in_fp32, bool is_rms_norm) -> Tensor[]"): "layer_norm",
}


@pytest.mark.parametrize("text", sorted(KERNELS_COMMUNITY))
def test_kernels_community_schemas_infer_their_family(text):
    op = text.split("(")[0]
    assert [m.contract.family for m in registry.infer(op, schema(text))] == [KERNELS_COMMUNITY[text]]


def test_matching_rules():
    pattern = schema("op(Tensor! out, Tensor input, Tensor weight, float eps) -> ()")
    assert base.matches(pattern, schema("x(Tensor(a!) o, Tensor i, Tensor w, float e, bool zero_centered=False) -> ()"))
    assert base.matches(pattern, schema("x(Tensor! o, Tensor i, Tensor? w, float e) -> ()"))
    assert not base.matches(pattern, schema("x(Tensor o, Tensor i, Tensor w, float e) -> ()")), "out not mutable"
    assert not base.matches(pattern, schema("x(Tensor! o, Tensor! i, Tensor w, float e) -> ()")), "input mutable"
    assert not base.matches(pattern, schema("x(Tensor! o, Tensor i, Tensor w, float e, bool f) -> ()"))
    assert not base.matches(pattern, schema("x(Tensor! o, Tensor i, Tensor w, float e) -> Tensor"))
    assert base.schema_text(schema("x(Tensor(a!) o, Tensor? w, int n) -> Tensor[]")) == \
        "(Tensor! o, Tensor? w, int n) -> Tensor[]"


def test_unknown_names_and_several_families_infer_nothing():
    assert registry.infer("my_norm", schema("x(Tensor! out, Tensor input, Tensor weight, float eps) -> ()")) == ()
    # geglu without flags is diffusers' [value | gate]; with flags it is gelu_and_mul's form
    plain = registry.infer("geglu", schema("x(Tensor! out, Tensor input) -> ()"))
    assert [m.contract.family for m in plain] == ["geglu"]


# --- the generators are adversarial by construction ------------------------------------

@pytest.mark.parametrize("family", sorted(registry.CONTRACTS))
def test_every_form_meets_large_odd_strided_and_empty_inputs_on_cpu(family):
    contract = registry.CONTRACTS[family]
    for form in contract.forms:
        samples = contract.samples("cpu", form)
        assert {s.dtype for s in samples} == set(inputs.DTYPES), form.schema
        assert any(s.elements >= inputs.BENCH_ELEMENTS for s in samples), "the benchmark's size, on the CPU too"
        if form.supports is base._everything:
            assert {s.layout for s in samples} == set(inputs.LAYOUTS), form.schema
            assert any(s.elements == 0 for s in samples), "an empty batch"
            assert any(s.shape[-1] >= inputs.LONG_ROW for s in samples), "a very long row"
            assert any(s.elements // max(s.shape[-1], 1) >= 70000 for s in samples), "many rows"
        for key, values in form.sweep:
            assert {s.knob(key) for s in samples} == set(values), (form.schema, key)


@pytest.mark.parametrize("family", ["rms_norm", "fused_add_rms_norm", "layer_norm", "softmax", "silu"])
def test_row_families_reach_every_odd_last_dim_and_several_eps(family):
    contract = registry.CONTRACTS[family]
    samples = contract.samples("cpu", contract.forms[0])
    last = {s.shape[-1] for s in samples}
    assert set(inputs.ODD_LAST_DIMS) <= last or set(d * 2 for d in inputs.ODD_LAST_DIMS) <= last
    assert any(len(s.shape) == 4 for s in samples), "three leading dims"
    if "norm" in family:
        assert len({s.knob("eps") for s in samples}) >= 3


def test_weights_are_random_with_negative_entries():
    contract = registry.CONTRACTS["rms_norm"]
    sample = next(s for s in contract.samples("cpu", contract.forms[0]) if s.shape == (3, 8191))
    w = contract.make(sample, torch.Generator().manual_seed(1), CPU)["weight"]
    assert (w < 0).any() and (w > 0).any() and len(set(w.tolist())) > 100


def test_layouts_are_what_they_say():
    v = torch.randn(3, 4, 129)
    for layout in inputs.LAYOUTS:
        t = inputs.lay_out(v, torch.float32, CPU, layout)
        assert torch.equal(t, v)
        assert t.is_contiguous() == (layout in ("contiguous", "misaligned"))
    assert inputs.lay_out(v, torch.float32, CPU, "misaligned").data_ptr() % 16 != 0
    assert inputs.lay_out(v.reshape(12, 129), torch.float32, CPU, "transposed").stride()[-1] != 1


# --- correct implementations pass every contract; planted flaws fail ------------------

def _run(module, *, only: str | None = None, seed: int = 11, limit: int | None = None):
    """Every contract case of the module's ops (those whose name contains `only`, and
    with at most `limit` input elements), one seed."""
    results = []
    state = RunState()
    with bookkeeping(state):
        for plan in plan_ops(module.ops, {}):
            for case in contract_cases(plan, "cpu"):
                if limit is not None and case.shape is not None and math.prod(case.shape) > limit:
                    continue
                if only is None or only in case.name:
                    results.append(run_seed(getattr(module.ops, case.op), case, CPU, seed, state)[0])
    return results


def test_a_correct_pytorch_implementation_of_every_form_passes():
    module = impls.namespace(impls.correct_ops())
    plans = {p.op: p for p in plan_ops(module.ops, {})}
    assert all(p.family for p in plans.values()), {op: p.note for op, p in plans.items() if not p.family}
    # The large inputs are the same code path for these implementations (and
    # our kernels meet them in test_contracts_kernels.py): leave them out here.
    results = _run(module, limit=1 << 18)
    failed = [f"{r.name}: {r.message}" for r in results if not r.passed]
    assert not failed, failed[:10]
    assert {r.op for r in results} == set(plans)


# Cases enough to show each flaw, small enough to be quick: the benchmark shape is
# the only one at least 4M elements.
FLAW_CASES = {
    "ignore-weight": "/3x8191/",
    "nan-only": "/3x8191/",
    "stale-address": "/3x8191/",
    "mutates-input": "/3x8191/",
    "shortcut-large": "/1024x4096/",
    "misses-last-element": "/3x8191/",
    "not-deterministic": "fp32/3x8191/",
}


@pytest.mark.parametrize("flaw", sorted(FLAW_CASES))
def test_each_planted_flaw_fails_the_rms_norm_contract(flaw):
    results = _run(impls.flawed_rms_norm(flaw), only=FLAW_CASES[flaw])
    assert results and not any(r.passed for r in results), [r.message for r in results]
    messages = " ".join(r.message for r in results)
    expected = {"mutates-input": "input 1 was changed", "not-deterministic": "not deterministic",
                "stale-address": "call 2 (new data at the same addresses", "misses-last-element": "call"}
    assert expected.get(flaw, "relative error") in messages, messages


def test_the_unflawed_op_passes_the_same_cases():
    module = impls.namespace({"rms_norm": (impls.RMS_NORM_SCHEMA, impls.rms_norm_out)})
    for only in set(FLAW_CASES.values()):
        results = _run(module, only=only)
        assert results and all(r.passed for r in results), [r.message for r in results if not r.passed]


def test_shortcut_passes_everything_but_the_benchmark_size():
    results = _run(impls.flawed_rms_norm("shortcut-large"), only="/bf16/")
    failed = {r.name for r in results if not r.passed}
    assert failed == {r.name for r in results if "/1024x4096/" in r.name}


def test_an_op_that_calls_pytorch_is_reported_as_delegating():
    module = impls.namespace({"rms_norm": (impls.RMS_NORM_SCHEMA, impls.rms_norm_out)})
    ex = execute(module, CPU, [], {}, (3,), profile=True)
    ex.results = [r for r in ex.results if r.passed]
    (d,) = ex.delegation
    assert d.delegates and "aten::rsqrt" in d.aten and "aten::copy_" not in d.aten
    codes = {w.code for w in plan_warnings(ex, "k")}
    assert "op-delegates-to-pytorch" in codes


def test_a_binding_that_does_not_fit_fails_and_an_unknown_op_is_not_covered():
    module = impls.namespace({"rms_norm": (impls.RMS_NORM_SCHEMA, impls.rms_norm_out),
                              "scale": ("(Tensor(a!) out, Tensor x, float a) -> ()", lambda o, x, a: o.copy_(x * a))})
    plans = {p.op: p for p in plan_ops(module.ops, {"rms_norm": ("softmax", "--contract"),
                                                       "missing": ("relu", "workspace")})}
    assert plans["rms_norm"].code == "contract-schema-mismatch" and plans["rms_norm"].failed
    assert "rms_norm(Tensor! out, Tensor input) -> ()" in plans["rms_norm"].note  # softmax's forms
    assert plans["missing"].code == "contract-op-missing" and "its ops: rms_norm, scale" in plans["missing"].note
    assert plans["scale"].code == "op-not-covered" and not plans["scale"].failed


def test_the_benchmarks_own_shapes_join_the_contract():
    from pipeline.smoke.plan import OpPlan, bench_shapes, pick_bench

    shapes = bench_shapes(REPO / "kernels-src" / "rmsnorm" / "benchmarks" / "bench_cases.py")
    assert ((32768, 4096), "bfloat16") in shapes["rms_norm"] and "fused_add_rms_norm" in shapes
    def elements(shape):
        return shape[0] * shape[1]

    all_shapes = sorted({shape for shape, _ in shapes["rms_norm"]}, key=elements, reverse=True)
    cpu = pick_bench(shapes["rms_norm"], "cpu")
    assert len(cpu) == 1 and elements(cpu[0][0]) == max(elements(s) for s in all_shapes if elements(s) <= 8 << 20)
    cuda = [shape for shape, _ in pick_bench(shapes["rms_norm"], "cuda")]
    assert len(cuda) == 3 and cuda == sorted(cuda, key=elements, reverse=True)
    assert elements(cuda[0]) == max(elements(s) for s in all_shapes if elements(s) <= 32 << 20)
    contract = registry.CONTRACTS["rms_norm"]
    plan = OpPlan("rms_norm", "", "rms_norm", "workspace", forms=contract.forms[:1])
    names = [c.name for c in contract_cases(plan, "cpu", shapes["rms_norm"])]
    rows, hidden = cpu[0][0]
    assert sum(f"/bf16/{rows}x{hidden}/contiguous" in n for n in names) == 1
    assert len(names) == len(set(names)) == len(contract_cases(plan, "cpu")) + 1


def test_a_reductions_float32_bound_grows_with_its_length_and_nothing_else_does():
    softmax = registry.CONTRACTS["softmax"]
    short, long = (base.Sample("softmax", "float32", s) for s in ((8, 4096), (2, inputs.LONG_ROW)))
    assert softmax.bound("float32", short) == base.REDUCTION_TOLERANCE["float32"]
    assert softmax.bound("float32", long) == pytest.approx(base.FP32_SUM_GROWTH * math.sqrt(inputs.LONG_ROW) * 2**-24)
    assert softmax.bound("bfloat16", long) == base.REDUCTION_TOLERANCE["bfloat16"]
    reducing = {name for name, c in registry.CONTRACTS.items() if c.reduces_last}
    assert reducing == {"rms_norm", "fused_add_rms_norm", "layer_norm", "adaln", "softmax"}
    assert all(c.tolerance is base.REDUCTION_TOLERANCE for n, c in registry.CONTRACTS.items() if n in reducing)
    # PyTorch's own float32 softmax over the longest contract row: inside the bound at every thread count.
    x = torch.randn(2, inputs.LONG_ROW, generator=torch.Generator().manual_seed(3))
    ref = torch.softmax(x.double(), dim=-1)
    for threads in (1, 2):
        old = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            err = float((torch.softmax(x, dim=-1).double() - ref).norm() / ref.norm())
        finally:
            torch.set_num_threads(old)
        assert err <= softmax.bound("float32", long), (threads, err)
