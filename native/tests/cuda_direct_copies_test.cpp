// Tests of the 'direct' io backend's host-side logic (native/src/cuda/direct_copies.hpp),
// which needs no GPU: the copies it would give the copy engine, executed here with memcpy
// through a fake engine table, equal the oracle's replay on random layout pairs (broadcast
// sources included, whose pitch-0 2-D copies must become rows); the cuMemcpyBatchAsync ABI
// choice by driver version; batching in bounded chunks; the fall-back to single copies when
// the batch entry point says "not supported"; and the error messages of failing calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "cuda/direct_copies.hpp"
#include "kvio/kvio.h"
#include "oracle.hpp"
#include "plan_support.hpp"

namespace kvio_test {
namespace {

using kvio::cuda::BatchAbi;
using kvio::cuda::EngineCopy;
using kvio::cuda::EngineOps;

/// A host "copy engine": memcpy, with a log of the calls and scripted failures.
struct FakeEngine {
  int batchCalls = 0;
  int singleCalls = 0;
  int copy2dCalls = 0;
  size_t largestBatch = 0;
  int batchResult = kvio::cuda::kEngineOk;  // what batch() answers (not OK: copies nothing)
  int failSingleAt = -1;                    // singleCalls value at which copy1d fails

  static int copy1d(void* context, uint64_t dst, uint64_t src, uint64_t bytes) {
    auto* e = static_cast<FakeEngine*>(context);
    if (e->singleCalls++ == e->failSingleAt) return 1;
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
    return kvio::cuda::kEngineOk;
  }
  static int copy2d(void* context, const EngineCopy& c) {
    auto* e = static_cast<FakeEngine*>(context);
    ++e->copy2dCalls;
    EXPECT_GE(c.srcPitch, c.width);  // cudaMemcpy2DAsync's rule
    EXPECT_GE(c.dstPitch, c.width);
    for (uint64_t r = 0; r < c.height; ++r) {
      std::memcpy(reinterpret_cast<void*>(c.dst + r * c.dstPitch),
                  reinterpret_cast<const void*>(c.src + r * c.srcPitch), c.width);
    }
    return kvio::cuda::kEngineOk;
  }
  static int batch(void* context, uint64_t* dsts, uint64_t* srcs, size_t* sizes, size_t count,
                   size_t* failIndex) {
    auto* e = static_cast<FakeEngine*>(context);
    ++e->batchCalls;
    e->largestBatch = std::max(e->largestBatch, count);
    if (e->batchResult != kvio::cuda::kEngineOk) {
      *failIndex = 2;
      return e->batchResult;
    }
    for (size_t i = 0; i < count; ++i) {
      std::memcpy(reinterpret_cast<void*>(dsts[i]), reinterpret_cast<const void*>(srcs[i]),
                  sizes[i]);
    }
    return kvio::cuda::kEngineOk;
  }
  static std::string text(int code) { return "fake error " + std::to_string(code); }

  EngineOps ops(bool withBatch) {
    EngineOps o;
    o.context = this;
    o.copy1d = copy1d;
    o.copy2d = copy2d;
    o.batch = withBatch ? batch : nullptr;
    o.errorText = text;
    return o;
  }
};

Geometry randomGeometry(std::mt19937_64& rng, int32_t kind, int64_t L, int64_t ps, int64_t H,
                        int64_t hb) {
  Geometry g;
  g.kind = kind;
  const int32_t layouts = kind == KVIO_KIND_MHA ? 4 : 3;
  g.layout = static_cast<int32_t>(rng() % layouts);
  g.form = Form::Single;
  if (g.layout == KVIO_LAYOUT_LAYER_FIRST) {
    const Form forms[] = {Form::Single, Form::PerComponent, Form::PerLayer};
    g.form = forms[rng() % 3];
    if (g.form == Form::PerComponent && kind == KVIO_KIND_MLA) g.form = Form::Single;
  }
  g.L = L;
  g.P = 6;
  g.ps = ps;
  g.H = H;
  g.hb = hb;
  return g;
}

TEST(CudaDirectCopies, EngineCopiesMatchOracle) {
  std::mt19937_64 rng(0xd1ec7);
  for (int iteration = 0; iteration < 600; ++iteration) {
    const int32_t kind = rng() % 2 == 0 ? KVIO_KIND_MHA : KVIO_KIND_MLA;
    const int64_t ps = std::vector<int64_t>{1, 2, 4, 8}[rng() % 4];
    const int64_t H = kind == KVIO_KIND_MHA ? 1 + static_cast<int64_t>(rng() % 3) : 1;
    const int64_t hb = std::vector<int64_t>{8, 24, 576, 656}[rng() % 4];
    const int64_t srcL = 1 + static_cast<int64_t>(rng() % 3);
    const int64_t dstL = 1 + static_cast<int64_t>(rng() % 3);
    const Geometry sg = randomGeometry(rng, kind, srcL, ps, H, hb);
    const Geometry dg = randomGeometry(rng, kind, dstL, ps, H, hb);
    const int64_t layers = 1 + static_cast<int64_t>(rng() % std::min(srcL, dstL));
    const int64_t srcLayer = static_cast<int64_t>(rng() % (srcL - layers + 1));
    const int64_t dstLayer = static_cast<int64_t>(rng() % (dstL - layers + 1));
    std::vector<int64_t> dstIdx = distinct(rng, dg.S(), 1 + static_cast<int64_t>(rng() % dg.S()));
    if (rng() % 2 == 0) std::sort(dstIdx.begin(), dstIdx.end());
    std::vector<int64_t> srcIdx;
    const bool broadcast = rng() % 5 == 0;  // one source slot to every destination
    const int64_t start = static_cast<int64_t>(rng() % sg.S());
    for (size_t i = 0; i < dstIdx.size(); ++i) {
      srcIdx.push_back(broadcast ? start : (start + static_cast<int64_t>(i)) % sg.S());
    }
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + sg.describe() + " -> " +
                 dg.describe());
    TestPool src(sg), dst(dg);
    src.fillRandom(rng);
    dst.fill(kCanary);
    const Image srcBefore = src.capture();
    Image expected = dst.capture();
    std::vector<EngineCopy> copies;
    kvio::cuda::engineCopies(planOf(src, dst, srcIdx, dstIdx, srcLayer, dstLayer, layers), &copies);
    FakeEngine engine;
    bool batchEnabled = rng() % 2 == 0;
    kvio::cuda::BatchScratch scratch;
    ASSERT_EQ(
        kvio::cuda::issueCopies(engine.ops(true), copies, 1 + rng() % 64, &batchEnabled, &scratch),
        KVIO_STATUS_OK)
        << kvio_last_error();
    applyTransfer(sg, srcBefore, dg, &expected, srcIdx, dstIdx, srcLayer, dstLayer, layers);
    ASSERT_TRUE(sameImage(expected, dst.capture(), "destination"));
  }
}

TEST(CudaDirectCopies, PitchZeroBecomesRows) {
  const std::vector<kvio_copy2d> plan = {{100, 200, 16, 3, 0, 64}, {1, 2, 8, 1, 8, 8}};
  std::vector<EngineCopy> copies;
  kvio::cuda::engineCopies(plan, &copies);
  ASSERT_EQ(copies.size(), 4u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(copies[r].height, 1u);
    EXPECT_EQ(copies[r].src, 100u);  // the same source row each time
    EXPECT_EQ(copies[r].dst, 200u + 64u * r);
  }
}

TEST(CudaDirectCopies, PitchAboveTheDeviceLimitBecomesRows) {
  const std::vector<kvio_copy2d> plan = {{0, 1u << 20, 64, 4, 3u << 20, 64}};
  std::vector<EngineCopy> copies;
  kvio::cuda::engineCopies(plan, &copies, 1u << 20);
  ASSERT_EQ(copies.size(), 4u);
  EXPECT_EQ(copies[3].src, 3u * (3u << 20));
  EXPECT_EQ(copies[3].dst, (1u << 20) + 3u * 64u);
  kvio::cuda::engineCopies(plan, &copies, 4u << 20);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].height, 4u);
}

TEST(CudaDirectCopies, BatchAbiFollowsTheDriver) {
  EXPECT_EQ(kvio::cuda::chooseBatchAbi(12040, true, true), BatchAbi::None);
  EXPECT_EQ(kvio::cuda::chooseBatchAbi(12080, true, false), BatchAbi::V12080);
  EXPECT_EQ(kvio::cuda::chooseBatchAbi(12090, false, false), BatchAbi::None);
  EXPECT_EQ(kvio::cuda::chooseBatchAbi(13000, true, true), BatchAbi::V13000);
  // A 13 driver whose v13000 entry point did not resolve: the 12.8 ABI, never a mix.
  EXPECT_EQ(kvio::cuda::chooseBatchAbi(13010, true, false), BatchAbi::V12080);
  EXPECT_EQ(kvio::cuda::chooseBatchAbi(0, true, true), BatchAbi::None);
}

std::vector<EngineCopy> rowCopies(std::vector<uint8_t>* src, std::vector<uint8_t>* dst, size_t n,
                                  size_t width) {
  src->assign(n * width, 0);
  dst->assign(n * width, 0);
  for (size_t i = 0; i < src->size(); ++i) (*src)[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<EngineCopy> copies;
  for (size_t i = 0; i < n; ++i) {  // reversed order: no copies merge
    const size_t j = n - 1 - i;
    copies.push_back({reinterpret_cast<uint64_t>(dst->data() + j * width),
                      reinterpret_cast<uint64_t>(src->data() + j * width), width, 1, width, width});
  }
  return copies;
}

TEST(CudaDirectCopies, BatchesAreBounded) {
  std::vector<uint8_t> src, dst;
  const auto copies = rowCopies(&src, &dst, 10, 32);
  FakeEngine engine;
  bool enabled = true;
  kvio::cuda::BatchScratch scratch;
  ASSERT_EQ(kvio::cuda::issueCopies(engine.ops(true), copies, 4, &enabled, &scratch),
            KVIO_STATUS_OK);
  EXPECT_EQ(engine.batchCalls, 3);  // 4 + 4 + 2
  EXPECT_EQ(engine.largestBatch, 4u);
  EXPECT_EQ(engine.singleCalls, 0);
  EXPECT_EQ(src, dst);
}

TEST(CudaDirectCopies, NotSupportedFallsBackToSingleCopiesForGood) {
  std::vector<uint8_t> src, dst;
  const auto copies = rowCopies(&src, &dst, 10, 32);
  FakeEngine engine;
  engine.batchResult = kvio::cuda::kEngineNotSupported;
  bool enabled = true;
  kvio::cuda::BatchScratch scratch;
  ASSERT_EQ(kvio::cuda::issueCopies(engine.ops(true), copies, 4, &enabled, &scratch),
            KVIO_STATUS_OK);
  EXPECT_FALSE(enabled);
  EXPECT_EQ(engine.batchCalls, 1);  // asked once, then never again
  EXPECT_EQ(engine.singleCalls, 10);
  EXPECT_EQ(src, dst);
  std::fill(dst.begin(), dst.end(), 0);
  ASSERT_EQ(kvio::cuda::issueCopies(engine.ops(true), copies, 4, &enabled, &scratch),
            KVIO_STATUS_OK);
  EXPECT_EQ(engine.batchCalls, 1);
  EXPECT_EQ(src, dst);
}

TEST(CudaDirectCopies, NoBatchEntryPointUsesSingleCopies) {
  std::vector<uint8_t> src, dst;
  const auto copies = rowCopies(&src, &dst, 5, 8);
  FakeEngine engine;
  bool enabled = true;
  kvio::cuda::BatchScratch scratch;
  ASSERT_EQ(kvio::cuda::issueCopies(engine.ops(false), copies, 4, &enabled, &scratch),
            KVIO_STATUS_OK);
  EXPECT_EQ(engine.singleCalls, 5);
  EXPECT_EQ(src, dst);
}

TEST(CudaDirectCopies, FailuresNameTheCallAndTheCopy) {
  std::vector<uint8_t> src, dst;
  const auto copies = rowCopies(&src, &dst, 6, 16);
  FakeEngine engine;
  engine.batchResult = 700;
  bool enabled = true;
  kvio::cuda::BatchScratch scratch;
  EXPECT_EQ(kvio::cuda::issueCopies(engine.ops(true), copies, 4, &enabled, &scratch),
            KVIO_STATUS_BACKEND_ERROR);
  EXPECT_NE(std::string(kvio_last_error()).find("cuMemcpyBatchAsync failed: fake error 700"),
            std::string::npos)
      << kvio_last_error();
  EXPECT_NE(std::string(kvio_last_error()).find("failIdx 2"), std::string::npos);
  FakeEngine single;
  single.failSingleAt = 3;
  EXPECT_EQ(kvio::cuda::issueCopies(single.ops(false), copies, 4, &enabled, &scratch),
            KVIO_STATUS_BACKEND_ERROR);
  EXPECT_NE(
      std::string(kvio_last_error()).find("cudaMemcpyAsync failed: fake error 1: copy 3 of 6"),
      std::string::npos)
      << kvio_last_error();
}

}  // namespace
}  // namespace kvio_test
