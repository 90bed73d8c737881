#!/usr/bin/env bash
# Device call 4 of the 2026-12-01 afternoon session (issue 19): rmsnorm with
# 1 / hidden from the host (no device division; shipped, recorded by this call:
# build, smoke with 1 seed, bench), beside two builds of the same sources with
# plain ld.global instead of the read-only path (v1: x and weight,
# -DRMSNORM_LOAD_CS=2 -DRMSNORM_W_NC=0; v2: x only), benched in the same call;
# and rope's smoke again (its rotation bodies folded into helpers).
# Device tool: carry [".whl"], command `bash scripts/gpu/rmsnorm_loads_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
# (the copies are built by variant_build.sh, folded out of this script after the call: the same steps)
bash scripts/gpu/variant_build.sh rmsnorm rms-v1 -DRMSNORM_LOAD_CS=2 -DRMSNORM_W_NC=0 &
bash scripts/gpu/variant_build.sh rmsnorm rms-v2 -DRMSNORM_LOAD_CS=2 &
VARIANTS='for n in v1 v2; do
  while [ ! -f /tmp/rms-$n.done ]; do sleep 2; done; echo "build $n $(cat /tmp/rms-$n.done)"
  python3 -m pipeline bench /tmp/build-rms-$n --kernel kernels-src/rmsnorm --reps 100 --out "$RES/rms-$n-h200.json" \
    > /dev/null 2> "$RES/rms-$n-bench.log"; echo "bench $n rc=$?"
done
python3 scripts/gpu/compare_bench.py base="$RES/rmsnorm-h200.json" v1="$RES/rms-v1-h200.json" v2="$RES/rms-v2-h200.json"'
MAX_JOBS=12 DEADLINE=${DEADLINE:-480} KERNELS="rmsnorm rope" SMOKE="rmsnorm rope" BENCH="rmsnorm" SEEDS=1 TESTS=0 \
  EXTRA_LAST="$VARIANTS" bash scripts/gpu/run_all_h200.sh
