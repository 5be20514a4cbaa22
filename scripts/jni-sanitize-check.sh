#!/usr/bin/env bash
# The Java test suite against an AddressSanitizer + UndefinedBehaviorSanitizer build of the
# natives, inside a real JVM (docs/reliability.md, "Inside the JVM").
#
#   scripts/jni-sanitize-check.sh [BUILD_DIR]      (default build-jni-asan; run after `mvn verify`)
#
# 1. CMake builds libkvio.so with KVIO_SANITIZE=ON (gcc, so the JVM can preload gcc's runtime).
# 2. JavaCPP's Builder compiles the JNI glue libjniKvioNative.so with the same sanitizers,
#    linked against that library.
# 3. Both go into a copy of the core module's classes (replacing the release natives), and
#    TestNG runs every test class of the core module on it, with the ASan and UBSan runtimes
#    preloaded into the JVM. Any report aborts the JVM, so the script fails.
# Left out: the `gpu` group (needs a device) and LeakTest (its RSS bound does not hold under
# ASan's quarantine; the native live-object counters it also checks run in ReliabilityTest).
# ASan options for a JVM: leak detection off (the JVM never frees some memory on purpose) and
# SIGSEGV left to the JVM (it uses faults for safepoints and null checks).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build-jni-asan}
case "$build" in /*) ;; *) build="$root/$build" ;; esac

# The core module's compiled classes (with io/kvio/KvioNative.class) and test classes.
bridge=$(find . -path ./build-\* -prune -o -path '*/target/classes/io/kvio/KvioNative.class' \
  -print | head -n 1)
if [ -z "$bridge" ]; then
  echo "jni-sanitize: no compiled io.kvio.KvioNative under */target/classes; run mvn verify first" >&2
  exit 2
fi
classes=$(cd "$(dirname "$bridge")/../.." && pwd)
module=$(cd "$classes/../.." && pwd)
testClasses="$module/target/test-classes"
platform=$(ls -d "$classes"/io/kvio/*/ | xargs -n1 basename | grep -v -x -e bridge -e cli | head -n 1)
[ -d "$testClasses" ] || { echo "jni-sanitize: $testClasses is missing; run mvn verify first" >&2; exit 2; }

asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
for lib in "$asan" "$ubsan"; do
  [ -f "$lib" ] || { echo "jni-sanitize: gcc has no $(basename "$lib") (install libgcc-12-dev)" >&2; exit 2; }
done

echo "jni-sanitize: libkvio.so with ASan+UBSan ($build)"
rm -rf "$build"  # a fresh configure: changing compilers on an old cache drops the -D options
cmake -S "$root" -B "$build" -DKVIO_SANITIZE=ON -DKVIO_WITH_CUDA=OFF -DKVIO_BUILD_TESTS=OFF \
  -DKVIO_BUILD_BENCH=OFF -DKVIO_INSTALL_PACKAGE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=g++ >/dev/null
cmake --build "$build" --target kvio_testing --parallel 2 >/dev/null

stage="$build/stage"
natives="$stage/classes/io/kvio/$platform"
rm -rf "$stage"
mkdir -p "$stage"
cp -r "$classes" "$stage/"
rm -f "$natives"/*
cp "$build/testing/libkvio.so" "$natives/"  # the test variant: the Java tests inject faults

echo "jni-sanitize: deps class path and the JNI glue with ASan+UBSan"
# -am with test-compile (natives skipped): the tests' kvio-oracle resolves to oracle/target/classes
mvn -B -ntp -q -f "$root/pom.xml" -pl :kvio -am -Djavacpp.skip=true -DskipTests test-compile \
  dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$build/classpath.txt" >/dev/null
deps=$(cat "$build/classpath.txt")
javacpp=$(tr ':' '\n' <"$build/classpath.txt" | grep '/javacpp-[0-9][^/]*\.jar$' | head -n 1)
java -cp "$javacpp:$stage/classes" org.bytedeco.javacpp.tools.Builder -properties "$platform" \
  -d "$natives" -Dplatform.includepath="$root/native/include" -Dplatform.linkpath="$natives" \
  -Dplatform.linkpath.prefix2=-Wl,-rpath-link, \
  -Xcompiler -fsanitize=address,undefined -Xcompiler -fno-sanitize-recover=all \
  -Xcompiler -fno-omit-frame-pointer -Xcompiler -g io.kvio.KvioNative >"$build/javacpp.log" 2>&1 ||
  { cat "$build/javacpp.log" >&2; exit 1; }
[ -f "$natives/libjniKvioNative.so" ] || { cat "$build/javacpp.log" >&2; exit 1; }

tests=$(cd "$testClasses" && find io -name '*Test.class' ! -name '*$*' ! -name LeakTest.class |
  sed 's/\.class$//; s#/#.#g' | sort | paste -sd, -)
echo "jni-sanitize: TestNG with the ASan and UBSan runtimes preloaded into the JVM"
set +e
LD_PRELOAD="$asan:$ubsan" \
  ASAN_OPTIONS=detect_leaks=0:handle_segv=0:allow_user_segv_handler=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  java -Dorg.bytedeco.javacpp.cachedir="$build/javacpp-cache" \
  -Dkvio.enums.def="$root/native/include/kvio/kvio_enums.def" \
  -cp "$stage/classes:$testClasses:$deps" org.testng.TestNG -excludegroups gpu -testclass "$tests" \
  -d "$build/testng" 2>&1 | tee "$build/testng.log" | grep -v '^SLF4J'
status=${PIPESTATUS[0]}
set -e
# The natives TestNG loaded were these instrumented ones (the release ones are not on the path).
for lib in libkvio.so libjniKvioNative.so; do
  nm -D "$natives/$lib" | grep ' U __asan_' >/dev/null ||
    { echo "jni-sanitize: $natives/$lib is not instrumented" >&2; exit 1; }
done
if [ "$status" -ne 0 ]; then
  echo "jni-sanitize: FAILED (TestNG exit $status; sanitizer reports above abort the JVM)" >&2
  exit 1
fi
grep -E '^Total tests run' "$build/testng.log"
echo "jni-sanitize: passed"
