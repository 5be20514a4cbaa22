// The SM copy kernel's per-thread routines (tiled, and per row for unaligned launches) and the
// launch scheme, written once for the device and the host: nvcc compiles them into
// copy_kernel.cu, and native/tests/cuda_copy_routine_test.cpp compiles them with the host
// compiler and replays every thread of a launch against the oracle. No CUDA header is needed
// outside nvcc.
//
// A launch copies, for each index pair i, each layer j of the layer map and each component c,
// the row (or, when either side splits heads, each head) of token srcIndices[i] in source
// layer srcLayerStart + j to token dstIndices[i] in destination layer dstLayerStart + j.
// Addresses are the affine layout model (kvio/layout.hpp: AffineLayout::rowAddress and
// copyUnit, shared with the planner) over device-accessible layer tables.
#ifndef KVIO_CUDA_COPY_ROUTINE_CUH_
#define KVIO_CUDA_COPY_ROUTINE_CUH_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../core/layout.hpp"

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
  // The scheme (chooseScheme): wordBytes 16, 8 or 4 runs the tiled routine (every row start
  // on both sides and the copy unit are multiples of wordBytes); 0 runs the per-row routine,
  // a worker of lanesPerWorker lanes per index pair, for launches with unaligned rows.
  int32_t wordBytes = 0;
  int32_t tileChunks = 8;       // tiled routine: words each lane loads before storing, 4 or 8
  int32_t lanesPerWorker = 32;  // per-row routine: 4, 8, 16 or 32
  int32_t checkIndices = 0;     // 1 for device-resident indices (the host checked the others)
  // [0]: position of the first skipped pair (atomicMin; UINT64_MAX if none), [1]: skipped pairs.
  unsigned long long* badPairs = nullptr;
};

/// Bytes of staging an InlineCopyLaunch carries: with the launch, at most 4 KiB of kernel
/// parameter, the limit of every CUDA version (12.1+ allows more on sm_70+).
constexpr uint64_t kInlineStagingBytes = 3840;

/// The kernel parameter of a small job with host indices: the launch and its staging (status
/// words, layer tables, indices, in a staging slot's layout, kernel_launch.hpp) by value, so
/// the job needs no upload. The host builds the launch over `staging` where it packs it
/// (hostBase); inlineLaunch() moves its pointers to wherever the parameter lies when read.
struct InlineCopyLaunch {
  CopyLaunch launch;
  uint64_t hostBase = 0;  // the address of `staging` when the launch was built
  alignas(16) uint8_t staging[kInlineStagingBytes];
};
static_assert(sizeof(InlineCopyLaunch) <= 4096, "a kernel parameter of at most 4 KiB");

template <class T>
KVIO_HOST_DEVICE inline T* rebased(T* pointer, uint64_t from, uint64_t to) {
  return reinterpret_cast<T*>(reinterpret_cast<uint64_t>(pointer) - from + to);
}

/// The launch an InlineCopyLaunch holds, its pointers into the staging moved to where `p` lies
/// now (the kernel parameter space on the device; __grid_constant__, so not a local copy).
KVIO_HOST_DEVICE inline CopyLaunch inlineLaunch(const InlineCopyLaunch& p) {
  CopyLaunch l = p.launch;
  const uint64_t here = reinterpret_cast<uint64_t>(p.staging);
  l.src.layerBase = rebased(l.src.layerBase, p.hostBase, here);
  l.dst.layerBase = rebased(l.dst.layerBase, p.hostBase, here);
  l.srcIndices = rebased(l.srcIndices, p.hostBase, here);
  l.dstIndices = rebased(l.dstIndices, p.hostBase, here);
  l.badPairs = nullptr;  // parameter space is read-only; host indices report nothing
  return l;
}

/// Lanes per worker of the per-row routine, sized to the copy unit: a 16-byte word per lane per
/// step, so rows under 512 bytes get a sub-warp and more pairs run at once.
KVIO_HOST_DEVICE inline int32_t lanesForUnit(int64_t unitBytes) {
  if (unitBytes >= 512) return 32;
  if (unitBytes >= 256) return 16;
  if (unitBytes >= 128) return 8;
  return 4;
}

/// The widest word (16, 8 or 4 bytes) dividing every address the tiled routine forms: the
/// bases of the layers the launch visits on both sides, the token and head strides and the
/// copy unit; 0 when a row may start off a 4-byte boundary (the per-row routine then finds each
/// row's own alignment). `srcTable` / `dstTable` are host-readable copies of the layer tables.
inline int32_t uniformWordBytes(const CopyLaunch& p, const uint64_t* srcTable,
                                const uint64_t* dstTable) {
  const CopyUnit unit = copyUnit(p.src, p.dst);
  uint64_t bits = static_cast<uint64_t>(unit.bytes);
  const AffineLayout* sides[2] = {&p.src, &p.dst};
  const uint64_t* tables[2] = {srcTable, dstTable};
  const int64_t starts[2] = {p.srcLayerStart, p.dstLayerStart};
  for (int k = 0; k < 2; ++k) {
    const AffineLayout& a = *sides[k];
    bits |= static_cast<uint64_t>(a.strideP) | static_cast<uint64_t>(a.strideS);
    if (unit.heads > 1) bits |= static_cast<uint64_t>(a.strideH);
    for (int32_t c = 0; c < a.components; ++c) {
      for (int64_t j = 0; j < p.numLayers; ++j) bits |= tables[k][a.layerIndex(c, starts[k] + j)];
    }
  }
  if ((bits & 15) == 0) return 16;
  if ((bits & 7) == 0) return 8;
  if ((bits & 3) == 0) return 4;
  return 0;
}

/// Sets the launch's scheme from its layouts and host-readable copies of its layer tables.
inline void chooseScheme(CopyLaunch* p, const uint64_t* srcTable, const uint64_t* dstTable) {
  p->lanesPerWorker = lanesForUnit(copyUnit(p->src, p->dst).bytes);
  p->wordBytes = uniformWordBytes(*p, srcTable, dstTable);
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

#if !defined(__CUDA_ARCH__)
/// The host build of the routines (tests, the fake runtime) copies words with memcpy, which
/// works at any address; a GPU's word access at an address not a multiple of its size is a
/// misaligned-address fault that ends the CUDA context. So the host build stops the process
/// there, naming the access: a test that passes on the host has made only accesses a GPU takes.
[[noreturn]] inline void misalignedWord(const void* p, int bytes, const char* access) {
  std::fprintf(stderr, "kvio copy routine: %d-byte %s at %p, not %d-byte aligned (a GPU faults)\n",
               bytes, access, p, bytes);
  std::abort();
}
#endif

/// Loads through the read-only path and stores at L2 (the destination is not read again by
/// this kernel, and the source of a host->device load is host memory read over the bus).
template <int W>
KVIO_HOST_DEVICE inline typename WordOf<W>::T loadWord(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const typename WordOf<W>::T*>(p));
#else
  if (reinterpret_cast<uintptr_t>(p) % W != 0) misalignedWord(p, W, "load");
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
  if (reinterpret_cast<uintptr_t>(p) % W != 0) misalignedWord(p, W, "store");
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

/// Per-row routine (launches with unaligned rows): lane `lane` of worker `worker` (of
/// `workers`) copies pairs worker, worker + workers, ...: for each, every layer of the map,
/// component and (when heads are split) head, with copySpan's own alignment per row.
KVIO_HOST_DEVICE inline void runWorker(const CopyLaunch& p, int64_t worker, int64_t workers,
                                       int32_t lane) {
  const CopyUnit unit = copyUnit(p.src, p.dst);
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
        for (int64_t h = 0; h < unit.heads; ++h) {
          copySpan(
              lane, lanes,
              reinterpret_cast<uint8_t*>(p.dst.rowAddress(c, p.dstLayerStart + j, dstOffset, h)),
              reinterpret_cast<const uint8_t*>(
                  p.src.rowAddress(c, p.srcLayerStart + j, srcOffset, h)),
              static_cast<uint64_t>(unit.bytes));
        }
      }
    }
  }
}

/// Tiled routine. The launch's work is one stream of words: pair-major, then layer, component,
/// head, then the words of the copy unit. A tile is K x 32 consecutive words (K = tileChunks);
/// warp w of W takes tiles w, w + W, ... and its lane k copies words k, k + 32, ... of the tile,
/// all loaded before any is stored, so each lane keeps K loads in flight whatever the row size:
/// 16-byte words of 256 B rows put 16 (K = 8) rows in a tile (rows per warp), rows over 4 KiB
/// span several tiles (warps per row), and the 32 lanes of one step touch consecutive words of at
/// most a few rows (coalesced).
constexpr int32_t kTileLanes = 32;

/// Words per lane per tile for CTAs of `threadsPerBlock` threads: 8, or 4 above 512 threads,
/// where a thread may use at most 64 registers and eight 16-byte words would spill.
KVIO_HOST_DEVICE inline int32_t tileChunksFor(int32_t threadsPerBlock) {
  return threadsPerBlock > 512 ? 4 : 8;
}

/// Words in the launch's stream (tiled routine).
KVIO_HOST_DEVICE inline uint64_t streamWords(const CopyLaunch& p) {
  const CopyUnit unit = copyUnit(p.src, p.dst);
  return static_cast<uint64_t>(p.count) * static_cast<uint64_t>(p.numLayers) *
         static_cast<uint64_t>(p.src.components) * static_cast<uint64_t>(unit.heads) *
         (static_cast<uint64_t>(unit.bytes) / static_cast<uint64_t>(p.wordBytes));
}

/// Where a lane is in the launch's stream: the segment (one copy unit of one pair, layer,
/// component and head) and the word in it; the rows of the segment and the token offsets of its
/// pair, decoded again only when the segment (the pair) changes.
struct StreamCursor {
  uint64_t seg = 0;
  uint64_t word = 0;
  uint64_t decodedSeg = ~0ull;
  uint64_t pair = ~0ull;
  uint64_t srcOffset = 0;
  uint64_t dstOffset = 0;
  bool pairOk = false;
  uint64_t srcRow = 0;
  uint64_t dstRow = 0;
};

/// Decodes the cursor's segment into its rows; false when its pair is skipped (a bad
/// device-resident index), reported by the lane holding the pair's first word.
KVIO_HOST_DEVICE inline bool decodeSegment(const CopyLaunch& p, const CopyUnit& unit,
                                           StreamCursor* k) {
  if (k->seg == k->decodedSeg) return k->pairOk;
  k->decodedSeg = k->seg;
  const uint64_t heads = static_cast<uint64_t>(unit.heads);
  const uint64_t components = static_cast<uint64_t>(p.src.components);
  const uint64_t perPair = static_cast<uint64_t>(p.numLayers) * components * heads;
  const uint64_t pair = divideU64(k->seg, perPair);
  uint64_t r = k->seg - pair * perPair;
  if (pair != k->pair) {
    k->pair = pair;
    const int64_t s = p.srcIndices[pair];
    const int64_t d = p.dstIndices[pair];
    k->pairOk = p.checkIndices == 0 || (s >= 0 && s < p.src.tokens && d >= 0 && d < p.dst.tokens);
    if (!k->pairOk) {
      if (r == 0 && k->word == 0) reportBadPair(p.badPairs, static_cast<int64_t>(pair));
      return false;
    }
    k->srcOffset = static_cast<uint64_t>(p.src.tokenOffset(s));
    k->dstOffset = static_cast<uint64_t>(p.dst.tokenOffset(d));
  }
  if (!k->pairOk) return false;
  int64_t h = 0;
  if (heads > 1) {
    const uint64_t q = divideU64(r, heads);
    h = static_cast<int64_t>(r - q * heads);
    r = q;
  }
  const int32_t c = components > 1 ? static_cast<int32_t>(r & 1) : 0;  // at most 2 components
  const auto j = static_cast<int64_t>(components > 1 ? r >> 1 : r);
  k->srcRow = p.src.rowAddress(c, p.srcLayerStart + j, k->srcOffset, h);
  k->dstRow = p.dst.rowAddress(c, p.dstLayerStart + j, k->dstOffset, h);
  return true;
}

template <int W, int K>
KVIO_HOST_DEVICE inline void runTiles(const CopyLaunch& p, int64_t warp, int64_t warps,
                                      int32_t lane) {
  const CopyUnit unit = copyUnit(p.src, p.dst);
  const uint64_t unitWords = static_cast<uint64_t>(unit.bytes) / W;
  const uint64_t total = streamWords(p);
  constexpr uint64_t kTileWords = static_cast<uint64_t>(kTileLanes) * K;
  // A lane's next word is kTileLanes further: stepSegs segments and stepWords words on.
  const uint64_t stepSegs = divideU64(kTileLanes, unitWords);
  const uint64_t stepWords = kTileLanes - stepSegs * unitWords;
  StreamCursor k;
  for (uint64_t tile = static_cast<uint64_t>(warp); tile * kTileWords < total;
       tile += static_cast<uint64_t>(warps)) {
    const uint64_t first = tile * kTileWords + static_cast<uint64_t>(lane);
    k.seg = divideU64(first, unitWords);
    k.word = first - k.seg * unitWords;
    typename WordOf<W>::T v[K];
    uint8_t* to[K];
    KVIO_UNROLL
    for (int32_t u = 0; u < K; ++u) {
      to[u] = nullptr;
      if (u > 0) {
        k.seg += stepSegs;
        k.word += stepWords;
        if (k.word >= unitWords) {
          k.word -= unitWords;
          ++k.seg;
        }
      }
      if (first + static_cast<uint64_t>(u * kTileLanes) >= total) continue;
      if (!decodeSegment(p, unit, &k)) continue;
      v[u] = loadWord<W>(reinterpret_cast<const uint8_t*>(k.srcRow + k.word * W));
      to[u] = reinterpret_cast<uint8_t*>(k.dstRow + k.word * W);
    }
    KVIO_UNROLL
    for (int32_t u = 0; u < K; ++u) {
      if (to[u] != nullptr) storeWord<W>(to[u], v[u]);
    }
  }
}

/// Lanes per worker of the launch's routine.
KVIO_HOST_DEVICE inline int32_t launchLanes(const CopyLaunch& p) {
  return p.wordBytes != 0 ? kTileLanes : p.lanesPerWorker;
}

/// Work items of the launch: tiles (tiled routine) or index pairs (per-row routine).
KVIO_HOST_DEVICE inline int64_t launchItems(const CopyLaunch& p) {
  if (p.wordBytes == 0) return p.count;
  const uint64_t tileWords =
      static_cast<uint64_t>(kTileLanes) * static_cast<uint64_t>(p.tileChunks);
  return static_cast<int64_t>((streamWords(p) + tileWords - 1) / tileWords);
}

/// Thread `thread` of a launch of `threads` threads (a multiple of launchLanes(p)).
KVIO_HOST_DEVICE inline void runThread(const CopyLaunch& p, int64_t thread, int64_t threads) {
  const int64_t lanes = launchLanes(p);
  const int64_t worker = thread / lanes;
  const int64_t workers = threads / lanes;
  const int32_t lane = static_cast<int32_t>(thread % lanes);
  const bool four = p.tileChunks == 4;
  switch (p.wordBytes) {
    case 16:
      four ? runTiles<16, 4>(p, worker, workers, lane) : runTiles<16, 8>(p, worker, workers, lane);
      break;
    case 8:
      four ? runTiles<8, 4>(p, worker, workers, lane) : runTiles<8, 8>(p, worker, workers, lane);
      break;
    case 4:
      four ? runTiles<4, 4>(p, worker, workers, lane) : runTiles<4, 8>(p, worker, workers, lane);
      break;
    default: runWorker(p, worker, workers, lane); break;
  }
}

/// Thread blocks of a launch: enough for one worker per item, at most ctaBudget.
KVIO_HOST_DEVICE inline int32_t launchBlocks(int64_t items, int32_t lanesPerWorker,
                                             int32_t threadsPerBlock, int32_t ctaBudget) {
  const int64_t workersPerBlock = threadsPerBlock / lanesPerWorker;
  int64_t blocks = (items + workersPerBlock - 1) / workersPerBlock;
  if (blocks > ctaBudget) blocks = ctaBudget;
  return blocks < 1 ? 1 : static_cast<int32_t>(blocks);
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_COPY_ROUTINE_CUH_
