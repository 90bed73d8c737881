#!/usr/bin/env bash
# 2026-12-02 (fifth session), call 2 (issue 19), after call 1 (v17_h200.sh) measured ROPE_HEADS
# slower at every text shape and the knob was removed again: rope.cu is again the source of the
# records before call 1, so this call smokes it (2 seeds, with the new five-head cases) and records
# it in bf16, float16 and float32; adaln's float16 and float32 records (the last predated the
# project's last change); then rmsnorm's model-level check of the rows_head build (the card's
# figure was of the build before it). ~470 s. Device tool: carry [".whl"] (with .whl/consumers:
# kernels 0.16.2 and kernels-data 0.16.2 for the consumer venv), command `bash scripts/gpu/v18_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm rope adaln" SMOKE="rope" BENCH="rope" TESTS=0 SEEDS=2 \
  DTYPES="float16 float32" DTYPE_BENCH="rope adaln" EXTRA_LAST="MAX_JOBS=16 bash scripts/gpu/model_h200.sh" \
  bash scripts/gpu/run_all_h200.sh
