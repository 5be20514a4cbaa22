// Host entry of the SM copy kernel (copy_kernel.cu), called by the kernel executor.
#ifndef KVIO_CUDA_COPY_KERNEL_HPP_
#define KVIO_CUDA_COPY_KERNEL_HPP_

#include <cuda_runtime.h>

#include "copy_routine.cuh"

namespace kvio {
namespace cuda {

/// Launches the copy kernel on `stream`: `blocks` blocks of `threadsPerBlock` threads
/// (a multiple of 32). Returns the launch's error (cudaGetLastError).
cudaError_t launchCopyKernel(const CopyLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                             cudaStream_t stream);
/// The same for a small job whose tables and indices travel in the kernel parameter.
cudaError_t launchInlineCopyKernel(const InlineCopyLaunch& params, int32_t blocks,
                                   int32_t threadsPerBlock, cudaStream_t stream);

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_COPY_KERNEL_HPP_
