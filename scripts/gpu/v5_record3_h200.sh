#!/usr/bin/env bash
# Issue 19, after v5_record_h200.sh and v5_explore_h200.sh (fifth session, calls 1-2): rmsnorm with
# rows_reg's one-step form only where it fits the register cap (bf16 at 4 and 8 vectors per
# thread spilled: reg_one_step_fits) and float32's launch rule from the rmsnorm-fp32 sweep
# (no rows_async from 512 vectors, no cluster for rows of up to 4096 vectors from 2048 rows),
# built, smoked with 1 seed and recorded in bf16 and float32 (float16's launches are unchanged:
# its record stays call 1's). ~300 s, for the session's last device time.
# Device tool: carry [".whl"], command `bash scripts/gpu/v5_record3_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-300} KERNELS="rmsnorm" SEEDS=1 DTYPES="float32" TESTS=0 \
  bash scripts/gpu/run_all_h200.sh
