#!/usr/bin/env bash
# `rooftop counters` on a large Nsight Systems SQLite export: wall time, CPU seconds and
# peak RSS, the old binary against the new one alternately, and optionally the
# instruction counts under callgrind (load-independent) on a smaller export.
#
#   bench/counters/run.sh OLD_BIN NEW_BIN [KERNELS]        (default 1000000)
#
# Generates (once) `$BENCH_DIR/nsys_<KERNELS>.sqlite` with gen.py, then runs
# `rooftop counters F -o /dev/null` (the table) and `--format csv -o /dev/null` RUNS
# times (default 3) per binary under /usr/bin/time. CALLGRIND=N also counts the
# instructions of one table run of each binary on an N-kernel export (N=100000 takes a
# few minutes). Prints the load average first: on a shared machine compare CPU seconds
# and instructions, not wall times.
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=$(readlink -f "$1")
NEW=$(readlink -f "$2")
N=${3:-1000000}
BENCH_DIR=${BENCH_DIR:-/tmp/rooftop-bench}
RUNS=${RUNS:-3}
mkdir -p "$BENCH_DIR"
db() { # KERNELS: the export's path, generated once
  local f="$BENCH_DIR/nsys_$1.sqlite"
  [ -f "$f" ] || python3 bench/counters/gen.py nsys-sqlite "$1" "$f"
  echo "$f"
}
F=$(db "$N")
echo "load: $(uptime | sed 's/.*load average: //')   file: $F ($(stat -c %s "$F") bytes)"
printf '%-5s %-6s %9s %12s %10s\n' bin format wall_s cpu_s rss_MB
for _ in $(seq "$RUNS"); do
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    for fmt in table csv; do
      /usr/bin/time -f "%e %U %S %M" -o "$BENCH_DIR/time.txt" "$bin" counters "$F" --format "$fmt" -o /dev/null
      read -r wall user sys rss <"$BENCH_DIR/time.txt"
      awk -v w="$which" -v f="$fmt" -v a="$wall" -v u="$user" -v s="$sys" -v m="$rss" \
        'BEGIN { printf "%-5s %-6s %9.2f %12.2f %10.0f\n", w, f, a, u + s, m / 1024 }'
    done
  done
done
if [ -n "${CALLGRIND:-}" ]; then
  S=$(db "$CALLGRIND")
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" counters "$S" -o /dev/null 2>&1 |
      sed -n 's/.*Collected : //p')
    echo "$which: $ir instructions ($CALLGRIND kernels, table)"
  done
fi
