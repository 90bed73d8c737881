#!/usr/bin/env bash
# 2026-12-02 (fifth session), call 3 (issue 19): Nsight Compute beside torch.compile's Triton kernels
# where the fifth session's records still lose and no experiment has yet closed the gap (read, not
# acted on: for the next session's plan): adaln's float32 RMS rows of 2048 (2x16384x2048 4 % behind,
# torch.compile above the device copy; 1x384x2048), and rope's decode with L2 left warm as under graph
# replay (8x32x1x128: 1.52 against 1.32 us, the most stable miss; 1x32x1x128), with rope's SASS stall
# reasons per instruction at 8x32. rope and adaln built, no smoke or bench. ~300 s.
# Device tool: carry [".whl"], command `bash scripts/gpu/v19_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
NCU_STEP='RES=$RES bash scripts/gpu/ncu_h200.sh "adaln-fp32 rope-hot"
for f in "$RES"/ncu-adaln-fp32.csv "$RES"/ncu-rope-hot.csv; do python3 scripts/gpu/ncu_summary.py "$f" > "${f%.csv}-summary.txt"; cat "${f%.csv}-summary.txt"; done'
MAX_JOBS=16 DEADLINE=${DEADLINE:-540} KERNELS="rope adaln" SMOKE="" BENCH="" TESTS=0 \
  EXTRA="$NCU_STEP" bash scripts/gpu/run_all_h200.sh
