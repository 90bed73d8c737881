#!/usr/bin/env bash
# Device call 3 of the 2026-12-01 afternoon session (issue 19), the recorded
# run of rope (slab launch, 32-bit offsets where they fit) and adaln (32-bit
# modulation rows; scale/shift loaded before the row sums for launches of at
# most one wave): build for sm_90, smoke with 2 seeds, bench.
# Device tool: carry [".whl"], command `bash scripts/gpu/rope_adaln_record_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-300} KERNELS="rope adaln" SEEDS=2 TESTS=0 bash scripts/gpu/run_all_h200.sh
