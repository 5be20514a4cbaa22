#!/usr/bin/env bash
# Tests `scripts/gpu-check.sh run` on this machine, without a GPU: the GPU check runs once on a
# lent H200 with minutes of device time, so its control flow (what counts as a failure, what a
# skip means, what it writes and its exit status) is checked here against stand-ins for what the
# package holds: gtest-like test programs, a bench, a Java runtime and compute-sanitizer, all
# small shell scripts that print what the real ones print. Each scenario runs the real script
# and checks its exit status and the lines of summary.txt and gpu-tests.log; `dry` too (what
# `package` runs last). About 3 s.
#   scripts/test-gpu-check.sh          (CI runs it; exit 0 when every scenario behaved)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# ---- the stand-ins ----
mkdir -p "$work/pkg/java-tests" "$work/bin" "$work/jre/jre/bin"

# A GoogleTest program. Its cases: "Suite.Case" lines in $FAKE_CASES_<name>. What a case does
# comes from the environment: FAKE_SKIP_<n> / FAKE_FAIL names (substrings of a case name).
cat > "$work/fake-gtest" <<'EOF'
#!/usr/bin/env bash
name="$(basename "$0")"
cases_var="FAKE_CASES_${name}"
cases="${!cases_var}"
[ -n "${FAKE_BROKEN:-}" ] && { echo "error while loading shared libraries: libcuda.so.1" >&2; exit 127; }
case "${1:-}" in
  --gtest_list_tests)
    [ "${FAKE_LIST_FAILS:-}" = "$name" ] && { echo "cannot start" >&2; exit 1; }
    suite=""
    for c in $cases; do
      s="${c%%.*}."
      [ "$s" = "$suite" ] || { echo "$s"; suite="$s"; }
      echo "  ${c#*.}"
    done
    exit 0 ;;
  --gtest_filter=*) filter="${1#--gtest_filter=}" ;;
  *) filter="*" ;;
esac
echo "Running main() from gtest_main.cc"
echo "[==========] Running 1 test from 1 test suite."
status=0
for c in $cases; do
  case "$c" in $filter) ;; *) [ "$filter" = "*" ] || continue ;; esac
  echo "[ RUN      ] $c"
  if [ -n "${KVIO_GPU_STRESS:-}" ]; then
    echo "[ STRESS   ] $c repetition 1 of ${KVIO_GPU_STRESS}: OK"
  fi
  if [ -n "${FAKE_NO_GPU:-}" ]; then
    printf '%s\n' "x.cpp:1: Skipped" "no CUDA device: no usable CUDA driver" "" "[  SKIPPED ] $c (0 ms)"
  elif [[ "$c" == *AStreamOfAnotherDeviceIsRefused* ]]; then
    printf '%s\n' "x.cpp:1364: Skipped" "needs two CUDA devices (1 here)" "" "[  SKIPPED ] $c (0 ms)"
  elif [ -n "${FAKE_SKIP:-}" ] && [[ "$c" == *"$FAKE_SKIP"* ]]; then
    printf '%s\n' "x.cpp:9: Skipped" "something this machine should have" "" "[  SKIPPED ] $c (0 ms)"
  elif [ -n "${FAKE_FAIL:-}" ] && [[ "$c" == *"$FAKE_FAIL"* ]]; then
    printf '%s\n' "x.cpp:7: Failure" "bytes differ" "[  FAILED  ] $c (1 ms)"
    status=1
  else
    echo "[       OK ] $c (0 ms)"
  fi
done
echo "[==========] done."
exit $status
EOF
chmod +x "$work/fake-gtest"
cp "$work/fake-gtest" "$work/pkg/cuda_gpu_test"
cp "$work/fake-gtest" "$work/pkg/cuda_lifetime_gpu_test"
export FAKE_CASES_cuda_gpu_test="CudaBackends.PageableHostMemoryIsRefused CudaBackends.AStreamOfAnotherDeviceIsRefused Configs/CudaConformance.MatchesOracle/kernel_mha Configs/CudaConformance.MatchesOracle/direct_mha Configs/CudaConformance.MatchesOracle/staged_mha CudaAuto.MeasuresItsCrossoverWhenCreated"
export FAKE_CASES_cuda_lifetime_gpu_test="Backends/CudaLifetime.RewrappedHostMemory/kernel Backends/CudaLifetime.RewrappedHostMemory/direct"

cat > "$work/pkg/kvio_cuda_bench" <<'EOF'
#!/usr/bin/env bash
out=""
while [ $# -gt 0 ]; do [ "$1" = "--out" ] && out="$2"; shift; done
if [ -n "${FAKE_NO_GPU:-}" ]; then echo "kvio_cuda_bench: skipped: no CUDA device"; exit 0; fi
printf 'test\tbackend\tGBps\nrows\tkernel\t50.0\n' > "$out"
echo "kvio_cuda_bench on a stand-in"
echo "kernel beside compute: 40.0 GB/s"
EOF
chmod +x "$work/pkg/kvio_cuda_bench"

cat > "$work/jre/jre/bin/java" <<'EOF'
#!/usr/bin/env bash
case " $* " in
  *" org.testng.TestNG "*)
    # The classes the package lists (java-tests/gpu-classes.txt below), as TestNG takes them.
    case " $* " in
      *" -testclass io.kvio.FakeGpuTest,io.kvio.OtherGpuTest "*) ;;
      *) echo "[TestNG] not the package's classes: $*"; exit 1 ;;
    esac
    if [ -n "${FAKE_NO_GPU:-}" ]; then
      echo "Total tests run: 4, Passes: 0, Failures: 0, Skips: 4"
      [ -n "${FAKE_CONFIG_FAILS:-}" ] && echo "Configuration Failures: 1, Skips: 0"
      exit 2
    fi
    echo "Total tests run: 4, Passes: 4, Failures: 0, Skips: 0" ;;
  *" matrix "*)
    echo "| cell | PASS |"
    if [ -n "${FAKE_NO_GPU:-}" ]; then echo "0 PASS, 12 UNAVAILABLE"; exit 4; fi
    echo "12 PASS, 0 FAIL" ;;
  *" roundtrip "*) echo "io backend auto: 40.0 GB/s (ceiling 55.0)"; echo "all 4 layouts verified OK" ;;
  *" bench "*)
    [ -n "${FAKE_BENCH_FAILS:-}" ] && { echo "kvio: out of device memory" >&2; exit 3; }
    echo "| kernel | page_first | load | 4 KiB | 64 | 2.00 | 30.00 | 40.00 | 0.75 |"
    echo "- kernel: submit 3.10, submit+await 12.40"
    echo "- auto (runs on cuda): submit 3.20, submit+await 12.60" ;;
esac
EOF
chmod +x "$work/jre/jre/bin/java"
tar -C "$work/jre" -cJf "$work/pkg/jre.txz" jre
: > "$work/pkg/libkvio.so"
: > "$work/pkg/kvio-cli.jar"
: > "$work/pkg/java-tests/kvio-tests.jar"
echo "io.kvio.FakeGpuTest,io.kvio.OtherGpuTest" > "$work/pkg/java-tests/gpu-classes.txt"
echo "commit: 0000000 (stand-ins)" > "$work/pkg/PACKAGE.txt"

cat > "$work/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
while [ $# -gt 0 ] && [[ "$1" == --* ]]; do
  case "$1" in --tool | --leak-check | --report-api-errors) shift ;; esac
  shift
done
"$@" > /dev/null 2>&1
echo "========= ERROR SUMMARY: 0 errors"
EOF
chmod +x "$work/bin/compute-sanitizer"

# ---- the scenarios ----
failures=0
# scenario NAME EXPECTED_EXIT [VAR=VALUE...] -- then checks on its output (expect_line/refuse_line)
run_case() {
  local name="$1" expected="$2"
  shift 2
  local out="$work/out-$name"
  rm -rf "$out"
  mkdir -p "$out"
  local rc=0
  env PATH="$work/bin:$PATH" "$@" bash "$root/scripts/gpu-check.sh" run "$work/pkg" "$out" \
    > "$work/log-$name" 2>&1 || rc=$?
  current="$name"
  if [ "$rc" != "$expected" ]; then
    echo "test-gpu-check: FAIL: $name: exit $rc, expected $expected"
    { sed 's/^/    /' "$work/log-$name" || true; } | tail -40
    failures=$((failures + 1))
  else
    echo "test-gpu-check: $name: exit $rc as expected"
  fi
}
# expect_line FILE PATTERN: the scenario's OUTDIR/FILE has a line matching PATTERN (grep -E).
expect_line() {
  if ! grep -Eq -- "$2" "$work/out-$current/$1" 2> /dev/null; then
    echo "test-gpu-check: FAIL: $current: no line matching '$2' in $1:"
    { sed 's/^/    /' "$work/out-$current/$1" 2>&1 || true; } | tail -40
    failures=$((failures + 1))
  fi
}
# refuse_line FILE PATTERN: no line of OUTDIR/FILE matches PATTERN.
refuse_line() {
  if grep -Eq -- "$2" "$work/out-$current/$1" 2> /dev/null; then
    echo "test-gpu-check: FAIL: $current: a line matching '$2' in $1:"
    grep -E -- "$2" "$work/out-$current/$1" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

# Every case passes but the one that needs a second GPU: a pass.
run_case all-pass 0
expect_line summary.txt 'RESULT: PASS'
expect_line summary.txt 'skipped \(this machine lacks it\): .*AStreamOfAnotherDeviceIsRefused'
expect_line summary.txt 'GPU tests: 8 cases, 7 PASS, 0 FAIL, 1 SKIPPED \(0 of them failures\), 0 not run'
expect_line gpu-tests.log '^== PASS .*CudaLifetime'
expect_line bench.tsv '^rows'
expect_line bench.txt 'verified'
expect_line bench.txt '^== kvio-cli bench \(submit cost\)'
expect_line summary.txt '^gpu-check: submit cost: kernel: submit 3.10, submit\+await 12.40$'
expect_line summary.txt '^gpu-check: submit cost: auto \(runs on cuda\): submit 3.20'
refuse_line summary.txt 'FAIL:|RESULT: FAIL'

# kvio-cli bench's submit cost is a measurement: its failure is reported, the run still passes.
run_case bench-fails 0 FAKE_BENCH_FAILS=1
expect_line summary.txt 'kvio-cli bench: exit 3 \(a measurement: not counted as a failure\)'
expect_line bench.txt 'out of device memory'
expect_line summary.txt 'RESULT: PASS'
refuse_line summary.txt 'submit cost:'

# A skip for a reason the machine does not explain is a failure.
run_case unexplained-skip 1 FAKE_SKIP=direct_mha
expect_line summary.txt 'FAIL: skipped for no reason this machine explains: .*direct_mha'
expect_line summary.txt 'SKIPPED \(1 of them failures\)'
expect_line summary.txt 'RESULT: FAIL'

# A test program that cannot list its cases fails the run (its cases would otherwise vanish).
run_case list-fails 1 FAKE_LIST_FAILS=cuda_lifetime_gpu_test
expect_line summary.txt 'FAIL: cuda_lifetime_gpu_test --gtest_list_tests failed'
expect_line summary.txt 'RESULT: FAIL'

# A failing case fails the run and its output is in gpu-tests.log.
run_case failing-case 1 FAKE_FAIL=kernel_mha
expect_line gpu-tests.log '^== FAIL .*kernel_mha \(exit 1\)'
expect_line gpu-tests.log 'bytes differ'
expect_line summary.txt 'RESULT: FAIL'

# No GPU: exit 3 before anything runs.
run_case no-gpu 3 FAKE_NO_GPU=1
expect_line summary.txt 'no GPU: no CUDA device'
refuse_line summary.txt 'phase 1'

# A package without its list of Java GPU test classes fails before anything runs.
mv "$work/pkg/java-tests/gpu-classes.txt" "$work/gpu-classes.txt"
run_case no-class-list 1
expect_line summary.txt 'FAIL: .*java-tests/gpu-classes.txt missing'
refuse_line summary.txt 'phase 1'
mv "$work/gpu-classes.txt" "$work/pkg/java-tests/gpu-classes.txt"

# dry (package runs it last, on the build machine without a GPU): run_dry NAME EXIT PATTERN
# [VAR=VALUE...]: its exit status and a line of its output matching PATTERN.
run_dry() {
  local name="$1" expected="$2" pattern="$3"
  shift 3
  local rc=0
  env PATH="$work/bin:$PATH" "$@" bash "$root/scripts/gpu-check.sh" dry "$work/pkg" \
    > "$work/log-$name" 2>&1 || rc=$?
  if [ "$rc" != "$expected" ] || ! grep -Eq -- "$pattern" "$work/log-$name"; then
    echo "test-gpu-check: FAIL: $name: exit $rc (expected $expected), or no line matching '$pattern'"
    { sed 's/^/    /' "$work/log-$name" || true; } | tail -40
    failures=$((failures + 1))
  else
    echo "test-gpu-check: $name: exit $rc as expected"
  fi
}
run_dry dry-ok 0 'the package runs here as far as it can' FAKE_NO_GPU=1
run_dry dry-program-does-not-start 1 'FAIL: cuda_gpu_test does not run here' FAKE_NO_GPU=1 \
  FAKE_BROKEN=1
run_dry dry-java-configuration-fails 1 'Java GPU tests: Total tests run: 4, Passes: 0' \
  FAKE_NO_GPU=1 FAKE_CONFIG_FAILS=1
run_dry dry-with-a-gpu 0 'a CUDA device answers here'
# An empty list of Java GPU test classes would run no Java test: dry fails.
cp "$work/pkg/java-tests/gpu-classes.txt" "$work/gpu-classes.txt"
: > "$work/pkg/java-tests/gpu-classes.txt"
run_dry dry-empty-class-list 1 'gpu-classes.txt is missing or empty' FAKE_NO_GPU=1
cp "$work/gpu-classes.txt" "$work/pkg/java-tests/gpu-classes.txt"

if [ "$failures" != 0 ]; then
  echo "test-gpu-check: $failures check(s) failed"
  exit 1
fi
echo "test-gpu-check: every scenario behaved"
