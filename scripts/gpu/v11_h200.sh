#!/usr/bin/env bash
# 2026-12-03, call 2 (issue 19):
# 1. adaln's one-wave launch (ADALN_ONE_WAVE, shipped on: rows of 1024-2048 whose blocks fit on
#    the device at once get one row per block, one pack per thread, two in float32): the shipped
#    build smoked with 2 seeds and recorded in bf16, float16 and float32; its tuning build swept
#    beside the neighbours in all three dtypes (adaln-one, adaln-one16h, adaln-one32). Prediction:
#    bf16 rms 1x384x2048 ahead of torch.compile flushed and under graph replay (call 1's sweep:
#    5.74 | 2.50 against 5.90 | 2.57), layer 2x256x1152 ahead flushed; float32 1x384x2048 from
#    7.22 | 3.17 to ~6.75 | 3.20 (the fifth session's sweep at two packs of 256 threads), still
#    behind torch.compile (6.14 | 2.73); every other shape unchanged.
# 2. rmsnorm in float32 (24/48 in its record): rows_one at the decode batches (sweep rmsnorm-one32,
#    never run in float32), and what torch.compile runs at the streaming rows where it passes the
#    device copy (inductor_probe.py and Nsight Compute, --dtype float32).
# ~380 s. Device tool: carry [".whl"], command `bash scripts/gpu/v11_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
PROBE='timeout 120 python3 scripts/gpu/inductor_probe.py rmsnorm /tmp/build-rmsnorm rms_norm/32768x4096 \
  rms_norm/8192x2048 rms_norm/2048x16384 rms_norm/262144x64 rms_norm/32x4096 fused_add_rms_norm/32x4096 \
  --dtype float32 --out "$RES/inductor-rmsnorm-fp32" > "$RES/inductor-rmsnorm-fp32.txt" 2>&1
echo "inductor_probe rc=$?"; grep -v Warning "$RES/inductor-rmsnorm-fp32.txt" | tail -n 30
RES=$RES bash scripts/gpu/ncu_h200.sh fp32; python3 scripts/gpu/ncu_summary.py "$RES/ncu-fp32.csv" | head -n 40'
MAX_JOBS=16 DEADLINE=${DEADLINE:-520} KERNELS="rmsnorm adaln" SMOKE="adaln" BENCH="adaln" TESTS=0 \
  DTYPES="float16 float32" DTYPE_BENCH="adaln" TUNE="adaln rmsnorm" \
  SWEEP="adaln=adaln-one,adaln-one16h,adaln-one32 rmsnorm=rmsnorm-one32" EXTRA="$PROBE" \
  bash scripts/gpu/run_all_h200.sh
