#!/usr/bin/env bash
# Prepared for the next device call on issue 19 (rope, NOTES.md "Version 4 plan"): the shipped
# build benched as the base; a copy built with -DROPE_SLAB_STATIC=1 (the slab kernel with
# y_is_mid and wrap as compile-time constants), smoked with 2 seeds (contracts, the project's
# cases, in place) and benched beside it (compare_bench.py).
# Device tool: carry [".whl"], command `bash scripts/gpu/rope_static_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
bash scripts/gpu/variant_build.sh rope rope-static -DROPE_SLAB_STATIC=1 &
STATIC='while [ ! -f /tmp/rope-static.done ]; do sleep 2; done; echo "build static $(cat /tmp/rope-static.done)"; tail -n 1 /tmp/rope-static.log
python3 -m pipeline smoke /tmp/build-rope-static --kernel /tmp/rope-static --seeds 2 --json \
  > "$RES/rope-static-smoke.json" 2> "$RES/rope-static-smoke.log"; echo "smoke static rc=$?"
python3 -m pipeline bench /tmp/build-rope-static --kernel kernels-src/rope --reps 100 --out "$RES/rope-static-h200.json" \
  > /dev/null 2> "$RES/rope-static-bench.log"; echo "bench static rc=$?"
python3 scripts/gpu/compare_bench.py base="$RES/rope-h200.json" static="$RES/rope-static-h200.json"'
MAX_JOBS=12 DEADLINE=${DEADLINE:-420} KERNELS="rope" SMOKE="" BENCH="rope" TESTS=0 EXTRA_LAST="$STATIC" \
  bash scripts/gpu/run_all_h200.sh
