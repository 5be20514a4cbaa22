// The 'auto' io backend's dispatch of real transfers: an auto executor with cpu stand-ins for
// kernel, direct and (in one case) staged (auto_stand_ins.cpp) shows which candidate ran each
// transfer, what kvio_transfer_get_info reports, and every destination byte against the oracle;
// then 'auto' through the C ABI on a machine without a GPU (it is cpu).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl_emulation_test.hpp"
#include "acl_host_emulation.hpp"
#include "auto_stand_ins.hpp"
#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

class AutoDispatch : public ::testing::Test {
 protected:
  /// An auto executor with stand-ins for kernel and direct, registered as a C ABI handle.
  uint64_t makeExecutor() { return standInAutoExecutor(&kernelJobs_, &directJobs_, &directPlans_); }

  /// Moves `indices` (each to itself) of every layer from a random src to a canary-filled dst,
  /// checks every byte of dst against the oracle, and returns what the transfer reported. The
  /// pools are host memory; a kind other than KVIO_MEMORY_HOST labels one as that (device 0)
  /// for the stand-ins, which copy host memory whatever its label.
  kvio_transfer_info run(uint64_t executor, const Geometry& g, const std::vector<int64_t>& indices,
                         uint32_t flags, int32_t srcKind = KVIO_MEMORY_HOST,
                         int32_t dstKind = KVIO_MEMORY_HOST) {
    kvio_submit_options options = KVIO_SUBMIT_OPTIONS_INIT;
    options.flags = flags;
    return runWith(executor, g, indices, &options, srcKind, dstKind);
  }
  /// run() of `layers` layers from `layer` (each to itself), host memory.
  kvio_transfer_info runLayers(uint64_t executor, const Geometry& g,
                               const std::vector<int64_t>& indices, uint32_t flags, int64_t layer,
                               int64_t layers) {
    kvio_submit_options options = KVIO_SUBMIT_OPTIONS_INIT;
    options.flags = flags;
    return runWith(executor, g, indices, &options, KVIO_MEMORY_HOST, KVIO_MEMORY_HOST, layer,
                   layers);
  }
  /// run() with every option (kvio_submit_with); NULL options: kvio_submit. layers < 0: all.
  kvio_transfer_info runWith(uint64_t executor, const Geometry& g,
                             const std::vector<int64_t>& indices,
                             const kvio_submit_options* options, int32_t srcKind = KVIO_MEMORY_HOST,
                             int32_t dstKind = KVIO_MEMORY_HOST, int64_t layer = 0,
                             int64_t layers = -1) {
    if (layers < 0) layers = g.L;
    // NPU memory is tagged so before the wrap, which asks the (emulated) runtime where it lies.
    const auto place = [](int32_t kind) {
      return kind == KVIO_MEMORY_ASCEND_DEVICE ? npuMemory(0) : apart();
    };
    TestPool src(g, srcKind, srcKind == KVIO_MEMORY_HOST ? -1 : 0, place(srcKind));
    TestPool dst(g, dstKind, dstKind == KVIO_MEMORY_HOST ? -1 : 0, place(dstKind));
    std::mt19937_64 rng(7);
    SeededPair pools(src, dst, rng);
    pools.expect(indices, indices, layer, layer, layers);
    const kvio_transfer_desc desc{src.pool().handle(),
                                  dst.pool().handle(),
                                  indices.data(),
                                  indices.data(),
                                  static_cast<int64_t>(indices.size()),
                                  layer,
                                  layer,
                                  layers};
    uint64_t transfer = 0;
    kvio_transfer_info info{};
    EXPECT_EQ(kvio_submit_with(executor, &desc, options, &transfer), KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_get_info(transfer, &info), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    EXPECT_TRUE(pools.check());
    return info;
  }

  static std::vector<int64_t> everyOther(int64_t n) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < n; i += 2) out.push_back(i);
    return out;
  }
  /// Every other slot of 16, in an order with no two equal steps in a row, as scattered tokens
  /// come: the planner joins its rows at most in pairs (2-row 2-D copies at varying pitches),
  /// which auto counts as one engine copy per row (everyOther's constant step instead makes one
  /// 2-D copy of 8 rows).
  static std::vector<int64_t> scattered(int64_t n) {
    EXPECT_EQ(n, 16);
    return {6, 0, 12, 2, 10, 4, 14, 8};
  }

  int kernelJobs_ = 0;
  int directJobs_ = 0;
  int directPlans_ = 0;  // plans the direct candidate made (auto plans only when rows may reach
                         // the crossover)
};

Geometry rowsOf(int64_t rowBytes) {
  Geometry g;
  g.layout = KVIO_LAYOUT_PAGE_FIRST;  // rows of a token coalesce only across a token's layers
  g.L = 2;
  g.P = 16;
  g.ps = 1;
  g.H = 2;
  g.hb = rowBytes / 2;
  return g;
}

TEST_F(AutoDispatch, ScatteredSmallRowsGoToTheKernelContiguousToDirect) {
  const uint64_t executor = makeExecutor();
  Geometry g;
  g.L = 2;
  g.P = 32;
  g.ps = 4;
  g.H = 2;
  g.hb = 128;  // 256 B rows
  kvio_transfer_info info = run(executor, g, everyOther(g.S()), 0);
  EXPECT_EQ(info.io_backend, KVIO_BACKEND_AUTO);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(info.overlaps_compute, 0);
  EXPECT_EQ(kernelJobs_, 1);
  EXPECT_EQ(directJobs_, 0);
  // Every slot of a small layer_first pool: the whole pool is one 32 KiB run, below 256 KiB.
  g.P = 8;
  std::vector<int64_t> all(static_cast<size_t>(g.S()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  info = run(executor, g, all, 0);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(directPlans_, 0) << "no row of either could reach 256 KiB: chosen without a plan";
  g.P = 64;  // ... 256 KiB: direct, with the plan it was chosen from
  all.resize(static_cast<size_t>(g.S()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  info = run(executor, g, all, 0);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_DIRECT);
  EXPECT_GT(info.copies, 0);
  EXPECT_EQ(kernelJobs_, 2);
  EXPECT_EQ(directJobs_, 1);
  EXPECT_EQ(directPlans_, 1);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// page_first_direct keeps a page's layers together, so its runs end at every page; consecutive
// whole pages still plan as one row per component (8 pages x 4 layers x 16 x 512 B = 256 KiB):
// direct, which only the plan shows. A bound from the split runs (one page: 64 KiB) would have
// sent it to the kernel without planning.
TEST_F(AutoDispatch, ConsecutivePagesSplitAtPageEndsStillReachDirect) {
  const uint64_t executor = makeExecutor();
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Single, 4, 8, 16, 2, 256};
  std::vector<int64_t> all(static_cast<size_t>(g.S()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const kvio_transfer_info info = run(executor, g, all, 0);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_DIRECT);
  EXPECT_EQ(directPlans_, 1);
  EXPECT_EQ(directJobs_, 1);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// Marked, scattered rows go to direct by their bytes per engine copy (one per row): 32 KiB rows
// do, 16 KiB rows stay on the kernel (direct_copy_bytes_overlap = 32 KiB).
TEST_F(AutoDispatch, OverlapMarkMovesScatteredThirtyTwoKiBRowsToDirect) {
  const uint64_t executor = makeExecutor();
  const Geometry g = rowsOf(16384);  // page_first: a token's 2 layers coalesce into 32 KiB rows
  kvio_transfer_info info = run(executor, g, scattered(g.S()), 0);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(directPlans_, 0) << "single tokens of 64 KiB (both components) never reach 256 KiB";
  info = run(executor, g, scattered(g.S()), KVIO_SUBMIT_OVERLAPS_COMPUTE);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_DIRECT);
  EXPECT_EQ(info.overlaps_compute, 1);
  EXPECT_EQ(directPlans_, 1) << "marked: 2 KiB rows are within reach, the plan decides";
  const Geometry smaller = rowsOf(8192);  // 16 KiB rows, one engine copy each: the kernel
  info = run(executor, smaller, scattered(smaller.S()), KVIO_SUBMIT_OVERLAPS_COMPUTE);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  // The same rows at a constant step: one 2-D engine copy of 8 rows per component: direct.
  info = run(executor, smaller, everyOther(smaller.S()), KVIO_SUBMIT_OVERLAPS_COMPUTE);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_DIRECT);
  info = run(executor, smaller, everyOther(smaller.S()), 0);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(directPlans_, 3);
  EXPECT_EQ(kernelJobs_, 3);
  EXPECT_EQ(directJobs_, 2);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// The first H200 run's per-layer load (issue 11 item 6): one layer of whole pages of a page_first
// pool, in shuffled order. Each page is a 2-D copy of 2 KiB rows (a token's heads, one layer)
// at the pitch of a token's layers: 32 KiB per engine copy. Beside compute direct kept its idle
// 30 GB/s on such copies while the kernel fell to 0.17x, so the mark sends them to direct, which
// a mean-row crossover (2 KiB rows) did not; unmarked they stay on the kernel. Rows of 1 KiB in
// the same copies stay on the kernel marked too (narrower rows are unmeasured).
TEST_F(AutoDispatch, OverlapMarkMovesAPerLayerLoadOfWholePagesToDirect) {
  const uint64_t executor = makeExecutor();
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 4, 8, 16, 8, 256};
  std::vector<int64_t> pages = {5, 2, 7, 0, 3, 6, 1, 4};
  std::vector<int64_t> tokens;
  for (int64_t p : pages) {
    for (int64_t t = 0; t < g.ps; ++t) tokens.push_back(p * g.ps + t);
  }
  kvio_transfer_info info = runLayers(executor, g, tokens, 0, 2, 1);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(directPlans_, 0) << "unmarked: a page's rows (16 x 2 KiB) never reach 256 KiB";
  info = runLayers(executor, g, tokens, KVIO_SUBMIT_OVERLAPS_COMPUTE, 2, 1);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_DIRECT);
  EXPECT_EQ(directPlans_, 1);
  Geometry narrow = g;
  narrow.H = 4;  // 1 KiB rows
  info = runLayers(executor, narrow, tokens, KVIO_SUBMIT_OVERLAPS_COMPUTE, 2, 1);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(directPlans_, 2) << "a page's run (32 KiB) may hold rows of 2 KiB: planned";
  EXPECT_EQ(kernelJobs_, 2);
  EXPECT_EQ(directJobs_, 1);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// kvio_submit_with gives 'auto' the overlap mark and the launch shape at once (kvio.h had a
// submit for either, none for both): the mark still moves 32 KiB rows to direct, and a transfer
// auto gives its kernel reaches the kernel candidate with the shape and the mark.
TEST_F(AutoDispatch, TheOverlapMarkAndALaunchShapeTogetherReachTheChoiceAndTheKernel) {
  LaunchSeen seen;
  const uint64_t executor =
      standInAutoExecutor(&kernelJobs_, &directJobs_, &directPlans_, nullptr, &seen);
  const Geometry g = rowsOf(16384);
  kvio_submit_options options = KVIO_SUBMIT_OPTIONS_INIT;
  options.cta_budget = 3;
  options.warps_per_cta = 5;
  kvio_transfer_info info = runWith(executor, g, scattered(g.S()), &options);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(info.overlaps_compute, 0);
  EXPECT_EQ(seen.prepares, 1);
  EXPECT_EQ(seen.ctaBudget, 3);
  EXPECT_EQ(seen.warpsPerCta, 5);
  EXPECT_FALSE(seen.overlapsCompute);
  // Marked, with the shape: the mark decides (direct); the kernel prepares nothing.
  options.flags = KVIO_SUBMIT_OVERLAPS_COMPUTE;
  info = runWith(executor, g, scattered(g.S()), &options);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_DIRECT);
  EXPECT_EQ(info.overlaps_compute, 1);
  EXPECT_EQ(seen.prepares, 1);
  // Marked, with another shape, on rows the kernel keeps: both reach it.
  options.cta_budget = 7;
  options.warps_per_cta = 9;
  const Geometry smaller = rowsOf(8192);
  info = runWith(executor, smaller, scattered(smaller.S()), &options);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(info.overlaps_compute, 1);
  EXPECT_EQ(seen.prepares, 2);
  EXPECT_EQ(seen.ctaBudget, 7);
  EXPECT_EQ(seen.warpsPerCta, 9);
  EXPECT_TRUE(seen.overlapsCompute);
  // No options: the executor's shape (0) and no mark.
  info = runWith(executor, smaller, scattered(smaller.S()), nullptr);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
  EXPECT_EQ(seen.prepares, 3);
  EXPECT_EQ(seen.ctaBudget, 0);
  EXPECT_EQ(seen.warpsPerCta, 0);
  EXPECT_FALSE(seen.overlapsCompute);
  EXPECT_EQ(kernelJobs_, 3);
  EXPECT_EQ(directJobs_, 1);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// Host<->device with staged available and staged_min_bytes met: below the direct crossover, auto
// picks staged. Where a row of the plan could reach the crossover, auto plans the transfer to
// choose, and staged builds its work on that plan (prepareFromPlan) instead of planning it
// again: one plan per transfer. Where none could, auto chooses without a plan and staged's own
// prepare makes the one plan. The device pools are host memory labelled as device memory of the
// emulated NPU (the ACL host emulation, so that such pools can be wrapped without a device);
// the stand-ins copy it as host memory.
TEST_F(AutoDispatch, StagedBuildsOnThePlanAutoChoseFromWithoutPlanningAgain) {
  struct Emulation {
    Emulation() { AclHostEmulation::instance().install(); }
    ~Emulation() { AclHostEmulation::instance().uninstall(); }
  } emulation;
  StagedCounts staged;
  const uint64_t executor = standInAutoExecutor(&kernelJobs_, &directJobs_, &directPlans_, &staged);
  ASSERT_EQ(kvio_executor_set_auto_calibration(executor,
                                               "direct_row_bytes = 16K\nstaged_min_bytes = 0\n"),
            KVIO_STATUS_OK)
      << kvio_last_error();
  const Geometry g = rowsOf(4096);  // page_first: a token's 2 layers are one 8 KiB row each of K, V
  const std::vector<int64_t> tokens = everyOther(g.S());
  const uint64_t bytes = tokens.size() * static_cast<uint64_t>(g.L * g.C() * g.row());
  // A token moves 16 KiB, so a row could reach 16 KiB: auto plans; the plan's rows are 8 KiB.
  kvio_transfer_info info =
      run(executor, g, tokens, 0, KVIO_MEMORY_HOST, KVIO_MEMORY_ASCEND_DEVICE);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_STAGED);
  EXPECT_EQ(directPlans_ + staged.plans, 1) << "the transfer was planned more than once";
  EXPECT_EQ(staged.fromPlan, 1);
  EXPECT_EQ(staged.jobs, 1);
  EXPECT_EQ(kernelJobs_ + directJobs_, 0);
  EXPECT_EQ(info.bytes, bytes);
  EXPECT_GT(info.copies, 0);
  EXPECT_EQ(info.launches, 1) << "the staged stand-in reports its plan as one launch";
  EXPECT_EQ(info.dst_memory, KVIO_MEMORY_ASCEND_DEVICE);
  // No row can reach 1 MiB: chosen without a plan; staged's prepare plans, once (device to host).
  ASSERT_EQ(
      kvio_executor_set_auto_calibration(executor, "direct_row_bytes = 1M\nstaged_min_bytes = 0\n"),
      KVIO_STATUS_OK)
      << kvio_last_error();
  info = run(executor, g, tokens, 0, KVIO_MEMORY_ASCEND_DEVICE, KVIO_MEMORY_HOST);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_STAGED);
  EXPECT_EQ(directPlans_, 1);
  EXPECT_EQ(staged.plans, 1);
  EXPECT_EQ(staged.fromPlan, 2);
  EXPECT_EQ(staged.jobs, 2);
  EXPECT_EQ(info.bytes, bytes);
  EXPECT_EQ(info.launches, 1);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

TEST_F(AutoDispatch, CalibrationSetThroughTheCAbiTakesEffect) {
  const uint64_t executor = makeExecutor();
  const Geometry g = rowsOf(256);
  EXPECT_EQ(run(executor, g, everyOther(g.S()), 0).chosen_backend, KVIO_BACKEND_KERNEL);
  ASSERT_EQ(kvio_executor_set_auto_calibration(executor, "direct_row_bytes = 0\n"), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(run(executor, g, everyOther(g.S()), 0).chosen_backend, KVIO_BACKEND_DIRECT);
  const std::string text = kvio_executor_auto_calibration(executor);
  EXPECT_NE(text.find("direct_row_bytes = 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("set by kvio_executor_set_auto_calibration"), std::string::npos) << text;
  // A malformed text changes nothing.
  EXPECT_EQ(kvio_executor_set_auto_calibration(executor, "direct_row_bytes = x"),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(kvio_executor_auto_calibration(executor)), text);
  EXPECT_EQ(kvio_executor_set_auto_calibration(executor, nullptr), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// kvio_executor_set_auto_calibration from another thread while transfers are submitted (the
// submit path reads the thresholds without a lock): every transfer runs on the backend one of
// the two calibrations picks, its bytes all correct; once the setter is done, the last
// calibration decides. One submitting thread (the stand-ins count without a lock).
TEST_F(AutoDispatch, CalibrationSetFromAnotherThreadWhileSubmittingTakesEffect) {
  const uint64_t executor = makeExecutor();
  const Geometry g = rowsOf(256);
  std::atomic<bool> stop{false};
  std::atomic<int> sets{0};
  std::thread setter([&] {
    for (int i = 0; !stop.load() || i < 100; ++i) {
      const char* text = i % 2 == 0 ? "direct_row_bytes = 0\n" : "direct_row_bytes = never\n";
      EXPECT_EQ(kvio_executor_set_auto_calibration(executor, text), KVIO_STATUS_OK);
      sets.fetch_add(1);
    }
    // Last: direct for everything.
    EXPECT_EQ(kvio_executor_set_auto_calibration(executor, "direct_row_bytes = 0\n"),
              KVIO_STATUS_OK);
  });
  int kernel = 0, direct = 0;
  for (int i = 0; i < 60; ++i) {
    const int32_t chosen = run(executor, g, everyOther(g.S()), 0).chosen_backend;
    EXPECT_TRUE(chosen == KVIO_BACKEND_KERNEL || chosen == KVIO_BACKEND_DIRECT) << chosen;
    (chosen == KVIO_BACKEND_KERNEL ? kernel : direct) += 1;
  }
  stop.store(true);
  setter.join();
  EXPECT_EQ(kernel + direct, 60);
  EXPECT_EQ(kernelJobs_, kernel);
  EXPECT_EQ(directJobs_, direct);
  EXPECT_GE(sets.load(), 100);
  EXPECT_EQ(run(executor, g, everyOther(g.S()), 0).chosen_backend, KVIO_BACKEND_DIRECT);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// ---- 'auto' through the C ABI here (no GPU in this test's world: cpu) ----

TEST(AutoBackend, NamedAvailableAndRunsOnCpuWithoutAGpu) {
  int32_t value = -1;
  ASSERT_EQ(kvio_parse_name(KVIO_NAME_BACKEND, "auto", &value), KVIO_STATUS_OK);
  EXPECT_EQ(value, KVIO_BACKEND_AUTO);
  EXPECT_STREQ(kvio_name(KVIO_NAME_BACKEND, KVIO_BACKEND_AUTO), "auto");
  EXPECT_EQ(kvio_backend_available(KVIO_BACKEND_AUTO), KVIO_STATUS_OK);
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK) {
    GTEST_SKIP() << "a CUDA device is present: auto is not cpu here";
  }
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_AUTO, 2, &executor), KVIO_STATUS_OK)
      << kvio_last_error();
  int32_t threads = 0;
  EXPECT_EQ(kvio_executor_threads(executor, &threads), KVIO_STATUS_OK);
  EXPECT_EQ(threads, 2);
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 3, 8, 2, 2, 64};
  TestPool src(g), dst(g);
  std::mt19937_64 rng(3);
  SeededPair pools(src, dst, rng);
  const std::vector<int64_t> si{3, 0, 7, 12}, di{1, 9, 4, 15};
  const kvio_transfer_desc desc{
      src.pool().handle(), dst.pool().handle(), si.data(), di.data(), 4, 1, 0, 2};
  // Unknown flag bits: refused before any byte moves.
  uint64_t transfer = 0;
  EXPECT_EQ(kvio_submit_flags(executor, &desc, 4u, &transfer), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("flags 0x4"), std::string::npos);
  EXPECT_TRUE(
      pools.check("destination after the refused submit", "source after the refused submit"));
  pools.expect(si, di, 1, 0, 2);
  ASSERT_EQ(kvio_submit_flags(executor, &desc, KVIO_SUBMIT_OVERLAPS_COMPUTE, &transfer),
            KVIO_STATUS_OK)
      << kvio_last_error();
  ASSERT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK);
  kvio_transfer_info info{};
  ASSERT_EQ(kvio_transfer_get_info(transfer, &info), KVIO_STATUS_OK);
  EXPECT_EQ(info.io_backend, KVIO_BACKEND_AUTO);
  EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_CPU);
  EXPECT_EQ(info.overlaps_compute, 1);
  EXPECT_GT(info.copies, 0);
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  EXPECT_TRUE(pools.check());
  // The calibration is reported (defaults here) even where there is nothing to choose.
  const char* text = kvio_executor_auto_calibration(executor);
  ASSERT_NE(text, nullptr);
  EXPECT_NE(std::string(text).find("direct_row_bytes = 262144"), std::string::npos) << text;
  // A GPU executor cannot be made without a GPU: the CUDA cause, not a crash.
  uint64_t cuda = 0;
  EXPECT_NE(kvio_executor_create_cuda(KVIO_BACKEND_AUTO, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &cuda),
            KVIO_STATUS_OK);
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

TEST(AutoBackend, CalibrationCallsRefuseOtherExecutors) {
  uint64_t cpu = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &cpu), KVIO_STATUS_OK);
  // UNSUPPORTED, as kvio_executor_set_launch on an executor that launches no kernel: a valid
  // executor that cannot do this, not a bad argument.
  EXPECT_EQ(kvio_executor_set_auto_calibration(cpu, "direct_row_bytes = 1\n"),
            KVIO_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(kvio_last_error()).find("'cpu' executor"), std::string::npos)
      << kvio_last_error();
  // The calibration getter answers with a string; kvio_last_status says why there is none.
  EXPECT_EQ(kvio_executor_auto_calibration(cpu), nullptr);
  EXPECT_EQ(kvio_last_status(), KVIO_STATUS_UNSUPPORTED);
  EXPECT_EQ(kvio_executor_auto_calibration(0), nullptr);
  EXPECT_EQ(kvio_last_status(), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(kvio_executor_close(cpu), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_executor_auto_calibration(cpu), nullptr);
  EXPECT_EQ(kvio_last_status(), KVIO_STATUS_CLOSED) << kvio_last_error();
  // The C++ wrapper throws that status (it assumed INVALID_ARGUMENT).
  kvio::Executor wrapped(kvio::IoBackend::Cpu, 1);
  ASSERT_EQ(kvio_executor_close(wrapped.handle()), KVIO_STATUS_OK);  // closed under the wrapper
  expectError([&] { (void)wrapped.autoCalibration(); }, KVIO_STATUS_CLOSED, {},
              "autoCalibration() of a closed executor");
}

TEST(AutoBackend, CppWrapperMarksOverlapAndSetsTheCalibration) {
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK) {
    GTEST_SKIP() << "a CUDA device is present: auto is not cpu here";
  }
  kvio::Executor executor(kvio::IoBackend::Auto, 1);
  EXPECT_NE(executor.autoCalibration().find("direct_row_bytes = 262144"), std::string::npos);
  executor.setAutoCalibration("direct_row_bytes = 1K\n");
  EXPECT_NE(executor.autoCalibration().find("direct_row_bytes = 1024\n"), std::string::npos);
  EXPECT_THROW(executor.setAutoCalibration("direct_row_bytes"), kvio::Error);
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 4, 4, 1, 32};
  TestPool src(g), dst(g);
  std::mt19937_64 rng(11);
  SeededPair pools(src, dst, rng);
  const std::vector<int64_t> si{0, 5, 9}, di{15, 2, 7};
  pools.expect(si, di, 0, 0, 2);
  kvio::Transfer t =
      kvio::transfer(executor, src.pool(), dst.pool(), si, di, kvio::LayerMap{0, 0, 2}, true);
  t.wait();
  EXPECT_EQ(t.info().overlaps_compute, 1);
  EXPECT_EQ(t.info().chosen_backend, KVIO_BACKEND_CPU);
  EXPECT_TRUE(pools.check());
}

}  // namespace
}  // namespace kvio_test
