// The SM copy kernel's per-worker routine and address math, written once for the device and
// the host: nvcc compiles it into copy_kernel.cu, and native/tests/cuda_copy_routine_test.cpp
// compiles it with the host compiler and replays every worker and lane of a launch against
// the oracle. No CUDA header is needed outside nvcc.
//
// A launch copies, for each index pair i, each layer j of the layer map and each component c,
// the row (or, when either side splits heads, each head) of token srcIndices[i] in source
// layer srcLayerStart + j to token dstIndices[i] in destination layer dstLayerStart + j.
// Addresses are the affine layout model (kvio/layout.hpp) over device-accessible layer tables.
#ifndef KVIO_CUDA_COPY_ROUTINE_CUH_
#define KVIO_CUDA_COPY_ROUTINE_CUH_

#include <cstdint>
#include <cstring>

#include "kvio/layout.hpp"

#if defined(__CUDACC__)
#define KVIO_UNROLL _Pragma("unroll")
#else
#define KVIO_UNROLL
#endif

namespace kvio {
namespace cuda {

/// Everything the copy kernel reads: passed by value as the kernel parameter.
struct CopyLaunch {
  AffineLayout src;  // layerBase: device-accessible table of the whole source pool
  AffineLayout dst;
  const int64_t* srcIndices = nullptr;  // device-accessible
  const int64_t* dstIndices = nullptr;
  int64_t count = 0;
  int64_t srcLayerStart = 0;
  int64_t dstLayerStart = 0;
  int64_t numLayers = 0;
  int32_t lanesPerWorker = 32;  // 4, 8, 16 or 32: a warp or a sub-warp per index pair
  int32_t checkIndices = 0;     // 1 for device-resident indices (the host checked the others)
  // [0]: position of the first skipped pair (atomicMin; UINT64_MAX if none), [1]: skipped pairs.
  unsigned long long* badPairs = nullptr;
};

/// Bytes one worker copies per (pair, layer, component, head).
KVIO_HOST_DEVICE inline int64_t copyUnitBytes(const AffineLayout& src, const AffineLayout& dst) {
  return src.headsAdjacent() && dst.headsAdjacent() ? src.rowBytes() : src.headBytes;
}

/// Lanes per worker sized to the copy unit: a 16-byte word per lane per step, so rows under
/// 512 bytes get a sub-warp and more pairs run at once.
KVIO_HOST_DEVICE inline int32_t lanesForUnit(int64_t unitBytes) {
  if (unitBytes >= 512) return 32;
  if (unitBytes >= 256) return 16;
  if (unitBytes >= 128) return 8;
  return 4;
}

/// The widest word (16, 8, 4, 2 or 1 bytes) in which both addresses reach alignment together.
KVIO_HOST_DEVICE inline int32_t commonWordBytes(uint64_t dst, uint64_t src) {
  const uint64_t phase = dst ^ src;
  if ((phase & 15) == 0) return 16;
  if ((phase & 7) == 0) return 8;
  if ((phase & 3) == 0) return 4;
  if ((phase & 1) == 0) return 2;
  return 1;
}

template <int W>
struct WordOf;
#if defined(__CUDACC__)
template <>
struct WordOf<16> {
  using T = uint4;
};
template <>
struct WordOf<8> {
  using T = unsigned long long;
};
#else
template <>
struct WordOf<16> {
  struct alignas(16) T {
    uint64_t lo, hi;
  };
};
template <>
struct WordOf<8> {
  using T = uint64_t;
};
#endif
template <>
struct WordOf<4> {
  using T = unsigned int;
};
template <>
struct WordOf<2> {
  using T = unsigned short;
};

/// Loads through the read-only path and stores at L2 (the destination is not read again by
/// this kernel, and the source of a host->device load is host memory read over the bus).
template <int W>
KVIO_HOST_DEVICE inline typename WordOf<W>::T loadWord(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const typename WordOf<W>::T*>(p));
#else
  typename WordOf<W>::T v;
  std::memcpy(&v, p, W);
  return v;
#endif
}

template <int W>
KVIO_HOST_DEVICE inline void storeWord(uint8_t* p, typename WordOf<W>::T v) {
#if defined(__CUDA_ARCH__)
  __stcg(reinterpret_cast<typename WordOf<W>::T*>(p), v);
#else
  std::memcpy(p, &v, W);
#endif
}

/// Lane `lane` of `lanes` copies its words of [src, src + words*W): word k goes to lane
/// k % lanes, so each step of the lanes moves lanes*W contiguous bytes (coalesced). Four words
/// per lane are loaded before any is stored, to keep loads in flight.
template <int W>
KVIO_HOST_DEVICE inline void copyWords(int32_t lane, int32_t lanes, uint8_t* dst,
                                       const uint8_t* src, uint64_t words) {
  constexpr uint64_t kUnroll = 4;
  const uint64_t step = static_cast<uint64_t>(lanes);
  uint64_t base = 0;
  for (; base + kUnroll * step <= words; base += kUnroll * step) {
    typename WordOf<W>::T v[kUnroll];
    KVIO_UNROLL
    for (uint64_t u = 0; u < kUnroll; ++u) v[u] = loadWord<W>(src + (base + u * step + lane) * W);
    KVIO_UNROLL
    for (uint64_t u = 0; u < kUnroll; ++u) storeWord<W>(dst + (base + u * step + lane) * W, v[u]);
  }
  for (uint64_t k = base + static_cast<uint64_t>(lane); k < words; k += step) {
    storeWord<W>(dst + k * W, loadWord<W>(src + k * W));
  }
}

KVIO_HOST_DEVICE inline void copyBytes(int32_t lane, int32_t lanes, uint8_t* dst,
                                       const uint8_t* src, uint64_t n) {
  for (uint64_t b = static_cast<uint64_t>(lane); b < n; b += static_cast<uint64_t>(lanes)) {
    dst[b] = src[b];
  }
}

/// Lane `lane` of a worker of `lanes` lanes copies its share of n bytes: a byte head up to
/// the common alignment, the widest words both sides allow, a byte tail. Any size and any
/// alignment; lanes write disjoint bytes, so they need no synchronisation.
KVIO_HOST_DEVICE inline void copySpan(int32_t lane, int32_t lanes, uint8_t* dst, const uint8_t* src,
                                      uint64_t n) {
  const uint64_t s = reinterpret_cast<uint64_t>(src);
  const int32_t w = commonWordBytes(reinterpret_cast<uint64_t>(dst), s);
  uint64_t head = (static_cast<uint64_t>(w) - (s & static_cast<uint64_t>(w - 1))) &
                  static_cast<uint64_t>(w - 1);
  if (head > n) head = n;
  copyBytes(lane, lanes, dst, src, head);
  dst += head;
  src += head;
  n -= head;
  const uint64_t words = n / static_cast<uint64_t>(w);
  switch (w) {
    case 16: copyWords<16>(lane, lanes, dst, src, words); break;
    case 8: copyWords<8>(lane, lanes, dst, src, words); break;
    case 4: copyWords<4>(lane, lanes, dst, src, words); break;
    case 2: copyWords<2>(lane, lanes, dst, src, words); break;
    default: copyBytes(lane, lanes, dst, src, words); break;  // w == 1
  }
  const uint64_t done = words * static_cast<uint64_t>(w);
  copyBytes(lane, lanes, dst + done, src + done, n - done);
}

/// Records a skipped pair (lane 0 of its worker only).
KVIO_HOST_DEVICE inline void reportBadPair(unsigned long long* badPairs, int64_t position) {
#if defined(__CUDA_ARCH__)
  atomicMin(&badPairs[0], static_cast<unsigned long long>(position));
  atomicAdd(&badPairs[1], 1ull);
#else
  if (static_cast<unsigned long long>(position) < badPairs[0]) {
    badPairs[0] = static_cast<unsigned long long>(position);
  }
  badPairs[1] += 1;
#endif
}

/// Lane `lane` of worker `worker` (of `workers`) copies pairs worker, worker + workers, ...:
/// for each, every layer of the map, component and (when heads are split) head.
KVIO_HOST_DEVICE inline void runWorker(const CopyLaunch& p, int64_t worker, int64_t workers,
                                       int32_t lane) {
  const bool whole = p.src.headsAdjacent() && p.dst.headsAdjacent();
  const int64_t heads = whole ? 1 : p.src.headNum;
  const uint64_t unit = static_cast<uint64_t>(copyUnitBytes(p.src, p.dst));
  const int32_t lanes = p.lanesPerWorker;
  for (int64_t i = worker; i < p.count; i += workers) {
    const int64_t s = p.srcIndices[i];
    const int64_t d = p.dstIndices[i];
    if (p.checkIndices != 0 && (s < 0 || s >= p.src.tokens || d < 0 || d >= p.dst.tokens)) {
      if (lane == 0) reportBadPair(p.badPairs, i);
      continue;
    }
    const uint64_t srcOffset = static_cast<uint64_t>(p.src.tokenOffset(s));
    const uint64_t dstOffset = static_cast<uint64_t>(p.dst.tokenOffset(d));
    for (int64_t j = 0; j < p.numLayers; ++j) {
      for (int32_t c = 0; c < p.src.components; ++c) {
        const uint64_t srcRow =
            p.src.layerBase[c * p.src.numLayers + p.srcLayerStart + j] + srcOffset;
        const uint64_t dstRow =
            p.dst.layerBase[c * p.dst.numLayers + p.dstLayerStart + j] + dstOffset;
        for (int64_t h = 0; h < heads; ++h) {
          copySpan(
              lane, lanes,
              reinterpret_cast<uint8_t*>(dstRow + static_cast<uint64_t>(h * p.dst.strideH)),
              reinterpret_cast<const uint8_t*>(srcRow + static_cast<uint64_t>(h * p.src.strideH)),
              unit);
        }
      }
    }
  }
}

/// Thread blocks of a launch: enough for one worker per pair, at most ctaBudget.
KVIO_HOST_DEVICE inline int32_t launchBlocks(int64_t count, int32_t lanesPerWorker,
                                             int32_t threadsPerBlock, int32_t ctaBudget) {
  const int64_t workersPerBlock = threadsPerBlock / lanesPerWorker;
  int64_t blocks = (count + workersPerBlock - 1) / workersPerBlock;
  if (blocks > ctaBudget) blocks = ctaBudget;
  return blocks < 1 ? 1 : static_cast<int32_t>(blocks);
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_COPY_ROUTINE_CUH_
