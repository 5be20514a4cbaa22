// The bench's baseline kernel: see reference_copy.hpp.
#include "reference_copy.hpp"

namespace kvio_bench {
namespace {

__global__ void referenceCopy(uint64_t dstBase, uint64_t srcBase, const int64_t* dstIndices,
                              const int64_t* srcIndices, int64_t count, int64_t rowBytes) {
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * blockDim.x / 32;
  const int64_t lane = threadIdx.x % 32;
  const int64_t words = rowBytes / 16;
  for (int64_t row = thread / 32; row < count; row += warps) {
    const uint4* src = reinterpret_cast<const uint4*>(srcBase + srcIndices[row] * rowBytes);
    uint4* dst = reinterpret_cast<uint4*>(dstBase + dstIndices[row] * rowBytes);
    for (int64_t k = lane; k < words; k += 32) dst[k] = src[k];
  }
}

}  // namespace

cudaError_t launchReferenceCopy(uint64_t dstBase, uint64_t srcBase, const int64_t* dstIndices,
                                const int64_t* srcIndices, int64_t count, int64_t rowBytes,
                                cudaStream_t stream) {
  referenceCopy<<<kReferenceBlocks, kReferenceThreads, 0, stream>>>(dstBase, srcBase, dstIndices,
                                                                    srcIndices, count, rowBytes);
  return cudaGetLastError();
}

}  // namespace kvio_bench
