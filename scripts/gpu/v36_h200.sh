#!/usr/bin/env bash
# 2026-12-04's ninth session, call 5 (issue 19): rmsnorm's bf16 record with every torch.compile
# baseline compiled and autotuned afresh per sample (`pipeline bench` now resets dynamo per sample
# and turns Inductor's caches off: bench.fresh_compiles). Mechanism: the records since 2026-12-01 show
# torch.compile's graph-replay figures at fused 1x4096, 64x4096 and 128x4096 in two modes by run
# (64x4096: 1.96-2.06 or 2.28-2.31 µs), never mixed within one run's three samples, because the
# samples reused sample 1's kernel (dynamo's cache of the same code, Inductor's autotune cache).
# Prediction: the fused decode cases' torch.compile samples now mix the modes in some cases (a range
# as wide as 1.96-2.31 at 64x4096), ours unchanged within 0.05 µs; the other cases' figures within
# the spread of call 1's record; the bench ~1.5-2x call 1's 114 s (three compiles per case).
# ~420 s on a fresh machine. Device tool: carry [".whl"], command `bash scripts/gpu/v36_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-570} KERNELS="rmsnorm" SMOKE="" BENCH="rmsnorm" SAMPLES=3 TESTS=0 \
  bash scripts/gpu/run_all_h200.sh
