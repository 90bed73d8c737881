#!/usr/bin/env bash
# 2026-12-03 (seventh session), call 1 (issue 19): rmsnorm's rows_one (one 16-byte vector per
# thread, one row per block) past one wave, at the streaming batches where the rule takes
# rows_reg or rows_async: the fused op at 1024-32768 rows of 4096 (4096x4096 3.5 % behind
# torch.compile in bf16), the plain op's rows of 2048-8192 (8192x7168 and 4096x8192 1.8-1.9 %
# behind), and float32's streaming rows (0.3-3.4 % behind). torch.compile's kernel at those
# shapes is a looped reduction of one vector per thread on 512 threads at 100 % occupancy (ncu,
# archive/v9-ncu-fused-summary.txt, v11-ncu-fp32-summary.txt); ours 128-256 threads at 50-81 %.
# Sweeps rmsnorm-big (bf16), rmsnorm-big16 (float16), rmsnorm-big32 (float32) in a tuning build,
# each case with torch.compile timed in the same process.
# Prediction: rows_one level with or ahead of torch.compile (and of the rule) at the fused 2048-
# 8192 rows and the plain 4096-8192 rows of 4096 in 16-bit, where its block matches Triton's;
# behind the rule at rows of 2048 (256 threads per block: 8 blocks per multiprocessor, the grid
# many waves) and in float32 at 4096 (1024 threads, two blocks per multiprocessor).
# ~250 s. Device tool: carry [".whl"], command `bash scripts/gpu/v27_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-500} KERNELS="rmsnorm" SMOKE="" BENCH="" TESTS=0 TUNE="rmsnorm" \
  SWEEP="rmsnorm=rmsnorm-big,rmsnorm-big16,rmsnorm-big32" bash scripts/gpu/run_all_h200.sh
