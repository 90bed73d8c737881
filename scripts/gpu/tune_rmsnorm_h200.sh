#!/usr/bin/env bash
# The standalone launch-configuration sweep of rmsnorm on the H200 (see
# kernels-src/rmsnorm/benchmarks/NOTES.md): one tuner binary per compile-time
# knob setting, built in parallel, then run one after the other. Build, smoke
# and bench of the kernels themselves: scripts/gpu/run_all_h200.sh.
#
# From the repository root (device tool): bash scripts/gpu/tune_rmsnorm_h200.sh
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/tune-log.txt") 2>&1
KERNEL=kernels-src/rmsnorm
echo "== tune"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
# One binary per compile-time knob setting (W_IN_REGS_MAX MIN_BLOCKS), built in parallel.
KNOBS=${TUNE_KNOBS:-"4_0 0_0 4_2 0_2"}  # MIN_BLOCKS 0: left unset (the shipped default)
pids=()
for k in $KNOBS; do
  timeout 300 $NVCC -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I$KERNEL/rmsnorm_cuda \
    -DRMSNORM_W_IN_REGS_MAX=${k%_*} $( [ "${k#*_}" = 0 ] || echo -DRMSNORM_MIN_BLOCKS=${k#*_} ) $KERNEL/benchmarks/tune/tune_rmsnorm.cu -o /tmp/tune_$k &
  pids+=($!)
done
# Wait for these compiles only: a bare `wait` would also wait for the
# `tee` process substitution above, which never ends (a 10-minute hang, seen).
wait "${pids[@]}"
for k in $KNOBS; do timeout 180 stdbuf -oL /tmp/tune_$k >> "$OUT/tune.txt" 2>&1; done
grep -E "^(copy|BEST|FLUSH|knobs)|MISMATCH" "$OUT/tune.txt"
