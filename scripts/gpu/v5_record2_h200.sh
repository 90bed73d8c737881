#!/usr/bin/env bash
# Issue 19, after v5_explore_h200.sh (rope's ROPE_SLAB_STATIC and geglu's GEGLU_DECODE_I32 smoked
# and benched ahead of the shipped builds): both knobs as defaults, each kernel smoked with
# 2 seeds and recorded in bf16, float16 and float32 — the records of the shipped source
# (kernels-src/{rope,geglu}/benchmarks/results/h200*.{json,md,png}, h200-smoke.json), ~400 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v5_record2_h200.sh`, after setting both
# defaults to 1 (keep each flip only if its smoke passes).
set -uo pipefail
grep -q '^#define ROPE_SLAB_STATIC 1' kernels-src/rope/rope_cuda/rope.cu &&
  grep -q '^#define GEGLU_DECODE_I32 1' kernels-src/geglu/geglu_cuda/geglu_kernels.cuh || {
  echo "v5_record2_h200.sh: set ROPE_SLAB_STATIC's and GEGLU_DECODE_I32's defaults to 1 first"; exit 2; }
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-400} KERNELS="rope geglu" SEEDS=2 DTYPES="float16 float32" TESTS=0 \
  bash scripts/gpu/run_all_h200.sh
