// Test oracle for kvio transfers, shared by planner_test, conformance_test and executor_test.
// It shares no code with the library: byte offsets come from row-major shapes written down
// from reference/hicache-semantics.md §2 (MHA host (2, L, S, H, D) / (2, S, L, H, D) /
// (2, P, L, ps, H, D) / (2, P, H, ps, L, D); MLA the same with one component and H = 1; device
// pools layer_first as one buffer, one buffer per component, or one buffer per layer), and a
// transfer is replayed as naive loops over (index, layer, component, head). It also owns the
// memory of wrapped test pools (with guard zones around each buffer; buffers apart, or carved
// at equal distance out of one block), fills sources with seeded random bytes and destinations
// with a canary (SeededPair), and compares whole buffers.
#ifndef KVIO_TESTS_ORACLE_HPP_
#define KVIO_TESTS_ORACLE_HPP_

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kvio/kvio.hpp"

namespace kvio_test {

constexpr uint8_t kCanary = 0xA5;
constexpr uint8_t kGuardByte = 0x5A;
constexpr size_t kGuard = 256;  // guard bytes before and after every wrapped buffer

/// How a pool's memory is organised: one buffer for everything, one per component, or one
/// per (component, layer) (a device pool's per-layer pointer table).
enum class Form { Single, PerComponent, PerLayer, Allocated };

inline const char* formName(Form f) {
  switch (f) {
    case Form::Single: return "single_buffer";
    case Form::PerComponent: return "per_component";
    case Form::PerLayer: return "layer_table";
    case Form::Allocated: return "allocated";
  }
  return "?";
}

inline const char* layoutName(int32_t layout) {
  switch (layout) {
    case KVIO_LAYOUT_LAYER_FIRST: return "layer_first";
    case KVIO_LAYOUT_PAGE_FIRST: return "page_first";
    case KVIO_LAYOUT_PAGE_FIRST_DIRECT: return "page_first_direct";
    case KVIO_LAYOUT_PAGE_HEAD: return "page_head";
  }
  return "?";
}

/// Logical geometry of a test pool.
struct Geometry {
  int32_t kind = KVIO_KIND_MHA;
  int32_t layout = KVIO_LAYOUT_LAYER_FIRST;
  Form form = Form::Single;
  int64_t L = 1, P = 1, ps = 1, H = 1, hb = 1;

  int64_t C() const { return kind == KVIO_KIND_MHA ? 2 : 1; }
  int64_t S() const { return P * ps; }
  int64_t row() const { return H * hb; }
  int64_t componentBytes() const { return L * S() * row(); }
  int64_t regions() const {
    if (form == Form::PerComponent) return C();
    if (form == Form::PerLayer) return C() * L;
    return 1;
  }
  int64_t regionBytes() const {
    if (form == Form::PerComponent) return componentBytes();
    if (form == Form::PerLayer) return S() * row();
    return C() * componentBytes();
  }
  kvio::PoolSpec spec() const {
    kvio::PoolSpec s;
    s.kind = static_cast<kvio::PoolKind>(kind);
    s.layout = static_cast<kvio::Layout>(layout);
    s.numLayers = L;
    s.numPages = P;
    s.pageSize = ps;
    s.headNum = H;
    s.headBytes = hb;
    return s;
  }
  std::string describe() const {
    std::ostringstream o;
    o << (kind == KVIO_KIND_MHA ? "mha" : "mla") << " " << layoutName(layout) << " "
      << formName(form) << " L=" << L << " P=" << P << " ps=" << ps << " H=" << H << " hb=" << hb;
    return o.str();
  }
};

/// Names one case of a randomized transfer test (for SCOPED_TRACE): "iteration N: <src> -> <dst>,
/// layers a->b xn, k indices".
inline std::string describeCase(int iteration, const Geometry& src, const Geometry& dst,
                                int64_t srcLayer, int64_t dstLayer, int64_t layers,
                                size_t indices) {
  std::ostringstream o;
  o << "iteration " << iteration << ": " << src.describe() << " -> " << dst.describe()
    << ", layers " << srcLayer << "->" << dstLayer << " x" << layers << ", " << indices
    << " indices";
  return o.str();
}

/// Row-major offset of index `idx` in an array of shape `dims`.
inline int64_t flatten(std::initializer_list<int64_t> dims, std::initializer_list<int64_t> idx) {
  int64_t offset = 0;
  auto d = dims.begin();
  auto i = idx.begin();
  for (; d != dims.end(); ++d, ++i) {
    if (*i < 0 || *i >= *d) ADD_FAILURE() << "oracle index out of its dimension";
    offset = offset * *d + *i;
  }
  return offset;
}

struct Location {
  int64_t region;
  int64_t offset;
};

/// Where byte 0 of head h of token t, layer l, component c lies (shapes of §2).
inline Location locate(const Geometry& g, int64_t c, int64_t l, int64_t t, int64_t h) {
  const int64_t p = t / g.ps;
  const int64_t s = t % g.ps;
  const int64_t S = g.S();
  if (g.form == Form::PerLayer) {  // one [S, H, D] buffer per (component, layer)
    return {c * g.L + l, flatten({S, g.H, g.hb}, {t, h, 0})};
  }
  const bool single = g.form != Form::PerComponent;
  const int64_t C = single ? g.C() : 1;
  const int64_t cc = single ? c : 0;
  const int64_t region = single ? 0 : c;
  switch (g.layout) {
    case KVIO_LAYOUT_LAYER_FIRST:  // (C, L, S, H, D)
      return {region, flatten({C, g.L, S, g.H, g.hb}, {cc, l, t, h, 0})};
    case KVIO_LAYOUT_PAGE_FIRST:  // (C, S, L, H, D)
      return {region, flatten({C, S, g.L, g.H, g.hb}, {cc, t, l, h, 0})};
    case KVIO_LAYOUT_PAGE_FIRST_DIRECT:  // (C, P, L, ps, H, D)
      return {region, flatten({C, g.P, g.L, g.ps, g.H, g.hb}, {cc, p, l, s, h, 0})};
    case KVIO_LAYOUT_PAGE_HEAD:  // (C, P, H, ps, L, D)
      return {region, flatten({C, g.P, g.H, g.ps, g.L, g.hb}, {cc, p, h, s, l, 0})};
  }
  ADD_FAILURE() << "oracle: unknown layout";
  return {0, 0};
}

/// Contents of every buffer of a pool; wrapped buffers include their guard zones.
struct Image {
  std::vector<std::vector<uint8_t>> buffers;
  size_t guard = 0;
  uint8_t* at(Location where) {
    return buffers[static_cast<size_t>(where.region)].data() + guard + where.offset;
  }
  const uint8_t* at(Location where) const {
    return buffers[static_cast<size_t>(where.region)].data() + guard + where.offset;
  }
};

/// Replays a transfer on images: for each index pair, each layer of the map, each component,
/// each head, copy hb bytes. Reads come from `src` (the state before the transfer).
inline void applyTransfer(const Geometry& sg, const Image& src, const Geometry& dg, Image* dst,
                          const std::vector<int64_t>& srcIdx, const std::vector<int64_t>& dstIdx,
                          int64_t srcLayer, int64_t dstLayer, int64_t layers) {
  for (size_t i = 0; i < srcIdx.size(); ++i)
    for (int64_t j = 0; j < layers; ++j)
      for (int64_t c = 0; c < sg.C(); ++c)
        for (int64_t h = 0; h < sg.H; ++h)
          std::memcpy(dst->at(locate(dg, c, dstLayer + j, dstIdx[i], h)),
                      src.at(locate(sg, c, srcLayer + j, srcIdx[i], h)),
                      static_cast<size_t>(sg.hb));
}

inline void fillRandom(uint8_t* data, size_t bytes, std::mt19937_64& rng) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    const uint64_t v = rng();
    std::memcpy(data + i, &v, 8);
  }
  for (; i < bytes; ++i) data[i] = static_cast<uint8_t>(rng());
}

/// Where the buffers of a wrapped pool lie. Apart: each its own heap block with guard zones,
/// per-layer buffers in reverse address order. Carved: cut from one block in table order at
/// equal distance (buffer size + gap, gap <= kGuard, guard bytes in the gaps), so that buffers
/// of consecutive components or layers line up like one strided buffer (what cudaMalloc gave
/// the H200 runs) and only allocation boundaries tell them apart.
struct Placement {
  bool carved = false;
  uint64_t gap = 0;
  /// Called with each block the test allocates (guard zones included) before the pool wraps it,
  /// e.g. to tell an emulated runtime what that memory is.
  std::function<void(uint8_t* data, size_t bytes)> beforeWrap;
  /// Called with each buffer the pool wraps (its guard zones excluded) before the wrap, after
  /// beforeWrap: what it returns (e.g. an emulated runtime's tag that the buffer is device
  /// memory, which kvio may ask at the wrap) is kept until the pool is closed and released
  /// before the memory is freed.
  std::function<std::shared_ptr<void>(uint8_t* region, size_t bytes)> tagRegion;
};
inline Placement apart() {
  return {};
}
inline Placement carved(uint64_t gap) {
  Placement placement;
  placement.carved = true;
  placement.gap = gap;
  return placement;
}

/// A block of memory as the test allocated it (what a copy engine knows as an allocation).
struct Buffer {
  uint64_t address;
  uint64_t bytes;
};

/// The host's page size, as kvio's host registry counts pages.
inline uint64_t hostPageBytes() {
  const long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? static_cast<uint64_t>(page) : 4096;
}

/// How many host registrations kvio holds for `buffers` when it pins each of them itself (none
/// registered by the caller), by the rule of docs/memory-lifetime.md: a buffer's first page on
/// its own where the buffer starts inside it, its last page on its own where it ends inside one,
/// the whole pages between as one registration, a buffer within one page as one; buffers sharing
/// such a boundary page share its registration. Holds for buffers that share no pages other
/// than such boundary pages, and below the runtime's chunk size (1 GiB for CUDA).
inline int64_t registrationsFor(const std::vector<Buffer>& buffers,
                                uint64_t page = hostPageBytes()) {
  std::set<std::pair<uint64_t, uint64_t>> pieces;
  for (const Buffer& b : buffers) {
    const uint64_t first = b.address / page * page;
    const uint64_t end = (b.address + b.bytes + page - 1) / page * page;
    if (end - first == page) {
      pieces.insert({first, end});
      continue;
    }
    const uint64_t middle = b.address % page != 0 ? first + page : first;
    const uint64_t tail = (b.address + b.bytes) % page != 0 ? end - page : end;
    for (const auto& piece :
         {std::make_pair(first, middle), std::make_pair(middle, tail), std::make_pair(tail, end)}) {
      if (piece.second > piece.first) pieces.insert(piece);
    }
  }
  return static_cast<int64_t>(pieces.size());
}
inline int64_t registrationsFor(const void* data, uint64_t bytes) {
  return registrationsFor({{reinterpret_cast<uint64_t>(data), bytes}});
}

/// A kvio pool in one of the memory forms, with the memory the test owns.
class TestPool {
 public:
  /// memoryKind / device: where the pool says its memory lies (KVIO_MEMORY_*); the test owns
  /// wrapped buffers either way (an emulated device's memory is host memory).
  TestPool(const Geometry& g, int32_t memoryKind = KVIO_MEMORY_HOST,  // NOLINT
           int32_t device = -1, Placement placement = apart())
      : g_(g), placement_(placement) {
    const kvio::PoolSpec spec = g.spec();
    const auto memory = static_cast<kvio::MemoryKind>(memoryKind);
    if (g.form == Form::Allocated) {
      pool_ = std::make_unique<kvio::Pool>(kvio::Pool::allocate(spec, memory, device));
      region_.push_back(pool_->data(0));
      EXPECT_GE(pool_->bytes(0), static_cast<uint64_t>(g.regionBytes()));
      return;
    }
    const size_t bytes = static_cast<size_t>(g.regionBytes());
    const size_t regions = static_cast<size_t>(g.regions());
    if (placement.carved) {
      EXPECT_LE(placement.gap, kGuard);  // every gap byte lies in some buffer's guard zone
      const size_t stride = bytes + static_cast<size_t>(placement.gap);
      storage_.resize(1);
      storage_[0].assign(regions * stride - placement.gap + 2 * kGuard, kGuardByte);
      for (size_t r = 0; r < regions; ++r)
        region_.push_back(storage_[0].data() + kGuard + r * stride);
    } else {
      storage_.resize(regions);
      // Per-layer tables: allocate in reverse so layer buffers are not in address order.
      for (size_t r = 0; r < regions; ++r) {
        const size_t k = g.form == Form::PerLayer ? regions - 1 - r : r;
        storage_[k].assign(bytes + 2 * kGuard, kGuardByte);
      }
      for (auto& s : storage_) region_.push_back(s.data() + kGuard);
    }
    if (placement.beforeWrap) {
      for (auto& s : storage_) placement.beforeWrap(s.data(), s.size());
    }
    if (placement.tagRegion) {
      for (uint8_t* r : region_) tags_.push_back(placement.tagRegion(r, bytes));
    }
    std::vector<void*> pointers(region_.begin(), region_.end());
    switch (g.form) {
      case Form::Single:
        pool_ =
            std::make_unique<kvio::Pool>(kvio::Pool::wrap(spec, region_[0], bytes, memory, device));
        break;
      case Form::PerComponent:
        pool_ = std::make_unique<kvio::Pool>(
            kvio::Pool::wrapComponents(spec, pointers, bytes, memory, device));
        break;
      case Form::PerLayer:
        pool_ = std::make_unique<kvio::Pool>(
            kvio::Pool::wrapLayerTable(spec, pointers, bytes, memory, device));
        break;
      case Form::Allocated: break;
    }
  }

  const Geometry& geometry() const { return g_; }
  kvio::Pool& pool() { return *pool_; }
  const kvio::Pool& pool() const { return *pool_; }
  uint8_t* region(size_t r) { return region_[r]; }

  /// The pool's buffers: kvio's allocation, or each wrapped buffer without its guard zones.
  std::vector<Buffer> buffers() const {
    if (g_.form == Form::Allocated) {
      return {{reinterpret_cast<uint64_t>(region_[0]), pool_->bytes(0)}};
    }
    std::vector<Buffer> out;
    for (uint8_t* r : region_) {
      out.push_back({reinterpret_cast<uint64_t>(r), static_cast<uint64_t>(g_.regionBytes())});
    }
    return out;
  }

  /// Whole buffers (with guard zones for wrapped memory). Carved buffers come without theirs:
  /// the bytes of the block outside every buffer (guard zones and gaps) follow as one more.
  /// A kvio-allocated pool comes as its region only, with no guard zone: kvio maps more than
  /// that (its size rounded up to 2 MiB), but kvio.h documents only the 2 MiB alignment, so the
  /// test cannot know the bytes past the region to be the pool's without kvio's own code, and a
  /// stray write there goes unseen. Tests that must see one write into wrapped memory.
  Image capture() const {
    Image image;
    captureInto(&image);
    return image;
  }
  /// capture() into `image`, reusing its buffers' memory (a fresh image of a large pool costs
  /// more in page faults than in copying).
  void captureInto(Image* image) const {
    image->guard = g_.form != Form::Allocated && !placement_.carved ? kGuard : 0;
    size_t count = 0;
    forEachPiece([&](size_t buffer, const uint8_t*, size_t) { count = buffer + 1; });
    image->buffers.resize(count);
    for (auto& b : image->buffers) b.clear();
    forEachPiece([&](size_t buffer, const uint8_t* data, size_t bytes) {
      image->buffers[buffer].insert(image->buffers[buffer].end(), data, data + bytes);
    });
  }
  /// Whether the pool's bytes equal `expected` (an image in capture()'s form), compared in place;
  /// on a mismatch, sameImage's report of the differing bytes.
  ::testing::AssertionResult matches(const Image& expected, const char* what) const;

  /// Calls f(buffer, data, bytes) for the pieces of memory that make up capture()'s buffers, in
  /// order: each buffer is the concatenation of its pieces.
  template <class F>
  void forEachPiece(F f) const {
    const size_t bytes = static_cast<size_t>(g_.regionBytes());
    if (g_.form == Form::Allocated) {
      f(0, region_[0], bytes);
      return;
    }
    if (!placement_.carved) {
      for (size_t b = 0; b < storage_.size(); ++b) f(b, storage_[b].data(), storage_[b].size());
      return;
    }
    for (size_t r = 0; r < region_.size(); ++r) f(r, region_[r], bytes);
    const uint8_t* at = storage_[0].data();  // then the bytes outside every buffer, as one more
    for (const uint8_t* r : region_) {
      f(region_.size(), at, static_cast<size_t>(r - at));
      at = r + bytes;
    }
    f(region_.size(), at, static_cast<size_t>(storage_[0].data() + storage_[0].size() - at));
  }
  void fill(uint8_t value) {
    for (uint8_t* r : region_) std::memset(r, value, static_cast<size_t>(g_.regionBytes()));
  }
  void fillRandom(std::mt19937_64& rng) {
    for (uint8_t* r : region_) kvio_test::fillRandom(r, static_cast<size_t>(g_.regionBytes()), rng);
  }

 private:
  Geometry g_;
  Placement placement_;
  // Destroyed in reverse order: the pool (closed, and waited for over wrapped memory) before the
  // tags, and both before the memory they describe.
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<uint8_t*> region_;
  std::vector<std::shared_ptr<void>> tags_;  // placement.tagRegion's, one per buffer
  std::unique_ptr<kvio::Pool> pool_;
};

/// Compares two images byte for byte; on mismatch reports the first few differing bytes.
inline ::testing::AssertionResult sameImage(const Image& expected, const Image& actual,
                                            const char* what) {
  if (expected.buffers.size() != actual.buffers.size()) {
    return ::testing::AssertionFailure() << what << ": buffer count differs";
  }
  for (size_t r = 0; r < expected.buffers.size(); ++r) {
    const auto& e = expected.buffers[r];
    const auto& a = actual.buffers[r];
    if (e.size() != a.size()) return ::testing::AssertionFailure() << what << ": size differs";
    if (std::memcmp(e.data(), a.data(), e.size()) == 0) continue;
    size_t count = 0;
    std::ostringstream first;
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i] == a[i]) continue;
      if (count < 4) {
        first << " [buffer " << r << " byte "
              << static_cast<int64_t>(i) - static_cast<int64_t>(expected.guard) << ": expected 0x"
              << std::hex << int(e[i]) << " got 0x" << int(a[i]) << std::dec << "]";
      }
      ++count;
    }
    return ::testing::AssertionFailure()
           << what << ": " << count << " bytes differ in buffer " << r << ";" << first.str();
  }
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult TestPool::matches(const Image& expected, const char* what) const {
  std::vector<size_t> offsets(expected.buffers.size(), 0);
  size_t buffers = 0;  // capture()'s buffer count
  bool same = true;
  forEachPiece([&](size_t buffer, const uint8_t* data, size_t bytes) {
    buffers = buffer + 1;
    if (!same) return;
    if (buffer >= expected.buffers.size() ||
        offsets[buffer] + bytes > expected.buffers[buffer].size() ||
        (bytes > 0 &&
         std::memcmp(expected.buffers[buffer].data() + offsets[buffer], data, bytes) != 0)) {
      same = false;
      return;
    }
    offsets[buffer] += bytes;
  });
  same = same && buffers == expected.buffers.size();
  for (size_t b = 0; same && b < offsets.size(); ++b)
    same = offsets[b] == expected.buffers[b].size();
  return same ? ::testing::AssertionSuccess() : sameImage(expected, capture(), what);
}

/// The set-up of a checked transfer between two pools: the source filled with seeded bytes from
/// `rng`, the destination with the canary, and both images kept. expect() replays transfers on
/// the expected destination (the oracle); check() then compares the destination whole with it
/// and the source with what it was filled with. With no expect(), check() says that neither
/// pool changed.
class SeededPair {
 public:
  SeededPair(TestPool& src, TestPool& dst, std::mt19937_64& rng) : src_(src), dst_(dst) {
    src.fillRandom(rng);
    dst.fill(kCanary);
    source_ = src.capture();
    expected_ = dst.capture();
  }
  SeededPair(const SeededPair&) = delete;
  SeededPair& operator=(const SeededPair&) = delete;

  /// Replays a transfer from the filled source on the expected destination.
  void expect(const std::vector<int64_t>& srcIdx, const std::vector<int64_t>& dstIdx,
              int64_t srcLayer, int64_t dstLayer, int64_t layers) {
    applyTransfer(src_.geometry(), source_, dst_.geometry(), &expected_, srcIdx, dstIdx, srcLayer,
                  dstLayer, layers);
  }

  /// The destination, compared whole, is the expected one, and the source is unchanged; a
  /// failure names every pool that differs.
  ::testing::AssertionResult check(const char* dstName = "destination",
                                   const char* srcName = "source") const {
    const ::testing::AssertionResult dst = dst_.matches(expected_, dstName);
    const ::testing::AssertionResult src = src_.matches(source_, srcName);
    if (dst && src) return ::testing::AssertionSuccess();
    ::testing::AssertionResult failure = ::testing::AssertionFailure();
    if (!dst) failure << dst.message();
    if (!dst && !src) failure << "; ";
    if (!src) failure << src.message();
    return failure;
  }

 private:
  TestPool& src_;
  TestPool& dst_;
  Image source_, expected_;
};

/// One transfer between two new pools checked against the oracle: the source filled from `rng`,
/// the destination with the canary; run(src, dst) moves the bytes (and may assert on its own);
/// then the destination must be the oracle's result, compared whole, and the source unchanged.
template <class Run>
void checkTransfer(const Geometry& sg, const Geometry& dg, std::mt19937_64& rng,
                   const std::vector<int64_t>& srcIdx, const std::vector<int64_t>& dstIdx,
                   int64_t srcLayer, int64_t dstLayer, int64_t layers, Run&& run) {
  TestPool src(sg), dst(dg);
  SeededPair pair(src, dst, rng);
  run(src, dst);
  if (::testing::Test::HasFatalFailure()) return;
  pair.expect(srcIdx, dstIdx, srcLayer, dstLayer, layers);
  ASSERT_TRUE(pair.check());
}

// ---- index sets ----

/// k distinct random values in [0, n).
inline std::vector<int64_t> distinct(std::mt19937_64& rng, int64_t n, int64_t k) {
  std::vector<int64_t> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(std::min(n, k)));
  return all;
}

/// `count` indices from `start` up: start, start + 1, ...
inline std::vector<int64_t> range(int64_t start, int64_t count) {
  std::vector<int64_t> v(static_cast<size_t>(count));
  std::iota(v.begin(), v.end(), start);
  return v;
}

inline std::vector<int64_t> expandPages(const std::vector<int64_t>& pages, int64_t ps) {
  std::vector<int64_t> slots;
  for (int64_t p : pages)
    for (int64_t s = 0; s < ps; ++s) slots.push_back(p * ps + s);
  return slots;
}

/// Runs of consecutive slots that cross a page boundary. Run k lies inside page pair
/// (2q, 2q+1) for a distinct q, so runs never overlap; lengths are given.
inline std::vector<int64_t> crossingRuns(std::mt19937_64& rng, int64_t pages, int64_t ps,
                                         const std::vector<int64_t>& lengths) {
  const std::vector<int64_t> pairs = distinct(rng, pages / 2, static_cast<int64_t>(lengths.size()));
  std::vector<int64_t> slots;
  for (size_t k = 0; k < lengths.size() && k < pairs.size(); ++k) {
    const int64_t len = lengths[k];
    const int64_t lo = std::max<int64_t>(1, len - ps);
    const int64_t hi = std::min<int64_t>(len - 1, ps);
    const int64_t before = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
    const int64_t start = (2 * pairs[k] + 1) * ps - before;  // `before` slots in page 2q
    for (int64_t i = 0; i < len; ++i) slots.push_back(start + i);
  }
  return slots;
}

}  // namespace kvio_test

#endif  // KVIO_TESTS_ORACLE_HPP_
