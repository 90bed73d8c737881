#!/usr/bin/env bash
# Issue 19, the device call after rmsnorm_v5_h200.sh and dtypes_h200.sh:
#  - rmsnorm with RMSNORM_DECODE_I32 on by default (rows_reg and now rows_small
#    without their row loop, 32-bit offsets where they fit): smoked with 2 seeds
#    and recorded in bf16, float16 and float32 (the records of the shipped source);
#  - rope's -DROPE_SLAB_STATIC=1 and geglu's -DGEGLU_DECODE_I32=1 built beside the
#    shipped builds, smoked with 2 seeds and benched against them (compare_bench.py);
#    rope and geglu are benched as shipped first (the base of the comparison);
#  - a tuning build of rmsnorm swept in float32 (sweep set rmsnorm-fp32).
# Device tool: carry [".whl"], command `bash scripts/gpu/v5_record_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
bash scripts/gpu/variant_build.sh rope rope-static -DROPE_SLAB_STATIC=1 &
bash scripts/gpu/variant_build.sh geglu geglu-i32 -DGEGLU_DECODE_I32=1 &
# After the builds: both variants smoked at once (correctness only, before any timing).
SMOKES='for name in rope-static geglu-i32; do
  while [ ! -f /tmp/$name.done ]; do sleep 2; done; echo "build $name $(cat /tmp/$name.done)"; tail -n 1 /tmp/$name.log
  python3 -m pipeline smoke /tmp/build-$name --kernel /tmp/$name --seeds 2 --json \
    > "$RES/$name-smoke.json" 2> "$RES/$name-smoke.log" &
done; wait; for name in rope-static geglu-i32; do echo "smoke $name"; python3 scripts/gpu/smoke_summary.py "$RES/$name-smoke.json"; done'
VARIANTS='for v in rope:rope-static:static geglu:geglu-i32:i32; do
  IFS=: read -r k name tag <<< "$v"
  python3 -m pipeline bench /tmp/build-$name --kernel kernels-src/$k --reps 100 --out "$RES/$name-h200.json" \
    > /dev/null 2> "$RES/$name-bench.log"; echo "bench $name rc=$?"
  python3 scripts/gpu/compare_bench.py base="$RES/$k-h200.json" $tag="$RES/$name-h200.json"
done'
MAX_JOBS=8 DEADLINE=${DEADLINE:-555} KERNELS="rmsnorm rope geglu" SMOKE="rmsnorm" SEEDS=2 BENCH="rmsnorm rope geglu" \
  DTYPES="float16 float32" DTYPE_BENCH="rmsnorm" TUNE="rmsnorm" SWEEP="rmsnorm-fp32" TESTS=0 EXTRA="$SMOKES" \
  EXTRA_LAST="$VARIANTS" bash scripts/gpu/run_all_h200.sh
