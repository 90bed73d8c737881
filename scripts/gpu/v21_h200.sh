#!/usr/bin/env bash
# 2026-12-02 (fifth session), call 5 (issue 19), from call 3's Nsight figures (rope NOTES.md, "Decode
# with L2 left warm"): the decode kernel's first load is instruction 53 of 160 behind a run-time D/2,
# packs-per-head and loop bound and a third EXIT. -DROPE_DECODE_D128=1 compiles head width 128 into
# the decode step's slab launch (first load at instruction 42; every other kernel as shipped: cuobjdump,
# sm_90). Smoked with 2 seeds; the shipped build benched in bf16, then the variant in bf16, float16 and
# float32 with its tables and plots (so that, if it ships, its records are of this call: the variant
# build is the source with the default flipped). Prediction: decode 1-64x32x1x128 0.02-0.08 us faster
# flushed and under graph replay, every other case unchanged. ~230 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v21_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants rope:rope-d128:d128:bfloat16:-DROPE_DECODE_D128=1
RECORDS='for dt in float16 float32; do
  python3 -m pipeline bench /tmp/build-rope-d128 --kernel kernels-src/rope --reps 100 --dtype $dt \
    --out "$RES/rope-d128-h200-$dt.json" --plot "$RES/rope-d128-h200-$dt.png" --markdown "$RES/rope-d128-h200-$dt.md" \
    > /dev/null 2> "$RES/rope-d128-bench-$dt.log"; echo "bench rope-d128 $dt rc=$?"
  python3 scripts/gpu/bench_summary.py "$RES/rope-d128-h200-$dt.json"
done'
BF16_RECORD='python3 -m pipeline bench /tmp/build-rope-d128 --kernel kernels-src/rope --reps 100 --samples 1 \
  --out "$RES/rope-d128-h200.json" --plot "$RES/rope-d128-h200.png" --markdown "$RES/rope-d128-h200.md" \
  > /dev/null 2> "$RES/rope-d128-bench.log"; echo "bench rope-d128 rc=$?"
python3 scripts/gpu/compare_bench.py base="$RES/rope-h200.json" d128="$RES/rope-d128-h200.json"'
MAX_JOBS=16 DEADLINE=${DEADLINE:-420} KERNELS="rope" SMOKE="" BENCH="rope" TESTS=0 \
  EXTRA="$VARIANT_SMOKES" EXTRA_LAST="$BF16_RECORD
$RECORDS" bash scripts/gpu/run_all_h200.sh
