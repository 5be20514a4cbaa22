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
#include <vector>

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

/// Most streams a direct executor deals one transfer's copies to (KVIO_DIRECT_STREAMS).
constexpr int32_t kMaxDirectStreams = 8;

/// KVIO_DIRECT_STREAMS as a stream count: unset (nullptr) or empty is 1, "1" to "8" that many;
/// false for anything else (another number, a sign, spaces, a suffix).
inline bool parseDirectStreams(const char* text, int32_t* out) {
  if (text == nullptr || *text == '\0') {
    *out = 1;
    return true;
  }
  if (text[0] < '1' || text[0] > '0' + kMaxDirectStreams || text[1] != '\0') return false;
  *out = text[0] - '0';
  return true;
}

/// A transfer goes to more streams than one only when its streams get at least this many plan
/// copies and bytes each on average (groups are cut by bytes, so a plan of one large copy and
/// many small ones may give a stream little): below that, the fork and join (an event record and a
/// stream wait per extra stream on the host, a cross-stream wait on the device) cost more than a
/// second copy engine can save. Not measured on a GPU yet (the bench's 'streams' test and its
/// direct/<n>s rows are for that).
constexpr size_t kMinCopiesPerStream = 4;
constexpr uint64_t kMinBytesPerStream = 256ull << 10;

/// Deals `plan` to at most `streams` streams as consecutive groups of about equal bytes (each
/// group's copies stay in plan order, so the issuer still nests neighbours into 3-D copies):
/// ends[g] is one past group g's last copy; returns the number of groups, 1 when the transfer
/// is too small to be worth more (kMinCopiesPerStream, kMinBytesPerStream). Every group has at
/// least one copy.
inline size_t dealPlan(const std::vector<kvio_copy2d>& plan, int32_t streams,
                       size_t ends[kMaxDirectStreams]) {
  uint64_t total = 0;
  for (const kvio_copy2d& c : plan) total += c.width * c.height;
  size_t groups = static_cast<size_t>(streams < 1 ? 1 : streams);
  if (groups > static_cast<size_t>(kMaxDirectStreams)) groups = kMaxDirectStreams;
  if (groups > plan.size() / kMinCopiesPerStream) groups = plan.size() / kMinCopiesPerStream;
  if (groups > total / kMinBytesPerStream) groups = static_cast<size_t>(total / kMinBytesPerStream);
  if (groups <= 1) {
    ends[0] = plan.size();
    return 1;
  }
  size_t i = 0;
  uint64_t dealt = 0;
  for (size_t g = 0; g + 1 < groups; ++g) {
    // Group g ends once the bytes dealt reach (g + 1) / groups of the total, with at least one
    // copy of its own and one left for each later group.
    const uint64_t target = total / groups * (g + 1) + total % groups * (g + 1) / groups;
    const size_t last = plan.size() - (groups - 1 - g);
    do {
      dealt += plan[i].width * plan[i].height;
      ++i;
    } while (i < last && dealt < target);
    ends[g] = i;
  }
  ends[groups - 1] = plan.size();
  return groups;
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
