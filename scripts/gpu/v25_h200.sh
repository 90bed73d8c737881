#!/usr/bin/env bash
# 2026-12-03 (sixth session), call 2 (issue 19): rmsnorm and rope re-recorded in float16 and float32
# with `--samples 3`, as call 1 (v24_h200.sh) did bf16. Same sources; no smoke (call 1 smoked rope,
# v16 rmsnorm). ~400 s. Device tool: carry [".whl"], command `bash scripts/gpu/v25_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-500} KERNELS="rmsnorm rope" SMOKE="" BENCH="" TESTS=0 \
  SAMPLES=3 DTYPES="float16 float32" DTYPE_BENCH="rmsnorm rope" \
  bash scripts/gpu/run_all_h200.sh
