#!/usr/bin/env bash
# One device call for every kernel of the workspace on the H200: build each
# kernel's host CUDA variant with `python -m pipeline build` (in parallel),
# then `pipeline smoke` and `pipeline bench` per kernel, rmsnorm first, each
# step guarded by a deadline so that the call ends inside its lease. Results
# are packed into $OUT/results.tgz after every step (a timed-out call still
# returns what was done).
#
# From the repository root (device tool): carry=[".whl"], command:
#   bash scripts/gpu/run_all_h200.sh
# Env: KERNELS (built), SMOKE and BENCH (default: KERNELS), EXTRA (a command
# run after the build, before smoke and bench; sees RES, the results folder),
# EXTRA_LAST (likewise, after everything else), TESTS=0 (skip rmsnorm's tests), SEEDS (smoke seeds),
# TUNE (kernels also built as tuning builds, -D<KERNEL>_TUNE_ENV, in parallel
# with the others, and swept by scripts/gpu/sweep.py after the benches; SWEEP
# names the sweep set, default the kernel's, or sets per kernel as "rmsnorm=set,set adaln=set";
# TUNE_FLAGS adds compile flags to a tuning build, as "rmsnorm=-DRMSNORM_OPAQUE_ROW=1"),
# DTYPES (e.g. "float16 float32": each kernel of DTYPE_BENCH, default KERNELS,
# benched again per dtype after the bf16 benches: $RES/<k>-h200-<dtype>.*),
# SAMPLES (every bench's `--samples`, default 1).
# The smoke runs of all kernels go in parallel (correctness only); the benches
# run one at a time, alone on the GPU.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
export RES=/tmp/results
mkdir -p "$OUT" "$RES"
START=$(date +%s)
DEADLINE=${DEADLINE:-380}   # seconds after which no new step starts
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
pack() { tar -C "$RES" -czf "$OUT/results.tgz" . ; }
exec > >(tee -a "$RES/log.txt") 2>&1

if ls .whl/*.whl >/dev/null 2>&1; then  # kernels, kernel-abi-check: not on the H200 image
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" MAX_JOBS="${MAX_JOBS:-4}"
KERNELS=${KERNELS:-"rmsnorm geglu rope adaln"}
SMOKE=${SMOKE-$KERNELS}
BENCH=${BENCH-$KERNELS}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
python3 -c "import torch, kernels; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'kernels', kernels.__version__)"

TUNE=${TUNE:-}
echo "== build (parallel, python -m pipeline build)"
t0=$(date +%s); pids=()
for k in $KERNELS; do
  python3 -m pipeline build "kernels-src/$k" --backend local --out "/tmp/build-$k" --json \
    > "$RES/$k-build.json" 2> "$RES/$k-build.log" &
  pids+=($!)
done
entry_of() {  # entry_of LIST KERNEL: the words of LIST's "KERNEL=a,b" entry (SWEEP, TUNE_FLAGS); 1 if none
  local e
  for e in $1; do case "$e" in "$2="*) echo "${e#*=}" | tr , ' '; return 0 ;; esac; done
  return 1
}
tune_flags() { entry_of "${TUNE_FLAGS:-}" "$1"; }  # kernel $1's extra flags for its tuning build
for k in $TUNE; do  # a copy of the project with the tuning override compiled in: /tmp/build-tune-$k
  # shellcheck disable=SC2046  # the flags are words
  VARIANT_JOBS=$MAX_JOBS bash scripts/gpu/variant_build.sh "$k" "tune-$k" "-D$(echo "$k" | tr a-z A-Z)_TUNE_ENV" \
    $(tune_flags "$k") > "$RES/tune-$k-build.log" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"   # these PIDs only: a bare `wait` would also wait for the tee above
for k in $KERNELS; do echo "-- $k"; tail -3 "$RES/$k-build.log"; done
for k in $TUNE; do echo "-- tune $k"; cat "$RES/tune-$k-build.log"; tail -2 "/tmp/tune-$k.log"; done
echo "build took $(( $(date +%s) - t0 )) s"; pack
echo "== check (python -m pipeline check: layout, metadata, manylinux_2_28 and abi3 symbols)"
for k in $KERNELS; do
  python3 -m pipeline check "/tmp/build-$k" --no-matrix --json > "$RES/$k-check.json" 2> "$RES/$k-check.log"
  echo "check $k rc=$?"; grep -E "C0[0-9]+|error" "$RES/$k-check.log" | head -5
done
if [ -n "${EXTRA:-}" ]; then
  echo "== extra: $EXTRA"
  timeout "$(left)" bash -c "$EXTRA"; echo "extra rc=$?"; pack
fi

wants() { case " $1 " in *" $2 "*) return 0 ;; *) return 1 ;; esac; }
smoke_summary() { python3 scripts/gpu/smoke_summary.py "$RES/$1-smoke.json"; }
t0=$(date +%s); spids=(); sk=()
for k in $KERNELS; do
  wants "$SMOKE" "$k" || continue
  seeds=3; [ "$k" = rmsnorm ] || seeds=2
  seeds=${SEEDS:-$seeds}
  timeout "$(left)" python3 -m pipeline smoke "/tmp/build-$k" --kernel "kernels-src/$k" --seeds $seeds --json \
    > "$RES/$k-smoke.json" 2> "$RES/$k-smoke.log" &
  spids+=($!); sk+=("$k")
done
if [ ${#spids[@]} -gt 0 ]; then
  for i in "${!spids[@]}"; do
    wait "${spids[$i]}"; echo "smoke ${sk[$i]} rc=$?"; smoke_summary "${sk[$i]}"
  done
  echo "smoke (parallel) took $(( $(date +%s) - t0 )) s"; pack
fi
bench_one() {  # bench_one KERNEL TAG [ARG...]: one `pipeline bench` run alone on the GPU, records $RES/KERNEL-h200TAG.*
  local k=$1 tag=$2 t0; shift 2
  [ "$(left)" -gt 30 ] || { echo "deadline: skipping bench $k$tag"; return; }
  t0=$(date +%s)
  timeout "$(left)" python3 -m pipeline bench "/tmp/build-$k" --kernel "kernels-src/$k" --reps "${REPS:-100}" "$@" \
    --out "$RES/$k-h200$tag.json" --plot "$RES/$k-h200$tag.png" --markdown "$RES/$k-h200$tag.md" \
    > /dev/null 2> "$RES/$k-bench$tag.log"
  echo "bench $k$tag rc=$? took $(( $(date +%s) - t0 )) s"
  python3 scripts/gpu/bench_summary.py "$RES/$k-h200$tag.json"
  pack
}
for k in $KERNELS; do
  wants "$BENCH" "$k" && bench_one "$k" "" --samples "${SAMPLES:-1}"
done
for dt in ${DTYPES:-}; do
  for k in ${DTYPE_BENCH-$KERNELS}; do bench_one "$k" "-$dt" --dtype "$dt" --samples "${SAMPLES:-1}"; done
done
sweep_sets() {  # kernel $1's sweep sets: SWEEP's "$1=set[,set]" entry, a bare SWEEP, or the kernel's own
  local e
  entry_of "${SWEEP:-}" "$1" && return
  for e in ${SWEEP:-}; do case "$e" in *=*) ;; *) echo "$e"; return ;; esac; done
  echo "$1"
}
for k in $TUNE; do
  for set in $(sweep_sets "$k"); do
    [ "$(left)" -gt 20 ] || { echo "deadline: skipping sweep $k $set"; continue; }
    t0=$(date +%s)
    out="sweep-$k"; [ "$set" = "$k" ] || out="sweep-$set"
    timeout "$(left)" python3 scripts/gpu/sweep.py "$set" "/tmp/build-tune-$k" --json "$RES/$out.json" \
      > "$RES/$out.txt" 2>&1
    echo "sweep $k ($set) rc=$? took $(( $(date +%s) - t0 )) s"; tail -4 "$RES/$out.txt"; pack
  done
done

if [ "${TESTS:-1}" = 1 ] && [ "$(left)" -gt 15 ] && [ -d /tmp/build-rmsnorm ]; then
  RMSNORM_BUILD_DIR=/tmp/build-rmsnorm timeout "$(left)" python3 -m pytest -q -p no:cacheprovider \
    kernels-src/rmsnorm/tests -m kernels_ci > "$RES/rmsnorm-tests.txt" 2>&1
  echo "rmsnorm kernel tests rc=$?"; tail -3 "$RES/rmsnorm-tests.txt"
fi
if [ -n "${EXTRA_LAST:-}" ] && [ "$(left)" -gt 15 ]; then
  echo "== extra (last): $EXTRA_LAST"
  timeout "$(left)" bash -c "$EXTRA_LAST"; echo "extra rc=$?"
fi
echo "total $(( $(date +%s) - START )) s"; pack
