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
import shutil
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


TINY_ADD = REPO / "tests" / "fixtures" / "tiny-add"

# What kernel-builder's CMake build accepts and torch.utils.cpp_extension's flags
# refuse: a __device__ lambda (Torch's CMake config passes --expt-extended-lambda;
# kernels-community's rotary failed with 20 such errors) and __half arithmetic
# (cpp_extension defines -D__CUDA_NO_HALF_OPERATORS__, kernel-builder removes it).
EXTENDED_KERNEL = r'''
#include <cuda_fp16.h>

template <typename F>
__global__ void apply_kernel(float *out, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = f(i);
}

__device__ float through_half(float x) {
  __half h = __float2half(x);
  return __half2float(h * __float2half(1.0f) + __float2half(0.0f));
}

void add_scaled(at::Tensor &out, const at::Tensor &a, const at::Tensor &b, double alpha) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda() && out.is_cuda(), "add_scaled: CUDA tensors only");
  const int64_t n = a.numel();
  const float *pa = a.data_ptr<float>();
  const float *pb = b.data_ptr<float>();
  const float s = static_cast<float>(alpha);
  auto stream = c10::cuda::getCurrentCUDAStream();
  apply_kernel<<<(n + 255) / 256, 256, 0, stream>>>(
      out.data_ptr<float>(), n, [=] __device__(int64_t i) { return pa[i] + s * through_half(pb[i]); });
}
'''


@pytest.mark.cuda_build(own_interpreter=True)
@pytest.mark.slow
def test_cuda_sources_get_kernel_builders_flags_not_cpp_extensions(tmp_path):
    python = cuda_python()
    if python is None:
        pytest.skip("cuda_build: no CUDA torch interpreter (set PIPELINE_CUDA_PYTHON)")
    env = _env()
    if not Path(env["CUDA_HOME"], "bin", "nvcc").exists():
        pytest.skip(f"cuda_build: no nvcc in CUDA_HOME={env['CUDA_HOME']}")
    env["PIPELINE_CACHE_DIR"] = str(tmp_path / "cache")
    src = tmp_path / "tiny-add"
    shutil.copytree(TINY_ADD, src, ignore=shutil.ignore_patterns("build", "__pycache__"))
    cu = src / "tiny_add_cuda" / "add.cu"
    head = cu.read_text().split("__global__")[0]
    cu.write_text(head + EXTENDED_KERNEL)
    toml_path = src / "build.toml"
    toml_path.write_text(toml_path.read_text().replace('cuda-capabilities = ["8.0", "9.0"]',
                                                       'cuda-capabilities = ["9.0"]'))
    done = subprocess.run([python, "-m", "pipeline", "build", str(src), "--backend", "local", "--json"],
                          capture_output=True, text=True, env=env, timeout=3000)
    assert done.returncode == 0, done.stderr[-6000:]
    (built,) = json.loads(done.stdout)["kernels"][0]["variants"]
    assert "-cu" in built["variant"] and (src / "build" / built["variant"] / f"{built['kernel_id']}.abi3.so").is_file()
