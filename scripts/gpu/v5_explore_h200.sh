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
# Device tool: carry [".whl"], command `bash scripts/gpu/v5_explore_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
bash scripts/gpu/variant_build.sh rope rope-static -DROPE_SLAB_STATIC=1 &
bash scripts/gpu/variant_build.sh geglu geglu-i32 -DGEGLU_DECODE_I32=1 &
SMOKES='for name in rope-static geglu-i32; do
  while [ ! -f /tmp/$name.done ]; do sleep 2; done; echo "build $name $(cat /tmp/$name.done)"; tail -n 1 /tmp/$name.log
  python3 -m pipeline smoke /tmp/build-$name --kernel /tmp/$name --seeds 2 --json \
    > "$RES/$name-smoke.json" 2> "$RES/$name-smoke.log" &
done; wait; for name in rope-static geglu-i32; do echo "smoke $name"; python3 scripts/gpu/smoke_summary.py "$RES/$name-smoke.json"; done'
LAST='for v in rope:rope-static:static geglu:geglu-i32:i32; do
  IFS=: read -r k name tag <<< "$v"
  python3 -m pipeline bench /tmp/build-$name --kernel kernels-src/$k --reps 100 --out "$RES/$name-h200.json" \
    > /dev/null 2> "$RES/$name-bench.log"; echo "bench $name rc=$?"
  python3 scripts/gpu/compare_bench.py base="$RES/$k-h200.json" $tag="$RES/$name-h200.json"
done
bash scripts/gpu/model_h200.sh > /dev/null 2>&1; echo "model rc=$?"; tail -n 5 "$RES/model-h200.log"'
MAX_JOBS=8 DEADLINE=${DEADLINE:-555} KERNELS="rmsnorm rope geglu" SMOKE="" BENCH="rope geglu" \
  TUNE="rmsnorm adaln" SWEEP="rmsnorm=rmsnorm-fp32,rmsnorm-wide2 adaln=adaln-fp32" TESTS=0 EXTRA="$SMOKES" \
  EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
