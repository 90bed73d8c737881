#!/usr/bin/env bash
# Issue 19, device call 2 (exploration, no record): rope's FastDiv build step by
# step (scripts/gpu/repro_rope.py, then under compute-sanitizer), and rmsnorm's
# sweeps (scripts/gpu/sweep.py rmsnorm2) on three tuning builds: as shipped,
# plain instead of streaming x loads (-DRMSNORM_LOAD_CS=0), and rows_reg capped
# at 64 registers (-DRMSNORM_MIN_BLOCKS=2). Results in $OUT/explore.tgz.
set -uo pipefail
export PYTHONUNBUFFERED=1
R=/tmp/explore; mkdir -p "$R"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=16
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
pids=()
python3 -m pipeline build kernels-src/rope --backend local --out /tmp/build-rope > "$R/rope-build.log" 2>&1 &
pids+=($!)
for v in base= ld0=-DRMSNORM_LOAD_CS=0 mb2=-DRMSNORM_MIN_BLOCKS=2; do
  n=${v%%=*}; f=${v#*=}
  rm -rf "/tmp/t-$n" && cp -r kernels-src/rmsnorm "/tmp/t-$n"
  sed -i "s/^cuda-flags = \[/cuda-flags = [\"-DRMSNORM_TUNE_ENV\", ${f:+\"$f\", }/" "/tmp/t-$n/build.toml"
  grep cuda-flags "/tmp/t-$n/build.toml"
  python3 -m pipeline build "/tmp/t-$n" --backend local --out "/tmp/b-$n" > "$R/build-$n.log" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"; tail -n 2 "$R"/*.log
timeout 60 python3 -X faulthandler scripts/gpu/repro_rope.py /tmp/build-rope > "$R/repro.txt" 2>&1; echo "repro rc=$?"
grep -v "dirty git" "$R/repro.txt" | tail -n 40
timeout 120 compute-sanitizer --tool memcheck --print-limit 20 python3 scripts/gpu/repro_rope.py /tmp/build-rope \
  > "$R/sanitizer.txt" 2>&1; echo "sanitizer rc=$?"; grep -v "dirty git" "$R/sanitizer.txt" | head -n 60
for n in base ld0 mb2; do
  timeout 90 python3 scripts/gpu/sweep.py rmsnorm2 "/tmp/b-$n" --json "$R/sweep2-$n.json" > "$R/sweep2-$n.txt" 2>&1
  echo "sweep $n rc=$?"
done
tar -C "$R" -czf "$OUT/explore.tgz" .
