// Empty kernels for kvio_cuda_bench's call-cost table (call_costs.cu): the launch cost of a
// kernel with a small parameter and with a 4 KiB one (the size of the kernel backend's inline
// launch, which carries a small job's tables and indices in the parameter). Not part of kvio.
#ifndef KVIO_BENCH_CALL_COSTS_HPP_
#define KVIO_BENCH_CALL_COSTS_HPP_

#include <cuda_runtime.h>

namespace kvio_bench {

/// Launches an empty kernel (1 CTA x 32 threads) whose parameter is 16 bytes (large false) or
/// 4096 bytes (large true) on `stream`. Returns cudaGetLastError.
cudaError_t launchEmptyKernel(bool large, cudaStream_t stream);

}  // namespace kvio_bench

#endif  // KVIO_BENCH_CALL_COSTS_HPP_
