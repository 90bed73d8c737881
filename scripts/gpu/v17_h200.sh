#!/usr/bin/env bash
# 2026-12-02 (fifth session), call 1 (issue 19): rope's table reuse over heads (rope NOTES.md,
# "Table reuse over heads"): Qwen3 q [1, 32, S, 128] against one table [1, 1, S, 128] reads the
# table rows once per head from L2 (twice x's bytes in bf16); -DROPE_HEADS=2 / 4 has each thread
# rotate 2 or 4 heads of one table row (every head's x loaded before any is stored), and
# -DROPE_HEADS_SEQ=1 loads each head's x in its own turn (fewer registers: 48-62 against 70-116).
# Each variant smoked with 2 seeds and benched in bf16 after the shipped build's bench.
# Prediction: qwen3 1x32x4096x128 20.2 -> 19.3-19.6 us, 1x32x16384x128 75.1 -> 70-72, k 1x8x4096x128
# 9.1 -> 8.8-9.0 (ahead of torch.compile's ~19.9, ~74.9, ~9.0); LTX and decode unchanged (their
# heads are not on the grid's y blocks: the launches' heads stay 1).
# Also re-records what predates the last project changes: adaln's smoke, check and bf16 record,
# geglu's smoke and float32 record (rope's smoke with its new cases; its float32 record waits for
# the variant decision). ~400 s. Device tool: carry [".whl"], command `bash scripts/gpu/v17_h200.sh`.
# ROPE_HEADS and ROPE_HEADS_SEQ were removed after this call (not shipped; they are in commit a7374a3):
# every variant was slower at every text shape (rope NOTES.md, "Table reuse over heads").
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants rope:rope-h2:h2:bfloat16:-DROPE_HEADS=2 rope:rope-h4:h4:bfloat16:-DROPE_HEADS=4 \
  rope:rope-h2s:h2s:bfloat16:-DROPE_HEADS=2,-DROPE_HEADS_SEQ=1 rope:rope-h4s:h4s:bfloat16:-DROPE_HEADS=4,-DROPE_HEADS_SEQ=1
MAX_JOBS=6 DEADLINE=${DEADLINE:-540} KERNELS="rope adaln geglu" SMOKE="rope adaln geglu" BENCH="rope adaln" TESTS=0 \
  SEEDS=2 DTYPES="float32" DTYPE_BENCH="geglu" EXTRA="$VARIANT_SMOKES" EXTRA_LAST="$VARIANT_BENCHES" \
  bash scripts/gpu/run_all_h200.sh
