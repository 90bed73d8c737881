#!/usr/bin/env bash
# Prepared in 2026-12-06's tenth session (issue 19): the H200 record of rmsnorm as shipped, with
# RMSNORM_ONE_STATIC on (default 1 since this session, from an H100's A/B: rmsnorm NOTES.md
# "Version 13"), smoked with 3 seeds and recorded in bf16 and float16 with fresh compiles
# (`--samples 3`). Prediction, from the H100's A/B and the H200 record of the build before
# (results/h200.json, 2026-12-04): under graph replay the decode rows of 4096 0.08-0.2 us faster, the
# fused op at 8-128x4096 at most torch.compile's fastest compile (1.96-2.34 -> ~1.78-2.15 against
# 1.87-2.23), so the bf16 graph count 10/16 -> 14-15/16; flushed, the decode rows level or up to
# 0.3 us faster (the H100's flushed A/B drifted as a whole: NOTES.md "Version 13"), the rows from
# one wave up, the wide rows and the per-head rows unchanged within the samples; smoke all pass.
# Check the baselines against the 2026-12-04 record before reading a kernel figure as a gain.
# Then: results/h200.* and h200-float16.* from this call, KNOWN_MISSES / KNOWN_BEHIND
# (`python3 scripts/gpu/target_counts.py ...` prints the entries), the card, NOTES.md, RUNS.md.
# ~520 s on a fresh machine. Device tool: carry [".whl"], command `bash scripts/gpu/v39_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
grep -n '^#define RMSNORM_ONE_STATIC' kernels-src/rmsnorm/rmsnorm_cuda/rmsnorm_kernels.cuh
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm" SMOKE="rmsnorm" BENCH="rmsnorm" SAMPLES=3 TESTS=0 \
  DTYPES="float16" DTYPE_BENCH="rmsnorm" bash scripts/gpu/run_all_h200.sh
