#!/usr/bin/env bash
# Publish one kernel of the checked bundle to the Hub.
#
#   ci/publish.sh KERNEL KERNEL_DIR BUNDLE_DIR REPORT_JSON
#
# The repository is $HUB_NAMESPACE/KERNEL when the repository variable
# HUB_NAMESPACE is set, else KERNEL in the workspace's namespace (build.toml).
# HF_TOKEN must be set: without it `pipeline publish` would fall back to an
# embedded Hub that vanishes with the runner, a release that publishes nothing.
# The bundle was already checked (gather) and smoke-tested on the GPU runner,
# and the verify job loads the result with get_kernel afterwards.
set -euo pipefail

if [ "$#" -ne 4 ]; then
  echo "usage: ci/publish.sh KERNEL KERNEL_DIR BUNDLE_DIR REPORT_JSON" >&2
  exit 2
fi
kernel=$1
kernel_dir=$2
bundle=$3
report=$4

if [ -z "${HF_TOKEN:-}" ]; then
  echo "::error title=publish ${kernel}::the HF_TOKEN secret is not set: add a Hub token with write access to the repository (or the kernel-hub environment) secrets"
  exit 1
fi
repo=${HUB_NAMESPACE:+${HUB_NAMESPACE}/}${kernel}
python "$(dirname "$0")/report.py" --save "$report" publish "$repo" --kernel "$kernel_dir" --build-dir "$bundle" --no-verify
