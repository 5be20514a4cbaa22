// Tests of the affine layout model (kvio/layout.hpp, native/src/core/layout.cpp): the strides
// of every layout and kind, and addresses of chosen (component, layer, token, head) points,
// against numbers worked out by hand from the shapes of hicache-semantics.md §2 for a small
// pool (L=3, P=4, ps=2; MHA H=2, hb=6: row T=12, S=8 tokens, component 288 bytes; MLA H=1,
// hb=10: T=10, component 240 bytes). Also the spec checks (sizes, kind/layout fit, 2^62
// overflow). White-box: links the core statically (libkvio hides these symbols); the pool
// addresses are also checked black-box through wrapped pools and kvio_plan.
#include "core/layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "kvio/kvio.h"

namespace {

using kvio::AffineLayout;
using kvio::LayoutStrides;

kvio_pool_spec mhaSpec(int32_t layout) {
  return kvio_pool_spec{KVIO_KIND_MHA, layout, /*L*/ 3, /*P*/ 4, /*ps*/ 2, /*H*/ 2, /*hb*/ 6};
}
kvio_pool_spec mlaSpec(int32_t layout) {
  return kvio_pool_spec{KVIO_KIND_MLA, layout, 3, 4, 2, 1, 10};
}

struct Expected {
  int64_t strideL, strideP, strideS, strideH, componentBytes;
};

void expectStrides(const kvio_pool_spec& spec, const Expected& e) {
  LayoutStrides s;
  ASSERT_EQ(kvio::layoutStrides(spec, &s), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(s.strideL, e.strideL);
  EXPECT_EQ(s.strideP, e.strideP);
  EXPECT_EQ(s.strideS, e.strideS);
  EXPECT_EQ(s.strideH, e.strideH);
  EXPECT_EQ(s.componentBytes, e.componentBytes);
  uint64_t bytes = 0;
  ASSERT_EQ(kvio_pool_component_bytes(&spec, &bytes), KVIO_STATUS_OK);
  EXPECT_EQ(bytes, static_cast<uint64_t>(e.componentBytes));
}

// ---- strides, by hand ----

TEST(LayoutStrides, MhaLayerFirst) {  // (2, L, S, H, D): l*S*T, t*T, h*hb
  expectStrides(mhaSpec(KVIO_LAYOUT_LAYER_FIRST), {96, 24, 12, 6, 288});
}
TEST(LayoutStrides, MhaPageFirst) {  // (2, S, L, H, D): t*L*T, l*T
  expectStrides(mhaSpec(KVIO_LAYOUT_PAGE_FIRST), {12, 72, 36, 6, 288});
}
TEST(LayoutStrides, MhaPageFirstDirect) {  // (2, P, L, ps, H, D): p*L*ps*T, l*ps*T, s*T
  expectStrides(mhaSpec(KVIO_LAYOUT_PAGE_FIRST_DIRECT), {24, 72, 12, 6, 288});
}
TEST(LayoutStrides, MhaPageHead) {  // (2, P, H, ps, L, D): p*H*ps*L*D, h*ps*L*D, s*L*D, l*D
  expectStrides(mhaSpec(KVIO_LAYOUT_PAGE_HEAD), {6, 72, 18, 36, 288});
}
TEST(LayoutStrides, MlaLayerFirst) {  // (L, S, 1, C)
  expectStrides(mlaSpec(KVIO_LAYOUT_LAYER_FIRST), {80, 20, 10, 10, 240});
}
TEST(LayoutStrides, MlaPageFirst) {  // (S, L, 1, C)
  expectStrides(mlaSpec(KVIO_LAYOUT_PAGE_FIRST), {10, 60, 30, 10, 240});
}
TEST(LayoutStrides, MlaPageFirstDirect) {  // (P, L, ps, 1, C)
  expectStrides(mlaSpec(KVIO_LAYOUT_PAGE_FIRST_DIRECT), {20, 60, 10, 10, 240});
}

TEST(LayoutStrides, SingleTokenPagesAndSingleLayer) {
  // ps=1, L=1, H=1: every layout degenerates to one contiguous [S, row] array.
  for (int32_t layout = 0; layout < KVIO_LAYOUT_COUNT; ++layout) {
    SCOPED_TRACE(layout);
    const kvio_pool_spec spec{KVIO_KIND_MHA, layout, 1, 5, 1, 1, 7};
    LayoutStrides s;
    ASSERT_EQ(kvio::layoutStrides(spec, &s), KVIO_STATUS_OK);
    EXPECT_EQ(s.strideS, 7);
    EXPECT_EQ(s.strideP, 7);
    EXPECT_EQ(s.componentBytes, 35);
  }
}

// ---- addresses, by hand ----

// Binds strides to a single buffer at `base`: component c at base + c*componentBytes, layer l
// of it at + l*strideL (what kvio_pool_wrap does).
struct Bound {
  std::vector<uint64_t> table;
  AffineLayout layout;
};
Bound bind(const kvio_pool_spec& spec, uint64_t base) {
  LayoutStrides s;
  EXPECT_EQ(kvio::layoutStrides(spec, &s), KVIO_STATUS_OK);
  Bound b;
  const int32_t components = kvio::componentCount(spec.kind);
  for (int32_t c = 0; c < components; ++c)
    for (int64_t l = 0; l < spec.num_layers; ++l)
      b.table.push_back(base + c * s.componentBytes + l * s.strideL);
  b.layout.components = components;
  b.layout.numLayers = spec.num_layers;
  b.layout.pageSize = spec.page_size;
  b.layout.tokens = spec.num_pages * spec.page_size;
  b.layout.headNum = spec.head_num;
  b.layout.headBytes = spec.head_bytes;
  b.layout.strideP = s.strideP;
  b.layout.strideS = s.strideS;
  b.layout.strideH = s.strideH;
  b.layout.layerBase = b.table.data();
  return b;
}

struct Point {
  int32_t c;
  int64_t l, t, h;
  uint64_t offset;  // hand-computed byte offset from the pool base
};

void expectAddresses(const kvio_pool_spec& spec, const std::vector<Point>& points) {
  const uint64_t base = 0x10000;
  Bound b = bind(spec, base);
  for (const Point& p : points) {
    EXPECT_EQ(b.layout.address(p.c, p.l, p.t, p.h), base + p.offset)
        << "c=" << p.c << " l=" << p.l << " t=" << p.t << " h=" << p.h;
  }
}

// A layer table lists component 0's layers, then component 1's (kvio.hpp's table[c * L + l]):
// layerIndex says where each (c, l) is, for a table of 3 layers and one of 5.
TEST(LayoutAddress, LayerIndexIsTheTablePosition) {
  AffineLayout a;
  a.components = 2;
  for (int64_t layers : {3, 5}) {
    a.numLayers = layers;
    int64_t expected = 0;
    for (int32_t c = 0; c < 2; ++c) {
      for (int64_t l = 0; l < layers; ++l, ++expected) {
        EXPECT_EQ(a.layerIndex(c, l), expected) << "c=" << c << " l=" << l << " of " << layers;
      }
    }
  }
}

// Points: (c, l, t, h); t=3 is page 1 slot 1, t=5 page 2 slot 1, t=7 page 3 slot 1.
TEST(LayoutAddress, MhaLayerFirst) {
  expectAddresses(mhaSpec(KVIO_LAYOUT_LAYER_FIRST),
                  {{0, 0, 0, 0, 0},
                   {0, 1, 3, 1, 138},
                   {1, 2, 5, 1, 546},
                   {1, 0, 7, 0, 372},
                   {1, 0, 0, 0, 288}});  // the V component starts at 288
}
TEST(LayoutAddress, MhaPageFirst) {
  expectAddresses(mhaSpec(KVIO_LAYOUT_PAGE_FIRST), {{0, 0, 0, 0, 0},
                                                    {0, 1, 3, 1, 126},
                                                    {1, 2, 5, 1, 498},
                                                    {1, 0, 7, 0, 540},
                                                    {1, 0, 0, 0, 288}});
}
TEST(LayoutAddress, MhaPageFirstDirect) {
  expectAddresses(mhaSpec(KVIO_LAYOUT_PAGE_FIRST_DIRECT), {{0, 0, 0, 0, 0},
                                                           {0, 1, 3, 1, 114},
                                                           {1, 2, 5, 1, 498},
                                                           {1, 0, 7, 0, 516},
                                                           {1, 0, 0, 0, 288}});
}
TEST(LayoutAddress, MhaPageHead) {
  expectAddresses(mhaSpec(KVIO_LAYOUT_PAGE_HEAD), {{0, 0, 0, 0, 0},
                                                   {0, 1, 3, 1, 132},
                                                   {0, 1, 3, 0, 96},
                                                   {1, 2, 5, 1, 498},
                                                   {1, 0, 7, 0, 522},
                                                   {1, 0, 0, 0, 288}});
}
TEST(LayoutAddress, MlaLayerFirst) {
  expectAddresses(mlaSpec(KVIO_LAYOUT_LAYER_FIRST),
                  {{0, 0, 0, 0, 0}, {0, 1, 3, 0, 110}, {0, 2, 5, 0, 210}, {0, 2, 7, 0, 230}});
}
TEST(LayoutAddress, MlaPageFirst) {
  expectAddresses(mlaSpec(KVIO_LAYOUT_PAGE_FIRST),
                  {{0, 0, 0, 0, 0}, {0, 1, 3, 0, 100}, {0, 2, 5, 0, 170}, {0, 2, 7, 0, 230}});
}
TEST(LayoutAddress, MlaPageFirstDirect) {
  expectAddresses(mlaSpec(KVIO_LAYOUT_PAGE_FIRST_DIRECT),
                  {{0, 0, 0, 0, 0}, {0, 1, 3, 0, 90}, {0, 2, 5, 0, 170}, {0, 2, 7, 0, 230}});
}

TEST(LayoutAddress, RowShapePredicates) {
  // Rows are contiguous (heads adjacent) except page_head; token t+1 follows t across page
  // boundaries only for layer_first and page_first.
  struct Row {
    int32_t layout;
    bool adjacent, seamless;
  } rows[] = {{KVIO_LAYOUT_LAYER_FIRST, true, true},
              {KVIO_LAYOUT_PAGE_FIRST, true, true},
              {KVIO_LAYOUT_PAGE_FIRST_DIRECT, true, false},
              {KVIO_LAYOUT_PAGE_HEAD, false, false}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.layout);
    Bound b = bind(mhaSpec(r.layout), 0x1000);
    EXPECT_EQ(b.layout.rowBytes(), 12);
    EXPECT_EQ(b.layout.transferBytes(5, 3), 5u * 3 * 2 * 12);  // pairs x layers x K, V x row
    EXPECT_EQ(b.layout.headsAdjacent(), r.adjacent);
    EXPECT_EQ(b.layout.pageSeamless(), r.seamless);
  }
}

// ---- the same addresses, black-box: wrapped pools at fake addresses and kvio_plan ----

struct Segment {
  uint64_t src, dst, width;
  bool operator==(const Segment& o) const {
    return src == o.src && dst == o.dst && width == o.width;
  }
};

// The rows of a plan, sorted and merged where both sides continue, so that the comparison
// does not depend on how the planner groups them.
std::vector<Segment> segments(const std::vector<kvio_copy2d>& plan) {
  std::vector<Segment> rows;
  for (const kvio_copy2d& c : plan)
    for (uint64_t r = 0; r < c.height; ++r)
      rows.push_back({c.src + r * c.src_pitch, c.dst + r * c.dst_pitch, c.width});
  std::sort(rows.begin(), rows.end(),
            [](const Segment& a, const Segment& b) { return a.src < b.src; });
  std::vector<Segment> merged;
  for (const Segment& s : rows) {
    if (!merged.empty() && merged.back().src + merged.back().width == s.src &&
        merged.back().dst + merged.back().width == s.dst) {
      merged.back().width += s.width;
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

std::vector<kvio_copy2d> plan(uint64_t src, uint64_t dst, int64_t srcSlot, int64_t dstSlot,
                              int64_t srcLayer, int64_t dstLayer) {
  const kvio_transfer_desc desc{src, dst, &srcSlot, &dstSlot, 1, srcLayer, dstLayer, 1};
  int64_t count = 0;
  EXPECT_EQ(kvio_plan(&desc, nullptr, 0, &count), KVIO_STATUS_OK) << kvio_last_error();
  std::vector<kvio_copy2d> copies(static_cast<size_t>(count));
  EXPECT_EQ(kvio_plan(&desc, copies.data(), count, &count), KVIO_STATUS_OK);
  return copies;
}

TEST(LayoutAddress, WrappedPoolsThroughPlan) {
  // Source: the layout under test, one buffer at 0x100000. Destination: a layer_first pool
  // given as a per-layer pointer table at hand-picked addresses (row 12 bytes, 8 tokens).
  const uint64_t base = 0x100000;
  const kvio_pool_spec tableSpec = mhaSpec(KVIO_LAYOUT_LAYER_FIRST);
  const uint64_t table[6] = {0x900000, 0x910000, 0x920000, 0xA00000, 0xA10000, 0xA20000};
  uint64_t dst = 0;
  ASSERT_EQ(kvio_pool_wrap_layer_table(&tableSpec, table, 6, 96, &dst), KVIO_STATUS_OK)
      << kvio_last_error();
  struct Row {
    int32_t layout;
    uint64_t k0, k1;  // offsets of (K, l=1, t=3, h=0) and (h=1); V adds 288
  } rows[] = {{KVIO_LAYOUT_LAYER_FIRST, 132, 138},
              {KVIO_LAYOUT_PAGE_FIRST, 120, 126},
              {KVIO_LAYOUT_PAGE_FIRST_DIRECT, 108, 114},
              {KVIO_LAYOUT_PAGE_HEAD, 96, 132}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.layout);
    const kvio_pool_spec spec = mhaSpec(r.layout);
    uint64_t src = 0;
    ASSERT_EQ(kvio_pool_wrap(&spec, base, 576, &src), KVIO_STATUS_OK) << kvio_last_error();
    // (l=1, t=3) of the source to (l=2, t=6) of the table: dst entries 2 (K) and 5 (V), +6*12.
    std::vector<Segment> expected = {{base + r.k0, 0x920000 + 72, 6},
                                     {base + r.k1, 0x920000 + 78, 6},
                                     {base + 288 + r.k0, 0xA20000 + 72, 6},
                                     {base + 288 + r.k1, 0xA20000 + 78, 6}};
    std::vector<kvio_copy2d> rawExpected;
    for (const Segment& s : expected) rawExpected.push_back({s.src, s.dst, s.width, 1, 6, 6});
    EXPECT_EQ(segments(plan(src, dst, 3, 6, 1, 2)), segments(rawExpected));
    kvio_pool_close(src);
  }
  kvio_pool_close(dst);
}

TEST(LayoutAddress, ComponentBasesOfWrappedPools) {
  // MHA layer_first, one buffer: V starts componentBytes (288) after K. Per-component wrap:
  // each component at its own address. Checked through a one-row plan into a layer table.
  const kvio_pool_spec spec = mhaSpec(KVIO_LAYOUT_LAYER_FIRST);
  const uint64_t table[6] = {0x900000, 0x910000, 0x920000, 0xA00000, 0xA10000, 0xA20000};
  uint64_t dst = 0, single = 0, split = 0;
  ASSERT_EQ(kvio_pool_wrap_layer_table(&spec, table, 6, 96, &dst), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_wrap(&spec, 0x200000, 576, &single), KVIO_STATUS_OK);
  const uint64_t components[2] = {0x300000, 0x280000};  // V below K
  ASSERT_EQ(kvio_pool_wrap_components(&spec, components, 2, 288, &split), KVIO_STATUS_OK);
  std::vector<kvio_copy2d> a = {{0x200000, 0x900000, 12, 1, 12, 12},
                                {0x200120, 0xA00000, 12, 1, 12, 12}};
  EXPECT_EQ(segments(plan(single, dst, 0, 0, 0, 0)), segments(a));
  std::vector<kvio_copy2d> b = {{0x300000 + 96 * 2 + 12 * 7, 0x920000 + 12, 12, 1, 12, 12},
                                {0x280000 + 96 * 2 + 12 * 7, 0xA20000 + 12, 12, 1, 12, 12}};
  EXPECT_EQ(segments(plan(split, dst, 7, 1, 2, 2)), segments(b));
  kvio_pool_close(dst);
  kvio_pool_close(single);
  kvio_pool_close(split);
}

// ---- spec checks ----

void expectRejected(const kvio_pool_spec& spec, kvio_status status, const std::string& text) {
  LayoutStrides s;
  EXPECT_EQ(kvio::layoutStrides(spec, &s), status);
  EXPECT_NE(std::string(kvio_last_error()).find(text), std::string::npos)
      << "message: " << kvio_last_error() << "\nexpected to contain: " << text;
}

TEST(LayoutSpec, ZeroAndNegativeSizesRejected) {
  const char* fields[] = {"num_layers", "num_pages", "page_size", "head_num", "head_bytes"};
  for (int f = 0; f < 5; ++f) {
    for (int64_t bad : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
      kvio_pool_spec spec = mhaSpec(KVIO_LAYOUT_PAGE_FIRST);
      int64_t* field[] = {&spec.num_layers, &spec.num_pages, &spec.page_size, &spec.head_num,
                          &spec.head_bytes};
      *field[f] = bad;
      SCOPED_TRACE(std::string(fields[f]) + " = " + std::to_string(bad));
      expectRejected(spec, KVIO_STATUS_INVALID_ARGUMENT,
                     std::string(fields[f]) + " must be at least 1, got " + std::to_string(bad));
    }
  }
}

TEST(LayoutSpec, UnknownKindAndLayoutRejected) {
  kvio_pool_spec spec = mhaSpec(KVIO_LAYOUT_LAYER_FIRST);
  spec.kind = 2;
  expectRejected(spec, KVIO_STATUS_INVALID_ARGUMENT, "pool kind 2 is not valid");
  spec = mhaSpec(4);
  expectRejected(spec, KVIO_STATUS_INVALID_ARGUMENT, "layout 4 is not valid");
  spec = mhaSpec(-1);
  expectRejected(spec, KVIO_STATUS_INVALID_ARGUMENT, "page_head");  // lists the valid layouts
}

TEST(LayoutSpec, PageHeadNeedsMha) {
  expectRejected(mlaSpec(KVIO_LAYOUT_PAGE_HEAD), KVIO_STATUS_UNSUPPORTED, "needs an mha pool");
  expectRejected(mlaSpec(KVIO_LAYOUT_PAGE_HEAD), KVIO_STATUS_UNSUPPORTED,
                 "Valid layouts for mla: layer_first, page_first, page_first_direct");
}

TEST(LayoutSpec, SizeLimitIsTwoToThe62) {
  LayoutStrides s;
  // Exactly 2^62 bytes in all components: accepted.
  kvio_pool_spec mla{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, 1, 1, 1, int64_t{1} << 62};
  EXPECT_EQ(kvio::layoutStrides(mla, &s), KVIO_STATUS_OK);
  EXPECT_EQ(s.componentBytes, int64_t{1} << 62);
  kvio_pool_spec mha{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 1, 1, 1, 1, int64_t{1} << 61};
  EXPECT_EQ(kvio::layoutStrides(mha, &s), KVIO_STATUS_OK);
  // One byte more, or two components of 2^62: rejected.
  mla.head_bytes = (int64_t{1} << 62) + 1;
  expectRejected(mla, KVIO_STATUS_INVALID_ARGUMENT, "does not fit in 2^62 bytes");
  mha.head_bytes = (int64_t{1} << 61) + 1;
  expectRejected(mha, KVIO_STATUS_INVALID_ARGUMENT, "does not fit in 2^62 bytes");
  // Products that overflow int64 are rejected, not wrapped.
  kvio_pool_spec wrap{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, 1 << 20, 1 << 20, 1 << 12, 1 << 12,
                      1 << 12};
  expectRejected(wrap, KVIO_STATUS_INVALID_ARGUMENT, "pool too large");
  kvio_pool_spec big{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, 1, 1, 1, INT64_MAX, INT64_MAX};
  expectRejected(big, KVIO_STATUS_INVALID_ARGUMENT, "pool too large");
  kvio_pool_spec pages{KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, 3, INT64_MAX / 2, 3, 1, 1};
  expectRejected(pages, KVIO_STATUS_INVALID_ARGUMENT, "pool too large");
}

}  // namespace
