"""The supervised worker: a kernel that segfaults, aborts, hangs or answers wrongly on
some inputs fails those cases, by name and category, and the run goes on.

The kernel is tests/fixtures/planted (noarch: nothing to compile), whose flaw
PLANTED_FLAW chooses at call time; the worker inherits the variable."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from values import bundle_of
from pipeline.smoke import run_smoke
from pipeline.smoke.supervisor import Exit, Worker, WorkerGone, signal_name
from pipeline.workspace import resolve

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "planted"
REPO = Path(__file__).resolve().parents[2]
# Enough cases to show the run going on around a flaw, few enough to stay quick.
FP32 = ("relu:relu/fp32/*",)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """(project, build tree) of the planted kernel, a git repository built once."""
    root = tmp_path_factory.mktemp("planted")
    project = root / "planted"
    shutil.copytree(FIXTURE, project)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "planted"], cwd=project, check=True)
    out = root / "build"
    subprocess.run([sys.executable, "-m", "pipeline", "build", str(project), "--backend", "local", "--out", str(out)],
                   cwd=REPO, check=True, capture_output=True)
    return project, out


def _smoke(planted, monkeypatch, flaw: str, **kw):
    project, out = planted
    monkeypatch.setenv("PLANTED_FLAW", flaw)
    return run_smoke(bundle_of(out), resolve(project), seeds=(11, 12), op_checks=False, **kw)


def _failed(report) -> dict:
    return {r.name: r for r in report.failures}


def test_a_correct_kernel_passes_in_the_worker(planted, monkeypatch):
    report = _smoke(planted, monkeypatch, "", only=FP32)
    assert report.passed, report.failures
    assert report.workers == 1
    names = {r.name for r in report.results}
    assert len(names) > 15 and all(n.startswith("relu:relu/fp32/") for n in names)
    assert len(report.results) == 2 * len(names)  # every case, 2 seeds


def test_a_segfault_fails_its_cases_and_the_rest_run(planted, monkeypatch):
    report = _smoke(planted, monkeypatch, "segv-misaligned", only=FP32)
    crashed = [r for r in report.failures if r.kind == "crash"]
    assert crashed and all("SIGSEGV" in r.message for r in crashed)
    assert all(r.category in ("misaligned", "row-strided") for r in crashed)
    assert "--seed" in crashed[0].message and crashed[0].name in crashed[0].message  # how to replay it
    ran_after = [r for r in report.results if r.passed and r.category == "empty"]  # the last cases
    assert ran_after, "the cases after the crash must still run"
    assert report.workers == 1 + len(crashed)
    assert report.failures_by_category()["misaligned"]["crash"] >= 1
    assert not report.passed


def test_an_abort_is_a_crash_of_its_case(planted, monkeypatch):
    report = _smoke(planted, monkeypatch, "abort-empty", only=FP32)
    crashed = _failed(report)
    empty = {r.name for r in report.results if r.category == "empty"}
    assert len(empty) == 2 and set(crashed) == empty  # the empty cases, whatever their knobs
    assert all("SIGABRT" in r.message and r.kind == "crash" for r in crashed.values())
    assert sum(r.passed for r in report.results) == 2 * (len({r.name for r in report.results}) - 2)


def test_an_endless_loop_times_out_within_the_timeout(planted, monkeypatch):
    start = time.monotonic()
    report = _smoke(planted, monkeypatch, "hang-4097", only=("relu:relu/fp32/*4097*", "relu:relu/fp32/3x7/*"),
                    timeout_s=3)
    took = time.monotonic() - start
    hung = {r.name: r for r in report.failures}
    assert len(hung) >= 2 and set(hung) == {r.name for r in report.results if "4097" in r.name}
    assert all(r.kind == "timeout" and "no answer within 3 s" in r.message for r in hung.values())
    assert any(r.passed and "/3x7/" in r.name for r in report.results)  # the case after them still runs
    assert took < 30 * len(hung), f"{len(hung)} timeouts of 3 s took {took:.0f} s"


def test_a_wrong_answer_is_grouped_by_its_category(planted, monkeypatch):
    report = _smoke(planted, monkeypatch, "wrong-transposed", only=FP32)
    groups = report.failures_by_category()
    assert list(groups) == ["transposed"] and list(groups["transposed"]) == ["wrong"]
    assert groups["transposed"]["wrong"] % 2 == 0  # every seed of a failing case fails


def test_ops_without_a_kernel_for_the_device_are_not_available_not_failed(planted, monkeypatch):
    report = _smoke(planted, monkeypatch, "", only=FP32)
    tiers = {c.op: c.tier for c in report.coverage}
    assert tiers == {"gelu_cuda_only": "unavailable", "relu": "contract", "twice": "untested"}  # --only: no tests
    assert report.unavailable == ("gelu_cuda_only",)
    assert report.to_json()["not_available"] == {"device": "cpu", "ops": ["gelu_cuda_only"]}


def test_an_op_only_the_projects_tests_call_is_tested_by_them(planted, monkeypatch):
    project, out = planted
    monkeypatch.setenv("PLANTED_FLAW", "")
    report = run_smoke(bundle_of(out), resolve(project), seeds=(1,), op_checks=False)
    twice = next(c for c in report.coverage if c.op == "twice")
    assert (twice.tier, twice.project_tests) == ("project-tests", 1)
    assert report.passed and report.untested == ()
    monkeypatch.setenv("PLANTED_FLAW", "twice-wrong")
    wrong = run_smoke(bundle_of(out), resolve(project), seeds=(1,), op_checks=False, only=("relu:relu/fp32/7/*",))
    assert wrong.project_tests is None  # --only runs the named cases alone
    full = run_smoke(bundle_of(out), resolve(project), seeds=(1,), op_checks=False)
    assert full.project_tests.failed == 1 and not full.passed
    assert next(c for c in full.coverage if c.op == "twice").tier == "untested"


def test_the_cli_reports_a_crash_with_json_and_exit_7(planted):
    project, out = planted
    proc = subprocess.run([sys.executable, "-m", "pipeline", "smoke", str(out), "--kernel", str(project), "--json",
                           "--seeds", "1", "--no-op-checks", "--only", "relu:relu/fp32/*"],
                          cwd=REPO, capture_output=True, text=True, env={**_env(), "PLANTED_FLAW": "segv-misaligned"})
    assert proc.returncode == 7, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert data["failures_by_category"]["misaligned"]["crash"] >= 1
    assert "Traceback" not in proc.stderr


def _env() -> dict:
    import os

    return dict(os.environ)


def test_signal_names():
    assert signal_name(-11) == "SIGSEGV (signal 11)"
    assert signal_name(139) == "SIGSEGV (signal 11)"
    assert signal_name(3) == "exit code 3"
    assert Exit("crash", "SIGABRT (signal 6)", "Fatal Python error: Aborted").describe() == \
        "SIGABRT (signal 6); it wrote: Fatal Python error: Aborted"


def test_a_worker_answers_an_unknown_request_and_misses_no_deadline():
    with Worker() as worker:
        worker.request("no.such.verb")
        kind, failure = worker.receive(60)
        assert kind == "failed" and "no.such.verb" in failure.message
        worker.request("smoke.case", 0)  # before smoke.load: refused, the worker lives on
        assert worker.receive(60)[0] == "failed"
        assert worker.alive
    with pytest.raises(WorkerGone) as gone:
        w = Worker()
        w.start()
        try:
            w.receive(0.5)  # nothing asked, nothing answered
        finally:
            w.stop()
    assert gone.value.exit.kind == "timeout"
