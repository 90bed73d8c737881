"""The device scripts (scripts/gpu) are only run on a lent GPU, where a typo costs a call:
every shell script parses, and every sweep names real bench cases with well-formed configurations."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from pipeline import bench

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "scripts" / "gpu"
FIELDS = {"RMSNORM_CONFIG": 6, "ADALN_CONFIG": 3, "GEGLU_CONFIG": 3}


@pytest.mark.parametrize("script", sorted(GPU.glob("*.sh")), ids=lambda p: p.name)
def test_device_script_parses(script):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _sweeps():
    spec = importlib.util.spec_from_file_location("gpu_sweep", GPU / "sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(_sweeps().SWEEPS))
def test_sweep_names_real_cases(name):
    module = _sweeps()
    variable, plan = module.SWEEPS[name]
    project = module.project_of(name)
    cases = {c["name"] for c in bench.load_cases(REPO / "kernels-src" / project, module.SWEEP_DTYPES.get(name))}
    assert set(plan) <= cases, sorted(set(plan) - cases)
    for configs in plan.values():
        for config in configs:
            fields = config.split(",")
            assert len(fields) == FIELDS[variable] and all(f.lstrip("-").isdigit() for f in fields), config
