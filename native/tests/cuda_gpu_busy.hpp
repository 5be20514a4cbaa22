// The stress mode's busy kernel (cuda_gpu_busy.cu), launched by cuda_gpu_test.
#ifndef KVIO_TESTS_CUDA_GPU_BUSY_HPP_
#define KVIO_TESTS_CUDA_GPU_BUSY_HPP_

#include <cuda_runtime.h>

/// Launches blocks x threads threads on `stream`, each running `iterations` multiply-adds on its
/// element of `data` (blocks * threads floats of device memory). Returns the launch's error.
cudaError_t kvioTestLaunchBusy(cudaStream_t stream, float* data, int blocks, int threads,
                               int iterations);

#endif  // KVIO_TESTS_CUDA_GPU_BUSY_HPP_
