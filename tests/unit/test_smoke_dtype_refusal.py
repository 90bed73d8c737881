"""A kernel that refuses a whole dtype (raises) but answers right in another is declined there, not failed;
one that refuses everything, or refuses only some shapes of a dtype, still fails."""

from __future__ import annotations

from pipeline.smoke.cases import Case
from pipeline.smoke.report import CaseResult
from pipeline.smoke.run import dtype_refusals_declined


def case(name: str, dtype: str) -> Case:
    return Case(name=name, op="rms_norm", make=lambda d, g: None, bound=lambda t: 1e-3, contract="rms_norm",
                dtype=dtype)


def result(name: str, passed: bool, refused: bool = False) -> CaseResult:
    return CaseResult(name, "rms_norm", 0, "values", passed, message="" if passed else "RuntimeError: float32 only",
                      contract="rms_norm", refused=refused)


CASES = [case("a/fp32", "float32"), case("b/fp16", "float16"), case("c/fp16", "float16")]


def test_a_refused_dtype_is_declined_when_another_dtype_answers_right():
    out = dtype_refusals_declined([result("a/fp32", True), result("b/fp16", False, True),
                                   result("c/fp16", False, True)], CASES)
    assert all(r.passed for r in out) and [r.declined for r in out] == [False, True, True]
    assert out[1].message.startswith("declined: float16 refused")


def test_refusing_everything_or_some_shapes_still_fails():
    everything = dtype_refusals_declined([result("a/fp32", False, True), result("b/fp16", False, True),
                                          result("c/fp16", False, True)], CASES)
    assert not any(r.passed for r in everything)
    partly = dtype_refusals_declined([result("a/fp32", True), result("b/fp16", True),
                                      result("c/fp16", False, True)], CASES)
    assert not partly[2].passed  # fp16 works at one shape, so refusing another is a failure
    wrong = dtype_refusals_declined([result("a/fp32", True), result("b/fp16", False),
                                     result("c/fp16", False, True)], CASES)
    assert not wrong[1].passed and not wrong[2].passed  # a wrong answer is never a refusal


def test_the_bound_allows_the_rounding_of_the_exact_answer_but_no_more():
    import torch

    from pipeline.smoke.compare import compare

    # a softmax over 262144 elements: every fp16 output is subnormal (~4e-6), so the exact
    # answer rounded to fp16 is already ~3e-3 off, over fp16's 1e-3 bound
    ref = torch.softmax(torch.randn(2, 262144, generator=torch.Generator().manual_seed(0), dtype=torch.float64), -1)
    rounded = ref.to(torch.float16)
    err, problem = compare(rounded, ref, 1e-3)
    assert err > 1e-3 and problem == ""
    err, problem = compare((ref * 1.01).to(torch.float16), ref, 1e-3)
    assert "relative error" in problem
