#!/usr/bin/env bash
# Issue 19, 2026-12-02 third session, call 2 (after v9_diag_h200.sh: torch.compile's kernel for the
# fused op at decode is 512 threads x one 16-byte vector, 176 instructions per warp, where rows_reg
# issues 348 at 256 x two): rmsnorm with RMSNORM_DECODE_ONE on (rows_one for 16-bit decode batches
# of up to 128 rows of hidden 2048-4096), smoked with 2 seeds and recorded in bf16; beside it, the
# previous launch (-DRMSNORM_DECODE_ONE=0) benched on the hidden-4096 cases, the sweep
# `rmsnorm-one` (a tuning build) and, last, the float16 record (the knob covers both 16-bit types).
# Prediction (NOTES.md "Version 8"): graph replay fused 32-128x4096 2.14-2.49 -> level with
# torch.compile's 1.96-2.24 us, rms_norm 32x4096 and 128x4096 0.05-0.1 us faster; the rest unchanged.
# ~520 s. Device tool: carry [".whl"], command `bash scripts/gpu/v9_record_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
VARIANT_JOBS=6 bash scripts/gpu/variant_build.sh rmsnorm rmsnorm-reg2 -DRMSNORM_DECODE_ONE=0 &
LAST='while [ ! -f /tmp/rmsnorm-reg2.done ]; do sleep 2; done; echo "build rmsnorm-reg2 $(cat /tmp/rmsnorm-reg2.done)"
python3 -m pipeline bench /tmp/build-rmsnorm-reg2 --kernel kernels-src/rmsnorm --reps 100 --only x4096 \
  --out "$RES/rmsnorm-reg2-h200.json" > /dev/null 2> "$RES/rmsnorm-reg2-bench.log"; echo "bench rmsnorm-reg2 rc=$?"
python3 scripts/gpu/compare_bench.py one="$RES/rmsnorm-h200.json" reg2="$RES/rmsnorm-reg2-h200.json"
t0=$(date +%s); python3 -m pipeline bench /tmp/build-rmsnorm --kernel kernels-src/rmsnorm --reps 100 --dtype float16 \
  --out "$RES/rmsnorm-h200-float16.json" --plot "$RES/rmsnorm-h200-float16.png" \
  --markdown "$RES/rmsnorm-h200-float16.md" > /dev/null 2> "$RES/rmsnorm-bench-float16.log"
echo "bench rmsnorm float16 rc=$? took $(( $(date +%s) - t0 )) s"; python3 scripts/gpu/bench_summary.py "$RES/rmsnorm-h200-float16.json"'
MAX_JOBS=8 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm" SMOKE="rmsnorm" BENCH="rmsnorm" SEEDS=2 TESTS=0 \
  TUNE="rmsnorm" SWEEP="rmsnorm=rmsnorm-one" EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
