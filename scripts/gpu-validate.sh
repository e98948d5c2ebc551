#!/usr/bin/env bash
# Validates rooftop's CUDA backend on a machine with an NVIDIA GPU, in one call.
#
# Needs: the NVIDIA driver (libcuda), the CUDA toolkit's NVRTC and cuBLAS/cuBLASLt
# (CUDA 12 or 13), a Rust toolchain >= 1.89, and the crate sources offline: either
# vendored sources (`cargo vendor` here, carried as vendor/ + .cargo/config.toml) so
# that `cargo build --offline` works, or a prebuilt binary in $ROOFTOP_BIN (then the
# test step is skipped unless $ROOFTOP_TEST_BIN names a prebuilt `cuda` test binary).
# Optional: ncu (Nsight Compute) and nsys (Nsight Systems), nvidia-smi, Vulkan (for
# the wgpu build).
#
# Writes everything under ${OUT:-gpu-validate-out}/ (no deeper than two folders):
#   commands.txt           every command line, in order, with its exit status
#   env.txt                nvidia-smi, driver / toolkit versions, library paths
#   tests.txt              cargo test --features cuda --test cuda -- --include-ignored, ROOFTOP_REQUIRE_CUDA=1
#   bench.json / bench.txt rooftop bench --backend cuda over the default suite
#   ceilings.json          rooftop ceilings --backend cuda (full sweep, tensor probes)
#   sweep.csv              its working-set sweep
#   gemm_bf16.txt          the cuBLASLt bf16 8192^3 probe (part of ceilings) in brief
#   ncu_<kernel>.csv       ncu --csv --page raw --set full for a few of our kernels
#   ncu_compare.csv        event time vs gpu__time_duration.sum per kernel (target 3%)
#   nsys_*.csv             nsys profile + nsys stats --format csv (when nsys exists)
#   summary.txt            pass/fail per step
set -uo pipefail

OUT="${OUT:-gpu-validate-out}"
mkdir -p "$OUT"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# CUDA 13 toolkits keep libnvrtc/libcublas in the toolkit's lib64, not always on the
# loader's path.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done

SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
: >"$OUT/commands.txt"

# run NAME LOGFILE CMD...: runs CMD, logs its exact command line and status.
run() {
  local name="$1" log="$2"
  shift 2
  printf '$ %q' "$1" >>"$OUT/commands.txt"
  printf ' %q' "${@:2}" >>"$OUT/commands.txt"
  echo >>"$OUT/commands.txt"
  local start end rc
  start=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  echo "  -> exit $rc after $((end - start)) s" >>"$OUT/commands.txt"
  if [ "$rc" -eq 0 ]; then
    echo "PASS $name" >>"$SUMMARY"
  else
    echo "FAIL $name (exit $rc, see $(basename "$log"))" >>"$SUMMARY"
  fi
  return "$rc"
}

# Environment.
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "uname: $(uname -a)"
  command -v nvidia-smi >/dev/null && nvidia-smi
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
  command -v nvcc >/dev/null && nvcc --version
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvrtc\.so|libcublas(Lt)?\.so' || true
  for d in /usr/local/cuda/lib64; do ls "$d" 2>/dev/null | grep -E 'nvrtc|cublas' || true; done
  cargo --version 2>/dev/null
  rustc --version 2>/dev/null
} >"$OUT/env.txt" 2>&1

# 1. Build (offline: the device machine has no network).
BIN="${ROOFTOP_BIN:-}"
if [ -z "$BIN" ]; then
  if run build-cuda "$OUT/build.txt" cargo build --offline --release -p rooftop-cli --features cuda; then
    BIN="$CARGO_TARGET_DIR/release/rooftop"
  fi
  if ldconfig -p 2>/dev/null | grep -q libvulkan; then
    run build-wgpu "$OUT/build_wgpu.txt" cargo build --offline --release -p rooftop-cli --features wgpu
  else
    echo "SKIP build-wgpu (no libvulkan)" >>"$SUMMARY"
  fi
fi
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  echo "FAIL no rooftop binary: build failed and ROOFTOP_BIN is unset" >>"$SUMMARY"
  cat "$SUMMARY"
  exit 1
fi

# 2. The backend's own tests, with a GPU required (they are #[ignore]d where none exists).
if [ -n "${ROOFTOP_TEST_BIN:-}" ]; then
  run tests "$OUT/tests.txt" env ROOFTOP_REQUIRE_CUDA=1 "$ROOFTOP_TEST_BIN" --include-ignored --test-threads=1
elif [ -z "${ROOFTOP_BIN:-}" ]; then
  run tests "$OUT/tests.txt" env ROOFTOP_REQUIRE_CUDA=1 cargo test --offline --release -p rooftop-bench --features cuda --test cuda -- --include-ignored --test-threads=1
fi

# 3. The suite and the ceilings.
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$OUT/clocks_before.txt" 2>&1
run bench "$OUT/bench.txt" "$BIN" bench --backend cuda --export-json "$OUT/bench.json"
run ceilings "$OUT/ceilings.txt" "$BIN" ceilings --backend cuda --format json -o "$OUT/ceilings.json" --sweep-csv "$OUT/sweep.csv"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$OUT/clocks_after.txt" 2>&1
# The cuBLASLt bf16 8192^3 probe is one of the ceilings' matrix entries.
python3 - "$OUT/ceilings.json" >"$OUT/gemm_bf16.txt" 2>&1 <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c = c.get("ceilings", c)
for p in c.get("compute", []):
    if p.get("variant") == "matrix":
        print(f"{p['precision']} matrix: {p['gflops']:.0f} GFLOP/s (theory {p.get('theoretical_gflops')})")
for n in c.get("notes", []):
    if "matrix" in n:
        print("note:", n)
PY
if grep -q 'bf16' "$OUT/gemm_bf16.txt" 2>/dev/null; then
  echo "PASS gemm-bf16-8192 (see gemm_bf16.txt)" >>"$SUMMARY"
else
  echo "FAIL gemm-bf16-8192: no bf16 matrix entry in ceilings.txt" >>"$SUMMARY"
fi

# 4. ncu: each kernel's event time (rooftop, median) vs the profiler's
#    gpu__time_duration.sum (mean over its launches); target within 3%.
if command -v ncu >/dev/null; then
  echo "kernel,config,rooftop_median_us,ncu_mean_us,diff_pct,within_3pct" >"$OUT/ncu_compare.csv"
  for spec in "triad:--sizes 64M" "rmsnorm:--single-config 8192,4096" "gemm:--single-config 2048,2048,2048" "softmax:--single-config 8192,4096"; do
    k="${spec%%:*}"
    args="${spec#*:}"
    # shellcheck disable=SC2086
    run "ncu-$k" "$OUT/ncu_$k.csv" ncu --csv --page raw --set full --clock-control none \
      --kernel-name-base function --kernel-name "regex:rt_" --launch-count 20 \
      "$BIN" bench --backend cuda --kernel "$k" $args --no-builtin --export-json "$OUT/ncu_$k.json"
    # shellcheck disable=SC2086
    "$BIN" bench --backend cuda --kernel "$k" $args --no-builtin --export-json "$OUT/time_$k.json" >/dev/null 2>&1
    python3 - "$OUT/ncu_$k.csv" "$OUT/time_$k.json" "$k" "$args" >>"$OUT/ncu_compare.csv" <<'PY'
import csv, json, sys
ncu_csv, bench_json, kernel, args = sys.argv[1:]
rows = list(csv.reader(l for l in open(ncu_csv) if l.startswith('"')))
head = rows[0]
col = head.index("gpu__time_duration.sum")
vals = []
for r in rows[2:]:
    try:
        vals.append(float(r[col].replace(",", "")))
    except (ValueError, IndexError):
        pass
unit = rows[1][col] if len(rows) > 1 else "ns"
scale = {"ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit, 1e-3)
ncu_us = sum(vals) / len(vals) * scale if vals else float("nan")
def medians(o):
    if isinstance(o, dict):
        if "median_s" in o:
            yield o["median_s"]
        for v in o.values():
            yield from medians(v)
    elif isinstance(o, list):
        for v in o:
            yield from medians(v)
m = list(medians(json.load(open(bench_json))))
ours_us = m[0] * 1e6 if m else float("nan")
diff = (ours_us - ncu_us) / ncu_us * 100 if ncu_us == ncu_us and ncu_us else float("nan")
print(f"{kernel},{args.strip()},{ours_us:.3f},{ncu_us:.3f},{diff:.2f},{abs(diff) <= 3}")
PY
  done
else
  echo "SKIP ncu (not on PATH)" >>"$SUMMARY"
fi

# 5. nsys (not on the PATH of every image; Nsight Compute ships a copy).
NSYS="$(command -v nsys || ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)"
if [ -n "$NSYS" ]; then
  run nsys-profile "$OUT/nsys_profile.txt" "$NSYS" profile -o "/tmp/rooftop_nsys" --force-overwrite true \
    "$BIN" bench --backend cuda --kernel triad --sizes 64M
  run nsys-stats "$OUT/nsys_stats.txt" "$NSYS" stats --format csv --report cuda_gpu_kern_sum \
    --output "$OUT/nsys" /tmp/rooftop_nsys.nsys-rep
else
  echo "SKIP nsys (not found)" >>"$SUMMARY"
fi

cat "$SUMMARY"
# The device tool returns at most 8 files from $OUT: GPU_VALIDATE_TAR=FILE packs everything
# into one archive (e.g. $OUT/../gpu-validate.tar.gz, outside the folder it packs).
if [ -n "${GPU_VALIDATE_TAR:-}" ]; then
  tar czf "$GPU_VALIDATE_TAR" -C "$OUT" . && echo "packed $OUT into $GPU_VALIDATE_TAR"
fi
! grep -q '^FAIL' "$SUMMARY"
