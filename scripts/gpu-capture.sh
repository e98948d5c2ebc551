#!/usr/bin/env bash
# Captures real NVIDIA profiler outputs for tests/fixtures/ in one device call of about
# four minutes: Nsight Compute exports of a PyTorch workload and of rooftop's own suite
# kernels, PyTorch (Kineto) traces of a small transformer training step (eager,
# torch.compile, CUDA-graph replay) with key_averages beside each, a JAX profile, and
# `rooftop profile --with ncu` end to end. Every step has its own time limit.
#
#   ROOFTOP_BIN=.gpu-carry/rooftop CAPTURE_OUT=/tmp/cap scripts/gpu-capture.sh
#
# Writes under ${CAPTURE_OUT:-gpu-capture-out}/: ncu/, kineto/, jax/, versions.txt,
# commands.txt, summary.txt, and rooftop's reading of each file (read_*.txt).
set -uo pipefail

OUT="${CAPTURE_OUT:-gpu-capture-out}"
mkdir -p "$OUT"/ncu "$OUT"/kineto "$OUT"/jax
OUT="$(cd "$OUT" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
BIN="${ROOFTOP_BIN:-$ROOT/target/release/rooftop}"
PY="${PYTHON:-python3}"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
: >"$OUT/commands.txt"

run() {
  local name="$1" limit="$2" log="$3"
  shift 3
  printf '$ %q' "$1" >>"$OUT/commands.txt"
  printf ' %q' "${@:2}" >>"$OUT/commands.txt"
  echo >>"$OUT/commands.txt"
  local start end rc
  start=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  echo "  -> exit $rc after $((end - start)) s" >>"$OUT/commands.txt"
  if [ "$rc" -eq 0 ]; then
    echo "PASS $name ($((end - start)) s)" >>"$SUMMARY"
  else
    echo "FAIL $name (exit $rc after $((end - start)) s, see ${log#"$OUT"/})" >>"$SUMMARY"
  fi
  echo "[gpu-capture] $(tail -1 "$SUMMARY")"
  return "$rc"
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  ncu --version 2>&1 | tail -2
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  "$PY" -c 'import jax; print("jax", jax.__version__)' 2>&1
  "$PY" -c 'import triton; print("triton", triton.__version__)' 2>&1
  "$PY" --version 2>&1
} >"$OUT/versions.txt"

W=scripts/gpu/ncu_workload.py
N="$OUT/ncu"
# (a) the PyTorch workload: one full-set capture, exported several ways by import (no GPU
# time), and one --metrics capture.
run ncu-torch-full 120 "$N/torch_full.log" ncu --set full --nvtx --nvtx-include "profile/" \
  --clock-control none -f -o "$N/torch" "$PY" $W
run ncu-torch-details 30 "$N/torch_details.csv" ncu --import "$N/torch.ncu-rep" --csv --page details
run ncu-torch-raw 30 "$N/torch_raw.csv" ncu --import "$N/torch.ncu-rep" --csv --page raw
run ncu-torch-base 30 "$N/torch_details_base.csv" ncu --import "$N/torch.ncu-rep" --csv \
  --page details --print-units base
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
M=$M,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
M=$M,sm__sass_thread_inst_executed_op_ffma_pred_on.sum,sm__inst_executed_pipe_tensor.sum
run ncu-torch-metrics 90 "$N/torch_metrics.csv" ncu --csv --metrics "$M" --nvtx \
  --nvtx-include "profile/" --clock-control none "$PY" $W
# (b) rooftop's own suite kernels.
# The first launch of each of our kernels (kernel-id context:stream:name:invocation).
B="$BIN bench --backend cuda --no-builtin --no-ceilings --min-runs 3 --min-time 0 --warmup 1"
run ncu-suite-full 120 "$N/suite_full.log" ncu --set full --clock-control none -f -o "$N/suite" \
  --kernel-name-base function --kernel-id "::regex:^rt_:1" bash -c \
  "$B --kernel copy --kernel triad --kernel rmsnorm --kernel softmax --kernel layernorm --sizes 16777216 && $B --kernel gemm --sizes 1024"
run ncu-suite-details 30 "$N/suite_details.csv" ncu --import "$N/suite.ncu-rep" --csv --page details
run ncu-suite-raw 30 "$N/suite_raw.csv" ncu --import "$N/suite.ncu-rep" --csv --page raw
# rooftop reads each export.
for f in torch_details torch_raw torch_details_base torch_metrics suite_details suite_raw; do
  run "read-$f" 30 "$OUT/read_$f.txt" "$BIN" counters "$N/$f.csv"
done
# rooftop profile end to end.
run profile-ncu 150 "$OUT/read_profile.txt" "$BIN" profile --with ncu --preset memory \
  --out "$N/profile" -- "$PY" $W

# Kineto traces.
for mode in eager graph compiled; do
  run "kineto-$mode" 200 "$OUT/kineto/$mode.log" "$PY" scripts/gpu/kineto_capture.py "$mode" "$OUT/kineto"
  [ -f "$OUT/kineto/$mode.trace.json.gz" ] &&
    run "read-kineto-$mode" 60 "$OUT/read_kineto_$mode.txt" "$BIN" trace "$OUT/kineto/$mode.trace.json.gz"
done

# JAX.
run jax 120 "$OUT/jax/jax.log" env XLA_PYTHON_CLIENT_PREALLOCATE=false "$PY" scripts/gpu/jax_capture.py "$OUT/jax/profile"
for f in $(find "$OUT/jax/profile" -name '*.xplane.pb' -o -name '*.trace.json.gz' 2>/dev/null); do
  cp "$f" "$OUT/jax/"
done

# nsys: not on the PATH there; try the copy Nsight Compute ships, briefly.
NSYS="$(command -v nsys || ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)"
if [ -n "$NSYS" ]; then
  run nsys 60 "$OUT/nsys.log" "$NSYS" profile -o "$OUT/nsys_triad" --force-overwrite true \
    "$BIN" bench --backend cuda --kernel triad --no-builtin --no-ceilings
  ls "$OUT"/nsys_triad* >>"$OUT/nsys.log" 2>&1
else
  echo "SKIP nsys (not found)" >>"$SUMMARY"
fi
ls -la "$N" "$OUT/kineto" "$OUT/jax" >"$OUT/files.txt" 2>&1
cat "$SUMMARY"
