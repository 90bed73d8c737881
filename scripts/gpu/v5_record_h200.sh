#!/usr/bin/env bash
# Issue 19, after rmsnorm_v5_h200.sh and dtypes_h200.sh (rmsnorm NOTES.md, "Version 5 outcomes"):
# rmsnorm with RMSNORM_DECODE_I32 on (rows_reg and rows_small without their row loop, 32-bit
# offsets where they fit) built, smoked with 3 seeds and recorded in bf16 (two samples per case:
# `pipeline bench --samples 2`, so each figure carries its spread), float16 and float32:
# the records of the shipped source, to be committed as kernels-src/rmsnorm/benchmarks/results/
# h200.*, h200-smoke.json, h200-float16.*, h200-float32.* (~480 s).
# Device tool: carry [".whl"], command `bash scripts/gpu/v5_record_h200.sh`, after setting
# RMSNORM_DECODE_I32's default to 1 in rmsnorm_kernels.cuh (commit the flip with the records if
# the smoke passes, set it back to 0 if not). scripts/gpu/v5_explore_h200.sh is the other call.
set -uo pipefail
grep -q '^#define RMSNORM_DECODE_I32 1' kernels-src/rmsnorm/rmsnorm_cuda/rmsnorm_kernels.cuh || {
  echo "v5_record_h200.sh: set RMSNORM_DECODE_I32's default to 1 first (rmsnorm_kernels.cuh)"; exit 2; }
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-540} KERNELS="rmsnorm" SEEDS=3 SAMPLES=2 DTYPES="float16 float32" TESTS=0 \
  bash scripts/gpu/run_all_h200.sh
