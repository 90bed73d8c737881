#!/usr/bin/env bash
# Device call 2 of the 2026-12-01 afternoon session (issue 19): rope's slab
# launch with one output pack per thread (rotate_half out of place) and the
# decode slabs; adaln with the modulation rows loaded before the row sums
# (ADALN_EARLY=1, shipped) against after them (a copy built with
# -DADALN_EARLY=0, benched beside it). Build for sm_90, smoke (2 seeds:
# contracts and the project's cases, in place included), bench, and Nsight
# Compute beside torch.compile for rope.
# Device tool: carry [".whl"], command `bash scripts/gpu/rope_adaln_explore_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
# (the copy is built by variant_build.sh, folded out of this script after the call: the same steps)
bash scripts/gpu/variant_build.sh adaln adaln-late -DADALN_EARLY=0 &
LATE='while [ ! -f /tmp/adaln-late.done ]; do sleep 2; done; echo "adaln-late build $(cat /tmp/adaln-late.done)"; tail -n 2 /tmp/adaln-late.log
python3 -m pipeline bench /tmp/build-adaln-late --kernel kernels-src/adaln --reps 100 --out "$RES/adaln-late-h200.json" \
  --markdown "$RES/adaln-late-h200.md" > /dev/null 2> "$RES/adaln-late-bench.log"; echo "bench adaln-late rc=$?"
python3 -c "import json; d=json.load(open(\"$RES/adaln-late-h200.json\"))
for r in d[\"results\"]: print(\"  late\", r[\"name\"], r[\"times_us\"][\"kernel\"], r.get(\"graph_times_us\", {}).get(\"kernel\"))"
bash scripts/gpu/ncu_h200.sh rope'
MAX_JOBS=12 DEADLINE=${DEADLINE:-330} KERNELS="rope adaln" SEEDS=2 TESTS=0 EXTRA_LAST="$LATE" bash scripts/gpu/run_all_h200.sh
