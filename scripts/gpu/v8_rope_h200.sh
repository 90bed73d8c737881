#!/usr/bin/env bash
# Issue 19, 2026-12-02 second session, the day's last device time (~410 s): rope with
# ROPE_BF16_BITCVT on (bf16 packs widened with a shift and a mask per 32-bit word, as rmsnorm's
# RMSNORM_BF16_BITCVT: the 40 bf16 kernels 1.5-11.5 % fewer instructions, float16 and float32
# SASS unchanged, bit-identical results), smoked with 2 seeds and recorded in bf16; then the
# previous form (-DROPE_BF16_BITCVT=0, the first session's shipped SASS) benched after it in the
# same call and compared. Prediction: decode Bx32x1x128 0.02-0.05 us faster (flushed and graph
# replay), Qwen3 text 1x32x4096x128 20.06 -> ~19.7 us (level with torch.compile's 19.78), the
# LTX shapes level. If it loses, set the default back to 0 (the recorded SASS). ~230 s.
# Outcome (113 s): no gain; the default is 0 again (rope NOTES.md, "Version 5 experiment").
# Device tool: carry [".whl"], command `bash scripts/gpu/v8_rope_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants rope:rope-intr:intr:bfloat16:-DROPE_BF16_BITCVT=0
LAST='while [ ! -f /tmp/rope-intr.done ]; do sleep 2; done; echo "build rope-intr $(cat /tmp/rope-intr.done)"
'"$VARIANT_BENCHES"
MAX_JOBS=16 DEADLINE=${DEADLINE:-300} KERNELS="rope" SMOKE="rope" BENCH="rope" SEEDS=2 TESTS=0 \
  EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
