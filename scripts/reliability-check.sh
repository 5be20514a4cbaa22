#!/usr/bin/env bash
# The reliability steps of CI (docs/reliability.md), each bounded in time:
#  1. the native library and C++ tests built with AddressSanitizer + UndefinedBehaviorSanitizer
#     (KVIO_SANITIZE=ON, -fno-sanitize-recover=all), with the CUDA backend where nvcc is found
#     (its host code on the fake CUDA runtime), ctest run in that build (the conformance matrices
#     without their largest pools: KVIO_CONFORMANCE_SWEEP=quick): any report fails;
#  2. with clang (libFuzzer), kvio_fuzz_transfer for KVIO_FUZZ_SECONDS (default 60) starting
#     from native/fuzz/corpus (copied: new inputs stay out of the tree); a violated property or
#     sanitizer report fails and leaves the input in $BUILD/fuzz-artifacts.
# One build serves both: clang when present (the fuzzer needs it), else gcc (step 2 skipped).
# Usage: scripts/reliability-check.sh [build dir, default build-reliability]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-reliability}"
seconds="${KVIO_FUZZ_SECONDS:-60}"

cxx=""
for c in clang++ clang++-14 clang++-15 clang++-16; do
  # clang with its libFuzzer runtime (libclang-rt-*-dev), else the default compiler
  if command -v "$c" >/dev/null 2>&1 &&
    [ -f "$("$c" -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]; then
    cxx="$c"
    break
  fi
done
args=(-DKVIO_SANITIZE=ON -DKVIO_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo)
[ -n "$cxx" ] && args+=(-DCMAKE_CXX_COMPILER="$cxx")
# With nvcc 12.8 or newer (what the backend needs), the CUDA backend too (one architecture: its
# kernels are compiled, never run here), so that its host code runs sanitized on the fake CUDA
# runtime (ctest label fake_cuda).
nvcc=""
for n in "$(command -v nvcc 2>/dev/null || true)" "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" \
  "${CUDA_PATH:-/usr/local/cuda}/bin/nvcc"; do
  if [ -n "$n" ] && [ -x "$n" ]; then nvcc="$n"; break; fi
done
nvcc_release="$([ -n "$nvcc" ] && "$nvcc" --version 2>/dev/null |
  sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -1 || true)"
if [ -n "$nvcc_release" ] && { read -r major minor <<<"$nvcc_release";
  [ "$major" -gt 12 ] || { [ "$major" -eq 12 ] && [ "$minor" -ge 8 ]; }; }; then
  args+=(-DKVIO_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90-real)
else
  [ -n "$nvcc" ] && echo "reliability: $nvcc is older than CUDA 12.8: no CUDA backend in this build"
  args+=(-DKVIO_WITH_CUDA=OFF)
fi

echo "reliability: ASan+UBSan build (${cxx:-default compiler}) in $build"
cmake -S . -B "$build" "${args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null

export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:quarantine_size_mb=64"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "reliability: ctest under ASan+UBSan"
# Label cuda (the GPU programs on the real runtime) excluded: they need a GPU, and ASan beside a
# CUDA driver needs options of its own; their host code runs here on the fake (label fake_cuda).
# The conformance matrices leave out their largest pools (conformance_matrix.hpp, inSweep): the
# sanitized build moves bytes several times slower, and mvn verify runs them whole.
KVIO_CONFORMANCE_SWEEP=quick ctest --test-dir "$build" -j"$(nproc)" --timeout 300 --output-on-failure -LE '^cuda$' \
  >"$build/ctest.log" 2>&1 || {
  tail -80 "$build/ctest.log"
  exit 1
}
grep -E "tests passed|did not run|Skipped" "$build/ctest.log" || true

fuzzer="$build/native/fuzz/kvio_fuzz_transfer"
if [ -x "$fuzzer" ]; then
  echo "reliability: libFuzzer, ${seconds}s from native/fuzz/corpus"
  work="$build/fuzz-corpus"
  artifacts="$build/fuzz-artifacts"
  rm -rf "$work" && mkdir -p "$work" "$artifacts"
  cp native/fuzz/corpus/* "$work/"
  ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=32:malloc_context_size=10" \
    timeout $((seconds + 60)) "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" >"$build/fuzz.log" 2>&1 || {
    tail -40 "$build/fuzz.log"
    echo "reliability: the fuzzer found a failing input (in $artifacts); add it to native/fuzz/corpus with the fix"
    exit 1
  }
  grep -E "stat::number_of_executed_units|Done" "$build/fuzz.log" | tail -2
  echo "reliability: fuzz corpus after the run: $(ls "$work" | wc -l) inputs"
else
  echo "reliability: no clang/libFuzzer here; fuzzing skipped (the corpus replay ran under ctest)"
fi
