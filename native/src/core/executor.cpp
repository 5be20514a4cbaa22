// TransferState and the Executor defaults (see executor.hpp).
#include "executor.hpp"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "error.hpp"
#include "planner.hpp"
#include "thread_object.hpp"

namespace kvio {

namespace {

struct PlanStorage {
  std::mutex mutex;
  std::vector<std::vector<kvio_copy2d>> free;
  size_t bytes = 0;
};

PlanStorage& planStorage() {
  static PlanStorage* storage = new PlanStorage();  // never destroyed: jobs may outlive statics
  return *storage;
}

std::atomic<uint32_t> forks{0};

// fork(): the shared plan storage's lock is taken around it, as a cpu worker takes it after each
// job (a child inheriting it held would hang at its first large transfer); the child counts the
// fork (forkGeneration) on the thread that called fork(), before fork returns there.
void beforeFork() {
  planStorage().mutex.lock();
}
void inParentAfterFork() {
  planStorage().mutex.unlock();
}
void inChildAfterFork() {
  planStorage().mutex.unlock();
  forks.fetch_add(1, std::memory_order_relaxed);
}
// Registered when the library is loaded: a fork during a registration made on first use would
// leave the child a held initialisation guard. Without it (ENOMEM), forks go unnoticed.
const bool kWatchingForks = pthread_atfork(&beforeFork, &inParentAfterFork, &inChildAfterFork) == 0;

constexpr size_t kPlanStorageBytes = size_t{32} << 20;
constexpr size_t kPlanStorageVectors = 8;

}  // namespace

// A small plan's storage stays with the thread that freed it, for its next transfer without a
// lock: the small synchronous call (plan taken and returned on one thread) then takes none. Kept
// in a ThreadObject (thread_object.hpp): a transfer submitted or freed while the thread exits
// finds none and uses the shared storage.
constexpr size_t kThreadPlanBytes = size_t{64} << 10;
using PlanVector = std::vector<kvio_copy2d>;
using ThreadPlan = ThreadObject<PlanVector, PlanVector>;

std::vector<kvio_copy2d> takePlanStorage() {
  PlanVector* kept = ThreadPlan::existing();
  if (kept != nullptr && kept->capacity() != 0) {
    std::vector<kvio_copy2d> plan;
    plan.swap(*kept);
    return plan;
  }
  PlanStorage& s = planStorage();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.free.empty()) return {};
  std::vector<kvio_copy2d> plan = std::move(s.free.back());
  s.free.pop_back();
  s.bytes -= plan.capacity() * sizeof(kvio_copy2d);
  return plan;
}

void returnPlanStorage(std::vector<kvio_copy2d>&& plan) noexcept {
  const size_t bytes = plan.capacity() * sizeof(kvio_copy2d);
  if (bytes == 0) return;
  plan.clear();
  // ~Job calls this: an exception here (no memory for the thread's holder or the free list's
  // first allocation) would end the process. The storage is then simply freed.
  try {
    if (bytes <= kThreadPlanBytes) {
      PlanVector* kept = ThreadPlan::get();
      if (kept != nullptr && kept->capacity() == 0) {
        kept->swap(plan);
        return;
      }
    }
    PlanStorage& s = planStorage();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.free.size() < kPlanStorageVectors && s.bytes + bytes <= kPlanStorageBytes) {
      s.free.push_back(std::move(plan));
      s.bytes += bytes;
    }
  } catch (...) {
  }
}

void TransferState::holdPools(std::shared_ptr<const PoolImpl> src,
                              std::shared_ptr<const PoolImpl> dst) {
  pools_[0] = std::move(src);
  pools_[1] = std::move(dst);
}

void TransferState::dropPools(HeldPools* pools) const {
  // The last reference to a closed pool releases its memory (unregisters it).
  (*pools)[0].reset();
  (*pools)[1].reset();
  released_.store(true);
  if (waiters_.load() != 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }  // a waiter between its check and its sleep
    done_.notify_all();
  }
}

bool TransferState::waitReleased(std::unique_lock<std::mutex>& lock,
                                 const std::chrono::steady_clock::time_point* deadline,
                                 bool orAttached) const {
  waiters_.fetch_add(1);  // before reading released_: see dropPools
  // completion_ is read with mutex_ held, as attach() sets it: no wake-up is lost.
  const auto woken = [this, orAttached] {
    return released_.load() || (orAttached && completion_ != nullptr);
  };
  bool wasWoken = true;
  if (deadline == nullptr) {
    done_.wait(lock, woken);
  } else {
    wasWoken = done_.wait_until(lock, *deadline, woken);
  }
  waiters_.fetch_sub(1);
  return wasWoken;
}

void TransferState::complete(kvio_status status, std::string message) {
  HeldPools pools;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = status;
    message_ = std::move(message);
    if (shape_.submitNs != 0) {
      markStarted();  // a job that failed before it ran: no queue time after this point
      endNs_ = monotonicNs();
    }
    isDone_ = true;
    pools.swap(pools_);
  }
  dropPools(&pools);
}

void TransferState::attach(std::shared_ptr<DeviceCompletion> completion) {
  bool waiting = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    completion_ = std::move(completion);
    waiting = waiters_.load() != 0;
  }
  // A wait that began before the completion was attached (a pool's close_wait on a transfer
  // listed with the pool before its executor's submit attached it) goes on with the device.
  if (waiting) done_.notify_all();
}

std::shared_ptr<DeviceCompletion> TransferState::deviceCompletion() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completion_;
}

uint32_t forkGeneration() {
  (void)kWatchingForks;
  return forks.load(std::memory_order_relaxed);
}

bool TransferState::pollLocked() const {
  if (isDone_) return true;
  if (completion_ == nullptr || !completion_->query()) return false;
  std::string message;
  status_ = completion_->finish(&message);
  message_ = std::move(message);
  if (shape_.submitNs != 0) {
    markStarted();  // seen done before its submit marked the start: the start is not after it
    endNs_ = monotonicNs();
  }
  isDone_ = true;
  return true;
}

bool TransferState::settle(bool block,
                           const std::chrono::steady_clock::time_point* deadline) const {
  HeldPools pools;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (released_.load()) return true;
    if (isDone_) {
      // Another thread saw it done first and is dropping the pools, which can take as long as
      // freeing or unregistering their memory: only a wait waits for that (done means dropped).
      return block && waitReleased(lock, deadline, false) && released_.load();
    }
    if (!pollLocked()) return false;
    pools.swap(pools_);
  }
  dropPools(&pools);
  return true;
}

bool TransferState::isDone() const {
  return settle(false, nullptr);
}

bool TransferState::settled() const {
  return released_.load();
}

bool TransferState::wait(int64_t timeoutNs) const {
  if (released_.load()) return true;  // done and settled: no lock (a wait after completion)
  timeoutNs = boundedTimeoutNs(timeoutNs);
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<DeviceCompletion> completion;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    completion = completion_;
    if (completion == nullptr) {
      // Completed by its executor (cpu), or a device transfer whose executor has not attached
      // its completion yet: wait for either. The device finishing sets nothing here; only a
      // poll of the completion does, so the wait goes on below once one is attached.
      if (released_.load()) return true;
      if (timeoutNs >= 0) {
        deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeoutNs);
      }
      if (!waitReleased(lock, timeoutNs < 0 ? nullptr : &deadline, true)) return false;
      if (released_.load()) return true;
      completion = completion_;
    } else if (timeoutNs >= 0) {
      deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeoutNs);
    }
  }
  // Device work: block on this transfer's event, or poll it until the deadline (device events
  // have no timed wait). Never a device-wide synchronisation.
  if (timeoutNs < 0) {
    completion->synchronize();
  } else {
    auto pause = std::chrono::microseconds(5);
    while (!completion->query()) {
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(pause);
      if (pause < std::chrono::microseconds(500)) pause *= 2;
    }
  }
  return settle(true, timeoutNs < 0 ? nullptr : &deadline);
}

int64_t TransferState::endNs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return endNs_;
}

int64_t TransferState::monotonicNs() {
  // steady_clock is CLOCK_MONOTONIC on Linux, the clock of Java's System.nanoTime.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool TransferState::outcome(kvio_status* status, int64_t* endNs) const {
  if (released_.load()) {  // done: status and end time are final, no lock
    *status = status_;
    *endNs = endNs_;
    return true;
  }
  const bool done = isDone();
  std::lock_guard<std::mutex> lock(mutex_);
  *status = done ? status_ : KVIO_STATUS_OK;
  *endNs = done ? endNs_ : 0;  // not done to callers while another thread drops the pools
  return done;
}

kvio_status TransferState::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::string TransferState::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

kvio_status Executor::prepare(const Transfer& transfer, Job* job, Prepared* out) const {
  if (transfer.request == nullptr) {
    return fail(KVIO_STATUS_UNSUPPORTED, "this executor plans from host-resident indices only");
  }
  job->plan = takePlanStorage();
  planTransfer(*transfer.request, *transfer.runs, &job->plan);
  out->bytes = planBytes(job->plan);
  out->copies = static_cast<int64_t>(job->plan.size());
  return prepareFromPlan(transfer, job, out);
}

}  // namespace kvio
