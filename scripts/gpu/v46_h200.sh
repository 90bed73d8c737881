#!/usr/bin/env bash
# Prepared in the thirteenth session (2026-12-07, issue 19), not run: adaln's LayerNorm rows of 384
# (a small DiT, 16x256x384), 10-15 % behind torch.compile on an H100 (adaln NOTES.md), swept over
# every lane/pack split a tuning build can launch (sweep set adaln-more; torch.compile timed in the
# same process). Runs on either card. Prediction: fewer packs per lane on more lanes (2 x 32 or 1 x 64,
# torch.compile's shape for a narrow row is one program per row with one vector per thread) within
# ~3 % of torch.compile where the rule's 6 x 8 is 10 % behind; if so, a rule for rows under 1024 wide
# follows, with its own smoke and record.
# ~150 s. Device tool: carry [".whl"], command `bash scripts/gpu/v46_h200.sh`.
DEFAULT_DEADLINE=200
source scripts/gpu/short_call_env.sh
sed -i 's/^cuda-capabilities = .*/cuda-capabilities = ["9.0"]/' kernels-src/adaln/build.toml
VARIANT_JOBS=16 bash scripts/gpu/variant_build.sh adaln tune-adaln -DADALN_TUNE_ENV
echo "tuning build $(cat /tmp/tune-adaln.done) $(( $(date +%s) - START )) s"; tail -2 /tmp/tune-adaln.log
timeout "$(left)" python3 scripts/gpu/sweep.py adaln-more /tmp/build-tune-adaln --reps 100 \
  --json "$OUT/sweep-adaln-more.json" 2> "$OUT/sweep.log" | tee "$OUT/sweep.txt"
echo "sweep rc=${PIPESTATUS[0]} $(( $(date +%s) - START )) s"
