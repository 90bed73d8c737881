# Sourced by the short rmsnorm calls (v42_h200.sh, v43_h200.sh): $OUT, a deadline clock `left`
# (seconds until DEADLINE, counted from here), the carried wheels on PYTHONPATH, sm_90 only.
# Usage: DEFAULT_DEADLINE=N; source scripts/gpu/short_call_env.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
START=$(date +%s); DEADLINE=${DEADLINE:-${DEFAULT_DEADLINE:-240}}
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/rmsnorm/build.toml
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
