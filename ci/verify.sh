#!/usr/bin/env bash
# Load a kernel the publish job uploaded, with kernels.get_kernel, and check it.
#
#   ci/verify.sh PUBLISH_REPORT_JSON KERNEL_DIR VERIFY_REPORT_JSON
#
# The repository and version come from the publish job's report, so verify
# asks the Hub for exactly what was uploaded.
set -euo pipefail

if [ "$#" -ne 3 ]; then
  echo "usage: ci/verify.sh PUBLISH_REPORT_JSON KERNEL_DIR VERIFY_REPORT_JSON" >&2
  exit 2
fi
published=$1
kernel_dir=$2
report=$3

# Read first, so that a missing or malformed report fails here (set -e), not as an empty repository later.
fields=$(python -c '
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
print(doc["repo_id"], doc["version"])
' "$published")
read -r repo version <<< "$fields"
python "$(dirname "$0")/report.py" --save "$report" verify "$repo" --version "$version" --kernel "$kernel_dir"
