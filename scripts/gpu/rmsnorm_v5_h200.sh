#!/usr/bin/env bash
# Prepared for the next device call on issue 19 (rmsnorm, NOTES.md "Version 5 plan"):
#  - the shipped source (its SASS is that of the recorded run: checked with cuobjdump, all 108
#    kernels) built and benched as the base;
#  - the same source built with -DRMSNORM_TREE_SUM=4 (four independent sum-of-squares chains and
#    the block's partials read in one batch, added as trees), smoked (1 seed) and benched beside it;
#  - a tuning build swept over the per-head launch shapes with up to 8 vectors per lane (sweep
#    set rmsnorm3: 8 lanes x 2 vectors x 4 rows for hidden 128).
# Device tool: carry [".whl"], command `bash scripts/gpu/rmsnorm_v5_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
rm -rf /tmp/rms-tree /tmp/tree.done && cp -r kernels-src/rmsnorm /tmp/rms-tree
sed -i 's/^cuda-flags = \[/cuda-flags = ["-DRMSNORM_TREE_SUM=4", /' /tmp/rms-tree/build.toml
grep -n "cuda-flags" /tmp/rms-tree/build.toml
( for _ in $(seq 60); do [ -d /tmp/site/kernels ] && break; sleep 1; done; sleep 3
  PYTHONPATH="/tmp/site:$PWD" TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=4 python3 -m pipeline build /tmp/rms-tree \
    --backend local --out /tmp/build-rms-tree > /tmp/rms-tree.log 2>&1; echo "rc=$?" > /tmp/tree.done ) &
TREE='while [ ! -f /tmp/tree.done ]; do sleep 2; done; echo "build tree $(cat /tmp/tree.done)"; tail -n 2 /tmp/rms-tree.log
python3 -m pipeline smoke /tmp/build-rms-tree --kernel /tmp/rms-tree --seeds 1 --json > "$RES/rms-tree-smoke.json" \
  2> "$RES/rms-tree-smoke.log"; echo "smoke tree rc=$?"
python3 -m pipeline bench /tmp/build-rms-tree --kernel kernels-src/rmsnorm --reps 100 --out "$RES/rms-tree-h200.json" \
  > /dev/null 2> "$RES/rms-tree-bench.log"; echo "bench tree rc=$?"
python3 scripts/gpu/compare_bench.py base="$RES/rmsnorm-h200.json" tree="$RES/rms-tree-h200.json"'
MAX_JOBS=12 DEADLINE=${DEADLINE:-540} KERNELS="rmsnorm" SMOKE="" BENCH="rmsnorm" TUNE="rmsnorm" SWEEP="rmsnorm3" \
  TESTS=0 EXTRA_LAST="$TREE" bash scripts/gpu/run_all_h200.sh
