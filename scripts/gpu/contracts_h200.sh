#!/usr/bin/env bash
# Smoke (the op contracts bound in build.toml plus each project's own cases)
# for every built kernel on the H200, in parallel, one JSON report per kernel
# and a summary. Run from the repository root on the device after
# scripts/gpu/run_all_h200.sh has built /tmp/build-<kernel> and installed the
# wheels, e.g. as its EXTRA step:
#   EXTRA="bash scripts/gpu/contracts_h200.sh" bash scripts/gpu/run_all_h200.sh
# Writes to $RES:
#   <kernel>-contracts.json   `pipeline smoke --json`: results, coverage per op,
#                             warnings, delegation (CUDA kernel names), the seed
#   <kernel>-contracts.log    stderr of that run
#   contracts-summary.json    per kernel: exit code, seconds, passed, seed,
#                             counts, coverage, first failures, warning codes,
#                             delegation verdicts
# Env: KERNELS (default: the four), BUILD_PREFIX (default /tmp/build-),
# SEEDS (trials per case, default 2), STEP_TIMEOUT (seconds, default 170).
set -uo pipefail
RES=${RES:-/tmp/results}
mkdir -p "$RES"
KERNELS=${KERNELS:-"rmsnorm geglu rope adaln"}
BUILD_PREFIX=${BUILD_PREFIX:-/tmp/build-}
SEEDS=${SEEDS:-2}
STEP_TIMEOUT=${STEP_TIMEOUT:-170}
export PYTHONPATH="$PWD:${PYTHONPATH:-}"

echo "== contracts: smoke of ${KERNELS} (seeds ${SEEDS}, timeout ${STEP_TIMEOUT} s)"
pids=(); names=()
for k in $KERNELS; do
  if [ ! -d "${BUILD_PREFIX}${k}" ]; then
    echo "contracts $k: no build at ${BUILD_PREFIX}${k}" | tee "$RES/$k-contracts.log"
    echo '{}' > "$RES/$k-contracts.json"
    continue
  fi
  (
    start=$(date +%s)
    timeout "$STEP_TIMEOUT" python3 -m pipeline smoke "${BUILD_PREFIX}${k}" --kernel "kernels-src/$k" \
      --seeds "$SEEDS" --no-op-checks --json > "$RES/$k-contracts.json" 2> "$RES/$k-contracts.log"
    rc=$?
    echo "{\"rc\": $rc, \"seconds\": $(( $(date +%s) - start ))}" > "$RES/$k-contracts.rc.json"
  ) &
  pids+=($!); names+=("$k")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  echo "contracts ${names[$i]} done"
done

python3 - "$RES" $KERNELS <<'PY'
import json, sys
from pathlib import Path

res, kernels = Path(sys.argv[1]), sys.argv[2:]
summary = {}
for k in kernels:
    entry = {}
    try:
        entry.update(json.loads((res / f"{k}-contracts.rc.json").read_text()))
    except Exception as exc:  # the run never finished
        entry["rc"] = None
        entry["error"] = str(exc)
    try:
        d = json.loads((res / f"{k}-contracts.json").read_text() or "{}")
    except Exception as exc:
        d = {}
        entry["error"] = f"no report: {exc}"
    entry.update({
        "passed": d.get("passed"), "device": d.get("device"), "variant": d.get("variant"),
        "seed": d.get("seed"), "seeds": d.get("seeds"), "counts": d.get("counts"),
        "untested": d.get("untested"),
        "coverage": [{key: c.get(key) for key in ("op", "contract", "how", "contract_cases", "project_cases",
                                                   "dtypes")} | {"shapes": len(c.get("shapes") or [])}
                     for c in d.get("coverage") or []],
        "failures": [f"{r['name']} seed {r['seed']}: {(r['message'] or '')[:300]}"
                     for r in d.get("results") or [] if not r["passed"]][:10],
        "warnings": sorted({w["code"] for w in d.get("warnings") or []}),
        "delegation": [{"op": x["op"], "delegates": x["delegates"], "kernels": x["kernels"][:5],
                        "aten": x["aten"][:5], "note": x.get("note", "")} for x in d.get("delegation") or []],
    })
    summary[k] = entry
    status = "PASS" if entry["passed"] else "FAIL"
    print(f"contracts {k}: {status} rc={entry.get('rc')} {entry.get('seconds')} s seed={entry['seed']} "
          f"counts={entry['counts']} warnings={entry['warnings']}")
    for c in entry["coverage"]:
        print(f"  {c['op']}: {c['contract']} ({c['how']}) {c['contract_cases']} contract + "
              f"{c['project_cases']} project cases, {c['shapes']} shapes")
    for x in entry["delegation"]:
        print(f"  delegation {x['op']}: delegates={x['delegates']} kernels={x['kernels'][:2]}")
    for f in entry["failures"]:
        print(f"  FAIL {f}")
(res / "contracts-summary.json").write_text(json.dumps(summary, indent=2) + "\n")
PY
