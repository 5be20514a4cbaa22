// How the kernel executor stages a job (a kvio::LayoutJob) and builds its launch, free of CUDA
// calls and of the core's headers so that native/tests/cuda_copy_routine_test.cpp runs the
// whole data path on the host (staging written to a buffer, the launch built over it, every
// thread of the grid replayed).
// Staging slot layout (8-byte aligned): [status: 2 x u64][src layer table][dst layer table]
// [src indices][dst indices]; indices only when they come from the host. A small job with
// host indices packs the same layout into its kernel parameter instead (InlineCopyLaunch,
// copy_routine.cuh): no slot, no upload.
#ifndef KVIO_CUDA_KERNEL_LAUNCH_HPP_
#define KVIO_CUDA_KERNEL_LAUNCH_HPP_

#include <cstring>
#include <limits>

#include "copy_routine.cuh"

namespace kvio {
namespace cuda {

struct StagingLayout {
  uint64_t statusOffset = 0;
  uint64_t srcTableOffset = 0;
  uint64_t dstTableOffset = 0;
  uint64_t srcIndexOffset = 0;
  uint64_t dstIndexOffset = 0;
  uint64_t total = 0;
};

template <class Job>  // kvio::LayoutJob (core/executor.hpp) or a test's look-alike
inline StagingLayout stagingLayout(const Job& job) {
  const uint64_t indexBytes =
      job.indicesOnDevice ? 0 : static_cast<uint64_t>(job.count) * sizeof(int64_t);
  StagingLayout s;
  s.statusOffset = 0;
  s.srcTableOffset = 16;
  s.dstTableOffset = s.srcTableOffset + job.srcTable.size() * sizeof(uint64_t);
  s.srcIndexOffset = s.dstTableOffset + job.dstTable.size() * sizeof(uint64_t);
  s.dstIndexOffset = s.srcIndexOffset + indexBytes;
  s.total = s.dstIndexOffset + indexBytes;
  return s;
}

/// Fills the host side of a slot: status words reset, layer tables, host indices.
template <class Job>
inline void writeStaging(const Job& job, const StagingLayout& s, uint8_t* host) {
  unsigned long long status[2] = {std::numeric_limits<unsigned long long>::max(), 0};
  std::memcpy(host + s.statusOffset, status, sizeof(status));
  std::memcpy(host + s.srcTableOffset, job.srcTable.data(), job.srcTable.size() * 8);
  std::memcpy(host + s.dstTableOffset, job.dstTable.data(), job.dstTable.size() * 8);
  if (!job.indicesOnDevice) {
    std::memcpy(host + s.srcIndexOffset, job.srcIndices, static_cast<size_t>(job.count) * 8);
    std::memcpy(host + s.dstIndexOffset, job.dstIndices, static_cast<size_t>(job.count) * 8);
  }
}

/// The position of the first staged pair (host indices as writeStaging copied them: what the
/// kernel reads) with an index outside its pool, or -1 when none is. The caller's arrays were
/// checked before planning, but staging reads them again: a caller rewriting them meanwhile (its
/// own race) must get OUT_OF_RANGE, not rows outside the pools. Device indices: -1 (the kernel
/// checks those itself).
template <class Job>
inline int64_t firstStagedPairOutside(const Job& job, const StagingLayout& s, const uint8_t* host) {
  if (job.indicesOnDevice) return -1;
  for (int64_t i = 0; i < job.count; ++i) {
    int64_t src = 0, dst = 0;
    std::memcpy(&src, host + s.srcIndexOffset + static_cast<uint64_t>(i) * 8, 8);
    std::memcpy(&dst, host + s.dstIndexOffset + static_cast<uint64_t>(i) * 8, 8);
    if (src < 0 || src >= job.src.tokens || dst < 0 || dst >= job.dst.tokens) return i;
  }
  return -1;
}

/// The launch of a job whose staging was uploaded to `device` (the slot's device address).
template <class Job>
inline CopyLaunch makeLaunch(const Job& job, const StagingLayout& s, uint8_t* device) {
  CopyLaunch launch;
  launch.src = job.src;
  launch.dst = job.dst;
  launch.src.layerBase = reinterpret_cast<const uint64_t*>(device + s.srcTableOffset);
  launch.dst.layerBase = reinterpret_cast<const uint64_t*>(device + s.dstTableOffset);
  launch.srcIndices = job.indicesOnDevice
                          ? job.srcIndices
                          : reinterpret_cast<const int64_t*>(device + s.srcIndexOffset);
  launch.dstIndices = job.indicesOnDevice
                          ? job.dstIndices
                          : reinterpret_cast<const int64_t*>(device + s.dstIndexOffset);
  launch.count = job.count;
  launch.srcLayerStart = job.srcLayerStart;
  launch.dstLayerStart = job.dstLayerStart;
  launch.numLayers = job.numLayers;
  chooseScheme(&launch, job.srcTable.data(), job.dstTable.data());
  // Host indices are checked on the host, as staged (firstStagedPairOutside).
  launch.checkIndices = job.indicesOnDevice ? 1 : 0;
  launch.badPairs = reinterpret_cast<unsigned long long*>(device + s.statusOffset);
  return launch;
}

/// True when the job goes by value (InlineCopyLaunch) instead of through a slot: host indices
/// (device indices need the status words written by the kernel and read back) and staging that
/// fits kInlineStagingBytes.
template <class Job>
inline bool fitsInline(const Job& job, const StagingLayout& s) {
  return !job.indicesOnDevice && s.total <= kInlineStagingBytes;
}

/// Packs a job that fitsInline into *out: its staging into out->staging, the launch over it.
template <class Job>
inline void packInlineLaunch(const Job& job, const StagingLayout& s, InlineCopyLaunch* out) {
  writeStaging(job, s, out->staging);
  out->launch = makeLaunch(job, s, out->staging);
  out->hostBase = reinterpret_cast<uint64_t>(out->staging);
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_KERNEL_LAUNCH_HPP_
