// Tests of the 'direct' io backend's host-side logic, which needs no GPU: its engine table
// (native/src/cuda/direct_copies.hpp) driven by the shared copy-engine issuer
// (native/src/engine/copy_engine.hpp) on the fake copy engine of fake_copy_engine.hpp, which
// refuses what a real one refuses. Plans of random layout pairs (broadcast sources included,
// whose pitch-0 2-D copies must become rows) executed that way equal the oracle's replay;
// copies are cut at allocation boundaries, even between adjacent allocations, and a copy in no
// known region is INTERNAL with nothing issued; 2-D heights are cut at the engine's limit; the
// cuMemcpyBatchAsync ABI choice by driver version; batching in bounded chunks; the fall-back to
// single copies when the batch call says "not supported"; and the error messages of failing
// calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "cuda/direct_copies.hpp"
#include "cuda/stream_argument.hpp"
#include "engine/copy_engine.hpp"
#include "fake_copy_engine.hpp"
#include "kvio/kvio.h"
#include "oracle.hpp"
#include "plan_support.hpp"

namespace kvio_test {
namespace {

using kvio::cuda::BatchAbi;
using kvio::engine::CopyIssuer;
using kvio::engine::EngineCopy;
using kvio::engine::EngineOps;
using kvio::engine::Region;

/// The direct backend's engine table on `engine`, with at most maxBatch copies per batch.
EngineOps directOn(FakeCopyEngine& engine, bool withBatch = true,
                   size_t maxBatch = kvio::cuda::kMaxBatch,
                   uint64_t maxPitch = kvio::cuda::kDefaultMaxPitch) {
  EngineOps ops = engine.ops(kvio::cuda::directEngine(maxPitch), withBatch);
  ops.maxBatch = maxBatch;
  return ops;
}

/// Cuts `plan` as the direct backend would (no calls issued).
std::vector<EngineCopy> cut(const std::vector<kvio_copy2d>& plan, const std::vector<Region>& src,
                            const std::vector<Region>& dst,
                            uint64_t maxPitch = kvio::cuda::kDefaultMaxPitch,
                            uint64_t max2dHeight = 0) {
  std::vector<EngineCopy> out;
  kvio::engine::CutRules rules;
  rules.maxPitch = maxPitch;
  rules.max2dHeight = max2dHeight;
  EXPECT_EQ(kvio::engine::cutCopies(plan, src, dst, rules, &out), KVIO_STATUS_OK)
      << kvio_last_error();
  return out;
}

const std::vector<Region> kEverything = {{0, UINT64_MAX / 2}};

TEST(CudaDirectCopies, EngineCopiesMatchOracle) {
  std::mt19937_64 rng(0xd1ec7);
  for (int iteration = 0; iteration < 600; ++iteration) {
    const int32_t kind = rng() % 2 == 0 ? KVIO_KIND_MHA : KVIO_KIND_MLA;
    const int64_t ps = std::vector<int64_t>{1, 2, 4, 8}[rng() % 4];
    const int64_t H = kind == KVIO_KIND_MHA ? 1 + static_cast<int64_t>(rng() % 3) : 1;
    const int64_t hb = std::vector<int64_t>{8, 24, 576, 656}[rng() % 4];
    const int64_t srcL = 1 + static_cast<int64_t>(rng() % 3);
    const int64_t dstL = 1 + static_cast<int64_t>(rng() % 3);
    const Geometry sg = randomPoolGeometry(rng, kind, srcL, ps, H, hb);
    const Geometry dg = randomPoolGeometry(rng, kind, dstL, ps, H, hb);
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
    // Half of the pools' buffers carved back to back: the planner merges across them.
    const Placement placement = rng() % 2 == 0 ? carved(0) : apart();
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + sg.describe() + " -> " +
                 dg.describe() + (placement.carved ? ", carved" : ", apart"));
    TestPool src(sg, KVIO_MEMORY_HOST, -1, placement), dst(dg, KVIO_MEMORY_HOST, -1, placement);
    SeededPair pools(src, dst, rng);
    FakeCopyEngine engine;
    std::vector<Buffer> allocations = src.buffers();
    for (const Buffer& b : dst.buffers()) allocations.push_back(b);
    engine.setAllocations(allocations);
    CopyIssuer issuer;
    issuer.setBatchEnabled(rng() % 2 == 0);
    ASSERT_EQ(issuer.issue(directOn(engine, true, 1 + rng() % 64),
                           planOf(src, dst, srcIdx, dstIdx, srcLayer, dstLayer, layers),
                           memoryRegions(regionsOf(src.pool().handle())),
                           memoryRegions(regionsOf(dst.pool().handle())), {}),
              KVIO_STATUS_OK)
        << kvio_last_error() << "; " << engine.lastRefusal;
    pools.expect(srcIdx, dstIdx, srcLayer, dstLayer, layers);
    ASSERT_TRUE(pools.check());
  }
}

TEST(CudaDirectCopies, PitchZeroBecomesRows) {
  const std::vector<kvio_copy2d> plan = {{100, 200, 16, 3, 0, 64}, {1, 2, 8, 1, 8, 8}};
  const std::vector<EngineCopy> copies = cut(plan, kEverything, kEverything);
  ASSERT_EQ(copies.size(), 4u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(copies[r].height, 1u);
    EXPECT_EQ(copies[r].src, 100u);  // the same source row each time
    EXPECT_EQ(copies[r].dst, 200u + 64u * r);
  }
}

TEST(CudaDirectCopies, PitchAboveTheDeviceLimitBecomesRows) {
  const std::vector<kvio_copy2d> plan = {{0, 1u << 20, 64, 4, 3u << 20, 64}};
  std::vector<EngineCopy> copies = cut(plan, kEverything, kEverything, 1u << 20);
  ASSERT_EQ(copies.size(), 4u);
  EXPECT_EQ(copies[3].src, 3u * (3u << 20));
  EXPECT_EQ(copies[3].dst, (1u << 20) + 3u * 64u);
  copies = cut(plan, kEverything, kEverything, 4u << 20);
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].height, 4u);
}

// The H200 failure: four layer buffers 16 KiB apart, one 2-D copy of four rows (one per
// layer) at pitch 16384. Whether the buffers are back to back or have gaps, each row becomes
// its own copy; rows inside one buffer stay 2-D.
TEST(CudaDirectCopies, CopiesAreCutAtAllocationBoundaries) {
  const uint64_t base = 1u << 20;
  for (uint64_t layerBytes : {16384u, 4096u}) {
    SCOPED_TRACE("layer buffers of " + std::to_string(layerBytes) + " bytes, 16 KiB apart");
    std::vector<Region> device;
    for (uint64_t l = 0; l < 4; ++l) device.push_back({base + l * 16384, layerBytes});
    const std::vector<Region> host = {{8u << 20, 1u << 20}};
    const std::vector<kvio_copy2d> plan = {{(8u << 20) + 512, base + 1024, 1024, 4, 98304, 16384}};
    const std::vector<EngineCopy> copies = cut(plan, host, device);
    ASSERT_EQ(copies.size(), 4u);
    for (uint64_t l = 0; l < 4; ++l) {
      EXPECT_EQ(copies[l].height, 1u);
      EXPECT_EQ(copies[l].dst, base + l * 16384 + 1024);
      EXPECT_EQ(copies[l].src, (8u << 20) + 512 + l * 98304);
    }
  }
  // Rows 0-2 in one buffer, rows 3-5 in the next one (back to back): two 2-D copies.
  const std::vector<Region> two = {{4096, 3 * 256}, {4096 + 3 * 256, 3 * 256}};
  std::vector<EngineCopy> copies = cut({{0, 4096, 64, 6, 64, 256}}, kEverything, two);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].height, 3u);
  EXPECT_EQ(copies[1].height, 3u);
  EXPECT_EQ(copies[1].dst, 4096u + 3 * 256);
  // A 1-D copy over two adjacent buffers, and rows of a 2-D copy that cross the boundary:
  // pieces that each stay in one buffer.
  copies = cut({{0, 4096 + 700, 100, 1, 100, 100}}, kEverything, two);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].width, 68u);
  EXPECT_EQ(copies[1].dst, 4096u + 768);
  EXPECT_EQ(copies[1].src, 68u);
  EXPECT_EQ(copies[1].width, 32u);
  copies = cut({{0, 4096 + 736, 64, 2, 64, 64}}, kEverything, two);
  ASSERT_EQ(copies.size(), 3u);  // row 0 in two pieces, row 1 whole
  EXPECT_EQ(copies[0].width + copies[1].width, 64u);
  EXPECT_EQ(copies[2].dst, 4096u + 800);
  // The source side is cut too.
  copies = cut({{4096 + 700, 0, 100, 1, 100, 100}}, two, kEverything);
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[1].dst, 68u);
}

TEST(CudaDirectCopies, HeightsAboveTheEngineLimitAreSplit) {
  const std::vector<EngineCopy> copies =
      cut({{0, 1u << 20, 8, 7, 16, 32}}, kEverything, kEverything, 1u << 20, 3);
  ASSERT_EQ(copies.size(), 3u);  // 3 + 3 rows, then the last row alone
  EXPECT_EQ(copies[0].height, 3u);
  EXPECT_EQ(copies[1].height, 3u);
  EXPECT_EQ(copies[1].src, 3u * 16u);
  EXPECT_EQ(copies[2].height, 1u);
  EXPECT_EQ(copies[2].dst, (1u << 20) + 6u * 32u);
}

TEST(CudaDirectCopies, AnAddressInNoRegionIsInternalAndNothingIsIssued) {
  std::vector<uint8_t> a(256, 1), b(256, 0);
  FakeCopyEngine engine;
  engine.addAllocation(a.data(), a.size());
  engine.addAllocation(b.data(), b.size());
  const uint64_t src = reinterpret_cast<uint64_t>(a.data());
  const uint64_t dst = reinterpret_cast<uint64_t>(b.data());
  // The second copy's destination lies past the only destination region.
  const std::vector<kvio_copy2d> plan = {{src, dst, 64, 1, 64, 64},
                                         {src, dst + 512, 64, 1, 64, 64}};
  CopyIssuer issuer;
  EXPECT_EQ(issuer.issue(directOn(engine), plan, std::vector<Region>{{src, 256}},
                         std::vector<Region>{{dst, 256}}, {}),
            KVIO_STATUS_INTERNAL);
  EXPECT_NE(std::string(kvio_last_error()).find("plan copy 1 of 2: destination address"),
            std::string::npos)
      << kvio_last_error();
  EXPECT_EQ(engine.copy1dCalls + engine.copy2dCalls + engine.batchCalls, 0);
  EXPECT_EQ(b, std::vector<uint8_t>(256, 0));
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

/// n 1-D copies of `width` bytes between two buffers, in reversed order (none merge), and the
/// fake engine knowing both buffers.
struct Rows {
  Rows(size_t n, size_t width) {
    src.assign(n * width, 0);
    dst.assign(n * width, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
    for (size_t i = 0; i < n; ++i) {
      const size_t j = n - 1 - i;
      plan.push_back({reinterpret_cast<uint64_t>(src.data() + j * width),
                      reinterpret_cast<uint64_t>(dst.data() + j * width), width, 1, width, width});
    }
    engine.addAllocation(src.data(), src.size());
    engine.addAllocation(dst.data(), dst.size());
  }
  kvio_status issue(CopyIssuer& issuer, const EngineOps& ops) {
    return issuer.issue(
        ops, plan, std::vector<Region>{{reinterpret_cast<uint64_t>(src.data()), src.size()}},
        std::vector<Region>{{reinterpret_cast<uint64_t>(dst.data()), dst.size()}}, {});
  }
  std::vector<uint8_t> src, dst;
  std::vector<kvio_copy2d> plan;
  FakeCopyEngine engine;
};

TEST(CudaDirectCopies, BatchesAreBounded) {
  Rows rows(10, 32);
  CopyIssuer issuer;
  ASSERT_EQ(rows.issue(issuer, directOn(rows.engine, true, 4)), KVIO_STATUS_OK);
  EXPECT_EQ(rows.engine.batchCalls, 3);  // 4 + 4 + 2
  EXPECT_EQ(rows.engine.largestBatch, 4u);
  EXPECT_EQ(rows.engine.copy1dCalls, 0);
  EXPECT_EQ(rows.src, rows.dst);
}

TEST(CudaDirectCopies, NotSupportedFallsBackToSingleCopiesForGood) {
  Rows rows(10, 32);
  rows.engine.batchResult = kvio::engine::kEngineNotSupported;
  CopyIssuer issuer;
  ASSERT_EQ(rows.issue(issuer, directOn(rows.engine, true, 4)), KVIO_STATUS_OK);
  EXPECT_FALSE(issuer.batchEnabled());
  EXPECT_EQ(rows.engine.batchCalls, 1);  // asked once, then never again
  EXPECT_EQ(rows.engine.copy1dCalls, 10);
  EXPECT_EQ(rows.src, rows.dst);
  std::fill(rows.dst.begin(), rows.dst.end(), 0);
  ASSERT_EQ(rows.issue(issuer, directOn(rows.engine, true, 4)), KVIO_STATUS_OK);
  EXPECT_EQ(rows.engine.batchCalls, 1);
  EXPECT_EQ(rows.src, rows.dst);
}

TEST(CudaDirectCopies, NoBatchEntryPointUsesSingleCopies) {
  Rows rows(5, 8);
  CopyIssuer issuer;
  ASSERT_EQ(rows.issue(issuer, directOn(rows.engine, false, 4)), KVIO_STATUS_OK);
  EXPECT_EQ(rows.engine.copy1dCalls, 5);
  EXPECT_EQ(rows.src, rows.dst);
}

TEST(CudaDirectCopies, FailuresNameTheCallAndTheCopy) {
  Rows rows(6, 16);
  rows.engine.batchResult = 700;
  CopyIssuer issuer;
  EXPECT_EQ(rows.issue(issuer, directOn(rows.engine, true, 4)), KVIO_STATUS_BACKEND_ERROR);
  EXPECT_NE(std::string(kvio_last_error()).find("cuMemcpyBatchAsync failed: fake error 700"),
            std::string::npos)
      << kvio_last_error();
  EXPECT_NE(std::string(kvio_last_error()).find("failIndex 2: that copy: 16 bytes from 0x"),
            std::string::npos)
      << kvio_last_error();
  Rows single(6, 16);
  single.engine.failCopy1dAt = 3;
  single.engine.failCode = 1;
  CopyIssuer singleIssuer;
  EXPECT_EQ(single.issue(singleIssuer, directOn(single.engine, false, 4)),
            KVIO_STATUS_BACKEND_ERROR);
  EXPECT_NE(std::string(kvio_last_error())
                .find("cudaMemcpyAsync failed: fake cudaErrorInvalidValue: copy 3 of 6"),
            std::string::npos)
      << kvio_last_error();
  // A 2-D copy the engine refuses: the call, the rows and the pitches.
  std::vector<uint8_t> a(4096), b(4096);
  FakeCopyEngine engine;
  engine.addAllocation(a.data(), a.size());
  engine.addAllocation(b.data(), b.size());
  engine.failCopy2dAt = 0;
  const uint64_t src = reinterpret_cast<uint64_t>(a.data());
  const uint64_t dst = reinterpret_cast<uint64_t>(b.data());
  kvio::engine::IssueOptions options;
  options.direction = kvio::cuda::directionName(KVIO_MEMORY_HOST_PINNED, KVIO_MEMORY_CUDA_DEVICE);
  EXPECT_EQ(CopyIssuer().issue(directOn(engine), {{src, dst, 1024, 4, 1024, 1024}},
                               std::vector<Region>{{src, 4096}}, std::vector<Region>{{dst, 4096}},
                               options),
            KVIO_STATUS_BACKEND_ERROR);
  EXPECT_NE(std::string(kvio_last_error())
                .find("cudaMemcpy2DAsync failed: fake error 700: copy 0 of 1 (plan copy 0 of 1), "
                      "host to device, 4 rows of 1024 bytes, pitches dst 1024 src 1024"),
            std::string::npos)
      << kvio_last_error();
}

/// A source and a destination buffer (canary-filled destination) and a plan of `n` 2-D copies
/// of `height` rows of 16 bytes, pitches 32 (source) and 48 (destination), starting at
/// k * srcStep / k * dstStep: a constant step that is a whole number of rows, so the copies nest
/// into one 3-D copy. `expected` is the destination after the plan, replayed row by row.
struct Blocks {
  Blocks(size_t n, uint64_t height, uint64_t srcStep = 128, uint64_t dstStep = 192) {
    src.assign(n * srcStep + 64, 0);
    dst.assign(n * dstStep + 64, kCanary);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 13 + 5);
    expected = dst;
    for (size_t k = 0; k < n; ++k) {
      plan.push_back({reinterpret_cast<uint64_t>(src.data() + k * srcStep),
                      reinterpret_cast<uint64_t>(dst.data() + k * dstStep), 16, height, 32, 48});
      for (uint64_t r = 0; r < height; ++r) {
        std::memcpy(expected.data() + k * dstStep + r * 48, src.data() + k * srcStep + r * 32, 16);
      }
    }
  }
  /// Issues the plan with the destination split into allocations at `dstCuts` (byte offsets).
  kvio_status issue(CopyIssuer& issuer, const EngineOps& ops, std::vector<size_t> dstCuts = {}) {
    std::vector<Region> dstRegions;
    dstCuts.insert(dstCuts.begin(), 0);
    dstCuts.push_back(dst.size());
    std::vector<Buffer> allocations = {{reinterpret_cast<uint64_t>(src.data()), src.size()}};
    for (size_t i = 0; i + 1 < dstCuts.size(); ++i) {
      const Region r{reinterpret_cast<uint64_t>(dst.data() + dstCuts[i]),
                     dstCuts[i + 1] - dstCuts[i]};
      dstRegions.push_back(r);
      allocations.push_back({r.address, r.bytes});
    }
    engine.setAllocations(allocations);
    return issuer.issue(ops, plan,
                        std::vector<Region>{{reinterpret_cast<uint64_t>(src.data()), src.size()}},
                        dstRegions, {});
  }
  std::vector<uint8_t> src, dst, expected;
  std::vector<kvio_copy2d> plan;
  FakeCopyEngine engine;
};

EngineOps directWith3d(FakeCopyEngine& engine) {
  return engine.ops(kvio::cuda::directEngine(), true, true);
}

TEST(CudaDirectCopies, NestedStridesBecomeOne3dCopy) {
  Blocks blocks(4, 3);
  CopyIssuer issuer;
  ASSERT_EQ(blocks.issue(issuer, directWith3d(blocks.engine)), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(blocks.engine.refused, 0) << blocks.engine.lastRefusal;
  EXPECT_EQ(blocks.engine.batch3dCalls, 1);
  EXPECT_EQ(blocks.engine.batch3dCopies, 1);  // 4 slices of 3 rows
  EXPECT_EQ(blocks.engine.nested3dCopies, 1);
  EXPECT_EQ(blocks.engine.copy2dCalls, 0);
  EXPECT_EQ(issuer.lastCalls().batch3d, 1u);
  EXPECT_EQ(issuer.lastCalls().total(), 1u);
  EXPECT_EQ(blocks.dst, blocks.expected);
}

// Slices whose rows would overlap the next slice (step below height rows) or a step that is not
// a whole number of rows stay 2-D copies (in one batch).
TEST(CudaDirectCopies, StepsThatDoNotNestStay2d) {
  for (uint64_t srcStep : {64, 120}) {  // 2 rows < height 3; 120 is not a multiple of 32
    Blocks blocks(4, 3, srcStep, 192);
    CopyIssuer issuer;
    ASSERT_EQ(blocks.issue(issuer, directWith3d(blocks.engine)), KVIO_STATUS_OK);
    EXPECT_EQ(blocks.engine.refused, 0) << blocks.engine.lastRefusal;
    EXPECT_EQ(blocks.engine.nested3dCopies, 0) << srcStep;
    EXPECT_EQ(blocks.engine.batch3dCopies, 4) << srcStep;
    EXPECT_EQ(blocks.engine.batch3dCalls, 1) << srcStep;
    EXPECT_EQ(blocks.dst, blocks.expected);
  }
}

// A 3-D copy never spans two allocations: with the destination cut between slices 1 and 2,
// two 3-D copies of two slices each.
TEST(CudaDirectCopies, NestingStopsAtAllocationBoundaries) {
  Blocks blocks(4, 3);
  CopyIssuer issuer;
  ASSERT_EQ(blocks.issue(issuer, directWith3d(blocks.engine), {2 * 192}), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(blocks.engine.refused, 0) << blocks.engine.lastRefusal;
  EXPECT_EQ(blocks.engine.batch3dCopies, 2);
  EXPECT_EQ(blocks.engine.nested3dCopies, 2);
  EXPECT_EQ(blocks.dst, blocks.expected);
}

// Every 1-D copy of a transfer goes into as few batches as maxBatch allows, gathered across
// the 2-D copies between them; the 2-D copies go to one 3-D batch, or one 2-D call each.
TEST(CudaDirectCopies, OneDimensionalCopiesAreGatheredAcrossTwoDimensionalOnes) {
  for (bool with3d : {true, false}) {
    Blocks blocks(9, 2, 160, 240);  // steps of 5 rows: no nesting once 1-D copies interleave
    std::vector<kvio_copy2d> plan;
    for (size_t k = 0; k < blocks.plan.size(); ++k) {
      plan.push_back(blocks.plan[k]);
      kvio_copy2d row = blocks.plan[k];  // a 1-D copy of the row after the block's two rows
      row.src += 64;
      row.dst += 96;
      row.height = 1;
      row.src_pitch = row.dst_pitch = row.width;
      plan.push_back(row);
      std::memcpy(
          reinterpret_cast<void*>(blocks.expected.data() +
                                  (row.dst - reinterpret_cast<uint64_t>(blocks.dst.data()))),
          reinterpret_cast<const void*>(row.src), row.width);
    }
    blocks.plan = plan;
    CopyIssuer issuer;
    const EngineOps ops = blocks.engine.ops(kvio::cuda::directEngine(), true, with3d);
    ASSERT_EQ(blocks.issue(issuer, ops), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(blocks.engine.refused, 0) << blocks.engine.lastRefusal;
    EXPECT_EQ(blocks.engine.batchCalls, 1);
    EXPECT_EQ(blocks.engine.batchedCopies, 9);
    EXPECT_EQ(blocks.engine.batch3dCalls, with3d ? 1 : 0);
    EXPECT_EQ(blocks.engine.copy2dCalls, with3d ? 0 : 9);
    EXPECT_EQ(issuer.lastCalls().total(), with3d ? 2u : 10u);
    EXPECT_EQ(blocks.dst, blocks.expected);
  }
}

// cudaMemcpy3DBatchAsync answering "not supported": that transfer's 3-D copies go slice by slice
// as 2-D copies, and later transfers neither nest nor ask again.
TEST(CudaDirectCopies, Batch3dNotSupportedFallsBackTo2dCopiesForGood) {
  Blocks blocks(4, 3);
  blocks.engine.batch3dResult = kvio::engine::kEngineNotSupported;
  CopyIssuer issuer;
  for (int64_t round = 1; round <= 2; ++round) {
    std::fill(blocks.dst.begin(), blocks.dst.end(), kCanary);
    ASSERT_EQ(blocks.issue(issuer, directWith3d(blocks.engine)), KVIO_STATUS_OK);
    EXPECT_FALSE(issuer.batch3dEnabled());
    EXPECT_EQ(blocks.engine.batch3dCalls, 1);  // asked once, then never again
    EXPECT_EQ(blocks.engine.copy2dCalls, 4 * round);
    EXPECT_EQ(blocks.dst, blocks.expected);
  }
  // Any other answer is the transfer's error, naming the call and the failing entry.
  Blocks failing(4, 3);
  failing.engine.batch3dResult = 700;
  CopyIssuer failingIssuer;
  EXPECT_EQ(failing.issue(failingIssuer, directWith3d(failing.engine)), KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  for (const char* part :
       {"cudaMemcpy3DBatchAsync failed: fake error 700", "failIndex 0: that copy: 4 x 3 rows"}) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

// kvio_debug_copy_engine_calls counts what the issuers issued.
TEST(CudaDirectCopies, ProcessCallCountsGrowByEachTransfersCalls) {
  int64_t before[4] = {}, after[4] = {};
  ASSERT_EQ(kvio_debug_copy_engine_calls(before), KVIO_STATUS_OK);
  Blocks blocks(9, 2, 160, 240);
  CopyIssuer issuer;
  ASSERT_EQ(blocks.issue(issuer, blocks.engine.ops(kvio::cuda::directEngine(), true, false)),
            KVIO_STATUS_OK);
  ASSERT_EQ(kvio_debug_copy_engine_calls(after), KVIO_STATUS_OK);
  EXPECT_EQ(after[0] - before[0], 0);
  EXPECT_EQ(after[1] - before[1], 9);
  EXPECT_EQ(after[2] - before[2], 0);
  EXPECT_EQ(after[3] - before[3], 0);
  EXPECT_EQ(kvio_debug_copy_engine_calls(nullptr), KVIO_STATUS_INVALID_ARGUMENT);
}

// What kvio_executor_create_cuda makes of its stream argument (kvio.h): 0 is the legacy default
// stream, as cudaStreamLegacy is, not a request for kvio's own stream (KVIO_CUDA_OWN_STREAM); the
// direct backend's batch copies take only created streams.
// KVIO_DIRECT_STREAMS: unset or empty is one stream; 1 to 8; nothing else.
TEST(CudaDirectStreams, TheVariableTakesOneToEight) {
  int32_t streams = 0;
  EXPECT_TRUE(kvio::cuda::parseDirectStreams(nullptr, &streams));
  EXPECT_EQ(streams, 1);
  EXPECT_TRUE(kvio::cuda::parseDirectStreams("", &streams));
  EXPECT_EQ(streams, 1);
  for (int32_t n = 1; n <= 8; ++n) {
    const std::string text = std::to_string(n);
    EXPECT_TRUE(kvio::cuda::parseDirectStreams(text.c_str(), &streams)) << text;
    EXPECT_EQ(streams, n);
  }
  for (const char* bad : {"0", "9", "10", "-1", "+2", " 2", "2 ", "2x", "x", "08"}) {
    streams = 77;
    EXPECT_FALSE(kvio::cuda::parseDirectStreams(bad, &streams)) << bad;
    EXPECT_EQ(streams, 77) << bad;
  }
}

// dealPlan cuts a plan into consecutive groups, in plan order, every group with a copy, at most
// the streams asked, no more than the plan's copies / 4 and bytes / 256 KiB allow, and each
// group's bytes within one copy of an equal share; checked on random plans.
TEST(CudaDirectStreams, PlansAreDealtInOrderByBytes) {
  using kvio::cuda::dealPlan;
  using kvio::cuda::kMaxDirectStreams;
  std::mt19937_64 rng(61);
  for (int iteration = 0; iteration < 4000; ++iteration) {
    std::vector<kvio_copy2d> plan(rng() % 70);
    uint64_t total = 0, widest = 0;
    for (kvio_copy2d& c : plan) {
      c = kvio_copy2d{};
      c.width = 1 + rng() % (rng() % 2 == 0 ? (256u << 10) : 4096u);
      c.height = 1 + rng() % 4;
      c.src_pitch = c.dst_pitch = c.width;
      total += c.width * c.height;
      widest = std::max<uint64_t>(widest, c.width * c.height);
    }
    const int32_t streams = 1 + static_cast<int32_t>(rng() % kMaxDirectStreams);
    size_t ends[kMaxDirectStreams] = {};
    const size_t groups = dealPlan(plan, streams, ends);
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + std::to_string(plan.size()) +
                 " copies, " + std::to_string(total) + " bytes, " + std::to_string(streams) +
                 " streams");
    const size_t allowed = std::min(
        {static_cast<size_t>(streams), plan.size() / 4, static_cast<size_t>(total / (256u << 10))});
    ASSERT_EQ(groups, std::max<size_t>(1, allowed));
    ASSERT_EQ(ends[groups - 1], plan.size());
    size_t begin = 0;
    for (size_t g = 0; g < groups; ++g) {
      if (groups > 1) {
        ASSERT_GT(ends[g], begin) << "group " << g << " is empty";
      }
      uint64_t bytes = 0;
      for (size_t i = begin; i < ends[g]; ++i) bytes += plan[i].width * plan[i].height;
      if (groups > 1) {
        const uint64_t share = total / groups;
        EXPECT_LE(bytes, share + 2 * widest) << "group " << g;
        EXPECT_GE(bytes + 2 * widest, share) << "group " << g;
      }
      begin = ends[g];
    }
  }
}

TEST(StreamArgument, ZeroIsTheLegacyDefaultStreamAndTheMarkerIsNoStream) {
  using kvio::cuda::classifyStream;
  using kvio::cuda::StreamArgument;
  EXPECT_EQ(classifyStream(KVIO_CUDA_OWN_STREAM), StreamArgument::kOwnMarker);
  EXPECT_EQ(classifyStream(0), StreamArgument::kLegacyDefault);
  EXPECT_EQ(classifyStream(0x1), StreamArgument::kLegacyDefault);
  EXPECT_EQ(classifyStream(0x2), StreamArgument::kPerThread);
  EXPECT_EQ(classifyStream(0x7f3a12345600ull), StreamArgument::kHandle);
  EXPECT_EQ(classifyStream(0x3), StreamArgument::kHandle);
}

}  // namespace
}  // namespace kvio_test
