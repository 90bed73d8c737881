#!/usr/bin/env bash
# Thirteenth session (2026-12-07, issue 19): the session's last ~450 s of device time, after three
# calls on an H100 (the tool gave an H100 for `nvidia-h200`). Which card comes decides the work:
# - an H200: rmsnorm as shipped smoked there with 1 seed, then its 4096-wide cases (v43_h200.sh: the
#   Must-show item whose H200 record is of the earlier build);
# - any other card: the launch sweep of the shapes outside the benchmark that torch.compile leads
#   (sweep set rmsnorm-more in sweep.py; torch.compile timed in the same process). Prediction, from
#   the H100's more_shapes record (results/archive/v41-h100-more-shapes.*): at 16384x896 one vector
#   per thread in registers (rows_one, 112 of 128 threads busy, "8,1,...") or rows_reg at one vector
#   on 128 threads comes within 3 % of torch.compile's 19.6 us where rows_async (the rule, 21.7 us)
#   is 10 % behind, since torch.compile's kernel for this row is one vector per thread; at 1x896 and
#   64x896 under graph replay the same launch gains 0.1-0.2 us over rows_reg<4>'s 4 rows per block;
#   the 12288-wide and per-head rows move by under 2 % between launches (no launch there is far from
#   torch.compile). Nothing ships from a sweep: a rule change needs its own smoke and record.
# Device tool: carry [".whl"], command `DEADLINE=… bash scripts/gpu/v44_h200.sh`.
DEFAULT_DEADLINE=400
source scripts/gpu/short_call_env.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  DEADLINE=$(left) bash scripts/gpu/v43_h200.sh
  exit
fi
VARIANT_JOBS=16 bash scripts/gpu/variant_build.sh rmsnorm tune-rmsnorm -DRMSNORM_TUNE_ENV
echo "tuning build $(cat /tmp/tune-rmsnorm.done) $(( $(date +%s) - START )) s"; tail -2 /tmp/tune-rmsnorm.log
# The rows print as they are timed: a sweep the deadline stops keeps what it printed in sweep.txt.
timeout "$(left)" python3 scripts/gpu/sweep.py rmsnorm-more /tmp/build-tune-rmsnorm --reps 100 \
  --json "$OUT/sweep-rmsnorm-more.json" 2> "$OUT/sweep.log" | tee "$OUT/sweep.txt"
echo "sweep rc=${PIPESTATUS[0]} $(( $(date +%s) - START )) s"
