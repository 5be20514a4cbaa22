// The interface between the core and the backends. The core validates and plans; an
// Executor runs plans in submission order and reports completion through a TransferState.
// Backends register a BackendOps table (backends.hpp); the core never includes a backend's
// headers.
#ifndef KVIO_CORE_EXECUTOR_HPP_
#define KVIO_CORE_EXECUTOR_HPP_

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kvio/kvio.h"
#include "layout.hpp"

namespace kvio {

struct PoolImpl;     // pool.hpp
struct PlanRequest;  // planner.hpp
struct IndexRun;

/// A native handle an executor or a device completion can hand out (a stream, an event). The
/// backend registry (backends.hpp) names the kinds; the core passes them through unread.
enum class NativeHandle : int32_t;

/// Completion tracked by a device (an event on its stream). A TransferState with one attached is
/// done when the device says so; the core never includes a backend's headers, so this is abstract.
class DeviceCompletion {
 public:
  virtual ~DeviceCompletion() = default;
  /// True once the device work is done (never blocks). These three throw nothing: they run in
  /// waits, drains and executor destructors, and a failure's status must survive a message that
  /// cannot be allocated (it is then left empty).
  virtual bool query() noexcept = 0;
  /// Blocks the calling thread until the device work is done (this event only).
  virtual void synchronize() noexcept = 0;
  /// Once done: the transfer's status, and its message when not OK.
  virtual kvio_status finish(std::string* message) noexcept = 0;
  /// The native handle of this kind (its event, for kvio_transfer_*_event) into *out; false
  /// when it has none of this kind.
  virtual bool nativeHandle(NativeHandle kind, uint64_t* out) const = 0;
};

/// How many times this process has been the child of a fork() since kvio was loaded (its
/// pthread_atfork handlers are registered then). An executor
/// made before a fork has no threads (or device stream) in the child, and a transfer in flight
/// at the fork never completes there: the registry refuses both in the child (handles.hpp).
uint32_t forkGeneration();

// A caller's timeout in nanoseconds as the waits use it: negative waits without limit, and so
// does anything over 2^60 ns (36 years), so that now + timeout cannot overflow the clock (a
// deadline wrapped into the past would time out at once: INT64_MAX would mean "do not wait").
inline int64_t boundedTimeoutNs(int64_t timeoutNs) {
  return timeoutNs > (int64_t{1} << 60) ? -1 : timeoutNs;
}

/// Completion of one submitted transfer: a one-shot event with a status and a message. It also
/// holds the transfer's pools (their memory) until the transfer is done: the first thread that
/// sees it done (the executor completing it, or a query, wait or reap that finds its device
/// completion done) drops them, outside the lock, and only then does anyone see it done. So a
/// completed transfer never keeps a closed pool's memory or registration alive.
class TransferState {
 public:
  explicit TransferState(uint64_t bytes) : bytes_(bytes) {}
  /// The pools the transfer reads and writes; held until it is done. Set before the state is
  /// shared with another thread (a pool's usage list, the executor): it takes no lock.
  void holdPools(std::shared_ptr<const PoolImpl> src, std::shared_ptr<const PoolImpl> dst);
  void complete(kvio_status status, std::string message = {});
  /// From now on, done means the device completion is done (device executors). Wakes the
  /// threads in wait(), which go on to wait for the device.
  void attach(std::shared_ptr<DeviceCompletion> completion);
  std::shared_ptr<DeviceCompletion> deviceCompletion() const;
  /// True once done (polls the device completion; the first to see it done drops the pools).
  /// Never waits: false while another thread that saw it done is still dropping the pools.
  bool isDone() const;
  /// True once done and its pools dropped, without polling (cheap).
  bool settled() const;
  /// Waits up to timeoutNs (< 0: forever). Returns false on timeout. A wait that begins before
  /// the executor attached a device completion waits for that, then for the device.
  bool wait(int64_t timeoutNs) const;
  /// Threads blocked in a wait on it now (tests: a wait has begun before what they do next).
  int waiters() const { return waiters_.load(); }
  kvio_status status() const;
  /// isDone(), with the status (OK while not done) and endNs(), under one lock once done.
  bool outcome(kvio_status* status, int64_t* endNs) const;
  std::string message() const;
  uint64_t bytes() const { return bytes_; }
  /// Submitted in this process (not in a parent before a fork).
  bool submittedHere() const { return forkGeneration_ == forkGeneration(); }

  /// What the transfer is (kvio_transfer_get_info); the core sets it before submission.
  struct Shape {
    int32_t ioBackend = 0;
    int32_t chosenBackend = 0;  // the backend that runs it (auto's choice; else ioBackend)
    bool overlapsCompute = false;
    int32_t srcLayout = 0, dstLayout = 0;
    int32_t srcMemory = 0, dstMemory = 0;
    int32_t components = 0;
    int64_t numIndices = 0, numLayers = 0;
    int64_t copies = 0, launches = 0;
    int64_t submitNs = 0;  // 0: this transfer is not timed (kvio_transfer_timing off)
  };
  void describe(const Shape& shape) { shape_ = shape; }
  const Shape& shape() const { return shape_; }
  /// Executors call it when execution begins; only the first call of a timed transfer counts.
  void markStarted() const {
    if (shape_.submitNs == 0) return;
    int64_t expected = 0;
    startNs_.compare_exchange_strong(expected, monotonicNs(), std::memory_order_relaxed);
  }
  int64_t startNs() const { return startNs_.load(std::memory_order_relaxed); }
  /// When it was seen done (0: not timed, or not done yet).
  int64_t endNs() const;
  /// CLOCK_MONOTONIC nanoseconds.
  static int64_t monotonicNs();

 private:
  /// Completes from the device completion if it is done; mutex_ held.
  bool pollLocked() const;
  /// Done (the device completion polled) and pools dropped; false when not done yet. When
  /// another thread saw it done and is dropping the pools: with `block`, waits for that until
  /// `deadline` (nullptr: without limit), else false at once.
  bool settle(bool block, const std::chrono::steady_clock::time_point* deadline) const;
  /// The pools a transfer holds: its source and destination (the same pool twice, or null once
  /// dropped). Two fields, not a vector: no allocation per transfer.
  using HeldPools = std::array<std::shared_ptr<const PoolImpl>, 2>;
  /// Drops the pools taken out under the lock and publishes that the transfer is done.
  void dropPools(HeldPools* pools) const;

  mutable std::mutex mutex_;
  mutable std::condition_variable done_;
  mutable bool isDone_ = false;  // the status is final
  // ... and the pools are dropped: what callers see as done. Set once, after the status, the
  // message and endNs_ are final, so a thread that reads it true reads those without the lock.
  // Set without the lock; waiters count themselves (waiters_) and the setter takes the lock to
  // wake them only when there are some (both seq_cst: one of the two sees the other).
  mutable std::atomic<bool> released_{false};
  mutable std::atomic<int> waiters_{0};  // threads waiting on done_ (changed with mutex_ held)
  /// done_.wait until released_, or with `orAttached` until a device completion is attached
  /// (attach() wakes the waiters too) (mutex_ held by `lock`); false at the deadline, if any.
  bool waitReleased(std::unique_lock<std::mutex>& lock,
                    const std::chrono::steady_clock::time_point* deadline, bool orAttached) const;
  mutable kvio_status status_ = KVIO_STATUS_OK;
  mutable std::string message_;
  mutable HeldPools pools_;
  std::shared_ptr<DeviceCompletion> completion_;
  const uint64_t bytes_;
  const uint32_t forkGeneration_ = forkGeneration();
  Shape shape_;
  mutable std::atomic<int64_t> startNs_{0};  // set once; also by a const poll that sees it done
  mutable int64_t endNs_ = 0;                // guarded by mutex_
};

/// What an executor that evaluates the layouts itself (an SM kernel) needs instead of a
/// plan. Layer tables hold device-accessible addresses. Host index arrays are valid during
/// Executor::submit only; device index arrays until the transfer completes.
struct LayoutJob {
  AffineLayout src;
  AffineLayout dst;
  // src.layerBase points here. The kernel executor keeps only the transfer's layers: its
  // layouts then have numLayers layers and the starts below are 0.
  std::vector<uint64_t> srcTable;
  std::vector<uint64_t> dstTable;
  const int64_t* srcIndices = nullptr;
  const int64_t* dstIndices = nullptr;
  bool indicesOnDevice = false;
  int64_t count = 0;
  int64_t srcLayerStart = 0;
  int64_t dstLayerStart = 0;
  int64_t numLayers = 0;
  int32_t ctaBudget = 0;  // this transfer's launch shape; 0: the executor's
  int32_t warpsPerCta = 0;
};

/// Where a pool's memory lies, as an executor sees it when accepting a transfer.
struct MemoryPlace {
  int32_t kind;    // KVIO_MEMORY_*
  int32_t device;  // device ordinal, -1 for pageable host memory
};

/// Plan storage reused across jobs: the plan of a scattered transfer is megabytes, and a fresh
/// vector per transfer pays for its pages again each time. A few vectors (at most 32 MiB in all)
/// are kept; takePlanStorage() hands one out (empty, with its capacity) or a new one.
std::vector<kvio_copy2d> takePlanStorage();
void returnPlanStorage(std::vector<kvio_copy2d>&& plan) noexcept;

/// Work an executor prepared for itself beyond a plan or a layout job (the staged backend's
/// chunks), carried from Executor::prepare to its submit; the core never looks inside.
struct BackendWork {
  virtual ~BackendWork() = default;
};

/// Everything an executor needs to run one transfer. The state holds the pools until the
/// transfer is done; srcPool and dstPool point at them and are valid until then only: an
/// executor reads them while it issues the job, never after the job is done. The plan's
/// storage goes back to the reuse list when the job is destroyed.
struct Job {
  Job() = default;
  ~Job() { returnPlanStorage(std::move(plan)); }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  std::vector<kvio_copy2d> plan;      // empty when the executor does not use plans
  LayoutJob layout;                   // filled when it does not
  std::unique_ptr<BackendWork> work;  // what the executor's prepare added, if anything
  std::shared_ptr<TransferState> state;
  MemoryPlace srcPlace{KVIO_MEMORY_HOST, -1};  // where the pools lie (an executor may
  MemoryPlace dstPlace{KVIO_MEMORY_HOST, -1};  // derive the copy direction from them)
  const PoolImpl* srcPool = nullptr;           // the pools (their memory regions)
  const PoolImpl* dstPool = nullptr;
  int32_t ioBackend = -1;  // the KVIO_BACKEND_* that runs it when auto chose; -1: the executor
  bool queueOnly = false;  // KVIO_SUBMIT_QUEUE_ONLY: no copy on the submitting thread
};

/// A validated transfer, as the core hands it to Executor::prepare.
struct Transfer {
  const PoolImpl* src = nullptr;
  const PoolImpl* dst = nullptr;
  const kvio_transfer_desc* desc = nullptr;
  bool deviceIndices = false;  // the index arrays are device-resident (not read on the host)
  /// Host indices only (nullptr otherwise): the planner's input, validated.
  const PlanRequest* request = nullptr;
  const std::vector<IndexRun>* runs = nullptr;
  int32_t ctaBudget = 0;  // this transfer's launch shape; 0: the executor's
  int32_t warpsPerCta = 0;
  bool overlapsCompute = false;  // KVIO_SUBMIT_OVERLAPS_COMPUTE: what the 'auto' choice reads
};

/// What Executor::prepare reports of the work it prepared (kvio_transfer_get_info).
struct Prepared {
  uint64_t bytes = 0;
  int64_t copies = 0;      // 2D copies in the plan
  int64_t launches = 0;    // kernel launches
  int32_t ioBackend = -1;  // the KVIO_BACKEND_* auto chose to run it; -1: the executor's own
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual int32_t threads() const = 0;
  /// Enqueues the job; runs after every job submitted before it on this executor.
  virtual void submit(std::shared_ptr<Job> job) = 0;
  /// Runs the job on the calling thread, now, if this executor would (cpu: a small job with
  /// nothing queued or running before it): true when it did, and the job is complete; false
  /// when it did not take the job, which then goes to submit(). The core calls it first, and
  /// lists the transfer with its pools (PoolUsage) only when it returns false: a transfer done
  /// inline is never seen running by a pool's close. Not called for a queue-only job
  /// (KVIO_SUBMIT_QUEUE_ONLY), which submit() must not run on the calling thread either.
  virtual bool runInline(Job& job) { return false; }
  /// Blocks until every submitted job has completed.
  virtual void drain() = 0;
  /// Lets go of jobs that have completed but are still kept (the device executors retire a job,
  /// its plan, event and staging, only in a later submit or drain). 'auto' calls it on the
  /// candidates it did not give a job to, so one left idle keeps nothing. Never blocks on the
  /// device; may throw (bad_alloc reading a finished job's outcome), which auto ignores; by
  /// default nothing to do.
  virtual void retireFinished() {}
  /// Prepares the job's work from a validated transfer: by default its plan (job->plan, with its
  /// bytes and copies in *out), then prepareFromPlan; an executor that evaluates the layouts
  /// itself overrides it and fills job->layout instead.
  virtual kvio_status prepare(const Transfer& transfer, Job* job, Prepared* out) const;
  /// The rest of the default prepare, once job->plan holds this transfer's plan and *out its
  /// bytes and copies: what an executor that runs from a plan builds out of it (the staged
  /// backend's chunks, which also set *out's copies and launches). By default nothing: the plan
  /// is the work. The 'auto' executor plans a transfer once to choose, then calls this on the
  /// plan-running candidate it picked instead of that candidate's prepare, so a plan is made
  /// once per transfer; an executor that overrides it keeps the default prepare.
  virtual kvio_status prepareFromPlan(const Transfer& transfer, Job* job, Prepared* out) const {
    return KVIO_STATUS_OK;
  }
  /// True for executors that call TransferState::markStarted when a job starts running (cpu);
  /// for the others the core marks the start when submit() returns (the work was issued).
  virtual bool marksStart() const { return false; }
  /// Whether this executor takes device-resident index arrays at all (backends whose BackendOps
  /// declare deviceIndices), before any array is looked at: OK, else UNSUPPORTED and why.
  virtual kvio_status acceptDeviceIndices() const { return KVIO_STATUS_OK; }
  /// For device-resident index arrays of `count` entries each (backends whose BackendOps declare
  /// deviceIndices): OK if the device can read them whole, else the reason.
  virtual kvio_status checkDeviceIndices(const int64_t* src, const int64_t* dst,
                                         int64_t count) const {
    return KVIO_STATUS_OK;
  }
  /// OK if this executor can move between memory of these kinds, else the reason.
  virtual kvio_status acceptMemory(MemoryPlace src, MemoryPlace dst) const = 0;
  /// The native handle of this kind (its stream) into *out; false when it has none of this kind.
  virtual bool nativeHandle(NativeHandle kind, uint64_t* out) const { return false; }
};

}  // namespace kvio

#endif  // KVIO_CORE_EXECUTOR_HPP_
