// A fake copy engine for the CPU tests of the shared copy-engine issuer
// (native/src/engine/copy_engine.hpp; cuda_direct_copies_test, copy_engine_conformance_test),
// plugged into an engine table by ops(): it copies with memcpy, after the checks a real copy engine
// makes (cudaMemcpyAsync, cudaMemcpy2DAsync, cuMemcpyBatchAsync on an H200): every copy lies
// inside one known allocation on each side (for a 2-D copy its whole footprint, from the first
// row's first byte to the last row's last byte; every batch entry), even where two allocations
// are adjacent; both pitches of a 2-D copy are at least its width and at most the engine's
// largest pitch; nothing has zero size. Its cudaMemcpy3DBatchAsync (batch3d) checks every entry
// the same way over its whole 3-D footprint, and that each side's slice step is a whole number
// of rows (layerHeight) at least the copy's height. A refused call copies nothing (a batch checks
// every entry first), returns kRefused and keeps the reason. It counts calls and bytes and can be
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
    const kvio::engine::EngineCopy c{dst, src, bytes, 1, bytes, bytes, 0};
    if (!acceptable(c)) return kRefused;
    copyBlock(c);
    return 0;
  }

  int copy2d(uint64_t dst, uint64_t dstPitch, uint64_t src, uint64_t srcPitch, uint64_t width,
             uint64_t height) {
    ++copy2dCalls;
    if (copy2dCalls - 1 == failCopy2dAt) return failCode;
    const kvio::engine::EngineCopy c{dst, src, width, height, dstPitch, srcPitch, 0};
    if (!acceptable(c)) return kRefused;
    copyBlock(c);
    return 0;
  }

  /// failIndex: the refused entry, or SIZE_MAX.
  int batch(const uint64_t* dsts, const uint64_t* srcs, const size_t* sizes, size_t count,
            size_t* failIndex) {
    ++batchCalls;
    largestBatch = std::max(largestBatch, count);
    staged_.clear();
    for (size_t i = 0; i < count; ++i) {
      staged_.push_back({dsts[i], srcs[i], sizes[i], 1, sizes[i], sizes[i], i});
    }
    const int code = checkedBatch(staged_.data(), count, batchResult, 2, failIndex);
    if (code == 0) batchedCopies += static_cast<int64_t>(count);
    return code;
  }

  /// cudaMemcpy3DBatchAsync. failIndex: the refused entry, or SIZE_MAX.
  int batch3d(const kvio::engine::EngineCopy* copies, size_t count, size_t* failIndex) {
    ++batch3dCalls;
    largestBatch3d = std::max(largestBatch3d, count);
    const int code = checkedBatch(copies, count, batch3dResult, 0, failIndex);
    if (code != 0) return code;
    batch3dCopies += static_cast<int64_t>(count);
    for (size_t i = 0; i < count; ++i) nested3dCopies += copies[i].depth > 1 ? 1 : 0;
    return 0;
  }

  static std::string errorText(int code) {
    return code == kRefused ? "fake cudaErrorInvalidValue" : "fake error " + std::to_string(code);
  }

  /// `base` (an engine's limits and call names) with this fake's calls; withBatch false: no
  /// batch call; withBatch3d: a cudaMemcpy3DBatchAsync. The fake refuses pitches above
  /// base.maxPitch.
  kvio::engine::EngineOps ops(kvio::engine::EngineOps base, bool withBatch = true,
                              bool withBatch3d = false) {
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
    base.batch3d = nullptr;
    if (withBatch3d) {
      base.batch3d = [](void* c, const kvio::engine::EngineCopy* copies, size_t count,
                        size_t* failIndex) {
        return static_cast<FakeCopyEngine*>(c)->batch3d(copies, count, failIndex);
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
  std::string lastRefusal;  // why the last refused call was refused
  int64_t batch3dCalls = 0;
  int64_t batch3dCopies = 0;
  int64_t nested3dCopies = 0;  // batch3d entries of depth > 1
  size_t largestBatch3d = 0;
  int batchResult = 0;        // what batch() answers when not 0 (copies nothing, failIndex 2)
  int batch3dResult = 0;      // what batch3d() answers when not 0 (copies nothing, failIndex 0)
  int64_t failCopy1dAt = -1;  // the copy1d call (0-based) that fails with failCode
  int64_t failCopy2dAt = -1;
  int failCode = 700;

 private:
  // A batch: the scripted answer (with failIndex scriptedIndex) when set, else every entry
  // checked before any is copied.
  int checkedBatch(const kvio::engine::EngineCopy* copies, size_t count, int scripted,
                   size_t scriptedIndex, size_t* failIndex) {
    *failIndex = SIZE_MAX;
    if (scripted != 0) {
      *failIndex = scriptedIndex;
      return scripted;
    }
    if (count == 0) return refuse("batch of no copies");
    for (size_t i = 0; i < count; ++i) {
      *failIndex = i;
      if (!acceptable(copies[i])) return kRefused;
    }
    *failIndex = SIZE_MAX;
    for (size_t i = 0; i < count; ++i) copyBlock(copies[i]);
    return 0;
  }

  // The real engine's rules for one copy (1-D, 2-D or 3-D); refuses and returns false if broken.
  bool acceptable(const kvio::engine::EngineCopy& c) {
    if (c.width == 0 || c.height == 0 || c.depth == 0) {
      refuse("copy of zero size");
      return false;
    }
    if (c.dstPitch < c.width || c.srcPitch < c.width) {
      refuse("copy with a pitch (row length) below its width");
      return false;
    }
    if ((c.height > 1 || c.depth > 1) && (c.dstPitch > maxPitch_ || c.srcPitch > maxPitch_)) {
      refuse("copy with a pitch above the largest pitch");
      return false;
    }
    if (c.depth > 1 && (c.dstSlice % c.dstPitch != 0 || c.srcSlice % c.srcPitch != 0 ||
                        c.dstSlice / c.dstPitch < c.height || c.srcSlice / c.srcPitch < c.height)) {
      refuse("3-D copy whose layer height is not a whole number of rows >= its height");
      return false;
    }
    return inside("dst", c.dst, extent(c.depth, c.dstSlice, c.height, c.dstPitch, c.width)) &&
           inside("src", c.src, extent(c.depth, c.srcSlice, c.height, c.srcPitch, c.width));
  }

  // The bytes from a copy's first byte to one past its last, written here from the API's shape
  // (not the issuer's engine::footprint, which this fake checks).
  static uint64_t extent(uint64_t depth, uint64_t slice, uint64_t height, uint64_t pitch,
                         uint64_t width) {
    return (depth - 1) * slice + (height - 1) * pitch + width;
  }

  void copyBlock(const kvio::engine::EngineCopy& c) {
    for (uint64_t z = 0; z < c.depth; ++z) {
      for (uint64_t r = 0; r < c.height; ++r) {
        std::memcpy(reinterpret_cast<void*>(c.dst + z * c.dstSlice + r * c.dstPitch),
                    reinterpret_cast<const void*>(c.src + z * c.srcSlice + r * c.srcPitch),
                    c.width);
      }
    }
    bytesCopied += c.width * c.height * c.depth;
  }

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
  std::vector<kvio::engine::EngineCopy> staged_;  // a 1-D batch's entries
  uint64_t maxPitch_ = (1ull << 31) - 1;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_FAKE_COPY_ENGINE_HPP_
