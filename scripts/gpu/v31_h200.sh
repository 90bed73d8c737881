#!/usr/bin/env bash
# 2026-12-03 (eighth session), call 2 (issue 19): the records older than their kernels' last
# source-affecting commit, re-taken on today's tree: geglu, rope and adaln smoked with 2 seeds
# (`results/h200-smoke.json`), every kernel's `pipeline check` (`results/h200-check.json`), adaln's
# float32 bench (`results/h200-float32.*`), then rmsnorm's model-level check of the
# RMSNORM_REG_STREAM16 build (`results/model-h200.json`; the card's figure was of the rows_head
# build). ~450 s. As run, SAMPLES was left at 1, so adaln's float32 figure went to the archive, not the
# record (RUNS.md); a re-run should set SAMPLES=3. Device tool: carry [".whl"] (with .whl/consumers:
# kernels 0.16.2 and kernels-data 0.16.2 for the consumer venv), command `bash scripts/gpu/v31_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm geglu rope adaln" SMOKE="geglu rope adaln" BENCH="" \
  TESTS=0 SEEDS=2 DTYPES="float32" DTYPE_BENCH="adaln" EXTRA_LAST="MAX_JOBS=16 bash scripts/gpu/model_h200.sh" \
  bash scripts/gpu/run_all_h200.sh
