// Tests of TransferState's waits (native/src/core/executor.cpp) against a device completion
// that its executor attaches late: a device executor lists the transfer with its pools before
// its submit attaches the completion, so a wait (a caller's, or kvio_pool_close_wait's on a
// closed pool) may begin before there is a completion to wait on. Such a wait must go on with
// the device once the completion is attached, not sleep until a later poll that may never come.
// The fake completion is host code; a failing wait is released by completing the transfer, so a
// regression fails here instead of hanging the suite. "The wait has begun" is TransferState's
// own count of blocked waiters, not a sleep; the only time limits are generous bounds that
// tell a wait that went on from one that slept to its far deadline.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/executor.hpp"
#include "core/handles.hpp"
#include "core/pool.hpp"
#include "kvio/kvio.h"

namespace kvio_test {
namespace {

using Clock = std::chrono::steady_clock;
using kvio::TransferState;

// A device completion done when `done` is set (at once by default); synchronize() blocks until
// then (for at most 20 s).
class FakeCompletion : public kvio::DeviceCompletion {
 public:
  explicit FakeCompletion(bool done = true) : done_(done) {}
  bool query() noexcept override { return done_.load(); }
  void synchronize() noexcept override {
    ++synchronizeCalls;
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (!done_.load() && Clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  kvio_status finish(std::string* message) noexcept override { return KVIO_STATUS_OK; }
  bool nativeHandle(kvio::NativeHandle, uint64_t*) const override { return false; }
  void setDone() { done_.store(true); }

  std::atomic<int> synchronizeCalls{0};

 private:
  std::atomic<bool> done_;
};

struct WaitResult {
  bool returned = false;
  std::chrono::milliseconds took{0};
};

// Runs `wait` on a thread of its own; the result once it returns.
template <class F>
std::future<WaitResult> waitOnThread(F wait) {
  auto promise = std::make_shared<std::promise<WaitResult>>();
  std::future<WaitResult> result = promise->get_future();
  std::thread([promise, wait] {
    const auto start = Clock::now();
    WaitResult r;
    r.returned = wait();
    r.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    promise->set_value(r);
  }).detach();
  return result;
}

// Spins until `count` threads are blocked in a wait on `state`: what the test does next happens
// during that wait. Fails after 20 s (a wait that never blocks), so the test cannot hang here.
bool waitersReach(const TransferState& state, int count) {
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (state.waiters() < count) {
    if (Clock::now() >= until) {
      ADD_FAILURE() << "no wait began within 20 s (" << state.waiters() << " waiting)";
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

// Collects the waiter's result within 20 s; past that, fails and completes the transfer so that
// the waiter returns (the waiter thread must not outlive `state`). The waits that should return
// at once have a deadline of 60 s: one that sleeps to its deadline fails here.
WaitResult collect(std::future<WaitResult>* waiter, TransferState* state) {
  if (waiter->wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "the wait did not return within 20 s of the attached completion being done";
    state->complete(KVIO_STATUS_INTERNAL, "released by the test");
  }
  return waiter->get();
}

TEST(TransferStateWait, TimedWaitBegunBeforeAttachReturnsOnceTheDeviceIsDone) {
  auto state = std::make_shared<TransferState>(64);
  auto pool = std::make_shared<kvio::PoolImpl>();
  std::weak_ptr<kvio::PoolImpl> watch = pool;
  state->holdPools(pool, pool);
  pool.reset();
  std::future<WaitResult> waiter = waitOnThread([state] { return state->wait(60'000'000'000); });
  // The wait has begun, before the attach (else the test fails, and completing releases it).
  if (!waitersReach(*state, 1)) state->complete(KVIO_STATUS_INTERNAL, "released by the test");
  EXPECT_EQ(waiter.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  state->attach(std::make_shared<FakeCompletion>(true));
  const WaitResult r = collect(&waiter, state.get());  // not only at the 60 s deadline's poll
  EXPECT_TRUE(r.returned) << "wait(60 s) timed out though the device completion was done";
  EXPECT_TRUE(state->settled());
  EXPECT_EQ(state->status(), KVIO_STATUS_OK);
  EXPECT_TRUE(watch.expired()) << "the settled transfer still holds its pool";
}

TEST(TransferStateWait, UnboundedWaitBegunBeforeAttachWaitsForTheDevice) {
  auto state = std::make_shared<TransferState>(64);
  auto completion = std::make_shared<FakeCompletion>(false);
  std::future<WaitResult> waiter = waitOnThread([state] { return state->wait(-1); });
  if (!waitersReach(*state, 1)) state->complete(KVIO_STATUS_INTERNAL, "released by the test");
  state->attach(completion);
  // Attached but the device is still busy: the wait goes on, now blocked on the device.
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (completion->synchronizeCalls.load() == 0 && Clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_GE(completion->synchronizeCalls.load(), 1) << "the wait did not go on to the device";
  if (completion->synchronizeCalls.load() == 0) {
    state->complete(KVIO_STATUS_INTERNAL, "released by the test");
  }
  EXPECT_EQ(waiter.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  EXPECT_FALSE(state->settled());
  completion->setDone();
  const WaitResult r = collect(&waiter, state.get());
  EXPECT_TRUE(r.returned);
  EXPECT_TRUE(state->settled());
  EXPECT_EQ(state->status(), KVIO_STATUS_OK);
}

TEST(TransferStateWait, TimedWaitOnABusyDeviceTimesOutAtItsDeadline) {
  // The deadline is taken once: the time spent waiting for the attach counts against it.
  auto state = std::make_shared<TransferState>(64);
  auto completion = std::make_shared<FakeCompletion>(false);
  // A 2 s wait, attached once it has begun and then 1.5 s more (the sleep only delays the
  // attach): restarted at the attach it would end 2 s after it, at 3.5 s or later; the 4 s
  // bound leaves room for a loaded machine and is below that whenever the attach came before
  // the deadline (checked: when a slow machine attached late, the bound tells nothing).
  std::future<WaitResult> waiter = waitOnThread([state] { return state->wait(2'000'000'000); });
  if (!waitersReach(*state, 1)) state->complete(KVIO_STATUS_INTERNAL, "released by the test");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const bool attachedBeforeTheDeadline =
      waiter.wait_for(std::chrono::seconds(0)) == std::future_status::timeout;
  const auto attached = Clock::now();
  state->attach(completion);
  const WaitResult r = collect(&waiter, state.get());
  const auto afterAttach =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - attached).count();
  EXPECT_FALSE(r.returned) << "the device is still busy";
  EXPECT_GE(r.took.count(), 1990);
  if (attachedBeforeTheDeadline) {
    EXPECT_LT(afterAttach, 2000) << "the wait restarted its timeout at the attach";
  }
  EXPECT_FALSE(state->settled());
  completion->setDone();
  EXPECT_TRUE(state->wait(0));
}

TEST(TransferStateWait, HostCompletionStillWakesAWaiter) {
  // The cpu backend's path: nothing is attached; complete() wakes the wait.
  auto state = std::make_shared<TransferState>(64);
  std::future<WaitResult> waiter = waitOnThread([state] { return state->wait(60'000'000'000); });
  if (!waitersReach(*state, 1)) state->complete(KVIO_STATUS_INTERNAL, "released by the test");
  EXPECT_FALSE(state->wait(1'000'000));  // 1 ms: not done
  state->complete(KVIO_STATUS_BACKEND_ERROR, "copy failed");
  const WaitResult r = collect(&waiter, state.get());  // woken, not at its 60 s deadline
  EXPECT_TRUE(r.returned);
  EXPECT_EQ(state->status(), KVIO_STATUS_BACKEND_ERROR);
  EXPECT_EQ(state->message(), "copy failed");
}

TEST(TransferStateWait, PoolCloseWaitReturnsOnceALateAttachedTransferIsDone) {
  // As transfer_api.cpp submits to a device executor: the transfer is listed with its pool,
  // then the pool is closed and kvio_pool_close_wait(-1) begins, and only then does the
  // executor attach the completion, of work the device has finished. Nothing polls the
  // transfer afterwards: close_wait itself must see it done and release the pool's memory.
  int64_t before[4] = {};
  ASSERT_EQ(kvio_debug_live_objects(before), KVIO_STATUS_OK);
  const kvio_pool_spec spec{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 2, 4, 4, 2, 64};
  uint64_t handle = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &handle), KVIO_STATUS_OK) << kvio_last_error();
  auto state = std::make_shared<TransferState>(64);
  {
    std::shared_ptr<kvio::PoolImpl> pool;
    ASSERT_EQ(kvio::pools().get(handle, "pool", &pool), KVIO_STATUS_OK);
    state->holdPools(pool, pool);
    pool->usage()->add(state);
  }
  ASSERT_EQ(kvio_pool_close(handle), KVIO_STATUS_OK);
  int64_t closed[4] = {};
  ASSERT_EQ(kvio_debug_live_objects(closed), KVIO_STATUS_OK);
  EXPECT_EQ(closed[3], before[3] + 1) << "the running transfer keeps the pool's memory";
  std::future<WaitResult> waiter =
      waitOnThread([handle] { return kvio_pool_close_wait(handle, -1) == KVIO_STATUS_OK; });
  // close_wait waits on the transfer's state; once counted there, it has begun before the attach.
  if (!waitersReach(*state, 1)) state->complete(KVIO_STATUS_INTERNAL, "released by the test");
  EXPECT_EQ(waiter.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  state->attach(std::make_shared<FakeCompletion>(true));
  const WaitResult r = collect(&waiter, state.get());
  EXPECT_TRUE(r.returned) << "kvio_pool_close_wait failed";
  int64_t after[4] = {};
  ASSERT_EQ(kvio_debug_live_objects(after), KVIO_STATUS_OK);
  EXPECT_EQ(after[3], before[3]) << "the pool's memory was not released";
  EXPECT_TRUE(state->settled());
}

TEST(TransferStateDone, SeenDoneBeforeItsStartWasMarkedItStartsNoLaterThanItEnds) {
  // A device transfer is marked started after its executor's submit returns; a query from another
  // thread (a close-and-wait, another submit's reap) can see its completion done before that.
  auto state = std::make_shared<TransferState>(64);
  TransferState::Shape shape;
  shape.submitNs = TransferState::monotonicNs();
  state->describe(shape);
  state->attach(std::make_shared<FakeCompletion>(true));
  ASSERT_TRUE(state->isDone());
  EXPECT_NE(state->startNs(), 0) << "done without a start";
  EXPECT_LE(state->startNs(), state->endNs());
  EXPECT_LE(shape.submitNs, state->startNs());
  const int64_t start = state->startNs();
  state->markStarted();  // the submit's own mark, later: the first one counts
  EXPECT_EQ(state->startNs(), start);
}

TEST(TransferStateDone, QueriesDoNotWaitForAnotherThreadDroppingThePools) {
  // The first thread to see a transfer done drops its pools, which can take as long as freeing
  // or unregistering their memory. A query meanwhile (kvio_transfer_is_done, get_info,
  // kvio_pool_close_wait(p, 0), an executor's reap under its lock) answers "not done yet" at
  // once; a timed wait waits for the drop until its deadline only; an unbounded one waits.
  const kvio_pool_spec spec{KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, 2, 4, 4, 2, 64};
  uint64_t handle = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &handle), KVIO_STATUS_OK) << kvio_last_error();
  std::shared_ptr<kvio::PoolImpl> pool;
  ASSERT_EQ(kvio::pools().get(handle, "pool", &pool), KVIO_STATUS_OK);
  // The state's hold on the pool ends in `gate`'s deleter, which blocks until the test opens it.
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  std::atomic<bool> dropping{false};
  auto state = std::make_shared<TransferState>(64);
  TransferState::Shape shape;
  shape.submitNs = TransferState::monotonicNs();  // timed: an end time is recorded when done
  state->describe(shape);
  {
    std::shared_ptr<void> gate(nullptr, [opened, &dropping](void*) {
      dropping.store(true);
      opened.wait_for(std::chrono::seconds(20));
    });
    const std::shared_ptr<const kvio::PoolImpl> held(gate, pool.get());
    state->holdPools(held, held);
  }
  state->attach(std::make_shared<FakeCompletion>(true));
  std::future<WaitResult> dropper = waitOnThread([state] { return state->isDone(); });
  const auto until = Clock::now() + std::chrono::seconds(20);
  while (!dropping.load() && Clock::now() < until) std::this_thread::yield();
  ASSERT_TRUE(dropping.load()) << "the first query did not drop the pools";
  kvio_status status = KVIO_STATUS_INTERNAL;
  int64_t endNs = -1;
  EXPECT_FALSE(state->outcome(&status, &endNs)) << "done (get_info) before the pools were dropped";
  EXPECT_EQ(status, KVIO_STATUS_OK);
  EXPECT_EQ(endNs, 0) << "an end time for a transfer not done yet";
  std::future<WaitResult> query = waitOnThread([state] { return state->isDone(); });
  std::future<WaitResult> timed = waitOnThread([state] { return state->wait(50 * 1000 * 1000); });
  const bool queryReturned = query.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  const bool timedReturned = timed.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(queryReturned) << "isDone() waited for another thread's drop of the pools";
  EXPECT_TRUE(timedReturned) << "a 50 ms wait waited past its deadline for the drop";
  if (queryReturned) {
    EXPECT_FALSE(query.get().returned) << "done before the pools were dropped";
  }
  if (timedReturned) {
    EXPECT_FALSE(timed.get().returned) << "done before the pools were dropped";
  }
  std::future<WaitResult> unbounded = waitOnThread([state] { return state->wait(-1); });
  EXPECT_EQ(unbounded.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout)
      << "an unbounded wait returned before the pools were dropped";
  open.set_value();
  EXPECT_TRUE(collect(&dropper, state.get()).returned);
  EXPECT_TRUE(collect(&unbounded, state.get()).returned);
  EXPECT_TRUE(state->isDone());
  EXPECT_TRUE(state->outcome(&status, &endNs));
  EXPECT_NE(endNs, 0);
  if (!queryReturned) query.wait();
  if (!timedReturned) timed.wait();
  pool.reset();
  EXPECT_EQ(kvio_pool_close(handle), KVIO_STATUS_OK);
}

}  // namespace
}  // namespace kvio_test
