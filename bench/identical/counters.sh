#!/usr/bin/env bash
# Output identity of `rooftop counters` before/after a change: every file and directory
# under tests/fixtures/{ncu,nsys,rocprof} (CSV exports, SQLite databases, workload and
# rocprofv3 folders; inputs a reader refuses count too, with their message), in every
# format (table, json, csv, md, html), each with and without --dispatches.
#
#   bench/identical/counters.sh OLD_BIN NEW_BIN [OUT_DIR]
#
# Outputs (stdout and stderr, then the exit code) go to OUT_DIR/{old,new}/ (default a
# temporary folder). Exit 0 when every output is identical, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/../.."
OLD=$(readlink -f "$1")
NEW=$(readlink -f "$2")
OUT=${3:-$(mktemp -d)}
mkdir -p "$OUT/old" "$OUT/new"
n=0
while IFS= read -r f; do
  key=$(echo "$f" | tr '/' '_')
  for fmt in table json csv md html; do
    for extra in "" "--dispatches"; do
      for which in old new; do
        bin=$OLD; [ "$which" = new ] && bin=$NEW
        o="$OUT/$which/$key.$fmt$extra"
        "$bin" counters "$f" --format "$fmt" $extra >"$o" 2>&1
        echo "exit $?" >>"$o"
      done
      n=$((n + 1))
    done
  done
done < <(find tests/fixtures/ncu tests/fixtures/nsys tests/fixtures/rocprof -mindepth 1 \
  \( -type f ! -name '*.md' ! -name '*.py' ! -name 'LICENSE*' ! -name '*.txt' -o -type d \) | sort)
if diff -rq "$OUT/old" "$OUT/new"; then
  echo "identical: $n outputs per binary ($OUT)"
else
  echo "DIFFERENT (outputs in $OUT)"
  exit 1
fi
