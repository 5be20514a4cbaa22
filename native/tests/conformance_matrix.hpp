// The conformance matrix, shared by every backend's conformance test: pool kind x host layout x
// device pool form x direction (one ctest case each), and inside each: granularity (per-layer
// on several layer ids, all-layer), full or layer-sharded host pools, page sizes, row sizes and
// head splits, and seeded random index sets (whole pages, token slots, runs crossing page
// boundaries). Every destination buffer is canary-filled and compared whole against the oracle
// (oracle.hpp; guard zones included); sources must not change. conformance_test.cpp runs it on
// the cpu backend, ascend_conformance_test.cpp on kernel_ascend through the ACL host emulation,
// copy_engine_conformance_test.cpp on the direct backend's copy issuer through a fake copy
// engine (plans and pool regions taken from the C ABI, no executor); the last two also with
// device buffers carved back to back (Placement).
#ifndef KVIO_TESTS_CONFORMANCE_MATRIX_HPP_
#define KVIO_TESTS_CONFORMANCE_MATRIX_HPP_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kvio/kvio.hpp"
#include "oracle.hpp"

namespace kvio_test {

constexpr int64_t kDeviceLayers = 4;

struct Case {
  int32_t kind;
  int32_t hostLayout;
  Form deviceForm;
  bool backup;  // device -> host; false: host -> device (load)
};

inline std::string describe(const Case& c) {
  return std::string(c.kind == KVIO_KIND_MHA ? "mha_" : "mla_") + layoutName(c.hostLayout) + "_" +
         formName(c.deviceForm) + (c.backup ? "_backup" : "_load");
}
inline std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return describe(info.param);
}
inline void PrintTo(const Case& c, std::ostream* os) {
  *os << describe(c);
}

inline std::vector<Case> allCases() {
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
inline std::vector<Heads> headSplits(int32_t kind, int64_t row) {
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
inline const char* patternName(Pattern p) {
  switch (p) {
    case Pattern::WholePages: return "whole_pages";
    case Pattern::TokenSlots: return "token_slots";
    case Pattern::CrossingRuns: return "crossing_runs";
  }
  return "?";
}

/// The index sets of one pattern on the device pool `dg` and the host pool `hg` (same page
/// size): whole pages (their page ids in *devPages / *hostPages), token slots (source slots may
/// repeat), or runs crossing page boundaries.
inline void makeIndexSets(Pattern pattern, const Geometry& dg, const Geometry& hg, bool backup,
                          std::mt19937_64& rng, std::vector<int64_t>* devIdx,
                          std::vector<int64_t>* hostIdx, std::vector<int64_t>* devPages,
                          std::vector<int64_t>* hostPages) {
  const int64_t ps = dg.ps;
  const int64_t pages = std::min(dg.P, hg.P);
  devPages->clear();
  hostPages->clear();
  switch (pattern) {
    case Pattern::WholePages: {
      *devPages = distinct(rng, dg.P, pages - 1);
      *hostPages = distinct(rng, hg.P, pages - 1);
      *devIdx = expandPages(*devPages, ps);
      *hostIdx = expandPages(*hostPages, ps);
      break;
    }
    case Pattern::TokenSlots: {
      const int64_t k = std::max<int64_t>(1, pages * ps / 3);
      *devIdx = distinct(rng, dg.S(), k);
      *hostIdx = distinct(rng, hg.S(), k);
      // Sources may repeat: replace a few source slots by others of the same side.
      std::vector<int64_t>& sourceIdx = backup ? *devIdx : *hostIdx;
      for (size_t i = 1; i < sourceIdx.size(); i += 5) sourceIdx[i] = sourceIdx[i - 1];
      break;
    }
    case Pattern::CrossingRuns: {
      std::vector<int64_t> lengths;
      for (int64_t r = 0; r < pages / 2; ++r) {
        lengths.push_back(2 + static_cast<int64_t>(rng() % static_cast<uint64_t>(ps)));
      }
      *devIdx = crossingRuns(rng, dg.P, ps, lengths);
      *hostIdx = crossingRuns(rng, hg.P, ps, lengths);
      break;
    }
  }
}

/// What one (pattern, granularity) step of a configuration submitted, for a backend's checks.
struct TransferGroup {
  uint64_t bytes = 0;
  Pattern pattern = Pattern::WholePages;
  int64_t transfers = 0;          // submitted back to back
  int64_t pages = 0;              // whole pages per transfer (WholePages)
  int64_t layersPerTransfer = 0;  // layers each transfer moves
  const Case* testCase = nullptr;
  const Geometry* device = nullptr;
  const Geometry* host = nullptr;
  std::vector<Buffer> hostBuffers;  // the host pool's (TestPool::buffers)
};

/// Where the matrix runs: the executor, the memory kinds of its pools and hooks for the
/// backend's own checks.
struct MatrixTarget {
  const kvio::Executor* executor = nullptr;
  int32_t deviceMemory = KVIO_MEMORY_HOST;  // kind of the device pools (all wrapped)
  // Kind of the host pools: allocated by kvio, or, for the layer-sharded cases, caller memory
  // wrapped with guard zones around it (a write past the region's end shows there).
  int32_t hostMemory = KVIO_MEMORY_HOST;
  int32_t device = -1;
  Placement devicePlacement;  // where the device pools' buffers lie
  /// Copy-engine tests: when set, no executor runs the transfers. Each one's description (what
  /// the kvio:: call would submit) goes here with its pools, to be carried out at once; it
  /// returns the bytes moved.
  std::function<uint64_t(TestPool& src, TestPool& dst, const kvio_transfer_desc& desc)> runTransfer;
  /// Called after the transfers of one (pattern, granularity) completed, with their bytes.
  std::function<void(const TransferGroup& group)> afterTransfers;
};

/// The kvio:: calls the matrix makes (page calls take page ids, the others token slots).
enum class Call { DimExchange, Direct, PerLayer, AllLayers, General };

/// Submits one transfer through the kvio:: call `call` on the target's executor (adding it to
/// `transfers`), or hands its description to target.runTransfer (adding the bytes it moved).
inline void submitTransfer(const MatrixTarget& target, TestPool& src, TestPool& dst, Call call,
                           const std::vector<int64_t>& srcIds, const std::vector<int64_t>& dstIds,
                           kvio::LayerMap layers, std::vector<kvio::Transfer>* transfers,
                           uint64_t* bytes) {
  const bool pages = call == Call::DimExchange || call == Call::Direct;
  if (target.runTransfer) {
    const std::vector<int64_t> s = pages ? kvio::pageSlots(srcIds, src.geometry().ps) : srcIds;
    const std::vector<int64_t> d = pages ? kvio::pageSlots(dstIds, dst.geometry().ps) : dstIds;
    const kvio_transfer_desc desc{src.pool().handle(),
                                  dst.pool().handle(),
                                  s.data(),
                                  d.data(),
                                  static_cast<int64_t>(s.size()),
                                  layers.srcStart,
                                  layers.dstStart,
                                  layers.count};
    *bytes += target.runTransfer(src, dst, desc);
    return;
  }
  const kvio::Executor& e = *target.executor;
  switch (call) {
    case Call::DimExchange:
      transfers->push_back(kvio::transferDimExchange(e, src.pool(), dst.pool(), srcIds, dstIds,
                                                     layers.srcStart, layers.count));
      break;
    case Call::Direct:
      transfers->push_back(kvio::transferDirect(e, src.pool(), dst.pool(), srcIds, dstIds, layers));
      break;
    case Call::PerLayer:
      transfers->push_back(kvio::transferPerLayer(e, src.pool(), dst.pool(), srcIds, dstIds,
                                                  layers.srcStart, layers.dstStart));
      break;
    case Call::AllLayers:
      transfers->push_back(
          kvio::transferAllLayers(e, src.pool(), dst.pool(), srcIds, dstIds, layers.srcStart));
      break;
    case Call::General:
      transfers->push_back(kvio::transfer(e, src.pool(), dst.pool(), srcIds, dstIds, layers));
      break;
  }
}

// One transfer configuration on fresh pools: every pattern and both granularities.
inline void runConformanceConfig(const MatrixTarget& target, const Case& c, bool sharded,
                                 int64_t ps, Heads heads, std::mt19937_64& rng) {
  {
    // Device pages and host pages differ so that an index applied to the wrong side shows.
    const int64_t devicePages = std::max<int64_t>(4, 40 / ps);
    Geometry dg{
        c.kind,  KVIO_LAYOUT_LAYER_FIRST, c.deviceForm, kDeviceLayers, devicePages, ps, heads.H,
        heads.hb};
    const int64_t shardStart = sharded ? 1 : 0;
    const int64_t hostLayers = sharded ? 2 : kDeviceLayers;  // host holds device [a, a+Lh)
    // Allocated pools have no guard zones to catch a stray write; the sharded cases wrap.
    const Form hostForm = sharded ? Form::Single : Form::Allocated;
    Geometry hg{c.kind, c.hostLayout, hostForm, hostLayers, devicePages + 1, ps, heads.H, heads.hb};
    TestPool device(dg, target.deviceMemory, target.device, target.devicePlacement);
    TestPool host(hg, target.hostMemory, target.device);
    TestPool& src = c.backup ? device : host;
    TestPool& dst = c.backup ? host : device;
    src.fillRandom(rng);
    const Image srcImage = src.capture();
    Image expected;  // the destination's, for each step (its memory reused)

    for (Pattern pattern : {Pattern::WholePages, Pattern::TokenSlots, Pattern::CrossingRuns}) {
      for (bool perLayer : {true, false}) {
        SCOPED_TRACE(std::string(patternName(pattern)) + (perLayer ? " per_layer" : " all_layer"));
        std::vector<int64_t> devIdx, hostIdx, devPages, hostPages;
        makeIndexSets(pattern, dg, hg, c.backup, rng, &devIdx, &hostIdx, &devPages, &hostPages);
        ASSERT_EQ(devIdx.size(), hostIdx.size());
        const std::vector<int64_t>& srcIdx = c.backup ? devIdx : hostIdx;
        const std::vector<int64_t>& dstIdx = c.backup ? hostIdx : devIdx;
        const std::vector<int64_t>& srcPages = c.backup ? devPages : hostPages;
        const std::vector<int64_t>& dstPages = c.backup ? hostPages : devPages;

        dst.fill(kCanary);
        dst.captureInto(&expected);
        // (host layer j) <-> (device layer shardStart + j)
        auto srcLayer = [&](int64_t j) { return c.backup ? shardStart + j : j; };
        auto dstLayer = [&](int64_t j) { return c.backup ? j : shardStart + j; };
        std::vector<kvio::Transfer> transfers;
        uint64_t bytes = 0;  // moved, as the transfers (or runTransfer) report it
        uint64_t expectedBytes = 0;
        const uint64_t rowBytes = static_cast<uint64_t>(dg.C() * dg.row());
        if (perLayer) {
          // Several host layers, each its own transfer, submitted back to back.
          std::vector<int64_t> layerIds{hostLayers - 1, 0};
          if (hostLayers > 2) layerIds.push_back(2);
          for (int64_t j : layerIds) {
            if (pattern == Pattern::WholePages && !sharded) {
              submitTransfer(target, src, dst, Call::DimExchange, srcPages, dstPages,
                             kvio::LayerMap{j, j, 1}, &transfers, &bytes);
            } else {
              submitTransfer(target, src, dst, Call::PerLayer, srcIdx, dstIdx,
                             kvio::LayerMap{srcLayer(j), dstLayer(j), 1}, &transfers, &bytes);
            }
            applyTransfer(src.geometry(), srcImage, dst.geometry(), &expected, srcIdx, dstIdx,
                          srcLayer(j), dstLayer(j), 1);
            expectedBytes += rowBytes * srcIdx.size();
          }
        } else {
          if (pattern == Pattern::WholePages) {
            submitTransfer(target, src, dst, Call::Direct, srcPages, dstPages,
                           kvio::LayerMap{srcLayer(0), dstLayer(0), hostLayers}, &transfers,
                           &bytes);
          } else if (c.backup) {
            submitTransfer(target, src, dst, Call::AllLayers, srcIdx, dstIdx,
                           kvio::LayerMap{shardStart, 0, hostLayers}, &transfers, &bytes);
          } else {
            submitTransfer(target, src, dst, Call::General, srcIdx, dstIdx,
                           kvio::LayerMap{0, shardStart, hostLayers}, &transfers, &bytes);
          }
          applyTransfer(src.geometry(), srcImage, dst.geometry(), &expected, srcIdx, dstIdx,
                        srcLayer(0), dstLayer(0), hostLayers);
          expectedBytes += rowBytes * srcIdx.size() * static_cast<uint64_t>(hostLayers);
        }
        for (kvio::Transfer& t : transfers) {
          t.wait();
          EXPECT_TRUE(t.done());
          bytes += t.bytes();
        }
        EXPECT_EQ(bytes, expectedBytes);
        if (target.afterTransfers) {
          TransferGroup group;
          group.bytes = expectedBytes;
          group.pattern = pattern;
          group.transfers = static_cast<int64_t>(transfers.size());
          group.pages = static_cast<int64_t>(srcPages.size());
          group.layersPerTransfer = perLayer ? 1 : hostLayers;
          group.testCase = &c;
          group.device = &dg;
          group.host = &hg;
          group.hostBuffers = host.buffers();
          target.afterTransfers(group);
        }
        ASSERT_TRUE(dst.matches(expected, "destination"));
        ASSERT_TRUE(src.matches(srcImage, "source"));
      }
    }
  }
}

/// Whether a case sweeps pages of `ps` tokens with rows of `row` bytes: every pair, or with
/// KVIO_CONFORMANCE_SWEEP=quick (the sanitizer run of scripts/reliability-check.sh, whose build
/// is several times slower) all but the largest pools, 64-token pages of 4 KiB rows: three
/// quarters of the sweep's time (measured: 11.8 s of a copy-engine variant's 42 cases, 2.9 s
/// without), with the code paths of the 16-token pages and of the other rows.
inline bool inSweep(int64_t ps, int64_t row) {
  static const bool quick = [] {
    const char* level = std::getenv("KVIO_CONFORMANCE_SWEEP");
    const bool on = level != nullptr && std::string(level) == "quick";
    if (on) {
      std::fprintf(stderr,
                   "KVIO_CONFORMANCE_SWEEP=quick: 64-token pages of 4 KiB rows left out (and the "
                   "later configurations' random data differs from a whole sweep's)\n");
    }
    return on;
  }();
  return !(quick && ps == 64 && row == 4096);
}

/// The whole matrix for one case: full and layer-sharded host pools, page sizes, row sizes
/// and head splits (inSweep).
inline void runConformanceCase(const MatrixTarget& target, const Case& c) {
  std::mt19937_64 rng(0x6b76696f +
                      static_cast<uint64_t>(c.kind * 1000 + c.hostLayout * 100 +
                                            static_cast<int>(c.deviceForm) * 10 + c.backup));
  for (bool sharded : {false, true})
    for (int64_t ps : {1, 16, 64})
      for (int64_t row : {8, 64, 576, 656, 4096})
        for (Heads heads : headSplits(c.kind, row)) {
          if (!inSweep(ps, row)) continue;
          SCOPED_TRACE("ps=" + std::to_string(ps) + " row=" + std::to_string(row) +
                       " H=" + std::to_string(heads.H) + " hb=" + std::to_string(heads.hb) +
                       (sharded ? " sharded host [1,3)" : " full host"));
          runConformanceConfig(target, c, sharded, ps, heads, rng);
          if (::testing::Test::HasFatalFailure()) return;
        }
}

}  // namespace kvio_test

#endif  // KVIO_TESTS_CONFORMANCE_MATRIX_HPP_
