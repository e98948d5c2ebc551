#!/usr/bin/env bash
# Benchmark of `rooftop trace` on scaled JAX profiles (XPlane protobuf): MB/s and peak RSS.
#
#   bench/xplane/run.sh [COPIES...]        (default: 500 2500)
#
# Generates (once) `$BENCH_DIR/jax_<copies>.xplane.pb` from the fixture
# tests/fixtures/jax/amd_gfx950_te_fused_attn.xplane.pb with the `scale_xplane` example
# (every device and host line repeated COPIES times, shifted, fresh correlation ids),
# builds the release binary, then runs `rooftop trace FILE --format json -o /dev/null`
# RUNS times (default 5) under /usr/bin/time (`-f "%e %M"`) and prints wall time, MB/s
# (10^6 bytes per second) and peak RSS of the best and the median run. The machine
# should be otherwise idle.
set -euo pipefail
cd "$(dirname "$0")/../.."

BENCH_DIR=${BENCH_DIR:-/tmp/rooftop-bench}
RUNS=${RUNS:-5}
FIXTURE=${FIXTURE:-tests/fixtures/jax/amd_gfx950_te_fused_attn.xplane.pb}
COPIES=("$@")
[ ${#COPIES[@]} -eq 0 ] && COPIES=(500 2500)
TARGET=${CARGO_TARGET_DIR:-target}

cargo build --release --quiet -p rooftop-cli --bin rooftop
cargo build --release --quiet -p rooftop-ingest --example scale_xplane
mkdir -p "$BENCH_DIR"

measure() {
  local out
  for _ in $(seq "$RUNS"); do
    out=$(/usr/bin/time -f "%e %M" "$@" 2>&1 >/dev/null | tail -1)
    echo "$out"
  done | sort -n | awk '{ t[NR] = $1; m[NR] = $2 } END { mid = int((NR + 1) / 2); print t[1], m[1], t[mid], m[mid] }'
}

printf '%-26s %9s %8s %9s %10s %8s %10s\n' file MB best_s best_MB/s best_RSS_MB med_s med_RSS_MB
for n in "${COPIES[@]}"; do
  f="$BENCH_DIR/jax_${n}.xplane.pb"
  [ -f "$f" ] || "$TARGET/release/examples/scale_xplane" "$FIXTURE" "$f" "$n"
  bytes=$(stat -c %s "$f")
  read -r bt bm mt mm < <(measure "$TARGET/release/rooftop" trace "$f" --format json -o /dev/null)
  awk -v f="$(basename "$f")" -v b="$bytes" -v bt="$bt" -v bm="$bm" -v mt="$mt" -v mm="$mm" 'BEGIN {
    printf "%-26s %9.1f %8.2f %9.0f %10.0f %8.2f %10.0f\n", f, b / 1e6, bt, b / 1e6 / bt, bm / 1024, mt, mm / 1024 }'
done
