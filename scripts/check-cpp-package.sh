#!/usr/bin/env bash
# Builds and installs the native library as a C++ user would (cmake --install), then builds and
# runs examples/cpp-consumer against the installed package (find_package(kvio), kvio::kvio).
# Checks that the package installs only the public headers (kvio.h, kvio_enums.def, kvio.hpp:
# nothing that declares symbols libkvio does not export) and that a C++14 consumer is compiled
# as C++14 (the package must not ask for a newer standard than its headers need). Last, kvio
# configured inside another project (add_subdirectory) must leave the build type unset and build
# no tests, fuzz replay or benchmark unless asked. The pkg-config file (kvio.pc) must build and
# run the same consumer without CMake, from an install moved elsewhere, and a C99 consumer
# (examples/c-consumer) too.
# Usage: scripts/check-cpp-package.sh [work dir]   (default: a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d)}
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DKVIO_BUILD_TESTS=OFF \
    -DKVIO_BUILD_BENCH=OFF -DKVIO_BUILD_FUZZ=OFF >/dev/null
cmake --build "$work/build" --parallel 2 >/dev/null
cmake --install "$work/build" --prefix "$work/prefix" >/dev/null
headers=$(cd "$work/prefix/include" && find . -type f | sort | tr '\n' ' ')
if [ "$headers" != "./kvio/kvio.h ./kvio/kvio.hpp ./kvio/kvio_enums.def " ]; then
  echo "installed headers are not the public ones: $headers" >&2
  exit 1
fi
cmake -S examples/cpp-consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
cmake --build "$work/consumer" >/dev/null
if ! grep -q -- '-std=c++14' "$work/consumer/compile_commands.json"; then
  echo "the C++14 consumer was not compiled as C++14:" >&2
  grep -o -- '-std=[^ ]*' "$work/consumer/compile_commands.json" >&2
  exit 1
fi
# The installed library has a versioned soname (0.x: libkvio.so.MAJOR.MINOR), the consumer
# records that name, and the version in kvio.h is the package's.
version=$(sed -n 's/^#define KVIO_VERSION_STRING "\(.*\)"/\1/p' native/include/kvio/kvio.h)
soname="libkvio.so.${version%.*}"
library=$(find "$work/prefix" -name libkvio.so | head -1)
if ! readelf -d "$library" | grep -q "Library soname: \[$soname\]"; then
  echo "installed $library: expected soname $soname, got:" >&2
  readelf -d "$library" | grep -i soname >&2 || echo "(none)" >&2
  exit 1
fi
if ! readelf -d "$work/consumer/kvio_consumer" | grep -q "Shared library: \[$soname\]"; then
  echo "the consumer does not record $soname:" >&2
  readelf -d "$work/consumer/kvio_consumer" | grep NEEDED >&2
  exit 1
fi
echo "installed libkvio.so: soname $soname, recorded by the consumer"
"$work/consumer/kvio_consumer"
# pkg-config: the installed kvio.pc, read where the install was moved to (it is relocatable),
# gives the package's version and what a C++14 build of the consumer needs, without CMake.
mv "$work/prefix" "$work/moved"
pcfile=$(find "$work/moved" -name kvio.pc | head -1)
if [ -z "$pcfile" ] || ! command -v pkg-config > /dev/null; then
  echo "no kvio.pc in the install ($work/moved) or no pkg-config on PATH" >&2
  exit 1
fi
pcdir=$(dirname "$pcfile")
pc() { PKG_CONFIG_PATH="$pcdir" pkg-config "$@" kvio; }
if [ "$(pc --modversion)" != "$version" ]; then
  echo "kvio.pc says version $(pc --modversion), kvio.h $version" >&2
  exit 1
fi
# shellcheck disable=SC2046  # the flags are words
c++ -std=c++14 -pedantic -Werror -Wall -o "$work/pc_consumer" examples/cpp-consumer/main.cpp \
    $(pc --cflags) $(pc --libs) -Wl,-rpath,"$(pc --variable=libdir)"
"$work/pc_consumer" >/dev/null
echo "kvio.pc: version $version; the consumer built and ran with its flags, the install moved"
# A C consumer of kvio.h alone (C99, the header's language for C), with the same flags.
# shellcheck disable=SC2046  # the flags are words
cc -std=c99 -pedantic -Werror -Wall -Wextra -o "$work/c_consumer" examples/c-consumer/main.c \
    $(pc --cflags) $(pc --libs) -Wl,-rpath,"$(pc --variable=libdir)"
"$work/c_consumer"
# kvio inside another project: no build type forced, no tests, fuzz replay or benchmark, and
# the parent's build of everything builds the library alone, not the test variant (kvio_testing
# and its objects, kvio_core_testing): read from what the Makefile generator's `all` of kvio's
# folder depends on (CMakeFiles/Makefile2, "kvio/all: <target folder>/all" lines).
mkdir -p "$work/parent"
printf 'cmake_minimum_required(VERSION 3.20)\nproject(kvio_parent LANGUAGES CXX)\nadd_subdirectory("%s" kvio)\n' \
    "$PWD" > "$work/parent/CMakeLists.txt"
cmake -S "$work/parent" -B "$work/parent/build" -G "Unix Makefiles" -DKVIO_WITH_CUDA=OFF >/dev/null
in_all=$(sed -n 's|^kvio/all: kvio/CMakeFiles/\(.*\)\.dir/all$|\1|p' \
  "$work/parent/build/CMakeFiles/Makefile2" | sort | tr '\n' ' ')
if [ "$in_all" != "kvio kvio_core kvio_core_shipped " ]; then
  echo "kvio under add_subdirectory: 'all' should build kvio kvio_core kvio_core_shipped, builds:" \
    "$in_all" >&2
  exit 1
fi
cache=$(cmake -L -N "$work/parent/build")
for expected in CMAKE_BUILD_TYPE:STRING= KVIO_BUILD_TESTS:BOOL=OFF KVIO_BUILD_BENCH:BOOL=OFF \
    KVIO_BUILD_FUZZ:BOOL=OFF; do
  if ! grep -qx -- "$expected" <<<"$cache"; then
    echo "kvio under add_subdirectory: expected $expected in the cache, got:" >&2
    grep -E "^(CMAKE_BUILD_TYPE|KVIO_BUILD_)" <<<"$cache" >&2
    exit 1
  fi
done
echo "kvio under add_subdirectory: no build type forced; tests, fuzz replay, benchmark and the" \
  "test library off"
