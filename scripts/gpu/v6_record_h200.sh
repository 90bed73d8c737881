#!/usr/bin/env bash
# Issue 19, after v6_explore_h200.sh (2026-12-02, call 1): rmsnorm with RMSNORM_OPAQUE_ROW and
# RMSNORM_WIDE_DECODE2 on and the 16-bit launch rule that the opaque row allows (reg_wide16: rows
# past 512 vectors in registers, 8 vectors per thread at 1025-2048 from 2048 rows), and adaln with
# ADALN_F32_LANES4 on: both smoked with 2 seeds, rmsnorm recorded in bf16 (2 samples), float16 and
# float32, adaln in float16 and float32 (its bf16 launches are unchanged); sweeps rmsnorm-w16 (bf16) and
# rmsnorm-w16h (float16) on a tuning build with the shipped defaults: the new rule timed beside the
# old choice and its neighbours in the same call. ~570 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v6_record_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-570} KERNELS="rmsnorm adaln" BENCH="rmsnorm" SAMPLES=2 SEEDS=2 \
  DTYPES="float16 float32" DTYPE_BENCH="rmsnorm adaln" TUNE="rmsnorm" SWEEP="rmsnorm=rmsnorm-w16,rmsnorm-w16h" TESTS=0 \
  bash scripts/gpu/run_all_h200.sh
