// The bench's baseline kernel (reference_copy.cu): the plain warp-per-row copy that kvio's copy
// kernel is compared with in the same run. Not part of kvio.
#ifndef KVIO_BENCH_REFERENCE_COPY_HPP_
#define KVIO_BENCH_REFERENCE_COPY_HPP_

#include <cuda_runtime.h>

#include <cstdint>

namespace kvio_bench {

constexpr int kReferenceBlocks = 2;
constexpr int kReferenceThreads = 1024;

/// Copies row srcIndices[i] of [srcBase + k * rowBytes] to row dstIndices[i] of the
/// destination for i < count (indices in device memory, rowBytes a multiple of 16, bases
/// 16-byte aligned and device-accessible): one warp per row, lane k copies 16-byte words
/// k, k + 32, ...; kReferenceBlocks x kReferenceThreads threads. Returns cudaGetLastError.
cudaError_t launchReferenceCopy(uint64_t dstBase, uint64_t srcBase, const int64_t* dstIndices,
                                const int64_t* srcIndices, int64_t count, int64_t rowBytes,
                                cudaStream_t stream);

}  // namespace kvio_bench

#endif  // KVIO_BENCH_REFERENCE_COPY_HPP_
