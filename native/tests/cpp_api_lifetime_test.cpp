// The C++ layer (kvio.hpp) with transfers that are certainly still running: the cpu backend's
// hold hook (KVIO_TEST_FAULT_CPU_HOLD, kvio_test_hooks.h) keeps a transfer of over 8 MiB before
// its first copy until the test releases it (and queue-only transfers of any size). Checks what
// RAII order means for caller memory (a wrapped pool's destructor waits for the transfers that
// use it), that a negative waitFor only checks, and that a queue-only transfer is copied by the
// workers alone. Links the test variant of libkvio (HOOKS).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kvio/kvio.hpp"
#include "kvio_test_hooks.h"

namespace {

using Clock = std::chrono::steady_clock;

// 4096 tokens of one 4 KiB row (MLA, one layer): 16 MiB, over the hold hook's 8 MiB.
constexpr int64_t kTokens = 4096;
constexpr int64_t kRow = 4096;

kvio::PoolSpec bigSpec() {
  kvio::PoolSpec spec;
  spec.kind = kvio::PoolKind::Mla;
  spec.layout = kvio::Layout::LayerFirst;
  spec.numLayers = 1;
  spec.numPages = kTokens;
  spec.pageSize = 1;
  spec.headNum = 1;
  spec.headBytes = kRow;
  return spec;
}

std::vector<int64_t> allSlots() {
  std::vector<int64_t> slots(kTokens);
  for (int64_t i = 0; i < kTokens; ++i) slots[static_cast<size_t>(i)] = i;
  return slots;
}

// Releases the hold from another thread after `delay`, and says once it is about to.
class DelayedRelease {
 public:
  explicit DelayedRelease(std::chrono::milliseconds delay)
      : thread_([this, delay] {
          std::this_thread::sleep_for(delay);
          releasing_ = true;
          kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0);
        }) {}
  ~DelayedRelease() { join(); }
  bool releasing() const { return releasing_.load(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> releasing_{false};  // before thread_: set by it
  std::thread thread_;
};

class CppApiLifetime : public ::testing::Test {
 protected:
  void TearDown() override { kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0); }
};

TEST_F(CppApiLifetime, DestroyingAPoolOverCallerMemoryWaitsForItsTransfers) {
  // { buf; Pool dst = Pool::wrap(..buf..); auto t = transfer(...); }: ~Transfer and ~Pool only
  // closed, and the scope's end freed buf while a cpu worker still copied into it. Now ~Pool of
  // a wrapped pool waits. The transfer is held until another thread releases it 100 ms later:
  // the destructor must not return before that, and buf must then hold the source's bytes.
  const kvio::PoolSpec spec = bigSpec();
  kvio::Pool src = kvio::Pool::allocate(spec);
  uint8_t* const srcBytes = src.data();  // (data() and bytes() look the handle up: once)
  const uint64_t size = src.bytes();
  for (uint64_t i = 0; i < size; ++i) srcBytes[i] = static_cast<uint8_t>(i % 251);
  const std::vector<uint8_t> source(srcBytes, srcBytes + size);
  const std::vector<int64_t> slots = allSlots();
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  // buf outlives the scope here only so that a destructor that does not wait fails the checks
  // below instead of letting the worker write freed memory.
  std::vector<uint8_t> buf(source.size(), 0xA5);
  ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
  DelayedRelease release(std::chrono::milliseconds(100));
  {
    kvio::Pool dst = kvio::Pool::wrap(spec, buf.data(), buf.size());
    kvio::Transfer t = kvio::transferAllLayers(cpu, src, dst, slots, slots);
    EXPECT_FALSE(t.done());
  }  // ~Transfer, then ~Pool
  EXPECT_TRUE(release.releasing()) << "~Pool returned while its transfer was still held";
  EXPECT_TRUE(buf == source) << "~Pool returned before the transfer's copies were done";
  release.join();
  cpu.close();  // (if ~Pool did not wait: the copy ends before buf goes)
}

TEST_F(CppApiLifetime, AssigningOverAPoolOverCallerMemoryWaitsAsTheDestructorDoes) {
  const kvio::PoolSpec spec = bigSpec();
  kvio::Pool src = kvio::Pool::allocate(spec);
  std::memset(src.data(), 0x3C, src.bytes());
  const std::vector<int64_t> slots = allSlots();
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  std::vector<uint8_t> buf(src.bytes(), 0xA5);
  ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
  DelayedRelease release(std::chrono::milliseconds(100));
  kvio::Pool dst = kvio::Pool::wrap(spec, buf.data(), buf.size());
  { kvio::Transfer t = kvio::transferAllLayers(cpu, src, dst, slots, slots); }
  dst = kvio::Pool::allocate(spec);  // releases the wrapped pool first
  EXPECT_TRUE(release.releasing()) << "assignment returned while the replaced pool was in use";
  EXPECT_EQ(std::count(buf.begin(), buf.end(), 0x3C), static_cast<std::ptrdiff_t>(buf.size()));
  release.join();
  cpu.close();
}

TEST_F(CppApiLifetime, APoolOfKviosMemoryClosesWithoutWaiting) {
  const kvio::PoolSpec spec = bigSpec();
  const kvio::Pool src = kvio::Pool::allocate(spec);
  const std::vector<int64_t> slots = allSlots();
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
  kvio::Transfer t = kvio::Transfer::completedEmpty();
  {
    kvio::Pool dst = kvio::Pool::allocate(spec);
    t = kvio::transferAllLayers(cpu, src, dst, slots, slots);
  }  // closed, not waited for: the transfer is still held
  EXPECT_FALSE(t.done());
  ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0), KVIO_STATUS_OK);
  t.wait();
}

TEST_F(CppApiLifetime, WaitForANegativeDurationOnlyChecks) {
  // The C ABI waits forever for a negative timeout; waitFor(deadline - now()) after the
  // deadline blocked until the transfer completed (here: until the hold is released, 2 s on).
  const kvio::PoolSpec spec = bigSpec();
  const kvio::Pool src = kvio::Pool::allocate(spec);
  const kvio::Pool dst = kvio::Pool::allocate(spec);
  const std::vector<int64_t> slots = allSlots();
  kvio::Executor cpu(kvio::IoBackend::Cpu, 1);
  ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
  DelayedRelease release(std::chrono::seconds(2));
  kvio::Transfer t = kvio::transferAllLayers(cpu, src, dst, slots, slots);
  const Clock::time_point deadline = Clock::now() - std::chrono::milliseconds(1);
  const Clock::time_point start = Clock::now();
  const bool done = t.waitFor(deadline - Clock::now());
  const auto waited = Clock::now() - start;
  EXPECT_FALSE(done);
  EXPECT_LT(waited, std::chrono::seconds(1)) << "waitFor(negative) waited for the transfer";
  release.join();
  t.wait();
  EXPECT_TRUE(t.waitFor(std::chrono::nanoseconds(-1)));  // done: a check says so
}

// KVIO_SUBMIT_QUEUE_ONLY (TransferOptions::queueOnly): the cpu backend copies a transfer of up to
// 512 KiB to an idle executor on the submitting thread (done when submit returns), and helps its
// workers with one of up to 8 MiB. Queue-only, the submitting thread copies nothing: with the
// hold armed (it catches queue-only transfers of any size), the transfer is still held when
// submit returns and its destination untouched; released, every byte arrives. Without the flag
// the same small transfer is done at submit, hold or not. For cpu and for 'auto' running cpu.
TEST_F(CppApiLifetime, QueueOnlyKeepsEveryCopyOffTheSubmittingThread) {
  for (const kvio::IoBackend backend : {kvio::IoBackend::Cpu, kvio::IoBackend::Auto}) {
    if (backend == kvio::IoBackend::Auto &&
        kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK) {
      continue;  // auto runs the GPU backends there, which never copy on the submitting thread
    }
    const char* name = backend == kvio::IoBackend::Cpu ? "cpu" : "auto";
    // 64 KiB (copied wholly at submit without the flag) and 2 MiB (helped with).
    for (const int64_t tokens : {int64_t{16}, int64_t{512}}) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(tokens) + " rows of 4 KiB");
      kvio::PoolSpec spec = bigSpec();
      spec.numPages = tokens;
      kvio::Pool src = kvio::Pool::allocate(spec);
      kvio::Pool dst = kvio::Pool::allocate(spec);
      for (uint64_t i = 0; i < src.bytes(); ++i) src.data()[i] = static_cast<uint8_t>(i % 253);
      std::memset(dst.data(), 0xA5, dst.bytes());
      std::vector<int64_t> srcSlots(static_cast<size_t>(tokens)), dstSlots(srcSlots.size());
      for (int64_t i = 0; i < tokens; ++i) {
        srcSlots[static_cast<size_t>(i)] = i;
        dstSlots[static_cast<size_t>(i)] = tokens - 1 - i;  // reversed: not one block copy
      }
      std::vector<uint8_t> expected(dst.bytes());
      for (int64_t i = 0; i < tokens; ++i) {
        std::memcpy(&expected[static_cast<size_t>((tokens - 1 - i) * kRow)], src.data() + i * kRow,
                    kRow);
      }
      kvio::Executor executor(backend, 2);
      // The contrast first, while the executor is idle (a worker lets go of a queued job only
      // after completing it): without the flag, done at submit even with the hold armed.
      if (tokens == 16) {
        ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
        kvio::Transfer inlined = kvio::transfer(executor, src, dst, srcSlots, dstSlots,
                                                kvio::LayerMap{}, kvio::TransferOptions{});
        EXPECT_TRUE(inlined.done()) << "a 64 KiB transfer to an idle executor was not inline";
        ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0), KVIO_STATUS_OK);
        inlined.wait();
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), dst.data()));
        std::memset(dst.data(), 0xA5, dst.bytes());
      }
      kvio::TransferOptions options;
      options.queueOnly = true;
      ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 1), KVIO_STATUS_OK);
      kvio::Transfer held =
          kvio::transfer(executor, src, dst, srcSlots, dstSlots, kvio::LayerMap{}, options);
      EXPECT_FALSE(held.done()) << "copied before submit returned";
      EXPECT_EQ(std::count(dst.data(), dst.data() + dst.bytes(), 0xA5),
                static_cast<std::ptrdiff_t>(dst.bytes()))
          << "the submitting thread copied rows of a queue-only transfer";
      ASSERT_EQ(kvio_test_inject_fault(KVIO_TEST_FAULT_CPU_HOLD, 0), KVIO_STATUS_OK);
      held.wait();
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), dst.data()));
      executor.close();
    }
  }
}

}  // namespace
