#!/usr/bin/env bash
# Scale of multi-rank `rooftop trace`: wall time, CPU time and peak RSS (/usr/bin/time -v)
# for 8 and 64 ranks of ~200 MB each and for the reduce over 1,024 ranks' tables, plus
# per-rank parse throughput (MB/s of JSON per CPU-second). Results go to stdout as a
# Markdown table (docs/validation.md records them).
#
#   BENCH_DIR=/tmp/rooftop-ranks bench/ranks/run.sh [all|8|64|1024|per-rank]
#
# Needs ~14 GB free under BENCH_DIR for the 64-rank set (13 GB of JSON, then its
# tables) and ~5 GB for the 1,024-rank set; each set is deleted after its runs unless
# KEEP=1. Measure on an idle machine: the numbers here are the machine's, not rooftop's,
# when other work shares the cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${BENCH_DIR:-/tmp/rooftop-ranks}
WHAT=${1:-all}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$DIR"
cargo build --release --locked -p rooftop-cli >/dev/null 2>&1 || cargo build --release -p rooftop-cli >/dev/null
R=$(readlink -f target/release/rooftop)
GEN="python3 bench/ranks/gen.py"

# measure LABEL CMD...: one row of the table.
measure() {
  local label=$1; shift
  /usr/bin/time -v "$@" >/dev/null 2>"$DIR/time.txt" || { cat "$DIR/time.txt"; exit 1; }
  local wall user sys rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$DIR/time.txt")
  user=$(sed -n 's/.*User time (seconds): //p' "$DIR/time.txt")
  sys=$(sed -n 's/.*System time (seconds): //p' "$DIR/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$DIR/time.txt")
  printf '| %s | %s | %.1f s | %.0f MB |\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$(echo "$rss / 1000" | bc)"
}

echo "| run | wall | CPU (user+sys) | peak RSS |"
echo "|---|---|---|---|"

traces_set() { # N SIZE_MB: a set of N ranks of SIZE_MB each (8 per node, TP 8, straggler rank 5)
  local n=$1 mb=$2 out="$DIR/r$1"
  [ -f "$out/rank$((n - 1)).json" ] || $GEN "$out" --ranks "$n" --target-mb "$mb" --tp 8 --kernels 4 \
    --layers 4 --straggler 5 --delay-us 200 --jitter-us 20 --busbw-gbs 40 --procs "$JOBS" 2>/dev/null
  echo "$out"
}

if [ "$WHAT" = all ] || [ "$WHAT" = per-rank ] || [ "$WHAT" = 8 ]; then
  s=$(traces_set 8 200)
  f="$s/rank0.json"
  mb=$(( $(stat -c %s "$f") / 1000000 ))
  measure "one rank ($mb MB): analysis, 1 thread" "$R" trace "$f" --threads 1 --format json -o /dev/null
  measure "one rank ($mb MB): map to Parquet, 1 thread" "$R" trace "$f" --threads 1 --format parquet -o "$DIR/one"
  total=$(( $(du -sb "$s" | cut -f1) / 1000000 ))
  measure "8 ranks ($total MB): cross-rank report from traces" "$R" trace "$s" --gpus-per-node 8 --format json -o /dev/null
  measure "8 ranks: map to Parquet" "$R" trace "$s" --format parquet -o "$DIR/t8"
  measure "8 ranks: reduce from tables" "$R" trace "$DIR/t8" --gpus-per-node 8 --format json -o /dev/null
  [ "${KEEP:-0}" = 1 ] || rm -rf "$s" "$DIR/t8" "$DIR/one"
fi

if [ "$WHAT" = all ] || [ "$WHAT" = 64 ]; then
  s=$(traces_set 64 200)
  total=$(( $(du -sb "$s" | cut -f1) / 1000000 ))
  measure "64 ranks ($total MB): cross-rank report from traces" "$R" trace "$s" --gpus-per-node 8 --format json -o /dev/null
  measure "64 ranks: map to Parquet" "$R" trace "$s" --format parquet -o "$DIR/t64"
  measure "64 ranks: reduce from tables" "$R" trace "$DIR/t64" --gpus-per-node 8 --format json -o /dev/null
  [ "${KEEP:-0}" = 1 ] || rm -rf "$s" "$DIR/t64"
fi

if [ "$WHAT" = all ] || [ "$WHAT" = 1024 ]; then
  # 1,024 ranks of ~4.5 MB: 125 steps x 4 layers x (TP + DP all-reduce) = 1,000
  # collectives per rank, 1,024,000 in all: the reduce's work, whatever the trace size.
  out="$DIR/r1024"
  [ -f "$out/rank1023.json" ] || $GEN "$out" --ranks 1024 --steps 125 --layers 4 --kernels 1 --tp 8 \
    --straggler 5 --delay-us 200 --jitter-us 20 --busbw-gbs 40 --procs "$JOBS" 2>/dev/null
  total=$(( $(du -sb "$out" | cut -f1) / 1000000 ))
  measure "1,024 ranks ($total MB): map to Parquet" "$R" trace "$out" --format parquet -o "$DIR/t1024"
  measure "1,024 ranks: reduce from tables" "$R" trace "$DIR/t1024" --gpus-per-node 8 --format json -o "$DIR/r1024.json"
  python3 -c "
import json; c = json.load(open('$DIR/r1024.json'))['cross_rank']
s = c['stragglers'][0]; a = c['collectives']
print('<!-- 1,024 ranks: %d kernels, %d matched instances, straggler rank %d (last %d times) -->'
      % (a['kernels'], a['matched'], s['rank'], s['times_last']))"
  [ "${KEEP:-0}" = 1 ] || rm -rf "$out" "$DIR/t1024" "$DIR/r1024.json"
fi
