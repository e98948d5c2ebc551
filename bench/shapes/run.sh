#!/usr/bin/env bash
# Linearity check of `rooftop trace` on awkward shapes (bench/shapes/gen.py --list):
# each shape at N and 4N repetitions, the best of RUNS runs of
#   rooftop trace FILE --format FORMAT -o /dev/null
# under /usr/bin/time. Prints, per shape, the events, the file's size, the best wall
# time and peak RSS at both sizes and the ratio of the times: about 4 for a linear
# run, 4.5-5 for n log n, 16 for quadratic (below ~0.05 s the process's start-up
# dominates, and the ratio says little).
#
#   bench/shapes/run.sh [BIN]     (N=25000 RUNS=3 FORMAT=json BENCH_DIR=/tmp/rooftop-shapes)
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${1:-}
N=${N:-25000}
RUNS=${RUNS:-3}
FORMAT=${FORMAT:-json}
BENCH_DIR=${BENCH_DIR:-/tmp/rooftop-shapes}
if [ -z "$BIN" ]; then
  cargo build --release --quiet -p rooftop-cli --bin rooftop
  BIN=${CARGO_TARGET_DIR:-target}/release/rooftop
fi
mkdir -p "$BENCH_DIR"

# Best "wall_s rss_kb" of RUNS runs of "$@".
best() {
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1
  done | sort -n | head -1
}

echo "| shape | events at N | MB at N | wall at N | wall at 4N | ratio | RSS at 4N |"
echo "|---|---|---|---|---|---|---|"
for shape in $(python3 bench/shapes/gen.py --list | cut -d: -f1); do
  row=()
  for n in "$N" $((4 * N)); do
    f="$BENCH_DIR/${shape}_$n.json"
    [ -f "$f" ] || python3 bench/shapes/gen.py "$shape" "$n" "$f"
    cat "$f" >/dev/null
    row+=("$(stat -L -c %s "$f") $(grep -c '^{"ph"' "$f") $(best "$BIN" trace "$f" --format "$FORMAT" -o /dev/null)")
  done
  read -r b1 e1 t1 _ <<<"${row[0]}"
  read -r _ _ t4 r4 <<<"${row[1]}"
  awk -v s="$shape" -v e="$e1" -v b="$b1" -v t1="$t1" -v t4="$t4" -v r4="$r4" 'BEGIN {
    ratio = (t1 > 0) ? sprintf("%.1f", t4 / t1) : "—"
    printf "| %s | %d | %.1f | %.2f s | %.2f s | %s | %.0f MB |\n", s, e, b / 1e6, t1, t4, ratio, r4 / 1024 }'
done
