"""The CUDA variant of rmsnorm, compiled and linked for real with a CUDA build of torch.

This machine's main interpreter has the CPU torch, so the build runs in a
second interpreter with a CUDA torch: $PIPELINE_CUDA_PYTHON, else
/work/venv-cu130/bin/python when it exists (a venv with torch==2.14.1, the
CUDA 13.0 build, plus kernels and ninja; see the README). nvcc comes from
$CUDA_HOME (default /usr/local/cuda). No GPU is needed: the library is
imported through kernels.get_local_kernel and its ops must be registered.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RMSNORM = REPO / "kernels-src" / "rmsnorm"
DEFAULT_CUDA_PYTHON = Path("/work/venv-cu130/bin/python")


def cuda_python() -> str | None:
    candidate = os.environ.get("PIPELINE_CUDA_PYTHON") or (str(DEFAULT_CUDA_PYTHON)
                                                            if DEFAULT_CUDA_PYTHON.exists() else None)
    return candidate if candidate and Path(candidate).exists() else None


def _env() -> dict[str, str]:
    # The default object cache (~/.cache/kernel-pipeline): a rerun on the same
    # checkout reuses the compiled library; a fresh checkout compiles.
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": str(REPO),
        "CUDA_HOME": os.environ.get("CUDA_HOME", "/usr/local/cuda"),
        "MAX_JOBS": os.environ.get("MAX_JOBS", "2"),
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return env


@pytest.mark.cuda_build(own_interpreter=True)
@pytest.mark.slow
def test_rmsnorm_cuda_variant_compiles_links_and_registers_its_ops(tmp_path):
    python = cuda_python()
    if python is None:
        pytest.skip("cuda_build: no CUDA torch interpreter (set PIPELINE_CUDA_PYTHON)")
    if not RMSNORM.is_dir():
        pytest.skip("kernels-src/rmsnorm is not there yet")
    env = _env()
    if not Path(env["CUDA_HOME"], "bin", "nvcc").exists():
        pytest.skip(f"cuda_build: no nvcc in CUDA_HOME={env['CUDA_HOME']}")
    host = subprocess.run([python, "-c", "from pipeline.matrix import host_variant; print(host_variant().name)"],
                          capture_output=True, text=True, env=env, check=True).stdout.strip()
    if "-cu" not in host:
        pytest.skip(f"cuda_build: {python} has no CUDA torch ({host})")

    out = tmp_path / "build"
    done = subprocess.run([python, "-m", "pipeline", "build", str(RMSNORM), "--backend", "local", "--variant", host,
                           "--out", str(out), "--json"], capture_output=True, text=True, env=env, timeout=3000)
    assert done.returncode == 0, done.stderr[-6000:]
    (built,) = json.loads(done.stdout)["kernels"][0]["variants"]
    assert built["variant"] == host and built["kernel_id"].startswith("_rmsnorm_cuda_")

    meta = json.loads((out / host / "metadata.json").read_text())
    assert meta["backend"]["type"] == "cuda" and meta["backend"]["archs"]
    assert meta["provenance"]["toolchain"]["nvcc"].startswith(host.split("-cu")[1][:2])

    probe = (
        "import json, sys, torch, kernels\n"
        "from pathlib import Path\n"
        "m = kernels.get_local_kernel(Path(sys.argv[1]))\n"
        "ops = sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith(m.__name__ + '::'))\n"
        "print(json.dumps({'module': m.__name__, 'ops': ops, 'cuda': torch.cuda.is_available()}))\n"
    )
    loaded = subprocess.run([python, "-c", probe, str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert loaded.returncode == 0, loaded.stderr[-4000:]
    info = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert info["module"] == built["kernel_id"]
    assert info["ops"], "the library registered no ops in its namespace"

    bundle = pytest.importorskip("pipeline.bundle")  # the check needs no CUDA: this interpreter
    report = bundle.check_bundle(out)
    assert report.ok, [p.format() for p in report.problems]
