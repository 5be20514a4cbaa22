// What the kernel, direct and staged executors share: the device and stream, the memory rule
// (pinned host or device memory; pageable host memory is refused), and completion through CUDA
// events. Each job records an event on the stream after its work; its TransferState then reports
// done when that event has completed (query or cudaEventSynchronize of that event only: never a
// device-wide synchronisation). Each job's TransferState keeps its pools alive until its event
// is seen complete (by a query, a wait, or this executor's reap or drain), even when the caller
// closes the pools or the transfer handle first, and drops them then; a retired job's Job keeps
// no pool.
#ifndef KVIO_CUDA_CUDA_EXECUTOR_HPP_
#define KVIO_CUDA_CUDA_EXECUTOR_HPP_

#include <cuda_runtime.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "../core/backends.hpp"
#include "../core/executor.hpp"
#include "cuda_check.hpp"
#include "recycling_pool.hpp"

namespace kvio {
namespace cuda {

/// An executor's spare events (at most kPooledEvents): a transfer's event goes back when its
/// completion is destroyed, so a submit creates an event only when none is spare.
using EventPool = RecyclingPool<cudaEvent_t>;
constexpr size_t kPooledEvents = 64;

/// A CUDA event as the completion of one transfer. hostStatus (optional): the kernel's
/// bad-pair report, copied to pinned host memory before the event.
class EventCompletion : public DeviceCompletion {
 public:
  /// `device`: the event's; made current (DeviceScope) while a waiting thread queries it.
  EventCompletion(std::shared_ptr<EventPool> pool, cudaEvent_t event, int32_t device)
      : pool_(std::move(pool)), event_(event), device_(device) {}
  ~EventCompletion() override;
  bool query() noexcept override;
  void synchronize() noexcept override;
  kvio_status finish(std::string* message) noexcept override;
  bool nativeHandle(NativeHandle kind, uint64_t* out) const override {
    if (kind != NativeHandle::kCudaEvent) return false;
    *out = reinterpret_cast<uint64_t>(event_);
    return true;
  }

  /// Set before the job is published: what finish() reads and says.
  const unsigned long long* hostStatus = nullptr;
  int64_t srcTokens = 0;
  int64_t dstTokens = 0;
  /// Set before the job is published: a call failed while the transfer was being queued, after
  /// some of its work; finish() reports this once the event, recorded after that work, completes.
  kvio_status queueStatus = KVIO_STATUS_OK;
  std::string queueMessage;

 private:
  std::shared_ptr<EventPool> pool_;  // where the event goes back
  cudaEvent_t event_;
  int32_t device_;
  std::atomic<int> error_{cudaSuccess};  // queried by the executor and by waiting threads
};

/// Pinned host memory a job writes what it uploads into (and the device buffer it goes to, for
/// the kernel's tables and indices); busy from the job's enqueue until the job has retired (its
/// event completed), so nothing rewrites it while the stream may still read it.
struct StagingSlot {
  uint8_t* host = nullptr;    // pinned
  uint8_t* device = nullptr;  // nullptr for a slot acquired without one
  uint64_t bytes = 0;
  bool busy = false;
};

class CudaExecutor : public Executor {
 public:
  ~CudaExecutor() override;
  int32_t threads() const override { return 1; }
  void submit(std::shared_ptr<Job> job) override;
  void drain() override;
  /// Retires the jobs in flight whose events have completed; nothing when none is or when a
  /// submit or drain holds the executor (which retires them itself): never blocks.
  void retireFinished() override;
  kvio_status acceptMemory(MemoryPlace src, MemoryPlace dst) const override;
  bool nativeHandle(NativeHandle kind, uint64_t* out) const override;
  /// refuseCapture(), then the default prepare (the plan). The kernel's own prepare, which
  /// needs no plan, calls refuseCapture() too.
  kvio_status prepare(const Transfer& transfer, Job* job, Prepared* out) const override;

 protected:
  /// UNSUPPORTED while stream_ is being captured into a CUDA graph (a transfer's event and
  /// staging are reused once kvio has seen it complete, which a replay would still read): every
  /// CUDA executor's prepare asks, so a submit is refused before anything is queued and the
  /// capture stays valid.
  kvio_status refuseCapture() const;
  /// Creates the stream (config.stream == KVIO_CUDA_OWN_STREAM) or adopts the caller's.
  kvio_status init(const CudaExecutorConfig& config, const char* name);
  /// Enqueues the job's copies on stream_. *completion may be given a host status to read.
  /// `release` (optional) runs when the job's event has completed and its state is final.
  virtual kvio_status enqueue(Job& job, EventCompletion* completion,
                              std::function<void()>* release) = 0;
  /// Waits for the oldest job in flight (its event only) and retires it; false if none.
  bool retireOldest();
  /// Retires jobs whose events have completed, in order.
  void reap();
  /// A staging slot of at least `bytes` (with a device buffer of that size when withDevice) for
  /// the job being enqueued (mutex_ held): marked busy, and *release marks it idle again once
  /// the job has retired. Grows an idle slot (its old buffers are kept until the executor
  /// closes, so nothing is freed under the stream), adds one (at most 8), or waits for the
  /// oldest job in flight (its event only) when all are busy.
  kvio_status acquireSlot(uint64_t bytes, bool withDevice, StagingSlot** out,
                          std::function<void()>* release);

  int32_t device_ = 0;
  cudaStream_t stream_ = nullptr;
  bool ownStream_ = false;
  std::shared_ptr<EventPool> events_;  // created by init
  const char* name_ = "";
  std::mutex mutex_;  // serialises submissions (and the subclass's staging)

 private:
  struct InFlight {
    std::shared_ptr<EventCompletion> completion;
    std::shared_ptr<Job> job;
    std::function<void()> release;
  };
  void retire(InFlight& entry, bool wait);
  kvio_status allocateSlot(uint64_t bytes, bool withDevice, StagingSlot* slot);
  static void freeSlot(StagingSlot& slot);
  // Completes a job whose work could not all be queued, after the stream has run what was
  // (the job keeps its pools alive until then), then releases its staging.
  void failAfterQueuedWork(Job& job, kvio_status status, std::string message,
                           const std::function<void()>& release);
  std::deque<InFlight> inFlight_;
  std::atomic<size_t> inFlightCount_{0};  // inFlight_.size(), read without the lock
  std::vector<StagingSlot> slots_;        // never moves: jobs' release callbacks point into it
  std::vector<StagingSlot> retired_;      // outgrown, freed when the executor closes
};

/// A new executor of type E (a CudaExecutor with configure(config)) into *out when it configures.
template <class E>
kvio_status createConfigured(const CudaExecutorConfig& config, std::unique_ptr<Executor>* out) {
  auto executor = std::make_unique<E>();
  KVIO_RETURN_IF_ERROR(executor->configure(config));
  *out = std::move(executor);
  return KVIO_STATUS_OK;
}

}  // namespace cuda
}  // namespace kvio

#endif  // KVIO_CUDA_CUDA_EXECUTOR_HPP_
