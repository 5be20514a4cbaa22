// The 'direct' io backend's logic, free of CUDA headers so that tests run it on any machine:
// turning the planner's 2-D copies into the copies the copy engine gets, choosing the
// cuMemcpyBatchAsync ABI, and issuing copies through a table of engine functions (the CUDA
// runtime in direct_executor.cpp, fakes in native/tests/cuda_direct_copies_test.cpp).
//
// Batching: runs of consecutive 1-D copies go to the driver in one cuMemcpyBatchAsync call
// each, at most maxBatch copies per call. CUDA 12.8 and 13 give that entry point different
// signatures (13 dropped failIdx; calling one through the other's type puts the stream in the
// wrong slot, the sglang CUDA 13 segfault), so the ABI is chosen by the version the entry
// point was resolved for, never by the headers. A batch answered "not supported" turns
// batching off for the executor and its copies are issued one by one.
#ifndef KVIO_CUDA_DIRECT_COPIES_HPP_
#define KVIO_CUDA_DIRECT_COPIES_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "kvio/kvio.h"

namespace kvio {
namespace cuda {

/// One copy for the engine: height rows of width bytes (height 1: a 1-D copy).
struct EngineCopy {
  uint64_t dst;
  uint64_t src;
  uint64_t width;
  uint64_t height;
  uint64_t dstPitch;
  uint64_t srcPitch;
};

/// cudaMemcpy2DAsync's largest pitch on current GPUs (cudaDevAttrMaxPitch); the executor
/// passes the device's own value.
constexpr uint64_t kDefaultMaxPitch = (1ull << 31) - 1;

/// A 2-D copy stays one cudaMemcpy2DAsync when both pitches are at least its width and at most
/// maxPitch (that call's rules); otherwise (a broadcast source with pitch 0, or layers of a
/// large pool further apart than maxPitch) each row becomes a 1-D copy.
inline void engineCopies(const std::vector<kvio_copy2d>& plan, std::vector<EngineCopy>* out,
                         uint64_t maxPitch = kDefaultMaxPitch) {
  out->clear();
  for (const kvio_copy2d& c : plan) {
    if (c.height == 1) {
      out->push_back({c.dst, c.src, c.width, 1, c.width, c.width});
    } else if (c.src_pitch >= c.width && c.dst_pitch >= c.width && c.src_pitch <= maxPitch &&
               c.dst_pitch <= maxPitch) {
      out->push_back({c.dst, c.src, c.width, c.height, c.dst_pitch, c.src_pitch});
    } else {
      for (uint64_t r = 0; r < c.height; ++r) {
        out->push_back(
            {c.dst + r * c.dst_pitch, c.src + r * c.src_pitch, c.width, 1, c.width, c.width});
      }
    }
  }
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

inline const char* batchAbiName(BatchAbi abi) {
  switch (abi) {
    case BatchAbi::V12080: return "cuMemcpyBatchAsync (12.8 ABI, with failIdx)";
    case BatchAbi::V13000: return "cuMemcpyBatchAsync (13.0 ABI)";
    default: return "none (single copies)";
  }
}

constexpr int kEngineOk = 0;
/// What the table's functions return for "this call is not supported here" (the batch path
/// maps CUDA_ERROR_NOT_SUPPORTED and "call requires newer driver" to it).
constexpr int kEngineNotSupported = -1;

/// The copy engine, as issueCopies drives it. Functions return kEngineOk, kEngineNotSupported
/// or an error code that errorText describes.
struct EngineOps {
  void* context = nullptr;
  int (*copy1d)(void* context, uint64_t dst, uint64_t src, uint64_t bytes) = nullptr;
  int (*copy2d)(void* context, const EngineCopy& copy) = nullptr;
  /// nullptr when there is no batch entry point. failIndex: the failing copy, or SIZE_MAX.
  int (*batch)(void* context, uint64_t* dsts, uint64_t* srcs, size_t* sizes, size_t count,
               size_t* failIndex) = nullptr;
  std::string (*errorText)(int code) = nullptr;
};

/// Reused arrays of one batch call.
struct BatchScratch {
  std::vector<uint64_t> dsts, srcs;
  std::vector<size_t> sizes;
};

/// Issues `copies` in order. *batchEnabled is read, and cleared when the batch entry point says
/// it is not supported. Returns OK, or BACKEND_ERROR naming the call and the copy.
inline kvio_status issueCopies(const EngineOps& ops, const std::vector<EngineCopy>& copies,
                               size_t maxBatch, bool* batchEnabled, BatchScratch* scratch) {
  size_t i = 0;
  while (i < copies.size()) {
    const EngineCopy& c = copies[i];
    if (c.height > 1) {
      const int code = ops.copy2d(ops.context, c);
      if (code != kEngineOk) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "cudaMemcpy2DAsync failed: %s: copy %zu of %zu, %llu rows of %llu bytes, "
                    "pitches dst %llu src %llu",
                    ops.errorText(code).c_str(), i, copies.size(),
                    static_cast<unsigned long long>(c.height),
                    static_cast<unsigned long long>(c.width),
                    static_cast<unsigned long long>(c.dstPitch),
                    static_cast<unsigned long long>(c.srcPitch));
      }
      ++i;
      continue;
    }
    size_t end = i;  // [i, end): consecutive 1-D copies, at most maxBatch
    while (end < copies.size() && copies[end].height == 1 && end - i < maxBatch) ++end;
    if (ops.batch != nullptr && *batchEnabled && end - i > 1) {
      scratch->dsts.clear();
      scratch->srcs.clear();
      scratch->sizes.clear();
      for (size_t k = i; k < end; ++k) {
        scratch->dsts.push_back(copies[k].dst);
        scratch->srcs.push_back(copies[k].src);
        scratch->sizes.push_back(static_cast<size_t>(copies[k].width));
      }
      size_t failIndex = SIZE_MAX;
      const int code = ops.batch(ops.context, scratch->dsts.data(), scratch->srcs.data(),
                                 scratch->sizes.data(), end - i, &failIndex);
      if (code == kEngineOk) {
        i = end;
        continue;
      }
      if (code != kEngineNotSupported) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "cuMemcpyBatchAsync failed: %s: batch of %zu copies starting at copy %zu of "
                    "%zu, failIdx %lld",
                    ops.errorText(code).c_str(), end - i, i, copies.size(),
                    failIndex == SIZE_MAX ? -1LL : static_cast<long long>(failIndex));
      }
      *batchEnabled = false;  // fall through: these copies one by one, and from now on
    }
    for (; i < end; ++i) {
      const int code = ops.copy1d(ops.context, copies[i].dst, copies[i].src, copies[i].width);
      if (code != kEngineOk) {
        return fail(KVIO_STATUS_BACKEND_ERROR,
                    "cudaMemcpyAsync failed: %s: copy %zu of %zu, %llu bytes from 0x%llx to 0x%llx",
                    ops.errorText(code).c_str(), i, copies.size(),
                    static_cast<unsigned long long>(copies[i].width),
                    static_cast<unsigned long long>(copies[i].src),
                    static_cast<unsigned long long>(copies[i].dst));
      }
    }
  }
  return KVIO_STATUS_OK;
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_DIRECT_COPIES_HPP_
