#!/usr/bin/env bash
# Issue 19's next experiments, prepared in 2026-12-01's fifth session after its device time ran out
# (one call, ~540 s):
#  - rmsnorm's -DRMSNORM_WIDE_DECODE2=1 (decode batches of bf16/fp16 rows of 7168-8192 at two vectors
#    per thread; rmsnorm NOTES.md "Version 5 shipped", item 4), rmsnorm's -DRMSNORM_OPAQUE_ROW=1 (bf16's
#    one-step form without its spill at 4 and 8 vectors, item 6) and adaln's -DADALN_F32_LANES4=1
#    (float32 rows past 256 packs at 4 packs per lane; adaln NOTES.md, fifth session) built beside
#    the shipped builds, smoked with 2 seeds (both at once, before any timing), then benched after
#    the shipped builds in the same call (rmsnorm in bf16, adaln in float32) and compared;
#  - sweep rmsnorm-opq on a tuning build with RMSNORM_OPAQUE_ROW: the wide bf16 rows in rows_reg one
#    step (no spill) against rows_async, which the rule takes there, and rows_loop.
# Device tool: carry [".whl"], command `bash scripts/gpu/v6_explore_h200.sh`. To ship a knob:
# set its default to 1 and record (rmsnorm: v5_record3_h200.sh's steps, DTYPES naming each dtype whose
# launches the knob changes: bf16 always, float16 for RMSNORM_WIDE_DECODE2;
# adaln: KERNELS=adaln SEEDS=2 DTYPES="float16 float32" through run_all_h200.sh).
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
# benched in this order (the most promising first: the deadline cuts the last)
variants rmsnorm:rmsnorm-opq:opq:bfloat16:-DRMSNORM_OPAQUE_ROW=1 adaln:adaln-l4:l4:float32:-DADALN_F32_LANES4=1 \
  rmsnorm:rmsnorm-wd2:wd2:bfloat16:-DRMSNORM_WIDE_DECODE2=1
MAX_JOBS=8 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm adaln" SMOKE="" BENCH="rmsnorm" DTYPES="float32" \
  DTYPE_BENCH="adaln" TUNE="rmsnorm" SWEEP="rmsnorm=rmsnorm-opq" TUNE_FLAGS="rmsnorm=-DRMSNORM_OPAQUE_ROW=1" \
  TESTS=0 EXTRA="$VARIANT_SMOKES" EXTRA_LAST="$VARIANT_BENCHES" bash scripts/gpu/run_all_h200.sh
