#!/usr/bin/env bash
# Issue 19's experiments prepared in 2026-12-01's fourth session (one device call, ~500 s):
#  - rope's -DROPE_SLAB_STATIC=1 (rope NOTES.md "Version 4 plan") and geglu's -DGEGLU_DECODE_I32=1
#    (geglu NOTES.md, "float16 and float32") built beside the shipped builds, smoked with 2 seeds
#    (both at once, before any timing), benched after the shipped builds and compared
#    (compare_bench.py);
#  - tuning builds of rmsnorm and adaln swept in float32 (sets rmsnorm-fp32, adaln-fp32) and
#    rmsnorm's wide rows and fused batches at two vectors per thread in bf16 (set rmsnorm-wide2);
#  - the model-level check (model_h200.sh: a published rmsnorm in a 4-layer Qwen3 through
#    kernelize), last, on whatever rmsnorm source is checked in.
# Device tool: carry [".whl"], command `bash scripts/gpu/v5_explore_h200.sh`. Run as the fifth session's
# call 2; both knobs are defaults since (v5_record2_h200.sh), so a re-run benches two equal builds.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants rope:rope-static:static:bfloat16:-DROPE_SLAB_STATIC=1 geglu:geglu-i32:i32:bfloat16:-DGEGLU_DECODE_I32=1
LAST="$VARIANT_BENCHES"'bash scripts/gpu/model_h200.sh > /dev/null 2>&1; echo "model rc=$?"; tail -n 5 "$RES/model-h200.log"'
MAX_JOBS=8 DEADLINE=${DEADLINE:-555} KERNELS="rmsnorm rope geglu" SMOKE="" BENCH="rope geglu" \
  TUNE="rmsnorm adaln" SWEEP="rmsnorm=rmsnorm-fp32,rmsnorm-wide2 adaln=adaln-fp32" TESTS=0 EXTRA="$VARIANT_SMOKES" \
  EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
