#!/usr/bin/env bash
# Builds and installs the native library as a C++ user would (cmake --install), then builds and
# runs examples/cpp-consumer against the installed package (find_package(kvio), kvio::kvio).
# Usage: scripts/check-cpp-package.sh [work dir]   (default: a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DKVIO_BUILD_TESTS=OFF \
    -DKVIO_BUILD_BENCH=OFF -DKVIO_BUILD_FUZZ=OFF >/dev/null
cmake --build "$work/build" --parallel 2 >/dev/null
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null
cmake -S examples/cpp-consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/kvio_consumer"
