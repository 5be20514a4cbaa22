// Host entry of the 'staged' io backend's gather/scatter kernel (staged_kernel.cu).
#ifndef KVIO_CUDA_STAGED_KERNEL_HPP_
#define KVIO_CUDA_STAGED_KERNEL_HPP_

#include <cuda_runtime.h>

#include "staged_routine.cuh"

namespace kvio {
namespace cuda {

/// Launches the gather (launch.gather 1) or scatter on `stream`: `blocks` CTAs of
/// `threadsPerBlock` threads (a multiple of 32, at most 1024). Returns cudaGetLastError().
cudaError_t launchStagedKernel(const StagedLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                               cudaStream_t stream);

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_STAGED_KERNEL_HPP_
