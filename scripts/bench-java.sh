#!/usr/bin/env bash
# Runs the JMH benchmark of one small Java call (java/src/test/java/io/kvio/bench).
# Usage: scripts/bench-java.sh   (builds with mvn first; about 1 minute)
set -euo pipefail
cd "$(dirname "$0")/.."
# -am: the tests need kvio-oracle (oracle/) from the reactor
mvn -q -pl java -am -DskipTests test-compile dependency:build-classpath \
    -Dmdep.outputFile="$PWD/java/target/test-classpath.txt" -Dmdep.includeScope=test
exec java -cp "java/target/test-classes:java/target/classes:$(cat java/target/test-classpath.txt)" \
    io.kvio.bench.SmallCallBenchmark "$@"
