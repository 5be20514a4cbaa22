// Tests of the CUDA copy kernel's per-worker routine (native/src/cuda/copy_routine.cuh) and
// of the kernel executor's staging and launch (kernel_launch.hpp) on the CPU: the header is
// compiled with the host compiler, and every thread of a launch (each worker and lane of the grid
// the executor would launch) is replayed in turn. Lanes write disjoint bytes, so any order gives
// the device's result. Pools are built from the oracle's shapes in buffers placed at odd offsets
// (1, 2, 4, 8, 16 bytes past 16-byte alignment), so the byte heads, narrower words and byte tails
// of copySpan all run; the whole buffers (guard zones included) are compared with the oracle's
// replay.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "core/diagnostics.hpp"
#include "core/layout.hpp"
#include "cuda/copy_routine.cuh"
#include "cuda/kernel_launch.hpp"
#include "oracle.hpp"

namespace kvio_test {
namespace {

using kvio::AffineLayout;
using kvio::cuda::CopyLaunch;
using kvio::cuda::InlineCopyLaunch;

constexpr size_t kAlignGuard = 256;

/// A pool image at a chosen misalignment with the layout bound to its buffers.
struct SimPool {
  Geometry g;
  Image image;
  std::vector<uint64_t> table;
  AffineLayout layout;

  SimPool(const Geometry& geometry, size_t misalign) : g(geometry) {
    image.guard = kAlignGuard + misalign;
    const size_t bytes = static_cast<size_t>(g.regionBytes());
    image.buffers.assign(static_cast<size_t>(g.regions()),
                         std::vector<uint8_t>(bytes + 2 * kAlignGuard + 16, kGuardByte));
    kvio::LayoutStrides strides;
    const kvio_pool_spec spec{g.kind, g.layout, g.L, g.P, g.ps, g.H, g.hb};
    EXPECT_EQ(kvio::layoutStrides(spec, &strides), KVIO_STATUS_OK);
    table.resize(static_cast<size_t>(g.C() * g.L));
    for (int64_t c = 0; c < g.C(); ++c) {
      for (int64_t l = 0; l < g.L; ++l) {
        uint64_t base = 0;
        switch (g.form) {
          case Form::PerLayer: base = region(c * g.L + l); break;
          case Form::PerComponent: base = region(c) + l * strides.strideL; break;
          default: base = region(0) + c * strides.componentBytes + l * strides.strideL; break;
        }
        table[static_cast<size_t>(c * g.L + l)] = base;
      }
    }
    layout.components = static_cast<int32_t>(g.C());
    layout.numLayers = g.L;
    layout.pageSize = g.ps;
    layout.tokens = g.S();
    layout.headNum = g.H;
    layout.headBytes = g.hb;
    layout.strideP = strides.strideP;
    layout.strideS = strides.strideS;
    layout.strideH = strides.strideH;
    layout.layerBase = table.data();
  }
  uint64_t region(int64_t r) {
    return reinterpret_cast<uint64_t>(image.buffers[static_cast<size_t>(r)].data() + image.guard);
  }
  void fillRandom(std::mt19937_64& rng) {
    for (int64_t r = 0; r < g.regions(); ++r) {
      kvio_test::fillRandom(reinterpret_cast<uint8_t*>(region(r)),
                            static_cast<size_t>(g.regionBytes()), rng);
    }
  }
};

/// Replays a launch of `blocks` x `threads` threads, thread by thread.
void simulate(const CopyLaunch& launch, int32_t blocks, int32_t threads) {
  const int64_t total = static_cast<int64_t>(blocks) * threads;
  for (int64_t t = 0; t < total; ++t) kvio::cuda::runThread(launch, t, total);
}

/// Which routine a case runs: the one chooseScheme picks, or the per-row one forced (every
/// aligned launch is also run per row, so both routines see every layout pair).
enum class Routine { Chosen, PerRow };

struct Case {
  Geometry src, dst;
  size_t srcMisalign, dstMisalign;
  int32_t ctaBudget, warpsPerCta;
  Routine routine = Routine::Chosen;
  int32_t expectWord = -1;  // the word chooseScheme must pick (-1: not checked)
  int32_t chunks = 0;       // tiled routine's words per lane (0: tileChunksFor the CTA size)
};

void runCase(const Case& k, uint64_t seed) {
  SCOPED_TRACE(k.src.describe() + " -> " + k.dst.describe() + " misalign " +
               std::to_string(k.srcMisalign) + "/" + std::to_string(k.dstMisalign) + " ctas " +
               std::to_string(k.ctaBudget) + " warps " + std::to_string(k.warpsPerCta));
  std::mt19937_64 rng(seed);
  SimPool src(k.src, k.srcMisalign);
  SimPool dst(k.dst, k.dstMisalign);
  src.fillRandom(rng);
  const int64_t count = std::min(k.src.S(), k.dst.S());
  const int64_t n = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(count));
  const std::vector<int64_t> srcIdx = distinct(rng, k.src.S(), n);
  const std::vector<int64_t> dstIdx = distinct(rng, k.dst.S(), n);
  const int64_t layers =
      1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min(k.src.L, k.dst.L)));
  const int64_t srcLayer =
      static_cast<int64_t>(rng() % static_cast<uint64_t>(k.src.L - layers + 1));
  const int64_t dstLayer =
      static_cast<int64_t>(rng() % static_cast<uint64_t>(k.dst.L - layers + 1));

  Image expected = dst.image;
  applyTransfer(k.src, src.image, k.dst, &expected, srcIdx, dstIdx, srcLayer, dstLayer, layers);

  CopyLaunch launch;
  launch.src = src.layout;
  launch.dst = dst.layout;
  launch.srcIndices = srcIdx.data();
  launch.dstIndices = dstIdx.data();
  launch.count = n;
  launch.srcLayerStart = srcLayer;
  launch.dstLayerStart = dstLayer;
  launch.numLayers = layers;
  kvio::cuda::chooseScheme(&launch, src.table.data(), dst.table.data());
  if (k.expectWord >= 0) {
    EXPECT_EQ(launch.wordBytes, k.expectWord);
  }
  if (k.routine == Routine::PerRow) launch.wordBytes = 0;
  const int32_t threads = k.warpsPerCta * 32;
  launch.tileChunks = k.chunks != 0 ? k.chunks : kvio::cuda::tileChunksFor(threads);
  const int32_t blocks = kvio::cuda::launchBlocks(
      kvio::cuda::launchItems(launch), kvio::cuda::launchLanes(launch), threads, k.ctaBudget);
  EXPECT_LE(blocks, k.ctaBudget);
  const Image sourceBefore = src.image;
  simulate(launch, blocks, threads);
  EXPECT_TRUE(sameImage(expected, dst.image, "destination"));
  EXPECT_TRUE(sameImage(sourceBefore, src.image, "source"));
}

Geometry geometry(int32_t kind, int32_t layout, Form form, int64_t L, int64_t P, int64_t ps,
                  int64_t H, int64_t hb) {
  return Geometry{kind, layout, form, L, P, ps, H, hb};
}

TEST(CudaCopyRoutine, CommonWordAndLanes) {
  EXPECT_EQ(kvio::cuda::commonWordBytes(0x1000, 0x2000), 16);
  EXPECT_EQ(kvio::cuda::commonWordBytes(0x1008, 0x2000), 8);
  EXPECT_EQ(kvio::cuda::commonWordBytes(0x1001, 0x2001), 16);
  EXPECT_EQ(kvio::cuda::commonWordBytes(0x1004, 0x2000), 4);
  EXPECT_EQ(kvio::cuda::commonWordBytes(0x1002, 0x2000), 2);
  EXPECT_EQ(kvio::cuda::commonWordBytes(0x1001, 0x2000), 1);
  EXPECT_EQ(kvio::cuda::lanesForUnit(8), 4);
  EXPECT_EQ(kvio::cuda::lanesForUnit(576), 32);
  EXPECT_EQ(kvio::cuda::lanesForUnit(256), 16);
  EXPECT_EQ(kvio::cuda::launchBlocks(1, 4, 512, 4), 1);
  EXPECT_EQ(kvio::cuda::launchBlocks(17, 32, 512, 4), 2);  // 16 warps per CTA
  EXPECT_EQ(kvio::cuda::tileChunksFor(512), 8);
  EXPECT_EQ(kvio::cuda::tileChunksFor(544), 4);
  EXPECT_EQ(kvio::cuda::launchBlocks(1 << 20, 32, 512, 3), 3);
}

// Every span size from 0 to 300 bytes at every pair of alignments 0..15, 1 to 32 lanes: each
// byte written once, from the right place, nothing outside the span.
// The host build of a word access stops the process where a GPU would fault (a word at an
// address not a multiple of its size), so the tests here and the fake runtime's kernels, which
// copy with memcpy on the host, cannot pass with an access a GPU refuses.
TEST(CudaCopyRoutineDeathTest, AMisalignedWordAccessStopsTheHostBuild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  alignas(16) uint8_t buffer[64] = {};
  EXPECT_DEATH(kvio::cuda::loadWord<16>(buffer + 8), "16-byte load at .* not 16-byte aligned");
  EXPECT_DEATH(kvio::cuda::storeWord<8>(buffer + 4, 0), "8-byte store at .* not 8-byte aligned");
  EXPECT_DEATH(kvio::cuda::loadWord<4>(buffer + 2), "not 4-byte aligned");
  EXPECT_DEATH(kvio::cuda::storeWord<2>(buffer + 1, 0), "not 2-byte aligned");
  // Aligned accesses copy.
  kvio::cuda::storeWord<8>(buffer + 8, kvio::cuda::loadWord<8>(buffer + 16));
  EXPECT_EQ(kvio::cuda::loadWord<4>(buffer + 12), 0u);
}

TEST(CudaCopyRoutine, SpanEverySizeAndAlignment) {
  std::vector<uint8_t> src(512 + 64), dst(512 + 64);
  std::mt19937_64 rng(7);
  fillRandom(src.data(), src.size(), rng);
  for (int32_t lanes : {1, 4, 8, 32}) {
    for (size_t sa = 0; sa < 16; ++sa) {
      for (size_t da = 0; da < 16; da += (lanes == 32 ? 1 : 5)) {
        for (uint64_t n = 0; n <= 300; n += (n < 40 ? 1 : 13)) {
          const size_t s0 = 32 + sa, d0 = 32 + da;  // 32-byte aligned vectors + offset
          std::fill(dst.begin(), dst.end(), kCanary);
          uint8_t* d = reinterpret_cast<uint8_t*>(
              (reinterpret_cast<uintptr_t>(dst.data()) + 15) / 16 * 16 + d0 - 32 + 16);
          const uint8_t* s = reinterpret_cast<const uint8_t*>(
              (reinterpret_cast<uintptr_t>(src.data()) + 15) / 16 * 16 + s0 - 32 + 16);
          for (int32_t lane = 0; lane < lanes; ++lane) kvio::cuda::copySpan(lane, lanes, d, s, n);
          ASSERT_EQ(std::memcmp(d, s, n), 0) << "n=" << n << " sa=" << sa << " da=" << da;
          for (uint8_t* p = dst.data(); p < d; ++p) ASSERT_EQ(*p, kCanary);
          for (uint8_t* p = d + n; p < dst.data() + dst.size(); ++p) ASSERT_EQ(*p, kCanary);
        }
      }
    }
  }
}

// Row sizes of real models and odd ones: 8 (tiny), 576 (MLA fp8), 656 (NSA packed), 2 KiB,
// 3 x 5 bytes (odd heads), across every layout pair and memory form, misaligned bases.
TEST(CudaCopyRoutine, LaunchMatchesOracleAcrossLayouts) {
  const int32_t layouts[] = {KVIO_LAYOUT_LAYER_FIRST, KVIO_LAYOUT_PAGE_FIRST,
                             KVIO_LAYOUT_PAGE_FIRST_DIRECT, KVIO_LAYOUT_PAGE_HEAD};
  struct Row {
    int32_t kind;
    int64_t H, hb;
  } rows[] = {{KVIO_KIND_MHA, 1, 8},   {KVIO_KIND_MLA, 1, 576}, {KVIO_KIND_MLA, 1, 656},
              {KVIO_KIND_MHA, 4, 128}, {KVIO_KIND_MHA, 3, 5},   {KVIO_KIND_MHA, 2, 24}};
  const size_t misaligns[] = {0, 1, 2, 4, 8};
  uint64_t seed = 1;
  for (const Row& r : rows) {
    for (int32_t hostLayout : layouts) {
      if (hostLayout == KVIO_LAYOUT_PAGE_HEAD && r.kind != KVIO_KIND_MHA) continue;
      for (Form deviceForm : {Form::Single, Form::PerComponent, Form::PerLayer}) {
        if (deviceForm == Form::PerComponent && r.kind == KVIO_KIND_MLA) continue;
        const Geometry device =
            geometry(r.kind, KVIO_LAYOUT_LAYER_FIRST, deviceForm, 3, 5, 4, r.H, r.hb);
        const Geometry host = geometry(r.kind, hostLayout, Form::Single, 4, 4, 4, r.H, r.hb);
        const size_t sm = misaligns[seed % 5], dm = misaligns[(seed / 5) % 5];
        const int32_t budget = 1 + static_cast<int32_t>(seed % 4);
        const int32_t warps = seed % 2 ? 1 : 4;
        for (Routine routine : {Routine::Chosen, Routine::PerRow}) {
          runCase({device, host, sm, dm, budget, warps, routine}, seed++);  // backup
          runCase({host, device, dm, sm, budget, warps, routine}, seed++);  // load
        }
      }
    }
  }
}

// Every alignment and length class of the tiled routine's word choice: row sizes from 8 bytes
// (a word per row) through rows spanning several tiles (8 KiB + 16), bases misaligned by
// 0-16 bytes on each side. chooseScheme must pick the widest word dividing the row and both
// bases (16, 8, 4; none below 4, which runs the per-row routine), and the chosen routine and
// the per-row one must both equal the oracle on the whole destination, with the source unchanged.
TEST(CudaCopyRoutine, EveryAlignmentAndLengthClassMatchesOracle) {
  const int64_t rowSizes[] = {8, 12, 16, 24, 40, 64, 100, 256, 520, 2048, 4096 + 16, 8192};
  const size_t misaligns[] = {0, 1, 2, 3, 4, 8, 12, 16};
  uint64_t seed = 500;
  for (int64_t hb : rowSizes) {
    for (size_t sm : misaligns) {
      for (size_t dm : misaligns) {
        if (hb > 256 && (sm % 4 != 0 || dm % 4 != 0)) continue;  // keep the sweep short
        const Geometry device =
            geometry(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 3, 5, 4, 1, hb);
        const Geometry host =
            geometry(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 4, 4, 1, hb);
        uint64_t bits = static_cast<uint64_t>(hb) | sm | dm | 16;
        const int32_t low = static_cast<int32_t>(bits & (~bits + 1));
        const int32_t word = low >= 4 ? low : 0;
        const int32_t budget = 1 + static_cast<int32_t>(seed % 3);
        const int32_t warps = seed % 2 ? 1 : 3;
        const int32_t chunks = seed % 4 < 2 ? 8 : 4;
        for (Routine routine : {Routine::Chosen, Routine::PerRow}) {
          runCase({device, host, sm, dm, budget, warps, routine, word, chunks}, seed++);  // backup
          runCase({host, device, dm, sm, budget, warps, routine, word, chunks}, seed++);  // load
        }
      }
    }
  }
}

// Rows at a head stride (page_head): the tiled routine's words of split heads land where the
// oracle puts them, at every word width.
TEST(CudaCopyRoutine, SplitHeadsAtEveryWordWidth) {
  uint64_t seed = 900;
  for (int64_t hb : {4, 8, 16, 48}) {
    const Geometry device =
        geometry(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 6, 4, 3, hb);
    const Geometry host =
        geometry(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, Form::Single, 2, 6, 4, 3, hb);
    const int32_t word = hb % 16 == 0 ? 16 : hb % 8 == 0 ? 8 : 4;
    for (int32_t chunks : {4, 8}) {
      runCase({device, host, 0, 0, 2, 2, Routine::Chosen, word, chunks}, seed++);
      runCase({host, device, 0, 0, 2, 2, Routine::Chosen, word, chunks}, seed++);
    }
  }
}

// More pairs than workers: each worker loops over several pairs; one CTA of one warp.
TEST(CudaCopyRoutine, WorkersLoopOverPairs) {
  const Geometry device =
      geometry(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 64, 16, 2, 16);
  const Geometry host =
      geometry(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 64, 16, 2, 16);
  for (uint64_t seed = 100; seed < 104; ++seed) runCase({device, host, 0, 8, 1, 1}, seed);
}

// Device-resident indices: the kernel skips out-of-range pairs, copies the others, and
// reports the first bad position and the number skipped.
TEST(CudaCopyRoutine, DeviceIndicesOutOfRangeAreSkippedAndReported) {
  const Geometry g = geometry(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 4, 4, 1, 32);
  const std::vector<int64_t> srcIdx = {0, 1, 99, 3, -1, 5};
  const std::vector<int64_t> dstIdx = {7, 6, 5, 16, 3, 2};
  const std::vector<int64_t> okSrc = {0, 1, 5}, okDst = {7, 6, 2};
  for (int32_t variant = 0; variant < 7; ++variant) {  // per-row, then tiled at 3 words x 2 K
    const int32_t word = variant == 0 ? 0 : 16 >> ((variant - 1) / 2);
    const int32_t chunks = variant % 2 == 0 ? 4 : 8;
    SCOPED_TRACE("word " + std::to_string(word) + " chunks " + std::to_string(chunks));
    std::mt19937_64 rng(3);
    SimPool src(g, 0), dst(g, 0);
    src.fillRandom(rng);
    Image expected = dst.image;
    applyTransfer(g, src.image, g, &expected, okSrc, okDst, 0, 0, 2);
    unsigned long long bad[2] = {std::numeric_limits<unsigned long long>::max(), 0};
    CopyLaunch launch;
    launch.src = src.layout;
    launch.dst = dst.layout;
    launch.srcIndices = srcIdx.data();
    launch.dstIndices = dstIdx.data();
    launch.count = static_cast<int64_t>(srcIdx.size());
    launch.numLayers = 2;
    launch.lanesPerWorker = 4;
    launch.wordBytes = word;
    launch.tileChunks = chunks;
    launch.checkIndices = 1;
    launch.badPairs = bad;
    simulate(launch, 2, 32);
    EXPECT_TRUE(sameImage(expected, dst.image, "destination"));
    EXPECT_EQ(bad[0], 2u);
    EXPECT_EQ(bad[1], 3u);  // each skipped pair counted once, whatever the routine
  }
}

// The executor's data path: the job staged into a slot buffer (tables, host indices, status),
// the launch built over that buffer as if it were the device copy, the grid replayed. Or, for
// a small job with host indices (inlineParameter), packed into the kernel parameter: the
// launch is read from a copy of the parameter elsewhere (as a launch copies it), the packed
// original overwritten first, so every pointer must have moved with the copy.
void runStagedJob(bool indicesOnDevice, bool inlineParameter, uint64_t seed) {
  const Geometry device =
      geometry(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 3, 8, 4, 2, 72);
  const Geometry host =
      geometry(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, Form::Single, 2, 6, 4, 2, 72);
  std::mt19937_64 rng(seed);
  SimPool src(host, 0), dst(device, 8);
  src.fillRandom(rng);
  std::vector<int64_t> srcIdx = distinct(rng, host.S(), 20);
  std::vector<int64_t> dstIdx = distinct(rng, device.S(), 20);
  Image expected = dst.image;
  applyTransfer(host, src.image, device, &expected, srcIdx, dstIdx, 0, 1, 2);
  if (indicesOnDevice) srcIdx.push_back(host.S());  // one bad pair, skipped and reported
  if (indicesOnDevice) dstIdx.push_back(0);

  struct {  // the fields of kvio::LayoutJob (core/executor.hpp) the launch reads
    AffineLayout src, dst;
    std::vector<uint64_t> srcTable, dstTable;
    const int64_t* srcIndices;
    const int64_t* dstIndices;
    bool indicesOnDevice;
    int64_t count, srcLayerStart, dstLayerStart, numLayers;
  } job;
  job.srcTable = src.table;
  job.dstTable = dst.table;
  job.src = src.layout;
  job.dst = dst.layout;
  job.src.layerBase = nullptr;  // the launch must take the staged tables
  job.dst.layerBase = nullptr;
  job.srcIndices = srcIdx.data();
  job.dstIndices = dstIdx.data();
  job.indicesOnDevice = indicesOnDevice;
  job.count = static_cast<int64_t>(srcIdx.size());
  job.srcLayerStart = 0;
  job.dstLayerStart = 1;
  job.numLayers = 2;
  const kvio::cuda::StagingLayout layout = kvio::cuda::stagingLayout(job);
  EXPECT_EQ(kvio::cuda::fitsInline(job, layout), !indicesOnDevice);  // a few hundred bytes
  std::vector<uint64_t> slot(static_cast<size_t>(layout.total / 8 + 1), 0xEEEEEEEEEEEEEEEEull);
  auto* bytes = reinterpret_cast<uint8_t*>(slot.data());
  auto packed = std::make_unique<InlineCopyLaunch>();
  auto parameter = std::make_unique<InlineCopyLaunch>();
  CopyLaunch launch;
  if (inlineParameter) {
    kvio::cuda::packInlineLaunch(job, layout, packed.get());
    std::memcpy(parameter.get(), packed.get(), sizeof(InlineCopyLaunch));
    std::memset(static_cast<void*>(packed.get()), 0xEE, sizeof(InlineCopyLaunch));
    launch = kvio::cuda::inlineLaunch(*parameter);
    bytes = parameter->staging;  // where the status words are now
  } else {
    kvio::cuda::writeStaging(job, layout, bytes);
    launch = kvio::cuda::makeLaunch(job, layout, bytes);
  }
  if (inlineParameter) {  // before the replay: a pointer left behind reads the overwritten copy
    EXPECT_EQ(launch.badPairs, nullptr);  // parameter space is read-only
    const auto inside = [&](const void* p) {
      const auto at = reinterpret_cast<uintptr_t>(p);
      const auto begin = reinterpret_cast<uintptr_t>(parameter->staging);
      return at >= begin && at < begin + kvio::cuda::kInlineStagingBytes;
    };
    ASSERT_TRUE(inside(launch.src.layerBase) && inside(launch.dst.layerBase) &&
                inside(launch.srcIndices) && inside(launch.dstIndices));
  }
  EXPECT_EQ(launch.lanesPerWorker, 4);  // page_head splits heads: 72-byte units
  EXPECT_EQ(launch.wordBytes, 8);       // 72-byte heads, 8-byte aligned slot
  simulate(launch,
           kvio::cuda::launchBlocks(kvio::cuda::launchItems(launch),
                                    kvio::cuda::launchLanes(launch), 64, 2),
           64);
  EXPECT_TRUE(sameImage(expected, dst.image, "destination"));
  const auto* status = reinterpret_cast<const unsigned long long*>(bytes + layout.statusOffset);
  EXPECT_EQ(status[1], indicesOnDevice ? 1u : 0u);
  EXPECT_EQ(status[0], indicesOnDevice ? 20u : std::numeric_limits<unsigned long long>::max());
  EXPECT_EQ(layout.total, 16 + 8 * (src.table.size() + dst.table.size()) +
                              (indicesOnDevice ? 0 : 16 * srcIdx.size()));
}

TEST(CudaKernelLaunch, StagedHostIndicesMatchOracle) {
  runStagedJob(false, false, 21);
}

TEST(CudaKernelLaunch, StagedDeviceIndicesAreCheckedAndReported) {
  runStagedJob(true, false, 22);
}

TEST(CudaKernelLaunch, HostIndicesInTheKernelParameterMatchOracle) {
  runStagedJob(false, true, 23);
}

// A job goes by value exactly while its staging fits kInlineStagingBytes and its indices are on
// the host: 16 status bytes + 8 per table entry + 16 per index pair.
// Host indices are read again when staged (into a slot or the kernel parameter): the staged copy
// is what the kernel reads, and it is checked against the pools (a caller rewriting its arrays
// during the submit gets OUT_OF_RANGE, not rows outside the pools).
TEST(CudaKernelLaunch, StagedHostIndicesOutsideThePoolsAreFound) {
  const Geometry g = geometry(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 1, 2, 4, 1, 16);
  SimPool pool(g, 0);
  struct {
    AffineLayout src, dst;
    std::vector<uint64_t> srcTable, dstTable;
    const int64_t* srcIndices;
    const int64_t* dstIndices;
    bool indicesOnDevice;
    int64_t count, srcLayerStart = 0, dstLayerStart = 0, numLayers = 1;
  } job;
  job.src = job.dst = pool.layout;
  job.srcTable = job.dstTable = pool.table;
  for (const int64_t bad : {int64_t{-1}, g.S(), int64_t{1} << 40}) {
    for (int side = 0; side < 2; ++side) {
      std::vector<int64_t> src = {0, 1, 2, 3, 4}, dst = {7, 6, 5, 4, 3};
      (side == 0 ? src : dst)[3] = bad;
      job.srcIndices = src.data();
      job.dstIndices = dst.data();
      job.indicesOnDevice = false;
      job.count = 5;
      const kvio::cuda::StagingLayout layout = kvio::cuda::stagingLayout(job);
      std::vector<uint64_t> slot(static_cast<size_t>(layout.total / 8 + 1));
      auto* bytes = reinterpret_cast<uint8_t*>(slot.data());
      kvio::cuda::writeStaging(job, layout, bytes);
      EXPECT_EQ(kvio::cuda::firstStagedPairOutside(job, layout, bytes), 3)
          << "index " << bad << " on side " << side;
      auto packed = std::make_unique<InlineCopyLaunch>();
      kvio::cuda::packInlineLaunch(job, layout, packed.get());
      EXPECT_EQ(kvio::cuda::firstStagedPairOutside(job, layout, packed->staging), 3);
      (side == 0 ? src : dst)[3] = 3;  // in range again: the staging was a copy
      EXPECT_EQ(kvio::cuda::firstStagedPairOutside(job, layout, bytes), 3);
      kvio::cuda::writeStaging(job, layout, bytes);
      EXPECT_EQ(kvio::cuda::firstStagedPairOutside(job, layout, bytes), -1);
      job.indicesOnDevice = true;  // checked by the kernel instead
      EXPECT_EQ(kvio::cuda::firstStagedPairOutside(job, layout, bytes), -1);
    }
  }
}

TEST(CudaKernelLaunch, InlineOnlyWhileTheStagingFits) {
  struct {
    std::vector<uint64_t> srcTable = std::vector<uint64_t>(64), dstTable = std::vector<uint64_t>(8);
    bool indicesOnDevice = false;
    int64_t count = 0;
  } job;
  job.count = 203;  // 16 + 8 * 72 + 16 * 203 = 3840 bytes: fits exactly
  EXPECT_EQ(kvio::cuda::stagingLayout(job).total, 3840u);
  EXPECT_TRUE(kvio::cuda::fitsInline(job, kvio::cuda::stagingLayout(job)));
  job.count = 204;
  EXPECT_FALSE(kvio::cuda::fitsInline(job, kvio::cuda::stagingLayout(job)));
  job.count = 1;
  job.indicesOnDevice = true;
  EXPECT_FALSE(kvio::cuda::fitsInline(job, kvio::cuda::stagingLayout(job)));
}

// kvio_debug_kernel_launches reports what the kernel executor counts with countKernelLaunch
// after each launch it issued, by path; the GPU test
// CudaKernel.SmallJobsInTheParameterAndLargeJobsUploadedMatchOracle reads it around transfers on
// both sides of the 3840-byte boundary above.
TEST(CudaKernelLaunch, DebugCountsReportEachPathsLaunches) {
  int64_t before[2] = {}, after[2] = {};
  ASSERT_EQ(kvio_debug_kernel_launches(before), KVIO_STATUS_OK);
  kvio::countKernelLaunch(kvio::KernelTables::kInParameter);
  kvio::countKernelLaunch(kvio::KernelTables::kUploaded);
  kvio::countKernelLaunch(kvio::KernelTables::kUploaded);
  ASSERT_EQ(kvio_debug_kernel_launches(after), KVIO_STATUS_OK);
  EXPECT_EQ(after[0] - before[0], 1);
  EXPECT_EQ(after[1] - before[1], 2);
  EXPECT_EQ(kvio_debug_kernel_launches(nullptr), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("counts_out is null"), std::string::npos)
      << kvio_last_error();
}

}  // namespace
}  // namespace kvio_test
