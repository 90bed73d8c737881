# Sourced by the device scripts that try a compile-time knob beside the shipped build in one call
# (v5_explore_h200.sh, v6_explore_h200.sh):
#   source scripts/gpu/variants.sh
#   variants KERNEL:NAME:TAG:DTYPE:FLAG ...   (FLAG: one flag, or several comma-separated)
# starts each variant's build (variant_build.sh: a copy of kernels-src/KERNEL with FLAG in its
# cuda-flags, /tmp/build-NAME) in the background and sets, for run_all_h200.sh:
#   VARIANT_SMOKES   (its EXTRA): smoke every variant with 2 seeds, all at once, before any timing;
#   VARIANT_BENCHES  (its EXTRA_LAST): bench each variant in DTYPE, alone on the GPU, after the
#                    shipped builds' benches, and compare it with the shipped build's record of
#                    this call ($RES/KERNEL-h200[-DTYPE].json) under the column TAG.
variants() {
  local v k name tag dt flag rec names=""
  VARIANT_BENCHES=""
  for v in "$@"; do
    IFS=: read -r k name tag dt flag <<< "$v"
    # shellcheck disable=SC2086  # FLAG may be several flags, comma-separated: one word each
    bash scripts/gpu/variant_build.sh "$k" "$name" ${flag//,/ } &
    names+=" $name"
    rec="h200"; [ "$dt" = bfloat16 ] || rec="h200-$dt"
    VARIANT_BENCHES+="python3 -m pipeline bench /tmp/build-$name --kernel kernels-src/$k --reps 100 --dtype $dt \
--out \"\$RES/$name-$rec.json\" > /dev/null 2> \"\$RES/$name-bench.log\"; echo \"bench $name rc=\$?\"
python3 scripts/gpu/compare_bench.py base=\"\$RES/$k-$rec.json\" $tag=\"\$RES/$name-$rec.json\"
"
  done
  VARIANT_SMOKES="for name in$names; do
  while [ ! -f /tmp/\$name.done ]; do sleep 2; done; echo \"build \$name \$(cat /tmp/\$name.done)\"; tail -n 1 /tmp/\$name.log
  python3 -m pipeline smoke /tmp/build-\$name --kernel /tmp/\$name --seeds 2 --json \\
    > \"\$RES/\$name-smoke.json\" 2> \"\$RES/\$name-smoke.log\" &
done; wait; for name in$names; do echo \"smoke \$name\"; python3 scripts/gpu/smoke_summary.py \"\$RES/\$name-smoke.json\"; done"
}
