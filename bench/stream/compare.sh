#!/usr/bin/env bash
# Compares rooftop's `triad` kernel with a C STREAM-style triad (triad.c, OpenMP) on this
# machine: same array size, same timing policy (3 warm-up runs, then >= 10 runs and
# >= 0.25 s), same byte count (3 arrays x element size per element), decimal GB/s.
#
# Usage: bench/stream/compare.sh [N] [REPEATS] [fp32|fp64]
#   N        elements per array (default 33554432 = 2^25: 128 MiB per fp32 array)
#   REPEATS  how many C/rooftop pairs to run (default 3)
# Threads: OMP_NUM_THREADS for C, all CPUs for rooftop (set both to compare fewer).
#
# rooftop is run as `rooftop bench --kernel triad --single-config N --format json` when the
# CLI builds, else through the bench crate's `kernel` example (the same harness and
# CPU backend). Needs gcc with OpenMP, cargo and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${1:-33554432}
REPEATS=${2:-3}
DTYPE=${3:-fp32}
OUT=${TMPDIR:-/tmp}/rooftop-stream
mkdir -p "$OUT"

case "$DTYPE" in
  fp32) CTYPE=float ;;
  fp64) CTYPE=double ;;
  *) echo "dtype must be fp32 or fp64, got $DTYPE" >&2; exit 2 ;;
esac

gcc -O3 -fopenmp -march=native -DSTREAM_TYPE="$CTYPE" bench/stream/triad.c -o "$OUT/triad"

# Prints "median_gbs best_gbs" for rooftop's triad.
if cargo build --release -q -p rooftop-cli 2>/dev/null \
   && ./target/release/rooftop bench --help 2>/dev/null | grep -q -- --single-config; then
  ROOFTOP="cli"
else
  cargo build --release -q -p rooftop-bench --example kernel
  ROOFTOP="example"
fi
TARGET=${CARGO_TARGET_DIR:-target}

rooftop_triad() {
  if [ "$ROOFTOP" = cli ]; then
    "$TARGET/release/rooftop" bench --kernel triad --single-config "$N" --dtype "$DTYPE" \
      --format json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)["results"][0]
b, med, best = r["bytes"], r["median_s"], r["min_s"]
print("%.2f %.2f" % (b / med / 1e9, b / best / 1e9))'
  else
    local extra=""
    [ "$DTYPE" = fp64 ] && extra="fp64"
    "$TARGET/release/examples/kernel" triad "$N" $extra \
      | sed -E 's/.*median_gbs=([0-9.]+) best_gbs=([0-9.]+).*/\1 \2/'
  fi
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "triad n=$N $DTYPE, rooftop via $ROOFTOP"
printf "%-4s %14s %14s %14s %14s %10s %10s\n" run c_median_gbs c_best_gbs rt_median_gbs rt_best_gbs median_ratio best_ratio
for i in $(seq 1 "$REPEATS"); do
  read -r c_med c_best < <("$OUT/triad" "$N" | sed -E 's/.*best_gbs=([0-9.]+) median_gbs=([0-9.]+).*/\2 \1/')
  read -r r_med r_best < <(rooftop_triad)
  python3 -c "print(f'{$i:<4} {$c_med:14.2f} {$c_best:14.2f} {$r_med:14.2f} {$r_best:14.2f} {$r_med/$c_med:10.3f} {$r_best/$c_best:10.3f}')"
done
