"""Our four kernels against the contracts build.toml binds their ops to, on
the CPU: every op covered, every contract case passed, no false alarm."""

from __future__ import annotations

from pathlib import Path

import pytest

import test_smoke_support as builds
from values import bundle_of
from pipeline.smoke import run_smoke
from pipeline.workspace import resolve

REPO = Path(__file__).resolve().parents[2]
KERNELS = ("rmsnorm", "geglu", "rope", "adaln")
# Refusing non-contiguous or misaligned inputs with an error is allowed (geglu, rope
# and adaln's CPU ops ask for contiguous tensors): reported, not failed.
ALLOWED_WARNINGS = {"contract-case-declined"}


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNELS)
def test_our_kernel_passes_every_bound_contract_on_cpu(name):
    kernel = resolve(REPO / "kernels-src" / name)
    report = run_smoke(bundle_of(builds.kernel_build(name)), kernel, trials=2, op_checks=False)
    assert report.passed, [f"{r.name} seed {r.seed}: {r.message}" for r in report.failures][:10]
    bound = dict(kernel.contracts)
    coverage = {c.op: c for c in report.coverage}
    assert set(coverage) == set(bound), "every registered op is bound, and every binding names an op"
    for op, binding in bound.items():
        c = coverage[op]
        assert (c.contract, c.how) == (binding.family, "workspace")
        assert c.contract_cases >= 30 and set(c.dtypes) == {"bfloat16", "float16", "float32"}, c
    assert {w.code for w in report.warnings} <= ALLOWED_WARNINGS, [w.format() for w in report.warnings]
    assert not any(d.delegates for d in report.delegation)
    contract_results = [r for r in report.results if r.contract is not None]
    assert contract_results and all(r.passed for r in contract_results)
