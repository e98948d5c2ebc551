#!/usr/bin/env bash
# rooftop against its peers on the same Kineto trace: wall time, CPU time (user + sys)
# and peak RSS of the whole process (bench/peers/time1.py: what /usr/bin/time reports,
# with the wall time to the microsecond), best and median of RUNS runs each,
# alternating the tools so that machine load affects them alike.
#
#   bench/peers/run.sh TRACE [ROOFTOP_BIN]
#
# - rooftop: `rooftop trace TRACE --format json -o /dev/null` (every section).
# - HTA (HolisticTraceAnalysis, PyPI): bench/peers/hta_run.py — load the trace, then its
#   temporal, kernel, idle-time, launch, queue-length and critical-path analyses. Needs
#   a virtual environment: HTA_PY=/tmp/htaenv/bin/python, made with
#       python3 -m venv /tmp/htaenv
#       /tmp/htaenv/bin/pip install HolisticTraceAnalysis==0.5.0 "pandas<3"
# - TraceLens (AMD-AGI/TraceLens): run when TRACELENS_PY names a Python with TraceLens
#   importable (`TreePerfAnalyzer.from_file` + its perf-report tables); PyPI's
#   `tracelens` is an unrelated project, so there is no package to install: put a copy
#   of its source on the path, e.g. `PYTHONPATH=/tmp/tracelens-src
#   TRACELENS_PY=/tmp/htaenv/bin/python` (its dependencies are HTA's, above).
#
# RUNS (default 3). Prints a Markdown table, and each peer's time over rooftop's.
set -uo pipefail
cd "$(dirname "$0")/../.."
TRACE=$(readlink -f "$1")
R=$(readlink -f "${2:-target/release/rooftop}")
RUNS=${RUNS:-3}
HTA_PY=${HTA_PY:-/tmp/htaenv/bin/python}
TRACELENS_PY=${TRACELENS_PY:-}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tools=(rooftop)
[ -x "$HTA_PY" ] && tools+=(hta)
[ -n "$TRACELENS_PY" ] && tools+=(tracelens)

cmd_of() {
  case $1 in
    rooftop) echo "$R trace $TRACE --format json -o /dev/null" ;;
    hta) echo "$HTA_PY bench/peers/hta_run.py $TRACE" ;;
    tracelens) echo "$TRACELENS_PY bench/peers/tracelens_run.py $TRACE" ;;
  esac
}

cat "$TRACE" >/dev/null
for _ in $(seq "$RUNS"); do
  for t in "${tools[@]}"; do
    # shellcheck disable=SC2046
    python3 bench/peers/time1.py "$TMP/t" $(cmd_of "$t") 2>"$TMP/err" \
      || { echo "$t failed:"; tail -3 "$TMP/err"; continue; }
    echo "$(tail -1 "$TMP/t")" >>"$TMP/$t"
  done
done

mb=$(stat -L -c %s "$TRACE" | awk '{ printf "%.1f", $1 / 1e6 }')
echo "trace: $TRACE ($mb MB), $RUNS runs each, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| tool | wall best | wall median | CPU best (user+sys) | peak RSS (median) |"
echo "|---|---|---|---|---|"
declare -A best
for t in "${tools[@]}"; do
  [ -s "$TMP/$t" ] || continue
  # col N: the column's values sorted; best = first, median = middle (POSIX awk/sort).
  col() { awk -v k="$1" '{ print (k == 0 ? $2 + $3 : $k) }' "$TMP/$t" | sort -g; }
  n=$(wc -l <"$TMP/$t"); mid=$(((n + 1) / 2))
  wb=$(col 1 | head -1); wm=$(col 1 | sed -n "${mid}p"); cb=$(col 0 | head -1); rm=$(col 4 | sed -n "${mid}p")
  best[$t]=$wb
  printf '| %s | %.3f s | %.3f s | %.3f s | %.0f MB |\n' "$t" "$wb" "$wm" "$cb" "$(echo "$rm / 1024" | bc -l)"
done
echo
for t in "${tools[@]}"; do
  [ "$t" = rooftop ] && continue
  [ -n "${best[$t]:-}" ] && [ -n "${best[rooftop]:-}" ] \
    && awk -v a="${best[$t]}" -v b="${best[rooftop]}" -v t="$t" 'BEGIN { printf "%s / rooftop (best wall): %.1f×\n", t, a / b }'
done
