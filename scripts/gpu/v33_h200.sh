#!/usr/bin/env bash
# 2026-12-03 (eighth session), call 4 (issue 19): the command line that ran on the warm machine of
# call 3 (whose model step stopped at the image's missing lz4 and blake3: now in .whl with uvicorn,
# starlette, gitpython, gitdb, smmap): rmsnorm's model-level check of the shipped build
# (RMSNORM_REG_STREAM16) -> `kernels-src/rmsnorm/benchmarks/results/model-h200.json`. 213 s on a warm
# machine with /tmp/build-rmsnorm up to date. Device tool: carry [".whl"] (with .whl/consumers:
# kernels 0.16.2 and kernels-data 0.16.2), command `bash scripts/gpu/v33_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=500 KERNELS="rmsnorm" SMOKE="" BENCH="" TESTS=0 \
  EXTRA_LAST="MAX_JOBS=16 bash scripts/gpu/model_h200.sh" bash scripts/gpu/run_all_h200.sh
