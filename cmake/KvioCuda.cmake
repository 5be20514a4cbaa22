# Optional CUDA backend ('kernel', 'direct' and 'staged' io backends). Included from the top-level
# CMakeLists.txt before add_library(kvio): enable_language(CUDA) must run before the target
# exists, or its CUDA_ARCHITECTURES property starts empty.
#   KVIO_WITH_CUDA=AUTO (default): build the backend when nvcc is found, else CPU-only.
#   KVIO_WITH_CUDA=ON: fail the configure when nvcc is missing. OFF: never build it.
# Sets KVIO_HAVE_CUDA and, when ON, KVIO_CUDA_SOURCES (the backend's host code, compiled into the
# core) and KVIO_CUDA_KERNEL_SOURCES (its kernels, the object library kvio_cuda_kernels: the test
# build links the core with host replays of them instead, native/tests/fake_cuda).
set(KVIO_WITH_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON, OFF")
set_property(CACHE KVIO_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)

set(KVIO_HAVE_CUDA OFF)
set(_kvio_cuda_mode "${KVIO_WITH_CUDA}")
if(KVIO_SANITIZE AND _kvio_cuda_mode STREQUAL "AUTO")
  # Sanitizer builds test the core; with KVIO_WITH_CUDA=ON they also build the CUDA backend (the
  # sanitizer flags go to the host compiler only, cmake/Sanitizers.cmake), whose host code the
  # fake_cuda tests then run sanitized (scripts/reliability-check.sh does where nvcc is found).
  message(STATUS "kvio: sanitizer build - CUDA backend off (KVIO_WITH_CUDA=ON to build it)")
  set(_kvio_cuda_mode OFF)
endif()
if(NOT _kvio_cuda_mode STREQUAL "OFF")
  # nvcc is often not on PATH: give check_language() a hint (CUDACXX also works).
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(KVIO_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin
                 PATHS /usr/local/cuda/bin)
    if(KVIO_NVCC)
      set(CMAKE_CUDA_COMPILER "${KVIO_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  # The backend uses the CUDA 12.8 API (cuMemcpyBatchAsync's attributes, cudaMemcpy3DBatchAsync,
  # green-context streams, versioned driver entry points); it is compiled with 13.0 here. The
  # version is read from nvcc before enable_language(CUDA), which an older nvcc can fail (no
  # sm_90 before 11.8), so that AUTO can still build CPU-only.
  set(_kvio_nvcc_version "")
  if(CMAKE_CUDA_COMPILER)
    execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --version OUTPUT_VARIABLE _kvio_nvcc_out
                    ERROR_QUIET RESULT_VARIABLE _kvio_nvcc_result)
    if(_kvio_nvcc_result EQUAL 0 AND _kvio_nvcc_out MATCHES "release ([0-9]+\\.[0-9]+)")
      set(_kvio_nvcc_version "${CMAKE_MATCH_1}")
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER AND _kvio_nvcc_version AND _kvio_nvcc_version VERSION_LESS 12.8)
    string(CONCAT _kvio_cuda_old "nvcc at ${CMAKE_CUDA_COMPILER} is CUDA ${_kvio_nvcc_version}; "
                  "kvio's CUDA backend needs 12.8 or newer")
    if(_kvio_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "KVIO_WITH_CUDA=ON but ${_kvio_cuda_old} (set CMAKE_CUDA_COMPILER or "
                          "CUDACXX to a newer nvcc, or use KVIO_WITH_CUDA=AUTO)")
    endif()
    message(WARNING "kvio: ${_kvio_cuda_old} - CPU-only build (kernel, direct and staged "
                    "unavailable)")
  elseif(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # SASS for A100 (sm_80, also runs on 86/89) and H100/H200 (sm_90), PTX for newer GPUs.
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # Static cudart: libkvio.so then needs only libcuda.so.1 (the driver), loaded by cudart
    # at run time, so the library still loads on machines without a driver.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
    find_package(CUDAToolkit REQUIRED)
    set(KVIO_HAVE_CUDA ON)
    if(CUDAToolkit_VERSION VERSION_LESS 12.8)  # a toolkit other than nvcc's: the same rule
      message(FATAL_ERROR "the CUDA toolkit at ${CUDAToolkit_BIN_DIR} is ${CUDAToolkit_VERSION}; "
                          "kvio's CUDA backend needs 12.8 or newer (or KVIO_WITH_CUDA=OFF)")
    endif()
  endif()
  if(KVIO_HAVE_CUDA)  # nvcc found, and new enough
    set(KVIO_CUDA_SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/../native/src/cuda/cuda_backend.cpp
      ${CMAKE_CURRENT_LIST_DIR}/../native/src/cuda/cuda_memory.cpp
      ${CMAKE_CURRENT_LIST_DIR}/../native/src/cuda/direct_executor.cpp
      ${CMAKE_CURRENT_LIST_DIR}/../native/src/cuda/kernel_executor.cpp
      ${CMAKE_CURRENT_LIST_DIR}/../native/src/cuda/staged_executor.cpp)
    set(KVIO_CUDA_KERNEL_SOURCES
      ${CMAKE_CURRENT_LIST_DIR}/../native/src/cuda/copy_kernel.cu
      ${CMAKE_CURRENT_LIST_DIR}/../native/src/cuda/staged_kernel.cu)
    message(STATUS "kvio: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "archs ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(NOT CMAKE_CUDA_COMPILER AND _kvio_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "KVIO_WITH_CUDA=ON but no CUDA compiler (nvcc) was found; set "
                        "CMAKE_CUDA_COMPILER or CUDACXX, or use KVIO_WITH_CUDA=AUTO")
  elseif(NOT CMAKE_CUDA_COMPILER)
    message(STATUS "kvio: no CUDA compiler found - CPU-only build (kernel, direct and staged unavailable)")
  endif()
endif()
# Whether this build has the CUDA backend, for scripts that read CMakeCache.txt (an nvcc in the
# cache is not enough: one older than 12.8 leaves the backend out).
set(KVIO_CUDA_BACKEND "${KVIO_HAVE_CUDA}" CACHE INTERNAL "kvio's CUDA backend is built")

# Adds the CUDA backend's host code to the core's object library (kvio_core) and makes its
# kernels the object library kvio_cuda_kernels; whatever links the core links the kernels and
# CUDA::cudart_static too (kvio_link_core in the top-level CMakeLists.txt).
function(kvio_add_cuda_backend target)
  if(NOT KVIO_HAVE_CUDA)
    return()
  endif()
  target_sources(${target} PRIVATE ${KVIO_CUDA_SOURCES})
  target_compile_definitions(${target} PRIVATE KVIO_HAVE_CUDA=1)
  target_link_libraries(${target} PRIVATE CUDA::cudart_static)  # its headers
  add_library(kvio_cuda_kernels OBJECT ${KVIO_CUDA_KERNEL_SOURCES})
  target_include_directories(kvio_cuda_kernels PRIVATE ${PROJECT_SOURCE_DIR}/native/include)
  target_link_libraries(kvio_cuda_kernels PRIVATE CUDA::cudart_static)
  set_target_properties(kvio_cuda_kernels PROPERTIES CUDA_VISIBILITY_PRESET hidden
                        CXX_VISIBILITY_PRESET hidden)
endfunction()

# kvio_cuda_bench (native/bench/cuda_transfer_bench.cpp): the GPU bandwidth benchmark that
# scripts/gpu-check.sh runs. Plain main (no Google Benchmark): it times whole transfers.
function(kvio_add_cuda_bench)
  if(NOT KVIO_HAVE_CUDA)
    return()
  endif()
  # reference_copy.cu: the baseline kernel measured next to kvio's in the same run.
  # beside_compute.cpp, compute_load.cu: --beside-compute, kvio's loads next to a compute load.
  # call_costs.cu: empty kernels for the table of what the CUDA calls of a submit cost.
  add_executable(kvio_cuda_bench ${PROJECT_SOURCE_DIR}/native/bench/cuda_transfer_bench.cpp
                                 ${PROJECT_SOURCE_DIR}/native/bench/reference_copy.cu
                                 ${PROJECT_SOURCE_DIR}/native/bench/call_costs.cu
                                 ${PROJECT_SOURCE_DIR}/native/bench/beside_compute.cpp
                                 ${PROJECT_SOURCE_DIR}/native/bench/compute_load.cu)
  target_link_libraries(kvio_cuda_bench PRIVATE kvio CUDA::cudart_static)
  target_compile_options(kvio_cuda_bench PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
endfunction()
