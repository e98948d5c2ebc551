#!/usr/bin/env bash
# Coverage-guided fuzzing of every reader on the stable toolchain: AFL++ through cargo-afl
# (crates.io; `cargo install cargo-afl` builds AFL++ from the source it bundles, with make
# and a C compiler, which this script installs from Debian when missing).
#
#     scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Runs each target (all of `rooftop-fuzz-afl --list` by default; fuzz/README.md lists them)
# for SECONDS_PER_TARGET (default 60) from its seed corpus (fuzz/src/lib.rs says where each
# comes from), one after the other, then prints one line per target: executions, crashes,
# hangs. Exits 1 when any target found a crash (a panic, or an allocation past the memory
# limit) or a hang (an input past the time limit); the inputs are then under
# target/fuzz/findings/TARGET/ and replay by hand with
# `target/afl/release/rooftop-fuzz-afl TARGET < FILE`.
#
# Settings (environment): FUZZ_TIMEOUT_MS (a hang: default 10000), FUZZ_MEMORY_MB (the
# address-space limit: default 2048, as issue 34 allows), FUZZ_OUT (default target/fuzz),
# FUZZ_JOBS (targets run at once: default 1), FUZZ_EXECS (stop a target after about this
# many executions, if that comes before SECONDS_PER_TARGET).
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-60}"
shift || true
timeout_ms="${FUZZ_TIMEOUT_MS:-10000}"
memory_mb="${FUZZ_MEMORY_MB:-2048}"
out="${FUZZ_OUT:-target/fuzz}"
jobs="${FUZZ_JOBS:-1}"
execs_cap=()
[[ -n "${FUZZ_EXECS:-}" ]] && execs_cap=(-E "$FUZZ_EXECS")
case "$secs" in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, got \`$secs\`" >&2; exit 2 ;;
esac

# --- tools: make and a C compiler (AFL++'s build), then cargo-afl with AFL++ --------------
need=()
command -v make >/dev/null 2>&1 || need+=(make)
command -v cc >/dev/null 2>&1 || need+=(gcc)
if ((${#need[@]})); then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "fuzz.sh: ${need[*]} missing and no apt-get to install them" >&2
    exit 1
  fi
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# The version the harness's `afl` dependency matches (fuzz/afl/Cargo.toml).
afl_version=0.18.2
if ! cargo afl --version 2>/dev/null | grep -q "$afl_version"; then
  echo "== cargo install cargo-afl $afl_version (builds AFL++)"
  cargo install --locked --quiet cargo-afl --version "$afl_version"
fi

# --- the harness, instrumented ------------------------------------------------------------
echo "== cargo afl build --release (fuzz/afl)"
build_start=$(date +%s)
CARGO_TARGET_DIR=target/afl cargo afl build --release --locked --quiet \
  --manifest-path fuzz/afl/Cargo.toml
echo "harness built in $(( $(date +%s) - build_start )) s"
bin=target/afl/release/rooftop-fuzz-afl

if (($# == 0)); then
  mapfile -t targets < <("$bin" --list | cut -f1)
else
  targets=("$@")
fi

# AFL++ settings for a shared CI machine: no screen, no CPU binding, no core-pattern or
# CPU-governor checks (they need the machine's settings changed), quick calibration.
export AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_FAST_CAL=1
export AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_SUPPRESS_ERROR_MESSAGES=1
# The harness's scratch files (one folder per process: AFL++ ends the processes, so
# they cannot remove their own) go under $out/tmp, removed when the run ends.
mkdir -p "$out/tmp"
ROOFTOP_FUZZ_TMP="$(cd "$out/tmp" && pwd)"
export ROOFTOP_FUZZ_TMP
trap 'rm -rf "$ROOFTOP_FUZZ_TMP"' EXIT

# One target: seeds into $out/corpus/T, AFL++ output in $out/out/T, log in $out/log/T.
run_target() {
  local t="$1"
  rm -rf "$out/corpus/$t" "$out/out/$t"
  mkdir -p "$out/corpus/$t" "$out/out/$t" "$out/log"
  "$bin" --seeds "$t" "$out/corpus/$t"
  # -V: seconds to fuzz (-E: executions); the outer timeout only guards against AFL++
  # itself stalling.
  timeout $((secs + 120)) cargo afl fuzz -V "$secs" "${execs_cap[@]}" -t "$timeout_ms" -m "$memory_mb" \
    -i "$out/corpus/$t" -o "$out/out/$t" -- "$bin" "$t" >"$out/log/$t" 2>&1 || {
    echo "fuzz.sh: AFL++ failed on $t (exit $?); its log:" >&2
    tail -30 "$out/log/$t" >&2
    return 1
  }
}

count() { find "$1" -maxdepth 1 -type f -name 'id:*' 2>/dev/null | wc -l; }
stat_of() { sed -n "s/^$2 *: *//p" "$1" 2>/dev/null | head -1; }

failed=0
running=0
for t in "${targets[@]}"; do
  echo "== fuzz $t (${secs} s)"
  if ((jobs > 1)); then
    run_target "$t" &
    running=$((running + 1))
    if ((running >= jobs)); then
      wait -n || failed=1
      running=$((running - 1))
    fi
  else
    run_target "$t" || failed=1
  fi
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done

# --- summary --------------------------------------------------------------------------------
# A target passes when AFL++ ran it (its stats exist) and it found no crash and no hang.
total=0
passed=0
failed_targets=0
printf '%-16s %12s %10s %8s %6s\n' target executions "execs/s" crashes hangs
for t in "${targets[@]}"; do
  d="$out/out/$t/default"
  execs=$(stat_of "$d/fuzzer_stats" execs_done)
  rate=$(stat_of "$d/fuzzer_stats" execs_per_sec)
  crashes=$(count "$d/crashes")
  hangs=$(count "$d/hangs")
  printf '%-16s %12s %10s %8s %6s\n' "$t" "${execs:-?}" "${rate:-?}" "$crashes" "$hangs"
  total=$((total + ${execs:-0}))
  if ((crashes + hangs > 0)); then
    mkdir -p "$out/findings/$t"
    cp "$d"/crashes/id:* "$d"/hangs/id:* "$out/findings/$t/" 2>/dev/null || true
    failed_targets=$((failed_targets + 1))
  elif [[ -z "$execs" ]]; then
    failed_targets=$((failed_targets + 1))
  else
    passed=$((passed + 1))
  fi
done
echo "total executions: $total"
if ((failed_targets > 0 || failed)); then
  echo "fuzz.sh: FAILED: crashes or hangs under $out/findings/ (replay: $bin TARGET < FILE), or AFL++ logs under $out/log/" >&2
fi
echo "fuzz: $passed passed, $failed_targets failed"
((failed_targets == 0 && failed == 0))
