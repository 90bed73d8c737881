#!/usr/bin/env bash
# Prepared in 2026-12-03's eighth session (not run; issue 19): the wide rows' wave tail (rmsnorm
# NOTES.md "Version 11": at the GPU's own clock torch.compile's 512-thread kernel is level with ours
# at 8192x7168 and 2.2 % ahead at 4096x8192, running 15.5 waves where ours runs 12.4 and 7.8).
# Sweep `rmsnorm-wide-ty`: rows_reg<4> with 1, 2 (and at 3072, 4) rows per block at 8192x7168,
# 2048x7168, 4096x8192, 8192x5120, 8192x3072, torch.compile timed in the same process. Prediction:
# two rows per block (448/512 threads, 2 blocks per multiprocessor at 55 registers: 28-32 warps
# against 35-32) no faster at 8192x7168 (fewer warps resident) and level or ~1 % faster at 4096x8192
# (same warps, 15.5 waves instead of 7.8); a rule change only with its own smoke and record after.
# Run in 2026-12-04's ninth session as call 1, with the shipped build's records re-taken on today's
# tree in the same call (the bf16 and float16 records, `--samples 3`, and the smoke with 3 seeds: the
# records before were of the build before commit 98aab64, whose PTX is byte-identical).
# ~450 s on a fresh machine. Device tool: carry [".whl"], command `bash scripts/gpu/v35_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-500} KERNELS="rmsnorm" SMOKE="rmsnorm" SEEDS=3 BENCH="rmsnorm" SAMPLES=3 \
  DTYPES="float16" TESTS=0 TUNE="rmsnorm" \
  SWEEP="rmsnorm=rmsnorm-wide-ty" bash scripts/gpu/run_all_h200.sh
