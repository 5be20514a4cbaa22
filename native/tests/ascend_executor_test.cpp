// The kernel_ascend executor through the public API (kvio.h / kvio.hpp) and the ACL host
// emulation (acl_host_emulation.hpp): how many ACL calls transfers cost (the dim exchange of a
// run of r pages over h layers costs min(r, h) aclrtMemcpy2dAsync calls per component; a
// per-layer load touches that layer only), layer-sharded backup (the reference's seed case 1),
// the MLA page_first_kv_split components, batch copies and their fall-back, errors of ACL calls
// surfacing as BACKEND_ERROR messages that name the call and the sizes, the memory rules,
// pools in NPU and pinned memory allocated or registered through ACL, caller streams, and the
// backend's unavailability (with the cause) when no ACL runtime is installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl_emulation_test.hpp"
#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

using kvio::ascend::aclError;

/// A wrapped pool in emulated NPU memory (its buffers tagged as device memory).

/// A kvio-allocated host pool in emulated pinned memory (aclrtMallocHost).
TestPool pinnedHost(const Geometry& g) {
  return TestPool(g, KVIO_MEMORY_ASCEND_HOST_PINNED, 0);
}

/// A placement whose buffers the emulation knows as aclrtMallocHost memory (what torch_npu's
/// pinned tensors are), tagged before the pool wraps them. `tags` must outlive the pool; `only`
/// >= 0 tags that buffer only.
Placement aclMallocHost(std::vector<std::shared_ptr<void>>* tags, int only = -1) {
  Placement placement;
  auto seen = std::make_shared<int>(0);
  placement.beforeWrap = [tags, only, seen](uint8_t* data, size_t bytes) {
    if (only < 0 || (*seen)++ == only) tags->push_back(acl().tagPinnedHost(data, bytes));
  };
  return placement;
}

/// The OS kernel release kvio's Ascend backend sees while this lives.
struct FakeKernelRelease {
  explicit FakeKernelRelease(const char* release) { kvio_test_ascend_kernel_release(release); }
  ~FakeKernelRelease() { kvio_test_ascend_kernel_release(nullptr); }
};
constexpr const char* kOpenEuler2203 = "5.10.0-60.18.0.50.oe2203.aarch64";

/// Loads every layer of host slots `hostSlots` into device slots `deviceSlots` and backs them up
/// the other way, each destination checked whole against the oracle (SeededPair).
void loadAndBackUp(TestPool& host, NpuPool& device, const std::vector<int64_t>& hostSlots,
                   const std::vector<int64_t>& deviceSlots, int64_t layers, std::mt19937_64& rng) {
  kvio::Executor ascend{kvio::IoBackend::KernelAscend};
  SeededPair load(host, device.pool, rng);
  kvio::transferAllLayers(ascend, host.pool(), device.pool.pool(), hostSlots, deviceSlots).wait();
  load.expect(hostSlots, deviceSlots, 0, 0, layers);
  EXPECT_TRUE(load.check("device pool", "host pool"));
  SeededPair backup(device.pool, host, rng);
  kvio::transferAllLayers(ascend, device.pool.pool(), host.pool(), deviceSlots, hostSlots).wait();
  backup.expect(deviceSlots, hostSlots, 0, 0, layers);
  EXPECT_TRUE(backup.check("host pool", "device pool"));
}

/// kvio's live host registrations (kvio_debug_live_host_registrations), all of this process's.
int64_t allKvioRegistrations() {
  int64_t n = -1;
  EXPECT_EQ(kvio_debug_live_host_registrations(&n), KVIO_STATUS_OK);
  return n;
}

/// Those at the start of the running test: a registration whose end the runtime refused stays
/// counted until a retry ends it, so tests that share a process count from here.
int64_t kvioRegistrationsAtSetUp = 0;

/// kvio's host registrations made during the running test and still live.
int64_t kvioRegistrations() {
  return allKvioRegistrations() - kvioRegistrationsAtSetUp;
}

/// A page-aligned region of `bytes` inside a block with a page of slack on either side, all of it
/// filled with 0xC3; untouched() compares the whole block with what it held at first.
struct AlignedBlock {
  explicit AlignedBlock(size_t bytes) : block(bytes + 2 * 4096, 0xC3), before(block) {}
  uint8_t* region() {
    return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(block.data()) + 4095) / 4096 *
                                      4096);
  }
  bool untouched() const { return block == before; }
  std::vector<uint8_t> block;
  const std::vector<uint8_t> before;
};

// The pools of a dim exchange, both mha: an NPU pool in the Ascend 5-D layout (layer_first per
// component) of `devicePages` pages, a pinned page_first_direct host pool of `hostPages`, and a
// kernel_ascend executor.
struct ExchangePools {
  ExchangePools(int64_t L, int64_t devicePages, int64_t hostPages, int64_t ps, int64_t H,
                int64_t hb)
      : device(Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerComponent, L, devicePages,
                        ps, H, hb}),
        host(pinnedHost(Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Allocated, L,
                                 hostPages, ps, H, hb})) {}
  NpuPool device;
  TestPool host;
  kvio::Executor ascend{kvio::IoBackend::KernelAscend};
};

class AscendExecutorTest : public AclEmulationTest {
 protected:
  AscendExecutorTest() : AclEmulationTest(true) {}
  void SetUp() override {
    AclEmulationTest::SetUp();
    kvioRegistrationsAtSetUp = allKvioRegistrations();
  }

  // Moves `pages` of src to dst pages (whole pages, layers [layer, layer + layers) on both
  // sides), checks the destination against the oracle and returns the calls it cost.
  AclCallCounts exchange(kvio::Executor& ex, TestPool& src, TestPool& dst,
                         const std::vector<int64_t>& srcPages, const std::vector<int64_t>& dstPages,
                         int64_t layer, int64_t layers, std::mt19937_64& rng) {
    SeededPair pools(src, dst, rng);
    acl().reset();
    kvio::transferDimExchange(ex, src.pool(), dst.pool(), srcPages, dstPages, layer, layers).wait();
    const AclCallCounts counts = acl().counts();
    const int64_t ps = src.geometry().ps;
    pools.expect(expandPages(srcPages, ps), expandPages(dstPages, ps), layer, layer, layers);
    EXPECT_TRUE(pools.check());
    EXPECT_EQ(counts.rejected, 0) << acl().recentError();
    return counts;
  }
};

// The Ascend 5-D device layout [L, P, ps, H, D] per component and the page-first host layout
// [P, L, ps, H, D]: a run of r consecutive pages over all h layers costs min(r, h) 2-D copies
// per component, in both directions.
TEST_F(AscendExecutorTest, DimExchangeRunCostsMinOfPagesAndLayers) {
  std::mt19937_64 rng(1);
  const int64_t L = 8;
  ExchangePools pools(L, 32, 40, 16, 2, 64);
  for (int64_t r : {1, 2, 3, 5, 8, 12, 20}) {
    SCOPED_TRACE("run of " + std::to_string(r) + " pages");
    const auto devicePages = range(3, r);
    const auto hostPages = range(11, r);
    const int64_t expected = 2 * std::min<int64_t>(r, L);
    AclCallCounts load =
        exchange(pools.ascend, pools.host, pools.device.pool, hostPages, devicePages, 0, L, rng);
    EXPECT_EQ(load.memcpy2dAsync + load.memcpyAsync + load.memcpyBatchAsync, expected);
    AclCallCounts backup =
        exchange(pools.ascend, pools.device.pool, pools.host, devicePages, hostPages, 0, L, rng);
    EXPECT_EQ(backup.memcpy2dAsync + backup.memcpyAsync + backup.memcpyBatchAsync, expected);
    if (HasFailure()) return;
  }
}

// Several runs in one transfer: at most the sum over runs of min(r, h) per component.
TEST_F(AscendExecutorTest, DimExchangeOfSeveralRunsCostsTheSumOfTheirMinima) {
  std::mt19937_64 rng(2);
  const int64_t L = 6;
  ExchangePools pools(L, 48, 48, 4, 1, 128);
  // Runs of 10, 1 and 3 pages (device and host pages both advance by one inside a run).
  std::vector<int64_t> devicePages = range(2, 10), hostPages = range(30, 10);
  devicePages.push_back(20);
  hostPages.push_back(5);
  for (int64_t p : range(25, 3)) devicePages.push_back(p);
  for (int64_t p : range(10, 3)) hostPages.push_back(p);
  const int64_t bound = 2 * (std::min<int64_t>(10, L) + 1 + 3);
  const AclCallCounts load =
      exchange(pools.ascend, pools.host, pools.device.pool, hostPages, devicePages, 0, L, rng);
  EXPECT_LE(load.copyCalls(), bound);
  const AclCallCounts backup =
      exchange(pools.ascend, pools.device.pool, pools.host, devicePages, hostPages, 0, L, rng);
  EXPECT_LE(backup.copyCalls(), bound);
}

// A true layer-by-layer load: loading layer i moves layer i only (the reference moves every
// layer when layer 0 is asked for), one 2-D copy per component for a run of pages.
TEST_F(AscendExecutorTest, PerLayerLoadMovesThatLayerOnly) {
  std::mt19937_64 rng(3);
  const int64_t L = 5;
  ExchangePools pools(L, 16, 16, 8, 2, 32);
  const uint64_t layerBytes =
      static_cast<uint64_t>(pools.device.pool.geometry().S() * pools.device.pool.geometry().row());
  for (int64_t layer = 0; layer < L; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    const AclCallCounts counts = exchange(pools.ascend, pools.host, pools.device.pool, range(4, 5),
                                          range(6, 5), layer, 1, rng);
    EXPECT_EQ(counts.memcpy2dAsync, 2);
    EXPECT_EQ(counts.copyCalls(), 2);
    for (const AclCopyRecord& r : acl().records()) {
      bool inside = false;
      for (size_t c = 0; c < 2; ++c) {
        const uint64_t begin =
            reinterpret_cast<uint64_t>(pools.device.pool.region(c)) + layer * layerBytes;
        const uint64_t last = r.dst + (r.height - 1) * r.dstPitch + r.width;
        inside = inside || (r.dst >= begin && last <= begin + layerBytes);
      }
      EXPECT_TRUE(inside) << "a copy wrote outside device layer " << layer;
    }
  }
}

// An auto executor whose transfers go to cpu lets its kernel_ascend candidate go of the NPU
// transfers that finished (their events and plans), whether the cpu transfer is queued or runs on
// the submitting thread: a finished NPU transfer's event is destroyed then (the switch from
// kernel_ascend to cpu drains it), not at the next NPU submit.
TEST_F(AscendExecutorTest, AutoLetsGoOfFinishedNpuTransfersWhileItsTransfersGoToCpu) {
  kvio::Executor automatic = kvio::Executor::npu(kvio::IoBackend::Auto, 0);
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 4, 4, 2, 16};
  const kvio_pool_spec spec = g.spec().toC();
  TestPool hostA(g), hostB(g);  // pageable: cpu's
  const std::vector<int64_t> idx{0, 1, 2, 3};
  for (bool queued : {false, true}) {
    SCOPED_TRACE(queued ? "cpu transfer queued" : "cpu transfer on the submitting thread");
    const int64_t before = acl().live().events;
    uint64_t npu = 0, pinned = 0, transfer = 0;
    ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, &npu), KVIO_STATUS_OK)
        << kvio_last_error();
    ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, &pinned),
              KVIO_STATUS_OK)
        << kvio_last_error();
    ASSERT_EQ(kvio_submit_args(automatic.handle(), pinned, npu, idx.data(), idx.data(), 4, 0, 0,
                               g.L, &transfer),
              KVIO_STATUS_OK)
        << kvio_last_error();
    ASSERT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_pool_close(npu), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_pool_close(pinned), KVIO_STATUS_OK);
    EXPECT_EQ(acl().live().events, before + 1) << "the finished transfer holds its event";
    const kvio_transfer_desc desc{
        hostA.pool().handle(), hostB.pool().handle(), idx.data(), idx.data(), 4, 0, 0, g.L};
    kvio_submit_options options = KVIO_SUBMIT_OPTIONS_INIT;
    options.flags = queued ? KVIO_SUBMIT_QUEUE_ONLY : 0;
    ASSERT_EQ(kvio_submit_with(automatic.handle(), &desc, &options, &transfer), KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(acl().live().events, before) << "let go of at the cpu submit";
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  }
}

// An auto executor with an NPU runs each transfer after the ones submitted before it, although
// they go to two executors (kernel_ascend's stream and cpu's threads): a cpu transfer that reads
// what an NPU backup still running (a held stream) writes copies it once it has landed, and an
// NPU load that reads what a queued cpu transfer (held before its first copy) writes waits for
// it. Without the ordering, the cpu copy reads the canary and the NPU load the old bytes.
TEST_F(AscendExecutorTest, AutoRunsEachTransferAfterTheOnesBeforeItOnTheOtherBackend) {
  kvio::Executor automatic = kvio::Executor::npu(kvio::IoBackend::Auto, 0);
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 4, 8, 4, 2, 64};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 4, 8, 4, 2, 64};
  NpuPool device(dg);
  TestPool pinned = pinnedHost(hg);
  TestPool pageable(hg);
  std::mt19937_64 rng(23);
  const std::vector<int64_t> from = expandPages({1, 6}, 4), to = expandPages({7, 2}, 4);
  {
    SCOPED_TRACE("NPU backup into the pinned pool, then cpu from it");
    device.pool.fillRandom(rng);
    pinned.fill(kCanary);
    pageable.fill(0x3C);
    const Image npu = device.pool.capture();
    Image pinnedAfter = pinned.capture(), pageableAfter = pageable.capture();
    applyTransfer(dg, npu, hg, &pinnedAfter, from, to, 0, 0, dg.L);
    applyTransfer(hg, pinnedAfter, hg, &pageableAfter, to, from, 0, 0, hg.L);
    acl().reset();
    acl().holdStream();
    kvio::Transfer backup =
        kvio::transferAllLayers(automatic, device.pool.pool(), pinned.pool(), from, to);
    EXPECT_FALSE(backup.done()) << "the held stream ran the backup";
    kvio::transferAllLayers(automatic, pinned.pool(), pageable.pool(), to, from).wait();
    EXPECT_TRUE(backup.done());
    backup.wait();
    EXPECT_TRUE(pinned.matches(pinnedAfter, "pinned pool"));
    EXPECT_TRUE(pageable.matches(pageableAfter, "pageable pool"));
    acl().releaseStream();
  }
  {
    SCOPED_TRACE("a queued cpu transfer into the pinned pool, then an NPU load from it");
    pageable.fillRandom(rng);
    pinned.fill(kCanary);
    device.pool.fill(0x3C);
    const Image source = pageable.capture();
    Image pinnedAfter = pinned.capture(), npuAfter = device.pool.capture();
    applyTransfer(hg, source, hg, &pinnedAfter, from, to, 0, 0, hg.L);
    applyTransfer(hg, pinnedAfter, dg, &npuAfter, to, from, 0, 0, dg.L);
    acl().reset();
    const kvio_transfer_desc desc{pageable.pool().handle(),
                                  pinned.pool().handle(),
                                  from.data(),
                                  to.data(),
                                  static_cast<int64_t>(from.size()),
                                  0,
                                  0,
                                  hg.L};
    kvio_submit_options options = KVIO_SUBMIT_OPTIONS_INIT;
    options.flags = KVIO_SUBMIT_QUEUE_ONLY;
    ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
    uint64_t cpu = 0;
    ASSERT_EQ(kvio_submit_with(automatic.handle(), &desc, &options, &cpu), KVIO_STATUS_OK)
        << kvio_last_error();
    // Released once a worker is held in it, a while later: the NPU submit below waits for that.
    std::atomic<bool> released{false};
    std::thread releaser([&] {
      int64_t held = 0;
      while (kvio_test_cpu_held_tasks(&held) == KVIO_STATUS_OK && held == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      released = true;
      kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0);
    });
    kvio::Transfer load =
        kvio::transferAllLayers(automatic, pinned.pool(), device.pool.pool(), to, from);
    EXPECT_TRUE(released.load()) << "the NPU load was submitted while the cpu transfer was held";
    load.wait();
    releaser.join();
    EXPECT_EQ(kvio_transfer_wait(cpu, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_close(cpu), KVIO_STATUS_OK);
    EXPECT_TRUE(pinned.matches(pinnedAfter, "pinned pool"));
    EXPECT_TRUE(device.pool.matches(npuAfter, "NPU pool"));
  }
}

// 'auto' on a machine with an NPU and no usable CUDA GPU (here the emulated NPU): a transfer of NPU
// memory runs on kernel_ascend, any other on the cpu backend, and kvio_transfer_info says which;
// every byte against the oracle. It used to be cpu alone there, which refuses NPU memory: auto
// could not move the pools an NPU engine has. Refusals name what auto runs here.
TEST_F(AscendExecutorTest, AutoRunsNpuTransfersOnKernelAscendAndTheOthersOnCpu) {
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK) {
    GTEST_SKIP() << "a CUDA GPU is usable: auto runs kernel, direct or staged there";
  }
  std::mt19937_64 rng(21);
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 4, 8, 4, 2, 64};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 4, 8, 4, 2, 64};
  NpuPool device(dg);
  TestPool pinned = pinnedHost(hg);
  TestPool pageable(hg);
  const auto run = [&](kvio::Executor& ex, TestPool& src, TestPool& dst, int32_t ioBackend,
                       int32_t chosen, bool npuCopies) {
    SeededPair pools(src, dst, rng);
    const std::vector<int64_t> from = expandPages({1, 6}, 4), to = expandPages({7, 2}, 4);
    acl().reset();
    kvio::Transfer t = kvio::transferAllLayers(ex, src.pool(), dst.pool(), from, to);
    t.wait();
    const kvio_transfer_info info = t.info();
    EXPECT_EQ(info.io_backend, ioBackend);
    EXPECT_EQ(info.chosen_backend, chosen);
    EXPECT_EQ(acl().counts().copyCalls() > 0, npuCopies);
    uint64_t event = 0;
    EXPECT_EQ(kvio_transfer_ascend_event(t.handle(), &event) == KVIO_STATUS_OK, npuCopies);
    pools.expect(from, to, 0, 0, dg.L);
    EXPECT_TRUE(pools.check());
  };
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "kvio_executor_create(auto)" : "kvio_executor_create_on_npu");
    kvio::Executor ex = round == 0 ? kvio::Executor(kvio::IoBackend::Auto, 2)
                                   : kvio::Executor::npu(kvio::IoBackend::Auto, 0);
    if (round == 0) {
      EXPECT_EQ(ex.threads(), 2);  // the cpu candidate's
    }
    EXPECT_NE(ex.ascendStream(), 0u);
    const int32_t a = KVIO_BACKEND_AUTO;
    run(ex, device.pool, pinned, a, KVIO_BACKEND_KERNEL_ASCEND, true);  // backup
    run(ex, pinned, device.pool, a, KVIO_BACKEND_KERNEL_ASCEND, true);  // load
    run(ex, pinned, pageable, a, KVIO_BACKEND_CPU, false);              // host to host: cpu
    // NPU memory with pageable host memory: kernel_ascend's reason, through auto's words.
    const std::vector<int64_t> one{3};
    const kvio_transfer_desc desc{device.pool.pool().handle(),
                                  pageable.pool().handle(),
                                  one.data(),
                                  one.data(),
                                  1,
                                  0,
                                  0,
                                  dg.L};
    uint64_t transfer = 0;
    EXPECT_REJECTED(kvio_submit(ex.handle(), &desc, &transfer), KVIO_STATUS_UNSUPPORTED,
                    "the 'auto' io backend (here: cpu, or kernel_ascend for NPU memory)",
                    "pageable host memory", "'kernel_ascend'");
    EXPECT_REJECTED(kvio_executor_set_launch(ex.handle(), 2, 8), KVIO_STATUS_UNSUPPORTED,
                    "cpu, or kernel_ascend for NPU memory");
    EXPECT_EQ(transfer, 0u);
  }
  uint64_t out = 0;
  EXPECT_REJECTED(kvio_executor_create_on_npu(KVIO_BACKEND_CPU, 0, KVIO_ASCEND_OWN_STREAM, &out),
                  KVIO_STATUS_INVALID_ARGUMENT, "io backend 'cpu' does not run on an Ascend NPU",
                  "'kernel_ascend' or 'auto'");
  EXPECT_REJECTED(kvio_executor_create_on_npu(KVIO_BACKEND_AUTO, -1, KVIO_ASCEND_OWN_STREAM, &out),
                  KVIO_STATUS_INVALID_ARGUMENT, "device -1");
  EXPECT_REJECTED(kvio_executor_create_on_npu(KVIO_BACKEND_AUTO, 3, KVIO_ASCEND_OWN_STREAM, &out),
                  KVIO_STATUS_INVALID_ARGUMENT, "Ascend device 3 does not exist");
  EXPECT_EQ(out, 0u);
  // Submission order across the two candidates: a backup into pinned host pages on the NPU (held
  // on the stream, still in flight), then a cpu copy of those pages into pageable memory on the
  // same executor must copy what the backup wrote, not what the pages held before.
  {
    kvio::Executor ex(kvio::IoBackend::Auto, 2);
    SeededPair npuToPinned(device.pool, pinned, rng);
    const std::vector<int64_t> pages = expandPages({2, 5}, 4);
    npuToPinned.expect(pages, pages, 0, 0, dg.L);
    pageable.fill(kCanary);
    Image expectedPageable = pageable.capture();
    acl().holdStream();
    kvio::Transfer backup =
        kvio::transferAllLayers(ex, device.pool.pool(), pinned.pool(), pages, pages);
    EXPECT_FALSE(backup.done());
    kvio::Transfer copy = kvio::transferAllLayers(ex, pinned.pool(), pageable.pool(), pages, pages);
    acl().releaseStream();
    copy.wait();
    backup.wait();
    EXPECT_EQ(copy.info().chosen_backend, KVIO_BACKEND_CPU);
    EXPECT_TRUE(npuToPinned.check("pinned after the backup", "device"));
    applyTransfer(hg, pinned.capture(), hg, &expectedPageable, pages, pages, 0, 0, dg.L);
    EXPECT_TRUE(sameImage(expectedPageable, pageable.capture(), "pageable after the cpu copy"))
        << "the cpu copy ran before the NPU backup it was submitted after";
  }
  // kernel_ascend through the same entry point is kvio_executor_create_ascend's executor.
  kvio::Executor npu = kvio::Executor::npu(kvio::IoBackend::KernelAscend, 0);
  run(npu, device.pool, pinned, KVIO_BACKEND_KERNEL_ASCEND, KVIO_BACKEND_KERNEL_ASCEND, true);
}

// The reference's seed case 1: layer-sharded backup of an MLA pool on kernel_ascend (the host
// pool holds device layers [2, 6)), for each host layout MLA has.
TEST_F(AscendExecutorTest, LayerShardedBackup) {
  std::mt19937_64 rng(4);
  for (int32_t layout :
       {KVIO_LAYOUT_LAYER_FIRST, KVIO_LAYOUT_PAGE_FIRST, KVIO_LAYOUT_PAGE_FIRST_DIRECT}) {
    SCOPED_TRACE(layoutName(layout));
    const Geometry dg{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 8, 12, 4, 1, 576};
    const Geometry hg{KVIO_KIND_MLA, layout, Form::Allocated, 4, 14, 4, 1, 576};
    NpuPool device(dg);
    TestPool host = pinnedHost(hg);
    kvio::Executor ascend(kvio::IoBackend::KernelAscend);
    SeededPair pools(device.pool, host, rng);
    const auto srcIdx = expandPages({3, 4, 9}, 4);
    const auto dstIdx = expandPages({0, 13, 7}, 4);
    acl().reset();
    kvio::transferAllLayers(ascend, device.pool.pool(), host.pool(), srcIdx, dstIdx, 2).wait();
    pools.expect(srcIdx, dstIdx, 2, 0, 4);
    EXPECT_TRUE(pools.check("host", "device"));
    EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
  }
}

// Seed case 1 through the named dim exchange: a page_first_direct host pool holding device layers
// [2, 6) of 8 is backed up with the LayerMap form ({2, 0, 4}) and device layer 5 loaded from its
// host layer 3 ({3, 5, 1}); the one-start form cannot address such a pool.
TEST_F(AscendExecutorTest, DimExchangeOfALayerShardedHostPool) {
  std::mt19937_64 rng(9);
  const Geometry dg{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 8, 12, 4, 1, 576};
  const Geometry hg{
      KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Allocated, 4, 14, 4, 1, 576};
  NpuPool device(dg);
  TestPool host = pinnedHost(hg);
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  SeededPair backup(device.pool, host, rng);
  acl().reset();
  kvio::transferDimExchange(ascend, device.pool.pool(), host.pool(), {3, 4, 9}, {0, 13, 7},
                            kvio::LayerMap{2, 0, 4})
      .wait();
  backup.expect(expandPages({3, 4, 9}, 4), expandPages({0, 13, 7}, 4), 2, 0, 4);
  EXPECT_TRUE(backup.check("host after the backup", "device after the backup"));

  SeededPair load(host, device.pool, rng);
  kvio::transferDimExchange(ascend, host.pool(), device.pool.pool(), {13, 7}, {1, 11},
                            kvio::LayerMap{3, 5, 1})
      .wait();
  load.expect(expandPages({13, 7}, 4), expandPages({1, 11}, 4), 3, 5, 1);
  EXPECT_TRUE(load.check("device after the load", "host after the load"));
  EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
}

// MLA page_first_kv_split: latent, rope, index-K and its fp32 scales are pools of their own row
// sizes, moved by one executor; each component's run costs min(r, h) 2-D copies.
TEST_F(AscendExecutorTest, MlaKvSplitComponents) {
  std::mt19937_64 rng(5);
  const int64_t L = 4, r = 6;
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  int64_t calls = 0;
  for (int64_t rowBytes : {1024, 128, 128, 4}) {  // latent, rope, index_k, index_k_scale
    SCOPED_TRACE("row " + std::to_string(rowBytes));
    const Geometry dg{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, L, 20, 16, 1, rowBytes};
    const Geometry hg{KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Allocated, L, 24, 16, 1,
                      rowBytes};
    NpuPool device(dg);
    TestPool host = pinnedHost(hg);
    calls += exchange(ascend, host, device.pool, range(1, r), range(9, r), 0, L, rng).copyCalls();
    calls += exchange(ascend, device.pool, host, range(9, r), range(1, r), 0, L, rng).copyCalls();
  }
  EXPECT_EQ(calls, 2 * 4 * std::min(r, L));
}

// Scattered token slots: 1-D copies, batched when the runtime has aclrtMemcpyBatchAsync; when
// it answers "feature not supported" or refuses an argument (its check of each entry's device
// against the driver's, which need not match kvio's ordinal), one by one from then on, the
// bytes all right; without it, one by one.
TEST_F(AscendExecutorTest, BatchCopiesAndTheirFallBack) {
  std::mt19937_64 rng(6);
  const Geometry dg{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 1, 64, 4, 1, 96};
  const Geometry hg{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 64, 4, 1, 96};
  // Descending slots on both sides: no two rows merge, so the plan is 100 1-D copies.
  std::vector<int64_t> srcIdx, dstIdx;
  for (int64_t i = 0; i < 100; ++i) {
    srcIdx.push_back(250 - 2 * i);
    dstIdx.push_back(200 - i);
  }
  // batch; batch not supported; no batch entry point; batch refusing an argument
  for (int mode = 0; mode < 4; ++mode) {
    SCOPED_TRACE("mode " + std::to_string(mode));
    const kvio::ascend::aclError refusal = mode == 1
                                               ? kvio::ascend::ACL_ERROR_RT_FEATURE_NOT_SUPPORT
                                           : mode == 3 ? kvio::ascend::ACL_ERROR_RT_PARAM_INVALID
                                                       : kvio::ascend::ACL_SUCCESS;
    acl().install(mode != 2);
    if (refusal != kvio::ascend::ACL_SUCCESS) acl().setBatchResult(refusal);
    NpuPool device(dg);
    TestPool host = pinnedHost(hg);
    kvio::Executor ascend(kvio::IoBackend::KernelAscend);
    for (int round = 0; round < 2; ++round) {
      SeededPair pools(device.pool, host, rng);
      acl().reset();
      if (refusal != kvio::ascend::ACL_SUCCESS) acl().setBatchResult(refusal);
      kvio::transferPerLayer(ascend, device.pool.pool(), host.pool(), srcIdx, dstIdx, 0, 0).wait();
      pools.expect(srcIdx, dstIdx, 0, 0, 1);
      EXPECT_TRUE(pools.check("host", "device"));
      const AclCallCounts c = acl().counts();
      EXPECT_EQ(c.memcpy2dAsync, 0);
      if (mode == 0) {
        EXPECT_EQ(c.memcpyBatchAsync, 1);
        EXPECT_EQ(c.memcpyAsync, 0);
        EXPECT_GE(c.batchedCopies, 50);
      } else {
        // Batching is asked once per executor, then never again.
        EXPECT_EQ(c.memcpyBatchAsync, mode != 2 && round == 0 ? 1 : 0);
        EXPECT_GE(c.memcpyAsync, 50);
      }
    }
  }
}

std::string lastError() {
  return kvio_last_error();
}

::testing::AssertionResult mentions(const std::string& text,
                                    const std::vector<const char*>& parts) {
  for (const char* part : parts) {
    if (text.find(part) == std::string::npos) {
      return ::testing::AssertionFailure() << "'" << text << "' does not mention '" << part << "'";
    }
  }
  return ::testing::AssertionSuccess();
}

// A failing ACL call completes the transfer with BACKEND_ERROR and a message naming the call,
// the ACL error and the sizes; nothing is reported as success.
TEST_F(AscendExecutorTest, FailedCallsNameTheCallAndTheSizes) {
  ExchangePools pools(4, 16, 16, 8, 2, 32);
  struct Scenario {
    const char* function;
    std::vector<int64_t> pages;  // one page: 2-D per component; none merge for 1-D below
    bool scattered;
    std::vector<const char*> expected;
    kvio::ascend::aclError code = kvio::ascend::ACL_ERROR_RT_PARAM_INVALID;
    int64_t streamWaits = 0;  // aclrtSynchronizeStream calls by the submit
  };
  const std::vector<Scenario> scenarios = {
      {"aclrtMemcpy2dAsync",
       {2, 3, 4},
       false,
       {"aclrtMemcpy2dAsync failed", "ACL_ERROR_RT_PARAM_INVALID (107000)", "rows of",
        "pitches dst", "host to device", "injected failure"}},
      {"aclrtMemcpyBatchAsync",
       {},
       true,  // 20 descending slots of one layer: 1-D copies
       {"aclrtMemcpyBatchAsync failed", "ACL_ERROR_RT_MEMORY_ALLOCATION", "batch of", "failIndex"},
       // not a refused argument, which would send the copies one by one
       // (BatchCopiesAndTheirFallBack)
       kvio::ascend::ACL_ERROR_RT_MEMORY_ALLOCATION},
      // No event to complete the transfer with: the submit waits for the stream instead.
      {"aclrtRecordEvent",
       {2, 3, 4},
       false,
       {"aclrtRecordEvent failed"},
       kvio::ascend::ACL_ERROR_RT_PARAM_INVALID,
       1},
  };
  std::mt19937_64 rng(7);
  for (const Scenario& s : scenarios) {
    SCOPED_TRACE(s.function);
    acl().reset();
    acl().failCall(s.function, 0, s.code);
    std::vector<int64_t> srcIdx, dstIdx;
    if (s.scattered) {
      for (int64_t i = 0; i < 20; ++i) {
        srcIdx.push_back(100 - 3 * i);
        dstIdx.push_back(120 - 5 * i);
      }
    } else {
      srcIdx = expandPages(s.pages, 8);
      dstIdx = expandPages({9, 10, 11}, 8);
    }
    const kvio_transfer_desc desc{pools.host.pool().handle(),
                                  pools.device.pool.pool().handle(),
                                  srcIdx.data(),
                                  dstIdx.data(),
                                  static_cast<int64_t>(srcIdx.size()),
                                  0,
                                  0,
                                  s.scattered ? 1 : 4};
    uint64_t transfer = 0;
    ASSERT_EQ(kvio_submit(pools.ascend.handle(), &desc, &transfer), KVIO_STATUS_OK) << lastError();
    // Copies queued before the failed call may still be running: the transfer reports the
    // error only after the stream finished them, through its event
    // (ACopyThatFailsMidSubmitFailsItsTransferThroughItsEvent).
    EXPECT_EQ(acl().counts().synchronizeStream, s.streamWaits);
    EXPECT_EQ(kvio_transfer_is_done(transfer), 1);
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_BACKEND_ERROR);
    EXPECT_TRUE(mentions(lastError(), s.expected));
    kvio_transfer_close(transfer);
    // The executor and the pools stay usable: with the fault gone, the same executor moves
    // the same pages and the result matches the oracle (exchange() clears the fault).
    const AclCallCounts after =
        exchange(pools.ascend, pools.host, pools.device.pool, {2, 3, 4}, {9, 10, 11}, 0, 4, rng);
    EXPECT_GT(after.memcpy2dAsync, 0);
  }
  // The 1-D path without batching.
  acl().install(false);
  ExchangePools second(4, 16, 16, 8, 2, 32);
  acl().failCall("aclrtMemcpyAsync", 3, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  std::vector<int64_t> srcIdx, dstIdx;
  for (int64_t i = 0; i < 20; ++i) {
    srcIdx.push_back(100 - 3 * i);
    dstIdx.push_back(120 - 5 * i);
  }
  expectError(
      [&] {
        kvio::transferPerLayer(second.ascend, second.host.pool(), second.device.pool.pool(), srcIdx,
                               dstIdx, 0, 0)
            .wait();
      },
      KVIO_STATUS_BACKEND_ERROR,
      {"aclrtMemcpyAsync failed", "ACL_ERROR_RT_PARAM_INVALID", "bytes from 0x", "host to device"},
      "a failed aclrtMemcpyAsync");
}

// A copy that fails while a transfer is being queued, after another of its copies: the submit
// does not wait for the stream (on a caller's stream that would also wait, under the executor's
// lock, for the caller's work; aclrtSynchronizeStream is armed to fail here, which would show in
// the message). The transfer stays in flight until its event, recorded after the copies queued,
// completes, then fails naming the copy: the earlier copy's rows landed whole, the failed one's
// did not. The executor stays usable.
TEST_F(AscendExecutorTest, ACopyThatFailsMidSubmitFailsItsTransferThroughItsEvent) {
  ExchangePools pools(4, 16, 16, 8, 2, 32);
  const Geometry& sg = pools.host.geometry();
  const Geometry& dg = pools.device.pool.geometry();
  std::mt19937_64 rng(12);
  pools.host.fillRandom(rng);
  pools.device.pool.fill(kCanary);
  const Image source = pools.host.capture();
  const Image before = pools.device.pool.capture();
  const std::vector<int64_t> srcIdx = expandPages({2, 3, 4}, 8);
  const std::vector<int64_t> dstIdx = expandPages({9, 10, 11}, 8);
  Image written = before;
  applyTransfer(sg, source, dg, &written, srcIdx, dstIdx, 0, 0, 4);

  acl().reset();
  acl().holdStream();
  acl().failCall("aclrtMemcpy2dAsync", 1, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  acl().failCall("aclrtSynchronizeStream", 0, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  const kvio_transfer_desc desc{pools.host.pool().handle(),
                                pools.device.pool.pool().handle(),
                                srcIdx.data(),
                                dstIdx.data(),
                                static_cast<int64_t>(srcIdx.size()),
                                0,
                                0,
                                4};
  uint64_t transfer = 0;
  ASSERT_EQ(kvio_submit(pools.ascend.handle(), &desc, &transfer), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(acl().counts().synchronizeStream, 0) << "the submit waited for the stream";
  EXPECT_EQ(acl().counts().memcpy2dAsync, 1) << "the copies queued before the failed one";
  EXPECT_EQ(kvio_transfer_is_done(transfer), 0) << "reported before the queued copy ran";
  EXPECT_TRUE(pools.device.pool.matches(before, "device pool before the stream ran"));
  // Its event completes too, once the queued copy has run (kvio.h: check the status).
  uint64_t event = 0;
  EXPECT_EQ(kvio_transfer_ascend_event(transfer, &event), KVIO_STATUS_OK);
  EXPECT_NE(event, 0u);
  acl().releaseStream();
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_BACKEND_ERROR);
  const std::string message = lastError();
  EXPECT_TRUE(mentions(message, {"aclrtMemcpy2dAsync failed", "ACL_ERROR_RT_PARAM_INVALID"}));
  EXPECT_EQ(message.find("aclrtSynchronizeStream"), std::string::npos) << message;
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);

  // The guard zones around the device pool's buffers (one per component, layer_first) are as
  // they were, and each row is either as it was or as the whole transfer writes it; some rows
  // landed, not all.
  const Image after = pools.device.pool.capture();
  ASSERT_EQ(after.buffers.size(), before.buffers.size());
  const size_t row = static_cast<size_t>(dg.H * dg.hb);
  int64_t landed = 0, transferRows = 0;
  for (size_t b = 0; b < after.buffers.size(); ++b) {
    const size_t end = after.buffers[b].size() - after.guard;
    ASSERT_EQ((end - after.guard) % row, 0u);
    EXPECT_TRUE(std::equal(after.buffers[b].begin(),
                           after.buffers[b].begin() + static_cast<std::ptrdiff_t>(after.guard),
                           before.buffers[b].begin()));
    EXPECT_TRUE(std::equal(after.buffers[b].begin() + static_cast<std::ptrdiff_t>(end),
                           after.buffers[b].end(),
                           before.buffers[b].begin() + static_cast<std::ptrdiff_t>(end)));
    for (size_t at = after.guard; at < end; at += row) {
      const auto equal = [&](const Image& image) {
        return std::equal(after.buffers[b].begin() + static_cast<std::ptrdiff_t>(at),
                          after.buffers[b].begin() + static_cast<std::ptrdiff_t>(at + row),
                          image.buffers[b].begin() + static_cast<std::ptrdiff_t>(at));
      };
      const bool asBefore = equal(before), asWritten = equal(written);
      EXPECT_TRUE(asBefore || asWritten) << "buffer " << b << ", bytes " << at << " is torn";
      if (asWritten && !asBefore) ++landed;
      if (!std::equal(before.buffers[b].begin() + static_cast<std::ptrdiff_t>(at),
                      before.buffers[b].begin() + static_cast<std::ptrdiff_t>(at + row),
                      written.buffers[b].begin() + static_cast<std::ptrdiff_t>(at))) {
        ++transferRows;
      }
    }
  }
  EXPECT_GT(landed, 0) << "the copy queued before the failed one had not run when it was reported";
  EXPECT_LT(landed, transferRows) << "the failed copy's rows landed";

  // Where the event cannot be recorded either, nothing else says when the queued copy has run:
  // the submit waits for the stream, and the message names both failures.
  acl().reset();
  acl().failCall("aclrtMemcpy2dAsync", 1, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  acl().failCall("aclrtRecordEvent", 0, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  ASSERT_EQ(kvio_submit(pools.ascend.handle(), &desc, &transfer), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(acl().counts().synchronizeStream, 1);
  EXPECT_EQ(kvio_transfer_is_done(transfer), 1);
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_BACKEND_ERROR);
  EXPECT_TRUE(mentions(lastError(), {"aclrtMemcpy2dAsync failed", "then aclrtRecordEvent failed"}));
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);

  // The same executor moves the same pages afterwards (exchange checks against the oracle).
  const AclCallCounts again =
      exchange(pools.ascend, pools.host, pools.device.pool, {2, 3, 4}, {9, 10, 11}, 0, 4, rng);
  EXPECT_GT(again.memcpy2dAsync, 0);
}

TEST_F(AscendExecutorTest, AllocationFailuresNameTheCall) {
  const Geometry g{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 8, 4, 1, 64};
  const kvio_pool_spec spec = g.spec().toC();
  uint64_t pool = 0;
  acl().failCall("aclrtMalloc", 0, kvio::ascend::ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, &pool),
            KVIO_STATUS_OUT_OF_MEMORY);
  EXPECT_TRUE(mentions(lastError(), {"aclrtMalloc", "ACL_ERROR_RT_MEMORY_ALLOCATION",
                                     "bytes on "
                                     "Ascend device 0"}));
  // Allocated device pools are zeroed (aclrtMemset) and freed (aclrtFree) when closed.
  ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, &pool), KVIO_STATUS_OK)
      << lastError();
  EXPECT_EQ(acl().live().deviceAllocations, 1);
  kvio_pool_close(pool);
  EXPECT_EQ(acl().live().deviceAllocations, 0);
  EXPECT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 3, &pool),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lastError(), {"Ascend device 3 does not exist"}));
}

// Caller host memory wrapped as Ascend pinned memory is page-locked with aclrtHostRegisterV2
// (ACL_HOST_REG_PINNED; aclrtHostRegister only maps it for the NPU's NIC, and a copy from such
// memory fails as it runs: the emulation counts it as a fault, which the fixture checks after
// every test) and unregistered when the pool goes; a transfer from and to it moves the bytes.
// Memory the caller pinned itself with V2 is HOST to aclrtPointerGetAttributes at both ends: it is
// used as given and stays registered after the pool closes. A runtime without that query cannot
// say what the caller's registration covers: the wrap is refused with the reason (lifetime_test
// has the rest).
TEST_F(AscendExecutorTest, WrappedHostMemoryIsPinnedWithHostRegisterV2) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerComponent, 2, 8, 4, 2, 16};
  std::mt19937_64 rng(44);
  {
    TestPool host(g, KVIO_MEMORY_ASCEND_HOST_PINNED, 0);
    EXPECT_EQ(acl().live().registrations, registrationsFor(host.buffers()));
    EXPECT_EQ(kvioRegistrations(), registrationsFor(host.buffers()));
    NpuPool device(dg);
    kvio::Executor ascend{kvio::IoBackend::KernelAscend};
    const std::vector<int64_t> pages = expandPages(range(0, 8), 4);
    const std::vector<int64_t> reversed = expandPages({7, 6, 5, 4, 3, 2, 1, 0}, 4);
    SeededPair load(host, device.pool, rng);
    acl().reset();
    kvio::transferAllLayers(ascend, host.pool(), device.pool.pool(), pages, reversed).wait();
    load.expect(pages, reversed, 0, 0, 2);
    EXPECT_TRUE(load.check("device pool", "host pool"));
    SeededPair backup(device.pool, host, rng);
    kvio::transferAllLayers(ascend, device.pool.pool(), host.pool(), reversed, pages).wait();
    backup.expect(reversed, pages, 0, 0, 2);
    EXPECT_TRUE(backup.check("host pool", "device pool"));
    std::string fault;
    EXPECT_EQ(acl().faults(&fault), 0) << fault;
    EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
  }
  EXPECT_EQ(acl().live().registrations, 0);
  std::vector<uint8_t> block(static_cast<size_t>(g.regionBytes()) + 4096);
  void* buffer =
      reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(block.data()) + 4095) / 4096 * 4096);
  const kvio::ascend::AclApi api = acl().table();
  ASSERT_EQ(api.hostRegisterV2(buffer, static_cast<uint64_t>(g.regionBytes()),
                               kvio::ascend::ACL_HOST_REG_PINNED),
            kvio::ascend::ACL_SUCCESS);
  const kvio_pool_spec spec = g.spec().toC();
  uint64_t pool = 0;
  acl().reset();
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                  reinterpret_cast<uint64_t>(buffer),
                                  static_cast<uint64_t>(g.regionBytes()), &pool),
            KVIO_STATUS_OK)
      << lastError();
  EXPECT_EQ(kvioRegistrations(), 0);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(acl().counts().hostRegisterV2, 0);
  EXPECT_EQ(acl().counts().hostUnregister, 0);
  EXPECT_EQ(acl().live().registrations, 1);  // the caller's registration stays
  // Without aclrtPointerGetAttributes, kvio tries to pin it and the runtime says "registered".
  acl().install(true, true, false);
  pool = 0;
  EXPECT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                  reinterpret_cast<uint64_t>(buffer),
                                  static_cast<uint64_t>(g.regionBytes()), &pool),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lastError(), {"registered already", "not by kvio", "aclrtHostRegisterV2",
                                     "Unregister it and let kvio register the memory"}))
      << lastError();
  EXPECT_EQ(acl().live().registrations, 1);  // the caller's registration stays
  EXPECT_EQ(api.hostUnregister(buffer), kvio::ascend::ACL_SUCCESS);
}

// kvio's aclrtHostUnregister fails when the last pool over wrapped memory closes: the runtime
// still holds the registration, so kvio keeps it as stale and counted. A later wrap of those
// pages retries the unregistration first: refused while it still fails, saying so (not "in use
// by another device", nor "the caller's registration"); pinned afresh once it succeeds.
TEST_F(AscendExecutorTest, PagesWhoseUnregistrationFailedArePinnedAgainOnlyOnceItEnds) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  std::vector<uint8_t> block(static_cast<size_t>(g.regionBytes()) + 4096);
  void* buffer =
      reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(block.data()) + 4095) / 4096 * 4096);
  const kvio_pool_spec spec = g.spec().toC();
  const auto wrap = [&](uint64_t* pool) {
    return kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                 reinterpret_cast<uint64_t>(buffer),
                                 static_cast<uint64_t>(g.regionBytes()), pool);
  };
  int64_t before = 0;
  ASSERT_EQ(kvio_debug_live_host_registrations(&before), KVIO_STATUS_OK);
  uint64_t pool = 0;
  ASSERT_EQ(wrap(&pool), KVIO_STATUS_OK) << lastError();
  acl().failCall("aclrtHostUnregister", 0, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 1);  // the runtime kept it
  int64_t live = 0;
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before + 1);
  acl().failCall("aclrtHostUnregister", 0, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  uint64_t again = 0;
  EXPECT_EQ(wrap(&again), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(
      lastError(), {"could not unregister", "ACL may still hold the pages", "Wrap other memory"}))
      << lastError();
  EXPECT_EQ(again, 0u);
  EXPECT_EQ(acl().live().registrations, 1);
  // The runtime lets go at the next retry: the pages are pinned afresh, the stale one uncounted.
  ASSERT_EQ(wrap(&again), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(acl().live().registrations, 1);
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before + 1);
  EXPECT_EQ(kvio_pool_close_wait(again, -1), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 0);
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before);
  // A stale registration gone behind kvio's back (the caller unregistered it, a device reset):
  // the retry's "not registered" ends it too, and the pages are pinned afresh.
  ASSERT_EQ(wrap(&pool), KVIO_STATUS_OK) << lastError();
  acl().failCall("aclrtHostUnregister", 0, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  const kvio::ascend::AclApi api = acl().table();
  EXPECT_EQ(api.hostUnregister(buffer), kvio::ascend::ACL_SUCCESS);
  ASSERT_EQ(wrap(&again), KVIO_STATUS_OK) << lastError();
  EXPECT_EQ(acl().live().registrations, 1);
  EXPECT_EQ(kvio_pool_close_wait(again, -1), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 0);
  ASSERT_EQ(kvio_debug_live_host_registrations(&live), KVIO_STATUS_OK);
  EXPECT_EQ(live, before);
}

// A runtime without aclrtHostRegisterV2 (CANN before 8.5) cannot pin caller memory: wrapping
// pageable memory as Ascend pinned memory is refused with the reason and what to do (with or
// without aclrtPointerGetAttributes to tell it pageable), nothing is registered, and pools kvio
// allocates (aclrtMallocHost) still move.
TEST_F(AscendExecutorTest, WithoutHostRegisterV2WrappingAsPinnedIsRefused) {
  for (const bool withQuery : {false, true}) {
    SCOPED_TRACE(withQuery ? "with aclrtPointerGetAttributes" : "without");
    acl().install(true, false, withQuery);
    const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
    std::vector<uint8_t> buffer(static_cast<size_t>(g.regionBytes()), 5);
    const kvio_pool_spec spec = g.spec().toC();
    uint64_t pool = 0;
    EXPECT_REJECTED(
        kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                              reinterpret_cast<uint64_t>(buffer.data()), buffer.size(), &pool),
        KVIO_STATUS_UNSUPPORTED, "has no aclrtHostRegisterV2", "region 0 of the pool",
        withQuery ? "is pageable host memory" : "has no aclrtPointerGetAttributes");
    EXPECT_TRUE(mentions(lastError(), {"KVIO_MEMORY_ASCEND_HOST_PINNED", "does not pin",
                                       "kvio_pool_allocate_memory", "aclrtMallocHost"}))
        << lastError();
    EXPECT_EQ(pool, 0u);
    EXPECT_EQ(acl().live().registrations, 0);
    EXPECT_EQ(kvioRegistrations(), 0);
  }
  // The runtime as the last round installed it (no V2, with the query): kvio's own pools move.
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 16};
  std::mt19937_64 rng(45);
  TestPool host =
      pinnedHost(Geometry{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 16});
  NpuPool device(dg);
  kvio::Executor ascend{kvio::IoBackend::KernelAscend};
  SeededPair pools(host, device.pool, rng);
  const std::vector<int64_t> idx = range(0, g.S());
  kvio::transferAllLayers(ascend, host.pool(), device.pool.pool(), idx, idx).wait();
  pools.expect(idx, idx, 0, 0, 2);
  EXPECT_TRUE(pools.check("device pool", "host pool"));
  EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
}

// Host memory pinned already (aclrtMallocHost: torch_npu's pinned tensors, sglang's NPU host
// pool) is recognised with aclrtPointerGetAttributes and used as given, on the runtimes most
// people run: without aclrtHostRegisterV2 (CANN before 8.5) and on an OS kernel of 5.10 (where
// V2 may not pin pageable memory). Both directions move exactly the oracle's bytes; kvio
// registers nothing, and closing the pool neither unregisters nor frees the caller's memory.
TEST_F(AscendExecutorTest, AclPinnedMemoryIsWrappedAsGivenWithoutV2OnAnOldKernel) {
  acl().install(true, false);
  FakeKernelRelease kernel(kOpenEuler2203);
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::PerComponent, 2, 8, 4, 2, 16};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerComponent, 2, 8, 4, 2, 16};
  std::mt19937_64 rng(46);
  std::vector<std::shared_ptr<void>> tags;  // untagged after the pool is gone
  {
    TestPool host(g, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, aclMallocHost(&tags));
    ASSERT_EQ(tags.size(), 2u);
    EXPECT_GE(acl().counts().pointerGetAttributes, 4);  // first and last byte of K and of V
    EXPECT_EQ(acl().live().registrations, 0);
    EXPECT_EQ(kvioRegistrations(), 0);
    NpuPool device(dg);
    loadAndBackUp(host, device, expandPages(range(0, 8), 4),
                  expandPages({7, 6, 5, 4, 3, 2, 1, 0}, 4), 2, rng);
    EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
    acl().reset();
  }
  const AclCallCounts closed = acl().counts();
  EXPECT_EQ(closed.hostRegisterV2, 0);
  EXPECT_EQ(closed.hostUnregister, 0);
  EXPECT_EQ(closed.freeHost, 0);
  EXPECT_EQ(acl().live().hostAllocations, 2);  // the caller's, still tagged
}

// Memory from the emulation's own aclrtMallocHost, wrapped and closed: the caller's allocation is
// still allocated, unregistered by nobody, its bytes as they were; the caller frees it.
TEST_F(AscendExecutorTest, ClosingAPoolOverAclMallocHostMemoryLeavesItToTheCaller) {
  acl().install(true, false);
  FakeKernelRelease kernel(kOpenEuler2203);
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const kvio::ascend::AclApi api = acl().table();
  const size_t bytes = static_cast<size_t>(g.regionBytes());
  void* buffer = nullptr;
  ASSERT_EQ(api.mallocHost(&buffer, bytes), kvio::ascend::ACL_SUCCESS);
  std::memset(buffer, 0x5A, bytes);
  const kvio_pool_spec spec = g.spec().toC();
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                  reinterpret_cast<uint64_t>(buffer), bytes, &pool),
            KVIO_STATUS_OK)
      << lastError();
  int32_t kind = -1, device = -1;
  EXPECT_EQ(kvio_pool_memory(pool, &kind, &device), KVIO_STATUS_OK);
  EXPECT_EQ(kind, KVIO_MEMORY_ASCEND_HOST_PINNED);
  EXPECT_EQ(device, 0);
  acl().reset();
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(acl().counts().hostUnregister, 0);
  EXPECT_EQ(acl().counts().freeHost, 0);
  EXPECT_EQ(acl().live().hostAllocations, 1);
  EXPECT_EQ(acl().live().registrations, 0);
  const std::vector<uint8_t> expected(bytes, 0x5A);
  EXPECT_EQ(std::memcmp(buffer, expected.data(), bytes), 0);
  EXPECT_EQ(api.freeHost(buffer), kvio::ascend::ACL_SUCCESS);
}

// A region that is only partly pinned (its first byte pageable and its last in aclrtMallocHost
// memory, or the other way round) cannot be used as given and must not be pinned over the
// caller's allocation: refused (INVALID_ARGUMENT, saying what was found and what to do) with
// nothing registered and no byte changed. Wrapping NPU memory as pinned host memory is refused
// too, naming the device kind to use.
TEST_F(AscendExecutorTest, RegionsPartlyPinnedOrOnTheNpuAreRefused) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const kvio_pool_spec spec = g.spec().toC();
  const size_t bytes = static_cast<size_t>(g.regionBytes());
  AlignedBlock block(bytes);
  uint8_t* const region = block.region();
  for (const bool pinnedFirst : {false, true}) {
    SCOPED_TRACE(pinnedFirst ? "first half pinned" : "second half pinned");
    std::shared_ptr<void> tag = pinnedFirst ? acl().tagPinnedHost(region, bytes / 2)
                                            : acl().tagPinnedHost(region + bytes / 2, bytes / 2);
    acl().reset();
    uint64_t pool = 0;
    EXPECT_REJECTED(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                          reinterpret_cast<uint64_t>(region), bytes, &pool),
                    KVIO_STATUS_INVALID_ARGUMENT, "region 0 of the pool", "partly pinned", "HOST",
                    "UNREGISTERED", "aclrtMallocHost", "inside one pinned buffer");
    EXPECT_EQ(pool, 0u);
    EXPECT_EQ(acl().counts().hostRegisterV2, 0);
    EXPECT_EQ(acl().live().registrations, 0);
    EXPECT_EQ(kvioRegistrations(), 0);
    EXPECT_TRUE(block.untouched());
  }
  std::shared_ptr<void> onNpu = acl().tagDevice(region, bytes, 0);
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                        reinterpret_cast<uint64_t>(region), bytes, &pool),
                  KVIO_STATUS_INVALID_ARGUMENT, "is not host memory", "DEVICE (NPU memory)",
                  "NPU device 0", "KVIO_MEMORY_ASCEND_DEVICE");
  EXPECT_EQ(acl().live().registrations, 0);
  EXPECT_TRUE(block.untouched());
}

// Memory wrapped as NPU memory is asked about where the runtime can tell (first and last byte):
// host memory, or an NPU buffer shorter than the region, is refused at the wrap with what the
// runtime said, not left to fault the NPU's DMA mid-transfer. Nothing is written or registered.
// The runtime's device id is not compared (it may be the physical id): memory of device 1
// wrapped for device 0 is accepted, as before. Without the query, memory is used as given.
TEST_F(AscendExecutorTest, WrappedNpuMemoryIsAskedAboutWhereTheRuntimeCanTell) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const kvio_pool_spec spec = g.spec().toC();
  const size_t bytes = static_cast<size_t>(g.regionBytes());
  AlignedBlock block(bytes);
  uint8_t* const region = block.region();
  const auto wrap = [&](uint64_t* pool) {
    return kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0,
                                 reinterpret_cast<uint64_t>(region), bytes, pool);
  };
  uint64_t pool = 0;
  EXPECT_REJECTED(wrap(&pool), KVIO_STATUS_INVALID_ARGUMENT, "region 0 of the pool",
                  "is not NPU memory:", "UNREGISTERED (pageable host memory)",
                  "as KVIO_MEMORY_ASCEND_HOST_PINNED");
  EXPECT_EQ(pool, 0u);
  {
    std::shared_ptr<void> pinned = acl().tagPinnedHost(region, bytes);
    EXPECT_REJECTED(wrap(&pool), KVIO_STATUS_INVALID_ARGUMENT,
                    "is not NPU memory:", "HOST (pinned or registered host memory)");
  }
  {
    std::shared_ptr<void> shortBuffer = acl().tagDevice(region, bytes / 2, 0);
    EXPECT_REJECTED(wrap(&pool), KVIO_STATUS_INVALID_ARGUMENT, "is not NPU memory to its end",
                    "its first byte is DEVICE (NPU memory) and its last byte UNREGISTERED",
                    "past the end of an NPU allocation");
  }
  EXPECT_EQ(pool, 0u);
  EXPECT_EQ(acl().live().registrations, 0);
  EXPECT_EQ(acl().counts().hostRegisterV2, 0);
  EXPECT_TRUE(block.untouched());
  {
    std::shared_ptr<void> otherDevice = acl().tagDevice(region, bytes, 1);
    ASSERT_EQ(wrap(&pool), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
  }
  // A query that fails is no answer: used as given, the runtime's text of it not left behind.
  acl().failCall("aclrtPointerGetAttributes", 0, kvio::ascend::ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  ASSERT_EQ(wrap(&pool), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_STREQ(acl().table().getRecentErrMsg(), "");
  EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
  acl().install(true, true, false);  // a runtime without aclrtPointerGetAttributes
  ASSERT_EQ(wrap(&pool), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_pool_close_wait(pool, -1), KVIO_STATUS_OK);
  EXPECT_TRUE(block.untouched());
}

// A pool whose K buffer is aclrtMallocHost memory and whose V buffer is pageable: kvio pins V
// (its registration) and uses K as given; both move; closing the pool ends kvio's registration
// of V only.
TEST_F(AscendExecutorTest, PoolOfPinnedAndPageableBuffersPinsOnlyThePageableOnes) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::PerComponent, 2, 8, 4, 2, 16};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerComponent, 2, 8, 4, 2, 16};
  std::mt19937_64 rng(47);
  std::vector<std::shared_ptr<void>> tags;
  int64_t pinned = 0;
  {
    TestPool host(g, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, aclMallocHost(&tags, 0));
    ASSERT_EQ(tags.size(), 1u);
    pinned = registrationsFor({host.buffers()[1]});  // V's, kvio's
    EXPECT_EQ(acl().live().registrations, pinned);
    EXPECT_EQ(kvioRegistrations(), pinned);
    NpuPool device(dg);
    loadAndBackUp(host, device, expandPages({1, 3, 5, 7}, 4), expandPages({6, 4, 2, 0}, 4), 2, rng);
    EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
    acl().reset();
  }
  EXPECT_EQ(acl().counts().hostUnregister, pinned);
  EXPECT_EQ(acl().counts().freeHost, 0);
  EXPECT_EQ(acl().live().registrations, 0);
  EXPECT_EQ(kvioRegistrations(), 0);
}

// aclrtPointerGetAttributes answers HOST for pages kvio pinned for another pool too; such a
// region is kvio's, not the caller's: the second pool shares kvio's registration (and keeps it
// after the first pool closes) instead of taking it as given and losing it under a transfer.
TEST_F(AscendExecutorTest, PagesKvioPinnedAreSharedNotTakenForTheCallers) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const kvio::PoolSpec spec = g.spec();
  std::vector<uint8_t> buffer(static_cast<size_t>(g.regionBytes()) + 2 * 4096);
  void* data = buffer.data() + 100;
  const uint64_t bytes = static_cast<uint64_t>(g.regionBytes());
  auto first = std::make_unique<kvio::Pool>(
      kvio::Pool::wrap(spec, data, bytes, kvio::MemoryKind::AscendHostPinned, 0));
  kvio::Pool second = kvio::Pool::wrap(spec, data, bytes, kvio::MemoryKind::AscendHostPinned, 0);
  const int64_t pieces = registrationsFor(data, bytes);
  EXPECT_EQ(acl().live().registrations, pieces);
  first.reset();
  EXPECT_EQ(acl().live().registrations, pieces);  // the second pool still holds them
  EXPECT_EQ(kvioRegistrations(), pieces);
  NpuPool device(dg);
  kvio::Executor ascend{kvio::IoBackend::KernelAscend};
  const std::vector<int64_t> idx = range(0, g.S());
  kvio::transferAllLayers(ascend, device.pool.pool(), second, idx, idx).wait();
  std::string fault;
  EXPECT_EQ(acl().faults(&fault), 0) << fault;
}

// Where aclrtPointerGetAttributes cannot answer (here "feature not supported"), kvio pins the
// region as it did before the query existed (V2, its registry); without V2 the refusal says
// what the query answered.
TEST_F(AscendExecutorTest, WhenThePointerQueryFailsRegionsArePinnedAsBefore) {
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const kvio_pool_spec spec = g.spec().toC();
  std::vector<uint8_t> buffer(static_cast<size_t>(g.regionBytes()), 9);
  acl().failCall("aclrtPointerGetAttributes", 0, kvio::ascend::ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                  reinterpret_cast<uint64_t>(buffer.data()), buffer.size(), &pool),
            KVIO_STATUS_OK)
      << lastError();
  EXPECT_EQ(acl().live().registrations, registrationsFor(buffer.data(), buffer.size()));
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().registrations, 0);
  acl().install(true, false);
  acl().failCall("aclrtPointerGetAttributes", 0, kvio::ascend::ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
  pool = 0;
  EXPECT_REJECTED(
      kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                            reinterpret_cast<uint64_t>(buffer.data()), buffer.size(), &pool),
      KVIO_STATUS_UNSUPPORTED, "has no aclrtHostRegisterV2", "aclrtPointerGetAttributes(0x",
      "ACL_ERROR_RT_FEATURE_NOT_SUPPORT");
  EXPECT_EQ(pool, 0u);
}

// The path of runtimes without aclrtPointerGetAttributes is as it was: every wrapped region is
// pinned with V2 through kvio's registry, aclrtMallocHost memory included (the runtime
// registers it; kvio unregisters it when the pool closes, and never frees it); without V2 as
// well, even aclrtMallocHost memory is refused, saying that the query is missing; and on a
// 5.10 kernel pageable memory is refused with or without the query.
TEST_F(AscendExecutorTest, WithoutThePointerQueryWrappedMemoryIsPinnedAsBefore) {
  acl().install(true, true, false);
  const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 16};
  const kvio_pool_spec spec = g.spec().toC();
  std::mt19937_64 rng(48);
  std::vector<std::shared_ptr<void>> tags;
  int64_t pinned = 0;
  {
    TestPool host(g, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, aclMallocHost(&tags));
    EXPECT_EQ(acl().counts().pointerGetAttributes, 0);
    pinned = registrationsFor(host.buffers());
    EXPECT_EQ(acl().counts().hostRegisterV2, pinned);
    EXPECT_EQ(kvioRegistrations(), pinned);
    NpuPool device(dg);
    kvio::Executor ascend{kvio::IoBackend::KernelAscend};
    const std::vector<int64_t> idx = range(0, g.S());
    SeededPair load(host, device.pool, rng);
    kvio::transferAllLayers(ascend, host.pool(), device.pool.pool(), idx, idx).wait();
    load.expect(idx, idx, 0, 0, 2);
    EXPECT_TRUE(load.check("device pool", "host pool"));
    acl().reset();
  }
  EXPECT_EQ(acl().counts().hostUnregister, pinned);
  EXPECT_EQ(acl().counts().freeHost, 0);
  EXPECT_EQ(acl().live().registrations, 0);
  tags.clear();

  acl().install(true, false, false);
  std::vector<uint8_t> block(static_cast<size_t>(g.regionBytes()) + 4096);
  uint8_t* data =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(block.data()) + 4095) / 4096 * 4096);
  std::shared_ptr<void> tag = acl().tagPinnedHost(data, static_cast<uint64_t>(g.regionBytes()));
  uint64_t pool = 0;
  EXPECT_REJECTED(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                        reinterpret_cast<uint64_t>(data),
                                        static_cast<uint64_t>(g.regionBytes()), &pool),
                  KVIO_STATUS_UNSUPPORTED, "has no aclrtPointerGetAttributes",
                  "has no aclrtHostRegisterV2", "kvio_pool_allocate_memory");
  tag.reset();

  FakeKernelRelease kernel(kOpenEuler2203);
  for (const bool withQuery : {false, true}) {
    SCOPED_TRACE(withQuery ? "with aclrtPointerGetAttributes" : "without");
    acl().install(true, true, withQuery);
    EXPECT_REJECTED(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0,
                                          reinterpret_cast<uint64_t>(data),
                                          static_cast<uint64_t>(g.regionBytes()), &pool),
                    KVIO_STATUS_UNSUPPORTED, kOpenEuler2203, "kernels 5.10 and older",
                    "aclrtMallocHost", "kvio_pool_allocate_memory");
    EXPECT_EQ(acl().live().registrations, 0);
  }
}

// acl_rt.h asks aclrtMemcpyAsync's device-to-device copies for 64-byte-aligned addresses. kvio
// does not re-align: a device-to-device transfer of rows of 24 bytes issues copies at addresses
// that are not; on a runtime that refuses them (the emulation's switch) the transfer fails with
// BACKEND_ERROR naming the call, the direction and the sizes, as any refused call does.
TEST_F(AscendExecutorTest, UnalignedDeviceToDeviceCopiesFailWhereTheRuntimeRefusesThem) {
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 12};
  NpuPool src(dg);
  NpuPool dst(dg);
  kvio::Executor ascend{kvio::IoBackend::KernelAscend};
  const std::vector<int64_t> from = {1, 5, 9};
  const std::vector<int64_t> to = {3, 7, 11};
  std::mt19937_64 rng(49);
  {
    SeededPair pools(src.pool, dst.pool, rng);  // the switch off: the copies run
    kvio::transferAllLayers(ascend, src.pool.pool(), dst.pool.pool(), from, to).wait();
    pools.expect(from, to, 0, 0, 2);
    EXPECT_TRUE(pools.check());
  }
  acl().refuseUnalignedDeviceCopies(true);
  expectError(
      [&] { kvio::transferAllLayers(ascend, src.pool.pool(), dst.pool.pool(), from, to).wait(); },
      KVIO_STATUS_BACKEND_ERROR,
      {"aclrtMemcpyAsync failed", "ACL_ERROR_INVALID_PARAM", "device to device", "64-byte"},
      "an unaligned device-to-device copy");
}

// The emulation saw one copy fail when it ran, the one failTask chose.
void expectOneCopyFailedOnTheDevice() {
  std::string fault;
  EXPECT_EQ(acl().faults(&fault), 1);
  EXPECT_NE(fault.find("failed on the device"), std::string::npos) << fault;
}

// A copy the runtime accepted that fails on the device (a DMA error). Where the context stops on
// failure (a stream of it set to ACL_STOP_ON_FAILURE: the mode docs/ascend.md asks for), every
// event query and wait reports it: the transfer fails with BACKEND_ERROR naming the error,
// whether waited for without a timeout (aclrtSynchronizeEvent), with one or polled
// (aclrtQueryEventStatus), and the next transfer is refused at its first copy. (In the default
// mode nothing reports it to kvio: the emulation's own test above.)
TEST_F(AscendExecutorTest, ACopyThatFailsOnTheDeviceFailsItsTransferWhereTheContextStops) {
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 64};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 64};
  NpuPool device(dg);
  TestPool host = pinnedHost(hg);
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  const std::vector<int64_t> idx = expandPages({1, 4, 6}, 4);
  struct Wait {
    const char* how;
    int64_t timeoutNs;
    const char* call;  // the one that reports the failure
  };
  for (const Wait& wait : {Wait{"waited for", -1, "aclrtSynchronizeEvent"},
                           Wait{"waited for with a timeout", 1000000000, "aclrtQueryEventStatus"},
                           Wait{"polled", 0, "aclrtQueryEventStatus"}}) {
    SCOPED_TRACE(wait.how);
    acl().reset();
    acl().stopOnFailure(true);
    acl().deferWork();
    acl().failTask(1);  // the transfer's second copy
    uint64_t transfer = 0;
    ASSERT_EQ(kvio_submit_args(ascend.handle(), device.pool.pool().handle(), host.pool().handle(),
                               idx.data(), idx.data(), static_cast<int64_t>(idx.size()), 0, 0, dg.L,
                               &transfer),
              KVIO_STATUS_OK)
        << kvio_last_error();
    kvio_status status = KVIO_STATUS_TIMEOUT;
    for (int i = 0; i < 100 && status == KVIO_STATUS_TIMEOUT; ++i) {
      status = kvio_transfer_wait(transfer, wait.timeoutNs);
    }
    const std::string message = kvio_last_error();
    EXPECT_EQ(status, KVIO_STATUS_BACKEND_ERROR) << message;
    for (const char* part : {wait.call, "ACL_ERROR_RT_SYS_DMA", "507013"}) {
      EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
    }
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    const Image hostBefore = host.capture();
    expectError(
        [&] { kvio::transferAllLayers(ascend, device.pool.pool(), host.pool(), idx, idx).wait(); },
        KVIO_STATUS_BACKEND_ERROR, {"ACL_ERROR_RT_SYS_DMA"}, "a transfer on the stopped context");
    EXPECT_TRUE(host.matches(hostBefore, "host pool after the refused transfer"));
    expectOneCopyFailedOnTheDevice();
  }
  acl().reset();  // the fixture's TearDown asks that no copy faulted
}

// Where the context stops on failure, every event query there answers the error: a transfer
// whose copies all ran before the failed copy of a later one, and that kvio had not seen complete
// yet, fails too when waited for (BACKEND_ERROR naming the error) although its bytes moved, as
// docs/ascend.md ("Failed copies") says. The host pool holds the first transfer's bytes and none
// of the second's (its first copy failed, the rest never ran).
TEST_F(AscendExecutorTest, WhereTheContextStopsATransferNotYetSeenCompleteFailsToo) {
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 64};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 64};
  NpuPool device(dg);
  TestPool host = pinnedHost(hg);
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  std::mt19937_64 rng(49);
  SeededPair backup(device.pool, host, rng);
  const std::vector<int64_t> from1 = expandPages({1, 4}, 4), to1 = expandPages({0, 2}, 4);
  const std::vector<int64_t> from2 = expandPages({6, 7}, 4), to2 = expandPages({5, 3}, 4);
  acl().stopOnFailure(true);
  acl().holdStream();
  uint64_t first = 0, second = 0;
  ASSERT_EQ(kvio_submit_args(ascend.handle(), device.pool.pool().handle(), host.pool().handle(),
                             from1.data(), to1.data(), static_cast<int64_t>(from1.size()), 0, 0,
                             dg.L, &first),
            KVIO_STATUS_OK)
      << kvio_last_error();
  acl().failTask(0);  // the second transfer's first copy
  ASSERT_EQ(kvio_submit_args(ascend.handle(), device.pool.pool().handle(), host.pool().handle(),
                             from2.data(), to2.data(), static_cast<int64_t>(from2.size()), 0, 0,
                             dg.L, &second),
            KVIO_STATUS_OK)
      << kvio_last_error();
  acl().releaseStream();
  EXPECT_EQ(kvio_transfer_wait(first, -1), KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("ACL_ERROR_RT_SYS_DMA"), std::string::npos) << message;
  EXPECT_EQ(kvio_transfer_wait(second, -1), KVIO_STATUS_BACKEND_ERROR);
  EXPECT_EQ(kvio_transfer_close(first), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_close(second), KVIO_STATUS_OK);
  backup.expect(from1, to1, 0, 0, dg.L);
  EXPECT_TRUE(backup.check("host pool", "device pool"));
  expectOneCopyFailedOnTheDevice();
  acl().reset();  // the fixture's TearDown asks that no copy faulted
}

// An event query that fails with an error of the call (a parameter or resource error, not a
// device one) does not say that the transfer's copies stopped, and a transfer seen done drops its
// pools: the transfer is not done then (a poll answers TIMEOUT), and a later query or a wait
// (aclrtSynchronizeEvent) answers. Polled while its copies are held: TIMEOUT, nothing reported;
// waited for: done once they ran (every byte there), successful as its wait; where the wait fails
// too, the transfer fails naming both calls. (A device error's answer: the stop-on-failure tests.)
TEST_F(AscendExecutorTest, AFailedEventQueryIsNoAnswerAboutTheWork) {
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 2, 64};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 64};
  NpuPool device(dg);
  TestPool host = pinnedHost(hg);
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  std::mt19937_64 rng(53);
  SeededPair backup(device.pool, host, rng);
  const std::vector<int64_t> from = expandPages({1, 4, 6}, 4), to = expandPages({0, 2, 7}, 4);
  const auto submit = [&] {
    uint64_t transfer = 0;
    EXPECT_EQ(kvio_submit_args(ascend.handle(), device.pool.pool().handle(), host.pool().handle(),
                               from.data(), to.data(), static_cast<int64_t>(from.size()), 0, 0,
                               dg.L, &transfer),
              KVIO_STATUS_OK)
        << kvio_last_error();
    return transfer;
  };
  acl().holdStream();
  const Image before = host.capture();
  uint64_t transfer = submit();
  acl().failCall("aclrtQueryEventStatus", 0, kvio::ascend::ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(kvio_transfer_wait(transfer, 0), KVIO_STATUS_TIMEOUT) << kvio_last_error();
  EXPECT_TRUE(host.matches(before, "host pool while the copies are held"));
  acl().failCall("aclrtQueryEventStatus", 0, kvio::ascend::ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
  backup.expect(from, to, 0, 0, dg.L);
  EXPECT_TRUE(backup.check("host pool", "device pool")) << "reported done before its copies ran";
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  acl().releaseStream();

  acl().holdStream();
  transfer = submit();
  acl().failCall("aclrtQueryEventStatus", 0, kvio::ascend::ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(kvio_transfer_wait(transfer, 0), KVIO_STATUS_TIMEOUT);
  acl().failCall("aclrtSynchronizeEvent", 0, kvio::ascend::ACL_ERROR_RT_INVALID_HANDLE);
  EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_BACKEND_ERROR);
  const std::string message = kvio_last_error();
  for (const char* part : {"aclrtSynchronizeEvent reported", "107017",
                           "after aclrtQueryEventStatus reported", "107002"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  acl().releaseStream();
}

// Two wrapped host buffers of one pool that share a page: that page (the first buffer's last,
// the second's first) is registered on its own and shared, the second buffer's middle pages and
// its partial last page get their own, so the second buffer lies in three registrations and the
// first in two. A copy engine translates one registration per call (the emulation
// rejects a copy spanning two, as the CUDA and ACL runtimes may), so kvio cuts copies there too,
// as it cuts them between buffers: whole pages both ways move as the oracle says.
TEST_F(AscendExecutorTest, HostBufferSpanningSeveralRegistrationsIsCopiedInPieces) {
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::PerComponent, 2, 8, 4, 2, 100};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerComponent, 2, 8, 4, 2, 100};
  if (hostPageBytes() != 4096) GTEST_SKIP() << "laid out for 4 KiB host pages";
  const size_t bytes = static_cast<size_t>(hg.regionBytes());  // 12800: 3 pages and 512 bytes
  ASSERT_EQ(bytes % 4096, 512u);
  std::vector<uint8_t> block(2 * bytes + 2 * 4096);
  uint8_t* base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(block.data()) + 4095) / 4096 * 4096);
  // Component 1 begins in component 0's last page, 512 bytes into it.
  std::vector<void*> components{base, base + bytes};
  NpuPool device(dg);
  kvio::Executor ascend{kvio::IoBackend::KernelAscend};
  std::mt19937_64 rng(41);
  {
    kvio::Pool host = kvio::Pool::wrapComponents(hg.spec(), components, bytes,
                                                 kvio::MemoryKind::AscendHostPinned, 0);
    // With 4 KiB pages, 0: pages 0-2, 3 (its last, shared); 1: 4-5, 6.
    EXPECT_EQ(acl().live().registrations,
              registrationsFor({{reinterpret_cast<uint64_t>(base), bytes},
                                {reinterpret_cast<uint64_t>(base + bytes), bytes}}));
    const auto image = [&] {
      Image i;
      for (void* c : components) {
        i.buffers.emplace_back(static_cast<uint8_t*>(c), static_cast<uint8_t*>(c) + bytes);
      }
      return i;
    };
    // Whole pages: every token of pages 0-7 to the same token of pages 7-0 (contiguous runs).
    const std::vector<int64_t> pages = expandPages(range(0, 8), 4);
    std::vector<int64_t> reversed = expandPages({7, 6, 5, 4, 3, 2, 1, 0}, 4);
    for (bool backup : {true, false}) {
      SCOPED_TRACE(backup ? "backup" : "load");
      device.pool.fillRandom(rng);
      for (void* c : components) fillRandom(static_cast<uint8_t*>(c), bytes, rng);
      const Image deviceBefore = device.pool.capture();
      const Image hostBefore = image();
      Image expected = backup ? hostBefore : deviceBefore;
      acl().reset();
      if (backup) {
        kvio::transferAllLayers(ascend, device.pool.pool(), host, pages, reversed).wait();
        applyTransfer(dg, deviceBefore, hg, &expected, pages, reversed, 0, 0, 2);
        EXPECT_TRUE(sameImage(expected, image(), "host pool"));
        EXPECT_TRUE(sameImage(deviceBefore, device.pool.capture(), "device pool"));
      } else {
        kvio::transferAllLayers(ascend, host, device.pool.pool(), reversed, pages).wait();
        applyTransfer(hg, hostBefore, dg, &expected, reversed, pages, 0, 0, 2);
        EXPECT_TRUE(sameImage(expected, device.pool.capture(), "device pool"));
        EXPECT_TRUE(sameImage(hostBefore, image(), "host pool"));
      }
      EXPECT_EQ(acl().counts().rejected, 0) << acl().recentError();
    }
  }
  EXPECT_EQ(acl().live().registrations, 0);
}

// The memory rules: pageable host memory, host to host, CUDA kinds and another NPU's memory
// are UNSUPPORTED before any byte moves; the cpu backend refuses NPU memory.
TEST_F(AscendExecutorTest, MemoryRulesRejectBeforeMoving) {
  acl().setDeviceCount(2);
  const Geometry dg{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 4, 1, 64};
  const Geometry hg{KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 1, 64};
  NpuPool device(dg);
  NpuPool otherDevice(dg, 1);
  TestPool pinned = pinnedHost(hg);
  TestPool pinned2 = pinnedHost(hg);
  TestPool pageable(hg);
  kvio::Executor ascend(kvio::IoBackend::KernelAscend);
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  const std::vector<int64_t> idx = range(0, 8);
  struct Case {
    const kvio::Executor* executor;
    const kvio::Pool* src;
    const kvio::Pool* dst;
    const char* says;
  };
  const Case cases[] = {
      {&ascend, &pageable.pool(), &device.pool.pool(), "pageable host memory"},
      {&ascend, &pinned.pool(), &pinned2.pool(), "use the 'cpu' io backend"},
      {&ascend, &otherDevice.pool.pool(), &pinned.pool(), "belongs to Ascend device 1"},
      {&cpu, &device.pool.pool(), &pinned.pool(), "Ascend device memory"},
  };
  device.pool.fill(1);
  otherDevice.pool.fill(2);
  pinned.fill(3);
  pinned2.fill(4);
  pageable.fill(5);
  for (const Case& c : cases) {
    const Image before = device.pool.capture();
    const Image pinnedBefore = pinned.capture();
    expectError(
        [&] {
          kvio::transfer(*c.executor, *c.src, *c.dst, idx, idx, kvio::LayerMap{0, 0, 2}).wait();
        },
        KVIO_STATUS_UNSUPPORTED, {c.says}, c.says);
    EXPECT_TRUE(sameImage(before, device.pool.capture(), "device"));
    EXPECT_TRUE(sameImage(pinnedBefore, pinned.capture(), "pinned"));
  }
}

// Host memory is one address space whatever pinned it: a pageable pool and an ACL-pinned pool
// over overlapping bytes, and two ACL-pinned pools over the same bytes, share memory (pinned
// pools of two devices cannot: AscendContextTest.HostBufferWrappedForASecondDeviceIsRefused).
// The cpu backend moves every host kind, so a transfer between them is refused (submit and
// check alike) before any byte moves; the pools back to back with the pageable one are accepted.
TEST_F(AscendExecutorTest, HostPoolsOfEveryHostKindOverTheSameBytesShareMemory) {
  const Geometry g{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 1, 2, 4, 1, 4};
  const kvio_pool_spec spec = g.spec().toC();
  const uint64_t n = static_cast<uint64_t>(g.regionBytes());  // 32 bytes
  std::vector<uint8_t> buffer(static_cast<size_t>(3 * n));
  std::mt19937_64 rng(43);
  fillRandom(buffer.data(), buffer.size(), rng);
  const std::vector<uint8_t> before = buffer;
  const uint64_t base = reinterpret_cast<uint64_t>(buffer.data());
  uint64_t pageable = 0, pinned0 = 0, pinned1 = 0, adjacent = 0;
  ASSERT_EQ(kvio_pool_wrap(&spec, base, n, &pageable), KVIO_STATUS_OK) << kvio_last_error();
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, base + 4, n, &pinned0),
            KVIO_STATUS_OK)
      << kvio_last_error();
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, base + 8, n, &pinned1),
            KVIO_STATUS_OK)
      << kvio_last_error();
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, base + n, n, &adjacent),
            KVIO_STATUS_OK)
      << kvio_last_error();
  uint64_t cpu = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &cpu), KVIO_STATUS_OK);
  const std::vector<int64_t> idx = range(0, g.S());
  const uint64_t pairs[][2] = {
      {pageable, pinned0}, {pinned0, pageable}, {pinned0, pinned1}, {pinned1, pinned0}};
  for (const auto& pair : pairs) {
    const kvio_transfer_desc d{pair[0], pair[1], idx.data(), idx.data(), g.S(), 0, 0, 1};
    uint64_t transfer = 0;
    EXPECT_REJECTED(kvio_submit(cpu, &d, &transfer), KVIO_STATUS_INVALID_ARGUMENT,
                    "the source and destination pools share memory");
    EXPECT_EQ(transfer, 0u);
    EXPECT_REJECTED(kvio_check_transfer(cpu, &d, 0), KVIO_STATUS_INVALID_ARGUMENT,
                    "the source and destination pools share memory");
  }
  EXPECT_EQ(buffer, before);
  const kvio_transfer_desc apart{pageable, adjacent, idx.data(), idx.data(), g.S(), 0, 0, 1};
  EXPECT_EQ(kvio_check_transfer(cpu, &apart, 0), KVIO_STATUS_OK) << kvio_last_error();
  EXPECT_EQ(kvio_executor_close(cpu), KVIO_STATUS_OK);
  for (uint64_t pool : {pageable, pinned0, pinned1, adjacent}) {
    EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  }
}

// Moves 9 tokens of 3 layers host -> device with an executor on `stream` (which it must answer
// as its stream), checking the bytes and that it created no stream of its own.
void moveOnCallerStream(uint64_t stream) {
  const int streamsBefore = acl().live().streams;
  std::mt19937_64 rng(8);
  {
    const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 3, 8, 4, 2, 16};
    const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_HEAD, Form::Allocated, 3, 8, 4, 2, 16};
    NpuPool device(dg);
    TestPool host = pinnedHost(hg);
    kvio::Executor executor = kvio::Executor::ascend(0, stream);  // closed however this ends
    const uint64_t handle = executor.handle();
    EXPECT_EQ(acl().live().streams, streamsBefore);
    SeededPair pools(host, device.pool, rng);
    const auto srcIdx = range(5, 9);
    const auto dstIdx = range(20, 9);
    const kvio_transfer_desc desc{host.pool().handle(),
                                  device.pool.pool().handle(),
                                  srcIdx.data(),
                                  dstIdx.data(),
                                  9,
                                  0,
                                  0,
                                  3};
    uint64_t transfer = 0;
    ASSERT_EQ(kvio_submit(handle, &desc, &transfer), KVIO_STATUS_OK) << lastError();
    ASSERT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << lastError();
    uint64_t executorStream = 0, event = 0;
    EXPECT_EQ(kvio_executor_ascend_stream(handle, &executorStream), KVIO_STATUS_OK);
    EXPECT_EQ(executorStream, stream);
    EXPECT_EQ(kvio_transfer_ascend_event(transfer, &event), KVIO_STATUS_OK) << lastError();
    EXPECT_NE(event, 0u);
    EXPECT_EQ(kvio_transfer_cuda_event(transfer, &event), KVIO_STATUS_UNSUPPORTED);
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    pools.expect(srcIdx, dstIdx, 0, 0, 3);
    EXPECT_TRUE(pools.check("device", "host"));
    executor.close();
  }
  EXPECT_EQ(acl().live().streams, streamsBefore);  // the caller's stream is left alive
}

// An executor on a caller's stream orders its work there and leaves the stream alive.
TEST_F(AscendExecutorTest, CallerStream) {
  const kvio::ascend::AclApi api = acl().table();
  kvio::ascend::aclrtStream stream = nullptr;
  ASSERT_EQ(api.createStream(&stream), kvio::ascend::ACL_SUCCESS);
  moveOnCallerStream(reinterpret_cast<uint64_t>(stream));
  EXPECT_EQ(acl().live().streams, 1);
  EXPECT_EQ(api.destroyStream(stream), kvio::ascend::ACL_SUCCESS);
}

// Stream 0 is the device's default stream (a null aclrtStream, as in ACL's calls), not a request
// for a stream of kvio's own (KVIO_ASCEND_OWN_STREAM).
TEST_F(AscendExecutorTest, StreamZeroIsTheDefaultStream) {
  const int64_t rejected = acl().counts().rejected;
  moveOnCallerStream(0);
  EXPECT_EQ(acl().counts().rejected, rejected) << acl().recentError();  // e.g. destroying it
  uint64_t own = 0, stream = 0;
  ASSERT_EQ(kvio_executor_create_ascend(0, KVIO_ASCEND_OWN_STREAM, &own), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().streams, 1);
  EXPECT_EQ(kvio_executor_ascend_stream(own, &stream), KVIO_STATUS_OK);
  EXPECT_NE(stream, 0u);
  EXPECT_EQ(kvio_executor_close(own), KVIO_STATUS_OK);
  EXPECT_EQ(acl().live().streams, 0);
}

// While the executor's stream is being captured into a graph (aclmdlRICaptureBegin, torch_npu's
// NPU graphs), a submit is refused before anything is queued: its copies and completion event
// would be recorded into the graph and never run. kernel_ascend and auto on an NPU, kvio's own
// stream and a caller's, an active capture and an invalidated one not yet ended; once the
// capture ends, transfers run again.
TEST_F(AscendExecutorTest, ASubmitOnAStreamBeingCapturedIsRefusedAndNothingIsQueued) {
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 8, 4, 2, 16};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 16};
  const kvio::ascend::AclApi api = acl().table();
  kvio::ascend::aclrtStream callers = nullptr;
  ASSERT_EQ(api.createStream(&callers), kvio::ascend::ACL_SUCCESS);
  const auto slots = range(1, 6);
  std::mt19937_64 rng(17);
  for (const int32_t backend : {KVIO_BACKEND_KERNEL_ASCEND, KVIO_BACKEND_AUTO}) {
    for (const bool own : {true, false}) {
      for (const auto status : {kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE,
                                kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED}) {
        const bool active = status == kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE;
        SCOPED_TRACE(std::string(kvio_name(KVIO_NAME_BACKEND, backend)) +
                     (own ? ", kvio's stream" : ", the caller's stream") +
                     (active ? ", capture active" : ", capture invalidated"));
        NpuPool device(dg);
        TestPool host = pinnedHost(hg);
        struct Closed {  // however this ends
          uint64_t handle = 0;
          ~Closed() {
            if (handle != 0) {
              EXPECT_EQ(kvio_executor_close(handle), KVIO_STATUS_OK);
            }
          }
        } executor;
        ASSERT_EQ(
            kvio_executor_create_on_npu(
                backend, 0, own ? KVIO_ASCEND_OWN_STREAM : reinterpret_cast<uint64_t>(callers),
                &executor.handle),
            KVIO_STATUS_OK)
            << lastError();
        uint64_t stream = 0;
        ASSERT_EQ(kvio_executor_ascend_stream(executor.handle, &stream), KVIO_STATUS_OK);
        SeededPair refused(host, device.pool, rng);
        acl().setCapture(reinterpret_cast<void*>(stream), status);
        const AclCallCounts before = acl().counts();
        uint64_t transfer = 0;
        EXPECT_TRUE(rejected(
            kvio_submit_args(executor.handle, host.pool().handle(), device.pool.pool().handle(),
                             slots.data(), slots.data(), 6, 0, 0, 2, &transfer),
            KVIO_STATUS_UNSUPPORTED,
            {active ? "being captured into a graph" : "invalidated and not yet ended",
             "aclmdlRICaptureGetInfo", "before or after the capture"}));
        EXPECT_EQ(transfer, 0u);
        const AclCallCounts after = acl().counts();
        EXPECT_EQ(after.captured, before.captured) << "kvio queued work into the capture";
        EXPECT_EQ(after.copyCalls(), before.copyCalls());
        EXPECT_EQ(after.createEvent, before.createEvent);
        EXPECT_GT(after.captureGetInfo, before.captureGetInfo);
        EXPECT_TRUE(refused.check("device pool after the refused submit", "host pool"));
        acl().setCapture(reinterpret_cast<void*>(stream),
                         kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_NONE);
        SeededPair moved(host, device.pool, rng);
        ASSERT_EQ(
            kvio_submit_args(executor.handle, host.pool().handle(), device.pool.pool().handle(),
                             slots.data(), slots.data(), 6, 0, 0, 2, &transfer),
            KVIO_STATUS_OK)
            << lastError();
        EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << lastError();
        EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
        moved.expect(slots, slots, 0, 0, 2);
        EXPECT_TRUE(moved.check("device pool after the capture", "host pool"));
      }
    }
  }
  EXPECT_EQ(api.destroyStream(callers), kvio::ascend::ACL_SUCCESS);
}

// A pool's and an executor's whole life on a thread capturing another stream in GLOBAL mode (or
// in THREAD_LOCAL mode: the same on the capturing thread): a new NPU pool is zeroed with
// aclrtMemset, an "unsafe" call ACL forbids there unless the thread's mode is RELAXED, and one
// would fail and invalidate the capture. kvio relaxes it for the call and puts the thread's mode
// back: the capture stays active with nothing recorded into it, and the transfer moves every byte.
TEST_F(AscendExecutorTest, PoolsAndTransfersBesideACaptureLeaveItValid) {
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 8, 4, 2, 16};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 16};
  const kvio_pool_spec deviceSpec = dg.spec().toC(), hostSpec = hg.spec().toC();
  const kvio::ascend::AclApi api = acl().table();
  kvio::ascend::aclrtStream captured = nullptr;
  ASSERT_EQ(api.createStream(&captured), kvio::ascend::ACL_SUCCESS);
  const auto slots = range(1, 6);
  ASSERT_EQ(acl().threadCaptureMode(), kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
  for (const auto mode : {kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL,
                          kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL}) {
    SCOPED_TRACE(mode == kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL ? "global"
                                                                        : "thread-local");
    acl().setCapture(captured, kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE, mode);
    const AclCallCounts before = acl().counts();
    std::string failed;  // the first kvio call that failed, and why
    const auto step = [&failed](kvio_status status, const char* what) {
      if (status != KVIO_STATUS_OK && failed.empty())
        failed = std::string(what) + ": " + lastError();
      return failed.empty();
    };
    const size_t deviceBytes = static_cast<size_t>(dg.regionBytes());
    const size_t hostBytes = static_cast<size_t>(hg.regionBytes());
    Image source, expected, actual;  // the NPU pool's bytes; the host pool's, expected and read
    source.buffers.emplace_back(deviceBytes);
    std::mt19937_64 rng(23);
    fillRandom(source.buffers[0].data(), deviceBytes, rng);
    expected.buffers.emplace_back(hostBytes, 0);  // a new pool is zeroed
    actual.buffers.emplace_back(hostBytes, 0xEE);
    uint64_t devicePool = 0, hostPool = 0, executor = 0, transfer = 0;
    if (step(kvio_pool_allocate_memory(&deviceSpec, KVIO_MEMORY_ASCEND_DEVICE, 0, &devicePool),
             "allocating an NPU pool") &&
        step(kvio_pool_allocate_memory(&hostSpec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, &hostPool),
             "allocating a pinned host pool") &&
        step(kvio_pool_copy(devicePool, 0, 0, reinterpret_cast<uint64_t>(source.buffers[0].data()),
                            deviceBytes, KVIO_COPY_HOST_TO_POOL),
             "kvio_pool_copy to the NPU pool") &&
        step(kvio_executor_create_ascend(0, KVIO_ASCEND_OWN_STREAM, &executor),
             "creating an executor") &&
        step(kvio_submit_args(executor, devicePool, hostPool, slots.data(), slots.data(), 6, 0, 0,
                              2, &transfer),
             "submitting a backup")) {
      step(kvio_transfer_wait(transfer, -1), "waiting");
      step(kvio_pool_copy(hostPool, 0, 0, reinterpret_cast<uint64_t>(actual.buffers[0].data()),
                          hostBytes, KVIO_COPY_POOL_TO_HOST),
           "kvio_pool_copy from the host pool");
    }
    if (transfer != 0) step(kvio_transfer_close(transfer), "closing the transfer");
    if (executor != 0) step(kvio_executor_close(executor), "closing the executor");
    for (uint64_t pool : {devicePool, hostPool}) {
      if (pool != 0) step(kvio_pool_close_wait(pool, -1), "closing a pool");
    }
    EXPECT_TRUE(failed.empty()) << failed;
    EXPECT_EQ(acl().captureStatus(captured), kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE)
        << "the capture was invalidated";
    const AclCallCounts after = acl().counts();
    EXPECT_EQ(after.unsafeRefused, before.unsafeRefused);
    EXPECT_EQ(after.captured, before.captured);
    EXPECT_EQ(acl().threadCaptureMode(), kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL)
        << "the thread's capture mode was not put back";
    applyTransfer(dg, source, hg, &expected, slots, slots, 0, 0, 2);
    EXPECT_TRUE(sameImage(expected, actual, "host pool after the backup"));
    acl().setCapture(captured, kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  }
  EXPECT_EQ(api.destroyStream(captured), kvio::ascend::ACL_SUCCESS);
}

// The emulation's own rules for unsafe calls beside a capture, as the API reference of
// aclmdlRICaptureThreadExchangeMode states them, on the capturing thread and another one, so that
// the test above stands on rules that refuse: a GLOBAL capture forbids aclrtMemset on the
// capturing thread unless RELAXED and on others unless RELAXED or THREAD_LOCAL; a THREAD_LOCAL
// one on the capturing thread only, unless RELAXED; a RELAXED one nowhere. A refused call
// invalidates the capture.
TEST_F(AscendExecutorTest, TheEmulationForbidsUnsafeCallsBesideACaptureAsTheReferenceSays) {
  using kvio::ascend::aclmdlRICaptureMode;
  constexpr aclmdlRICaptureMode kGlobal = kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
  constexpr aclmdlRICaptureMode kThreadLocal = kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL;
  constexpr aclmdlRICaptureMode kRelaxed = kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_RELAXED;
  const kvio::ascend::AclApi api = acl().table();
  kvio::ascend::aclrtStream captured = nullptr;
  ASSERT_EQ(api.createStream(&captured), kvio::ascend::ACL_SUCCESS);
  void* memory = nullptr;
  ASSERT_EQ(api.malloc(&memory, 256, kvio::ascend::ACL_MEM_MALLOC_HUGE_FIRST),
            kvio::ascend::ACL_SUCCESS);
  // A memset on this thread (capturing) or another, in `threadMode`: allowed?
  const auto memsetAllowed = [&](bool capturing, aclmdlRICaptureMode threadMode) {
    aclError answer = kvio::ascend::ACL_SUCCESS;
    const auto call = [&] {
      aclmdlRICaptureMode mode = threadMode;
      EXPECT_EQ(api.captureThreadExchangeMode(&mode), kvio::ascend::ACL_SUCCESS);
      answer = api.memset(memory, 256, 0, 256);
      EXPECT_EQ(api.captureThreadExchangeMode(&mode), kvio::ascend::ACL_SUCCESS);
    };
    if (capturing) {
      call();
    } else {
      std::thread other([&] {
        acl().setThreadContext(acl().defaultContext(0));
        call();
      });
      other.join();
    }
    return answer == kvio::ascend::ACL_SUCCESS;
  };
  struct Rule {
    aclmdlRICaptureMode capture;
    bool capturing;
    aclmdlRICaptureMode thread;
    bool allowed;
  };
  for (const Rule& r :
       {Rule{kGlobal, true, kGlobal, false}, Rule{kGlobal, true, kThreadLocal, false},
        Rule{kGlobal, true, kRelaxed, true}, Rule{kGlobal, false, kGlobal, false},
        Rule{kGlobal, false, kThreadLocal, true}, Rule{kGlobal, false, kRelaxed, true},
        Rule{kThreadLocal, true, kGlobal, false}, Rule{kThreadLocal, true, kRelaxed, true},
        Rule{kThreadLocal, false, kGlobal, true}, Rule{kRelaxed, true, kGlobal, true},
        Rule{kRelaxed, false, kGlobal, true}}) {
    SCOPED_TRACE("capture mode " + std::to_string(r.capture) + ", " +
                 (r.capturing ? "the capturing thread" : "another thread") + " in mode " +
                 std::to_string(r.thread));
    acl().setCapture(captured, kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE, r.capture);
    const int64_t refused = acl().counts().unsafeRefused;
    EXPECT_EQ(memsetAllowed(r.capturing, r.thread), r.allowed);
    EXPECT_EQ(acl().counts().unsafeRefused, refused + (r.allowed ? 0 : 1));
    EXPECT_EQ(acl().captureStatus(captured),
              r.allowed ? kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE
                        : kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED);
    acl().setCapture(captured, kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  }
  EXPECT_EQ(api.free(memory), kvio::ascend::ACL_SUCCESS);
  EXPECT_EQ(api.destroyStream(captured), kvio::ascend::ACL_SUCCESS);
}

// Without aclmdlRICaptureThreadExchangeMode kvio cannot relax the mode: a new NPU pool's
// aclrtMemset beside a GLOBAL capture fails (the pool is not made, its memory freed, the message
// names the call) and invalidates the capture, as on such a runtime: what the test above would
// see if kvio did not relax the mode.
TEST_F(AscendExecutorTest, WithoutTheModeCallANewNpuPoolBesideACaptureFailsAndInvalidatesIt) {
  kvio::ascend::AclApi table = acl().table();
  table.captureThreadExchangeMode = nullptr;
  ASSERT_EQ(kvio_test_ascend_runtime(&table, sizeof(table)), KVIO_STATUS_OK) << lastError();
  kvio::ascend::aclrtStream captured = nullptr;
  ASSERT_EQ(table.createStream(&captured), kvio::ascend::ACL_SUCCESS);
  acl().setCapture(captured, kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE,
                   kvio::ascend::ACL_MODEL_RI_CAPTURE_MODE_GLOBAL);
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 8, 4, 2, 16};
  const kvio_pool_spec spec = dg.spec().toC();
  uint64_t pool = 0;
  EXPECT_TRUE(rejected(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, &pool),
                       KVIO_STATUS_BACKEND_ERROR, {"aclrtMemset", "zeroing"}));
  EXPECT_EQ(pool, 0u);
  EXPECT_EQ(acl().counts().unsafeRefused, 1);
  EXPECT_EQ(acl().captureStatus(captured), kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED);
  acl().setCapture(captured, kvio::ascend::ACL_MODEL_RI_CAPTURE_STATUS_NONE);
  EXPECT_EQ(table.destroyStream(captured), kvio::ascend::ACL_SUCCESS);
  acl().install();
}

// A runtime that cannot tell has no graph capture kvio could refuse, and transfers run: one
// without aclmdlRICaptureGetInfo, one answering ACL_ERROR_RT_FEATURE_NOT_SUPPORT and one whose
// query fails otherwise (each failure's text read, not left for a later call). The default
// stream (0), which a capture does not take, is not asked.
TEST_F(AscendExecutorTest, TransfersRunWhereTheRuntimeCannotTellOfACapture) {
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 8, 4, 2, 16};
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 16};
  const auto slots = range(0, 8);
  std::mt19937_64 rng(19);
  struct Variant {
    const char* what;
    bool withQuery;
    aclError answer;
    uint64_t stream;
    int64_t queries;  // aclmdlRICaptureGetInfo calls the transfer makes
  };
  for (const Variant& v :
       {Variant{"no aclmdlRICaptureGetInfo", false, kvio::ascend::ACL_SUCCESS,
                KVIO_ASCEND_OWN_STREAM, 0},
        Variant{"the query answers ACL_ERROR_RT_FEATURE_NOT_SUPPORT", true,
                kvio::ascend::ACL_ERROR_RT_FEATURE_NOT_SUPPORT, KVIO_ASCEND_OWN_STREAM, 1},
        Variant{"the query fails with ACL_ERROR_RT_PARAM_INVALID", true,
                kvio::ascend::ACL_ERROR_RT_PARAM_INVALID, KVIO_ASCEND_OWN_STREAM, 1},
        Variant{"the default stream", true, kvio::ascend::ACL_ERROR_RT_PARAM_INVALID, 0, 0}}) {
    SCOPED_TRACE(v.what);
    kvio::ascend::AclApi table = acl().table();
    if (!v.withQuery) table.captureGetInfo = nullptr;
    ASSERT_EQ(kvio_test_ascend_runtime(&table, sizeof(table)), KVIO_STATUS_OK) << lastError();
    acl().setCaptureInfoResult(v.answer);
    {
      NpuPool device(dg);
      TestPool host = pinnedHost(hg);
      kvio::Executor executor = kvio::Executor::ascend(0, v.stream);
      SeededPair moved(host, device.pool, rng);
      kvio::transferAllLayers(executor, host.pool(), device.pool.pool(), slots, slots).wait();
      moved.expect(slots, slots, 0, 0, 2);
      EXPECT_TRUE(moved.check("device pool", "host pool"));
      EXPECT_EQ(acl().counts().captureGetInfo, v.queries);
      EXPECT_STREQ(acl().table().getRecentErrMsg(), "") << "the query's error text was left";
    }
    acl().install();  // the whole table again, state reset
  }
}

// Closing an executor waits for every transfer it accepted to be done, also one that another
// thread saw complete first and is still letting go of its pools (freeing a closed pool's pinned
// memory): a later submit's reap must not drop it from the executor's list meanwhile.
TEST_F(AscendExecutorTest, CloseWaitsForATransferAnotherThreadIsStillLettingGoOf) {
  const Geometry device{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 4, 4, 2, 64};
  const Geometry host{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 4, 4, 2, 64};
  const kvio_pool_spec deviceSpec = device.spec().toC(), hostSpec = host.spec().toC();
  uint64_t executor = 0, devicePool = 0, hostPool = 0, otherHost = 0;
  ASSERT_EQ(kvio_executor_create_ascend(0, KVIO_ASCEND_OWN_STREAM, &executor), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate_memory(&deviceSpec, KVIO_MEMORY_ASCEND_DEVICE, 0, &devicePool),
            KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate_memory(&hostSpec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, &hostPool),
            KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_allocate_memory(&hostSpec, KVIO_MEMORY_ASCEND_HOST_PINNED, 0, &otherHost),
            KVIO_STATUS_OK);
  const std::vector<int64_t> slots = {0, 1, 2, 3};
  uint64_t first = 0, second = 0;
  acl().holdStream();  // `first` in flight while its host pool is closed: the pool goes with it
  ASSERT_EQ(kvio_submit_args(executor, hostPool, devicePool, slots.data(), slots.data(), 4, 0, 0, 1,
                             &first),
            KVIO_STATUS_OK);
  ASSERT_EQ(kvio_pool_close(hostPool), KVIO_STATUS_OK);
  acl().releaseStream();  // done on the device; nothing has seen it yet
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  std::atomic<bool> freeing{false};
  acl().beforeFreeHost([opened, &freeing] {
    freeing.store(true);
    opened.wait_for(std::chrono::seconds(20));
  });
  // A thread sees `first` done and lets go of its pools: the last hold on the closed host pool,
  // whose pinned memory it frees (held there by the hook).
  std::thread seer([first] { EXPECT_EQ(kvio_transfer_is_done(first), 1); });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!freeing.load() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_TRUE(freeing.load()) << "the query did not free the closed pool's memory";
  // Meanwhile a submit on the executor (its reap meets `first`), then a close on another thread.
  EXPECT_EQ(kvio_submit_args(executor, otherHost, devicePool, slots.data(), slots.data(), 4, 0, 0,
                             1, &second),
            KVIO_STATUS_OK);
  std::atomic<bool> closed{false};
  std::thread closer([executor, &closed] {
    EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
    closed.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(closed.load()) << "the close returned while a transfer it accepted was not done";
  EXPECT_EQ(kvio_transfer_is_done(first), 0) << "done while its pools are being let go of";
  open.set_value();
  seer.join();
  closer.join();
  EXPECT_TRUE(closed.load());
  EXPECT_EQ(kvio_transfer_is_done(first), 1);
  acl().beforeFreeHost(nullptr);
  EXPECT_EQ(kvio_transfer_close(first), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_close(second), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(otherHost, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_pool_close_wait(devicePool, -1), KVIO_STATUS_OK);
}

TEST_F(AscendExecutorTest, AvailabilityFollowsTheRuntime) {
  EXPECT_EQ(kvio_backend_available(KVIO_BACKEND_KERNEL_ASCEND), KVIO_STATUS_OK) << lastError();
  int32_t count = -1;
  EXPECT_EQ(kvio_ascend_device_count(&count), KVIO_STATUS_OK);
  EXPECT_EQ(count, 1);
  acl().setDeviceCount(0);
  EXPECT_EQ(kvio_backend_available(KVIO_BACKEND_KERNEL_ASCEND), KVIO_STATUS_UNAVAILABLE);
  EXPECT_TRUE(mentions(lastError(), {"no Ascend NPU", "0 devices"}));
  // The count says so too (kvio.h: UNAVAILABLE without an NPU; it answered OK with 0).
  count = -1;
  EXPECT_EQ(kvio_ascend_device_count(&count), KVIO_STATUS_UNAVAILABLE);
  EXPECT_EQ(count, 0);
  EXPECT_TRUE(mentions(lastError(), {"no Ascend NPU", "0 devices"}));
  // Asking for device 0 there is the same: no NPU (UNAVAILABLE), not a bad device number.
  uint64_t executor = 0;
  EXPECT_EQ(kvio_executor_create_ascend(0, KVIO_ASCEND_OWN_STREAM, &executor),
            KVIO_STATUS_UNAVAILABLE);
  EXPECT_TRUE(mentions(lastError(), {"no Ascend NPU", "0 devices"}));
  EXPECT_EQ(executor, 0u);
  const kvio_pool_spec spec =
      Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 8, 4, 1, 64}
          .spec()
          .toC();
  uint64_t pool = 0;
  EXPECT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_ASCEND_DEVICE, 0, &pool),
            KVIO_STATUS_UNAVAILABLE);
  EXPECT_TRUE(mentions(lastError(), {"no Ascend NPU", "0 devices"}));
  EXPECT_EQ(pool, 0u);
  acl().setDeviceCount(1);
  // Without the emulation: libascendcl.so, which these machines do not have.
  acl().uninstall();
  const kvio_status status = kvio_backend_available(KVIO_BACKEND_KERNEL_ASCEND);
  const std::string cause = lastError();
  acl().install();
  if (status == KVIO_STATUS_OK) GTEST_SKIP() << "a real ACL runtime and NPU are present";
  EXPECT_EQ(status, KVIO_STATUS_UNAVAILABLE);
  EXPECT_TRUE(mentions(cause, {"libascendcl.so"})) << cause;
}

TEST_F(AscendExecutorTest, TablesOfAnotherLayoutAreRefused) {
  const kvio::ascend::AclApi api = acl().table();
  EXPECT_EQ(kvio_test_ascend_runtime(&api, sizeof(api) - 8), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(mentions(lastError(), {"AclApi"}));
}

}  // namespace
}  // namespace kvio_test
