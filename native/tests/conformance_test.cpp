// Conformance of the CPU executor (through the public C++ API, kvio.hpp) against the naive
// oracle of oracle.hpp, over pool kind x host layout x device pool form x direction (one
// ctest case each), and inside each: granularity (per-layer on several layer ids, all-layer),
// full or layer-sharded host pools, page sizes, row sizes and head splits, and seeded random
// index sets (whole pages, token slots, runs crossing page boundaries). Every destination
// buffer is canary-filled and compared whole (guard zones included); sources must not change.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.hpp"
#include "oracle.hpp"

namespace kvio_test {
namespace {

constexpr int64_t kDeviceLayers = 4;

struct Case {
  int32_t kind;
  int32_t hostLayout;
  Form deviceForm;
  bool backup;  // device -> host; false: host -> device (load)
};

std::string describe(const Case& c) {
  return std::string(c.kind == KVIO_KIND_MHA ? "mha_" : "mla_") + layoutName(c.hostLayout) + "_" +
         formName(c.deviceForm) + (c.backup ? "_backup" : "_load");
}
std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return describe(info.param);
}
void PrintTo(const Case& c, std::ostream* os) {
  *os << describe(c);
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (int32_t kind : {KVIO_KIND_MHA, KVIO_KIND_MLA})
    for (int32_t layout = 0; layout < KVIO_LAYOUT_COUNT; ++layout) {
      if (kind == KVIO_KIND_MLA && layout == KVIO_LAYOUT_PAGE_HEAD) continue;
      for (Form form : {Form::Single, Form::PerComponent, Form::PerLayer})
        for (bool backup : {true, false}) cases.push_back(Case{kind, layout, form, backup});
    }
  return cases;
}

struct Heads {
  int64_t H, hb;
};

// Head splits per row size: MHA an even split (H = 2) and an odd one (odd head count or odd
// head bytes); MLA one latent row.
std::vector<Heads> headSplits(int32_t kind, int64_t row) {
  if (kind == KVIO_KIND_MLA) return {{1, row}};
  switch (row) {
    case 8: return {{2, 4}, {8, 1}};
    case 64: return {{2, 32}, {1, 64}};
    case 576: return {{2, 288}, {9, 64}};
    case 656: return {{2, 328}, {16, 41}};
    case 4096: return {{2, 2048}, {4, 1024}};
  }
  return {{1, row}};
}

enum class Pattern { WholePages, TokenSlots, CrossingRuns };
const char* patternName(Pattern p) {
  switch (p) {
    case Pattern::WholePages: return "whole_pages";
    case Pattern::TokenSlots: return "token_slots";
    case Pattern::CrossingRuns: return "crossing_runs";
  }
  return "?";
}

class ConformanceTest : public ::testing::TestWithParam<Case> {
 protected:
  static kvio::Executor& executor() {
    static kvio::Executor* e = new kvio::Executor(kvio::IoBackend::Cpu, 2);
    return *e;
  }

  // One transfer configuration on fresh pools: every pattern and both granularities.
  void runConfig(const Case& c, bool sharded, int64_t ps, Heads heads, std::mt19937_64& rng) {
    // Device pages and host pages differ so that an index applied to the wrong side shows.
    const int64_t devicePages = std::max<int64_t>(4, 40 / ps);
    Geometry dg{
        c.kind,  KVIO_LAYOUT_LAYER_FIRST, c.deviceForm, kDeviceLayers, devicePages, ps, heads.H,
        heads.hb};
    const int64_t shardStart = sharded ? 1 : 0;
    const int64_t hostLayers = sharded ? 2 : kDeviceLayers;  // host holds device [a, a+Lh)
    Geometry hg{c.kind,          c.hostLayout, Form::Allocated, hostLayers,
                devicePages + 1, ps,           heads.H,         heads.hb};
    TestPool device(dg);
    TestPool host(hg);
    TestPool& src = c.backup ? device : host;
    TestPool& dst = c.backup ? host : device;
    src.fillRandom(rng);
    const Image srcImage = src.capture();

    for (Pattern pattern : {Pattern::WholePages, Pattern::TokenSlots, Pattern::CrossingRuns}) {
      for (bool perLayer : {true, false}) {
        SCOPED_TRACE(std::string(patternName(pattern)) + (perLayer ? " per_layer" : " all_layer"));
        // Index sets on device and host.
        std::vector<int64_t> devIdx, hostIdx, devPages, hostPages;
        const int64_t pages = std::min(dg.P, hg.P);
        switch (pattern) {
          case Pattern::WholePages: {
            const int64_t k = pages - 1;
            devPages = distinct(rng, dg.P, k);
            hostPages = distinct(rng, hg.P, k);
            devIdx = expandPages(devPages, ps);
            hostIdx = expandPages(hostPages, ps);
            break;
          }
          case Pattern::TokenSlots: {
            const int64_t k = std::max<int64_t>(1, pages * ps / 3);
            devIdx = distinct(rng, dg.S(), k);
            hostIdx = distinct(rng, hg.S(), k);
            // Sources may repeat: replace a few source slots by others of the same side.
            std::vector<int64_t>& sourceIdx = c.backup ? devIdx : hostIdx;
            for (size_t i = 1; i < sourceIdx.size(); i += 5) sourceIdx[i] = sourceIdx[i - 1];
            break;
          }
          case Pattern::CrossingRuns: {
            std::vector<int64_t> lengths;
            for (int64_t r = 0; r < pages / 2; ++r) {
              lengths.push_back(2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(ps)));
            }
            devIdx = crossingRuns(rng, dg.P, ps, lengths);
            hostIdx = crossingRuns(rng, hg.P, ps, lengths);
            break;
          }
        }
        ASSERT_EQ(devIdx.size(), hostIdx.size());
        const std::vector<int64_t>& srcIdx = c.backup ? devIdx : hostIdx;
        const std::vector<int64_t>& dstIdx = c.backup ? hostIdx : devIdx;
        const std::vector<int64_t>& srcPages = c.backup ? devPages : hostPages;
        const std::vector<int64_t>& dstPages = c.backup ? hostPages : devPages;

        dst.fill(kCanary);
        Image expected = dst.capture();
        // (host layer j) <-> (device layer shardStart + j)
        auto srcLayer = [&](int64_t j) { return c.backup ? shardStart + j : j; };
        auto dstLayer = [&](int64_t j) { return c.backup ? j : shardStart + j; };
        std::vector<kvio::Transfer> transfers;
        uint64_t expectedBytes = 0;
        const uint64_t rowBytes = static_cast<uint64_t>(dg.C() * dg.row());
        if (perLayer) {
          // Several host layers, each its own transfer, submitted back to back.
          std::vector<int64_t> layerIds{hostLayers - 1, 0};
          if (hostLayers > 2) layerIds.push_back(2);
          for (int64_t j : layerIds) {
            if (pattern == Pattern::WholePages && !sharded) {
              transfers.push_back(kvio::transferDimExchange(executor(), src.pool(), dst.pool(),
                                                            srcPages, dstPages, j, 1));
            } else {
              transfers.push_back(kvio::transferPerLayer(executor(), src.pool(), dst.pool(), srcIdx,
                                                         dstIdx, srcLayer(j), dstLayer(j)));
            }
            applyTransfer(src.geometry(), srcImage, dst.geometry(), &expected, srcIdx, dstIdx,
                          srcLayer(j), dstLayer(j), 1);
            expectedBytes += rowBytes * srcIdx.size();
          }
        } else {
          if (pattern == Pattern::WholePages) {
            transfers.push_back(
                kvio::transferDirect(executor(), src.pool(), dst.pool(), srcPages, dstPages,
                                     kvio::LayerMap{srcLayer(0), dstLayer(0), hostLayers}));
          } else if (c.backup) {
            transfers.push_back(kvio::transferAllLayers(executor(), src.pool(), dst.pool(), srcIdx,
                                                        dstIdx, shardStart));
          } else {
            transfers.push_back(kvio::transfer(executor(), src.pool(), dst.pool(), srcIdx, dstIdx,
                                               kvio::LayerMap{0, shardStart, hostLayers}));
          }
          applyTransfer(src.geometry(), srcImage, dst.geometry(), &expected, srcIdx, dstIdx,
                        srcLayer(0), dstLayer(0), hostLayers);
          expectedBytes += rowBytes * srcIdx.size() * static_cast<uint64_t>(hostLayers);
        }
        uint64_t bytes = 0;
        for (kvio::Transfer& t : transfers) {
          t.wait();
          EXPECT_TRUE(t.done());
          bytes += t.bytes();
        }
        EXPECT_EQ(bytes, expectedBytes);
        ASSERT_TRUE(sameImage(expected, dst.capture(), "destination"));
        ASSERT_TRUE(sameImage(srcImage, src.capture(), "source"));
      }
    }
  }
};

TEST_P(ConformanceTest, MatchesOracle) {
  const Case& c = GetParam();
  std::mt19937_64 rng(0x6b76696f +
                      static_cast<uint64_t>(c.kind * 1000 + c.hostLayout * 100 +
                                            static_cast<int>(c.deviceForm) * 10 + c.backup));
  for (bool sharded : {false, true})
    for (int64_t ps : {1, 16, 64})
      for (int64_t row : {8, 64, 576, 656, 4096})
        for (Heads heads : headSplits(c.kind, row)) {
          SCOPED_TRACE("ps=" + std::to_string(ps) + " row=" + std::to_string(row) +
                       " H=" + std::to_string(heads.H) + " hb=" + std::to_string(heads.hb) +
                       (sharded ? " sharded host [1,3)" : " full host"));
          runConfig(c, sharded, ps, heads, rng);
          if (HasFatalFailure()) return;
        }
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, ConformanceTest, ::testing::ValuesIn(allCases()), caseName);

// Any layout to any layout (host to host, device to device, same layout both sides, layer
// windows at different offsets), seeded random geometry and indices, through the executor.
TEST(ConformanceAnyToAny, RandomLayoutsAndLayerWindows) {
  kvio::Executor cpu(kvio::IoBackend::Cpu, 3);
  std::mt19937_64 rng(0xa2a);
  const Form forms[] = {Form::Single, Form::PerComponent, Form::PerLayer, Form::Allocated};
  const Form otherForms[] = {Form::Single, Form::PerComponent, Form::Allocated};
  for (int iteration = 0; iteration < 300; ++iteration) {
    const int32_t kind = rng() % 2 == 0 ? KVIO_KIND_MHA : KVIO_KIND_MLA;
    // The two sides' page sizes are drawn independently in half of the cases.
    const bool samePageSize = rng() % 2 == 0;
    const int64_t pageSizes[2] = {std::vector<int64_t>{1, 2, 16, 64}[rng() % 4],
                                  std::vector<int64_t>{1, 2, 16, 64}[rng() % 4]};
    const Heads heads =
        kind == KVIO_KIND_MLA
            ? Heads{1, std::vector<int64_t>{8, 576, 656, 1024}[rng() % 4]}
            : std::vector<Heads>{{2, 4}, {3, 40}, {8, 1}, {2, 328}, {4, 256}}[rng() % 5];
    Geometry g[2];
    for (int side = 0; side < 2; ++side) {
      Geometry& x = g[side];
      const int64_t ps = side == 1 && !samePageSize ? pageSizes[1] : pageSizes[0];
      x.kind = kind;
      x.layout = static_cast<int32_t>(rng() % (kind == KVIO_KIND_MHA ? 4 : 3));
      // Per-layer tables exist for layer_first only.
      x.form = x.layout == KVIO_LAYOUT_LAYER_FIRST ? forms[rng() % 4] : otherForms[rng() % 3];
      x.L = 1 + static_cast<int64_t>(rng() % 5);
      x.P = std::max<int64_t>(2, 48 / ps) + static_cast<int64_t>(rng() % 3);
      x.ps = ps;
      x.H = heads.H;
      x.hb = heads.hb;
    }
    const Geometry& sg = g[0];
    const Geometry& dg = g[1];
    const int64_t layers = 1 + static_cast<int64_t>(rng() % std::min(sg.L, dg.L));
    const int64_t srcLayer = static_cast<int64_t>(rng() % (sg.L - layers + 1));
    const int64_t dstLayer = static_cast<int64_t>(rng() % (dg.L - layers + 1));
    std::vector<int64_t> dstIdx, srcIdx;
    const uint64_t pattern = rng() % 3;
    switch (sg.ps == dg.ps ? pattern : 1 + pattern % 2) {
      case 0: {  // whole pages
        const int64_t k =
            1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min(sg.P, dg.P)));
        srcIdx = expandPages(distinct(rng, sg.P, k), sg.ps);
        dstIdx = expandPages(distinct(rng, dg.P, k), dg.ps);
        break;
      }
      case 1: {  // token slots
        const int64_t k =
            1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min(sg.S(), dg.S())));
        srcIdx = distinct(rng, sg.S(), k);
        dstIdx = distinct(rng, dg.S(), k);
        break;
      }
      default: {  // one long run from a random start on each side
        const int64_t k =
            1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min(sg.S(), dg.S())));
        const int64_t s0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(sg.S() - k + 1));
        const int64_t d0 = static_cast<int64_t>(rng() % static_cast<uint64_t>(dg.S() - k + 1));
        for (int64_t i = 0; i < k; ++i) {
          srcIdx.push_back(s0 + i);
          dstIdx.push_back(d0 + i);
        }
      }
    }
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + sg.describe() + " -> " +
                 dg.describe() + ", layers " + std::to_string(srcLayer) + "->" +
                 std::to_string(dstLayer) + " x" + std::to_string(layers) + ", " +
                 std::to_string(srcIdx.size()) + " indices");
    TestPool src(sg), dst(dg);
    src.fillRandom(rng);
    dst.fill(kCanary);
    const Image before = src.capture();
    Image expected = dst.capture();
    kvio::transfer(cpu, src.pool(), dst.pool(), srcIdx, dstIdx,
                   kvio::LayerMap{srcLayer, dstLayer, layers})
        .wait();
    applyTransfer(sg, before, dg, &expected, srcIdx, dstIdx, srcLayer, dstLayer, layers);
    ASSERT_TRUE(sameImage(expected, dst.capture(), "destination"));
    ASSERT_TRUE(sameImage(before, src.capture(), "source"));
  }
}

}  // namespace
}  // namespace kvio_test
