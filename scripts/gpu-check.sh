#!/usr/bin/env bash
# GPU check of the CUDA backend (docs/cuda.md), one command on a machine with an NVIDIA GPU:
#   1. builds libkvio with CUDA required (KVIO_WITH_CUDA=ON), the C++ tests and kvio_cuda_bench;
#   2. runs the host-side CUDA logic tests and the GPU tests (ctest label `cuda`), which must
#      not skip here;
#   3. runs the Java GPU tests (TestNG group gpu) unless --no-java or Maven is missing, then the
#      hardware matrix (kvio-cli matrix --quick --require kernel,direct) into $OUT_DIR/matrix.*
#      with KVIO_CLI_JAR, a JAR Maven builds here, or a prebuilt cli/target/kvio-cli.jar;
#   4. runs the bandwidth benchmark, writes the full results to $OUT_DIR/cuda_bench.tsv and
#      prints the short table last.
# Sized for under 5 minutes on one H200. Usage: scripts/gpu-check.sh [--quick] [--no-java]
# Environment: BUILD_DIR (default build-gpu), OUT_DIR (default $OUT if set, else build-gpu/gpu-check),
# KVIO_CLI_JAR (a runnable kvio-cli.jar built with CUDA, for machines without Maven's dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=""
java=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick="--quick" ;;
    --no-java) java=0 ;;
    *) echo "usage: $0 [--quick] [--no-java]" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build-gpu}"
out="${OUT_DIR:-${OUT:-$build/gpu-check}}"
mkdir -p "$out"
log="$out/gpu-check.log"
: > "$log"
start=$(date +%s)
step() { echo "gpu-check: $* ($(( $(date +%s) - start )) s)" | tee -a "$log"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
  --format=csv 2>&1 | tee -a "$log" || echo "gpu-check: nvidia-smi not available" | tee -a "$log"

step "configure + build ($build)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKVIO_WITH_CUDA=ON -DKVIO_BUILD_TESTS=ON \
  -DKVIO_BUILD_BENCH=ON -DKVIO_BUILD_FUZZ=OFF >> "$log" 2>&1
cmake --build "$build" --parallel "$(nproc)" >> "$log" 2>&1

if [ ! -x "$build/native/tests/cuda_gpu_test" ]; then
  echo "gpu-check: FAIL: cuda_gpu_test was not built (GoogleTest missing? apt-get install libgtest-dev)" \
    | tee -a "$log"
  exit 1
fi

step "C++ tests: CUDA logic on the host, then the GPU tests (label cuda)"
ctest --test-dir "$build" -R '^Cuda' -LE cuda --output-on-failure --parallel 4 2>&1 | tail -3 | tee -a "$log"
ctest --test-dir "$build" -L cuda --output-on-failure 2>&1 | tee "$out/ctest-cuda.log" | tail -5 | tee -a "$log"
if grep -q "Skipped" "$out/ctest-cuda.log"; then
  echo "gpu-check: FAIL: GPU tests skipped on a machine meant to have a GPU:" | tee -a "$log"
  "$build/native/tests/cuda_gpu_test" --gtest_filter='CudaKernel.Cta*' 2>&1 | grep -A1 'Skipped$' \
    | tail -1 | tee -a "$log"
  exit 1
fi

if [ "$java" = 1 ] && ! command -v mvn >/dev/null 2>&1; then
  echo "gpu-check: Java GPU tests skipped: no mvn" | tee -a "$log"
  java=0
fi
if [ "$java" = 1 ] && [ ! -d "$HOME/.m2/repository/org/bytedeco/javacpp" ] && ! mvn -B -q -ntp \
    dependency:resolve >/dev/null 2>&1; then
  echo "gpu-check: Java GPU tests skipped: Maven cannot resolve the dependencies (offline?)" \
    | tee -a "$log"
  java=0
fi
if [ "$java" = 1 ]; then
  step "Java GPU tests (TestNG group gpu)"
  mvn -B -ntp -q -pl java -am -Pgpu -Dkvio.cuda=ON -Dkvio.native.tests=OFF -Dgroups=gpu -Dtest='CudaBackendTest,DeviceSelectionTest' \
    -Dsurefire.failIfNoSpecifiedTests=false test >> "$log" 2>&1 \
    && echo "gpu-check: Java GPU tests passed" | tee -a "$log" \
    || { echo "gpu-check: FAIL: Java GPU tests (see $log)" | tee -a "$log"; exit 1; }
fi

# The hardware matrix needs the runnable CLI JAR with CUDA natives: KVIO_CLI_JAR, else one built
# here by Maven, else a prebuilt cli/target/kvio-cli.jar (e.g. carried to a machine without
# Maven's dependencies; a default build on a machine with nvcc has the CUDA backends in it).
cli_jar="${KVIO_CLI_JAR:-}"
if [ -z "$cli_jar" ] && [ "$java" = 1 ]; then
  mvn -B -ntp -q -Dkvio.cuda=ON -Dkvio.native.tests=OFF -DskipTests package >> "$log" 2>&1 \
    && cli_jar=cli/target/kvio-cli.jar
fi
if [ -z "$cli_jar" ] && [ -f cli/target/kvio-cli.jar ]; then
  cli_jar=cli/target/kvio-cli.jar
fi
if [ -n "$cli_jar" ] && command -v java >/dev/null 2>&1; then
  step "hardware matrix ($cli_jar matrix --quick, CUDA backends required; docs/matrix.md)"
  if java -jar "$cli_jar" matrix --quick --require kernel,direct \
      --json "$out/matrix.json" --junit "$out/matrix-junit.xml" > "$out/matrix.md" \
      2>> "$log"; then
    tail -1 "$out/matrix.md" | tee -a "$log"
  else
    rc=$?
    tail -1 "$out/matrix.md" | tee -a "$log"
    echo "gpu-check: FAIL: matrix exit status $rc (1: a FAIL cell, 4: a CUDA backend unavailable;" \
      "table in $out/matrix.md)" | tee -a "$log"
    exit 1
  fi
else
  echo "gpu-check: hardware matrix skipped: no java or no kvio-cli.jar (set KVIO_CLI_JAR)" \
    | tee -a "$log"
fi

step "benchmark"
"$build/kvio_cuda_bench" $quick --out "$out/cuda_bench.tsv" > "$out/bench-summary.txt" \
  2> "$out/bench-progress.log"
step "done; full results in $out/cuda_bench.tsv, log in $log"
cat "$out/bench-summary.txt"
