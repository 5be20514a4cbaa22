// A fake copy engine for the CPU tests of the shared copy-engine issuer
// (native/src/engine/copy_engine.hpp; cuda_direct_copies_test, copy_engine_conformance_test),
// plugged into an engine table by ops(): it copies with memcpy, after the checks a real copy engine
// makes (cudaMemcpyAsync, cudaMemcpy2DAsync, cuMemcpyBatchAsync on an H200): every copy lies
// inside one known allocation on each side (for a 2-D copy its whole footprint, from the first
// row's first byte to the last row's last byte; every batch entry), even where two allocations
// are adjacent; both pitches of a 2-D copy are at least its width and at most the engine's
// largest pitch; nothing has zero size. A refused call copies nothing (a batch checks every
// entry first), returns kRefused and keeps the reason. It counts calls and bytes and can be
// scripted to fail a call.
#ifndef KVIO_TESTS_FAKE_COPY_ENGINE_HPP_
#define KVIO_TESTS_FAKE_COPY_ENGINE_HPP_

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/copy_engine.hpp"
#include "oracle.hpp"

namespace kvio_test {

/// Buffers as the issuer takes memory regions.
inline std::vector<kvio::engine::Region> memoryRegions(const std::vector<Buffer>& buffers) {
  std::vector<kvio::engine::Region> regions;
  for (const Buffer& b : buffers) regions.push_back({b.address, b.bytes});
  return regions;
}

class FakeCopyEngine {
 public:
  /// What a refused call returns (cudaErrorInvalidValue's number).
  static constexpr int kRefused = 1;

  /// The allocations copies may touch (the test's buffers), replacing the previous ones.
  void setAllocations(std::vector<Buffer> allocations) {
    allocations_ = std::move(allocations);
    std::sort(allocations_.begin(), allocations_.end(),
              [](const Buffer& a, const Buffer& b) { return a.address < b.address; });
  }
  void addAllocation(const void* data, uint64_t bytes) {
    allocations_.push_back({reinterpret_cast<uint64_t>(data), bytes});
    setAllocations(std::move(allocations_));
  }

  int copy1d(uint64_t dst, uint64_t src, uint64_t bytes) {
    ++copy1dCalls;
    if (copy1dCalls - 1 == failCopy1dAt) return failCode;
    if (bytes == 0) return refuse("1-D copy of 0 bytes");
    if (!inside("dst", dst, bytes) || !inside("src", src, bytes)) return kRefused;
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    bytesCopied += bytes;
    return 0;
  }

  int copy2d(uint64_t dst, uint64_t dstPitch, uint64_t src, uint64_t srcPitch, uint64_t width,
             uint64_t height) {
    ++copy2dCalls;
    if (copy2dCalls - 1 == failCopy2dAt) return failCode;
    if (width == 0 || height == 0) return refuse("2-D copy of zero size");
    if (dstPitch < width || srcPitch < width)
      return refuse("2-D copy with a pitch below its width");
    if (dstPitch > maxPitch_ || srcPitch > maxPitch_) {
      return refuse("2-D copy with a pitch above the largest pitch");
    }
    if (!inside("dst", dst, (height - 1) * dstPitch + width) ||
        !inside("src", src, (height - 1) * srcPitch + width)) {
      return kRefused;
    }
    for (uint64_t r = 0; r < height; ++r) {
      std::memcpy(reinterpret_cast<void*>(dst + r * dstPitch),
                  reinterpret_cast<const void*>(src + r * srcPitch), width);
    }
    bytesCopied += width * height;
    return 0;
  }

  /// failIndex: the refused entry, or SIZE_MAX.
  int batch(const uint64_t* dsts, const uint64_t* srcs, const size_t* sizes, size_t count,
            size_t* failIndex) {
    ++batchCalls;
    largestBatch = std::max(largestBatch, count);
    *failIndex = SIZE_MAX;
    if (batchResult != 0) {
      *failIndex = 2;
      return batchResult;
    }
    if (count == 0) return refuse("batch of no copies");
    for (size_t i = 0; i < count; ++i) {
      *failIndex = i;
      if (sizes[i] == 0) return refuse("batch entry of 0 bytes");
      if (!inside("dst", dsts[i], sizes[i]) || !inside("src", srcs[i], sizes[i])) return kRefused;
    }
    *failIndex = SIZE_MAX;
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(reinterpret_cast<void*>(dsts[i]), reinterpret_cast<const void*>(srcs[i]),
                  sizes[i]);
      bytesCopied += sizes[i];
    }
    batchedCopies += static_cast<int64_t>(count);
    return 0;
  }

  static std::string errorText(int code) {
    return code == kRefused ? "fake cudaErrorInvalidValue" : "fake error " + std::to_string(code);
  }

  /// `base` (an engine's limits and call names) with this fake's calls; withBatch false: no
  /// batch call. The fake refuses pitches above base.maxPitch.
  kvio::engine::EngineOps ops(kvio::engine::EngineOps base, bool withBatch = true) {
    maxPitch_ = base.maxPitch;
    base.context = this;
    base.copy1d = [](void* c, uint64_t dst, uint64_t src, uint64_t bytes) {
      return static_cast<FakeCopyEngine*>(c)->copy1d(dst, src, bytes);
    };
    base.copy2d = [](void* c, const kvio::engine::EngineCopy& x) {
      return static_cast<FakeCopyEngine*>(c)->copy2d(x.dst, x.dstPitch, x.src, x.srcPitch, x.width,
                                                     x.height);
    };
    base.batch = nullptr;
    if (withBatch) {
      base.batch = [](void* c, const uint64_t* dsts, const uint64_t* srcs, const size_t* sizes,
                      size_t count, size_t* failIndex) {
        return static_cast<FakeCopyEngine*>(c)->batch(dsts, srcs, sizes, count, failIndex);
      };
    }
    base.errorText = [](void*, int code) { return errorText(code); };
    return base;
  }

  int64_t copy1dCalls = 0;
  int64_t copy2dCalls = 0;
  int64_t batchCalls = 0;
  int64_t batchedCopies = 0;
  size_t largestBatch = 0;
  uint64_t bytesCopied = 0;
  int64_t refused = 0;
  std::string lastRefusal;    // why the last refused call was refused
  int batchResult = 0;        // what batch() answers when not 0 (copies nothing, failIndex 2)
  int64_t failCopy1dAt = -1;  // the copy1d call (0-based) that fails with failCode
  int64_t failCopy2dAt = -1;
  int failCode = 700;

 private:
  int refuse(const std::string& why) {
    ++refused;
    lastRefusal = why;
    return kRefused;
  }

  // Whether [address, address + extent) lies inside one allocation; refuses otherwise.
  bool inside(const char* side, uint64_t address, uint64_t extent) {
    auto it = std::upper_bound(allocations_.begin(), allocations_.end(), address,
                               [](uint64_t a, const Buffer& b) { return a < b.address; });
    if (it != allocations_.begin()) {
      --it;
      if (address >= it->address && address + extent <= it->address + it->bytes) return true;
    }
    char text[160];
    std::snprintf(text, sizeof(text), "%s range [0x%llx, +%llu) is not inside one allocation", side,
                  static_cast<unsigned long long>(address),
                  static_cast<unsigned long long>(extent));
    refuse(text);
    return false;
  }

  std::vector<Buffer> allocations_;
  uint64_t maxPitch_ = (1ull << 31) - 1;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_FAKE_COPY_ENGINE_HPP_
