#!/usr/bin/env bash
# Whether a change to rmsnorm's kernels leaves the shipped code alone: every launch's PTX (sm_90,
# nvcc -O3, each dtype and both ops: every kernel `launch` can start) compiled from REV's
# rmsnorm_cuda/ and from the work tree's, compared byte for byte; extra args are nvcc flags for both
# sides (e.g. -DRMSNORM_TUNE_ENV for the tuning build). CPU only: nvcc, no torch headers.
#   bash scripts/gpu/rmsnorm_ptx_same.sh HEAD~1 [-DFLAG ...]    exit 0: identical, 1: different
# RENAME (optional): a sed script applied to the work tree's PTX first, for a change that only
# renames kernels (a template parameter added with a default changes the mangled names), e.g.
#   RENAME='s/(rows_one[A-Za-z0-9_]*)Li0EE/\1E/g' bash scripts/gpu/rmsnorm_ptx_same.sh HEAD
# COMMON=1: for a change that adds kernels (a new launch turned on), compare the entry points both
# sides have, one by one, with the branch labels' per-function numbering taken out (nvcc numbers
# them by the function's position in the file, so an added kernel renumbers the ones after it), and
# list the added ones.
set -euo pipefail
REV=${1:?usage: rmsnorm_ptx_same.sh REV [NVCC_FLAG ...]}; shift
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SRC=kernels-src/rmsnorm/rmsnorm_cuda
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/rev"
git archive "$REV" "$SRC" | tar -x -C "$tmp/rev"
{
  echo '#include "rmsnorm_kernels.cuh"'
  echo 'namespace rmsnorm {'
  for t in __nv_bfloat16 __half float; do
    for f in false true; do
      echo "template cudaError_t launch<$t, $f>(const Params<$t>&, const Config&, cudaStream_t, size_t);"
    done
  done
  echo '}'
} > "$tmp/all.cu"
"$NVCC" -ptx -arch=sm_90 -O3 -std=c++17 "$@" -I"$tmp/rev/$SRC" "$tmp/all.cu" -o "$tmp/rev.ptx"
"$NVCC" -ptx -arch=sm_90 -O3 -std=c++17 "$@" -I"$SRC" "$tmp/all.cu" -o "$tmp/tree.ptx"
if [ -n "${RENAME:-}" ]; then sed -E -i "$RENAME" "$tmp/tree.ptx"; fi
entries=$(grep -c '\.entry' "$tmp/tree.ptx")
if [ "${COMMON:-0}" = 1 ]; then
  python3 - "$tmp/rev.ptx" "$tmp/tree.ptx" "$REV" <<'PY'
import re, sys
def entries(path):
    text = open(path).read()
    return {m.group(1): re.sub(r"\$L__BB\d+_", "$L__BB_", m.group(0))
            for m in re.finditer(r"\.entry\s+(\S+?)\(.*?\n\}\n", text, re.S)}
rev, tree = entries(sys.argv[1]), entries(sys.argv[2])
differ = sorted(k for k in rev if k in tree and rev[k] != tree[k])
print(f"{len(rev.keys() & tree.keys()) - len(differ)} of {len(rev)} entry points of {sys.argv[3]} identical, "
      f"{len(differ)} different, {len(rev.keys() - tree.keys())} gone, {len(tree.keys() - rev.keys())} added")
for name in differ: print("  different:", name)
for name in sorted(tree.keys() - rev.keys()): print("  added:", name)
sys.exit(1 if differ or rev.keys() - tree.keys() else 0)
PY
  exit $?
fi
if cmp -s "$tmp/rev.ptx" "$tmp/tree.ptx"; then
  echo "identical: $entries entry points ($REV vs the work tree${*:+, $*}${RENAME:+, renamed by $RENAME})"
else
  echo "different: $REV vs the work tree${*:+, $*} ($(diff "$tmp/rev.ptx" "$tmp/tree.ptx" | grep -c '^[<>]') lines)"; exit 1
fi
