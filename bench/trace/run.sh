#!/usr/bin/env bash
# Benchmark of `rooftop trace` on scaled real traces: MB/s and peak RSS.
#
#   bench/trace/run.sh [SIZES_MB...]        (default: 200 1000)
#
# Generates (once) `$BENCH_DIR/h100_<size>.json` from the TraceLens H100 ViT trace with
# bench/trace/gen.py (`LAYOUT=python` or `LAYOUT=minified`: the file on one line, as a
# trace re-saved by Python is, named `h100_<size>_<layout>.json`), builds the release binaries, then runs, RUNS times each (default 5):
#   - the reader alone:  examples/read_trace FILE
#   - end to end:        rooftop trace FILE --format json -o /dev/null
# under /usr/bin/time (`-f "%e %M"`: the elapsed time and "Maximum resident set size"
# that `-v` prints), and prints wall time, MB/s (10^6 bytes per second) and the
# peak RSS ("Maximum resident set size", mapped file pages included) of the best
# (fastest) and the median run. The machine should be otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/../.."

BENCH_DIR=${BENCH_DIR:-/tmp/rooftop-bench}
RUNS=${RUNS:-5}
FIXTURE=${FIXTURE:-tests/fixtures/kineto/tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz}
LAYOUT=${LAYOUT:-kineto}
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(200 1000)
TARGET=${CARGO_TARGET_DIR:-target}

cargo build --release --quiet -p rooftop-cli --bin rooftop
cargo build --release --quiet -p rooftop-ingest --example read_trace
mkdir -p "$BENCH_DIR"

# Runs "$@" RUNS times; prints "best_s best_rss_kb median_s median_rss_kb".
measure() {
  local out
  for _ in $(seq "$RUNS"); do
    out=$(/usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1)
    echo "$out"
  done | sort -n | awk '{ t[NR] = $1; m[NR] = $2 } END { mid = int((NR + 1) / 2); print t[1], m[1], t[mid], m[mid] }'
}

printf '%-22s %-12s %8s %9s %10s %8s %9s %10s\n' file what best_s best_MB/s best_RSS_MB med_s med_MB/s med_RSS_MB
for mb in "${SIZES[@]}"; do
  if [ "$LAYOUT" = kineto ]; then f="$BENCH_DIR/h100_${mb}.json"; else f="$BENCH_DIR/h100_${mb}_${LAYOUT}.json"; fi
  [ -f "$f" ] || python3 bench/trace/gen.py "$FIXTURE" "$f" --target-mb "$mb" --layout "$LAYOUT"
  bytes=$(stat -L -c %s "$f")
  # Warm the page cache: the benchmark measures parsing, not the disk.
  cat "$f" >/dev/null
  for what in reader rooftop; do
    if [ "$what" = reader ]; then
      cmd=("$TARGET/release/examples/read_trace" "$f")
    else
      cmd=("$TARGET/release/rooftop" trace "$f" --format json -o /dev/null)
    fi
    read -r bt br mt mr < <(measure "${cmd[@]}")
    awk -v f="$(basename "$f")" -v w="$what" -v b="$bytes" -v bt="$bt" -v br="$br" -v mt="$mt" -v mr="$mr" \
      'BEGIN { printf "%-22s %-12s %8.2f %9.0f %10.0f %8.2f %9.0f %10.0f\n", f, w, bt, b/1e6/bt, br/1024, mt, b/1e6/mt, mr/1024 }'
  done
done
