"""Contracts bind to the schemas real projects register (kernels-community's
rmsnorm, tinygrad-rms, layer-norm, activation, megablocks, mlx-rmsnorm): roles
matched by name, type and position, functional / out-variant / in-place forms,
extra outputs checked or named as unchecked, values for arguments no role
fills, backward ops against autograd, and the binding syntax of the command line
and the workspace file. The ops are torch.library ops with the real schemas,
implemented in Python (tests/test_contracts_support.py): no build needed."""

from __future__ import annotations

import dataclasses
import math
import pickle
import textwrap

import pytest
import torch

import test_contracts_support as impls
from pipeline.contracts import CATEGORIES, Binding, parse_bindings, registry, roles
from pipeline.errors import WorkspaceError
from pipeline.smoke.harness import RunState, bookkeeping, run_seed
from pipeline.smoke.plan import contract_cases, plan_ops
from pipeline.workspace_file import load_workspace

CPU = torch.device("cpu")
SMALL = 1 << 16  # inputs of at most this many elements: the large ones are the same code path here


def schema(text: str):
    return torch._C.parse_schema(text)


def _bindings(module_ops) -> dict:
    return {name: Binding(family, "--contract") for name, (_, _, _, family) in impls.REAL_PROJECT_OPS.items()
            if family is not None}


def _results(module, plan, *, limit: int | None = SMALL, seed: int = 5, only=lambda case: True):
    state = RunState()
    out = []
    with bookkeeping(state):
        for case in contract_cases(plan, "cpu"):
            if limit is not None and case.shape is not None and math.prod(case.shape) > limit:
                continue
            if only(case):
                out.append((case, run_seed(getattr(module.ops, case.op), case, CPU, seed, state)[0]))
    return out


@pytest.fixture(scope="module")
def real():
    module = impls.real_project_ops()
    return module, {p.op: p for p in plan_ops(module.ops, _bindings(module.ops))}


def test_every_real_projects_op_gets_its_family_inferred_or_bound(real):
    _, plans = real
    for name, (_, _, family, bound) in impls.REAL_PROJECT_OPS.items():
        plan = plans[name]
        assert (plan.family, plan.how, plan.code) == (family, "--contract" if bound else "inferred", ""), plan.note


@pytest.mark.parametrize("op", sorted(impls.REAL_PROJECT_OPS))
def test_a_correct_implementation_of_each_real_schema_passes_its_contract(real, op):
    module, plans = real
    results = _results(module, plans[op])
    assert results, "cases ran"
    failed = [f"{c.name}: {r.message}" for c, r in results if not r.passed]
    assert not failed, failed[:5]
    assert {c.category for c, _ in results} >= {"contiguous", "empty", "row-strided"}


def test_roles_are_matched_by_name_type_and_position(real):
    _, plans = real
    assert plans["apply_rms_norm"].roles == "hidden_states->x, weight->weight, variance_epsilon->eps"
    assert plans["apply_rms_norm"].checked == ("y", "rstd"), "[y, rstd]: the family's extra output, checked"
    assert plans["tinygrad_rms_norm"].roles == "out->y, rms_inv->rstd, input->x, epsilon->eps"
    assert plans["launch_forward_kernel"].roles == "input->x, weight->weight, output->y, epsilon->eps"
    assert plans["launch_backward_kernel"].checked == ("dx", "dweight")
    assert plans["apply_rms_norm_backward"].given == (("input_requires_grad", True), ("weight_requires_grad", True))
    ln = plans["dropout_add_ln_fwd"]
    assert ln.roles == "input->x, gamma->weight, beta->bias, epsilon->eps" and ln.checked == ("y", "mean", "rstd")
    assert dict(ln.given) == {"dropout_p": 0.0, "rowscale_const": 1.0, "z_numrows": 0, "residual_in_fp32": False,
                              "is_rms_norm": False}
    assert "returned value 1" in ln.unchecked and "returned value 2" in ln.unchecked, "x and dmask: named"
    # flash-attention's kernel: 2-D, hidden size a multiple of 8 up to 8192; its other categories all have cases
    assert ln.limits == ()
    assert plans["gelu_fast"].roles == "out->y, input->x", "megablocks' writable input is read, not written"
    # a position alone: the first writable tensors are in place when too few are read-only
    layout = roles.match(registry.CONTRACTS["fused_add_rms_norm"].signature,
                         schema("f(Tensor! a, Tensor! b, Tensor c, float d) -> ()"), "fused_add_rms_norm")
    assert layout.describe() == "a->x (in place: y), b->residual (in place: s), c->weight, d->eps"
    layout = roles.match(registry.CONTRACTS["rms_norm"].signature, schema("f(Tensor! a, Tensor b, float c) -> ()"),
                         "rms_norm")
    assert layout.describe() == "a->y, b->x, c->eps" and layout.knobs == (("weight", "none"),)


def test_a_weightless_form_is_tested_without_weight(real):
    _, plans = real
    samples = [c for c in contract_cases(plans["tinygrad_rms_norm"], "cpu")]
    assert samples and all("/weight=none" in c.name for c in samples)


def test_the_schemas_default_and_the_familys_fixed_values_fill_the_other_arguments(real):
    _, plans = real
    assert plans["swigluoai_and_mul"].roles == "out->y, input->x, alpha->alpha, limit->limit", \
        "alpha and limit are swept, not left to their defaults"
    sig = registry.CONTRACTS["rms_norm"].signature
    layout = roles.match(sig, schema("f(Tensor x, Tensor w, float eps, *, bool fast=False, Tensor? g=None) -> Tensor"),
                         "rms_norm")
    assert [s.kind for s in layout.slots] == ["in", "in", "in", "omit", "omit"]
    with pytest.raises(roles.Mismatch, match=r"argument\(s\) scale \(float\) fill no role of rms_norm.*args ="):
        roles.match(sig, schema("f(Tensor! o, Tensor x, Tensor w, float eps, float scale) -> ()"), "rms_norm")
    given = roles.match(sig, schema("f(Tensor! o, Tensor x, Tensor w, float eps, float scale) -> ()"), "rms_norm",
                        binding=Binding("rms_norm", args=(("scale", 1),)))
    assert given.given == (("scale", 1.0),) and given.slots[-1].value == 1.0, "an int is passed to a float as float"


# --- what the contracts catch in real projects' ops ---------------------------------

def _one(schema_text: str, fn, binding: Binding | None = None, name: str = "op"):
    module = impls.namespace({name: (schema_text, fn)})
    plan, = plan_ops(module.ops, {name: binding} if binding else {})
    return module, plan


APPLY_RMS_NORM = impls.REAL_PROJECT_OPS["apply_rms_norm"][0]


def _garbage_rstd(x, w, eps):
    # kernels-community rmsnorm's CPU path: `torch::empty({hidden_states.size(0)})` as rstd
    return [impls.rms(x, w, eps), torch.full((x.shape[0],), float("nan"))]


def test_an_extra_output_the_family_defines_is_checked_unless_the_binding_says_not():
    module, plan = _one(APPLY_RMS_NORM, _garbage_rstd, name="apply_rms_norm")
    assert plan.how == "inferred" and plan.checked == ("y", "rstd")
    results = _results(module, plan, only=lambda c: "/3x8191/" in c.name)
    assert results and not any(r.passed for _, r in results)
    assert all("output rstd" in r.message for _, r in results)
    module, plan = _one(APPLY_RMS_NORM, _garbage_rstd, Binding("rms_norm", "workspace", unchecked=("rstd",)),
                        name="apply_rms_norm")
    assert plan.checked == ("y",) and plan.unchecked[0] == "rstd (binding)"
    results = _results(module, plan)
    assert results and all(r.passed for _, r in results), [r.message for _, r in results if not r.passed][:3]


def _dweight_in_low_precision(dy, x, w, y, rstd, eps, need_dx, need_dw):
    # kernels-community rmsnorm's AVX-512 backward: dweight summed over rows in x's dtype
    dx, dw = impls.apply_rms_norm_backward(dy, x, w, y, rstd, eps, need_dx, need_dw)
    prod = (dy.float() * x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    acc = torch.zeros(x.shape[-1], dtype=x.dtype)
    for row in prod.reshape(-1, x.shape[-1]):
        acc += row
    return [dx, acc]


def test_a_backward_op_is_checked_against_autograd_and_low_precision_sums_fail():
    text = impls.REAL_PROJECT_OPS["apply_rms_norm_backward"][0]
    module, plan = _one(text, _dweight_in_low_precision, name="apply_rms_norm_backward")
    assert plan.family == "rms_norm_backward" and plan.checked == ("dx", "dweight")
    results = _results(module, plan, limit=None, only=lambda c: "/1024x4096/contiguous/" in c.name)
    by_dtype = {c.dtype: r for c, r in results}
    assert set(by_dtype) == {"bfloat16", "float16", "float32"}
    assert by_dtype["float32"].passed
    assert not by_dtype["bfloat16"].passed and "output dweight: relative error" in by_dtype["bfloat16"].message


def test_a_wrong_gradient_fails_every_category_it_reaches():
    def no_mean_term(dy, x, w, y, rstd, eps, need_dx, need_dw):
        dx, dw = impls.apply_rms_norm_backward(dy, x, w, y, rstd, eps, need_dx, need_dw)
        r = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
        return [(dy.float() * w.float() * r).to(x.dtype), dw]  # forgets d(rstd)/dx

    module, plan = _one(impls.REAL_PROJECT_OPS["apply_rms_norm_backward"][0], no_mean_term,
                        name="apply_rms_norm_backward")
    results = _results(module, plan)
    failed = {c.category for c, r in results if not r.passed}
    assert failed == {c.category for c, _ in results} - {"empty"}
    assert all("output dx" in r.message for c, r in results if not r.passed)


def test_an_op_that_writes_an_input_it_marks_writable_fails():
    def scribbles(out, x):
        out.copy_(impls.gelu_fast(x).to(x.dtype))
        x.zero_()

    module, plan = _one("(Tensor(a!) out, Tensor(b!) input) -> ()", scribbles, name="gelu_fast")
    results = _results(module, plan, only=lambda c: "/3x8191/" in c.name)
    assert results and all("input 1 was changed" in r.message for _, r in results)


def test_a_weightless_kernel_that_applies_no_eps_fails():
    def no_eps(out, rms_inv, x, eps):
        impls.tinygrad_rms_norm(out, rms_inv, x, 0.0)

    module, plan = _one(impls.REAL_PROJECT_OPS["tinygrad_rms_norm"][0], no_eps, name="tinygrad_rms_norm")
    results = _results(module, plan, only=lambda c: "/eps=1/" in c.name or c.name.endswith("eps=1"))
    assert results and not any(r.passed for c, r in results if c.category != "empty")


# --- bindings -------------------------------------------------------------------------

DROPOUT_ADD_LN_FWD = impls.REAL_PROJECT_OPS["dropout_add_ln_fwd"][0]


def test_a_binding_gives_values_roles_and_returns():
    # the example: every option flash-attention's kernel has, given
    b = parse_bindings(["dropout_add_ln_fwd=layer_norm:dropout_p=0.0,rowscale_const=1.0,z_numrows=0,"
                        "residual_in_fp32=false,is_rms_norm=false"])[0][1]
    module, plan = _one(DROPOUT_ADD_LN_FWD, impls.dropout_add_ln_fwd, b, name="dropout_add_ln_fwd")
    assert plan.how == "--contract" and plan.code == "" and plan.checked == ("y", "mean", "rstd")
    assert all(r.passed for _, r in _results(module, plan, limit=1 << 14))
    # the same kernel as RMSNorm: is_rms_norm is the family's to fix, the list's rstd is the fifth value
    module, plan = _one(DROPOUT_ADD_LN_FWD, impls.dropout_add_ln_fwd, Binding("rms_norm"), name="dropout_add_ln_fwd")
    assert dict(plan.given)["is_rms_norm"] is True and plan.checked == ("y", "rstd")
    assert all(r.passed for _, r in _results(module, plan, limit=1 << 14))
    # returns: which returned value is which
    _, plan = _one(APPLY_RMS_NORM, impls.apply_rms_norm, Binding("rms_norm", returns=("y", "")))
    assert plan.checked == ("y",) and "returned value 1" in plan.unchecked
    # roles: where the names mislead
    text = "(Tensor a, Tensor b, Tensor c, float eps) -> Tensor"
    _, plan = _one(text, lambda a, b, c, eps: a, Binding("fused_add_rms_norm"))
    assert plan.code == "contract-schema-mismatch" and "produces no s" in plan.note
    _, plan = _one(text, lambda a, b, c, eps: a, Binding("layer_norm", roles=(("x", "c"), ("weight", "a"),
                                                                               ("bias", "b"))))
    assert plan.roles == "a->weight, b->bias, c->x, eps->eps"


@pytest.mark.parametrize("binding, message", [
    (Binding("rms_norm", args=(("nope", 1),)), "gives a value to 'nope', which is no argument of the op"),
    (Binding("rms_norm", args=(("variance_epsilon", True),)), "variance_epsilon is float, not bool"),
    (Binding("rms_norm", roles=(("gain", "weight"),)), "rms_norm has no such role"),
    (Binding("rms_norm", returns=("y", "bias")), "returns names 'bias', which is no output of rms_norm"),
    (Binding("rms_norm", unchecked=("mean",)), "leaves 'mean' unchecked, but the op produces no such output"),
    (Binding("silu"), "tensor argument(s) weight fill no role of silu"),
])
def test_a_binding_that_cannot_be_honoured_fails_with_the_reason(binding, message):
    _, plan = _one(APPLY_RMS_NORM, impls.apply_rms_norm, binding, name="apply_rms_norm")
    assert plan.code == "contract-schema-mismatch" and plan.failed
    assert message in plan.note, plan.note


def test_an_op_whose_name_says_a_family_but_whose_schema_does_not_fit_is_told_why():
    _, plan = _one("(Tensor! out, Tensor input, Tensor weight, float eps, float scale) -> ()",
                   lambda *a: None, name="rms_norm")
    assert plan.code == "op-not-covered"
    assert "its name says rms_norm, but argument(s) scale (float) fill no role" in plan.note


def test_names_are_matched_as_whole_words_and_never_past_a_word_that_changes_the_op():
    names = registry.CONTRACTS["rms_norm"].names
    for op in ("rms_norm", "apply_rms_norm", "tinygrad_rms_norm", "rms_norm_fwd", "rmsnorm_forward_impl",
               "tinygrad_rms_norm_inplace", "fused_rms_norm", "rms_norm_cuda"):
        assert roles.name_score(op, names), op
    for op in ("rms_norm_backward", "rms_norm_quant", "fused_add_rms_norm", "f32_bf16w_rmsnorm", "rms_normalize",
               "rmsnorm_fp8", "norms"):
        assert not roles.name_score(op, names), op
    assert roles.name_score("apply_rms_norm_backward", registry.CONTRACTS["rms_norm_backward"].names)
    assert roles.name_score("layer_norm_bwd_impl", registry.CONTRACTS["layer_norm_backward"].names)


def test_a_plan_is_plain_data_but_its_forms():
    module = impls.real_project_ops()
    for plan in plan_ops(module.ops, _bindings(module.ops)):
        bare = dataclasses.replace(plan, forms=())
        assert pickle.loads(pickle.dumps(bare)) == bare

        def plain(value) -> bool:
            if isinstance(value, tuple):
                return all(plain(v) for v in value)
            return value is None or isinstance(value, (str, int, float, bool))

        for f in dataclasses.fields(plan):
            if f.name != "forms":
                assert plain(getattr(plan, f.name)), (plan.op, f.name, getattr(plan, f.name))


# --- the workspace file ------------------------------------------------------------

def _workspace(tmp_path, contracts: str):
    (tmp_path / "k" / "rmsnorm").mkdir(parents=True)
    (tmp_path / "k" / "rmsnorm" / "build.toml").write_text('[general]\nname = "rmsnorm"\n')
    (tmp_path / "build.toml").write_text(textwrap.dedent('''\
        [workspace]
        kernels = ["k/*"]
        namespace = "org"
        [workspace.matrix]
        torch = ["2.13"]
        cuda = ["13.0"]
        archs = ["x86_64"]
        backends = ["cpu"]
        ''') + textwrap.dedent(contracts))
    return tmp_path


def test_the_workspace_file_takes_a_family_or_a_table(tmp_path):
    root = _workspace(tmp_path, '''\
        [workspace.contracts.rmsnorm]
        apply_rms_norm = { family = "rms_norm", declines = ["empty"], unchecked = ["rstd"] }
        apply_rms_norm_backward = "rms_norm_backward"
        dropout_add_ln_fwd = { family = "layer_norm", args = { dropout_p = 0.0, rowscale_const = 1.0, z_numrows = 0, residual_in_fp32 = false, is_rms_norm = false } }
        odd = { family = "layer_norm", roles = { bias = "beta0" }, returns = ["y", "", "mean"] }
        ''')
    bound = dict(load_workspace(root).contracts_for("rmsnorm"))
    assert bound["apply_rms_norm"] == Binding("rms_norm", "workspace", declines=("empty",), unchecked=("rstd",))
    assert bound["apply_rms_norm_backward"] == Binding("rms_norm_backward", "workspace")
    assert bound["dropout_add_ln_fwd"].args == (("dropout_p", 0.0), ("rowscale_const", 1.0), ("z_numrows", 0),
                                                 ("residual_in_fp32", False), ("is_rms_norm", False))
    assert bound["odd"].roles == (("bias", "beta0"),) and bound["odd"].returns == ("y", "", "mean")


@pytest.mark.parametrize("line, code, text", [
    ('a = { family = "rms_norm", declines = ["emty"] }', "contract-category-unknown", "did you mean 'empty'"),
    ('a = { family = "rms_norm", decline = ["empty"] }', "workspace-key-unknown", "did you mean 'declines'"),
    ('a = { family = "rmsnorm" }', "contract-unknown", "did you mean 'rms_norm'"),
    ('a = { declines = ["empty"] }', "workspace-type-error", "family"),
    ('a = { family = "rms_norm", args = { eps = "small" } }', "workspace-type-error", "args must be"),
    ('a = 3', "workspace-type-error", "family"),
])
def test_a_wrong_binding_in_the_workspace_file_names_its_line(tmp_path, line, code, text):
    root = _workspace(tmp_path, f"[workspace.contracts.rmsnorm]\n{line}\n")
    with pytest.raises(WorkspaceError) as exc:
        load_workspace(root)
    assert exc.value.code == code and exc.value.line == 10, exc.value.format()
    assert text in exc.value.format()


def test_every_category_can_be_declined_and_nothing_else():
    for category in CATEGORIES:
        assert parse_bindings([f"a=relu:declines={category}"])[0][1].declines == (category,)


def test_a_hand_written_form_takes_declines_but_no_other_option():
    text = "(Tensor x1, Tensor x2, Tensor cos, Tensor sin, Tensor(a!) out1, Tensor(b!) out2, bool conj) -> ()"
    _, plan = _one(text, impls.apply_rotary, Binding("rotary", declines=("huge",)), name="apply_rotary")
    assert plan.code == "" and plan.declines == ("huge",) and plan.checked == ("y",)
    assert "huge" not in {c.category for c in contract_cases(plan, "cpu")}
    _, plan = _one(text, impls.apply_rotary, Binding("rotary", args=(("conj", True),)), name="apply_rotary")
    assert plan.code == "contract-schema-mismatch" and "hand-written forms, which take no args" in plan.note
