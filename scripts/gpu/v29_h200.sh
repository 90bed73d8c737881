#!/usr/bin/env bash
# 2026-12-03 (seventh session), call 5 (issue 19): RMSNORM_REG_STREAM16 at every batch (call 4's
# sweep rmsnorm-big2 found rows_reg<4> faster than rows_async below 2^21 vectors too: 1024-2048
# rows of 4096, 4096 rows of 2048-3072). Smoke with 2 seeds, the bf16 and float16 records with
# `--samples 3` (results/h200.*, h200-float16.*). Run as one command line on the machine still warm
# from calls 3-4 (this file is that line); ~340 s. Device tool: carry [".whl"], command
# `bash scripts/gpu/v29_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=430 KERNELS="rmsnorm" SMOKE="rmsnorm" SEEDS=2 BENCH="rmsnorm" TESTS=0 SAMPLES=3 \
  DTYPES="float16" DTYPE_BENCH="rmsnorm" bash scripts/gpu/run_all_h200.sh
