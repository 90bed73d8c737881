#!/usr/bin/env bash
# Thirteenth session (2026-12-07, issue 19), the session's last ~270 s of device time: rmsnorm with
# RMSNORM_NARROW_ONE and RMSNORM_WIDE_VPT4 (default 1, from v44's sweep rmsnorm-more on an H100)
# smoked with 1 seed (the smoke cases now hold 64x896, 2x1536, 16384x896 and 2048x12288), then every
# shape outside the benchmark timed (more_shapes.py) while time is left. No bench case's launch moves
# (tests/integration/test_rmsnorm_rule.py). Prediction, from the sweep: 16384x896 ~19.5 us (was 21.7
# in v41's record), under graph replay 1x896 ~1.48, 1x1536 ~1.50, 64x1536 ~1.70 us (were 1.58, 1.85,
# 1.99), 2048x12288 ~32.3 (was 34.2); the rest as v41's record within its spread. Keep the knobs only
# if the smoke passes.
# Device tool: carry [".whl"], command `DEADLINE=… bash scripts/gpu/v45_h200.sh`.
DEFAULT_DEADLINE=250
source scripts/gpu/short_call_env.sh
grep -n '^#define RMSNORM_NARROW_ONE\|^#define RMSNORM_WIDE_VPT4' kernels-src/rmsnorm/rmsnorm_cuda/rmsnorm_kernels.cuh
build_and_smoke_rmsnorm smoke.json
[ "$(left)" -gt 20 ] && timeout "$(left)" python3 scripts/gpu/more_shapes.py rmsnorm /tmp/build-rmsnorm --reps 50 \
  --out "$OUT/more-rmsnorm.json" 2> "$OUT/more-rmsnorm.log" | tee "$OUT/more-rmsnorm.txt"
echo "more_shapes rc=${PIPESTATUS[0]} $(( $(date +%s) - START )) s"
