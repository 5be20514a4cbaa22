// The checks of kvio_cuda_bench's sources (cuda_transfer_bench.cpp, beside_compute.cpp): a kvio
// call wrapped in BENCH_KVIO that does not return KVIO_STATUS_OK, or a CUDA runtime call wrapped
// in BENCH_CUDA that does not return cudaSuccess, ends the benchmark with exit status 1 and one
// line on stderr naming the call and its error (kvio_last_error, cudaGetErrorString). Going on
// after a failed call would time nothing and still print figures. The closes of finished
// transfers and pools are not wrapped (a failure there changes no figure).
#ifndef KVIO_BENCH_BENCH_CHECK_HPP_
#define KVIO_BENCH_BENCH_CHECK_HPP_

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "kvio/kvio.h"

namespace kvio_bench {

[[noreturn]] inline void callFailed(const char* call, const char* error) {
  std::fprintf(stderr, "kvio_cuda_bench: %s failed: %s\n", call, error);
  std::exit(1);
}

inline void checkKvio(kvio_status status, const char* call) {
  if (status != KVIO_STATUS_OK) callFailed(call, kvio_last_error());
}

inline void checkCuda(cudaError_t error, const char* call) {
  if (error != cudaSuccess) callFailed(call, cudaGetErrorString(error));
}

}  // namespace kvio_bench

/// Runs a kvio call (it returns a kvio_status) and exits, naming it, unless it returned OK.
#define BENCH_KVIO(call) ::kvio_bench::checkKvio((call), #call)
/// Runs a CUDA runtime call and exits, naming it, unless it returned cudaSuccess.
#define BENCH_CUDA(call) ::kvio_bench::checkCuda((call), #call)

#endif  // KVIO_BENCH_BENCH_CHECK_HPP_
