#!/usr/bin/env bash
# The Java side of kvio's CUDA backend without a GPU: the Java GPU tests (TestNG group gpu), the
# main job (kvio-cli.jar roundtrip) on every CUDA io backend and the hardware matrix, each in a
# JVM that loads the test libkvio built against the CPU fake of the CUDA runtime
# (<build>/native/tests/fake-cuda/libkvio.so, native/tests/fake_cuda; docs/cuda.md) in place of
# the library kvio-cli.jar carries (JavaCPP's org.bytedeco.javacpp.pathsFirst). What the C++ GPU
# tests check on the fake (ctest label fake_cuda) this checks through JNI and the CLI.
# Needs mvn verify's outputs: the native build with CUDA (nvcc found), java/target/test-classes
# and cli/target/kvio-cli.jar; writes the tests' classpath (java/target/test-classpath.txt, Maven's
# dependency:build-classpath, MVN_ARGS added) when it is missing. A build without the CUDA backend
# (KVIO_CUDA_BACKEND in its CMakeCache.txt: no nvcc, or one older than 12.8) has no fake library:
# the check says so and passes; a CUDA build without it (native tests off, no GoogleTest) fails.
# Usage: scripts/fake-cuda-check.sh [native build dir, default java/target/cmake]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-java/target/cmake}"
fake="$build/native/tests/fake-cuda"
if [ ! -f "$fake/libkvio.so" ]; then
  if grep -q '^KVIO_CUDA_BACKEND:INTERNAL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "fake-cuda: FAIL: $build has the CUDA backend but no $fake/libkvio.so (C++ tests off?)" >&2
    exit 1
  fi
  echo "fake-cuda: $build has no CUDA backend (no nvcc 12.8+): nothing to check"
  exit 0
fi
jar=cli/target/kvio-cli.jar
for f in "$jar" java/target/test-classes; do
  [ -e "$f" ] || { echo "fake-cuda: FAIL: $f is missing (run mvn verify first)" >&2; exit 1; }
done
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
if [ ! -f java/target/test-classpath.txt ]; then
  # -am with test-compile (natives skipped): the tests' kvio-oracle resolves to the reactor's
  # oracle/target/classes, not to a local repository that may not hold it.
  # shellcheck disable=SC2086  # MVN_ARGS is a list of arguments
  mvn -q -B -ntp -Dstyle.color=never ${MVN_ARGS:-} -pl :kvio -am -Djavacpp.skip=true -DskipTests \
    test-compile dependency:build-classpath -Dmdep.includeScope=test \
    -Dmdep.outputFile="$PWD/java/target/test-classpath.txt" > "$scratch/mvn.log" 2>&1 ||
    { tail -n 30 "$scratch/mvn.log"; echo "fake-cuda: FAIL: the tests' classpath" >&2; exit 1; }
fi
# The Java test classes with tests in the TestNG group gpu (io.kvio.A,io.kvio.B); none fails here.
gpu_classes="$(scripts/gpu-test-classes.sh)"
on_fake() {  # java on the fake CUDA runtime, a JavaCPP cache of its own per run
  local cache="$1"
  shift
  java -Dorg.bytedeco.javacpp.pathsFirst=true -Djava.library.path="$fake" \
    -Dorg.bytedeco.javacpp.cachedir="$scratch/$cache" "$@"
}

# 1. The Java GPU tests, as scripts/gpu-check.sh runs them on a GPU: the classes under test from
# kvio-cli.jar, the tests' classes and TestNG's jars. Every test must run and pass (none skipped:
# a skip here means the fake was not loaded).
classpath="$jar:java/target/test-classes"
for entry in $(tr ':' ' ' < java/target/test-classpath.txt); do
  case "$(basename "$entry")" in
    testng-*.jar | slf4j-api-*.jar | jcommander-*.jar | jquery-*.jar) classpath="$classpath:$entry" ;;
  esac
done
if ! on_fake tests -cp "$classpath" org.testng.TestNG -groups gpu -d "$scratch/testng" \
  -testclass "$gpu_classes" \
  > "$scratch/java-tests.log" 2>&1; then
  tail -n 40 "$scratch/java-tests.log"
  echo "fake-cuda: FAIL: the Java GPU tests" >&2
  exit 1
fi
summary="$(grep -m1 'Total tests run' "$scratch/java-tests.log" || echo 'no TestNG summary')"
echo "fake-cuda: Java GPU tests: $summary"
if ! grep -Eq 'Total tests run: ([1-9][0-9]*), Passes: \1, Failures: 0, Skips: 0' <<< "$summary"; then
  tail -n 40 "$scratch/java-tests.log"
  echo "fake-cuda: FAIL: every Java GPU test must run and pass on the fake" >&2
  exit 1
fi

# 2. The main job on each CUDA io backend (auto first: it must find CUDA device 0), both kinds,
# small pools: every byte verified.
run_roundtrip() {
  local expect="$1"
  shift
  local out rc=0
  out="$(on_fake roundtrip -jar "$jar" roundtrip --tokens 700 --layers 4 "$@" 2>&1)" || rc=$?
  if [ "$rc" != 0 ] || ! grep -q "$expect" <<< "$out" || ! grep -q 'verified OK' <<< "$out"; then
    { grep -v '^progress' <<< "$out" || true; } | tail -n 20
    echo "fake-cuda: FAIL: roundtrip $* (exit $rc; expected \"$expect\" and every layout verified)" >&2
    exit 1
  fi
  echo "fake-cuda: roundtrip ${*:---backend auto}: $(grep -m1 'verified OK' <<< "$out")"
}
run_roundtrip 'io backend auto (kernel, direct or staged per transfer, CUDA device 0)'
for backend in kernel direct staged; do
  run_roundtrip "io backend $backend" --backend "$backend"
done
run_roundtrip 'io backend auto (kernel, direct or staged per transfer, CUDA device 0)' --kind mla

# 3. The hardware matrix: kernel, direct and staged available (--require) and no cell FAILs
# (UNSUPPORTED cells say which support rule refuses them).
if ! on_fake matrix -jar "$jar" matrix --require kernel,direct,staged --quiet \
  > "$scratch/matrix.md" 2> "$scratch/matrix.err"; then
  tail -n 20 "$scratch/matrix.err" "$scratch/matrix.md"
  echo "fake-cuda: FAIL: matrix --require kernel,direct,staged" >&2
  exit 1
fi
echo "fake-cuda: matrix: $(tail -n 1 "$scratch/matrix.md")"
