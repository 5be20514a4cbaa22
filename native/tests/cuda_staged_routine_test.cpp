// Tests of the 'staged' io backend's data path on the CPU (native/src/cuda/staged_routine.cuh):
// plans of random layout pairs (from kvio_plan) cut into chunks for staging buffers from the
// smallest allowed to larger than the transfer, then run as the executor runs them: per chunk,
// the segment table written to the head of a canary-filled staging buffer, every thread of the
// gather/scatter launch replayed (threads write disjoint bytes, so any order gives the device's
// result) and the host runs issued through the shared copy-engine issuer on the fake copy engine
// (which refuses a copy spanning two allocations, as a real one does). Whole destinations
// (canary-filled) are compared with the oracle's replay, sources must be unchanged. Also: each
// chunk fits its staging buffer, host runs merge where host addresses abut (one copy-engine copy
// per contiguous host block) and never across chunks, and rows wider than the staging buffer are
// cut into pieces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "cuda/direct_copies.hpp"
#include "cuda/staged_routine.cuh"
#include "engine/copy_engine.hpp"
#include "fake_copy_engine.hpp"
#include "kvio/kvio.h"
#include "oracle.hpp"
#include "plan_support.hpp"

namespace kvio_test {
namespace {

using kvio::cuda::StagedPlan;
using kvio::cuda::StagedSegment;

/// Every chunk fits the staging buffer; its segments tile its data densely in order, its runs
/// cover the same bytes; the plan's bytes are all there.
void checkChunks(const StagedPlan& p, uint64_t stagingBytes, uint64_t planBytes) {
  EXPECT_EQ(p.bytes, planBytes);
  uint64_t total = 0;
  size_t nextSegment = 0, nextRun = 0;
  for (const kvio::cuda::StagedChunk& c : p.chunks) {
    EXPECT_GT(c.bytes, 0u);
    EXPECT_LE(kvio::cuda::stagedDataOffset(c.segments) + c.bytes, stagingBytes);
    EXPECT_EQ(c.firstSegment, nextSegment);
    EXPECT_EQ(c.firstRun, nextRun);
    uint64_t at = 0;
    for (size_t s = c.firstSegment; s < c.firstSegment + c.segments; ++s) {
      const StagedSegment& g = p.segments[s];
      EXPECT_EQ(g.staging, at);
      EXPECT_LE(static_cast<uint64_t>(g.width) * g.height, kvio::cuda::kStagedSegmentBytes);
      at += static_cast<uint64_t>(g.width) * g.height;
    }
    EXPECT_EQ(at, c.bytes);
    at = 0;
    for (size_t r = c.firstRun; r < c.firstRun + c.runs; ++r) {
      EXPECT_EQ(p.runs[r].staging, at);
      at += p.runs[r].bytes;
      // Runs that abut on the host were merged.
      if (r > c.firstRun) {
        EXPECT_NE(p.runs[r - 1].host + p.runs[r - 1].bytes, p.runs[r].host);
      }
    }
    EXPECT_EQ(at, c.bytes);
    nextSegment += c.segments;
    nextRun += c.runs;
    total += c.bytes;
  }
  EXPECT_EQ(nextSegment, p.segments.size());
  EXPECT_EQ(nextRun, p.runs.size());
  EXPECT_EQ(total, planBytes);
}

uint64_t bytesOf(const std::vector<kvio_copy2d>& plan) {
  uint64_t bytes = 0;
  for (const kvio_copy2d& c : plan) bytes += c.width * c.height;
  return bytes;
}

/// Runs a staged plan as the executor does, on `staging` (its size is the staging buffer's).
/// hostBuffers: the host pool's regions (where the copy engine cuts).
void runStaged(const StagedPlan& p, bool backup, std::vector<uint8_t>* staging,
               const std::vector<Buffer>& hostBuffers, FakeCopyEngine* engine, int32_t ctas,
               int32_t threads) {
  const uint64_t base = reinterpret_cast<uint64_t>(staging->data());
  const std::vector<kvio::engine::Region> stagingRegion{{base, staging->size()}};
  const std::vector<kvio::engine::Region> host = memoryRegions(hostBuffers);
  kvio::engine::CopyIssuer issuer;
  const kvio::engine::EngineOps ops = engine->ops(kvio::cuda::directEngine(), true);
  // The executor's pinned slot: every chunk's table, each chunk's uploaded from its offset.
  const std::vector<uint8_t> slot(
      reinterpret_cast<const uint8_t*>(p.segments.data()),
      reinterpret_cast<const uint8_t*>(p.segments.data()) + kvio::cuda::stagedTableBytes(p));
  for (const kvio::cuda::StagedChunk& c : p.chunks) {
    ASSERT_LE(kvio::cuda::stagedTableOffset(c) + c.segments * sizeof(StagedSegment), slot.size());
    std::memcpy(staging->data(), slot.data() + kvio::cuda::stagedTableOffset(c),
                c.segments * sizeof(StagedSegment));
    const kvio::cuda::StagedLaunch launch =
        kvio::cuda::stagedChunkLaunch(c, staging->data(), backup);
    std::vector<kvio_copy2d> copies;
    kvio::cuda::stagedChunkCopies(p, c, launch.data, backup, &copies);
    const int32_t blocks = static_cast<int32_t>(std::min<uint64_t>(c.segments, ctas));
    auto replay = [&] {
      for (int32_t b = 0; b < blocks; ++b)
        for (int32_t t = 0; t < threads; ++t)
          kvio::cuda::runStagedThread(launch, b, blocks, t, threads);
    };
    if (backup) {
      replay();
      ASSERT_EQ(issuer.issue(ops, copies, stagingRegion, host, {}), KVIO_STATUS_OK)
          << kvio_last_error() << "; " << engine->lastRefusal;
    } else {
      ASSERT_EQ(issuer.issue(ops, copies, host, stagingRegion, {}), KVIO_STATUS_OK)
          << kvio_last_error() << "; " << engine->lastRefusal;
      replay();
    }
  }
}

// Device pools layer_first (what a GPU holds), host pools of every layout; both directions,
// random index sets (sorted runs, shuffled, broadcast sources on loads), layer shards, staging
// buffers from 4 KiB (many chunks, rows cut) to larger than the transfer (one chunk).
TEST(CudaStagedRoutine, ChunkedTransfersMatchOracle) {
  std::mt19937_64 rng(0x57a6ed);
  StagedPlan staged;  // reused across transfers, as the executor reuses its plans
  for (int iteration = 0; iteration < 160; ++iteration) {
    const int32_t kind = rng() % 2 == 0 ? KVIO_KIND_MHA : KVIO_KIND_MLA;
    const int32_t hostLayout = static_cast<int32_t>(rng() % (kind == KVIO_KIND_MHA ? 4 : 3));
    const int64_t ps = std::vector<int64_t>{1, 2, 4, 8}[rng() % 4];
    const int64_t H = kind == KVIO_KIND_MHA ? 1 + static_cast<int64_t>(rng() % 3) : 1;
    const int64_t hb = std::vector<int64_t>{8, 24, 576, 656, 5000}[rng() % 5];
    const int64_t deviceL = 1 + static_cast<int64_t>(rng() % 3);
    const int64_t hostL = 1 + static_cast<int64_t>(rng() % 3);
    const bool backup = rng() % 2 == 0;
    const Geometry devG =
        randomPoolGeometry(rng, kind, deviceL, ps, H, hb, KVIO_LAYOUT_LAYER_FIRST);
    const Geometry hostG = randomPoolGeometry(rng, kind, hostL, ps, H, hb, hostLayout);
    const Geometry& sg = backup ? devG : hostG;
    const Geometry& dg = backup ? hostG : devG;
    const int64_t layers = 1 + static_cast<int64_t>(rng() % std::min(deviceL, hostL));
    const int64_t srcLayer = static_cast<int64_t>(rng() % (sg.L - layers + 1));
    const int64_t dstLayer = static_cast<int64_t>(rng() % (dg.L - layers + 1));
    std::vector<int64_t> dstIdx = distinct(rng, dg.S(), 1 + static_cast<int64_t>(rng() % dg.S()));
    if (rng() % 2 == 0) std::sort(dstIdx.begin(), dstIdx.end());
    std::vector<int64_t> srcIdx;
    const bool broadcast = !backup && rng() % 5 == 0;
    const int64_t start = static_cast<int64_t>(rng() % sg.S());
    for (size_t i = 0; i < dstIdx.size(); ++i) {
      srcIdx.push_back(broadcast ? start : (start + static_cast<int64_t>(i)) % sg.S());
    }
    const uint64_t stagingBytes =
        std::vector<uint64_t>{4096, 4096 + 40, 12288, 65536, 1u << 20}[rng() % 5];
    const int32_t threads = std::vector<int32_t>{32, 64, 256}[rng() % 3];
    const int32_t ctas = 1 + static_cast<int32_t>(rng() % 8);
    SCOPED_TRACE("iteration " + std::to_string(iteration) + ": " + sg.describe() + " -> " +
                 dg.describe() + ", staging " + std::to_string(stagingBytes) + " bytes, " +
                 std::to_string(ctas) + " x " + std::to_string(threads));
    TestPool src(sg), dst(dg);
    SeededPair pools(src, dst, rng);
    const std::vector<kvio_copy2d> plan =
        planOf(src, dst, srcIdx, dstIdx, srcLayer, dstLayer, layers);
    kvio::cuda::buildStagedPlan(plan, backup, stagingBytes, &staged);
    checkChunks(staged, stagingBytes, bytesOf(plan));
    std::vector<uint8_t> staging(stagingBytes, kCanary);
    FakeCopyEngine engine;
    std::vector<Buffer> allocations = regionsOf((backup ? dst : src).pool().handle());
    allocations.push_back({reinterpret_cast<uint64_t>(staging.data()), staging.size()});
    engine.setAllocations(allocations);
    runStaged(staged, backup, &staging, regionsOf((backup ? dst : src).pool().handle()), &engine,
              ctas, threads);
    pools.expect(srcIdx, dstIdx, srcLayer, dstLayer, layers);
    ASSERT_TRUE(pools.check());
    // Kept for the next transfer only while small (the executor keeps at most 8 MiB a plan).
    const uint64_t keep = iteration % 2 == 0 ? UINT64_MAX : 1024;
    const uint64_t held = kvio::cuda::stagedPlanStorageBytes(staged);
    kvio::cuda::recycleStagedPlan(&staged, keep);
    EXPECT_EQ(kvio::cuda::stagedPlanStorageBytes(staged), held <= keep ? held : 0u);
  }
}

// A backup of whole pages into page_first_direct: each page (all its layers) is one contiguous
// host block per component, so consecutive pages make one host run per component (K, V), and
// the copy engine gets two copies in all however small the rows and however the planner
// ordered its copies.
TEST(CudaStagedRoutine, WholePagesIntoPageFirstDirectAreOneRunPerChunk) {
  std::mt19937_64 rng(3);
  const Geometry devG =
      randomPoolGeometry(rng, KVIO_KIND_MHA, 4, 8, 2, 64, KVIO_LAYOUT_LAYER_FIRST);
  Geometry hostG = devG;
  hostG.layout = KVIO_LAYOUT_PAGE_FIRST_DIRECT;
  hostG.form = Form::Single;
  TestPool device(devG), host(hostG);
  const std::vector<int64_t> devIdx = expandPages({5, 1, 3}, 8);   // scattered on the device
  const std::vector<int64_t> hostIdx = expandPages({0, 1, 2}, 8);  // pages 0-2 on the host
  const std::vector<kvio_copy2d> plan = planOf(device, host, devIdx, hostIdx, 0, 0, 4);
  const uint64_t bytes = bytesOf(plan);  // 3 pages x 4 layers x 2 components x 8 x 128 bytes
  ASSERT_EQ(bytes, 3u * 4 * 2 * 8 * 128);
  StagedPlan staged;
  kvio::cuda::buildStagedPlan(plan, true, 1u << 20, &staged);
  checkChunks(staged, 1u << 20, bytes);
  ASSERT_EQ(staged.chunks.size(), 1u);
  ASSERT_EQ(staged.runs.size(), 2u);
  // K of pages 0-2, then V of pages 0-2 (the components' areas in the host block).
  EXPECT_EQ(staged.runs[0].host, reinterpret_cast<uint64_t>(host.region(0)));
  EXPECT_EQ(staged.runs[0].bytes, bytes / 2);
  EXPECT_EQ(staged.runs[1].bytes, bytes / 2);
  // With 4 KiB of staging: several chunks, at most two runs each, none crossing a chunk.
  kvio::cuda::buildStagedPlan(plan, true, 4096, &staged);
  checkChunks(staged, 4096, bytes);
  EXPECT_GT(staged.chunks.size(), 4u);
  EXPECT_LE(staged.runs.size(), staged.chunks.size() + 1);
}

// Rows wider than the staging buffer (and than a segment) are cut into pieces of a row; the
// bytes still land where they belong.
TEST(CudaStagedRoutine, RowsWiderThanTheStagingBufferAreCut) {
  std::mt19937_64 rng(9);
  const uint64_t width = 100000, height = 3, devicePitch = 131072;
  std::vector<uint8_t> device(devicePitch * height), host(width * height + 64, kCanary);
  fillRandom(device.data(), device.size(), rng);
  const uint64_t hostAt = reinterpret_cast<uint64_t>(host.data()) + 7;  // unaligned
  const std::vector<kvio_copy2d> plan = {
      {reinterpret_cast<uint64_t>(device.data()), hostAt, width, height, devicePitch, width}};
  for (uint64_t stagingBytes : {4096u, 65536u + 300u, 1u << 20}) {
    SCOPED_TRACE("staging " + std::to_string(stagingBytes));
    std::fill(host.begin(), host.end(), kCanary);
    StagedPlan staged;
    kvio::cuda::buildStagedPlan(plan, true, stagingBytes, &staged);
    checkChunks(staged, stagingBytes, width * height);
    for (const StagedSegment& g : staged.segments) EXPECT_EQ(g.height, 1u);
    std::vector<uint8_t> staging(stagingBytes, kCanary);
    FakeCopyEngine engine;
    engine.setAllocations({{reinterpret_cast<uint64_t>(staging.data()), staging.size()},
                           {reinterpret_cast<uint64_t>(host.data()), host.size()}});
    runStaged(staged, true, &staging, {{reinterpret_cast<uint64_t>(host.data()), host.size()}},
              &engine, 4, 128);
    std::vector<uint8_t> expected(host.size(), kCanary);
    for (uint64_t r = 0; r < height; ++r) {
      std::memcpy(expected.data() + 7 + r * width, device.data() + r * devicePitch, width);
    }
    EXPECT_TRUE(expected == host);
    // Contiguous on the host: one run per chunk.
    EXPECT_EQ(staged.runs.size(), staged.chunks.size());
  }
}

TEST(CudaStagedRoutine, AnEmptyPlanHasNoChunks) {
  StagedPlan staged;
  kvio::cuda::buildStagedPlan({}, true, 4096, &staged);
  EXPECT_TRUE(staged.chunks.empty());
  EXPECT_EQ(staged.bytes, 0u);
}

}  // namespace
}  // namespace kvio_test
