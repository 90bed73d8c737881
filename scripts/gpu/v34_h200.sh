#!/usr/bin/env bash
# 2026-12-03 (eighth session), call 5 (issue 19): call 3's Nsight Compute probe (locked base clocks,
# ~1.47 GHz) timed our rows_reg<4> *ahead* of torch.compile's kernel at 8192x7168 (55.65 against
# 58.34 us) and 4096x8192 (32.64 against 33.22), where the bench (boost clocks) has it 1.4-1.7 %
# behind. The same launches profiled with `--clock-control none` (the GPU's own clocks, as in the
# bench; caches still flushed), plus 65536x128 and the fused 512x4096. Prediction (NOTES
# "Version 11"): at boost clocks the ranking flips to the bench's (Triton's kernel, issue-bound at
# base clock with 67 % issue slots busy, gains more from the SM clock than ours, which is DRAM-bound at
# 79 %). ~300 s. Device tool: carry [".whl"], command `bash scripts/gpu/v34_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
NCU='RES=$RES bash scripts/gpu/ncu_h200.sh boost; python3 scripts/gpu/ncu_summary.py "$RES/ncu-boost.csv" > "$RES/ncu-boost-summary.txt"; cat "$RES/ncu-boost-summary.txt"'
MAX_JOBS=16 DEADLINE=${DEADLINE:-280} KERNELS="rmsnorm" SMOKE="" BENCH="" TESTS=0 EXTRA="$NCU" \
  bash scripts/gpu/run_all_h200.sh
