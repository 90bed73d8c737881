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
rm -rf /tmp/adaln-late /tmp/late.done && cp -r kernels-src/adaln /tmp/adaln-late
sed -i '0,/^backend = "cuda"/s//backend = "cuda"\ncuda-flags = ["-DADALN_EARLY=0"]/' /tmp/adaln-late/build.toml
grep -n "cuda-flags" /tmp/adaln-late/build.toml
( if ls .whl/*.whl >/dev/null 2>&1; then export PYTHONPATH="/tmp/site:$PWD"; fi
  for _ in $(seq 60); do [ -d /tmp/site/kernels ] && break; sleep 1; done; sleep 3
  TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=4 python3 -m pipeline build /tmp/adaln-late --backend local \
    --out /tmp/build-adaln-late > /tmp/adaln-late.log 2>&1; echo "rc=$?" > /tmp/late.done ) &
LATE='while [ ! -f /tmp/late.done ]; do sleep 2; done; echo "adaln-late build $(cat /tmp/late.done)"; tail -n 2 /tmp/adaln-late.log
python3 -m pipeline bench /tmp/build-adaln-late --kernel kernels-src/adaln --reps 100 --out "$RES/adaln-late-h200.json" \
  --markdown "$RES/adaln-late-h200.md" > /dev/null 2> "$RES/adaln-late-bench.log"; echo "bench adaln-late rc=$?"
python3 -c "import json; d=json.load(open(\"$RES/adaln-late-h200.json\"))
for r in d[\"results\"]: print(\"  late\", r[\"name\"], r[\"times_us\"][\"kernel\"], r.get(\"graph_times_us\", {}).get(\"kernel\"))"
bash scripts/gpu/ncu_h200.sh rope'
MAX_JOBS=12 DEADLINE=${DEADLINE:-330} KERNELS="rope adaln" SEEDS=2 TESTS=0 EXTRA_LAST="$LATE" bash scripts/gpu/run_all_h200.sh
