#!/usr/bin/env bash
# The session's closing H200 call (issues 14, 15, 18): one device call.
#   1. run_all_h200.sh builds and checks the four CUDA kernels (capability 9.0);
#   2. EXTRA: contracts_h200.sh smokes each one (the pipeline's op contracts and
#      the project's own cases, in parallel), one JSON per kernel;
#   3. EXTRA_LAST: noarch_h200.sh (the Triton kernel: build, smoke, publish to an
#      embedded Hub, get_kernel as a user, bench) and model_h200.sh (rmsnorm in a
#      Qwen3 through kernelize, in a kernels 0.16.2 consumer venv).
# No bench of the compiled kernels: issue 19's records come from its own calls.
# Device tool: carry [".whl"], command: bash scripts/gpu/final_h200.sh
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
export MAX_JOBS=16 DEADLINE=${DEADLINE:-450} TESTS=0 SEEDS=${SEEDS:-2} SMOKE="" BENCH=""
export KERNELS="rmsnorm geglu rope adaln"
export EXTRA='STEP_TIMEOUT=150 bash scripts/gpu/contracts_h200.sh'
export EXTRA_LAST='for s in noarch_h200 model_h200; do
  echo "== $s"; t=$(date +%s); timeout 170 bash scripts/gpu/$s.sh; echo "$s rc=$? in $(( $(date +%s) - t )) s"
done'
bash scripts/gpu/run_all_h200.sh
