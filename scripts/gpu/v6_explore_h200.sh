#!/usr/bin/env bash
# Issue 19's next experiments, prepared in 2026-12-01's fifth session after its device time ran out
# (one call, ~420 s):
#  - rmsnorm's -DRMSNORM_WIDE_DECODE2=1 (decode batches of bf16/fp16 rows of 7168-8192 at two vectors
#    per thread; rmsnorm NOTES.md "Version 5 shipped", item 4) and adaln's -DADALN_F32_LANES4=1
#    (float32 rows past 256 packs at 4 packs per lane; adaln NOTES.md, fifth session) built beside
#    the shipped builds, smoked with 2 seeds (both at once, before any timing), then benched after
#    the shipped builds in the same call (rmsnorm in bf16, adaln in float32) and compared.
# Device tool: carry [".whl"], command `bash scripts/gpu/v6_explore_h200.sh`. To ship either knob:
# set its default to 1 and record (rmsnorm: v5_record3_h200.sh's steps with DTYPES="float16";
# adaln: KERNELS=adaln SEEDS=2 DTYPES="float16 float32" through run_all_h200.sh).
set -uo pipefail
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/*/build.toml
bash scripts/gpu/variant_build.sh rmsnorm rmsnorm-wd2 -DRMSNORM_WIDE_DECODE2=1 &
bash scripts/gpu/variant_build.sh adaln adaln-l4 -DADALN_F32_LANES4=1 &
SMOKES='for name in rmsnorm-wd2 adaln-l4; do
  while [ ! -f /tmp/$name.done ]; do sleep 2; done; echo "build $name $(cat /tmp/$name.done)"; tail -n 1 /tmp/$name.log
  python3 -m pipeline smoke /tmp/build-$name --kernel /tmp/$name --seeds 2 --json \
    > "$RES/$name-smoke.json" 2> "$RES/$name-smoke.log" &
done; wait; for name in rmsnorm-wd2 adaln-l4; do echo "smoke $name"; python3 scripts/gpu/smoke_summary.py "$RES/$name-smoke.json"; done'
LAST='for v in rmsnorm:rmsnorm-wd2:wd2:bfloat16:h200 adaln:adaln-l4:l4:float32:h200-float32; do
  IFS=: read -r k name tag dt base <<< "$v"
  python3 -m pipeline bench /tmp/build-$name --kernel kernels-src/$k --reps 100 --dtype $dt --out "$RES/$name-$base.json" \
    > /dev/null 2> "$RES/$name-bench.log"; echo "bench $name rc=$?"
  python3 scripts/gpu/compare_bench.py base="$RES/$k-$base.json" $tag="$RES/$name-$base.json"
done'
MAX_JOBS=8 DEADLINE=${DEADLINE:-480} KERNELS="rmsnorm adaln" SMOKE="" BENCH="rmsnorm" DTYPES="float32" \
  DTYPE_BENCH="adaln" TESTS=0 EXTRA="$SMOKES" EXTRA_LAST="$LAST" bash scripts/gpu/run_all_h200.sh
