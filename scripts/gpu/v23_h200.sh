#!/usr/bin/env bash
# 2026-12-02 (fifth session), call 7 (issue 19): adaln's records again (smoke 2 seeds, bf16, float16,
# float32), after ADALN_F32_REGS32 came and went (commits 6d77ab1, 79479de: the source is again the
# one calls 1-2 recorded, but the records predated the project's last change); geglu's float32 too.
# ~160 s. Device tool: carry [".whl"], command `bash scripts/gpu/v23_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-200} KERNELS="adaln geglu" SMOKE="adaln" BENCH="adaln" TESTS=0 SEEDS=2 \
  DTYPES="float16 float32" DTYPE_BENCH="adaln" EXTRA_LAST='python3 -m pipeline bench /tmp/build-geglu --kernel kernels-src/geglu --reps 100 --dtype float32 --out "$RES/geglu-h200-float32.json" --plot "$RES/geglu-h200-float32.png" --markdown "$RES/geglu-h200-float32.md" > /dev/null 2> "$RES/geglu-bench-float32.log"; echo "bench geglu-float32 rc=$?"; python3 scripts/gpu/bench_summary.py "$RES/geglu-h200-float32.json"' \
  bash scripts/gpu/run_all_h200.sh
