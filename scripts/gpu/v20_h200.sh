#!/usr/bin/env bash
# 2026-12-02 (fifth session), call 4 (issue 19), from call 3's Nsight figures (adaln NOTES.md,
# "float32 beside Triton"): adaln's float32 RMS rows of 2048 (2x16384x2048) run at 40 registers,
# 75 % theoretical occupancy, DRAM 82.9 % of peak, where torch.compile's Triton kernel runs at 28
# registers, 100 %, 85.9 %. -DADALN_F32_REGS32=1 caps float32's four-packs-per-thread kernels at 32
# registers (eight blocks of 256 resident; ptxas: 20-200 bytes of spill). Smoked with 2 seeds and
# benched in float32 after the shipped build's float32 bench. Prediction: 2x16384x2048 130.4 ->
# 126-128 us, 1x6144x2048 level or faster, the other shapes (not four packs per thread) unchanged.
# ~220 s. Device tool: carry [".whl"], command `bash scripts/gpu/v20_h200.sh`.
# ADALN_F32_REGS32 was removed after this call (not shipped; it is in commit 6d77ab1): 2x16384x2048
# 129.70 -> 144.13 us, the spills cost more than the occupancy gave (adaln NOTES.md).
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants adaln:adaln-r32:r32:float32:-DADALN_F32_REGS32=1
MAX_JOBS=16 DEADLINE=${DEADLINE:-400} KERNELS="adaln" SMOKE="" BENCH="" TESTS=0 \
  DTYPES="float32" DTYPE_BENCH="adaln" EXTRA="$VARIANT_SMOKES" EXTRA_LAST="$VARIANT_BENCHES" \
  bash scripts/gpu/run_all_h200.sh
