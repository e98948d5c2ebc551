#!/usr/bin/env bash
# The issue-31 speed targets on a quiet machine with two cores (taskset -c 0,1), two
# rooftop binaries side by side, alternating. Written for the device machine, which is
# otherwise idle (the 2-core build machine is rarely quiet):
#
#   BASE=path/to/old/rooftop NEW=path/to/new/rooftop OUTF=results.txt scripts/bench/quiet-2core.sh
#
# Generates its inputs under ${WORK:-/tmp/q2} from the fixtures (bench/*/gen.py): the
# 27.5 MB MI300 trace, a 1 GB H100 trace and its `gzip -1`, 100,000 nested ops, eight
# ranks of 100 MB. One line per run: binary, input, wall s, user s, sys s, peak KB.
set -uo pipefail
cd "$(dirname "$0")/../.."
W=${WORK:-/tmp/q2}; mkdir -p "$W"
OUTF=${OUTF:-/dev/stdout}
K=tests/fixtures/kineto
run() { # label binary args...
  local label=$1 bin=$2; shift 2
  /usr/bin/time -f "$label %e %U %S %M" -o "$W/t" taskset -c 0,1 "$bin" "$@" -o /dev/null 2>/dev/null
  cat "$W/t" >> "$OUTF"
}
echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), taskset -c 0,1" >> "$OUTF"
echo "# binary input wall_s user_s sys_s peak_KB" >> "$OUTF"
python3 bench/trace/gen.py $K/tracelens_mi300/Falconsai_nsfw_image_detection__1016002.json.gz "$W/t27.json" --target-mb 27.5 >/dev/null
python3 bench/trace/gen.py $K/tracelens_h100/Falconsai_nsfw_image_detection__1016002.json.gz "$W/t1g.json" --target-mb 1000 >/dev/null
gzip -1 -k -f "$W/t1g.json"
ls -l "$W"/t27.json "$W"/t1g.json "$W"/t1g.json.gz >> "$OUTF"
for i in 1 2 3; do
  for b in base new; do
    bin=$BASE; [ $b = new ] && bin=$NEW
    run "$b t27.json" "$bin" trace "$W/t27.json" --format json
    run "$b t1g.json" "$bin" trace "$W/t1g.json" --format json
    run "$b t1g.json.gz" "$bin" trace "$W/t1g.json.gz" --format json
  done
done
python3 bench/nesting/gen.py 100000 "$W/nest.json" --step --kernel >/dev/null
run "new nest100k" "$NEW" trace "$W/nest.json" --format json
python3 bench/ranks/gen.py --ranks 8 --target-mb 100 "$W/ranks" >/dev/null 2>&1 \
  && du -sb "$W/ranks" >> "$OUTF" \
  && for b in base new; do bin=$BASE; [ $b = new ] && bin=$NEW; run "$b ranks8x100" "$bin" trace "$W/ranks"; done
echo "# done" >> "$OUTF"
