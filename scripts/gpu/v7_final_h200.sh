#!/usr/bin/env bash
# Issue 19, after v7_record_h200.sh (2026-12-02 later session, call 2: RMSNORM_BF16_BITCVT smoked
# 586/586 and benched beside the shipped build: 2048x7168 17.98 -> 17.63 us, 1024x3072 8.00 -> 7.52,
# graph replay equal or faster at all 16 decode cases): rmsnorm with RMSNORM_BF16_BITCVT on, smoked
# with 2 seeds and recorded in bf16 (float16 and float32 SASS unchanged), then the model-level check
# (model_h200.sh, reusing this build). ~560 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v7_final_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
LAST='bash scripts/gpu/model_h200.sh > /dev/null 2>&1; echo "model rc=$?"; tail -n 8 "$RES/model-h200.log"'
MAX_JOBS=16 DEADLINE=${DEADLINE:-585} KERNELS="rmsnorm" SMOKE="rmsnorm" BENCH="rmsnorm" SEEDS=2 TESTS=0 \
  EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
