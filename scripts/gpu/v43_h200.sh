#!/usr/bin/env bash
# Twelfth session (2026-12-07, issue 19): the call for ~250 s of command time, after eleven refused
# starts left 434 s of device time. rmsnorm as shipped (RMSNORM_ONE_STATIC=1): smoke on the H200 with
# 1 seed (the Must-show item whose record is of the earlier build; its 3-seed smoke passed 981/981 on
# an H100, the same sm_90 code), then the 4096-wide cases with `--samples 3` while time is left
# (prediction in v39_h200.sh's header: under graph replay 0.08-0.2 us under the 2026-12-04 record).
# Device tool: carry [".whl"], command `DEADLINE=… bash scripts/gpu/v43_h200.sh`.
DEFAULT_DEADLINE=240
source scripts/gpu/short_call_env.sh
grep -n '^#define RMSNORM_ONE_STATIC' kernels-src/rmsnorm/rmsnorm_cuda/rmsnorm_kernels.cuh
build_and_smoke_rmsnorm h200-smoke.json
[ "$(left)" -gt 30 ] && timeout "$(left)" python3 -m pipeline bench /tmp/build-rmsnorm --kernel kernels-src/rmsnorm \
  --reps 100 --samples 3 --only x4096 --out "$OUT/v43-x4096.json" --markdown "$OUT/v43-x4096.md" > /dev/null 2> "$OUT/bench.log"
echo "bench rc=$? $(( $(date +%s) - START )) s"
[ -f "$OUT/v43-x4096.json" ] && python3 scripts/gpu/target_counts.py "$OUT/v43-x4096.json"
cat "$OUT/v43-x4096.md" 2>/dev/null
