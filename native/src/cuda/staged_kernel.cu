// The gather/scatter kernel of the 'staged' io backend: each thread runs runStagedThread
// (staged_routine.cuh, replayed on the host by cuda_staged_routine_test).
#include "staged_kernel.hpp"

namespace kvio {
namespace cuda {
namespace {

__global__ void __launch_bounds__(1024) stagedCopyKernel(const StagedLaunch launch) {
  runStagedThread(launch, blockIdx.x, gridDim.x, static_cast<int32_t>(threadIdx.x),
                  static_cast<int32_t>(blockDim.x));
}

}  // namespace

cudaError_t launchStagedKernel(const StagedLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                               cudaStream_t stream) {
  (void)cudaGetLastError();  // not an earlier call's error taken for this launch's (copy_kernel.cu)
  stagedCopyKernel<<<blocks, threadsPerBlock, 0, stream>>>(launch);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kvio
