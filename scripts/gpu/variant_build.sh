#!/usr/bin/env bash
# A copy of a kernel project built with extra nvcc flags, for the device scripts that bench
# a variant beside the shipped build:
#   bash scripts/gpu/variant_build.sh KERNEL NAME FLAG... &
# copies kernels-src/KERNEL to /tmp/NAME, adds FLAG... to its cuda-flags, builds the host
# variant into /tmp/build-NAME (log /tmp/NAME.log) and writes "rc=N" to /tmp/NAME.done last.
# Run it in the background next to run_all_h200.sh: it waits for the wheels that script
# installs into /tmp/site.
set -uo pipefail
kernel=$1 name=$2
shift 2
flags=$(printf '"%s", ' "$@")
rm -rf "/tmp/$name" "/tmp/$name.done" && cp -r "kernels-src/$kernel" "/tmp/$name"
if grep -q '^cuda-flags' "/tmp/$name/build.toml"; then
  sed -i "s/^cuda-flags = \[/cuda-flags = [$flags/" "/tmp/$name/build.toml"
else
  sed -i "0,/^backend = \"cuda\"/s//backend = \"cuda\"\ncuda-flags = [${flags%, }]/" "/tmp/$name/build.toml"
fi
grep -n "cuda-flags" "/tmp/$name/build.toml"
if ! python3 -c "import kernels" 2>/dev/null; then
  for _ in $(seq 60); do [ -d /tmp/site/kernels ] && break; sleep 1; done
  sleep 3
fi
PYTHONPATH="/tmp/site:$PWD" TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${VARIANT_JOBS:-4} python3 -m pipeline build "/tmp/$name" \
  --backend local --out "/tmp/build-$name" > "/tmp/$name.log" 2>&1
echo "rc=$?" > "/tmp/$name.done"
