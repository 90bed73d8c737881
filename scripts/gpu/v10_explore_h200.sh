#!/usr/bin/env bash
# Prepared in 2026-12-02's third session (not run: its device time was spent), for the next one:
# 1. rope's decode step at 128 and at 64 threads per block (-DROPE_DECODE_THREADS=128 / 64: the same
#    work over two or four times the blocks, the shape of torch.compile's decode kernel: rope
#    NOTES.md, "torch.compile's kernels beside ours"), each smoked with 2 seeds and benched after the
#    shipped build in the same call. Prediction: decode 8-64x32x1x128 0.05-0.15 us faster under
#    graph replay, every other case unchanged (only the decode step's launch moves).
# 2. adaln's small batches at one pack per thread (sweep adaln-one, a tuning build, beside the
#    shipped build's bench): prediction, 1x384x2048 and 2x256x1152 level with or ahead of
#    torch.compile at 128-256 threads per row (adaln NOTES.md).
# Also smokes the shipped rope build (its record predated ROPE_DECODE_THREADS). ~400 s. Device tool: carry [".whl"], command `bash scripts/gpu/v10_explore_h200.sh`. To ship a
# rope variant: set ROPE_DECODE_THREADS's default in rope_cuda/rope.cu and record rope again; for
# adaln, a rule change in choose_config, then smoke and record adaln.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
source scripts/gpu/variants.sh
variants rope:rope-dt128:dt128:bfloat16:-DROPE_DECODE_THREADS=128 rope:rope-dt64:dt64:bfloat16:-DROPE_DECODE_THREADS=64
MAX_JOBS=8 DEADLINE=${DEADLINE:-500} KERNELS="rope adaln" SMOKE="rope" BENCH="rope adaln" TESTS=0 \
  TUNE="adaln" SWEEP="adaln=adaln-one" EXTRA="$VARIANT_SMOKES" EXTRA_LAST="$VARIANT_BENCHES" bash scripts/gpu/run_all_h200.sh
