#!/usr/bin/env bash
# GPU check of the CUDA backend (docs/cuda.md, "The GPU check"), in two steps, because the GPU
# machines have no network, no JDK, no Maven and no GoogleTest:
#
#   scripts/gpu-check.sh package [DIR]        on the build machine (nvcc, JDK 17, Maven, gtest):
#     builds libkvio.so with CUDA (sm_90), native/tests/cuda_gpu_test and cuda_lifetime_gpu_test (GoogleTest and cudart
#     linked statically), kvio_cuda_bench, kvio-cli.jar (CUDA natives inside) and a jlinked Java
#     runtime, strips them into DIR (default .gpu/, git-ignored; at most 60 MiB) and prints the
#     size. Environment: BUILD_DIR (default build-gpu), JOBS (default 2), JLINK (a jlink of JDK
#     17+, whose jar tool is used too; default the first under /usr/lib/jvm), MVN_ARGS (extra Maven arguments, e.g. -o).
#
#   scripts/gpu-check.sh dry [DIR]            on the build machine, without a GPU (package runs it
#     last): every program of DIR starts, the probe skips for want of a GPU, the Java runtime
#     runs the CLI (matrix exits 4, roundtrip verifies on the cpu backend) and the Java GPU tests
#     (all skip, none fails). Exit 0 when all of that holds; skipped where a CUDA device answers.
#
#   scripts/gpu-check.sh run [DIR] [OUTDIR]   on the GPU machine, from what DIR holds plus
#     nvidia-smi and compute-sanitizer: writes at most 8 files to OUTDIR (default $OUT, else
#     DIR/results): summary.txt, gpu-tests.log (C++ and Java GPU tests), memcheck.log, stress.log, matrix.md,
#     matrix-summary.txt, bench.tsv, bench.txt. Phase 1 runs in parallel (150 s at most): each
#     GPU-test case in its own process, the Java GPU tests (TestNG group gpu, one JVM),
#     compute-sanitizer memcheck over the GPU tests (small sweep) and the hardware matrix (--full, kernel and direct, every device form; one process
#     per backend and form). Phase 2 (90 s at most): the stress mode, 14 repetitions of each
#     kernel, direct and staged conformance case beside a busy kernel (small sweep). Phase 3 (240 s at most): the bandwidth
#     benchmark alone, kvio's per-layer loads beside a compute load (kvio_cuda_bench
#     --beside-compute, 45 s at most; appended to bench.txt and bench.tsv), then the main job
#     (kvio-cli roundtrip with its default io backend, auto; appended to bench.txt), then the Java
#     API's submit cost (kvio-cli bench, smallest sweep, 60 s at most; appended to bench.txt, its
#     lines in summary.txt; its exit status does not fail the run). Sized for under 6 minutes on
#     one H200 (every phase at its timeout: about 8; every step, the probe and the case listings
#     included, at its own: about 11; give the device call 540 s or more).
#     Progress reaches OUTDIR as it happens (summary.txt line by line, a status line per GPU-test
#     case in gpu-tests.log, kvio_cuda_bench's rows in bench.tsv and its lines in bench.txt as
#     measured, --beside-compute's too), so a run cut short still returns what it measured.
#     Exit status: 0 all passed; 1 a failure; 3 no usable GPU (the summary says why).
set -euo pipefail
cd "$(dirname "$0")/.."

# The Java test classes with tests in the TestNG group gpu, as the package lists them
# (java-tests/gpu-classes.txt, written at package time from the sources by gpu-test-classes.sh, so
# that the package runs where the sources are not); fails when the list is missing or empty.
packaged_gpu_classes() {
  local list="$1/java-tests/gpu-classes.txt"
  if [ ! -s "$list" ]; then
    echo "gpu-check: FAIL: $list is missing or empty (run scripts/gpu-check.sh package)" >&2
    return 1
  fi
  cat "$list"
}

scratch=""

usage() {
  echo "usage: $0 package [DIR] | dry [DIR] | run [DIR] [OUTDIR]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
command="$1"
dir="${2:-.gpu}"
max_mib=60

package() {
  local build="${BUILD_DIR:-build-gpu}" jobs="${JOBS:-2}"
  local generator=()
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
  fi
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  echo "gpu-check package: CUDA build in $build"
  # KVIO_INSTALL_PACKAGE=OFF: a plain libkvio.so (no versioned soname), the one file the
  # package carries and the test binaries find beside them.
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DKVIO_WITH_CUDA=ON \
    -DKVIO_INSTALL_PACKAGE=OFF \
    -DKVIO_BUILD_TESTS=ON -DKVIO_BUILD_BENCH=ON -DKVIO_BUILD_FUZZ=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=90 > "$scratch/configure.log" 2>&1 \
    || { tail -20 "$scratch/configure.log"; exit 1; }
  cmake --build "$build" --target kvio cuda_gpu_test cuda_lifetime_gpu_test kvio_cuda_bench --parallel "$jobs"
  local test_bin="$build/native/tests/cuda_gpu_test"
  [ -x "$test_bin" ] || { echo "gpu-check: FAIL: $test_bin not built (GoogleTest missing?)" >&2; exit 1; }
  local lifetime_bin="$build/native/tests/cuda_lifetime_gpu_test"
  local bin
  for bin in "$test_bin" "$lifetime_bin"; do
    # grep reads all of its input (no -q): with pipefail, grep -q leaving early can fail the
    # pipeline with the writer's SIGPIPE, whatever it found.
    if ldd "$bin" | grep -E 'libgtest|libcudart' > /dev/null; then
      echo "gpu-check: FAIL: $(basename "$bin") links GoogleTest or cudart dynamically:" >&2
      ldd "$bin" >&2
      exit 1
    fi
  done

  echo "gpu-check package: kvio-cli.jar (Maven, CUDA natives)"
  # shellcheck disable=SC2086  # MVN_ARGS is a list of arguments
  mvn -q -B -DskipTests -Dkvio.cuda=ON -Dkvio.native.tests=OFF ${MVN_ARGS:-} package \
    dependency:build-classpath -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test
  local jar=cli/target/kvio-cli.jar lib
  lib="$(unzip -Z1 "$jar" | grep -m1 '/linux-x86_64/libkvio\.so$' || true)"
  [ -n "$lib" ] || { echo "gpu-check: FAIL: no linux-x86_64 libkvio.so in $jar" >&2; exit 1; }
  unzip -p "$jar" "$lib" > "$scratch/libkvio.so"
  if ! readelf -S "$scratch/libkvio.so" | grep '\.nv_fatbin' > /dev/null; then
    echo "gpu-check: FAIL: $jar holds a libkvio.so without CUDA kernels (no .nv_fatbin)" >&2
    exit 1
  fi

  local jlink="${JLINK:-}"
  if [ -z "$jlink" ]; then
    for candidate in /usr/lib/jvm/*17*/bin/jlink /usr/lib/jvm/*/bin/jlink; do
      if [ -x "$candidate" ]; then
        jlink="$candidate"
        break
      fi
    done
  fi
  [ -n "$jlink" ] || { echo "gpu-check: FAIL: no jlink (set JLINK)" >&2; exit 1; }
  echo "gpu-check package: Java runtime ($jlink)"
  "$jlink" --add-modules java.base,java.desktop,java.management,java.sql,jdk.unsupported,java.xml,java.logging,jdk.jfr \
    --strip-debug --no-header-files --no-man-pages --compress=2 --output "$scratch/jre" > /dev/null
  strip --strip-unneeded "$scratch/jre/lib/server/libjvm.so"

  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$build/libkvio.so" "$test_bin" "$lifetime_bin" "$build/kvio_cuda_bench" "$jar" "$dir/"
  strip --strip-unneeded "$dir/libkvio.so" "$dir/cuda_gpu_test" "$dir/cuda_lifetime_gpu_test" \
    "$dir/kvio_cuda_bench"
  tar -C "$scratch" -cJf "$dir/jre.txz" jre
  # The Java GPU tests (TestNG group gpu) without Maven: their classes and TestNG's jars; the
  # classes under test come from kvio-cli.jar.
  mkdir -p "$dir/java-tests"
  scripts/gpu-test-classes.sh > "$dir/java-tests/gpu-classes.txt"
  "$(dirname "$jlink")/jar" cf "$dir/java-tests/kvio-tests.jar" -C java/target/test-classes .
  local entry
  for entry in $(tr ':' ' ' < java/target/test-classpath.txt); do
    case "$(basename "$entry")" in
      testng-*.jar | slf4j-api-*.jar | jcommander-*.jar | jquery-*.jar) cp "$entry" "$dir/java-tests/" ;;
    esac
  done
  [ -n "$(ls "$dir"/java-tests/testng-*.jar 2>/dev/null)" ] \
    || { echo "gpu-check: FAIL: TestNG not found in the test classpath" >&2; exit 1; }
  {
    echo "kvio GPU check package"
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), nvcc $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  } > "$dir/PACKAGE.txt"
  ls -l "$dir"
  local bytes
  bytes="$(du -sb "$dir" | cut -f1)"
  local mib=$(((bytes + 1048575) / 1048576))
  echo "gpu-check package: $dir is $bytes bytes ($mib MiB; limit $max_mib MiB)"
  if [ "$bytes" -gt $((max_mib * 1048576)) ]; then
    echo "gpu-check: FAIL: $dir is over $max_mib MiB" >&2
    exit 1
  fi
  trap - EXIT
  rm -rf "$scratch"
  dry
  echo "gpu-check package: on the GPU machine run: scripts/gpu-check.sh run $dir"
}

# Runs what the package holds as far as it goes without a GPU, on the build machine: every
# program starts, its libraries load, the Java runtime unpacks and runs the CLI and the Java GPU
# tests (which skip), so that the device time is not spent on a package that cannot run (its
# first Java runtime lacked jdk.jfr, which every transfer then needed). Skipped where a CUDA
# device answers (then `run` is the check).
dry() {
  [ -d "$dir" ] || { echo "gpu-check: FAIL: no folder $dir" >&2; exit 1; }
  local d bad=0 s out rc
  d="$(cd "$dir" && pwd)"
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  s="$scratch"
  export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  out="$(timeout 60 "$d/cuda_gpu_test" --gtest_filter=CudaBackends.PageableHostMemoryIsRefused 2>&1)" || true
  if grep -q '^\[       OK \] CudaBackends.PageableHostMemoryIsRefused' <<< "$out"; then
    echo "gpu-check dry: a CUDA device answers here: skipped; 'run' is the check here"
    return 0
  fi
  if ! grep -q '^\[  SKIPPED \]' <<< "$out"; then
    echo "gpu-check dry: FAIL: cuda_gpu_test does not run here:" >&2
    head -n 20 <<< "$out" >&2
    exit 1
  fi
  local bin n
  for bin in cuda_gpu_test cuda_lifetime_gpu_test; do
    n=$(timeout 60 "$d/$bin" --gtest_list_tests 2>/dev/null | grep -c '^  ' || true)
    echo "gpu-check dry: $bin lists $n cases"
    [ "$n" -gt 0 ] || bad=1
  done
  out="$(timeout 60 "$d/kvio_cuda_bench" --quick --out "$s/bench.tsv" 2>&1)" && rc=0 || rc=$?
  echo "gpu-check dry: kvio_cuda_bench: exit $rc: $(head -c 200 <<< "$out")"
  if [ "$rc" != 0 ] || ! grep -q 'skipped' <<< "$out"; then bad=1; fi
  if ! tar -C "$s" -xJf "$d/jre.txz"; then
    echo "gpu-check dry: FAIL: jre.txz does not unpack" >&2
    return 1
  fi
  local java="$s/jre/bin/java" classes
  classes="$(packaged_gpu_classes "$d")"
  timeout 150 "$java" -Dorg.bytedeco.javacpp.cachedir="$s/javacpp-tests" \
    -cp "$d/kvio-cli.jar:$d/java-tests/*" org.testng.TestNG -groups gpu -d "$s/testng" \
    -testclass "$classes" \
    > "$s/java-tests.log" 2>&1 || true
  out="$(grep -m1 'Total tests run' "$s/java-tests.log" || echo 'no TestNG summary')"
  echo "gpu-check dry: Java GPU tests: $out"
  # A configuration method that fails makes TestNG skip its tests, which look like the skips
  # expected here: it fails the dry run too.
  if ! grep -Eq 'Total tests run: [1-9][0-9]*, Passes: [0-9]+, Failures: 0' <<< "$out" \
    || grep -Eq 'Configuration Failures: [1-9]' "$s/java-tests.log"; then
    bad=1
    head -n 40 "$s/java-tests.log"
  fi
  rc=0
  timeout 150 "$java" -Dorg.bytedeco.javacpp.cachedir="$s/javacpp-matrix" -jar "$d/kvio-cli.jar" \
    matrix --full --require kernel,direct --backend kernel --device-forms allocated --quiet \
    > "$s/matrix.md" 2> "$s/matrix.err" || rc=$?
  echo "gpu-check dry: matrix: exit $rc (4: the required backends are unavailable here): $(tail -1 "$s/matrix.md")"
  [ "$rc" = 4 ] || { bad=1; head -n 20 "$s/matrix.err"; }
  rc=0
  timeout 120 "$java" -Dorg.bytedeco.javacpp.cachedir="$s/javacpp-roundtrip" -jar "$d/kvio-cli.jar" \
    roundtrip --tokens 256 --layers 2 > "$s/roundtrip.log" 2>&1 || rc=$?
  echo "gpu-check dry: roundtrip: exit $rc: $(tail -1 "$s/roundtrip.log")"
  if [ "$rc" != 0 ] || ! grep -q 'verified OK' "$s/roundtrip.log"; then
    bad=1
    tail -n 20 "$s/roundtrip.log"
  fi
  if [ "$bad" != 0 ]; then
    echo "gpu-check dry: FAIL: the package does not run as far as it can here" >&2
    exit 1
  fi
  echo "gpu-check dry: the package runs here as far as it can without a GPU"
}

run() {
  local out="${3:-${OUT:-$dir/results}}"
  [ -d "$dir" ] || { echo "gpu-check: FAIL: no folder $dir (run scripts/gpu-check.sh package first)" >&2; exit 1; }
  dir="$(cd "$dir" && pwd)"
  mkdir -p "$out"
  out="$(cd "$out" && pwd)"
  local summary="$out/summary.txt" start
  start=$(date +%s)
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  : > "$summary"
  say() { echo "gpu-check: $* ($(($(date +%s) - start)) s)" | tee -a "$summary"; }

  for f in libkvio.so cuda_gpu_test cuda_lifetime_gpu_test kvio_cuda_bench kvio-cli.jar jre.txz java-tests/kvio-tests.jar java-tests/gpu-classes.txt; do
    [ -e "$dir/$f" ] || { say "FAIL: $dir/$f missing (run scripts/gpu-check.sh package first)"; exit 1; }
  done
  local classes  # the Java GPU test classes, checked before anything runs
  classes="$(packaged_gpu_classes "$dir" 2> /dev/null)" \
    || { say "FAIL: $dir/java-tests/gpu-classes.txt is empty (run scripts/gpu-check.sh package)"; exit 1; }
  say "date $(date -u +%Y-%m-%dT%H:%M:%SZ); package: $(sed -n 's/^commit: //p' "$dir/PACKAGE.txt" 2>/dev/null)"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current \
      --format=csv,noheader 2>&1 | sed 's/^/gpu-check: device: /' | tee -a "$summary" || true
  else
    say "device: nvidia-smi not found"
  fi
  chmod +x "$dir/cuda_gpu_test" "$dir/cuda_lifetime_gpu_test" "$dir/kvio_cuda_bench" 2>/dev/null || true  # if copying lost it
  export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local tests="$dir/cuda_gpu_test" lifetime="$dir/cuda_lifetime_gpu_test"
  # kvio's own answer: is the CUDA backend usable here? A skipped GPU test says why not.
  local probe rc=0
  probe="$(timeout 60 "$tests" --gtest_filter=CudaBackends.PageableHostMemoryIsRefused 2>&1)" || rc=$?
  if grep -q '^\[  SKIPPED \]' <<< "$probe"; then
    say "no GPU: $(grep -m1 'no CUDA device' <<< "$probe" || echo 'the GPU tests skip')"
    say "RESULT: FAIL (no usable GPU; nothing was run)"
    exit 3
  fi
  if ! grep -q '^\[==========\]' <<< "$probe"; then
    say "FAIL: cuda_gpu_test does not run here (exit $rc): $(tail -3 <<< "$probe")"
    exit 1
  fi
  local sanitizer
  sanitizer="$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")"
  if [ ! -x "$sanitizer" ]; then
    say "compute-sanitizer not found (PATH, ${CUDA_HOME:-/usr/local/cuda}/bin); memcheck will fail"
  fi
  local java="$scratch/jre/bin/java"
  local failed=0
  if ! tar -C "$scratch" -xJf "$dir/jre.txz" 2> "$scratch/jre.err" || [ ! -x "$java" ]; then
    say "FAIL: cannot unpack the Java runtime ($(head -c 300 "$scratch/jre.err")): the Java steps fail"
    failed=1
  fi

  # ---- phase 1, in parallel: correctness (timing does not matter) ----
  say "phase 1: GPU tests (one process per case), memcheck, matrix --full"
  # One line per case: "<binary> <case>"; the lifetime cases first (caller memory wrapped,
  # freed and wrapped again: what the first H200 runs found failing).
  for bin in "$lifetime" "$tests"; do
    timeout 60 "$bin" --gtest_list_tests | awk -v bin="$bin" '/^[^ ]/ {suite=$1} /^  / {print bin " " suite $1}' \
      || { say "FAIL: $(basename "$bin") --gtest_list_tests failed: its cases are not run" >&2; failed=1; }
  done > "$scratch/cases"
  : > "$out/gpu-tests.log"
  (
    # Each case in its own process: a CUDA error that kills the context hides nothing else.
    # The inner timeout runs in the foreground (no process group of its own), so the outer one's
    # kill reaches the cases still running. Each case appends its status line to gpu-tests.log
    # as it ends (rewritten in full after phase 1), so a run cut short still says which ran.
    # shellcheck disable=SC2016  # expanded by the inner shell
    timeout 150 xargs -P "${CASE_JOBS:-6}" -I{} sh -c \
      'log="$2/$(echo "$1" | tr "/. " "___").log"; timeout --foreground 90 "${1%% *}" --gtest_filter="${1#* }" > "$log" 2>&1; rc=$?; echo "$rc $1"; echo "== exit $rc: $1" >> "$3"' \
      _ {} "$scratch" "$out/gpu-tests.log" < "$scratch/cases" > "$scratch/case-status"
  ) &
  local cases_pid=$!   # at most 150 s in all; cases not started by then count as failures
  local -a sanitizer_pids=()
  local part filter bin
  for part in kernel direct other lifetime; do
    bin="$tests"
    case "$part" in
      kernel) filter='Configs/*.*/kernel_*' ;;
      direct) filter='Configs/*.*/direct_*' ;;
      # Without the two heaviest cases (hundreds of MiB, 140,000-pair tables), which run
      # under memcheck for minutes; they still run in their own process above.
      other) filter='CudaKernel.*:CudaBackends.*:CudaDirect.*:CudaStaged.*-CudaStaged.TablesOverFourMiBGoFromThePlan:CudaBackends.ClosingPoolsAndTransfersEarlyIsSafe' ;;
      lifetime) filter='*' bin="$lifetime" ;;
    esac
    # --report-api-errors no: memcheck checks device memory accesses and leaks; a CUDA call
    # that fails is kvio's to check (every return code is), and some fail by design (a caller's
    # own registration found by cudaHostRegister's "already registered", cudaEventQuery's "not
    # ready"), which the default would count as errors.
    KVIO_GPU_SWEEP=minimal timeout 150 "$sanitizer" --tool memcheck --leak-check full \
      --report-api-errors no "$bin" --gtest_filter="$filter" > "$scratch/memcheck-$part.log" 2>&1 &
    sanitizer_pids+=($!)
  done
  # The Java GPU tests (TestNG group gpu), one JVM.
  timeout 150 "$java" -Dorg.bytedeco.javacpp.cachedir="$scratch/javacpp-tests" \
    -cp "$dir/kvio-cli.jar:$dir/java-tests/*" org.testng.TestNG -groups gpu \
    -verbose 2 -d "$scratch/testng" \
    -testclass "$classes" \
    > "$scratch/java-tests.log" 2>&1 &
  local java_tests_pid=$!
  local -a matrix_pids=() matrix_parts=()
  local backend form
  for backend in kernel direct; do
    for form in allocated per_component layer_table; do
      timeout 150 "$java" -Dorg.bytedeco.javacpp.cachedir="$scratch/javacpp-$backend-$form" \
        -jar "$dir/kvio-cli.jar" matrix --full --require kernel,direct \
        --backend "$backend" --device-forms "$form" --quiet \
        > "$scratch/matrix-$backend-$form.md" 2> "$scratch/matrix-$backend-$form.err" &
      matrix_pids+=($!)
      matrix_parts+=("$backend-$form")
    done
  done

  # GPU tests, one process per case.
  wait "$cases_pid" || true
  local total passed skipped excused
  total=$(wc -l < "$scratch/cases")
  passed=0
  skipped=0
  excused=0
  : > "$out/gpu-tests.log"
  while read -r rc name; do
    local log reason
    log="$scratch/$(echo "$name" | tr '/. ' '___').log"
    if [ "$rc" = 0 ] && grep -q '^\[  SKIPPED \]' "$log"; then
      skipped=$((skipped + 1))
      reason="$(grep -m1 -A1 ': Skipped$' "$log" | tail -1 || true)"
      # A skip for what this machine lacks (a second GPU, batch copies in an old driver, a
      # driver that reports a cudaMalloc's range as a larger block's) is not a failure; any other
      # skip on a machine that passed the probe is.
      case "$reason" in
        *"needs two CUDA devices"* | *"has no batch copies"* | *"the walk cannot be shown here"*)
          excused=$((excused + 1))
          say "skipped (this machine lacks it): $name: $reason" ;;
        *) say "FAIL: skipped for no reason this machine explains: $name: ${reason:-no reason printed}" ;;
      esac
      { echo "== SKIPPED $name"; head -n 50 "$log"; } >> "$out/gpu-tests.log"
    elif [ "$rc" = 0 ]; then
      passed=$((passed + 1))
      echo "== PASS $name" >> "$out/gpu-tests.log"
      case "$name" in
        *CudaAuto.MeasuresItsCrossoverWhenCreated)  # the crossover auto measured: a figure
          { grep -E '^# kvio auto calibration|^[a-z_]+ = ' "$log" || true; } \
            | sed 's/^/gpu-check: auto measure: /' | tee -a "$summary" >> "$out/gpu-tests.log" ;;
      esac
    else
      { echo "== FAIL $name (exit $rc$([ "$rc" = 124 ] && echo ', timed out after 90 s'))"; head -n 400 "$log"; } \
        >> "$out/gpu-tests.log"
    fi
  done < "$scratch/case-status"
  local ran
  ran=$(wc -l < "$scratch/case-status")
  say "GPU tests: $total cases, $passed PASS, $((ran - passed - skipped)) FAIL, $skipped SKIPPED ($((skipped - excused)) of them failures), $((total - ran)) not run"
  [ $((passed + excused)) = "$total" ] || failed=1

  # Java GPU tests: every test must pass (a skip means no GPU for Java).
  rc=0
  wait "$java_tests_pid" || rc=$?
  local java_summary
  java_summary="$(grep -m1 'Total tests run' "$scratch/java-tests.log" || echo 'no TestNG summary')"
  { echo "== Java GPU tests (TestNG group gpu; exit $rc): $java_summary"; head -n 600 "$scratch/java-tests.log"; } \
    >> "$out/gpu-tests.log"
  say "Java GPU tests: exit $rc$([ "$rc" = 124 ] && echo ' (timed out)'): $java_summary"
  if [ "$rc" != 0 ] || ! grep -q 'Failures: 0, Skips: 0' <<< "$java_summary"; then
    failed=1
  fi

  # memcheck: 0 errors expected, leaks included.
  local errors=0 i=0 n
  : > "$out/memcheck.log"
  for part in kernel direct other lifetime; do
    rc=0
    wait "${sanitizer_pids[$i]}" || rc=$?
    i=$((i + 1))
    n=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$scratch/memcheck-$part.log" | tail -1)
    { echo "== memcheck $part (exit $rc${n:+, $n errors})"; head -n 4000 "$scratch/memcheck-$part.log"; tail -n 3 "$scratch/memcheck-$part.log"; } >> "$out/memcheck.log"
    if [ -z "$n" ] || [ "$rc" != 0 ]; then
      say "memcheck $part: FAIL (exit $rc$([ "$rc" = 124 ] && echo ', timed out')${n:+, $n errors})"
      failed=1
    fi
    errors=$((errors + ${n:-0}))
  done
  say "memcheck: $errors errors"
  [ "$errors" = 0 ] || failed=1

  # hardware matrix.
  : > "$out/matrix.md"
  : > "$out/matrix-summary.txt"
  i=0
  for part in "${matrix_parts[@]}"; do
    rc=0
    wait "${matrix_pids[$i]}" || rc=$?
    i=$((i + 1))
    { echo "## matrix --full, $part (exit $rc)"; echo; cat "$scratch/matrix-$part.md"; echo; } >> "$out/matrix.md"
    { echo "== $part (exit $rc): $(tail -1 "$scratch/matrix-$part.md")"; cat "$scratch/matrix-$part.err"; } \
      >> "$out/matrix-summary.txt"
    say "matrix $part: exit $rc$([ "$rc" = 124 ] && echo ' (timed out)'): $(tail -1 "$scratch/matrix-$part.md")"
    [ "$rc" = 0 ] || failed=1
  done

  # ---- phase 2: the stress mode, on its own (its busy kernels would slow phase 1 down) ----
  # Three processes at 14 repetitions: about the case-repetitions (and device time) of the two
  # processes at 20 before staged joined.
  say "phase 2: stress mode, ${STRESS_REPETITIONS:-14} repetitions beside a busy kernel"
  local -a stress_pids=()
  local -a stress_parts=(kernel direct staged)
  for part in "${stress_parts[@]}"; do
    KVIO_GPU_STRESS="${STRESS_REPETITIONS:-14}" KVIO_GPU_SWEEP=minimal timeout 90 "$tests" \
      --gtest_filter="Configs/*.*/${part}_*" > "$scratch/stress-$part.log" 2>&1 &
    stress_pids+=($!)
  done
  : > "$out/stress.log"
  i=0
  for part in "${stress_parts[@]}"; do
    rc=0
    wait "${stress_pids[$i]}" || rc=$?
    i=$((i + 1))
    local reps bad
    reps=$(grep -c '^\[ STRESS   \] .* repetition ' "$scratch/stress-$part.log" || true)
    bad=$(grep -c '^\[ STRESS   \] .* repetition .*FAIL' "$scratch/stress-$part.log" || true)
    { echo "== stress $part (exit $rc)"; grep '^\[ STRESS' "$scratch/stress-$part.log" || true
      echo "-- other output (first 2000 lines)"
      grep -v '^\[ STRESS\|^\[       OK \]\|^\[ RUN      \]' "$scratch/stress-$part.log" | head -n 2000 || true
    } >> "$out/stress.log"
    say "stress $part: $reps case-repetitions run, $bad failed$([ "$rc" = 124 ] && echo ', TIMED OUT')"
    [ "$rc" = 0 ] && [ "$bad" = 0 ] || failed=1
  done

  # ---- phase 3, alone: the benchmark ----
  say "phase 3: benchmark (kvio_cuda_bench --quick)"
  rc=0
  timeout 75 "$dir/kvio_cuda_bench" --quick --out "$out/bench.tsv" > "$out/bench.txt" 2>&1 || rc=$?
  say "benchmark: exit $rc$([ "$rc" = 124 ] && echo ' (timed out)')"
  [ "$rc" = 0 ] || failed=1

  # ---- phase 3: kvio's per-layer loads beside a compute load (appended to bench.txt, bench.tsv) ----
  say "phase 3: loads beside compute (kvio_cuda_bench --beside-compute)"
  rc=0
  { echo; echo "== kvio_cuda_bench --beside-compute"; } >> "$out/bench.txt"
  timeout 45 "$dir/kvio_cuda_bench" --beside-compute --out "$scratch/beside.tsv" \
    >> "$out/bench.txt" 2>&1 || rc=$?
  { echo; echo "# kvio_cuda_bench --beside-compute"; cat "$scratch/beside.tsv" 2>/dev/null || true; } \
    >> "$out/bench.tsv"
  say "beside compute: exit $rc$([ "$rc" = 124 ] && echo ' (timed out)')"
  sed -n '/^== kvio_cuda_bench --beside-compute/,$p' "$out/bench.txt" \
    | grep -E '^(kernel|direct|auto|green|compute alone)' | sed 's/^/gpu-check: beside compute: /' \
    | tee -a "$summary" || true
  [ "$rc" = 0 ] || failed=1

  # ---- the main job: roundtrip with the default io backend (auto), appended to bench.txt ----
  say "phase 3: roundtrip (io backend auto by default: device memory, verify, GB/s vs ceiling)"
  rc=0
  { echo; echo "== kvio-cli roundtrip --tokens 4096 --layers 8 (default io backend: auto)"; } \
    >> "$out/bench.txt"
  timeout 60 "$java" -Dorg.bytedeco.javacpp.cachedir="$scratch/javacpp-roundtrip" \
    -jar "$dir/kvio-cli.jar" roundtrip --tokens 4096 --layers 8 >> "$out/bench.txt" 2>&1 || rc=$?
  say "roundtrip: exit $rc$([ "$rc" = 124 ] && echo ' (timed out)')"
  grep -E 'io backend|calibration|ceiling|verified|FAIL' "$out/bench.txt" | tail -12 || true
  [ "$rc" = 0 ] || failed=1

  # ---- the Java API's submit cost (kvio-cli bench, smallest sweep), appended to bench.txt ----
  # Its submit-cost lines are the Java figures for the shape of kvio_cuda_bench's submit /
  # submit_to_completion lines above (docs/benchmarks.md). A measurement, not a check: its exit
  # status is reported and does not fail the run.
  say "phase 3: kvio-cli bench submit cost (Java API; beside kvio_cuda_bench's submit lines)"
  rc=0
  { echo; echo "== kvio-cli bench (submit cost) --backend kernel,direct,auto --rows 4096 --tokens 64 --quick"; } \
    >> "$out/bench.txt"
  timeout 60 "$java" -Dorg.bytedeco.javacpp.cachedir="$scratch/javacpp-bench" \
    -jar "$dir/kvio-cli.jar" bench --backend kernel,direct,auto --rows 4096 --tokens 64 --quick \
    >> "$out/bench.txt" 2>&1 || rc=$?
  say "kvio-cli bench: exit $rc$([ "$rc" = 124 ] && echo ' (timed out)')$([ "$rc" = 0 ] || echo ' (a measurement: not counted as a failure)')"
  sed -n '/^== kvio-cli bench (submit cost)/,$p' "$out/bench.txt" \
    | grep -E '^- [a-z_]+( \(runs on [a-z_]+\))?: submit ' | sed 's/^- /gpu-check: submit cost: /' \
    | tee -a "$summary" || true

  local f
  for f in "$out"/*; do
    truncate -s '<15M' "$f"  # the device tool returns files of at most 16 MiB
  done
  if [ "$failed" = 0 ]; then
    say "RESULT: PASS"
  else
    say "RESULT: FAIL"
  fi
  tail -32 "$out/bench.txt" 2>/dev/null || true  # the bench summary
  return "$failed"
}

case "$command" in
  package) package ;;
  dry) dry ;;
  run) run "$@" ;;
  *) usage ;;
esac
