#!/usr/bin/env bash
# 2026-12-03 (eighth session), call 3 (issue 19): after call 1 measured RMSNORM_REG_REREAD slower
# (NOTES "Version 11"), Nsight Compute of ours and torch.compile's kernel at the rows still behind
# (scripts/gpu/ncu_h200.sh rmsnorm: 8x4096, 128x4096, 65536x128, 8192x7168, 4096x8192; --set full)
# and the model-level check of the shipped build, which call 2 could not run (the device image lacks
# uvicorn, starlette and gitpython: now in .whl). ~420 s. Device tool: carry [".whl"] (with
# .whl/consumers), command `bash scripts/gpu/v32_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
NCU='RES=$RES bash scripts/gpu/ncu_h200.sh rmsnorm; python3 scripts/gpu/ncu_summary.py "$RES/ncu-rmsnorm.csv" > "$RES/ncu-rmsnorm-summary.txt"; head -n 80 "$RES/ncu-rmsnorm-summary.txt"'
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm" SMOKE="" BENCH="" TESTS=0 \
  EXTRA="$NCU" EXTRA_LAST="MAX_JOBS=16 bash scripts/gpu/model_h200.sh" bash scripts/gpu/run_all_h200.sh
