#!/usr/bin/env bash
# A profile-guided (PGO) release build of rooftop: the binary the speed figures of
# docs/validation.md are measured with from its forty-first round on.
#
#   scripts/build-pgo.sh            -> target/pgo/rooftop   (about 10 minutes on 2 cores)
#
# Three steps, from this checkout (nothing is downloaded but rustup's llvm-tools
# component, for llvm-profdata, when it is missing):
#   1. a release build instrumented to count every branch and call
#      (`-Cprofile-generate`), in target/pgo/gen;
#   2. that build run over every fixture under tests/fixtures/ with every reading
#      command and output format (trace, counters, analyze, model, devices), and over
#      three traces scaled up from the TraceLens H100 BERT fixture by bench/trace/gen.py
#      (one event per line as Kineto writes them, minified, gzipped), so that the
#      parser's loops count as on a real training step; llvm-profdata merges the counts
#      into target/pgo/rooftop.profdata;
#   3. the release build again with those counts (`-Cprofile-use`): LLVM lays the hot
#      paths out together, inlines by measured frequency and moves cold code aside.
#
# The scaled traces are not the benchmarks' (the 27.9 MB benchmark trace is scaled from
# the TraceLens MI300 image-classification fixture), so the benchmarks measure what the
# profile generalises to. A function the training never calls is compiled as cold (for
# size): every reading command and output format is trained for that reason.
#
# Then the PGO binary's output is compared byte for byte with a plain release build's
# (bench/identical/run.sh, every fixture): PGO changes how fast, never what.
# SKIP_IDENTITY=1 skips that comparison (and the plain build it needs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=target/pgo
HOST=$(rustc -vV | sed -n 's/^host: //p')

# llvm-profdata of the same LLVM as rustc (its raw profile format is LLVM's own).
if command -v rustup >/dev/null 2>&1; then
  rustup component add llvm-tools >/dev/null 2>&1 || true
fi
PROFDATA=$(find "$(rustc --print sysroot)/lib/rustlib" -name llvm-profdata -type f 2>/dev/null | head -1)
if [ -z "$PROFDATA" ]; then
  echo "build-pgo: llvm-profdata not found in the toolchain: run \`rustup component add llvm-tools\`" >&2
  exit 1
fi

rm -rf "$OUT/data" "$OUT/train"
mkdir -p "$OUT/data" "$OUT/train"

# --target: RUSTFLAGS then apply to rooftop and its dependencies only, not to build
# scripts and procedural macros (which would write counts of their own while building).
echo "== 1. instrumented release build ($OUT/gen)"
RUSTFLAGS="-Cprofile-generate=$ROOT/$OUT/data" \
  cargo build --release --locked -p rooftop-cli --target "$HOST" --target-dir "$OUT/gen"
GEN="$OUT/gen/$HOST/release/rooftop"

echo "== 2. training runs"
T="$OUT/train"
# The TraceLens H100 BERT trace: another model and vendor than the benchmarks' trace.
BERT=tests/fixtures/kineto/tracelens_h100/gaunernst_bert-small-uncased__1016001.json.gz
python3 bench/trace/gen.py "$BERT" "$T/h100.json" \
  --target-mb 12 >/dev/null
python3 bench/trace/gen.py "$BERT" "$T/h100.min.json" \
  --target-mb 4 --layout minified >/dev/null
python3 bench/trace/gen.py "$BERT" "$T/h100.json.gz" \
  --target-mb 8 --gzip >/dev/null

# run ARGS...: one training run, its output discarded (some fixtures are bad input on
# purpose: those runs exit non-zero, and their counts are kept too).
run() { "$GEN" "$@" >/dev/null 2>&1 || true; }

traces=()
while IFS= read -r f; do traces+=("$f"); done < <(
  find tests/fixtures/kineto -type f \( -name '*.json' -o -name '*.json.gz' \) | sort
  find tests/fixtures/kineto -mindepth 1 -maxdepth 1 -type d -name 'ranks*' | sort
  find tests/fixtures/jax -type f \( -name '*.xplane.pb' -o -name '*.trace.json.gz' \) | sort
)
for f in "${traces[@]}"; do
  for fmt in json table md html csv; do
    run trace "$f" --format "$fmt" --section all
  done
done
# These must succeed: without them the profile would hold next to nothing of the parser.
for f in "$T/h100.json" "$T/h100.json" "$T/h100.json" "$T/h100.min.json" "$T/h100.json.gz"; do
  "$GEN" trace "$f" --format json >/dev/null
  "$GEN" trace "$f" >/dev/null
done
run trace "$T/h100.min.json" --format perfetto -o "$T/h100.perfetto.json"
run trace tests/fixtures/kineto/ranks --format parquet -o "$T/parquet"

counters=()
while IFS= read -r f; do counters+=("$f"); done < <(
  find tests/fixtures/ncu tests/fixtures/nsys tests/fixtures/rocprof -type f \
    \( -name '*.csv' -o -name '*.sqlite' -o -name '*.db' -o -name '*.json' \) | sort
  find tests/fixtures/rocprof -mindepth 1 -maxdepth 1 -type d -name 'rocprof_compute*' | sort
)
for f in "${counters[@]}"; do
  for fmt in json table md html csv; do
    run counters "$f" --format "$fmt"
  done
done

for d in h100-sxm mi300x m4-max a100-sxm-80gb; do
  run analyze copy --elements 1000000 --device "$d"
  run analyze gemm --m 4096 --n 4096 --k 4096 --dtype bf16 --device "$d" --format json
  run analyze gemm --m 1 --n 4096 --k 4096 --dtype fp16 --wbits 4 --group 128 --device "$d" --time-us 42
  run model --preset llama-3-8b --device "$d"
  run model --preset llama-3-8b --device "$d" --format json
  run devices "$d"
done
for f in tests/fixtures/model/*.json; do run model --config "$f" --device h100-sxm; done
run devices
run devices --format json
run analyze copy --elements 1000 --device no-such-gpu
# No `bench` or `ceilings` run: their kernels measure the machine, and are compiled as
# without a profile (their functions are dropped from it below). Trained once, as
# the readers are, they ran up to 2x slower (the quantized GEMM) or faster by kernel.
#
# The counts of the kernels' crate and of the crates only it uses are dropped: a function
# without counts is compiled as in a plain build, where one with no calls counted would
# be compiled as cold (for size).
echo "== merging the counts ($OUT/rooftop.profdata)"
"$PROFDATA" merge -o "$OUT/rooftop.profdata" \
  --no-function='rooftop_bench|matrixmultiply|8fastrand|4half' "$OUT"/data/*.profraw

echo "== 3. release build with the profile ($OUT/use)"
RUSTFLAGS="-Cprofile-use=$ROOT/$OUT/rooftop.profdata" \
  cargo build --release --locked -p rooftop-cli --target "$HOST" --target-dir "$OUT/use"
cp "$OUT/use/$HOST/release/rooftop" "$OUT/rooftop"
echo "build-pgo: $OUT/rooftop"

if [ -z "${SKIP_IDENTITY:-}" ]; then
  echo "== the PGO binary's output against a plain release build's (bench/identical/run.sh)"
  cargo build --release --locked -p rooftop-cli
  bench/identical/run.sh target/release/rooftop "$OUT/rooftop" "$OUT/identical"
fi
