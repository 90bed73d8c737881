#!/usr/bin/env bash
# Issue 19's next experiment, prepared in 2026-12-02's session after its device time ran out
# (one call): rmsnorm's -DRMSNORM_BF16_REG56=1 (bf16's one-step rows_reg at 4 vectors per
# thread capped at 56 registers instead of 64, as float16's twin; rmsnorm NOTES.md "Version 6")
# built beside the shipped build, smoked with 2 seeds before any timing, then benched after the
# shipped build in bf16 in the same call and compared (prediction: 2048x7168 18.9 -> ~17.1 us,
# 4096x8192 34.7 -> ~33.7, 8192x7168 58.9 -> ~57.3, 1024x2048 6.8 -> ~6.7; nothing else moves);
# then the model-level check (model_h200.sh) on the shipped rmsnorm, whose record
# (model-h200.json) is of the fifth session's older source. ~420 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v7_explore_h200.sh`. To ship it: set its
# default to 1, then record as v6_record_h200.sh does (KERNELS=rmsnorm; bf16 only: float16 and
# float32 kernels are unchanged), and update KNOWN_MISSES, NOTES, the card and RUNS.md.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants rmsnorm:rmsnorm-r56:r56:bfloat16:-DRMSNORM_BF16_REG56=1
LAST="$VARIANT_BENCHES"'bash scripts/gpu/model_h200.sh > /dev/null 2>&1; echo "model rc=$?"; tail -n 5 "$RES/model-h200.log"'
MAX_JOBS=8 DEADLINE=${DEADLINE:-450} KERNELS="rmsnorm" SMOKE="" BENCH="rmsnorm" TESTS=0 \
  EXTRA="$VARIANT_SMOKES" EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
