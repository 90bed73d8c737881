#!/usr/bin/env bash
# Issue 19's "fp16 and fp32 at least not behind": every kernel's bench cases in
# float16 and float32 (`pipeline bench --dtype`), one device call. The sources
# are those of the bf16 records (nothing to smoke again: h200-smoke.json and
# h200-contracts.json cover float16 and float32 already). Device tool: carry
# [".whl"], command `bash scripts/gpu/dtypes_h200.sh`; the records come back as
# results/<kernel>-h200-<dtype>.{json,md,png}, to be committed as
# kernels-src/<kernel>/benchmarks/results/h200-<dtype>.* with the call in RUNS.md.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-560} KERNELS="rmsnorm geglu rope adaln" SMOKE="" BENCH="" \
  DTYPES="float16 float32" TESTS=0 bash scripts/gpu/run_all_h200.sh
