"""The card's verification section and the publish gate's verdicts on coverage:
what a Hub user sees about what smoke verified (unit: the summary made from hand-made
reports, its rendering, and the gate's rules)."""

from __future__ import annotations

import json

import pytest

from pipeline.card import Card, CardVariant, render_card
from pipeline.card_verification import SmokeRun, declined_kinds, recorded_runs, verification_summary
from pipeline.errors import Problem, PublishError
from pipeline.gate import smoke_summary, untested_error
from pipeline.smoke import CaseResult, Delegation, OpCoverage, SmokeReport

COVERED = OpCoverage(op="rms_norm", schema="(Tensor! out, Tensor input, Tensor weight, float eps) -> ()",
                     contract="rms_norm", how="workspace", contract_cases=51, project_cases=48,
                     shapes=("5x1", "3x7", "2x3x127", "4x128", "2x2x2x4097", "3x8191", "2x262144", "1024x4096"),
                     dtypes=("bfloat16", "float16", "float32"), seeds=(11, 12, 13))
UNCOVERED = OpCoverage(op="scale", schema="(Tensor! out, Tensor x, float a) -> ()", contract=None, how="")


def _card(**kw) -> str:
    base = dict(repo_id="my-org/rmsnorm", name="rmsnorm", version=1, license="Apache-2.0", functions=("rms_norm",),
                variants=(CardVariant("torch213-cxx11-cpu-x86_64-linux", "torch 2.13", "CPU", "x86_64-linux"),))
    return render_card(Card(**{**base, **kw}))


def _verified(coverage, results=(), untested=(), warnings=(), **kw) -> str:
    summary = verification_summary(_report(coverage, results, warnings=tuple(warnings)), untested=untested, **kw)
    return _card(verification=summary)


OK = CaseResult("rms_norm:x", "rms_norm", 5, "values", True, 0.0, 1e-3, contract="rms_norm")


def test_coverage_per_op_is_a_table_row():
    text = _verified((COVERED,), [OK, OK])
    assert "## Verification" in text
    assert "on `torch213-cxx11-cpu-x86_64-linux` (cpu)" in text and "**2 checks, 0 failed**, 1 seed(s) per case" in text
    assert "| `rms_norm` | `rms_norm` (workspace) | 51 | 48 | bfloat16, float16, float32 | 8 | 0 |" in text
    assert "Untested" not in text and "Warnings:" not in text


def test_the_card_does_not_change_with_the_seed():
    other = OpCoverage(**{**COVERED.__dict__, "seeds": (901, 902, 903)})
    assert _verified((COVERED,), [OK]) == _verified((other,), [OK])


def test_untested_mark_and_warnings_are_shown():
    warnings = (Problem("k", None, "op-delegates-to-pytorch", "scale hands its work to PyTorch: it calls aten::mul",
                        severity="warning"),
                Problem("k", None, "weak-case-constant-input", "rms_norm: 1 case(s) pass an input whose elements are "
                        "all equal (/tmp/x/tests/smoke_cases.py)", severity="warning"))
    text = _verified((COVERED, UNCOVERED), untested=("scale",), warnings=warnings)
    assert "> **Untested**: published with `--allow-untested`. No contract and no case checked `scale`." in text
    assert "| `scale` | none | 0 | 0 | – | 0 | 0 |" in text
    assert "- `op-delegates-to-pytorch`: scale hands its work to PyTorch: it calls aten::mul" in text
    # A path of the publishing machine in a warning is not published.
    assert "- `weak-case-constant-input`: rms_norm: 1 case(s)" in text and "(smoke_cases.py)" in text
    assert "/tmp/" not in text


def test_declined_cases_are_counted_by_kind_not_repeated_as_warnings():
    declined = ("rope:rotary/bf16/2x2x6x32/transposed/head_dim=32", "rope:rotary/fp16/2x3x128/row-strided/heads=2",
                "rope:rotary/fp16/2x2x6x32/transposed/head_dim=32", "odd-name")
    assert declined_kinds(declined) == ("row-strided", "transposed")
    rope = OpCoverage(op="rope", schema="", contract="rotary", how="workspace", contract_cases=36, project_cases=2,
                      shapes=("2x3x128",), dtypes=("float32",), declined=declined)
    warning = Problem("k", None, "contract-case-declined", "rope refused 4 contract input(s)", severity="warning")
    text = _verified((rope,), warnings=(warning,))
    assert "| `rope` | `rotary` (workspace) | 36 | 2 | float32 | 1 | 4 (row-strided, transposed) |" in text
    assert "Warnings:" not in text


def test_no_smoke_says_so_and_recorded_runs_are_listed(tmp_path):
    assert "Not smoke-tested before upload" in _card()
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "h200-smoke.json").write_text(json.dumps(
        {**_report((COVERED,), [OK]).to_json(), "device": "NVIDIA H200",
         "variant": "torch211-cxx11-cu130-x86_64-linux"}))
    (results / "broken-smoke.json").write_text("{")
    runs = recorded_runs(tmp_path)
    assert runs == (SmokeRun("NVIDIA H200", "torch211-cxx11-cu130-x86_64-linux", 1, 0, 0, 1, True),)
    text = _card(verification=verification_summary(None, recorded=runs))
    assert "Not smoke-tested before upload" in text
    assert "- NVIDIA H200, `torch211-cxx11-cu130-x86_64-linux`: 1 checks, 0 failed, 1 seed(s) per case" in text


def _report(coverage, results=(), **kw) -> SmokeReport:
    return SmokeReport("tiny", "_tiny_cpu_1", "torch213-cxx11-cpu-x86_64-linux", "cpu", "tiny", tuple(results),
                       seed=5, seeds=(5,), coverage=tuple(coverage), **kw)


def test_untested_error_is_exact_and_names_the_ways_out():
    err = untested_error(_report((COVERED, UNCOVERED)), None)
    assert isinstance(err, PublishError) and err.code == "publish-untested"
    assert err.message == ("1 op(s) of tiny are tested by nothing: scale (no contract matches them and no case in "
                           "tests/smoke_cases.py calls them); nothing was uploaded")
    assert "--contract scale=FAMILY" in err.hint and "[workspace.contracts.<kernel>]" in err.hint
    assert "tests/smoke_cases.py" in err.hint and "--allow-untested" in err.hint


def test_smoke_summary_names_contracts_and_no_seed():
    line = smoke_summary(_report((COVERED,), [OK]))
    assert line == "passed on torch213-cxx11-cpu-x86_64-linux (1 check(s), 0 failed; contracts: rms_norm)"
    assert "5" not in line.replace("x86_64", "")
    assert smoke_summary(_report((UNCOVERED,))).startswith("untested on ")


def test_delegation_verdicts_serialise():
    d = Delegation("scale", ("aten::mul",), (), True)
    report = _report((UNCOVERED,), delegation=(d,))
    assert json.loads(json.dumps(report.to_json()))["delegation"] == [{"op": "scale", "aten": ["aten::mul"], "kernels": [], "delegates": True,
                                                "note": ""}]
    assert report.untested == ("scale",) and report.passed is False


@pytest.mark.parametrize("limit,shown", [(2, "5x1, 3x7 and 6 more"), (8, "5x1, 3x7, 2x3x127, 4x128, 2x2x2x4097, "
                                                                          "3x8191, 2x262144, 1024x4096")])
def test_shape_summary(limit, shown):
    assert COVERED.shape_summary(limit) == shown


def test_ops_not_available_and_tested_by_the_projects_tests_only_are_said_so():
    absent = OpCoverage(op="gelu_cuda_only", schema="(Tensor! out, Tensor input) -> ()", contract=None, how="",
                        available=False)
    by_tests = OpCoverage(op="twice", schema="(Tensor input) -> Tensor", contract=None, how="", project_tests=2)
    declining = OpCoverage(**{**COVERED.__dict__, "categories_declined": ("empty",)})
    report = SmokeReport(kernel="k", kernel_id="_k", variant="torch-cpu", device="cpu", project="k",
                         results=(OK,), coverage=(absent, by_tests, declining), device_type="cpu")
    text = _card(verification=verification_summary(report))
    assert "| `gelu_cuda_only` | not available on cpu (this variant ships no kernel of it there) |" in text
    assert "| `twice` | none: tested by the project's own tests only | 0 | 0 |" in text
    assert "binding declines empty |" in text
    assert report.untested == () and report.unavailable == ("gelu_cuda_only",)


def test_a_forced_card_groups_the_failures_by_category():
    crash = CaseResult("relu:x", "relu", 5, "values", False, contract="relu", kind="crash", category="misaligned")
    wrong = CaseResult("relu:y", "relu", 5, "values", False, contract="relu", kind="wrong", category="transposed")
    report = SmokeReport(kernel="k", kernel_id="_k", variant="torch-cpu", device="cpu", project="k",
                         results=(OK, crash, crash, wrong), coverage=(COVERED,), device_type="cpu")
    text = _card(verification=verification_summary(report))
    assert "Failed checks by input category (published with `--force`): misaligned: 2 crash; transposed: 1 wrong." in text
