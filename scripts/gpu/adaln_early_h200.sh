#!/usr/bin/env bash
# Device calls 5-7 of the 2026-12-01 afternoon session (issue 19): adaln with
# the early scale/shift loads for every launch of at most half a wave (call 5),
# a quarter wave (call 6) and 256 threads per multiprocessor (call 7, recorded), any packs per lane (1152-wide rows included): build for sm_90, smoke with
# 2 seeds, bench. Device tool: carry [".whl"], command
# `bash scripts/gpu/adaln_early_h200.sh`.
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
MAX_JOBS=16 DEADLINE=${DEADLINE:-240} KERNELS="adaln" SEEDS=2 TESTS=0 bash scripts/gpu/run_all_h200.sh
