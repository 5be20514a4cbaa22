// The SM copy kernel of the 'kernel' io backend. The work of each thread is runWorker in
// copy_routine.cuh (shared with the host test that replays every worker and lane).
#include "copy_kernel.hpp"

namespace kvio {
namespace cuda {
namespace {

// Parallelization (copy_routine.cuh): the tiled routine when every row is 4-, 8- or 16-byte
// aligned on both sides (warps take tiles of the launch's word stream; each lane keeps
// kTileChunks loads in flight), else the per-row routine (a warp or sub-warp per index pair).
// One kernel per routine and word, so each gets its own register allocation. The grid is at
// most the CTA budget.
// Eight words per lane in CTAs of up to 512 threads (128 registers a thread), four in larger
// CTAs (64 registers): tileChunksFor().
template <int W, int K, int MaxThreads>
__global__ void __launch_bounds__(MaxThreads) tiledCopyKernel(const CopyLaunch launch) {
  runTiles<W, K>(launch, (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kTileLanes,
                 static_cast<int64_t>(gridDim.x) * blockDim.x / kTileLanes,
                 static_cast<int32_t>(threadIdx.x % kTileLanes));
}

template <int W>
void launchTiled(const CopyLaunch& launch, int32_t blocks, int32_t threads, cudaStream_t stream) {
  if (launch.tileChunks == 4) {
    tiledCopyKernel<W, 4, 1024><<<blocks, threads, 0, stream>>>(launch);
  } else {
    tiledCopyKernel<W, 8, 512><<<blocks, threads, 0, stream>>>(launch);
  }
}

__global__ void __launch_bounds__(1024) perRowCopyKernel(const CopyLaunch launch) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t lanes = launch.lanesPerWorker;
  runWorker(launch, thread / lanes, static_cast<int64_t>(gridDim.x) * blockDim.x / lanes,
            static_cast<int32_t>(thread % lanes));
}

}  // namespace

cudaError_t launchCopyKernel(const CopyLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                             cudaStream_t stream) {
  if (launch.wordBytes != 0 && launch.tileChunks == 8 && threadsPerBlock > 512) {
    return cudaErrorInvalidConfiguration;  // eight words per lane: at most 512 threads per CTA
  }
  switch (launch.wordBytes) {
    case 16: launchTiled<16>(launch, blocks, threadsPerBlock, stream); break;
    case 8: launchTiled<8>(launch, blocks, threadsPerBlock, stream); break;
    case 4: launchTiled<4>(launch, blocks, threadsPerBlock, stream); break;
    default: perRowCopyKernel<<<blocks, threadsPerBlock, 0, stream>>>(launch); break;
  }
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace kvio
