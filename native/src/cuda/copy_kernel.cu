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
// Each kernel exists for both parameters: a CopyLaunch (tables and indices uploaded to a slot)
// and an InlineCopyLaunch (a small job's tables and indices in the parameter itself, read in
// place: __grid_constant__ keeps it in parameter space instead of a per-thread copy).
__device__ inline const CopyLaunch& launchOf(const CopyLaunch& params) {
  return params;
}
__device__ inline CopyLaunch launchOf(const InlineCopyLaunch& params) {
  return inlineLaunch(params);
}
inline const CopyLaunch& schemeOf(const CopyLaunch& params) {
  return params;
}
inline const CopyLaunch& schemeOf(const InlineCopyLaunch& params) {
  return params.launch;
}

template <int W, int K, int MaxThreads, class Params>
__global__ void __launch_bounds__(MaxThreads)
    tiledCopyKernel(const __grid_constant__ Params params) {
  const CopyLaunch& launch = launchOf(params);
  runTiles<W, K>(launch, (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kTileLanes,
                 static_cast<int64_t>(gridDim.x) * blockDim.x / kTileLanes,
                 static_cast<int32_t>(threadIdx.x % kTileLanes));
}

template <int W, class Params>
void launchTiled(const Params& params, int32_t blocks, int32_t threads, cudaStream_t stream) {
  if (schemeOf(params).tileChunks == 4) {
    tiledCopyKernel<W, 4, 1024, Params><<<blocks, threads, 0, stream>>>(params);
  } else {
    tiledCopyKernel<W, 8, 512, Params><<<blocks, threads, 0, stream>>>(params);
  }
}

template <class Params>
__global__ void __launch_bounds__(1024) perRowCopyKernel(const __grid_constant__ Params params) {
  const CopyLaunch& launch = launchOf(params);
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t lanes = launch.lanesPerWorker;
  runWorker(launch, thread / lanes, static_cast<int64_t>(gridDim.x) * blockDim.x / lanes,
            static_cast<int32_t>(thread % lanes));
}

template <class Params>
cudaError_t launchWith(const Params& params, int32_t blocks, int32_t threadsPerBlock,
                       cudaStream_t stream) {
  const CopyLaunch& launch = schemeOf(params);
  // A launch reports through the thread's last error: clear one left by an earlier call (that
  // failed and was handled) so that it is not taken for this launch's. A sticky error (a dead
  // context) is reported by the launch again.
  (void)cudaGetLastError();
  if (launch.wordBytes != 0 && launch.tileChunks == 8 && threadsPerBlock > 512) {
    return cudaErrorInvalidConfiguration;  // eight words per lane: at most 512 threads per CTA
  }
  switch (launch.wordBytes) {
    case 16: launchTiled<16>(params, blocks, threadsPerBlock, stream); break;
    case 8: launchTiled<8>(params, blocks, threadsPerBlock, stream); break;
    case 4: launchTiled<4>(params, blocks, threadsPerBlock, stream); break;
    default: perRowCopyKernel<Params><<<blocks, threadsPerBlock, 0, stream>>>(params); break;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launchCopyKernel(const CopyLaunch& launch, int32_t blocks, int32_t threadsPerBlock,
                             cudaStream_t stream) {
  return launchWith(launch, blocks, threadsPerBlock, stream);
}

cudaError_t launchInlineCopyKernel(const InlineCopyLaunch& params, int32_t blocks,
                                   int32_t threadsPerBlock, cudaStream_t stream) {
  return launchWith(params, blocks, threadsPerBlock, stream);
}

}  // namespace cuda
}  // namespace kvio
