#!/usr/bin/env bash
# Nsight Compute beside torch.compile (issue 19): our kernel and the Triton
# kernel at the bench cases that still lose, one profiled launch each
# (scripts/gpu/ncu_probe.py), `--set full`, details page as CSV, and the SASS
# source page (stall reasons per instruction) for the decode case. Needs the
# builds of run_all_h200.sh (/tmp/build-<kernel>). Records under $RES.
set -uo pipefail
RES=${RES:-/tmp/results}
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
[ -n "$NCU" ] || { echo "ncu: not on this machine"; exit 0; }
"$NCU" --version | tail -n 1
probe() {  # name, kernel, then the cases (NCU_ARGS: more ncu flags, e.g. --cache-control none)
  local name=$1 kernel=$2; shift 2
  # shellcheck disable=SC2086  # NCU_ARGS: flags, one per word
  timeout 150 "$NCU" --profile-from-start off --set full ${NCU_ARGS:-} --csv --page details \
    python3 scripts/gpu/ncu_probe.py "$kernel" "/tmp/build-$kernel" "$@" > "$RES/ncu-$name.csv" 2> "$RES/ncu-$name.log"
  echo "ncu $name rc=$? ($(wc -l < "$RES/ncu-$name.csv") lines)"; grep -E "ERR|rror" "$RES/ncu-$name.log" | head -n 3
}
sass_probe() {  # name, kernel, one case: the SASS source page (stall reasons per instruction); NCU_ARGS as above
  local name=$1 kernel=$2 case=$3
  # shellcheck disable=SC2086  # NCU_ARGS: flags, one per word
  timeout 120 "$NCU" --profile-from-start off --set full ${NCU_ARGS:-} --csv --page source --print-source sass \
    python3 scripts/gpu/ncu_probe.py "$kernel" "/tmp/build-$kernel" "$case" > "$RES/ncu-$name.csv" 2> "$RES/ncu-$name.log"
  echo "ncu $name rc=$? ($(wc -l < "$RES/ncu-$name.csv") lines)"
}
WHAT=${1:-"rmsnorm rope sass"}   # which probes: rmsnorm rope sass fused rope-decode adaln fp32 adaln-fp32 rope-hot boost
case " $WHAT " in *" rmsnorm "*)
  probe rmsnorm rmsnorm rms_norm/8x4096 rms_norm/128x4096 rms_norm/65536x128 rms_norm/8192x7168 rms_norm/4096x8192 ;; esac
case " $WHAT " in *" rope "*)
  probe rope rope rope/qwen3/1x32x4096x128 rope/ltx/2x16384x2048 rope/qwen3/decode/8x32x1x128 ;; esac
case " $WHAT " in *" fused "*)  # 2026-12-02 third session: the fused op's and per-head misses
  probe fused rmsnorm fused_add_rms_norm/64x4096 fused_add_rms_norm/512x4096 fused_add_rms_norm/4096x4096 \
    rms_norm/262144x128 ;; esac
case " $WHAT " in *" rope-decode "*)
  probe rope-decode rope rope/qwen3/decode/64x32x1x128 rope/qwen3/1x32x4096x128 ;; esac
case " $WHAT " in *" adaln "*)
  probe adaln adaln adaln/layer/8x4096x1152 adaln/rms/1x384x2048 adaln/layer/2x256x1152 ;; esac
case " $WHAT " in *" fp32 "*)  # 2026-12-03: float32's streaming rows, where torch.compile passes the copy
  probe fp32 rmsnorm rms_norm/32768x4096 rms_norm/8192x2048 --dtype float32 ;; esac
case " $WHAT " in *" adaln-fp32 "*)  # 2026-12-02 fifth session: adaln's float32 RMS rows of 2048
  probe adaln-fp32 adaln adaln/rms/2x16384x2048 adaln/rms/1x384x2048 --dtype float32 ;; esac
case " $WHAT " in *" rope-hot "*)  # rope's decode with L2 left warm, as under graph replay; and its SASS stalls
  NCU_ARGS="--cache-control none" probe rope-hot rope rope/qwen3/decode/8x32x1x128 rope/qwen3/decode/1x32x1x128
  NCU_ARGS="--cache-control none" sass_probe rope-sass rope rope/qwen3/decode/8x32x1x128 ;; esac
case " $WHAT " in *" boost "*)  # 2026-12-03 eighth session: rmsnorm's bf16 misses at the GPU's own clocks
  # (ncu locks the SM clock at base by default; the bench runs at boost), caches flushed as before
  NCU_ARGS="--clock-control none" probe boost rmsnorm rms_norm/8192x7168 rms_norm/4096x8192 rms_norm/65536x128 \
    fused_add_rms_norm/512x4096 ;; esac
case " $WHAT " in *" sass "*)
  sass_probe rmsnorm-sass rmsnorm rms_norm/8x4096 ;; esac
