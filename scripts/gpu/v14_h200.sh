#!/usr/bin/env bash
# 2026-12-02 (fourth session), call 1 (issue 19): rmsnorm's per-head rows (hidden 64 and 128:
# Qwen3's q/k norms, 2-4 % behind torch.compile in bf16 and float32). rows_head (kind 9, in
# tuning builds only: rows_small with the row's vectors and the block's threads compile-time, up
# to 8 rows per row group, blocks of 64-256 threads; torch.compile's kernel there is 16 lanes x 8
# rows on 64 threads) swept against rows_small's runtime form and the rule (sets rmsnorm-head in
# bf16, rmsnorm-head32 in float32); then the per-head cases benched in the same tuning build,
# once by the rule and once with each dtype's fastest kind-9 configuration forced (sweep_pick.py),
# so torch.compile's figures come from the same call.
# Prediction: the 8-rows-per-group shapes 1-3 % faster than the rule at 262144x128 and 65536x128
# (34.35 -> ~33.4 us in bf16, level with torch.compile); the static twin of the rule's shape
# (9,1,0,0,2,256) level with it (same SASS length: 208 instructions).
# (As run, RMSNORM_HEAD defaulted to 0; rows_head ships by rule since call 4, v16_h200.sh.)
# ~350 s. Device tool: carry [".whl"], command `bash scripts/gpu/v14_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
LAST='head_bench() {  # head_bench TAG DTYPE [CONFIG]: the per-head cases, by the rule or CONFIG forced
  local tag=$1 dt=$2 cfg=${3:-}
  for only in x128 x64; do
    RMSNORM_CONFIG=$cfg python3 -m pipeline bench /tmp/build-tune-rmsnorm --kernel kernels-src/rmsnorm --reps 100 \
      --dtype "$dt" --only "$only" --out "$RES/head-$tag-$dt-$only.json" > /dev/null 2> "$RES/head-$tag-$dt-$only.log"
    echo "bench head $tag $dt $only [$cfg] rc=$?"
  done
}
for dt in bfloat16 float32; do
  sweep_set=rmsnorm-head; [ $dt = float32 ] && sweep_set=rmsnorm-head32
  best=$(python3 scripts/gpu/sweep_pick.py "$RES/sweep-$sweep_set.json" 9,)
  head_bench rule $dt
  [ -n "$best" ] && head_bench best $dt "$best"
  for only in x128 x64; do
    python3 scripts/gpu/compare_bench.py rule="$RES/head-rule-$dt-$only.json" best="$RES/head-best-$dt-$only.json"
  done
done'
MAX_JOBS=8 DEADLINE=${DEADLINE:-500} KERNELS="rmsnorm" SMOKE="" BENCH="" TESTS=0 TUNE="rmsnorm" \
  SWEEP="rmsnorm=rmsnorm-head,rmsnorm-head32" EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
