#!/usr/bin/env bash
# Reproducible local builds across checkouts (issue 20), for the CUDA path that
# cannot be compiled on the CPU machines: tests/fixtures/tiny-add (a .cu kernel
# for capabilities 8.0 and 9.0 with -lineinfo, plus the C++ binding) committed
# once, cloned to a second, differently long path, and built in both with
# `python -m pipeline build --backend local`, each with its own object cache.
# With a CUDA torch that is the host's cu variant (nvcc given relative paths,
# the prefix maps passed through -Xcompiler); with a CPU torch it is the cpu
# variant (g++ only). What it tells: whether nvcc, cudafe++, cicc, ptxas and
# fatbinary put anything path- or run-dependent (temporary file names, module
# ids) into the .so that relative paths and prefix maps do not remove.
#
# Records in $RES/repro-build/:
#   summary.txt        SAME or DIFFERENT, the variant, the kernel id, the .so sha256 of each side
#   files-a.txt, files-b.txt   sha256 of every file of each variant directory
#   build-a.log/json, build-b.log/json   the two builds
#   when different: cmp.txt (bytes that differ), strings.diff (`strings -a` of the two .so, diffed),
#                   paths.txt (which side's absolute paths appear in its .so)
#
# On the device: `python scripts/gpu/run.py repro` (the wheels installed, RES=$OUT; about 1-2 min).
set -uo pipefail
RES=${RES:-/tmp/results}
out="$RES/repro-build"
mkdir -p "$out"
export PYTHONPATH="$PWD:${PYTHONPATH:-}" MAX_JOBS="${MAX_JOBS:-4}" PYTHONDONTWRITEBYTECODE=1
work=$(mktemp -d /tmp/repro-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
a="$work/a/a-much-longer/checkout-path/tiny-add"
b="$work/b/tiny-add"
mkdir -p "$(dirname "$a")" "$(dirname "$b")"
cp -r tests/fixtures/tiny-add "$a" && rm -rf "$a/build"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com \
  GIT_AUTHOR_DATE=2025-01-01T00:00:00Z GIT_COMMITTER_DATE=2025-01-01T00:00:00Z
git -C "$a" init -q && git -C "$a" add -A && git -C "$a" commit -qm tiny-add && git clone -q "$a" "$b" || {
  echo "DIFFERENT: could not set up the two checkouts" > "$out/summary.txt"; exit 1; }

pids=()
for side in a b; do
  dir=$a; [ "$side" = b ] && dir=$b
  PIPELINE_CACHE_DIR="$work/cache-$side" timeout 170 python3 -m pipeline build "$dir" --backend local --json \
    > "$out/build-$side.json" 2> "$out/build-$side.log" &
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done   # these PIDs only (a caller may have a tee running)
if [ "$rc" -ne 0 ]; then
  echo "DIFFERENT: a build failed (see build-a.log, build-b.log)" > "$out/summary.txt"
  tail -5 "$out/build-a.log" "$out/build-b.log"
  exit 1
fi

variant_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"][0]["variants"][0]["path"])' "$1"; }
va=$(variant_of "$out/build-a.json")
vb=$(variant_of "$out/build-b.json")
(cd "$va" && find . -type f | LC_ALL=C sort | xargs sha256sum) > "$out/files-a.txt"
(cd "$vb" && find . -type f | LC_ALL=C sort | xargs sha256sum) > "$out/files-b.txt"
so_a=$(ls "$va"/*.abi3.so)
so_b=$(ls "$vb"/*.abi3.so)
sum_a=$(sha256sum "$so_a" | cut -c1-64)
sum_b=$(sha256sum "$so_b" | cut -c1-64)
if cmp -s "$out/files-a.txt" "$out/files-b.txt"; then verdict=SAME; else verdict=DIFFERENT; fi
echo "$verdict $(basename "$va") $(basename "$so_a" .abi3.so) a=$sum_a b=$sum_b" > "$out/summary.txt"
if [ "$verdict" = DIFFERENT ]; then
  cmp -l "$so_a" "$so_b" | wc -l > "$out/cmp.txt"
  diff <(strings -a "$so_a") <(strings -a "$so_b") | head -200 > "$out/strings.diff"
  { echo "a's paths in a's .so: $(strings -a "$so_a" | grep -c "$work/a")";
    echo "b's paths in b's .so: $(strings -a "$so_b" | grep -c "$work/b")"; } > "$out/paths.txt"
fi
cat "$out/summary.txt"
[ "$verdict" = SAME ]
