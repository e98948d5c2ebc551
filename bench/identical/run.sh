#!/usr/bin/env bash
# Output identity before/after a change: runs two rooftop binaries over every trace and
# counter fixture and compares their outputs byte for byte.
#
#   bench/identical/run.sh OLD_BIN NEW_BIN [OUT_DIR]
#
# Per Kineto trace, rank directory and JAX profile under tests/fixtures/ (and the larger
# generated traces listed in $EXTRA, space-separated paths, if set):
#   rooftop trace F --format json
#   rooftop trace F --section all            (the table)
#   rooftop trace F --section all --format md
#   rooftop trace F --format perfetto        (a directory's refusal, for rank directories)
# per nsys / rocpd database:
#   rooftop counters F --format json
# Outputs go to OUT_DIR/{old,new}/ (default a temporary folder); stderr is kept beside
# stdout, with the exit code. Exit 0 when every output is identical, 1 otherwise (the
# differing files are listed).
set -uo pipefail
cd "$(dirname "$0")/../.."
OLD=$(readlink -f "$1")
NEW=$(readlink -f "$2")
OUT=${3:-$(mktemp -d)}
mkdir -p "$OUT/old" "$OUT/new"

inputs=()
while IFS= read -r f; do inputs+=("$f"); done < <(
  find tests/fixtures/kineto -type f \( -name '*.json' -o -name '*.json.gz' \) | sort
  find tests/fixtures/kineto -mindepth 1 -maxdepth 1 -type d -name 'ranks*' | sort
  find tests/fixtures/jax -maxdepth 1 -type f -name '*.xplane.pb' | sort
)
for f in ${EXTRA:-}; do inputs+=("$f"); done
dbs=(tests/fixtures/nsys/sqlite/*.sqlite tests/fixtures/rocprof/rocpd/*.db)

# run WHICH BIN NAME ARGS...: one output file (stdout, then stderr, then the exit code).
run() {
  local which=$1 bin=$2 name=$3; shift 3
  local o="$OUT/$which/$name"
  "$bin" "$@" >"$o" 2>"$o.err"
  echo "exit $?" >>"$o.err"
}

n=0
for f in "${inputs[@]}"; do
  key=$(echo "$f" | tr '/' '_')
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    run "$which" "$bin" "$key.json" trace "$f" --format json
    run "$which" "$bin" "$key.all.txt" trace "$f" --section all
    run "$which" "$bin" "$key.all.md" trace "$f" --section all --format md
    run "$which" "$bin" "$key.perfetto.json" trace "$f" --format perfetto
  done
  n=$((n + 1))
done
for f in "${dbs[@]}"; do
  key=$(echo "$f" | tr '/' '_')
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    run "$which" "$bin" "$key.counters.json" counters "$f" --format json
  done
  n=$((n + 1))
done

if diff -rq "$OUT/old" "$OUT/new"; then
  echo "identical: $n inputs, $(find "$OUT/new" -type f | wc -l) outputs ($OUT)"
else
  echo "DIFFERENT (outputs in $OUT)"
  exit 1
fi
