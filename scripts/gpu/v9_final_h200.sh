#!/usr/bin/env bash
# Issue 19, 2026-12-02 third session, call 3 (after v9_record_h200.sh: rows_one 0.10-0.17 us faster
# than rows_reg under graph replay at 1-128 rows of 4096, and, in sweep rmsnorm-one, ahead wherever
# its one-row blocks fit in one wave): rmsnorm with that rule (one_shape + resident_blocks), smoked
# with 2 seeds and recorded in bf16 and float16 (float32 never takes rows_one: its record stands).
# ~470 s. Device tool: carry [".whl"], command `bash scripts/gpu/v9_final_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm" SMOKE="rmsnorm" BENCH="rmsnorm" SEEDS=2 TESTS=0 \
  DTYPES="float16" bash scripts/gpu/run_all_h200.sh
