# Sanitizer builds of kvio (docs/reliability.md). KVIO_SANITIZE=ON compiles and links every
# target of this build (the library, the C++ tests, the fuzz replay) with AddressSanitizer and
# UndefinedBehaviorSanitizer; -fno-sanitize-recover=all turns every UB report into a failing
# process, so ctest fails on it. Used by scripts/reliability-check.sh (run by .ci/run), which
# configures its own build directory with it (clang where present; with the CUDA backend where
# nvcc is found, its host code then tested on the fake CUDA runtime) and runs ctest there, then
# the fuzz target.
# Inside a JVM, a sanitized libkvio.so needs the ASan runtime preloaded:
# scripts/jni-sanitize-check.sh builds it with this option (gcc), builds the JNI glue the same
# way and runs the Java tests with LD_PRELOAD.
option(KVIO_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer (tests only)" OFF)

if(KVIO_SANITIZE)
  set(KVIO_SANITIZE_FLAGS
      -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
  # Host-compiler flags for C and C++ only: nvcc rejects them, and the CUDA kernels (compiled
  # only, run on a GPU) need none.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${KVIO_SANITIZE_FLAGS}>")
  add_link_options(-fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # Coverage for libFuzzer in the library too, so the fuzzer is guided by the core's branches.
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>")
  endif()
  message(STATUS "kvio: AddressSanitizer + UndefinedBehaviorSanitizer build")
endif()

# ThreadSanitizer (not in CI: a third build would cost CI minutes; run it after executor or
# concurrency changes): cmake -S . -B build-tsan -DKVIO_SANITIZE_THREAD=ON && ctest --test-dir build-tsan
option(KVIO_SANITIZE_THREAD "Build with ThreadSanitizer (tests only; exclusive with KVIO_SANITIZE)" OFF)
if(KVIO_SANITIZE_THREAD)
  if(KVIO_SANITIZE)
    message(FATAL_ERROR "KVIO_SANITIZE_THREAD and KVIO_SANITIZE cannot be combined (TSan excludes ASan)")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=thread;-fno-omit-frame-pointer;-g>")
  add_link_options(-fsanitize=thread)
  message(STATUS "kvio: ThreadSanitizer build")
endif()
