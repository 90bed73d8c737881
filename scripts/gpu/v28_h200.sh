#!/usr/bin/env bash
# 2026-12-03 (seventh session), call 2 (issue 19): RMSNORM_REG_STREAM16 shipped (16-bit rows of
# 256-512 vectors keep rows_reg from 2^21 vectors of input, both ops; call 1's sweeps
# rmsnorm-big/-big16, v27_h200.sh). Smoke with 3 seeds, the bf16 and float16 records with
# `--samples 3` (float32's launches are unchanged: its record stands), then sweep rmsnorm-big2 in
# a tuning build of the same source: the batches below 2^21 vectors where rows_async remains.
# Prediction: fused 4096x4096 ~34.0 us against torch.compile's ~36, fused 8192x4096 ~67.0, plain
# 4096x4096 ~18.9, 8192x2048 ~18.9, 8192x3072 ~25.9, ahead of torch.compile; every other
# launch unchanged, so every other figure within the samples of the last record.
# Last, if time is left: what torch.compile runs at the wide rows still behind (8192x7168,
# 4096x8192: inductor_probe.py's source and launches, Nsight Compute's "rmsnorm" probe set), read
# for the next experiment, not acted on in this call.
# ~500 s. Device tool: carry [".whl"], command `bash scripts/gpu/v28_h200.sh`.
set -uo pipefail
LAST='timeout 100 python3 scripts/gpu/inductor_probe.py rmsnorm /tmp/build-rmsnorm rms_norm/8192x7168 rms_norm/4096x8192 \
  --out "$RES/inductor-rmsnorm-wide" > "$RES/inductor-rmsnorm-wide.txt" 2>&1
echo "inductor_probe rc=$?"; grep -v Warning "$RES/inductor-rmsnorm-wide.txt" | tail -n 12
RES=$RES bash scripts/gpu/ncu_h200.sh rmsnorm; python3 scripts/gpu/ncu_summary.py "$RES/ncu-rmsnorm.csv" | head -n 30'
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-540} KERNELS="rmsnorm" SMOKE="rmsnorm" BENCH="rmsnorm" TESTS=0 \
  SAMPLES=3 DTYPES="float16" DTYPE_BENCH="rmsnorm" TUNE="rmsnorm" SWEEP="rmsnorm=rmsnorm-big2" \
  EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
