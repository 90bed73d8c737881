#!/usr/bin/env bash
# Prepared in 2026-12-04's ninth session (not run; issue 19). ~420 s on a fresh machine:
# 1. geglu, rope and adaln re-recorded in bf16 with `pipeline bench`'s fresh compiles (every sample
#    compiles and autotunes torch.compile afresh; rmsnorm's NOTES.md "Version 12"), `--samples 3`:
#    their records still come from samples that shared one compile. Prediction: where torch.compile
#    reduces (adaln's rows) its samples spread wider than before and the counts move by a shape or
#    two; rope and geglu (pointwise, one config) unchanged within the spread.
# 2. (The launch-shape probe of rmsnorm's fused decode ran as the ninth session's call 7: both of
#    Inductor's picks launch one 512-thread program per row; rmsnorm's NOTES.md "Version 12".)
# Then update KNOWN_MISSES (scripts/gpu/target_counts.py prints the entries), each kernel's card and NOTES.
# Device tool: carry [".whl"], command `bash scripts/gpu/v37_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-520} KERNELS="geglu rope adaln" SMOKE="" \
  SAMPLES=3 TESTS=0 bash scripts/gpu/run_all_h200.sh
