#!/usr/bin/env bash
# Builds, on this (CPU-only) machine, what scripts/gpu-validate.sh needs on a GPU machine
# that has no network and maybe no Rust toolchain: a release `rooftop` with the cuda and
# wgpu features and the CUDA integration-test binary, into .gpu-carry/ (git-ignored).
#
#   scripts/gpu-prepare.sh
#
# then, with the session's device tool (`run`), carry .gpu-carry and run:
#
#   ROOFTOP_BIN=.gpu-carry/rooftop ROOFTOP_TEST_BIN=.gpu-carry/cuda-tests \
#     VALIDATE_OUT=/tmp/gv scripts/gpu-validate.sh; tar czf $OUT/validate.tar.gz -C /tmp gv
#
# The binaries load libcuda, NVRTC and cuBLAS at run time (cudarc dynamic loading), so they
# need no CUDA at build time. They need glibc >= 2.35 (objdump -T shows the newest symbol).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-carry
mkdir -p "$out"
cargo build --release --locked -p rooftop-cli --features cuda,wgpu
cp target/release/rooftop "$out/rooftop"
# The test binary's path comes from cargo's JSON messages.
test_bin=$(cargo test --release --locked -p rooftop-bench --features cuda --test cuda --no-run \
  --message-format=json 2>/dev/null \
  | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "cuda":
        print(m["executable"])' | tail -1)
cp "$test_bin" "$out/cuda-tests"
strip "$out/rooftop" "$out/cuda-tests" 2>/dev/null || true
du -sh "$out"/*
echo "carry .gpu-carry (the device tool's limit is 64 MiB with the working tree)"
