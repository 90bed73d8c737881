#!/usr/bin/env bash
# The noarch kernel on the H200, end to end, in one device call (< 3 min):
# build kernels-src/softmax-triton (torch-cuda and torch-cpu: nothing compiled),
# check it, smoke the torch-cuda variant (the Triton kernels) on the GPU,
# publish the bundle to an embedded Hub started here, load it back with
# kernels.get_kernel in a fresh process (scripts/gpu/noarch_get_kernel.py),
# then bench it against eager, torch.softmax and torch.compile with the time
# left (the publication is the part only this machine can show).
#
# From the repository root (device tool): carry=[".whl"], command either
#   bash scripts/gpu/noarch_h200.sh                                   # alone
#   EXTRA_LAST="bash scripts/gpu/noarch_h200.sh" bash scripts/gpu/run_all_h200.sh
# (after run_all's install step it reuses /tmp/site; alone it installs .whl/ there itself).
# Results in $RES (default /tmp/results), also packed into $OUT/noarch-results.tgz
# when OUT is set:
#   softmax-triton-build.json   pipeline build --json (variants, kernel ids)
#   softmax-triton-check.json   pipeline check --json (metadata, digests, coverage)
#   softmax-triton-smoke.json   pipeline smoke --json on torch-cuda (values, opcheck, compile)
#   softmax-triton-h200.{json,md,png}  pipeline bench (eager, torch.softmax, torch.compile)
#   softmax-triton-publish.json pipeline publish --json (commits, the gate, verify: get_kernel + cells)
#   softmax-triton-get-kernel.json  get_kernel as a user: variant, id, errors, kernelize
#   noarch-log.txt              everything printed
# Env: DEADLINE (s, default 170; no step starts after it), REPS (default 100),
# BENCH_ONLY (passed to bench --only), SKIP_BENCH=1, HUB_PORT (default: a free one).
set -uo pipefail
export PYTHONUNBUFFERED=1
RES=${RES:-/tmp/results}
OUT=${OUT:-}
mkdir -p "$RES"
START=$(date +%s)
DEADLINE=${DEADLINE:-170}
left() { echo $(( DEADLINE - ($(date +%s) - START) )); }
lim() { local l; l=$(left); [ "$l" -gt 20 ] && echo "$l" || echo 20; }  # `timeout 0` would mean no limit
pack() { [ -z "$OUT" ] || { mkdir -p "$OUT" && tar -C "$RES" -czf "$OUT/noarch-results.tgz" . ; }; }
exec > >(tee -a "$RES/noarch-log.txt") 2>&1

if ! python3 -c "import kernels" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
[ -d /tmp/site ] && case ":${PYTHONPATH:-}:" in *":/tmp/site:"*) ;; *) export PYTHONPATH="/tmp/site:${PYTHONPATH:-}" ;; esac
export PYTHONPATH="$PWD:${PYTHONPATH:-}" PYTHONDONTWRITEBYTECODE=1
K=softmax-triton
SRC=kernels-src/$K
BUILD=/tmp/build-$K
python3 - <<'PY'
import importlib, torch
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "device", torch.cuda.get_device_name() if torch.cuda.is_available() else "none")
for name in ("triton", "kernels", "kernel_abi_check", "huggingface_hub", "starlette", "uvicorn", "jinja2", "git"):
    try:
        print(f"  {name} {getattr(importlib.import_module(name), '__version__', 'ok')}")
    except Exception as exc:
        print(f"  {name} MISSING ({type(exc).__name__}: {exc})")
PY

echo "== build (noarch: packaging only)"
rm -rf "$BUILD"
python3 -m pipeline build "$SRC" --backend local --out "$BUILD" --json > "$RES/$K-build.json" 2> "$RES/$K-build.log"
echo "build rc=$?"; tail -3 "$RES/$K-build.log"; ls "$BUILD"
echo "== check"
python3 -m pipeline check "$BUILD" --json > "$RES/$K-check.json" 2> "$RES/$K-check.log"
echo "check rc=$?"; grep -E "error|noarch" "$RES/$K-check.log" | head -5; pack

echo "== smoke (the host's variant: torch-cuda on the GPU, i.e. the Triton kernels)"
timeout "$(lim)" python3 -m pipeline smoke "$BUILD" --kernel "$SRC" --seeds 2 --json \
  > "$RES/$K-smoke.json" 2> "$RES/$K-smoke.log"
echo "smoke rc=$?"
python3 - "$RES/$K-smoke.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as exc:
    print("  no smoke report:", exc); raise SystemExit
print("  smoke:", "PASS" if d.get("passed") else "FAIL", d.get("counts"), d.get("variant"), d.get("device"))
for r in [r for r in d.get("results", []) if not r["passed"]][:12]:
    print("  FAIL", r["check"], r["name"], r["seed"], (r["message"] or "")[:200])
PY
pack

echo "== publish to an embedded Hub on this machine, then get_kernel"
HUB_ROOT=/tmp/noarch-hub
rm -rf "$HUB_ROOT" /tmp/noarch-kernels-cache
PORT=${HUB_PORT:-$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
python3 -m pipeline hub serve --root "$HUB_ROOT" --port "$PORT" > "$RES/noarch-hub.log" 2>&1 &
HUB_PID=$!
for _ in $(seq 1 40); do grep -q "^PIPELINE_HUB_TOKEN=" "$RES/noarch-hub.log" 2>/dev/null && break; sleep 0.5; done
TOKEN=$(sed -n 's/^PIPELINE_HUB_TOKEN=//p' "$RES/noarch-hub.log")
# The token never goes into $RES: drop it from the log that is packed.
sed -i 's/^PIPELINE_HUB_TOKEN=.*/PIPELINE_HUB_TOKEN=<redacted>/' "$RES/noarch-hub.log"
if [ -z "$TOKEN" ]; then
  echo "hub did not start:"; tail -5 "$RES/noarch-hub.log"
else
  python3 -m pipeline hub trust --root "$HUB_ROOT" kernels-pipeline
  ENDPOINT=http://127.0.0.1:$PORT
  HF_TOKEN=$TOKEN HF_HUB_DISABLE_XET=1 timeout "$(lim)" \
    python3 -m pipeline publish "kernels-pipeline/$K" --kernel "$SRC" --build-dir "$BUILD" --endpoint "$ENDPOINT" \
    --json > "$RES/$K-publish.json" 2> "$RES/$K-publish.log"
  echo "publish rc=$?"; tail -25 "$RES/$K-publish.log"
  # As a user: no token, an empty cache, a fresh process.
  env -u HF_TOKEN HF_ENDPOINT="$ENDPOINT" HF_HUB_DISABLE_XET=1 KERNELS_CACHE=/tmp/noarch-kernels-cache \
    HF_HOME=/tmp/noarch-hf-home timeout 120 \
    python3 scripts/gpu/noarch_get_kernel.py "kernels-pipeline/$K" --out "$RES/$K-get-kernel.json"
  echo "get_kernel rc=$?"
fi
kill "$HUB_PID" 2>/dev/null; wait "$HUB_PID" 2>/dev/null
pack

if [ "${SKIP_BENCH:-0}" != 1 ] && [ "$(left)" -gt 45 ]; then
  echo "== bench (vs eager, torch.softmax, torch.compile)"
  only=(); [ -n "${BENCH_ONLY:-}" ] && only=(--only "$BENCH_ONLY")
  timeout "$(lim)" python3 -m pipeline bench "$BUILD" --kernel "$SRC" --reps "${REPS:-100}" ${only[@]+"${only[@]}"} \
    --out "$RES/$K-h200.json" --plot "$RES/$K-h200.png" --markdown "$RES/$K-h200.md" > /dev/null 2> "$RES/$K-bench.log"
  echo "bench rc=$?"; tail -2 "$RES/$K-bench.log"
  python3 scripts/gpu/bench_summary.py "$RES/$K-h200.json"
  pack
else
  echo "== bench skipped (SKIP_BENCH=${SKIP_BENCH:-0}, $(left) s left)"
fi

echo "noarch total $(( $(date +%s) - START )) s"; pack
