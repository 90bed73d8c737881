#!/usr/bin/env bash
# One call on the H200 runner for geglu, rope and adaln: build each kernel's
# CUDA variant with `python -m pipeline build` (the three in parallel), then
# `pipeline smoke` and `pipeline bench` for each. Results land in $OUT:
#   <kernel>-smoke.json, <kernel>-h200.json, log.txt
# and are copied by hand to kernels-src/<kernel>/benchmarks/results/h200.json.
#
# From the repository root (device tool): carry=[".whl"], command:
#   bash scripts/gpu/run_kernels_h200.sh
# The runner has no network: the kernels wheel travels in .whl/ (see
# /work/.library/device/README.md) and is installed with --no-deps.
# Knobs: KERNELS="geglu rope adaln", SEEDS=1, REPS=50, WARMUP=5.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1

if ls .whl/kernels-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/kernels-*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
KERNELS=${KERNELS:-"geglu rope adaln"}
export MAX_JOBS="${MAX_JOBS:-5}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import torch, kernels; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'kernels', kernels.__version__)"

echo "== build (parallel)"
t0=$(date +%s)
pids=()
for k in $KERNELS; do
  python3 -m pipeline build "kernels-src/$k" --backend local --out "/tmp/build-$k" > "/tmp/build-$k.log" 2>&1 &
  pids+=($!)
done
# Wait for these PIDs only: a bare `wait` also waits for the `tee` process
# substitution above, which never ends (a first run hung here until killed).
wait "${pids[@]}"
for k in $KERNELS; do echo "-- $k"; tail -4 "/tmp/build-$k.log"; done
echo "build took $(( $(date +%s) - t0 )) s"

for k in $KERNELS; do
  echo "== smoke $k"
  t0=$(date +%s)
  python3 -m pipeline smoke "/tmp/build-$k" --kernel "kernels-src/$k" --seeds "${SEEDS:-1}" --json \
    > "$OUT/$k-smoke.json"
  echo "smoke $k rc=$? took $(( $(date +%s) - t0 )) s"
  python3 - "$OUT/$k-smoke.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("smoke:", "PASS" if d.get("passed") else "FAIL", d.get("counts"), d.get("device"), d.get("variant"))
for r in d.get("results", []):
    if not r["passed"]:
        print("  FAIL", r["check"], r["name"], r["seed"], (r["message"] or "")[:300])
PY
done

for k in $KERNELS; do
  echo "== bench $k"
  t0=$(date +%s)
  python3 -m pipeline bench "/tmp/build-$k" --kernel "kernels-src/$k" --reps "${REPS:-50}" --warmup "${WARMUP:-5}" \
    --out "$OUT/$k-h200.json" > /dev/null
  echo "bench $k rc=$? took $(( $(date +%s) - t0 )) s"
  python3 - "$OUT/$k-h200.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"copy {d['copy_bandwidth_gbs']} GB/s")
for r in d["results"]:
    t = r["times_us"]
    print(f"  {r['name']:<40} kernel {t['kernel']:8.1f} us  {r['copy_fraction']['kernel']:.2f} of copy  "
          + "  ".join(f"{b} {t[b]:.1f} us (x{r['speedup'][b]:.2f})" for b in r["baselines"]))
PY
done
