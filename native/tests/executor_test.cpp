// Asynchronous behaviour of executors (native/src/cpu/cpu_executor.cpp through kvio.h /
// kvio.hpp): transfers on one executor complete in submission order where they conflict
// (large queued jobs and small inline ones mixed), waits with timeouts, is_done, a pool
// closed while a transfer that uses it is in flight, several thread counts, executor close
// draining its queue, and several threads submitting at once. Results are checked against
// the oracle of oracle.hpp, whole buffers compared.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"

namespace kvio_test {
namespace {

// MLA layer_first pools of 4 KiB rows: one token of one layer is one 4 KiB row.
Geometry rows4k(int64_t layers, int64_t tokens, Form form = Form::Single) {
  return Geometry{KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, form, layers, tokens, 1, 1, 4096};
}

// The oracle's in-place comparison (TestPool::matches, which the conformance matrix checks every
// destination and source with) sees one changed byte anywhere in what capture() holds: in each
// buffer of every memory form, and in the guard zones and gaps of wrapped buffers.
TEST(OracleHarness, MatchesSeesAChangedByteAnywhereCaptureLooks) {
  std::mt19937_64 rng(5);
  for (Form form : {Form::Single, Form::PerComponent, Form::PerLayer, Form::Allocated})
    for (const Placement& placement : {apart(), carved(0), carved(kGuard)}) {
      if (form == Form::Allocated && placement.carved) continue;
      const Geometry g{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, form, 2, 3, 4, 2, 8};
      TestPool pool(g, KVIO_MEMORY_HOST, -1, placement);
      SCOPED_TRACE(g.describe() + (placement.carved ? " carved" : " apart"));
      pool.fillRandom(rng);
      const Image image = pool.capture();
      ASSERT_TRUE(pool.matches(image, "pool"));
      // The first and last byte of each buffer; for wrapped memory also the bytes around each:
      // the first, middle and last of the guard zone (apart) or gap (carved) before it and after
      // it, which spans the whole block's first and last bytes.
      std::vector<uint8_t*> bytes;
      const int64_t around = placement.carved ? static_cast<int64_t>(placement.gap) : kGuard;
      for (size_t r = 0; r < static_cast<size_t>(g.regions()); ++r) {
        uint8_t* first = pool.region(r);
        uint8_t* last = first + g.regionBytes() - 1;
        bytes.push_back(first);
        bytes.push_back(last);
        if (form == Form::Allocated) continue;
        const bool edge = !placement.carved || r == 0;  // a guard zone, not a gap, before it
        const int64_t before = edge ? kGuard : around;
        for (int64_t k : {int64_t{1}, before / 2, before}) {
          if (k > 0) bytes.push_back(first - k);
        }
        const bool end = !placement.carved || r + 1 == static_cast<size_t>(g.regions());
        const int64_t after = end ? kGuard : around;
        for (int64_t k : {int64_t{1}, after / 2, after}) {
          if (k > 0) bytes.push_back(last + k);
        }
      }
      for (uint8_t* b : bytes) {
        *b ^= 0x40;
        const ::testing::AssertionResult seen = pool.matches(image, "pool");
        EXPECT_FALSE(seen);
        EXPECT_NE(std::string(seen.message()).find("1 bytes differ"), std::string::npos)
            << seen.message();
        *b ^= 0x40;
      }
      EXPECT_TRUE(pool.matches(image, "pool"));
      Image other = image;
      other.buffers.back().push_back(0);  // an image of another size
      EXPECT_FALSE(pool.matches(other, "pool"));
      other = image;
      other.buffers.emplace_back();  // one more (empty) buffer
      EXPECT_FALSE(pool.matches(other, "pool"));
      other = image;
      other.buffers.pop_back();  // one fewer
      EXPECT_FALSE(pool.matches(other, "pool"));
    }
}

TEST(ExecutorOrder, ConflictingTransfersCompleteInSubmissionOrder) {
  // Blocks of K = 1280 slots (2 layers x 1280 x 4 KiB = 10 MiB: over the cpu executor's 8 MiB
  // below which the submitting thread copies too, so such a job is queued for the workers and
  // submit returns at once, its copy still to do). Round r:
  //   A: block 0 of P -> block 1 of Q            (large, queued)
  //   B: slot K of Q (A's output) -> slot 0 of R (small: would run inline were nothing queued)
  //   C: block 1 of Q -> block 2 of Q            (large, reads A's output)
  //   D: slots 2K+1.. of Q -> slots 1.. of R;  E: R -> block 1 of P;  F: one row of P -> Q
  //   (F small again, behind the large E whose output it reads).
  // Submitted without waiting; P's block 1 must end up holding P's original block 0. A small
  // job that ran inline before the queued one it follows would read the canary.
  constexpr int64_t K = 1280;
  kvio::Executor cpu(kvio::IoBackend::Cpu, 2);
  const Geometry g3 = rows4k(2, 3 * K), g1 = rows4k(2, K);
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    TestPool p(g3), q(g3), r(g1);
    std::mt19937_64 rng(round);
    p.fillRandom(rng);
    q.fill(kCanary);
    r.fill(kCanary);
    const Image original = p.capture(), q0 = q.capture(), r0 = r.capture();
    std::vector<kvio::Transfer> transfers;
    const kvio::LayerMap all{0, 0, 2};
    transfers.push_back(kvio::transfer(cpu, p.pool(), q.pool(), range(0, K), range(K, K), all));
    transfers.push_back(kvio::transfer(cpu, q.pool(), r.pool(), range(K, 1), range(0, 1), all));
    transfers.push_back(kvio::transfer(cpu, q.pool(), q.pool(), range(K, K), range(2 * K, K), all));
    transfers.push_back(
        kvio::transfer(cpu, q.pool(), r.pool(), range(2 * K + 1, K - 1), range(1, K - 1), all));
    transfers.push_back(kvio::transfer(cpu, r.pool(), p.pool(), range(0, K), range(K, K), all));
    transfers.push_back(
        kvio::transfer(cpu, p.pool(), q.pool(), range(K, 1), range(0, 1), kvio::LayerMap{1, 1, 1}));
    for (auto& t : transfers) t.wait();
    // Expected: replay the same sequence on images.
    Image ep = original, eq = q0, er = r0;
    applyTransfer(g3, ep, g3, &eq, range(0, K), range(K, K), 0, 0, 2);
    applyTransfer(g3, eq, g1, &er, range(K, 1), range(0, 1), 0, 0, 2);
    Image eqBefore = eq;
    applyTransfer(g3, eqBefore, g3, &eq, range(K, K), range(2 * K, K), 0, 0, 2);
    applyTransfer(g3, eq, g1, &er, range(2 * K + 1, K - 1), range(1, K - 1), 0, 0, 2);
    applyTransfer(g1, er, g3, &ep, range(0, K), range(K, K), 0, 0, 2);
    applyTransfer(g3, ep, g3, &eq, range(K, 1), range(0, 1), 1, 1, 1);
    ASSERT_TRUE(sameImage(ep, p.capture(), "pool P"));
    ASSERT_TRUE(sameImage(eq, q.capture(), "pool Q"));
    ASSERT_TRUE(sameImage(er, r.capture(), "pool R"));
    // And directly: P's block 1 is the original block 0 after four hops.
    const uint8_t* pdata = p.region(0);
    for (int64_t layer = 0; layer < 2; ++layer) {
      ASSERT_EQ(0,
                std::memcmp(pdata + (layer * 3 * K + K) * 4096,
                            original.buffers[0].data() + kGuard + layer * 3 * K * 4096, K * 4096));
    }
  }
}

TEST(ExecutorOrder, SmallTransferAfterLargeSeesItsOutput) {
  // A copies slot x to y as part of a large transfer; B (one row, small) copies y to z.
  // z must hold x's original row. Many rounds, back to back, never waiting in between.
  kvio::Executor cpu(kvio::IoBackend::Cpu, 2);
  TestPool a(rows4k(1, 512)), b(rows4k(1, 512)), c(rows4k(1, 512));
  std::mt19937_64 rng(99);
  a.fillRandom(rng);
  b.fill(kCanary);
  c.fill(kCanary);
  const Geometry g = rows4k(1, 512);
  Image ea = a.capture(), eb = b.capture(), ec = c.capture();  // replayed in order below
  std::vector<kvio::Transfer> transfers;
  for (int64_t k = 0; k < 64; ++k) {
    // Large: 256 rows of a (rotated by k) into b's slots [0, 256).
    std::vector<int64_t> s, d;
    for (int64_t i = 0; i < 256; ++i) {
      s.push_back((i + k) % 512);
      d.push_back(i);
    }
    transfers.push_back(kvio::transferPerLayer(cpu, a.pool(), b.pool(), s, d, 0, 0));
    transfers.push_back(
        kvio::transferPerLayer(cpu, b.pool(), c.pool(), range(0, 1), range(k, 1), 0, 0));
    applyTransfer(g, ea, g, &eb, s, d, 0, 0, 1);
    applyTransfer(g, eb, g, &ec, range(0, 1), range(k, 1), 0, 0, 1);
  }
  for (auto& t : transfers) t.wait();
  EXPECT_TRUE(a.matches(ea, "a (the source)"));
  EXPECT_TRUE(b.matches(eb, "b"));
  EXPECT_TRUE(c.matches(ec, "c"));
  for (int64_t k = 0; k < 64; ++k) {  // the point of it, whatever the replay: z holds x's row
    ASSERT_EQ(0, std::memcmp(c.region(0) + k * 4096, a.region(0) + k * 4096, 4096))
        << "round " << k;
  }
}

TEST(ExecutorWait, TimeoutIsDoneAndBytes) {
  // Four 64 MiB transfers queued on one thread: the last cannot be done 1 us after submit.
  kvio::Executor one(kvio::IoBackend::Cpu, 1);
  kvio::Pool src = kvio::Pool::allocate(rows4k(1, 16384).spec());
  kvio::Pool dst = kvio::Pool::allocate(rows4k(1, 16384).spec());
  const std::vector<int64_t> all = range(0, 16384);
  std::vector<kvio::Transfer> transfers;
  for (int i = 0; i < 4; ++i)
    transfers.push_back(kvio::transferPerLayer(one, src, dst, all, all, 0, 0));
  kvio::Transfer& last = transfers.back();
  EXPECT_FALSE(last.waitFor(std::chrono::microseconds(1)));
  EXPECT_FALSE(last.done());
  // The C ABI says TIMEOUT and names the wait.
  uint64_t handle = 0;
  const kvio_transfer_desc desc{src.handle(), dst.handle(), all.data(), all.data(), 16384, 0, 0, 1};
  ASSERT_EQ(kvio_submit(one.handle(), &desc, &handle), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_is_done(handle), 0);
  EXPECT_EQ(kvio_transfer_wait(handle, 1000), KVIO_STATUS_TIMEOUT);
  EXPECT_NE(std::string(kvio_last_error()).find("not done after 1000 ns"), std::string::npos);
  EXPECT_EQ(kvio_transfer_wait(handle, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_is_done(handle), 1);
  EXPECT_EQ(kvio_transfer_wait(handle, 0), KVIO_STATUS_OK);  // done: a zero timeout succeeds
  EXPECT_EQ(kvio_transfer_close(handle), KVIO_STATUS_OK);
  // Submission order: once the later transfer is done, all earlier ones are.
  for (auto& t : transfers) EXPECT_TRUE(t.done());
  EXPECT_TRUE(last.waitFor(std::chrono::seconds(0)));
  EXPECT_EQ(last.bytes(), 16384u * 4096);
}

TEST(ExecutorWait, HugeTimeoutsWaitForCompletion) {
  // now + INT64_MAX ns overflows the clock: the deadline wrapped into the past made such a wait
  // answer TIMEOUT at once (Java's await(Long.MAX_VALUE, ...) saturates to it). A timeout over
  // 2^60 ns waits without limit, as a negative one; 2^60 itself still works as a deadline.
  kvio::Executor one(kvio::IoBackend::Cpu, 1);
  kvio::Pool src = kvio::Pool::allocate(rows4k(1, 16384).spec());
  kvio::Pool dst = kvio::Pool::allocate(rows4k(1, 16384).spec());
  const std::vector<int64_t> all = range(0, 16384);
  const kvio_transfer_desc desc{src.handle(), dst.handle(), all.data(), all.data(), 16384, 0, 0, 1};
  for (const int64_t timeout :
       {std::numeric_limits<int64_t>::max(), int64_t{1} << 62, int64_t{1} << 60}) {
    std::vector<uint64_t> handles(4);  // 256 MiB on one thread: the last is not done at once
    for (uint64_t& h : handles) ASSERT_EQ(kvio_submit(one.handle(), &desc, &h), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_wait(handles.back(), timeout), KVIO_STATUS_OK)
        << timeout << ": " << kvio_last_error();
    EXPECT_EQ(kvio_transfer_is_done(handles.back()), 1) << timeout;
    for (uint64_t h : handles) EXPECT_EQ(kvio_transfer_close(h), KVIO_STATUS_OK);
  }
}

TEST(ExecutorClose, EveryTransferItAcceptedIsDoneWhenCloseReturns) {
  // kvio_executor_close took the handle out of the registry, then drained; a submit on another
  // thread that had looked the executor up just before could queue its job after the drain, so
  // close returned while a transfer it had accepted still ran (and the caller could destroy a
  // stream or free memory under it). Now every accepted transfer ended before close returned,
  // and a submit that loses the race answers CLOSED. Timestamps: kvio_transfer_timing.
  ASSERT_EQ(kvio_transfer_timing(1), KVIO_STATUS_OK);
  kvio::Pool src = kvio::Pool::allocate(rows4k(1, 512).spec());
  kvio::Pool dst = kvio::Pool::allocate(rows4k(1, 512).spec());
  const std::vector<int64_t> all = range(0, 512);
  const kvio_transfer_desc desc{src.handle(), dst.handle(), all.data(), all.data(), 512, 0, 0, 1};
  std::mt19937_64 rng(5);
  int late = 0;
  int raced = 0;  // rounds in which close came between two submits (some accepted, then CLOSED)
  for (int round = 0; round < 100; ++round) {
    uint64_t executor = 0;
    ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &executor), KVIO_STATUS_OK);
    std::vector<uint64_t> accepted;
    kvio_status refusal = KVIO_STATUS_OK;
    std::thread submitter([&] {
      while (accepted.size() < 2000) {
        uint64_t t = 0;
        refusal = kvio_submit(executor, &desc, &t);
        if (refusal != KVIO_STATUS_OK) break;
        accepted.push_back(t);
      }
    });
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 400));
    ASSERT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
    const int64_t closedNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
    submitter.join();
    EXPECT_TRUE(refusal == KVIO_STATUS_OK || refusal == KVIO_STATUS_CLOSED)
        << kvio_status_name(refusal);
    if (!accepted.empty() && refusal == KVIO_STATUS_CLOSED) ++raced;
    for (uint64_t t : accepted) {
      EXPECT_EQ(kvio_transfer_is_done(t), 1) << "accepted, and not done when close returned";
      ASSERT_EQ(kvio_transfer_wait(t, -1), KVIO_STATUS_OK);
      kvio_transfer_info info{};
      ASSERT_EQ(kvio_transfer_get_info(t, &info), KVIO_STATUS_OK);
      if (info.end_ns > closedNs) ++late;
      kvio_transfer_close(t);
    }
  }
  EXPECT_EQ(kvio_transfer_timing(0), KVIO_STATUS_OK);
  EXPECT_EQ(late, 0) << "transfers accepted by an executor ended after its close returned";
  EXPECT_GT(raced, 0) << "no round closed the executor while its submitter was submitting";
}

TEST(ExecutorHandles, StaleTransferHandleStaysClosedAfterItsSlotIsReused) {
  // Transfer handles name reused registry slots with a generation: once closed, a handle is
  // CLOSED for every entry point, however many transfers took its slot since, and it never
  // reaches the state of the transfer now in that slot.
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  TestPool src(rows4k(1, 64)), dst(rows4k(1, 64));
  const std::vector<int64_t> one = range(0, 1);
  const kvio_transfer_desc desc{
      src.pool().handle(), dst.pool().handle(), one.data(), one.data(), 1, 0, 0, 1};
  uint64_t first = 0;
  ASSERT_EQ(kvio_submit(cpu.handle(), &desc, &first), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_transfer_wait(first, -1), KVIO_STATUS_OK);
  ASSERT_EQ(kvio_transfer_close(first), KVIO_STATUS_OK);
  // Enough submit/close rounds for every freed slot to be handed out again, several times.
  std::vector<uint64_t> later;
  for (int i = 0; i < 5000; ++i) {
    uint64_t h = 0;
    ASSERT_EQ(kvio_submit(cpu.handle(), &desc, &h), KVIO_STATUS_OK);
    ASSERT_NE(h, first);
    if (i % 1000 == 999) {
      later.push_back(h);  // kept open
    } else {
      ASSERT_EQ(kvio_transfer_close(h), KVIO_STATUS_OK);
    }
  }
  // The low 24 bits name the slot: some open transfer now holds the first handle's slot.
  uint64_t sameSlot = 0;
  for (int i = 0; i < 5000 && sameSlot == 0; ++i) {
    uint64_t h = 0;
    ASSERT_EQ(kvio_submit(cpu.handle(), &desc, &h), KVIO_STATUS_OK);
    if ((h & 0xffffff) == (first & 0xffffff)) {
      sameSlot = h;
    } else {
      ASSERT_EQ(kvio_transfer_close(h), KVIO_STATUS_OK);
    }
  }
  ASSERT_NE(sameSlot, 0u) << "the first transfer's slot was never reused";
  ASSERT_NE(sameSlot, first);
  EXPECT_EQ(kvio_transfer_wait(first, -1), KVIO_STATUS_CLOSED);
  EXPECT_NE(std::string(kvio_last_error()).find("is closed"), std::string::npos);
  EXPECT_EQ(kvio_transfer_is_done(first), -KVIO_STATUS_CLOSED);
  uint64_t bytes = 0;
  EXPECT_EQ(kvio_transfer_bytes(first, &bytes), KVIO_STATUS_CLOSED);
  kvio_transfer_info info{};
  EXPECT_EQ(kvio_transfer_get_info(first, &info), KVIO_STATUS_CLOSED);
  EXPECT_EQ(kvio_transfer_close(first), KVIO_STATUS_CLOSED);  // released exactly once
  // The stale close did not close the transfer that holds the slot now.
  EXPECT_EQ(kvio_transfer_wait(sameSlot, -1), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_close(sameSlot), KVIO_STATUS_OK);
  EXPECT_EQ(kvio_transfer_close(sameSlot), KVIO_STATUS_CLOSED);
  for (uint64_t h : later) {
    EXPECT_EQ(kvio_transfer_wait(h, -1), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_close(h), KVIO_STATUS_OK);
  }
}

TEST(ExecutorInfo, TransferInfoDescribesAndTimesTransfers) {
  // kvio_transfer_get_info: shape always; times only with kvio_transfer_timing on, ordered, and
  // a queued transfer starts after the one before it ended (one worker thread).
  kvio::Executor one(kvio::IoBackend::Cpu, 1);
  kvio::Pool src = kvio::Pool::allocate(rows4k(2, 4096).spec());
  kvio::Pool dst = kvio::Pool::allocate(rows4k(2, 4096).spec());
  const std::vector<int64_t> all = range(0, 4096);
  kvio_transfer_info info{};
  EXPECT_EQ(kvio_transfer_get_info(1, &info), KVIO_STATUS_INVALID_ARGUMENT);
  {
    kvio::Transfer untimed = kvio::transferAllLayers(one, src, dst, all, all);
    untimed.wait();
    ASSERT_EQ(kvio_transfer_get_info(untimed.handle(), nullptr), KVIO_STATUS_INVALID_ARGUMENT);
    std::memset(&info, 0xab, sizeof info);  // the reserved tail is written too, as zero
    ASSERT_EQ(kvio_transfer_get_info(untimed.handle(), &info), KVIO_STATUS_OK);
    for (int64_t word : info.reserved) EXPECT_EQ(word, 0);
    EXPECT_EQ(info.io_backend, KVIO_BACKEND_CPU);
    EXPECT_EQ(info.src_layout, KVIO_LAYOUT_LAYER_FIRST);
    EXPECT_EQ(info.dst_memory, KVIO_MEMORY_HOST);
    EXPECT_EQ(info.components, 1);
    EXPECT_EQ(info.num_indices, 4096);
    EXPECT_EQ(info.num_layers, 2);
    EXPECT_EQ(info.bytes, 2u * 4096 * 4096);
    EXPECT_EQ(info.copies, 1);  // both sides contiguous across tokens and layers
    EXPECT_EQ(info.launches, 0);
    EXPECT_EQ(info.done, 1);
    EXPECT_EQ(info.status, KVIO_STATUS_OK);
    EXPECT_EQ(info.submit_ns, 0);
    EXPECT_EQ(info.start_ns, 0);
    EXPECT_EQ(info.end_ns, 0);
  }
  ASSERT_EQ(kvio_transfer_timing(1), KVIO_STATUS_OK);
  std::vector<kvio::Transfer> transfers;
  for (int i = 0; i < 3; ++i) transfers.push_back(kvio::transferAllLayers(one, src, dst, all, all));
  for (auto& t : transfers) t.wait();
  ASSERT_EQ(kvio_transfer_timing(0), KVIO_STATUS_OK);
  int64_t previousEnd = 0;
  for (auto& t : transfers) {
    ASSERT_EQ(kvio_transfer_get_info(t.handle(), &info), KVIO_STATUS_OK);
    EXPECT_GT(info.submit_ns, 0);
    EXPECT_GE(info.start_ns, info.submit_ns);
    EXPECT_GE(info.end_ns, info.start_ns);
    EXPECT_GE(info.start_ns, previousEnd);  // submission order on one executor
    previousEnd = info.end_ns;
  }
}

TEST(ExecutorLifetime, PoolClosedWhileTransferInFlight) {
  // Source allocated by kvio and closed right after submit: its memory must live until the
  // copy is done. The destination is the test's own memory, so the result can be checked.
  kvio::Executor one(kvio::IoBackend::Cpu, 1);
  const Geometry g = rows4k(2, 8192);  // 64 MiB per pool
  auto src = std::make_unique<kvio::Pool>(kvio::Pool::allocate(g.spec()));
  std::mt19937_64 rng(1);
  fillRandom(src->data(), static_cast<size_t>(g.regionBytes()), rng);
  Image srcImage;  // the source's region as filled (it is freed before the check)
  srcImage.buffers.emplace_back(src->data(), src->data() + g.regionBytes());
  Geometry wrapped = g;
  wrapped.form = Form::Single;
  TestPool dst(wrapped);
  dst.fill(kCanary);
  Image expected = dst.capture();  // with its guard zones
  const std::vector<int64_t> all = range(0, 8192);
  kvio::Transfer t = kvio::transfer(one, *src, dst.pool(), all, all, kvio::LayerMap{0, 0, 2});
  src->close();
  src.reset();
  // And a kvio-allocated destination closed in flight (nothing to check but that it runs).
  auto dst2 = std::make_unique<kvio::Pool>(kvio::Pool::allocate(g.spec()));
  kvio::Transfer t2 = kvio::transfer(one, dst.pool(), *dst2, all, all, kvio::LayerMap{0, 0, 2});
  dst2.reset();
  t.wait();
  t2.wait();
  applyTransfer(g, srcImage, wrapped, &expected, all, all, 0, 0, 2);
  EXPECT_TRUE(sameImage(expected, dst.capture(), "destination, guard zones included"));
}

TEST(ExecutorThreads, ThreadCountsGiveTheSameResult) {
  EXPECT_EQ(kvio::Executor(kvio::IoBackend::Cpu, 0).threads(),
            static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(kvio::Executor(kvio::IoBackend::Cpu, -3).threads(),
            static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  const Geometry hg{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 4, 64, 16, 2, 512};
  const Geometry dg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 4, 64, 16, 2, 512};
  for (int32_t threads : {1, 2, 7}) {
    SCOPED_TRACE(threads);
    kvio::Executor cpu(kvio::IoBackend::Cpu, threads);
    EXPECT_EQ(cpu.threads(), threads);
    TestPool device(dg), host(hg);
    std::mt19937_64 rng(static_cast<uint64_t>(threads));
    SeededPair pools(device, host, rng);
    const auto s = distinct(rng, dg.S(), 700);  // 700 x 4 layers x 2 x 1 KiB = 5.5 MiB
    const auto d = distinct(rng, hg.S(), 700);
    kvio::Transfer t = kvio::transferAllLayers(cpu, device.pool(), host.pool(), s, d);
    t.wait();
    pools.expect(s, d, 0, 0, 4);
    EXPECT_EQ(t.bytes(), 700u * 4 * 2 * 1024);
    ASSERT_TRUE(pools.check("host pool", "device pool"));
  }
}

TEST(ExecutorLifetime, CloseDrainsTheQueue) {
  // A chain of large transfers through one pool, then close without waiting: close returns
  // after all of them ran, in order.
  uint64_t executor = 0;
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 2, &executor), KVIO_STATUS_OK);
  TestPool p(rows4k(2, 1024));
  std::mt19937_64 rng(8);
  p.fillRandom(rng);
  const Image before = p.capture();
  Image expected = before;
  std::vector<uint64_t> handles;
  for (int64_t k = 0; k < 7; ++k) {  // block k -> block k+1, 128 slots x 2 layers = 1 MiB each
    const std::vector<int64_t> s = range(k * 128, 128), d = range((k + 1) * 128, 128);
    uint64_t h = 0;
    ASSERT_EQ(kvio_submit_args(executor, p.pool().handle(), p.pool().handle(), s.data(), d.data(),
                               128, 0, 0, 2, &h),
              KVIO_STATUS_OK)
        << kvio_last_error();
    handles.push_back(h);
    Image snapshot = expected;
    applyTransfer(p.geometry(), snapshot, p.geometry(), &expected, s, d, 0, 0, 2);
  }
  ASSERT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
  for (uint64_t h : handles) {
    EXPECT_EQ(kvio_transfer_is_done(h), 1);
    EXPECT_EQ(kvio_transfer_wait(h, 0), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_close(h), KVIO_STATUS_OK);
  }
  ASSERT_TRUE(sameImage(expected, p.capture(), "pool"));
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_CLOSED);
}

TEST(ExecutorConcurrency, SeveralSubmittingThreads) {
  // Four threads submit to one executor at once, each into its own destination slots.
  kvio::Executor cpu(kvio::IoBackend::Cpu, 2);
  const Geometry sg{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 256, 4, 2, 256};
  const Geometry dg{
      KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Allocated, 2, 256, 4, 2, 256};
  TestPool src(sg), dst(dg);
  std::mt19937_64 rng(4);
  SeededPair pools(src, dst, rng);
  std::vector<std::vector<int64_t>> srcIdx(4), dstIdx(4);
  const auto order = distinct(rng, dg.S(), dg.S());
  for (int w = 0; w < 4; ++w)
    for (int64_t i = 0; i < 200; ++i) {
      srcIdx[w].push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(sg.S())));
      dstIdx[w].push_back(order[static_cast<size_t>(w * 200 + i)]);
    }
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      for (int repeat = 0; repeat < 10; ++repeat) {
        const int64_t n = 20;
        const std::vector<int64_t> s(srcIdx[w].begin() + repeat * n,
                                     srcIdx[w].begin() + (repeat + 1) * n);
        const std::vector<int64_t> d(dstIdx[w].begin() + repeat * n,
                                     dstIdx[w].begin() + (repeat + 1) * n);
        kvio::transferAllLayers(cpu, src.pool(), dst.pool(), s, d).wait();
      }
    });
  }
  for (auto& t : workers) t.join();
  for (int w = 0; w < 4; ++w) pools.expect(srcIdx[w], dstIdx[w], 0, 0, 2);
  ASSERT_TRUE(pools.check());
}

}  // namespace
}  // namespace kvio_test
