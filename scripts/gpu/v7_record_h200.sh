#!/usr/bin/env bash
# Issue 19, after v7_explore_h200.sh (2026-12-02 later session, call 1: RMSNORM_BF16_REG56 smoked
# 586/586 and 2048x7168 19.12 -> 17.97 us): rmsnorm with RMSNORM_BF16_REG56 on, smoked with 2 seeds
# and recorded in bf16 (its float16 and float32 kernels are unchanged: same SASS); beside it, in the
# same call, -DRMSNORM_BF16_BITCVT=1 (bf16 unpacked with a shift and a mask per word: bf16 kernels
# up to 17 % fewer instructions, the one-step rows_reg<4> 512 against float16's 520; bit-identical
# results), smoked with 2 seeds at the same time as the shipped build and benched after it.
# Prediction: 2048x7168 17.97 -> ~17.3 us, the rest within 1 %. ~420 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v7_record_h200.sh`. To ship BITCVT: set
# its default to 1, then record bf16 again with the model-level check (v7_final_h200.sh).
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants rmsnorm:rmsnorm-bcv:bcv:bfloat16:-DRMSNORM_BF16_BITCVT=1
# The shipped build's smoke beside the variant's (both on the GPU at once; correctness only; the
# variants' bare `wait` also waits for it).
SMOKES='python3 -m pipeline smoke /tmp/build-rmsnorm --kernel kernels-src/rmsnorm --seeds 2 --json \
  > "$RES/rmsnorm-smoke.json" 2> "$RES/rmsnorm-smoke.log" &
'"$VARIANT_SMOKES"'
echo "smoke rmsnorm"; python3 scripts/gpu/smoke_summary.py "$RES/rmsnorm-smoke.json"'
MAX_JOBS=8 DEADLINE=${DEADLINE:-480} KERNELS="rmsnorm" SMOKE="" BENCH="rmsnorm" TESTS=0 \
  EXTRA="$SMOKES" EXTRA_LAST="$VARIANT_BENCHES" bash scripts/gpu/run_all_h200.sh
