#!/usr/bin/env bash
# Why the CUDA FMA probe reaches ~41% of the fp32 FMA peak on an H100/H200: times the
# probe at several iteration counts and block sizes and profiles one launch with Nsight
# Compute (issue slots, warps per scheduler, stall reasons). Writes under
# ${FMA_OUT:-fma-probe-out}/. Needs ROOFTOP_BIN (a cuda build, scripts/gpu-prepare.sh).
set -uo pipefail
OUT="${FMA_OUT:-fma-probe-out}"
mkdir -p "$OUT"
BIN="${ROOFTOP_BIN:?set ROOFTOP_BIN}"
for iters in 4096 65536; do
  timeout 60 "$BIN" bench --backend cuda --kernel fma --variant vector --single-config "$iters" \
    --no-builtin --no-ceilings --autotune \
    --export-json "$OUT/fma_$iters.json" >"$OUT/fma_$iters.txt" 2>&1
  echo "iters=$iters exit $?"
  grep -E "block|FLOP/s" "$OUT/fma_$iters.txt" | head -30
done
if command -v ncu >/dev/null; then
  timeout 90 ncu --clock-control none --kernel-name-base function --kernel-name regex:^rt_fma \
    --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section SchedulerStats --section WarpStateStats --section ComputeWorkloadAnalysis \
    --csv --page details "$BIN" bench --backend cuda --kernel fma --variant vector \
    --single-config 65536 --no-builtin --no-ceilings --min-runs 1 --min-time 0 --warmup 0 \
    >"$OUT/ncu_fma.csv" 2>"$OUT/ncu_fma.err"
  echo "ncu exit $?"
  python3 - "$OUT/ncu_fma.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')))
for r in rows:
    print(f'{r.get("Section Name","")[:24]:24} {r.get("Metric Name","")[:48]:48} {r.get("Metric Value","")} {r.get("Metric Unit","")}')
PY
fi
