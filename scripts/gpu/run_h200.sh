#!/usr/bin/env bash
# One call on the H200 runner: build the host's CUDA variant of rmsnorm, run
# `pipeline smoke`, `pipeline bench` and the kernel's own tests; optionally the
# standalone launch-configuration sweep (TUNE=1). Everything lands in $OUT.
#
# From the repository root (device tool): carry=[".whl"], command:
#   bash scripts/gpu/run_h200.sh
# The runner has no network: the kernels wheel travels in .whl/ (see
# /work/.library/device/README.md), installed with --no-deps into /tmp/site.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG="$OUT/log.txt"
exec > >(tee -a "$LOG") 2>&1

if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
export MAX_JOBS="${MAX_JOBS:-16}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv
python3 -c "import torch, kernels; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'kernels', kernels.__version__)"

KERNEL=kernels-src/rmsnorm
BUILD=/tmp/rmsnorm-build
t0=$(date +%s)
if python3 -c "import pipeline.build, pipeline.commands.build" 2>/dev/null && [ "${FALLBACK_BUILD:-0}" != 1 ]; then
  echo "== build: python -m pipeline build"
  python3 -m pipeline build "$KERNEL" --backend local --out "$BUILD" || { echo "pipeline build failed"; FALLBACK_BUILD=1; }
fi
if [ ! -d "$BUILD" ] || [ "${FALLBACK_BUILD:-0}" = 1 ]; then
  echo "== build: scripts/gpu/build_variant.py (stand-in for pipeline build)"
  python3 scripts/gpu/build_variant.py "$KERNEL" "$BUILD" --arch 9.0 || exit 1
fi
echo "build took $(( $(date +%s) - t0 )) s"; ls -R "$BUILD" | head -20

if [ "${TUNE:-0}" = 1 ]; then
  echo "== tune"
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  # One binary per compile-time knob setting (W_IN_REGS_MAX MIN_BLOCKS), built in parallel.
  KNOBS=${TUNE_KNOBS:-"4_0 0_0 4_2 0_2"}  # MIN_BLOCKS 0: left unset (the shipped default)
  pids=()
  for k in $KNOBS; do
    timeout 300 $NVCC -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I$KERNEL/rmsnorm_cuda \
      -DRMSNORM_W_IN_REGS_MAX=${k%_*} $( [ "${k#*_}" = 0 ] || echo -DRMSNORM_MIN_BLOCKS=${k#*_} ) $KERNEL/benchmarks/tune/tune_rmsnorm.cu -o /tmp/tune_$k &
    pids+=($!)
  done
  # Wait for these compiles only: a bare `wait` would also wait for the
  # `tee` process substitution above, which never ends (a 10-minute hang, seen).
  wait "${pids[@]}"
  for k in $KNOBS; do timeout 180 stdbuf -oL /tmp/tune_$k >> "$OUT/tune.txt" 2>&1; done
  grep -E "^(copy|BEST|FLUSH|knobs)|MISMATCH" "$OUT/tune.txt"
fi

echo "== smoke"
t0=$(date +%s)
python3 -m pipeline smoke "$BUILD" --kernel "$KERNEL" --json > "$OUT/smoke.json"; smoke_rc=$?
python3 - "$OUT/smoke.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("smoke:", "PASS" if d.get("passed") else "FAIL", d.get("counts"), d.get("device"), d.get("variant"))
for r in d.get("results", []):
    if not r["passed"]:
        print("  FAIL", r["check"], r["name"], r["seed"], r["message"][:300])
PY
echo "smoke rc=$smoke_rc took $(( $(date +%s) - t0 )) s"

echo "== kernel tests"
RMSNORM_BUILD_DIR="$BUILD" python3 -m pytest -v -p no:cacheprovider $KERNEL/tests -m kernels_ci > "$OUT/tests.txt" 2>&1
echo "kernel tests rc=$?"; grep -E "passed|failed|PASSED|FAILED|ERROR|Fatal|File \"/tmp|rmsnorm" "$OUT/tests.txt" | tail -40

if [ "${BENCH:-1}" = 1 ]; then
  echo "== bench"
  t0=$(date +%s)
  python3 -m pipeline bench "$BUILD" --kernel "$KERNEL" --out "$OUT/h200.json" --plot "$OUT/h200.png" \
     --markdown "$OUT/h200.md" ${BENCH_ARGS:-} > /dev/null
  echo "bench rc=$? took $(( $(date +%s) - t0 )) s"
  python3 - "$OUT/h200.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"copy {d['copy_bandwidth_gbs']} GB/s")
for r in d["results"]:
    t = r["times_us"]
    print(f"{r['op'][:10]:10s} {r['group']:9s} {r['shape']:>10s} k {t['kernel']:8.2f} frac {r['copy_fraction']['kernel']:.3f} | "
          + " ".join(f"{b[:14]} {t[b]:8.2f} x{r['speedup'][b]:.2f}" for b in r["baselines"]))
PY
fi
