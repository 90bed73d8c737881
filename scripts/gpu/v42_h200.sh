#!/usr/bin/env bash
# Eleventh session (2026-12-07, issue 19): the call for the session's last ~250 s of device time,
# after twelve refused starts. rmsnorm as shipped (RMSNORM_ONE_STATIC=1): the 4096-wide cases with
# `--samples 3` (the launches ONE_STATIC changed; prediction in v39_h200.sh's header: under graph
# replay 0.08-0.2 us under the 2026-12-04 record), then scripts/gpu/more_shapes.py rmsnorm (shapes
# outside the benchmark; prediction in v41_h200.sh's header) while time is left.
# Device tool: carry [".whl"], command `bash scripts/gpu/v42_h200.sh`.
DEFAULT_DEADLINE=230
source scripts/gpu/short_call_env.sh
python3 -m pipeline build kernels-src/rmsnorm --backend local --out /tmp/build-rmsnorm > "$OUT/build.log" 2>&1
echo "build rc=$? $(( $(date +%s) - START )) s"; tail -1 "$OUT/build.log"
timeout "$(left)" python3 -m pipeline bench /tmp/build-rmsnorm --kernel kernels-src/rmsnorm --reps 100 --samples 3 \
  --only x4096 --out "$OUT/v42-x4096.json" --markdown "$OUT/v42-x4096.md" > /dev/null 2> "$OUT/bench.log"
echo "bench rc=$? $(( $(date +%s) - START )) s"
python3 scripts/gpu/target_counts.py "$OUT/v42-x4096.json"
[ "$(left)" -gt 20 ] && timeout "$(left)" python3 scripts/gpu/more_shapes.py rmsnorm /tmp/build-rmsnorm --reps 50 \
  --out "$OUT/more-rmsnorm.json" > "$OUT/more-rmsnorm.txt" 2> "$OUT/more-rmsnorm.log"
echo "more_shapes rc=$? $(( $(date +%s) - START )) s"; cat "$OUT/more-rmsnorm.txt" 2>/dev/null
