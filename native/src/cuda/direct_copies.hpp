// The 'direct' io backend's host-side pieces, free of CUDA headers so that tests run them on
// any machine: the engine table's limits and call names (directEngine: the shared copy-engine
// issuer of native/src/engine/copy_engine.hpp cuts and issues the plans), the direction's name
// for messages, and the choice of the cuMemcpyBatchAsync ABI. direct_executor.cpp adds the
// CUDA calls; copy_engine_conformance_test and cuda_direct_copies_test drive the same table
// with a fake engine.
//
// CUDA 12.8 and 13 give cuMemcpyBatchAsync different signatures (13 dropped failIdx; calling
// one through the other's type puts the stream in the wrong slot, the sglang CUDA 13 segfault),
// so the ABI is chosen by the version the entry point was resolved for, never by the headers.
#ifndef KVIO_CUDA_DIRECT_COPIES_HPP_
#define KVIO_CUDA_DIRECT_COPIES_HPP_

#include <cstddef>
#include <cstdint>

#include "../engine/copy_engine.hpp"
#include "kvio/kvio.h"

namespace kvio {
namespace cuda {

/// cudaMemcpy2DAsync's largest pitch on current GPUs (cudaDevAttrMaxPitch); the executor
/// passes the device's own value.
constexpr uint64_t kDefaultMaxPitch = (1ull << 31) - 1;

/// Largest number of copies in one cuMemcpyBatchAsync call.
constexpr size_t kMaxBatch = 4096;

/// Largest number of copies in one cudaMemcpy3DBatchAsync call (kvio's bound; the API
/// documents none).
constexpr size_t kMaxBatch3d = 4096;

/// The direct executor's copy engine without its calls: cudaMemcpy2DAsync takes any direction
/// and height, pitches up to maxPitch; 1-D copies go to cuMemcpyBatchAsync, 2-D and 3-D copies
/// to cudaMemcpy3DBatchAsync.
inline engine::EngineOps directEngine(uint64_t maxPitch = kDefaultMaxPitch) {
  engine::EngineOps ops;
  ops.copy1dName = "cudaMemcpyAsync";
  ops.copy2dName = "cudaMemcpy2DAsync";
  ops.batchName = "cuMemcpyBatchAsync";
  ops.batch3dName = "cudaMemcpy3DBatchAsync";
  ops.maxBatch3d = kMaxBatch3d;
  ops.maxPitch = maxPitch;
  ops.max2dHeight = 0;
  ops.maxBatch = kMaxBatch;
  return ops;
}

/// "host to device" and the like, from the pools' memory kinds (KVIO_MEMORY_*).
inline const char* directionName(int32_t srcKind, int32_t dstKind) {
  const bool srcDevice = srcKind == KVIO_MEMORY_CUDA_DEVICE;
  const bool dstDevice = dstKind == KVIO_MEMORY_CUDA_DEVICE;
  if (srcDevice) return dstDevice ? "device to device" : "device to host";
  return dstDevice ? "host to device" : "host to host";
}

/// The cuMemcpyBatchAsync ABI to call.
enum class BatchAbi { None, V12080 /* with failIdx */, V13000 /* without */ };

/// driverVersion: cudaDriverGetVersion; resolvedNNNNN: whether the entry point resolved when
/// asked for that version's ABI (cudaGetDriverEntryPointByVersion). The newest ABI the driver
/// offers wins; none before 12.8.
inline BatchAbi chooseBatchAbi(int driverVersion, bool resolved12080, bool resolved13000) {
  if (driverVersion >= 13000 && resolved13000) return BatchAbi::V13000;
  if (driverVersion >= 12080 && resolved12080) return BatchAbi::V12080;
  return BatchAbi::None;
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_DIRECT_COPIES_HPP_
