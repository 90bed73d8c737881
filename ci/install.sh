#!/usr/bin/env bash
# Install the pipeline package and a torch build suited to the job.
#
#   ci/install.sh cpu                  # plan/build/gather/publish: any CPU torch
#   ci/install.sh cpu "" 2.13          # verify on a CPU runner: torch 2.13, CPU build
#   ci/install.sh cuda 13.0 2.13       # GPU jobs: torch 2.13 built for CUDA 13.0
#
# The CPU wheel is installed first because the default torch wheel from PyPI
# drags in several GB of CUDA libraries that jobs without a GPU never use.
# Where a kernel is loaded (smoke, bench, verify), torch's minor version and
# CUDA major must match a built variant or kernels finds nothing to load: the
# rows from ci/plan.py carry both.
set -euo pipefail

backend=${1:-cpu}
cuda=${2:-}
torch=${3:-}
python=${PYTHON:-python}
pip=("$python" -m pip install --disable-pip-version-check --quiet)
spec=torch${torch:+==${torch}.*}

case "$backend" in
  cpu)
    "${pip[@]}" "$spec" --index-url https://download.pytorch.org/whl/cpu
    ;;
  cuda)
    if [ -z "$cuda" ] || [ -z "$torch" ]; then
      echo "usage: ci/install.sh cuda CUDA_VERSION TORCH_VERSION" >&2
      exit 2
    fi
    "${pip[@]}" "$spec" --index-url "https://download.pytorch.org/whl/cu${cuda//./}"
    ;;
  *)
    echo "ci/install.sh: no torch install recipe for backend '$backend' (cpu or cuda)" >&2
    exit 2
    ;;
esac
"${pip[@]}" -e .
"$python" -m pipeline --version
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
