#!/usr/bin/env bash
# Prepared for the next device call on issue 19 (rmsnorm, NOTES.md "Version 5 plan"):
#  - the shipped source (its SASS is that of the recorded run, kernel names aside: checked
#    with cuobjdump, all 108 kernels) built and benched as the base;
#  - two builds of the same source beside it, benched on the hidden-4096 cases (decode to
#    32768 rows, plain and fused) and compared (compare_bench.py):
#      i32:      -DRMSNORM_DECODE_I32=1 (rows_reg without its row loop, 32-bit offsets)
#      i32tree:  the same and -DRMSNORM_TREE_SUM=4 (tree sums), smoked with 1 seed;
#  - a tuning build swept over per-head launch shapes with up to 8 vectors per lane (set rmsnorm3).
# Device tool: carry [".whl"], command `bash scripts/gpu/rmsnorm_v5_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
bash scripts/gpu/variant_build.sh rmsnorm rms-i32 -DRMSNORM_DECODE_I32=1 &
bash scripts/gpu/variant_build.sh rmsnorm rms-i32tree -DRMSNORM_DECODE_I32=1 -DRMSNORM_TREE_SUM=4 &
VARIANTS='for n in i32 i32tree; do
  while [ ! -f /tmp/rms-$n.done ]; do sleep 2; done; echo "build $n $(cat /tmp/rms-$n.done)"; tail -n 1 /tmp/rms-$n.log
done
python3 -m pipeline smoke /tmp/build-rms-i32tree --kernel /tmp/rms-i32tree --seeds 1 --json \
  > "$RES/rms-i32tree-smoke.json" 2> "$RES/rms-i32tree-smoke.log"; echo "smoke i32tree rc=$?"
for n in i32 i32tree; do
  python3 -m pipeline bench /tmp/build-rms-$n --kernel kernels-src/rmsnorm --only x4096 --reps 100 \
    --out "$RES/rms-$n-h200.json" > /dev/null 2> "$RES/rms-$n-bench.log"; echo "bench $n rc=$?"
done
python3 scripts/gpu/compare_bench.py base="$RES/rmsnorm-h200.json" i32="$RES/rms-i32-h200.json" \
  i32tree="$RES/rms-i32tree-h200.json"'
MAX_JOBS=8 DEADLINE=${DEADLINE:-550} KERNELS="rmsnorm" SMOKE="" BENCH="rmsnorm" TUNE="rmsnorm" SWEEP="rmsnorm3" \
  TESTS=0 EXTRA_LAST="$VARIANTS" bash scripts/gpu/run_all_h200.sh
