// Conformance of the CPU executor (through the public C++ API, kvio.hpp) against the naive
// oracle of oracle.hpp: the matrix of conformance_matrix.hpp (pool kind x host layout x device
// pool form x direction, one ctest case each), and any layout to any layout with random layer
// windows. Every destination buffer is canary-filled and compared whole (guard zones
// included); sources must not change.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "conformance_matrix.hpp"
#include "kvio/kvio.hpp"
#include "oracle.hpp"

namespace kvio_test {
namespace {

class ConformanceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ConformanceTest, MatchesOracle) {
  static kvio::Executor* cpu = new kvio::Executor(kvio::IoBackend::Cpu, 2);
  MatrixTarget target;
  target.executor = cpu;
  runConformanceCase(target, GetParam());
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
    SCOPED_TRACE(describeCase(iteration, sg, dg, srcLayer, dstLayer, layers, srcIdx.size()));
    checkTransfer(sg, dg, rng, srcIdx, dstIdx, srcLayer, dstLayer, layers,
                  [&](TestPool& src, TestPool& dst) {
                    kvio::transfer(cpu, src.pool(), dst.pool(), srcIdx, dstIdx,
                                   kvio::LayerMap{srcLayer, dstLayer, layers})
                        .wait();
                  });
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace kvio_test
