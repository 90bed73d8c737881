#!/usr/bin/env bash
# 2026-12-02 (fourth session), call 4 (issue 19): rows_head's rule as revised from call 3's sweep
# (from 16384 rows; the deep shape only from 65536 rows: at 32768x128 bf16 it lost, 8.11 against
# 7.87 us), smoked (2 seeds: per-head cases 33333x64, 70001x64, 40000x128 and 66000x128
# row-strided, 2x90001x128, 70001x128 reach both shapes in every dtype) and recorded in bf16,
# float16 and float32 in this one call, so the committed records are of this rule.
# Prediction, from calls 1-3: bf16 16384x128 ~6.35 us, 32768x128 ~7.9 (ahead of torch.compile's
# 6.43 and 8.19 of call 2), float32 16384x128 ~7.8; the other cases as call 2 recorded them.
# ~480 s. Device tool: carry [".whl"], command `bash scripts/gpu/v16_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm" SMOKE="rmsnorm" BENCH="rmsnorm" TESTS=0 SEEDS=2 \
  DTYPES="float32 float16" DTYPE_BENCH="rmsnorm" bash scripts/gpu/run_all_h200.sh
