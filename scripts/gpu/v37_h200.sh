#!/usr/bin/env bash
# Prepared in 2026-12-04's ninth session (not run; issue 19). ~480 s on a fresh machine:
# 1. geglu, rope and adaln re-recorded in bf16 with `pipeline bench`'s fresh compiles (every sample
#    compiles and autotunes torch.compile afresh; rmsnorm's NOTES.md "Version 12"), `--samples 3`:
#    their records still come from samples that shared one compile. Prediction: where torch.compile
#    reduces (adaln's rows) its samples spread wider than before and the counts move by a shape or
#    two; rope and geglu (pointwise, one config) unchanged within the spread.
# 2. rmsnorm's fused op at 8, 64 and 128 rows: torch.compile compiled six times afresh
#    (`scripts/gpu/inductor_probe.py --compiles 6`), each compile's autotuned config (XBLOCK,
#    R0_BLOCK, warps, stages) beside its launch and graph-replay time. The ninth session's call 7
#    found one launch shape (a 512-thread program per row) at 26 or 28 registers. Prediction, from
#    Inductor's config list for an INNER reduction (torch's triton_heuristics._reduction_configs: the
#    add_persistent_rblock config XBLOCK 1 x R0_BLOCK 4096 and the contiguous config XBLOCK 1 x
#    R0_BLOCK 2048, both 16 warps): the two picks are those, the 4096 one (one loop step, 28
#    registers, rows_one's load shape) the faster at 64x4096 (call 7's few timings lean that way).
#    If so, rows_one already has the faster pick's shape and the gap is in the instructions around
#    the loads (Version 11's ncu: ours 1.61 M against 1.44 M at fused 512x4096); if not, try two
#    8-byte loads per thread in rows_one.
# Then update KNOWN_MISSES (scripts/gpu/target_counts.py prints the entries), each kernel's card and NOTES.
# Device tool: carry [".whl"], command `bash scripts/gpu/v37_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
PROBE='python3 scripts/gpu/inductor_probe.py rmsnorm /tmp/build-rmsnorm fused_add_rms_norm/8x4096 \
  fused_add_rms_norm/64x4096 fused_add_rms_norm/128x4096 --compiles 6 --out "$RES/inductor-fused" \
  > "$RES/inductor-fused.txt" 2>&1; echo "probe rc=$?"; grep -E "picked|graph" "$RES/inductor-fused.txt" | cut -c1-200'
MAX_JOBS=16 DEADLINE=${DEADLINE:-540} KERNELS="rmsnorm geglu rope adaln" SMOKE="" BENCH="geglu rope adaln" \
  SAMPLES=3 TESTS=0 EXTRA_LAST="$PROBE" bash scripts/gpu/run_all_h200.sh
