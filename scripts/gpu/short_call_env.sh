# Sourced by the short rmsnorm calls (v42_h200.sh, v43_h200.sh, v44_h200.sh, v45_h200.sh): $OUT, a deadline clock `left`
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
# rmsnorm built from the working tree into /tmp/build-rmsnorm, then smoked (SEEDS, default 1) within
# the deadline into $OUT/$1: the first steps of v43 and v45.
build_and_smoke_rmsnorm() {
  python3 -m pipeline build kernels-src/rmsnorm --backend local --out /tmp/build-rmsnorm > "$OUT/build.log" 2>&1
  echo "build rc=$? $(( $(date +%s) - START )) s"; tail -1 "$OUT/build.log"
  timeout "$(left)" python3 -m pipeline smoke /tmp/build-rmsnorm --kernel kernels-src/rmsnorm --seeds "${SEEDS:-1}" \
    --json > "$OUT/$1" 2> "$OUT/smoke.log"
  echo "smoke rc=$? $(( $(date +%s) - START )) s"; python3 scripts/gpu/smoke_summary.py "$OUT/$1"
}
