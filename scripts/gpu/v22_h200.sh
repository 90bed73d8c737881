#!/usr/bin/env bash
# 2026-12-02 (fifth session), call 6 (issue 19): ROPE_DECODE_D128's default set to 1 after call 5
# (v21_h200.sh: decode 0.23-0.29 us faster flushed, 0.08-0.10 under graph replay, every other case
# within the spread); the shipped source smoked (2 seeds) and recorded in bf16, float16 and float32 in
# this one call, so the committed records are of it. ~200 s. Device tool: carry [".whl"], command
# `bash scripts/gpu/v22_h200.sh`.
set -uo pipefail
grep -q '^#define ROPE_DECODE_D128 1' kernels-src/rope/rope_cuda/rope.cu ||
  { echo "v22_h200.sh: set ROPE_DECODE_D128's default to 1 first"; exit 2; }
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-360} KERNELS="rope" SMOKE="rope" BENCH="rope" TESTS=0 SEEDS=2 \
  DTYPES="float16 float32" DTYPE_BENCH="rope" bash scripts/gpu/run_all_h200.sh
