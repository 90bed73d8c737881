#!/usr/bin/env bash
# Device call 1 of the 2026-12-01 afternoon session (issues 15 and 19): build
# rmsnorm, rope (slab launch) and adaln for sm_90 only; smoke rope and adaln;
# bench them (their new decode and small shapes); then the model-level check of
# rmsnorm (model_h200.sh) and Nsight Compute beside torch.compile (ncu_h200.sh).
# Device tool: carry [".whl"], command `bash scripts/gpu/model_rope_adaln_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-540} KERNELS="rmsnorm rope adaln" SMOKE="rope adaln" BENCH="rope adaln" SEEDS=2 \
  TESTS=0 EXTRA_LAST='bash scripts/gpu/model_h200.sh; bash scripts/gpu/ncu_h200.sh' bash scripts/gpu/run_all_h200.sh
