// Tests of the planner (native/src/core/planner.cpp) through the public kvio_plan: copy counts
// on chosen cases (page_first_direct pages, contiguous layer_first runs, random tokens,
// page_head heads), and on seeded random any-layout-to-any-layout cases: the plan moves
// exactly indices x layers x components x row bytes, no two copies write the same
// destination byte, every copy stays inside the pools' buffers, and running the plan with
// memcpy on the host gives what the naive oracle (oracle.hpp) gives, compared whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "plan_support.hpp"

namespace kvio_test {
namespace {

uint64_t planBytes(const std::vector<kvio_copy2d>& plan) {
  uint64_t total = 0;
  for (const kvio_copy2d& c : plan) total += c.width * c.height;
  return total;
}

// Marks every destination byte of the plan; fails if a byte is written twice or a row leaves
// the destination's buffers. Also checks that source rows stay inside the source's buffers.
::testing::AssertionResult writesDisjointInside(const std::vector<kvio_copy2d>& plan, TestPool& src,
                                                TestPool& dst) {
  const Geometry& dg = dst.geometry();
  const uint64_t regionBytes = static_cast<uint64_t>(dg.regionBytes());
  std::vector<std::vector<uint8_t>> written(static_cast<size_t>(dg.regions()),
                                            std::vector<uint8_t>(regionBytes, 0));
  auto inside = [](TestPool& pool, uint64_t address, uint64_t width, size_t* region,
                   uint64_t* offset) {
    const Geometry& g = pool.geometry();
    for (size_t r = 0; r < static_cast<size_t>(g.regions()); ++r) {
      const uint64_t base = reinterpret_cast<uint64_t>(pool.region(r));
      if (address >= base && address + width <= base + static_cast<uint64_t>(g.regionBytes())) {
        *region = r;
        *offset = address - base;
        return true;
      }
    }
    return false;
  };
  for (size_t i = 0; i < plan.size(); ++i) {
    const kvio_copy2d& c = plan[i];
    if (c.width == 0 || c.height == 0) return ::testing::AssertionFailure() << "empty copy " << i;
    // What a 2-D copy call (cudaMemcpy2DAsync, aclrtMemcpy2dAsync) takes as it is: pitches of
    // at least the width, a 1-row copy's equal to it.
    if (c.src_pitch < c.width || c.dst_pitch < c.width ||
        (c.height == 1 && (c.src_pitch != c.width || c.dst_pitch != c.width))) {
      return ::testing::AssertionFailure()
             << "copy " << i << ": width " << c.width << ", height " << c.height << ", pitches "
             << c.src_pitch << " / " << c.dst_pitch;
    }
    for (uint64_t row = 0; row < c.height; ++row) {
      size_t region = 0;
      uint64_t offset = 0;
      if (!inside(src, c.src + row * c.src_pitch, c.width, &region, &offset)) {
        return ::testing::AssertionFailure()
               << "copy " << i << " row " << row << " reads outside the source";
      }
      if (!inside(dst, c.dst + row * c.dst_pitch, c.width, &region, &offset)) {
        return ::testing::AssertionFailure()
               << "copy " << i << " row " << row << " writes outside the destination";
      }
      for (uint64_t b = 0; b < c.width; ++b) {
        if (written[region][offset + b]++ != 0) {
          return ::testing::AssertionFailure()
                 << "copy " << i << " row " << row << " writes destination byte " << offset + b
                 << " of buffer " << region << " a second time";
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

void runPlan(const std::vector<kvio_copy2d>& plan) {
  for (const kvio_copy2d& c : plan)
    for (uint64_t row = 0; row < c.height; ++row)
      std::memcpy(reinterpret_cast<void*>(c.dst + row * c.dst_pitch),
                  reinterpret_cast<const void*>(c.src + row * c.src_pitch), c.width);
}

// ---- chosen cases ----

TEST(PlannerCount, PageFirstDirectBackupOfConsecutivePages) {
  // Device: one layer_first buffer. Host: page_first_direct. N whole consecutive pages, all
  // layers: per component either one 2-D copy per layer (N pages, pitch L*ps*row on the host)
  // or one per page (L layers, each a ps*row block), whichever is fewer.
  for (int32_t kind : {KVIO_KIND_MHA, KVIO_KIND_MLA})
    for (int64_t L : {1, 3, 4})
      for (int64_t N : {1, 2, 3, 4, 6})
        for (int64_t ps : {1, 16}) {
          const int64_t H = kind == KVIO_KIND_MHA ? 2 : 1;
          Geometry dg{kind, KVIO_LAYOUT_LAYER_FIRST, Form::Single, L, 8, ps, H, 32};
          Geometry hg{kind, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Single, L, 9, ps, H, 32};
          TestPool device(dg), host(hg);
          std::vector<int64_t> devPages, hostPages;
          for (int64_t i = 0; i < N; ++i) {
            devPages.push_back(1 + i);
            hostPages.push_back(2 + i);
          }
          const auto plan =
              planOf(device, host, expandPages(devPages, ps), expandPages(hostPages, ps), 0, 0, L);
          SCOPED_TRACE("kind=" + std::to_string(kind) + " L=" + std::to_string(L) +
                       " N=" + std::to_string(N) + " ps=" + std::to_string(ps));
          if (L == 1) {  // one layer: page_first_direct is seamless, K and V may join too
            EXPECT_LE(static_cast<int64_t>(plan.size()), dg.C());
          } else {
            EXPECT_EQ(static_cast<int64_t>(plan.size()), dg.C() * std::min(N, L));
          }
          EXPECT_EQ(planBytes(plan), static_cast<uint64_t>(N * ps * L * dg.C() * dg.row()));
          EXPECT_TRUE(writesDisjointInside(plan, device, host));
        }
}

// The Ascend "dim exchange" with several page runs in one transfer (a long run, single pages,
// short runs): each run costs at most min(pages, layers) copies per component, so the plan has
// at most the sum of those (either nesting alone would pay max(...) for some run).
TEST(PlannerCount, PageFirstDirectSeveralRunsCostTheSumOfTheirMinima) {
  std::mt19937_64 rng(0x5e7);
  for (int32_t kind : {KVIO_KIND_MHA, KVIO_KIND_MLA})
    for (int64_t L : {2, 4, 6})
      for (bool backup : {true, false}) {
        const int64_t H = kind == KVIO_KIND_MHA ? 2 : 1;
        Geometry dg{kind, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, L, 48, 4, H, 16};
        dg.form = kind == KVIO_KIND_MHA ? Form::PerComponent : Form::Single;
        Geometry hg{kind, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Single, L, 60, 4, H, 16};
        TestPool device(dg), host(hg);
        const std::vector<std::vector<int64_t>> devRuns = {
            {1, 2, 3, 4, 5, 6, 7}, {12}, {20, 21}, {30, 31, 32, 33}};
        const std::vector<std::vector<int64_t>> hostRuns = {
            {2, 3, 4, 5, 6, 7, 8}, {15}, {25, 26}, {40, 41, 42, 43}};
        std::vector<int64_t> devPages, hostPages;
        int64_t bound = 0;
        for (size_t r = 0; r < devRuns.size(); ++r) {
          devPages.insert(devPages.end(), devRuns[r].begin(), devRuns[r].end());
          hostPages.insert(hostPages.end(), hostRuns[r].begin(), hostRuns[r].end());
          bound += dg.C() * std::min<int64_t>(static_cast<int64_t>(devRuns[r].size()), L);
        }
        SCOPED_TRACE("kind=" + std::to_string(kind) + " L=" + std::to_string(L) +
                     (backup ? " backup" : " load"));
        TestPool& src = backup ? device : host;
        TestPool& dst = backup ? host : device;
        const auto srcIdx = expandPages(backup ? devPages : hostPages, 4);
        const auto dstIdx = expandPages(backup ? hostPages : devPages, 4);
        const auto plan = planOf(src, dst, srcIdx, dstIdx, 0, 0, L);
        EXPECT_LE(static_cast<int64_t>(plan.size()), bound);
        EXPECT_TRUE(writesDisjointInside(plan, src, dst));
        SeededPair pools(src, dst, rng);
        runPlan(plan);
        pools.expect(srcIdx, dstIdx, 0, 0, L);
        EXPECT_TRUE(pools.check());
      }
}

TEST(PlannerCount, LayerFirstContiguousRunAcrossAllLayers) {
  // One run of consecutive slots, layer_first single buffers on both sides: at most one copy
  // per (layer, component); every copy carries at least the whole run of one layer.
  for (int32_t kind : {KVIO_KIND_MHA, KVIO_KIND_MLA})
    for (int64_t ps : {1, 4, 16}) {
      Geometry a{kind, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 5, 9, ps, 1, 64};
      Geometry b{kind, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 5, 10, ps, 1, 64};
      TestPool src(a), dst(b);
      std::vector<int64_t> s, d;
      const int64_t n = 3 * ps + 1;  // crosses page boundaries on both sides
      for (int64_t i = 0; i < n; ++i) {
        s.push_back(ps / 2 + i);
        d.push_back(ps + 3 + i);
      }
      const auto plan = planOf(src, dst, s, d, 0, 0, 5);
      SCOPED_TRACE("ps=" + std::to_string(ps));
      EXPECT_LE(static_cast<int64_t>(plan.size()), 5 * a.C());
      for (const kvio_copy2d& c : plan) EXPECT_GE(c.width, static_cast<uint64_t>(n * 64));
      EXPECT_EQ(planBytes(plan), static_cast<uint64_t>(n * 5 * a.C() * 64));
      EXPECT_TRUE(writesDisjointInside(plan, src, dst));
      // A per-layer transfer of the same run: at most one copy per component.
      EXPECT_LE(static_cast<int64_t>(planOf(src, dst, s, d, 2, 4, 1).size()), a.C());
    }
}

TEST(PlannerCount, RandomTokensAtMostOneCopyPerRow) {
  std::mt19937_64 rng(11);
  for (int32_t hostLayout = 0; hostLayout < KVIO_LAYOUT_COUNT; ++hostLayout) {
    Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 4, 16, 16, 2, 64};
    Geometry hg{KVIO_KIND_MHA, hostLayout, Form::Single, 4, 16, 16, 2, 64};
    TestPool device(dg), host(hg);
    const auto s = distinct(rng, dg.S(), 50);
    const auto d = distinct(rng, hg.S(), 50);
    const int64_t rowCopies = 50 * 4 * 2 * (hostLayout == KVIO_LAYOUT_PAGE_HEAD ? 2 : 1);
    SCOPED_TRACE(layoutName(hostLayout));
    const auto backup = planOf(device, host, s, d, 0, 0, 4);
    EXPECT_LE(static_cast<int64_t>(backup.size()), rowCopies);
    EXPECT_EQ(planBytes(backup), 50u * 4 * 2 * 128);
    EXPECT_TRUE(writesDisjointInside(backup, device, host));
    const auto load = planOf(host, device, d, s, 1, 1, 1);
    EXPECT_LE(static_cast<int64_t>(load.size()), rowCopies / 4);
    EXPECT_EQ(planBytes(load), 50u * 2 * 128);
    EXPECT_TRUE(writesDisjointInside(load, host, device));
  }
}

TEST(PlannerCount, PageHeadCopiesPerHead) {
  // page_head keeps each head of a page apart, so rows split into heads: every copy moves
  // head_bytes-wide rows, H per (token, layer, component).
  Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 3, 8, 4, 4, 24};
  Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, Form::Single, 3, 8, 4, 4, 24};
  TestPool device(dg), host(hg);
  std::mt19937_64 rng(5);
  const auto s = distinct(rng, dg.S(), 9);
  const auto d = distinct(rng, hg.S(), 9);
  for (bool backup : {true, false}) {
    const auto plan =
        backup ? planOf(device, host, s, d, 0, 0, 3) : planOf(host, device, d, s, 0, 0, 3);
    EXPECT_LE(plan.size(), 9u * 3 * 2 * 4);
    uint64_t rows = 0;
    for (const kvio_copy2d& c : plan) {
      EXPECT_EQ(c.width, 24u);
      rows += c.height;
    }
    EXPECT_EQ(rows, 9u * 3 * 2 * 4);
    EXPECT_TRUE(backup ? writesDisjointInside(plan, device, host)
                       : writesDisjointInside(plan, host, device));
  }
  // A whole page between two page_head pools of the same shape: at most one copy per
  // (component, head, layer). (The page is one contiguous block on both sides, so a single
  // copy per component would do; the planner does not find that.)
  TestPool other(Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, Form::Single, 3, 8, 4, 4, 24});
  const auto plan = planOf(host, other, expandPages({5}, 4), expandPages({2}, 4), 0, 0, 3);
  EXPECT_LE(plan.size(), 2u * 4 * 3);
  EXPECT_EQ(planBytes(plan), 2u * 4 * 4 * 3 * 24);
  EXPECT_TRUE(writesDisjointInside(plan, host, other));
}

TEST(PlannerApi, CapacityAndCount) {
  TestPool a(Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 4, 4, 1, 16});
  TestPool b(Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 4, 4, 1, 16});
  const std::vector<int64_t> s{0, 5, 9, 14}, d{3, 1, 12, 7};
  const auto full = planOf(a, b, s, d, 0, 0, 2);
  ASSERT_GE(full.size(), 2u);
  const kvio_transfer_desc desc{
      a.pool().handle(), b.pool().handle(), s.data(), d.data(), 4, 0, 0, 2};
  std::vector<kvio_copy2d> some(full.size(), kvio_copy2d{7, 7, 7, 7, 7, 7});
  int64_t count = 0;
  ASSERT_EQ(kvio_plan(&desc, some.data(), 1, &count), KVIO_STATUS_OK);
  EXPECT_EQ(count, static_cast<int64_t>(full.size()));  // the full count, capacity or not
  EXPECT_EQ(some[0].src, full[0].src);
  EXPECT_EQ(some[1].src, 7u);  // nothing written past the capacity
  ASSERT_EQ(kvio_plan(&desc, some.data(), 0, &count), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_plan(&desc, some.data(), 1, nullptr), KVIO_STATUS_INVALID_ARGUMENT);
  // A negative capacity is a caller bug, not "none": refused, nothing written.
  std::vector<kvio_copy2d> untouched(full.size(), kvio_copy2d{7, 7, 7, 7, 7, 7});
  count = -7;
  EXPECT_EQ(kvio_plan(&desc, untouched.data(), -1, &count), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("capacity must be >= 0"), std::string::npos)
      << kvio_last_error();
  EXPECT_EQ(count, -7);
  EXPECT_EQ(untouched[0].src, 7u);
}

// ---- seeded random cases: bytes, disjoint writes, and execution against the oracle ----

// The most consecutive pairs in which both indices go up by one.
uint64_t longestRun(const std::vector<int64_t>& src, const std::vector<int64_t>& dst) {
  uint64_t longest = 0, run = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    run = i > 0 && src[i] == src[i - 1] + 1 && dst[i] == dst[i - 1] + 1 ? run + 1 : 1;
    longest = std::max(longest, run);
  }
  return longest;
}

Geometry randomGeometry(std::mt19937_64& rng, int32_t kind, int64_t L, int64_t ps, int64_t H,
                        int64_t hb) {
  Geometry g;
  g.kind = kind;
  const int32_t layouts = kind == KVIO_KIND_MHA ? 4 : 3;
  g.layout = static_cast<int32_t>(rng() % layouts);
  const Form forms[] = {Form::Single, Form::PerComponent, Form::PerLayer};
  g.form = forms[rng() % (g.layout == KVIO_LAYOUT_LAYER_FIRST ? 3 : 2)];
  g.L = L;
  g.P = 2 + static_cast<int64_t>(rng() % 5);
  g.ps = ps;
  g.H = H;
  g.hb = hb;
  return g;
}

TEST(PlannerRandom, PlansMatchOracle) {
  std::mt19937_64 rng(0x91a77e4);
  for (int iteration = 0; iteration < 2000; ++iteration) {
    const int32_t kind = rng() % 2 == 0 ? KVIO_KIND_MHA : KVIO_KIND_MLA;
    const int64_t ps = std::vector<int64_t>{1, 2, 3, 4, 8}[rng() % 5];
    const int64_t H = kind == KVIO_KIND_MHA ? 1 + static_cast<int64_t>(rng() % 3) : 1;
    const int64_t hb = std::vector<int64_t>{1, 3, 8, 12, 40}[rng() % 5];
    const int64_t srcL = 1 + static_cast<int64_t>(rng() % 4);
    const int64_t dstL = 1 + static_cast<int64_t>(rng() % 4);
    Geometry sg = randomGeometry(rng, kind, srcL, ps, H, hb);
    Geometry dg = randomGeometry(rng, kind, dstL, ps, H, hb);
    const int64_t layers = 1 + static_cast<int64_t>(rng() % std::min(srcL, dstL));
    const int64_t srcLayer = static_cast<int64_t>(rng() % (srcL - layers + 1));
    const int64_t dstLayer = static_cast<int64_t>(rng() % (dstL - layers + 1));
    // Indices: a mix of page runs, single tokens and runs over page boundaries.
    std::vector<int64_t> dstIdx = distinct(rng, dg.S(), 1 + static_cast<int64_t>(rng() % dg.S()));
    if (rng() % 2 == 0) std::sort(dstIdx.begin(), dstIdx.end());
    std::vector<int64_t> srcIdx;
    const int64_t start = static_cast<int64_t>(rng() % sg.S());
    for (size_t i = 0; i < dstIdx.size(); ++i) {
      srcIdx.push_back(rng() % 3 == 0 ? static_cast<int64_t>(rng() % sg.S())
                                      : (start + static_cast<int64_t>(i)) % sg.S());
    }
    SCOPED_TRACE(describeCase(iteration, sg, dg, srcLayer, dstLayer, layers, srcIdx.size()));
    checkTransfer(
        sg, dg, rng, srcIdx, dstIdx, srcLayer, dstLayer, layers, [&](TestPool& src, TestPool& dst) {
          const auto plan = planOf(src, dst, srcIdx, dstIdx, srcLayer, dstLayer, layers);
          EXPECT_EQ(planBytes(plan),
                    static_cast<uint64_t>(srcIdx.size()) * layers * sg.C() * sg.row());
          EXPECT_LE(plan.size(), srcIdx.size() * layers * sg.C() * sg.H);
          // No row is longer than the longest index run's tokens x row x layers x
          // components (the bound auto decides by without planning: planRowBound).
          const uint64_t bound =
              longestRun(srcIdx, dstIdx) * static_cast<uint64_t>(layers * sg.C() * sg.row());
          for (const kvio_copy2d& c : plan) ASSERT_LE(c.width, bound);
          ASSERT_TRUE(writesDisjointInside(plan, src, dst));
          runPlan(plan);
        });
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(PlannerRandom, SamePoolDisjointLayersMatchesOracle) {
  // A copy inside one pool between disjoint layer ranges (allowed even for the same slots).
  std::mt19937_64 rng(3);
  for (int32_t layout = 0; layout < KVIO_LAYOUT_COUNT; ++layout) {
    Geometry g{KVIO_KIND_MHA, layout, Form::Single, 4, 4, 4, 2, 8};
    TestPool pool(g);
    pool.fillRandom(rng);
    const Image before = pool.capture();
    Image expected = before;
    const std::vector<int64_t> s{1, 2, 3, 9}, d{1, 2, 3, 4};
    const auto plan = planOf(pool, pool, s, d, 0, 2, 2);
    runPlan(plan);
    applyTransfer(g, before, g, &expected, s, d, 0, 2, 2);
    SCOPED_TRACE(layoutName(layout));
    EXPECT_TRUE(sameImage(expected, pool.capture(), "pool"));
  }
}

}  // namespace
}  // namespace kvio_test
