#!/usr/bin/env bash
# Validates rooftop's CUDA backend on a machine with an NVIDIA GPU, in one call of about
# five minutes (every step has its own time limit).
#
# Build here first (no CUDA needed to build): scripts/gpu-prepare.sh, then, with the
# device tool, carry .gpu-carry and run
#
#   ROOFTOP_BIN=.gpu-carry/rooftop ROOFTOP_TEST_BIN=.gpu-carry/cuda-tests scripts/gpu-validate.sh
#
# Needs there: the NVIDIA driver, NVRTC and cuBLAS/cuBLASLt (CUDA 12 or 13), python3 with
# torch (the reference timings), ncu (optional). Without ROOFTOP_BIN it builds with cargo
# (offline) instead.
#
# Writes under ${VALIDATE_OUT:-gpu-validate-out}/ (issue: CUDA on a real GPU):
#   commands.txt            every command line, in order, with its exit status and time
#   env.txt / nvidia-smi.txt  the machine, driver, toolkit, clocks
#   tests.txt               the CUDA integration tests, ROOFTOP_REQUIRE_CUDA=1
#   occupancy_compare.csv   rooftop's occupancy model vs cuOccupancyMaxActiveBlocksPerMultiprocessor
#   bench.json / bench.txt  rooftop bench --backend cuda over the default suite (checked, timed)
#   ceilings.json, h100.toml  rooftop ceilings --backend cuda (json to stdout, device file -o)
#   sweep.csv               the ceilings' working-set sweep
#   devicefile.txt          the device file loaded back with --device-file
#   torch_reference.json    PyTorch's copy and bf16 GEMM, CUDA events, same run
#   ncu_compare.csv         event time vs ncu gpu__time_duration.sum, clock control none/base
#   spec.json / spec.txt    examples/kernels through bench --spec
#   devices.txt             rooftop devices --local
#   summary.txt             pass/fail per step and the targets
set -uo pipefail

OUT="${VALIDATE_OUT:-gpu-validate-out}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
PY="${PYTHON:-python3}"
# ROOFTOP_BACKEND=mock rehearses the script on a machine without a GPU.
BACKEND="${ROOFTOP_BACKEND:-cuda}"

SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
: >"$OUT/commands.txt"

# run NAME SECONDS LOGFILE CMD...: runs CMD under a time limit, logs its command line,
# status and duration. ERRLOG=FILE sends its stderr there instead of LOGFILE.
run() {
  local name="$1" limit="$2" log="$3" err="${ERRLOG:-}"
  shift 3
  printf '$ %q' "$1" >>"$OUT/commands.txt"
  printf ' %q' "${@:2}" >>"$OUT/commands.txt"
  echo >>"$OUT/commands.txt"
  local start end rc
  start=$(date +%s)
  if [ -n "$err" ]; then
    timeout --kill-after=10 "$limit" "$@" >"$log" 2>"$err"
  else
    timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
  fi
  rc=$?
  end=$(date +%s)
  echo "  -> exit $rc after $((end - start)) s" >>"$OUT/commands.txt"
  if [ "$rc" -eq 0 ]; then
    echo "PASS $name ($((end - start)) s)" >>"$SUMMARY"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "FAIL $name (over its $limit s limit, see $(basename "$log"))" >>"$SUMMARY"
  else
    echo "FAIL $name (exit $rc, see $(basename "$log"))" >>"$SUMMARY"
  fi
  echo "[gpu-validate] $(tail -1 "$SUMMARY")"
  return "$rc"
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "uname: $(uname -a)"
  command -v nvcc >/dev/null && nvcc --version
  command -v ncu >/dev/null && ncu --version
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvrtc\.so|libcublas(Lt)?\.so' || true
  ls /usr/local/cuda/lib64 2>/dev/null | grep -E 'nvrtc|cublas' || true
} >"$OUT/env.txt" 2>&1
if command -v nvidia-smi >/dev/null; then
  {
    nvidia-smi
    nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE
  } >"$OUT/nvidia-smi.txt" 2>&1
fi
smi_clocks() {
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader >>"$OUT/clocks.csv" 2>&1
}

BIN="${ROOFTOP_BIN:-}"
if [ -z "$BIN" ]; then
  run build-cuda 1200 "$OUT/build.txt" cargo build --offline --release -p rooftop-cli --features cuda &&
    BIN="$CARGO_TARGET_DIR/release/rooftop"
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  echo "FAIL no rooftop binary: build failed and ROOFTOP_BIN is unset" >>"$SUMMARY"
  cat "$SUMMARY"
  exit 1
fi

# 1. The occupancy model against the driver's calculator (writes its comparison).
if [ -n "${ROOFTOP_TEST_BIN:-}" ]; then
  run occupancy 60 "$OUT/occupancy.txt" env ROOFTOP_REQUIRE_CUDA=1 \
    ROOFTOP_OCCUPANCY_CSV="$OUT/occupancy_compare.csv" "$ROOFTOP_TEST_BIN" --test-threads=1 \
    --include-ignored --exact occupancy_model_matches_the_driver_calculator
fi

# 2. The default suite, every kernel checked before it is timed.
smi_clocks
run bench 150 "$OUT/bench.txt" "$BIN" bench --backend "$BACKEND" --export-json "$OUT/bench.json"
smi_clocks
# 3. The ceilings: JSON on stdout, the device file through -o; it must load back.
ERRLOG="$OUT/ceilings.txt" run ceilings 100 "$OUT/ceilings.json" "$BIN" ceilings --backend "$BACKEND" --format json \
  --sweep-csv "$OUT/sweep.csv" -o "$OUT/h100.toml"
smi_clocks
# The device's id: its own, or the catalog entry it extends.
id=$(sed -n 's/^\(id\|extends\) *= *"\(.*\)"/\2/p' "$OUT/h100.toml" 2>/dev/null | head -1)
run device-file 20 "$OUT/devicefile.txt" "$BIN" --device-file "$OUT/h100.toml" devices "${id:-missing-id}"
# 4. PyTorch's own copy and GEMM in the same run.
run torch-reference 60 "$OUT/torch_reference.txt" "$PY" scripts/gpu/torch_reference.py "$OUT/torch_reference.json"
# 5. ncu against our event times (gpu__time_duration.sum only: one pass per launch).
if command -v ncu >/dev/null; then
  echo "kernel,function,config,clock_control,event_us,ncu_us,diff_pct,within_3pct" >"$OUT/ncu_compare.csv"
  for spec in "copy:--sizes 67108864" "triad:--sizes 67108864" "rmsnorm:--single-config 8192,4096" \
    "softmax:--single-config 8192,4096" "gemm:--single-config 2048,2048,2048"; do
    k="${spec%%:*}"
    args="${spec#*:}"
    # shellcheck disable=SC2086
    run "time-$k" 30 "$OUT/time_$k.txt" "$BIN" bench --backend "$BACKEND" --kernel "$k" $args \
      --no-builtin --no-ceilings --export-json "$OUT/time_$k.json"
    for cc in none base; do
      # shellcheck disable=SC2086
      run "ncu-$k-$cc" 45 "$OUT/ncu_${k}_$cc.csv" ncu --csv --metrics gpu__time_duration.sum \
        --clock-control "$cc" --kernel-name-base function --kernel-name "regex:^rt_" \
        --launch-count 20 "$BIN" bench --backend "$BACKEND" --kernel "$k" $args --no-builtin \
        --no-ceilings --min-runs 5 --min-time 0 --warmup 2
      "$PY" scripts/gpu/ncu_compare.py "$OUT/ncu_${k}_$cc.csv" "$OUT/time_$k.json" "$k" \
        "${args# }" "$cc" >>"$OUT/ncu_compare.csv" 2>>"$OUT/ncu_compare.err"
    done
  done
else
  echo "SKIP ncu (not on PATH)" >>"$SUMMARY"
fi
# 6. The example kernels from source, and the device list.
run spec 45 "$OUT/spec.txt" "$BIN" bench --backend "$BACKEND" --spec examples/kernels/kernels.toml \
  --no-ceilings --export-json "$OUT/spec.json"
run devices 15 "$OUT/devices.txt" "$BIN" devices --local
smi_clocks
# 7. The backend's own tests, a GPU required.
if [ -n "${ROOFTOP_TEST_BIN:-}" ]; then
  run tests 120 "$OUT/tests.txt" env ROOFTOP_REQUIRE_CUDA=1 "$ROOFTOP_TEST_BIN" --test-threads=1 \
    --include-ignored
fi
# 8. The targets, from the files above.
"$PY" scripts/gpu/summarize.py "$OUT" >>"$SUMMARY" 2>&1
cat "$SUMMARY"
! grep -q '^FAIL' "$SUMMARY"
