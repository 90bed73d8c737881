"""pipeline.contracts: schemas match the forms real projects register, the
generators are adversarial by construction and cover every input category,
and every form's correct implementation passes while planted flaws fail (real
dispatcher ops from torch.library: no build needed). The real projects'
schemas bound by roles: test_contracts_roles.py."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

import test_contracts_support as impls
from pipeline import contracts
from pipeline.contracts import CATEGORIES, Binding, base, inputs, registry
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
    assert contracts.parse_bindings(["rms_norm=rms_norm", " relu = relu "]) == (
        ("rms_norm", Binding("rms_norm", contracts.CLI)), ("relu", Binding("relu", contracts.CLI)))
    (op, b), = contracts.parse_bindings([
        "dropout_add_ln_fwd=layer_norm:dropout_p=0,rowscale_const=1.0,z_numrows=0,is_rms_norm=false,gen=none,"
        "declines=empty+huge,unchecked=mean,returns=y+-+-+mean+rstd,bias=beta"])
    assert op == "dropout_add_ln_fwd" and b.family == "layer_norm" and b.how == "--contract"
    assert b.args == (("dropout_p", 0), ("rowscale_const", 1.0), ("z_numrows", 0), ("is_rms_norm", False),
                      ("gen", None))
    assert b.declines == ("empty", "huge") and b.unchecked == ("mean",)
    assert b.returns == ("y", "", "", "mean", "rstd") and b.roles == (("bias", "beta"),)
    assert contracts.parse_bindings([b.shown().join(("dropout_add_ln_fwd=", ""))]) == ((op, b),), "shown() round-trips"
    assert contracts.parse_bindings(["a=relu", "a=silu"]) == (("a", Binding("silu")),), "the last one wins"
    with pytest.raises(SmokeError) as exc:
        contracts.parse_bindings(["rms_norm"])
    assert exc.value.code == "usage" and exc.value.exit_code == 2
    with pytest.raises(SmokeError) as exc:
        contracts.parse_bindings(["x=rms_norm:eps"])
    assert exc.value.code == "usage"
    with pytest.raises(SmokeError) as exc:
        contracts.parse_bindings(["x=rmsnorm"])
    assert exc.value.code == "contract-unknown" and "did you mean 'rms_norm'" in exc.value.hint
    with pytest.raises(SmokeError) as exc:
        contracts.parse_bindings(["x=rms_norm:declines=emtpy"])
    assert exc.value.code == "contract-category-unknown" and "did you mean 'empty'" in exc.value.hint


# --- schemas: the forms real projects use --------------------------------------------

def _our_schemas() -> dict[str, str]:
    found = {}
    for cpp in REPO.glob("kernels-src/*/torch-ext/torch_binding.cpp"):
        text = re.sub(r'"\s*\n\s*"', "", cpp.read_text())  # join C++ string literals split over lines
        for m in re.finditer(r'ops\.def\(\s*"([^"]+)"', text):
            found[m.group(1).split("(")[0]] = m.group(1)
    return found


def test_our_kernels_ops_infer_the_contracts_the_workspace_binds():
    bound = {op: b.family for ops in load_workspace(REPO).contracts.values() for op, b in ops}
    schemas = _our_schemas()
    assert set(schemas) == set(bound), "every op of our four kernels is bound in build.toml"
    for op, text in schemas.items():
        found = registry.infer(op, schema(text))
        assert [m.contract.family for m in found] == [bound[op]], (op, text)
        assert registry.bound(bound[op], schema(text)).forms


KERNELS_COMMUNITY = {
    # kernels-community/relu and activation, vLLM's norms, flash-attention's rotary and layer norm;
    # every op of /work/kc that fits a family by name and schema (the rest: test_contracts_roles.py)
    "relu(Tensor! out, Tensor input) -> ()": "relu",
    "silu_and_mul(Tensor! out, Tensor input) -> ()": "silu_and_mul",
    "mul_and_silu(Tensor! out, Tensor input) -> ()": "mul_and_silu",
    "gelu_and_mul(Tensor! out, Tensor input) -> ()": "gelu_and_mul",
    "gelu_tanh_and_mul(Tensor! out, Tensor input) -> ()": "gelu_tanh_and_mul",
    "fatrelu_and_mul(Tensor! out, Tensor input, float threshold) -> ()": "fatrelu_and_mul",
    "gelu_new(Tensor! out, Tensor input) -> ()": "gelu_new",
    "gelu_fast(Tensor! out, Tensor input) -> ()": "gelu_fast",
    "gelu_tanh(Tensor! out, Tensor input) -> ()": "gelu_tanh",
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
    ("dropout_add_ln_bwd(Tensor dz, Tensor? dx, Tensor x, Tensor? x0, Tensor? dmask, Tensor mu, Tensor rsigma, "
     "Tensor gamma, Tensor? rowscale, Tensor? colscale, Tensor? x0_subset, Tensor? z_subset, float dropout_p, "
     "float rowscale_const, int x0_numrows, bool has_residual, bool is_rms_norm) -> Tensor[]"): "layer_norm_backward",
    "apply_rms_norm(Tensor hidden_states, Tensor weight, float variance_epsilon) -> Tensor[]": "rms_norm",
    ("apply_rms_norm_backward(Tensor grad_output, Tensor hidden_states, Tensor weight, Tensor output, Tensor rstd, "
     "float variance_epsilon, bool input_requires_grad, bool weight_requires_grad) -> Tensor[]"): "rms_norm_backward",
    "tinygrad_rms_norm(Tensor! out, Tensor! rms_inv, Tensor input, float epsilon) -> ()": "rms_norm",
    "tinygrad_rms_norm_inplace(Tensor! out, Tensor input, float epsilon) -> ()": "rms_norm",
    # megablocks (XPU): the input marked writable
    "silu_and_mul(Tensor! out, Tensor! input) -> ()": "silu_and_mul",
    "gelu_fast(Tensor! out, Tensor! input) -> ()": "gelu_fast",
    "swigluoai_and_mul(Tensor! out, Tensor input, float alpha=1.702, float limit=7.0) -> ()": "swigluoai_and_mul",
    # flash-attention's Triton layer norm (flash-attn-ops)
    ("layer_norm_fwd_impl(Tensor x, Tensor weight, Tensor bias, float eps, Tensor(a!) out, Tensor? residual, "
     "Tensor? x1, Tensor? weight1, Tensor? bias1, float dropout_p, Tensor? rowscale, bool zero_centered_weight, "
     "bool is_rms_norm, bool return_dropout_mask, Tensor(a!)? residual_out) -> (Tensor y1, Tensor mean, "
     "Tensor rstd, Tensor seeds, Tensor dropout_mask, Tensor dropout_mask1)"): "layer_norm",
    ("layer_norm_bwd_impl(Tensor dy, Tensor x, Tensor weight, Tensor bias, float eps, Tensor mean, Tensor rstd, "
     "Tensor? dresidual, Tensor? dy1, Tensor? weight1, Tensor? bias1, Tensor? seeds, float dropout_p, "
     "Tensor? rowscale, bool has_residual, bool has_x1, bool zero_centered_weight, bool is_rms_norm, "
     "ScalarType? x_dtype, bool recompute_output) -> (Tensor dx, Tensor dw, Tensor db, Tensor dresidual_in, "
     "Tensor dx1, Tensor dw1, Tensor db1, Tensor y)"): "layer_norm_backward",
}

# Ops whose names hold a family's name but which compute something else: never inferred.
NOT_INFERRED = (
    "f32_bf16w_rmsnorm(Tensor input, Tensor weight_bf16, Tensor! output, float epsilon) -> ()",  # gpt-oss: fixed dtypes
    "topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! token_expert_indices, Tensor gating_output) -> ()",
    "nvfp4_gemv_swiglu(Tensor a, Tensor b, Tensor b_sf, Tensor alpha) -> Tensor",
    "rms_norm_quant(Tensor! out, Tensor input, Tensor weight, float eps) -> ()",
    "fused_add_rms_norm(Tensor! out, Tensor input, Tensor weight, float eps) -> ()",  # no residual: not the family
    "rms_norm(Tensor! out, Tensor input, Tensor weight, float eps, float scale) -> ()",  # a float no role fills
    "launch_forward_kernel(Tensor input, Tensor weight, Tensor! output, float epsilon) -> ()",  # says nothing: bind it
)


@pytest.mark.parametrize("text", sorted(KERNELS_COMMUNITY))
def test_kernels_community_schemas_infer_their_family(text):
    op = text.split("(")[0]
    assert [m.contract.family for m in registry.infer(op, schema(text))] == [KERNELS_COMMUNITY[text]]


@pytest.mark.parametrize("text", NOT_INFERRED)
def test_ops_that_compute_something_else_infer_nothing(text):
    assert registry.infer(text.split("(")[0], schema(text)) == ()


def test_hand_written_forms_match_by_type_and_mutation():
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

# The CPU's huge cases stay affordable: a few million elements.
CPU_HUGE_AT_MOST = 2 * base.HUGE_ELEMENTS


def _forms(family):
    contract = registry.CONTRACTS[family]
    return [(contract, form) for form in contract.forms]


@pytest.mark.parametrize("device_type", ["cpu", "cuda"])
@pytest.mark.parametrize("family", sorted(registry.CONTRACTS))
def test_every_form_has_cases_in_every_category_in_every_dtype(family, device_type):
    for contract, form in _forms(family):
        samples = contract.samples(device_type, form)
        for category in CATEGORIES:
            dtypes = {s.dtype for s in samples if s.category == category}
            assert dtypes == set(inputs.DTYPES), (form.schema, device_type, category, dtypes)
        huge = [s.elements for s in samples if s.category == "huge"]
        assert min(huge) >= base.HUGE_ELEMENTS
        if device_type == "cpu":
            assert max(huge) <= CPU_HUGE_AT_MOST, "affordable on the CPU"


def test_a_sample_is_of_one_category_and_a_dtype_is_none():
    def category(shape, layout="contiguous"):
        return base.Sample("rms_norm", "bfloat16", shape, layout).category

    assert category((0, 4096)) == "empty" and category((2, 0, 7), "row-strided") == "empty"
    assert category((5, 2048), "misaligned") == "misaligned" and category((6, 37), "row-strided") == "row-strided"
    assert category((9, 129), "transposed") == "transposed"
    assert category((1024, 4096)) == "huge" and category((1023, 4096)) == "contiguous"
    assert set(CATEGORIES) == {"contiguous", "empty", "huge", *inputs.LAYOUTS}
    assert not set(CATEGORIES) & set(inputs.DTYPES)


@pytest.mark.parametrize("family", sorted(registry.CONTRACTS))
def test_every_form_meets_large_odd_strided_and_empty_inputs_on_cpu(family):
    for contract, form in _forms(family):
        samples = contract.samples("cpu", form)
        if form.supports is base._everything:
            assert any(s.shape[-1] >= inputs.LONG_ROW for s in samples), "a very long row"
            assert any(s.elements // max(s.shape[-1], 1) >= 70000 for s in samples), "many rows"
        for key, values in form.sweep:
            assert {s.knob(key) for s in samples} == set(values), (form.schema, key)


def test_contract_cases_carry_the_samples_category_and_a_binding_declines_categories():
    contract = registry.CONTRACTS["rms_norm"]
    plan = plan_ops(impls.namespace({"rms_norm": (impls.RMS_NORM_SCHEMA, impls.rms_norm_out)}).ops,
                    {"rms_norm": Binding("rms_norm", "workspace", declines=("empty", "misaligned"))})[0]
    assert plan.declines == ("empty", "misaligned") and plan.limits == ()
    cases = contract_cases(plan, "cpu")
    everything = contract.samples("cpu", plan.forms[0])
    assert {c.category for c in cases} == set(CATEGORIES) - {"empty", "misaligned"}
    assert len(cases) == sum(s.category not in ("empty", "misaligned") for s in everything)
    by_name = {s.name: s for s in everything}
    assert all(c.category == by_name[c.name.split(":", 1)[1]].category for c in cases)


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
    plans = {p.op: p for p in plan_ops(module.ops, {"rms_norm": Binding("softmax", "--contract"),
                                                       "missing": Binding("relu", "workspace")})}
    assert plans["rms_norm"].code == "contract-schema-mismatch" and plans["rms_norm"].failed
    assert "tensor argument(s) weight fill no role of softmax" in plans["rms_norm"].note
    assert plans["missing"].code == "contract-op-missing" and "its ops: rms_norm, scale" in plans["missing"].note
    assert plans["scale"].code == "op-not-covered" and not plans["scale"].failed
    # (family, how) pairs are still taken
    assert plan_ops(module.ops, {"rms_norm": ("rms_norm", "workspace")})[0].how == "workspace"


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
    assert reducing == {"rms_norm", "fused_add_rms_norm", "layer_norm", "adaln", "softmax", "rms_norm_backward",
                        "layer_norm_backward"}
    # a weight's gradient sums every row: its bound grows with the row count
    backward = registry.CONTRACTS["rms_norm_backward"]
    many = base.Sample("rms_norm_backward", "float32", (70000, 16))
    assert backward.bound("float32", many) == pytest.approx(base.FP32_SUM_GROWTH * math.sqrt(70000) * 2**-24)
    assert registry.CONTRACTS["rms_norm"].bound("float32", many) == base.REDUCTION_TOLERANCE["float32"]
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
