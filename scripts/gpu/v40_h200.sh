#!/usr/bin/env bash
# Eleventh session (2026-12-07, issue 19): v39 and v37 folded into one call, because the H200 came
# late or not at all (ten refused starts in the tenth session, eight in this one before this call):
# the bf16 records of all four kernels as shipped, with fresh torch.compile per sample
# (`--samples 3`), and rmsnorm smoked on the H200 with 2 seeds (its shipped build passed 981/981
# with 3 seeds on an H100, the same sm_90 code: NOTES.md "Version 13"). Left out for a later call:
# rmsnorm's float16 record (v39) and the inductor probe of the fused decode (v37).
# Predictions: rmsnorm as v39's header says (graph replay at the decode rows of 4096 0.08-0.2 us
# faster than the 2026-12-04 record, the bf16 graph count 10/16 -> 14-15/16; the rest unchanged
# within the samples); geglu, rope and adaln as v37's (where torch.compile reduces, adaln's rows,
# its samples spread wider and the counts move by a shape or two; rope and geglu unchanged within
# the spread). Check the baselines against the records before reading a kernel figure as a gain.
# ~560 s on a fresh machine. Device tool: carry [".whl"], command `bash scripts/gpu/v40_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
grep -n '^#define RMSNORM_ONE_STATIC' kernels-src/rmsnorm/rmsnorm_cuda/rmsnorm_kernels.cuh
# With less device time left: KERNELS=rmsnorm (and a smaller DEADLINE) records rmsnorm alone.
KS=${KERNELS:-"rmsnorm geglu rope adaln"}
MAX_JOBS=16 DEADLINE=${DEADLINE:-545} KERNELS="$KS" SMOKE="rmsnorm" SEEDS=${SEEDS:-2} \
  BENCH="$KS" SAMPLES=3 TESTS=0 bash scripts/gpu/run_all_h200.sh
