// The SM copy kernel of the 'kernel' io backend. The work of each thread is runWorker in
// copy_routine.cuh (shared with the host test that replays every worker and lane).
#include "copy_kernel.hpp"

namespace kvio {
namespace cuda {
namespace {

// Parallelization: a worker is launch.lanesPerWorker consecutive threads (a warp, or a
// sub-warp for rows under 512 bytes); worker w of W handles index pairs w, w + W, w + 2W, ...,
// and for each pair loops over the layer map, the components and (for split heads) the heads.
// Within one row, lane k copies words k, k + lanes, ... (16-byte words when both sides allow),
// so each step of a worker touches one contiguous span. The grid is at most the CTA budget.
__global__ void __launch_bounds__(1024) copyKernel(const CopyLaunch launch) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t lanes = launch.lanesPerWorker;
  const int64_t workers = static_cast<int64_t>(gridDim.x) * blockDim.x / lanes;
  runWorker(launch, thread / lanes, workers, static_cast<int32_t>(thread % lanes));
}

}  // namespace

cudaError_t launchCopyKernel(const CopyLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                             cudaStream_t stream) {
  copyKernel<<<blocks, threadsPerBlock, 0, stream>>>(launch);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kvio
