// A busy kernel for the GPU tests' stress mode (cuda_gpu_test, KVIO_GPU_STRESS=N): a compute loop
// that keeps every SM occupied on its own stream while the conformance matrix runs beside it.
// Test code only; the test calls it through kvioTestLaunchBusy.
#include <cuda_runtime.h>

#include "cuda_gpu_busy.hpp"

namespace {

// Parallelization: one thread per element of `data` (gridDim.x * blockDim.x elements); each
// thread runs `iterations` dependent multiply-adds in registers and stores one float, so the
// kernel occupies SMs for a time proportional to `iterations` and touches little memory.
__global__ void busyKernel(float* data, int iterations) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  float x = data[i];
  for (int k = 0; k < iterations; ++k) x = x * 0.999999f + 1.0e-7f;
  data[i] = x;
}

}  // namespace

cudaError_t kvioTestLaunchBusy(cudaStream_t stream, float* data, int blocks, int threads,
                               int iterations) {
  busyKernel<<<blocks, threads, 0, stream>>>(data, iterations);
  return cudaGetLastError();
}
