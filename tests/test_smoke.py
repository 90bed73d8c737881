"""pipeline.smoke: the harness's checks on fake ops (fast), then real CPU
builds of rmsnorm — the good one passes, planted bugs are caught (slow)."""

from __future__ import annotations

import json
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
from pipeline.workspace import resolve, resolve_for_build

REPO = Path(__file__).resolve().parents[1]
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


def test_unwritten_element_fails():
    def skips_last(out, x):
        out.view(-1)[:-1] = (x * 2).reshape(-1)[:-1]

    results = _run(skips_last)
    assert not any(r.passed for r in results)
    assert "not written" in results[0].message


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


def test_inputs_are_fresh_per_seed():
    seen = []

    def record(out, x):
        seen.append(x.clone())
        out.copy_(x * 2)

    _run(record, seeds=(0, 1, 2))
    assert len(seen) == 3 and not torch.equal(seen[0], seen[1]) and not torch.equal(seen[1], seen[2])


def test_missing_op_fails():
    results = smoke.run_cases(_ops(), [_scale_case()], torch.device("cpu"), seeds=(0,))
    assert not results[0].passed and "no op" in results[0].message


def test_tolerance_per_dtype():
    assert smoke.TOLERANCE["float32"] == 1e-5
    assert smoke.TOLERANCE["float16"] == 1e-3
    assert smoke.TOLERANCE["bfloat16"] == 8e-3
    # A case may tighten its bound, never loosen it.
    assert smoke._bound(torch.bfloat16, {"tolerance": 1.0}) == 8e-3
    assert smoke._bound(torch.bfloat16, {"tolerance": 1e-4}) == 1e-4


def test_empty_output_passes_when_the_op_accepts_it():
    def make(device, gen):
        return torch.empty(0, 5), torch.randn(0, 5, generator=gen)

    case = {"name": "empty", "op": "scale", "make": make, "outputs": (0,),
            "reference": lambda out, x: (x.double() * 2,)}
    assert all(r.passed for r in _run(lambda out, x: out.copy_(x * 2), case))


def test_report_json_and_passed():
    results = tuple(_run(lambda out, x: out.copy_(x * 2)))
    report = smoke.SmokeReport("k", "_k_cpu_1", "v", "cpu", "p", results)
    data = report.to_json()
    assert data["passed"] is True and data["counts"] == {"total": 2, "failed": 0}
    json.dumps(data)
    assert smoke.SmokeReport("k", "_k", "v", "cpu", "p", ()).passed is False


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


def test_smoke_without_a_kernel_names_the_option(rmsnorm_cpu_build):
    with pytest.raises(SmokeError) as exc:
        smoke.run_smoke(bundle_of(rmsnorm_cpu_build), None)
    assert exc.value.code == "kernel-not-found" and "--kernel PATH" in exc.value.hint


def test_missing_build_dir_is_a_user_error(tmp_path):
    with pytest.raises(CheckError) as exc:
        bundle_of(tmp_path / "nope")
    assert exc.value.code == "build-tree-invalid"


# --------------------------------------------------------------------------
# Real builds (CPU variant here). One good build per session; each planted
# bug is a patched copy of the project built in a temporary directory
# (tests/test_smoke_support.py).

@pytest.fixture(scope="session")
def rmsnorm_cpu_build() -> Path:
    return builds.good_build()


@pytest.fixture(scope="session")
def planted_builds() -> dict[str, Path]:
    return {name: builds.planted_build(name) for name in builds.PLANTS}


@pytest.mark.slow
def test_good_cpu_build_passes_smoke(rmsnorm_cpu_build):
    report = smoke.run_smoke(bundle_of(rmsnorm_cpu_build), resolve(RMSNORM))
    assert report.passed, [f"{r.name} {r.check}: {r.message}" for r in report.failures][:10]
    checks = {r.check for r in report.results}
    assert checks == {"values", "opcheck", "compile"}
    assert report.kernel == "rmsnorm" and report.device == "cpu"


@pytest.mark.slow
def test_planted_skip_tail_is_caught(planted_builds):
    report = smoke.run_smoke(bundle_of(planted_builds["skip-tail"]), resolve(RMSNORM), op_checks=False)
    assert not report.passed
    failed = {r.name for r in report.failures}
    # Hidden sizes that are a multiple of every vector width pass; the others fail.
    assert any("/3x7/" in n for n in failed)
    assert not any("/4x2048/" in n for n in failed)


@pytest.mark.slow
def test_planted_ignored_weight_is_caught(planted_builds):
    report = smoke.run_smoke(bundle_of(planted_builds["ignore-weight"]), resolve(RMSNORM), op_checks=False)
    assert not report.passed
    failed = {r.name for r in report.failures}
    cpu_cases, _ = smoke.for_device(smoke.load_cases(RMSNORM / smoke.CASES_FILE), "cpu")
    nonempty = {c["name"] for c in cpu_cases if "/0x" not in c["name"] and "x0x" not in c["name"]}
    assert nonempty <= failed


@pytest.mark.slow
def test_smoke_cli_json(rmsnorm_cpu_build):
    proc = subprocess.run([sys.executable, "-m", "pipeline", "smoke", str(rmsnorm_cpu_build), "--json", "--seeds", "1",
                           "--no-op-checks"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["passed"] and data["kernel"] == "rmsnorm" and data["counts"]["failed"] == 0


@pytest.mark.slow
def test_smoke_cli_fails_on_planted_bug(planted_builds):
    proc = subprocess.run([sys.executable, "-m", "pipeline", "smoke", str(planted_builds["ignore-weight"]),
                           "--kernel", str(RMSNORM), "--seeds", "1", "--no-op-checks"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 7
    assert "FAIL" in proc.stdout
