#!/usr/bin/env bash
# Build the variants of one matrix row with Nix and lay them out as a build/ tree.
#
#   ci/nix-build.sh KERNEL_DIR OUT_DIR SYSTEM "VARIANT [VARIANT...]"
#
# KERNEL_DIR is a kernel-builder flake (kernels-src/<name>); each variant is its
# `redistributable.<variant>` output. All variants go to one `nix build` so Nix
# schedules them together and builds the shared toolchain once. The result is
# OUT_DIR/<variant>/ per variant, the layout `pipeline check` reads.
set -euo pipefail

if [ "$#" -ne 4 ]; then
  echo "usage: ci/nix-build.sh KERNEL_DIR OUT_DIR SYSTEM \"VARIANT [VARIANT...]\"" >&2
  exit 2
fi
kernel_dir=$1
out_dir=$2
system=$3
read -r -a variants <<< "$4"
if [ "${#variants[@]}" -eq 0 ]; then
  echo "ci/nix-build.sh: no variants to build" >&2
  exit 2
fi
case "$kernel_dir" in
  /*|./*) ;;
  *) kernel_dir="./$kernel_dir" ;;  # a bare name would be read as a flake registry id
esac

# A runner label that points at the wrong machine would otherwise fail deep in
# the build with an unrelated-looking error.
host_system=$(nix eval --impure --raw --expr builtins.currentSystem)
if [ "$host_system" != "$system" ]; then
  echo "::error::this runner is $host_system but the matrix row wants $system: check the runner label in the matrix policy"
  exit 1
fi

installables=()
for variant in "${variants[@]}"; do
  installables+=("${kernel_dir}#redistributable.${variant}")
done
nix build -L --no-link "${installables[@]}"

mkdir -p "$out_dir"
for variant in "${variants[@]}"; do
  # Already built above: this only asks Nix for the store path.
  path=$(nix build --no-link --print-out-paths "${kernel_dir}#redistributable.${variant}")
  rm -rf "${out_dir:?}/${variant}"
  if [ -d "$path/$variant" ]; then
    cp -rL "$path/$variant" "$out_dir/$variant"
  else
    cp -rL "$path" "$out_dir/$variant"
  fi
  chmod -R u+w "$out_dir/$variant"
  echo "built $variant -> $out_dir/$variant ($path)"
done
