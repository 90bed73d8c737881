#!/usr/bin/env bash
# Build the variants of one matrix row with Nix into a build/ tree.
#
#   ci/nix-build.sh KERNEL_DIR OUT_DIR SYSTEM "VARIANT [VARIANT...]"
#
# KERNEL_DIR is a kernel-builder flake (kernels-src/<name>). Each variant is
# `nix build KERNEL_DIR#redistributable.<variant>` through the pipeline's nix
# backend (`pipeline build --backend nix --variant`), which also copies the
# result out of the store and checks its layout: OUT_DIR/<variant>/, what
# `pipeline check` reads. The variants share the toolchain, so after the first
# one Nix only compiles. Extra `nix build` arguments can be given in
# NIX_BUILD_OPTIONS (space-separated, e.g. "--impure" or an --override-input).
# The pipeline's nix backend refuses a dirty git tree and a kernel flake.lock
# that is missing or not the workspace's pin, and runs nix with
# --no-update-lock-file: a CI build never locks anything itself.
set -euo pipefail

if [ "$#" -ne 4 ]; then
  echo "usage: ci/nix-build.sh KERNEL_DIR OUT_DIR SYSTEM \"VARIANT [VARIANT...]\"" >&2
  exit 2
fi
kernel_dir=$1
out_dir=$2
system=$3
read -r -a variants <<< "$4"
read -r -a extra <<< "${NIX_BUILD_OPTIONS:-}"
if [ "${#variants[@]}" -eq 0 ]; then
  echo "ci/nix-build.sh: no variants to build" >&2
  exit 2
fi

# A runner label that points at the wrong machine would otherwise fail deep in
# the build with an unrelated-looking error.
host_system=$(nix --extra-experimental-features nix-command eval --impure --raw --expr builtins.currentSystem)
if [ "$host_system" != "$system" ]; then
  echo "::error::this runner is $host_system but the matrix row wants $system: check the runner label in the matrix policy"
  exit 1
fi

options=()
for arg in "${extra[@]}"; do
  options+=("--nix-option=$arg")
done
for variant in "${variants[@]}"; do
  python -m pipeline build "$kernel_dir" --backend nix --variant "$variant" --out "$out_dir" ${options[@]+"${options[@]}"}
done
