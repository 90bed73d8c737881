"""pipeline.smoke: the harness's checks on fake ops (fast), then real CPU
builds of rmsnorm: the good one passes, planted flaws are caught (slow)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import test_smoke_support as builds
from values import bundle_of
from pipeline import smoke
from pipeline.errors import CheckError, SmokeError
from pipeline.smoke.harness import CaseStats
from pipeline.smoke.project_tests import run_project_tests
from pipeline.smoke.weak import weak_warnings
from pipeline.workspace import resolve, resolve_for_build

REPO = Path(__file__).resolve().parents[2]
RMSNORM = REPO / "kernels-src" / "rmsnorm"


# --------------------------------------------------------------------------
# The harness on fake kernels: a namespace of Python callables stands in for
# torch.ops.<id>, so each failure mode can be produced exactly.


def _ops(**fns):
    return types.SimpleNamespace(ops=types.SimpleNamespace(**fns))


def _scale_case(**extra):
    def make(device, gen):
        x = torch.randn(4, 33, generator=gen)
        return torch.empty(4, 33), x

    return {"name": "scale/4x33", "op": "scale", "make": make, "outputs": (0,),
            "reference": lambda out, x: (x.double() * 2,), **extra}


def _run(fn, case=None, seeds=(0, 1)):
    return smoke.run_cases(_ops(scale=fn), [case or _scale_case()], torch.device("cpu"), seeds=seeds)


def test_correct_op_passes_every_seed():
    results = _run(lambda out, x: out.copy_(x * 2))
    assert [r.seed for r in results] == [0, 1]
    assert all(r.passed for r in results)
    assert all(r.error is not None and r.error < 1e-12 for r in results)


def test_unwritten_element_fails_whatever_the_poison():
    def skips_last(out, x):
        out.view(-1)[:-1] = (x * 2).reshape(-1)[:-1]

    results = _run(skips_last, seeds=(0, 1, 2))
    assert not any(r.passed for r in results)
    # every call fails, NaN poison or not: the element check sees finite poison too
    assert all(r.message.count("call ") >= 3 for r in results), results[0].message


def test_write_past_the_end_fails():
    def overruns(out, x):
        out.copy_(x * 2)
        torch.as_strided(out, (out.numel() + 1,), (1,), out.storage_offset()).view(-1)[-1] = 0.0

    results = _run(overruns)
    assert not any(r.passed for r in results)
    assert "outside the output" in results[0].message


def test_float32_bound_is_tight():
    # An error of 1e-4 relative passes bf16's bound but not float32's.
    results = _run(lambda out, x: out.copy_(x * 2 * (1 + 1e-4)))
    assert not any(r.passed for r in results)
    assert "relative error" in results[0].message


def test_nan_output_never_passes():
    results = _run(lambda out, x: out.copy_(x * 2).view(-1).__setitem__(0, float("nan")))
    assert not any(r.passed for r in results)


def test_exception_in_op_is_a_failure_with_its_message():
    def boom(out, x):
        raise RuntimeError("kernel launch failed")

    results = _run(boom)
    assert not results[0].passed and "kernel launch failed" in results[0].message


def test_three_calls_per_seed_new_data_at_the_same_addresses():
    seen = []

    def record(out, x):
        seen.append((x.clone(), x.data_ptr(), out.data_ptr()))
        out.copy_(x * 2)

    _run(record, seeds=(0, 1, 2))
    assert len(seen) == 9
    for s in range(3):
        (a, pa, oa), (b, pb, ob), (c, pc, oc) = seen[3 * s:3 * s + 3]
        assert pa == pb == pc and oa == ob == oc, "same input and output addresses for the three calls"
        assert not torch.equal(a, b) and torch.equal(a, c), "new data, then the first data again"
    assert not torch.equal(seen[0][0], seen[3][0]), "fresh inputs per seed"


def test_poison_is_random_per_call_and_every_mode_is_drawn():
    before, after, inputs = [], [], []

    def record(out, x):
        before.append(out.clone())
        inputs.append(x.clone())
        out.copy_(x * 2)
        after.append(out.clone())

    _run(record, seeds=(0, 1, 2))
    modes = []
    for i, b in enumerate(before):
        if bool(torch.isnan(b).all()):
            modes.append("nan")
        elif i and torch.equal(b, after[i - 1]):
            modes.append("previous")
        elif any(torch.equal(b, (x * 2).flip(0)) for x in inputs if not torch.equal(x, inputs[i])):
            modes.append("other-reference")
        else:
            assert bool(torch.isfinite(b).all())
            modes.append("random")
    assert set(modes) == {"nan", "random", "previous", "other-reference"}, modes
    assert len(set(modes[:4])) == 4, "each mode once before any repeats"


def test_a_kernel_that_only_computes_on_nan_poison_fails():
    def harness_detector(out, x):
        if math.isnan(float(out.reshape(-1)[0])):
            out.copy_(x * 2)

    results = _run(harness_detector, seeds=(0, 1, 2))
    assert not any(r.passed for r in results)


def test_input_mutation_fails():
    def mutates(out, x):
        out.copy_(x * 2)
        x[0, 0] = 0.0

    results = _run(mutates)
    assert not any(r.passed for r in results)
    assert "input 1 was changed by the call (1 of 132 elements)" in results[0].message


def test_a_cache_keyed_by_address_fails_on_new_data():
    cache = {}

    def cached(out, x):
        if x.data_ptr() in cache:
            out.copy_(cache[x.data_ptr()])
            return
        out.copy_(x * 2)
        cache[x.data_ptr()] = out.clone()

    results = _run(cached)
    assert not any(r.passed for r in results)
    assert "call 2 (new data at the same addresses" in results[0].message


def test_repeats_must_be_bit_identical():
    # One element moves by an ulp per call, as a racy reduction's can: well inside the tolerance,
    # but call 3 repeats call 1's inputs, so the harness must see it. A counter, not a random
    # factor: 1 + 1e-6 * randn(()) rounded to the same float32 in 9 of 300 runs.
    calls = iter(range(10))

    def drifting(out, x):
        out.copy_(x * 2)
        first = out.view(-1)[:1]
        for _ in range(next(calls)):
            first.copy_(torch.nextafter(first, torch.full_like(first, math.inf)))

    results = _run(drifting, seeds=(0,))
    assert not results[0].passed and "not deterministic" in results[0].message
    assert "differs in 1 element(s)" in results[0].message


def test_a_seed_replays_the_same_inputs_and_poison():
    def run_once():
        seen = []

        def record(out, x):
            seen.append(torch.cat([out.reshape(-1).nan_to_num(7.0), x.reshape(-1)]))
            out.copy_(x * 2)

        _run(record, seeds=(41,))
        return seen

    a, b = run_once(), run_once()
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert smoke.seeds_from(100, 3) == (100, 101, 102)
    assert smoke.new_seed() != smoke.new_seed()


def test_missing_op_fails():
    results = smoke.run_cases(_ops(), [_scale_case()], torch.device("cpu"), seeds=(0,))
    assert not results[0].passed and "no op" in results[0].message


def test_tolerance_per_dtype():
    assert smoke.TOLERANCE["float32"] == 1e-5
    assert smoke.TOLERANCE["float16"] == 1e-3
    assert smoke.TOLERANCE["bfloat16"] == 8e-3
    # A case may tighten its bound, never loosen it.
    assert smoke.project_bound(torch.bfloat16, {"tolerance": 1.0}) == 8e-3
    assert smoke.project_bound(torch.bfloat16, {"tolerance": 1e-4}) == 1e-4


def test_empty_output_passes_when_the_op_accepts_it():
    def make(device, gen):
        return torch.empty(0, 5), torch.randn(0, 5, generator=gen)

    case = {"name": "empty", "op": "scale", "make": make, "outputs": (0,),
            "reference": lambda out, x: (x.double() * 2,)}
    assert all(r.passed for r in _run(lambda out, x: out.copy_(x * 2), case))


def test_report_json_and_passed():
    results = tuple(_run(lambda out, x: out.copy_(x * 2)))
    report = smoke.SmokeReport("k", "_k_cpu_1", "v", "cpu", "p", results, seed=5, seeds=(5, 6))
    data = report.to_json()
    assert data["passed"] is True and data["counts"] == {"total": 2, "failed": 0, "declined": 0}
    assert data["seed"] == 5 and data["seeds"] == [5, 6]
    json.dumps(data)
    assert smoke.SmokeReport("k", "_k", "v", "cpu", "p", ()).passed is False


# --- weak-case warnings -----------------------------------------------------------------

def _weak_case(ones: bool, width: int = 4096, fixed: bool = False, dtype=torch.bfloat16, name="rms/a"):
    def make(device, gen):
        g = torch.Generator().manual_seed(0) if fixed else gen
        x = torch.randn(2, width, generator=g).to(dtype)
        w = torch.ones(width, dtype=dtype) if ones else torch.randn(width, generator=g).to(dtype)
        return torch.empty_like(x), x, w

    return {"name": name, "op": "rms", "make": make, "outputs": (0,),
            "reference": lambda out, x, w: (x.double() * w.double(),)}


def _warnings(cases, seeds=(0, 1)):
    from pipeline.smoke.cases import project_case
    from pipeline.smoke.harness import RunState, bookkeeping, run_seed

    stats = []
    state = RunState()
    with bookkeeping(state):
        for case in map(project_case, cases):
            stats.append(run_seed(lambda out, x, w: out.copy_(x * w), case, torch.device("cpu"), seeds[0], state)[1])
    return {w.code: w for w in weak_warnings(stats, "k", len(seeds))}


def test_the_blogs_weak_case_gets_every_warning_it_deserves():
    found = _warnings([_weak_case(ones=True, fixed=True)], seeds=(0,))
    assert set(found) == {"weak-case-constant-input", "weak-case-aligned-only", "weak-case-one-shape",
                          "weak-case-one-dtype", "weak-case-one-seed"}
    assert found["weak-case-constant-input"].severity == "warning" and "rms/a" in found["weak-case-constant-input"].message


def test_varied_cases_get_no_warning():
    cases = [_weak_case(ones=False, width=7, name="rms/7"), _weak_case(ones=False, width=4096, dtype=torch.float32,
                                                                        name="rms/4096")]
    assert _warnings(cases) == {}


def test_weak_warnings_judge_only_the_projects_cases():
    stats = [CaseStats("c", "rms", "rms_norm", ((2, 8),), ("float32",), (2,), True)]
    assert weak_warnings(stats, "k", 3) == []


# --- the project's own kernels_ci tests ---------------------------------------------------

def test_kernels_ci_tests_run_against_the_variant(tmp_path):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_k.py").write_text(
        "import pytest\nimport mykernel\n\n\n@pytest.mark.kernels_ci\ndef test_one():\n    assert mykernel.ONE == 1\n\n\n"
        "@pytest.mark.kernels_ci\ndef test_two():\n    assert mykernel.ONE == 2\n\n\ndef test_unmarked():\n    raise AssertionError\n")
    variant = tmp_path / "build" / "torch213-cxx11-cpu-x86_64-linux"
    variant.mkdir(parents=True)
    (variant / "__init__.py").write_text("ONE = 1\n")
    result = run_project_tests(project, variant, variant.parent, "mykernel")
    assert (result.ran, result.failed, result.passed) == (2, 1, False)
    assert "test_two" in result.output
    (project / "tests" / "test_k.py").write_text("def test_unmarked():\n    pass\n")
    unmarked = run_project_tests(project, variant, variant.parent, "mykernel")  # no marker: every test runs
    assert (unmarked.ran, unmarked.failed) == (1, 0)
    (project / "tests" / "test_k.py").unlink()
    assert run_project_tests(project, variant, variant.parent, "mykernel") is None


# --- the case file --------------------------------------------------------------------

def _write_cases(root: Path, body: str) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "smoke_cases.py").write_text(body)
    return root


def test_case_file_contract_is_checked(tmp_path):
    root = _write_cases(tmp_path / "k", "def smoke_cases():\n    return [{'name': 'a', 'op': 'x'}]\n")
    with pytest.raises(SmokeError) as exc:
        smoke.load_cases(root / smoke.CASES_FILE)
    assert "no 'make'" in exc.value.message and exc.value.code == "smoke-cases-invalid"


def test_cases_for_other_devices_are_left_out_and_counted():
    called = []
    results = smoke.run_cases(_ops(scale=lambda out, x: called.append(1) or out.copy_(x * 2)),
                              [_scale_case(devices=("cuda",))], torch.device("cpu"), seeds=(0,))
    assert results == [] and called == []
    kept, left_out = smoke.for_device([_scale_case(devices=("cpu", "cuda")), _scale_case(devices=("cuda",))], "cpu")
    assert len(kept) == 1 and left_out == ["scale/4x33"]


def test_devices_must_be_a_tuple_of_names(tmp_path):
    root = _write_cases(tmp_path / "k", "def smoke_cases():\n    return [{'name': 'a', 'op': 'x', 'make': 0, "
                                        "'outputs': (0,), 'reference': 0, 'devices': 'cuda'}]\n")
    with pytest.raises(SmokeError) as exc:
        smoke.load_cases(root / smoke.CASES_FILE)
    assert "devices must be a tuple" in exc.value.message


def test_rmsnorm_has_cases_for_its_cuda_shared_memory_path():
    """rows_async takes over from 8 MiB of rows (rms_norm) and 32 MiB (fused)."""
    cuda_only = [c for c in smoke.load_cases(RMSNORM / smoke.CASES_FILE) if c.get("devices") == ("cuda",)]
    assert {c["op"] for c in cuda_only} == {"rms_norm", "fused_add_rms_norm"}
    assert any("4096x4096" in c["name"] and c["op"] == "fused_add_rms_norm" for c in cuda_only)


def test_case_file_that_raises_is_reported(tmp_path):
    root = _write_cases(tmp_path / "k", "def smoke_cases():\n    raise ValueError('bad')\n")
    with pytest.raises(SmokeError, match="ValueError: bad"):
        smoke.load_cases(root / smoke.CASES_FILE)


def test_rmsnorm_cases_cover_the_brief():
    cases = smoke.load_cases(RMSNORM / smoke.CASES_FILE)
    names = " ".join(c["name"] for c in cases)
    for needle in ("bf16", "fp16", "fp32", "/1x", "x7/", "x2048", "x4096", "x5120", "x8192", "row-strided",
                   "transposed", "misaligned", "0x4096", "eps="):
        assert needle in names or needle.replace("/1x", "x1/") in names, needle
    assert {c["op"] for c in cases} == {"rms_norm", "fused_add_rms_norm"}
    for op in ("rms_norm", "fused_add_rms_norm"):
        marked = [c for c in cases if c["op"] == op and {"opcheck", "compile"} <= set(c.get("checks", ()))]
        assert marked, op


def test_find_project_by_metadata_name(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    assert resolve_for_build(tmp_path, "rmsnorm").root.resolve() == RMSNORM.resolve()
    assert resolve_for_build(tmp_path, "no-such-kernel") is None


def test_missing_build_dir_is_a_user_error(tmp_path):
    with pytest.raises(CheckError) as exc:
        bundle_of(tmp_path / "nope")
    assert exc.value.code == "build-tree-invalid"


def test_the_workspace_binds_every_op_of_rmsnorm():
    bound = {op: b.family for op, b in resolve(RMSNORM).contracts}
    assert bound == {"rms_norm": "rms_norm", "fused_add_rms_norm": "fused_add_rms_norm"}


# --------------------------------------------------------------------------
# Real builds (CPU variant here). One good build per session; each planted
# flaw is a patched copy of the project built in a temporary directory
# (tests/test_smoke_support.py).

@pytest.fixture(scope="session")
def rmsnorm_cpu_build() -> Path:
    return builds.good_build()


def _failed(report) -> set[str]:
    return {r.name for r in report.failures}


@pytest.mark.slow
def test_good_cpu_build_passes_smoke(rmsnorm_cpu_build):
    report = smoke.run_smoke(bundle_of(rmsnorm_cpu_build), resolve(RMSNORM))
    assert report.passed, [f"{r.name} {r.check}: {r.message}" for r in report.failures][:10]
    assert {r.check for r in report.results} == {"values", "opcheck", "compile"}
    assert report.kernel == "rmsnorm" and report.device == "cpu"
    coverage = {c.op: c for c in report.coverage}
    for op in ("rms_norm", "fused_add_rms_norm"):
        c = coverage[op]
        assert (c.contract, c.how) == (op, "workspace") and c.contract_cases > 40 and c.project_cases > 30
        assert "1024x4096" in c.shapes and set(c.dtypes) == {"bfloat16", "float16", "float32"}
        assert len(c.seeds) == 3
    assert not report.warnings, [w.format() for w in report.warnings]
    assert not any(d.delegates for d in report.delegation)


@pytest.mark.slow
def test_smoke_without_a_project_tests_through_inferred_contracts(rmsnorm_cpu_build):
    report = smoke.run_smoke(bundle_of(rmsnorm_cpu_build), None, trials=1, op_checks=False)
    assert report.passed and report.project == "(no project)"
    assert {(c.op, c.contract, c.how, c.project_cases) for c in report.coverage} == {
        ("rms_norm", "rms_norm", "inferred", 0), ("fused_add_rms_norm", "fused_add_rms_norm", "inferred", 0)}


@pytest.mark.slow
def test_planted_skip_tail_is_caught():
    report = smoke.run_smoke(bundle_of(builds.planted_build("skip-tail")), resolve(RMSNORM), trials=1,
                             op_checks=False)
    failed = _failed(report)
    # Hidden sizes that are a multiple of every vector width pass; the others fail.
    assert any("/3x7/" in n for n in failed)
    assert not any("/4x2048/" in n for n in failed)


@pytest.mark.slow
def test_ignored_weight_with_weak_project_cases_is_caught_by_the_contract():
    build = builds.planted_build("ignore-weight", builds.WEAK_CASES)
    project = resolve(builds.planted_root("ignore-weight", builds.WEAK_CASES))
    loaded = smoke.load_variant(build)
    # The project's own case alone is fooled (a weight of ones) ...
    own = smoke.run_cases(loaded.module, smoke.load_cases(project.smoke_cases), torch.device("cpu"), seeds=(1, 2))
    assert own and all(r.passed for r in own)
    # ... the contract is not, and the weak case is reported.
    report = smoke.run_smoke(bundle_of(build), project, trials=1, op_checks=False)
    assert not report.passed
    assert all(r.contract == "rms_norm" for r in report.failures if r.op == "rms_norm")
    assert any(r.op == "rms_norm" for r in report.failures)
    codes = {w.code for w in report.warnings}
    assert {"weak-case-constant-input", "weak-case-one-shape", "weak-case-one-dtype",
            "weak-case-aligned-only"} <= codes
    assert {c.op: c.how for c in report.coverage}["rms_norm"] == "inferred"


@pytest.mark.slow
@pytest.mark.parametrize("plant,expect", [
    ("nan-only", "poison: "),
    ("stale-address", "call 2 (new data at the same addresses"),
    ("mutates-input", "was changed by the call"),
    ("shortcut-large", "relative error"),
])
def test_planted_flaw_is_caught(plant, expect):
    report = smoke.run_smoke(bundle_of(builds.planted_build(plant)), resolve(RMSNORM), trials=1, op_checks=False)
    assert not report.passed
    failed = [r for r in report.failures if r.op == "rms_norm"]
    assert failed and all(expect in r.message for r in failed), [r.message for r in failed][:3]
    assert not any(r.op == "fused_add_rms_norm" for r in report.failures), "only rms_norm has the flaw"
    if plant == "shortcut-large":  # only the benchmark-sized cases (>= 4M elements), on the CPU
        sizes = {r.name.split("/")[2] for r in failed}
        assert sizes and all(math.prod(int(d) for d in s.split("x")) >= 4 << 20 for s in sizes), sizes


@pytest.mark.slow
def test_planted_delegation_passes_with_a_warning():
    report = smoke.run_smoke(bundle_of(builds.planted_build("delegates")), resolve(RMSNORM), trials=1,
                             op_checks=False)
    assert report.passed, [r.message for r in report.failures][:3]
    (d,) = [d for d in report.delegation if d.op == "rms_norm"]
    assert d.delegates and any("rms_norm" in a or "rsqrt" in a for a in d.aten)
    assert any(w.code == "op-delegates-to-pytorch" and w.message.startswith("rms_norm") for w in report.warnings)


@pytest.mark.slow
def test_smoke_cli_json_records_the_seed_and_replays_it(rmsnorm_cpu_build):
    def run(*extra):
        proc = subprocess.run([sys.executable, "-m", "pipeline", "smoke", str(rmsnorm_cpu_build), "--json",
                               "--seeds", "1", "--no-op-checks", *extra], cwd=REPO, capture_output=True, text=True,
                              timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)

    first = run()
    assert first["passed"] and first["kernel"] == "rmsnorm" and first["counts"]["failed"] == 0
    assert {c["op"]: c["how"] for c in first["coverage"]} == {"rms_norm": "workspace", "fused_add_rms_norm": "workspace"}
    again = run("--seed", str(first["seed"]))
    assert again["seeds"] == first["seeds"]
    assert [r["error"] for r in again["results"]] == [r["error"] for r in first["results"]]


@pytest.mark.slow
def test_smoke_cli_fails_on_planted_bug():
    proc = subprocess.run([sys.executable, "-m", "pipeline", "smoke", str(builds.planted_build("ignore-weight")),
                           "--kernel", str(RMSNORM), "--seeds", "1", "--no-op-checks"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 7
    assert "FAIL" in proc.stdout and "seed " in proc.stdout


def test_project_tests_of_an_op_or_gpu_this_host_lacks_are_not_failures(tmp_path):
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_k.py").write_text(
        "import pytest\nimport mykernel\n\n\n@pytest.mark.kernels_ci\ndef test_cuda_only():\n"
        "    raise NotImplementedError(\"Could not run '_mykernel_cpu_1::gelu' with arguments from the 'CPU' backend.\")\n\n\n"
        "@pytest.mark.kernels_ci\ndef test_needs_a_gpu():\n    raise AssertionError('Torch not compiled with CUDA enabled')\n\n\n"
        "@pytest.mark.kernels_ci\ndef test_really_wrong():\n"
        "    raise NotImplementedError(\"Could not run '_mykernel_cpu_1::silu' with arguments from the 'CPU' backend.\")\n")
    variant = tmp_path / "build" / "torch213-cxx11-cpu-x86_64-linux"
    variant.mkdir(parents=True)
    (variant / "__init__.py").write_text("ONE = 1\n")
    result = run_project_tests(project, variant, variant.parent, "mykernel", unavailable=("gelu",))
    # gelu has no CPU kernel and the GPU test needs a GPU: not failures; silu is available, so its error is one
    assert (result.ran, result.failed, result.unavailable) == (1, 1, 2)
