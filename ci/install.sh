#!/usr/bin/env bash
# Install the pipeline package and a torch build suited to the job.
#
#   ci/install.sh cpu                  # plan/build/gather/sign/publish: the torch pinned in ci/cpu-torch.txt
#   ci/install.sh cpu "" 2.13          # verify on a CPU runner: torch 2.13 (the pin when it is 2.13), CPU build
#   ci/install.sh cuda 13.0 2.13       # GPU jobs: torch 2.13 built for CUDA 13.0 (index cu130)
#   ci/install.sh cuda 13 2.13         # a bare major means its .0: index cu130
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
here=$(dirname "$0")

# torch==X.Y.Z from ci/cpu-torch.txt (the one uncommented line).
pinned=$(grep -E '^torch==[0-9]+\.[0-9]+\.[0-9]+$' "$here/cpu-torch.txt") || {
  echo "ci/install.sh: $here/cpu-torch.txt has no torch==X.Y.Z line" >&2
  exit 2
}
if [ -z "$torch" ]; then
  spec=$pinned
elif [ "${pinned#torch=="$torch".}" != "$pinned" ]; then
  spec=$pinned  # the pin is of the asked minor: take it exactly
elif [[ "$torch" =~ ^[0-9]+\.[0-9]+$ ]]; then
  spec="torch==${torch}.*"
else
  echo "ci/install.sh: torch version must be MAJOR.MINOR, not '$torch'" >&2
  exit 2
fi

# PyTorch's wheel index for a CUDA version: 12.6 -> cu126, 13.0 and 13 -> cu130.
cuda_index() {
  local version=$1
  if [[ "$version" =~ ^[0-9]+$ ]]; then
    version="$version.0"
  fi
  if ! [[ "$version" =~ ^([0-9]+)\.([0-9]+)$ ]]; then
    echo "ci/install.sh: CUDA version must be MAJOR or MAJOR.MINOR, not '$1'" >&2
    return 2
  fi
  printf 'cu%s%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"
}

case "$backend" in
  cpu)
    "${pip[@]}" "$spec" --index-url https://download.pytorch.org/whl/cpu
    ;;
  cuda)
    if [ -z "$cuda" ] || [ -z "$torch" ]; then
      echo "usage: ci/install.sh cuda CUDA_VERSION TORCH_VERSION" >&2
      exit 2
    fi
    index=$(cuda_index "$cuda")
    "${pip[@]}" "$spec" --index-url "https://download.pytorch.org/whl/$index"
    ;;
  *)
    echo "ci/install.sh: no torch install recipe for backend '$backend' (cpu or cuda)" >&2
    exit 2
    ;;
esac
"${pip[@]}" -e .
"$python" -m pipeline --version
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
