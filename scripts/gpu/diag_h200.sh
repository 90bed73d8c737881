#!/usr/bin/env bash
# Diagnostics for the open H200 questions (run by run_all_h200.sh as EXTRA,
# after /tmp/build-rmsnorm exists; writes into $RES):
#  1. the error-path segfault of rmsnorm's own tests (plain run, then a native
#     backtrace from cuda-gdb, which also debugs host code);
#  2. where rmsnorm's time goes (scripts/gpu/probe_rmsnorm.py, then ncu);
#  3. the standalone tuner, one binary per knob set (phase "tune": TUNE_VARIANTS;
#     the tuner's own TUNE_* settings pass through, e.g. TUNE_FOCUS=1 TUNE_ROUNDS=3
#     TUNE_SHAPES=512x4096 TUNE_WARM_CODE=1), and the libstdc++ fix (phase "verify").
# Usage: diag_h200.sh early|verify|tune|async-build|async-smoke|async-bench
set -uo pipefail
PHASE=${1:-early}
RES=${RES:-/tmp/results}
mkdir -p "$RES"
B=/tmp/build-rmsnorm
K=kernels-src/rmsnorm
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ "$PHASE" = tune ]; then
  # One tuner binary per knob set (name=flags), built in parallel, run in turn.
  VARIANTS=${TUNE_VARIANTS:-"base= w0=-DRMSNORM_W_IN_REGS_MAX=0 st0=-DRMSNORM_STORE_CS=0 ld0st0=-DRMSNORM_LOAD_CS=0,-DRMSNORM_STORE_CS=0"}
  for v in $VARIANTS; do
    name=${v%%=*}; flags=${v#*=}
    # shellcheck disable=SC2086  # flags are words joined by ,
    timeout 240 "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I$K/rmsnorm_cuda -Xptxas -v \
      ${flags//,/ } $K/benchmarks/tune/tune_rmsnorm.cu -o "/tmp/tune_$name" > "$RES/tune-build-$name.txt" 2>&1 &
  done
  wait
  for v in $VARIANTS; do
    name=${v%%=*}
    [ -x "/tmp/tune_$name" ] || { echo "tuner $name did not build"; tail -5 "$RES/tune-build-$name.txt"; continue; }
    timeout 120 "/tmp/tune_$name" > "$RES/tune-$name.txt" 2>&1
    grep -E "^(knobs|BEST|FLUSH)|MISMATCH|copy flush=1" "$RES/tune-$name.txt"
    grep -E "^(plain|fused) " "$RES/tune-$name.txt" | sort -t'|' -k1,1 | awk '{print "   ", $0}' | head -60
  done
  exit 0
fi
# rows_async everywhere (a copy of the project with the auto rule forced on),
# built in the background at the start of a call, smoke-tested later.
if [ "$PHASE" = async-build ]; then
  rm -rf /tmp/rms-async /tmp/async-built && cp -r $K /tmp/rms-async
  # (a macro with arguments cannot travel: nvcc splits -D values at commas)
  sed -i 's/^cuda-flags = .*/cuda-flags = ["-O3", "-DRMSNORM_ASYNC=1"]/' /tmp/rms-async/build.toml
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site-async \
    .whl/kernels-*.whl
  PYTHONPATH="/tmp/site-async:$PWD" python3 -m pipeline build /tmp/rms-async --backend local --out /tmp/build-async \
    > /tmp/async-build.log 2>&1
  echo "rc=$?" > /tmp/async-built
  exit 0
fi
if [ "$PHASE" = async-smoke ]; then
  for _ in $(seq 1 150); do [ -f /tmp/async-built ] && break; sleep 2; done
  echo "async build: $(cat /tmp/async-built 2>/dev/null)"; tail -3 /tmp/async-build.log; cp /tmp/async-build.log "$RES/"
  timeout 150 python3 -m pipeline smoke /tmp/build-async --kernel /tmp/rms-async --seeds 2 --json \
    > "$RES/async-smoke.json" 2> "$RES/async-smoke.log"
  echo "async smoke rc=$?"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('async smoke', d.get('passed'), d.get('counts')); [print('FAIL', r['check'], r['name'], r['seed'], (r['message'] or '')[:160]) for r in d['results'] if not r['passed']][:20]" "$RES/async-smoke.json"
  exit 0
fi
if [ "$PHASE" = async-bench ]; then
  timeout 200 python3 -m pipeline bench /tmp/build-async --kernel /tmp/rms-async --reps "${REPS:-100}" \
    --out "$RES/async-h200.json" --markdown "$RES/async-h200.md" > /dev/null 2> "$RES/async-bench.log"
  echo "async bench rc=$?"
  python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print('copy', d['copy_bandwidth_gbs'])
for r in d['results']:
    t = r['times_us']
    print(f\"  {r['name']:<34} {t['kernel']:8.1f} us {r['copy_fraction']['kernel']:.3f} \" + ' '.join(f'{b} {t[b]:.1f}' for b in r['baselines']))
" "$RES/async-h200.json"
  exit 0
fi
if [ "$PHASE" = verify ]; then
  echo "-- the C++ compiler the build used, and its libstdc++"
  echo "CXX=${CXX:-unset}"; command -v c++; c++ --version | head -1; readlink -f "$(command -v c++)"
  c++ -print-file-name=libstdc++.so
  python3 -c "import json,glob; print(json.load(open(glob.glob('$B/*/metadata.json')[0]))['provenance'])"
  g++ -print-file-name=libstdc++.so; g++ -print-file-name=libstdc++.so.6
  ls -la "$(dirname "$(g++ -print-libgcc-file-name)")"/libstdc++*
  so=$(find $B -name "_rmsnorm*.so" | head -1); echo "$so"
  readelf -d "$so" | grep NEEDED
  timeout 60 python3 scripts/gpu/repro_error_path.py $B 2>&1 | tee "$RES/error-path-fixed.txt" | tail -8
  exit 0
fi

echo "-- toolchain"; g++ --version | head -1; "$NVCC" --version | tail -2
so=$(find $B -name "_rmsnorm*.so" | head -1); echo "$so"; ldd "$so" | grep -E "stdc|gcc_s|unwind|c10|torch" | head
echo "-- 1. error path"
timeout 60 python3 scripts/gpu/repro_error_path.py $B > "$RES/error-path.txt" 2>&1; rc=$?
tail -15 "$RES/error-path.txt"; echo "repro rc=$rc"
if [ $rc -ne 0 ]; then
  timeout 120 cuda-gdb -q -batch -ex "set pagination off" -ex run -ex bt -ex "info sharedlibrary" \
    --args python3 scripts/gpu/repro_error_path.py $B > "$RES/error-path-gdb.txt" 2>&1
  grep -E "^#|signal|SIG" "$RES/error-path-gdb.txt" | head -40
  grep -iE "unwind|gcc_s|stdc\+\+" "$RES/error-path-gdb.txt" | head -20
fi
RMSNORM_BUILD_DIR=$B timeout 120 python3 -X faulthandler -m pytest -q -p no:cacheprovider -x $K/tests \
  > "$RES/rmsnorm-tests-faulthandler.txt" 2>&1
echo "rmsnorm tests rc=$?"; tail -25 "$RES/rmsnorm-tests-faulthandler.txt"

echo "-- 2. probe"
timeout 200 python3 scripts/gpu/probe_rmsnorm.py $B --json "$RES/probe.json" 2>&1 | tee "$RES/probe.txt" | grep -v Warning
timeout 90 ncu --clock-control none -k regex:rows_ --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active \
  python3 scripts/gpu/probe_rmsnorm.py $B --ncu > "$RES/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "rows_|gpu__time|dram__|registers|grid_size|warps_active" "$RES/ncu.txt" | head -80

