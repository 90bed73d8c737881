#!/usr/bin/env bash
# The model-level check of rmsnorm on the H200 (issue 15): a transformers
# Qwen3 from a config (4 layers, hidden 4096, Qwen3-8B's widths and vocab,
# random weights, bf16), its RMSNorms swapped in from a published rmsnorm
# through kernels.kernelize + LayerRepository, in a consumer venv with
# kernels 0.16.2 (the release transformers 5.17 accepts) and the image's
# transformers 5.17 / huggingface_hub 1.33 / torch; 128 and 2048 tokens:
# forward before/after (CUDA events, median of REPS), relative error of the
# logits against the same model in float32, modules swapped, kernel calls.
#
# Records under $RES: model-h200.json (`verify --model qwen3 --json`: the file
# the rmsnorm card reads from kernels-src/rmsnorm/benchmarks/results/),
# model-h200.log, model-publish.json/.log, and the command lines in
# model-h200.cmd.
#
# From the repository root, alone or as run_all_h200.sh's EXTRA/EXTRA_LAST
# (then it reuses /tmp/build-rmsnorm). Wheels: .whl/*.whl as for run_all
# (kernels 0.17.2 for the pipeline itself; for publish's embedded Hub also
# uvicorn, starlette, gitpython, gitdb, smmap, lz4 and blake3, which the
# H200 image lacks: publish stops at the first missing import) and, for the consumer venv,
# .whl/consumers/ holding kernels-0.16.2-py3-none-any.whl and
# kernels_data-0.16.2-*.whl (a subdirectory: run_all installs .whl/*.whl in
# one pip call, and two kernels releases there would conflict).
# Env: RES (results, default /tmp/results), DEVICE (cuda), TOKENS (128,2048),
# REPS (20), MODEL_SIZE (the model flags; CPU-sized for a dry run elsewhere).
set -uo pipefail
export PYTHONUNBUFFERED=1
RES=${RES:-/tmp/results}
mkdir -p "$RES"
exec > >(tee -a "$RES/model-h200.log") 2>&1
START=$(date +%s)
took() { echo "  ($(( $(date +%s) - START )) s so far)"; }

if ! python3 -c "import kernels" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl && export PYTHONPATH="/tmp/site:${PYTHONPATH:-}"
fi
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" MAX_JOBS="${MAX_JOBS:-8}"
# A Hub of its own (the embedded one, served by each command for its run) and no real-Hub token.
export XDG_DATA_HOME=${XDG_DATA_HOME:-/tmp/model-hub-data}
unset HF_ENDPOINT HF_TOKEN
# The consumer venv: offline, from the carried wheels, only the pinned packages
# (their dependencies are the image's); cached for a second run.
WHEELS=""
for d in .whl/consumers .whl; do [ -d "$d" ] && WHEELS="${WHEELS:+$WHEELS:}$PWD/$d"; done
export PIPELINE_CONSUMER_WHEELS=${PIPELINE_CONSUMER_WHEELS:-$WHEELS}
export PIPELINE_CONSUMER_NO_DEPS=${PIPELINE_CONSUMER_NO_DEPS:-1}
export PIPELINE_CONSUMER_CACHE=${PIPELINE_CONSUMER_CACHE:-/tmp/consumers}
python3 -c "import torch, transformers, huggingface_hub as h, kernels; print('host: torch', torch.__version__, \
'transformers', transformers.__version__, 'huggingface_hub', h.__version__, 'kernels', kernels.__version__)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"

BUILD=/tmp/build-rmsnorm
if ! ls -d "$BUILD"/*/ >/dev/null 2>&1; then
  echo "== build rmsnorm (host variant)"
  python3 -m pipeline build kernels-src/rmsnorm --backend local --out "$BUILD" --json > "$RES/model-build.json" \
    2> "$RES/model-build.log" || { echo "build failed"; tail -20 "$RES/model-build.log"; exit 1; }
  took
fi

echo "== publish kernels-pipeline/rmsnorm to the embedded Hub ($XDG_DATA_HOME)"
python3 -m pipeline publish kernels-pipeline/rmsnorm --kernel kernels-src/rmsnorm --build-dir "$BUILD" \
  --no-verify --json > "$RES/model-publish.json" 2> "$RES/model-publish.log"
rc=$?; echo "publish rc=$rc"; [ $rc -eq 0 ] || { tail -20 "$RES/model-publish.log"; exit 1; }
VERSION=$(python3 -c "import json; print(json.load(open('$RES/model-publish.json'))['version'])")
took

DEVICE=${DEVICE:-cuda}
TOKENS=${TOKENS:-128,2048}
MODEL_SIZE=${MODEL_SIZE:-"--layers 4 --hidden 4096 --intermediate 12288 --heads 32 --kv-heads 8 --head-dim 128 --vocab 151936"}
CMD="python3 -m pipeline verify kernels-pipeline/rmsnorm --version $VERSION --kernel kernels-src/rmsnorm --load-only \
--consumers none --model qwen3 --model-consumers kernels==0.16.2,kernels-data==0.16.2,huggingface_hub==1.33.0,transformers==5.17.0 \
$MODEL_SIZE --tokens $TOKENS --dtype bfloat16 --device $DEVICE --warmup 5 --reps ${REPS:-20} --json"
echo "$CMD" > "$RES/model-h200.cmd"
echo "== $CMD"
# shellcheck disable=SC2086
$CMD > "$RES/model-h200.json" 2> "$RES/model-verify.log"
rc=$?; echo "verify --model rc=$rc"; tail -5 "$RES/model-verify.log"
python3 - "$RES/model-h200.json" <<'PY'
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as exc:
    print("  no model report:", exc); raise SystemExit(1)
for m in doc.get("models", []):
    print(f"  {m['model']} on {m.get('device_name') or m.get('device')} with {m['consumer']}: "
          f"{'ok' if m['ok'] else 'FAILED'} {m.get('error') or ''}")
    for c in m.get("cases", []):
        print(f"    {c['tokens']:>5} tokens: {c['replaced']} swapped, {c['kernel_calls']} calls; forward "
              f"{c['stock_ms']:.3f} -> {c['kernel_ms']:.3f} ms ({c['speedup']:.2f}x); error vs fp32 "
              f"stock {c['stock_error']:.4f} kernel {c['kernel_error']:.4f}; {c['message']}")
PY
took
exit $rc
