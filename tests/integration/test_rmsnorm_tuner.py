"""rmsnorm's standalone tuner and its knobs still compile (no GPU needed, only nvcc).

The tuner (kernels-src/rmsnorm/benchmarks/tune/) and the compile-time knobs of
rmsnorm_kernels.cuh are how every figure in benchmarks/NOTES.md was made; they
run only on a GPU machine, so nothing else here would notice if an edit to the
kernels broke them. Each knob set is compiled to an sm_90 object, as
scripts/gpu/diag_h200.sh's "tune" phase does on the device.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RMSNORM = REPO / "kernels-src" / "rmsnorm"
NVCC = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc"

# The knob sets NOTES.md cites (version 3), and the default.
KNOB_SETS = {
    "shipped": [],
    "stores-cs": ["-DRMSNORM_STORE_CS=1"],
    "stores-evict-last": ["-DRMSNORM_STORE_CS=2"],
    "cp-evict-first": ["-DRMSNORM_CP_POLICY=1"],
    "cp-l2-prefetch": ["-DRMSNORM_CP_L2PF=256"],
    "two-rows-per-block": ["-DRMSNORM_ASYNC_MAX_THREADS=256"],
}

# Only nvcc: the tuner includes no torch header.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (NVCC.exists() or shutil.which("nvcc")), reason="needs nvcc ($CUDA_HOME/bin/nvcc)"),
]


@pytest.mark.parametrize("knobs", list(KNOB_SETS.values()), ids=list(KNOB_SETS))
def test_tuner_compiles(tmp_path, knobs):
    nvcc = str(NVCC) if NVCC.exists() else shutil.which("nvcc")
    out = tmp_path / "tune.o"
    proc = subprocess.run(
        [nvcc, "-O3", "-std=c++17", "-gencode=arch=compute_90,code=sm_90", "-c", f"-I{RMSNORM / 'rmsnorm_cuda'}",
         *knobs, str(RMSNORM / "benchmarks" / "tune" / "tune_rmsnorm.cu"), "-o", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out.stat().st_size > 100_000  # every kernel instantiation is in it
