#!/usr/bin/env bash
# Issue 19, 2026-12-02 third session, call 1: what torch.compile runs where our kernels still lose.
# rmsnorm, rope and adaln built (no smoke, no bench); then, per kernel, scripts/gpu/inductor_probe.py
# (Inductor's generated Triton source of each case's torch.compile baseline, and every launch's grid,
# block, registers and shared memory for it and for our kernel) and Nsight Compute beside the Triton
# kernel (scripts/gpu/ncu_h200.sh "fused rope-decode adaln": --set full, one launch each). ~330 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v9_diag_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
PROBE='p() { k=$1; shift; timeout 120 python3 scripts/gpu/inductor_probe.py "$k" "/tmp/build-$k" "$@" \
  --out "$RES/inductor-$k" > "$RES/inductor-$k.txt" 2>&1; echo "inductor_probe $k rc=$?"; cat "$RES/inductor-$k.txt" | grep -v Warning | tail -n 40; }
p rmsnorm fused_add_rms_norm/64x4096 fused_add_rms_norm/512x4096 fused_add_rms_norm/4096x4096 rms_norm/262144x128 \
  rms_norm/128x4096 rms_norm/32x4096
p rope rope/qwen3/decode/64x32x1x128 rope/qwen3/decode/8x32x1x128 rope/qwen3/1x32x4096x128
p adaln adaln/layer/8x4096x1152 adaln/rms/1x384x2048 adaln/layer/2x256x1152
RES=$RES bash scripts/gpu/ncu_h200.sh "fused rope-decode adaln"
for f in "$RES"/ncu-*.csv; do echo "$f $(wc -l < "$f") lines"; done'
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm rope adaln" SMOKE="" BENCH="" TESTS=0 \
  EXTRA="$PROBE" bash scripts/gpu/run_all_h200.sh
