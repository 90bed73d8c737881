#!/usr/bin/env bash
# `pipeline check` every kernel of a joined bundle against its build matrix.
#
#   ci/check-bundle.sh BUNDLE_DIR VARIANTS_JSON pr|release
#
# BUNDLE_DIR/<kernel>/<variant>/ comes from ci/join_artifacts.py; the kernel
# projects' paths come from the per-variant matrix ci/plan.py wrote. Each
# report lands in checks/<kernel>.json and as a table in the job summary.
# A pull request's bundle is compared with the reduced matrix (check --ci).
# Every kernel is checked even when an earlier one fails.
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: ci/check-bundle.sh BUNDLE_DIR VARIANTS_JSON pr|release" >&2
  exit 2
fi
bundle=$1
variants=$2
flags=()
case "$3" in
  pr) flags=(--ci) ;;
  release) ;;
  *) echo "ci/check-bundle.sh: mode must be pr or release, not '$3'" >&2; exit 2 ;;
esac

# The kernels and their projects, read first: a Python failure here stops the
# script (set -e) instead of vanishing inside a process substitution.
pairs=$(python -c '
import json, sys
rows = json.load(open(sys.argv[1], encoding="utf-8"))["include"]
for kernel, path in sorted({(r["kernel"], r["path"]) for r in rows}):
    print(f"{kernel}\t{path}")
' "$variants")

status=0
found=0
while IFS=$'\t' read -r kernel path; do
  [ -n "$kernel" ] || continue
  found=1
  python "$(dirname "$0")/report.py" --save "checks/${kernel}.json" check "${bundle}/${kernel}" --project "$path" ${flags[@]+"${flags[@]}"} || status=1
done <<< "$pairs"
if [ "$found" -eq 0 ]; then
  echo "ci/check-bundle.sh: the matrix in $variants has no kernels" >&2
  exit 1
fi
exit "$status"
