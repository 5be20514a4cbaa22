#!/usr/bin/env bash
# Prints the Java test classes that have tests in the TestNG group gpu, as TestNG's -testclass
# takes them (io.kvio.A,io.kvio.B): every class the sources mark, so that a new one runs without
# a list to keep. Exits 1, saying so, when the sources mark none (a renamed folder or group must
# not turn the Java GPU tests into a run of nothing). Used by gpu-check.sh (at package time; the
# package carries the list) and fake-cuda-check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
sources=java/src/test/java/io/kvio
classes="$({ grep -l 'groups = "gpu"' "$sources"/*.java 2>/dev/null || true; } \
  | xargs -r -n1 basename | sed 's/\.java$//; s/^/io.kvio./' | paste -sd, -)"
if [ -z "$classes" ]; then
  echo "$0: FAIL: no test class under $sources has tests in the TestNG group gpu" >&2
  exit 1
fi
echo "$classes"
