#!/usr/bin/env bash
# 2026-12-03 (sixth session), call 3 (issue 19): geglu and adaln re-recorded in bf16, float16 and
# float32 with `--samples 3`, as calls 1-2 did rmsnorm and rope. Same sources as their last records
# (geglu v17/v23, adaln v23; smoked then); no smoke. ~450 s. Device tool: carry [".whl"], command
# `bash scripts/gpu/v26_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-470} KERNELS="geglu adaln" SMOKE="" BENCH="geglu adaln" TESTS=0 \
  SAMPLES=3 DTYPES="float16 float32" DTYPE_BENCH="geglu adaln" \
  bash scripts/gpu/run_all_h200.sh
