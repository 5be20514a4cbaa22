// The CUDA backend's registry entries ('kernel', 'direct' and 'staged'), their availability (the
// CUDA runtime's own reason when there is no driver or device), kvio_cuda_device_count, and the
// executor base the three backends share (cuda_executor.hpp).
#include <chrono>
#include <exception>
#include <limits>
#include <new>
#include <string>
#include <thread>

#include "../core/auto_executor.hpp"
#include "../core/entry.hpp"
#include "../core/names.hpp"
#include "../core/pool.hpp"
#include "cuda_executor.hpp"
#include "stream_argument.hpp"

namespace kvio {
namespace cuda {

kvio_status createKernelExecutor(const CudaExecutorConfig& config,
                                 std::unique_ptr<Executor>* out);  // kernel_executor.cpp
kvio_status createDirectExecutor(const CudaExecutorConfig& config,
                                 std::unique_ptr<Executor>* out);  // direct_executor.cpp
kvio_status createStagedExecutor(const CudaExecutorConfig& config,
                                 std::unique_ptr<Executor>* out);  // staged_executor.cpp
kvio_status setKernelLaunch(Executor& executor, int32_t ctaBudget,
                            int32_t warpsPerCta);  // kernel_executor.cpp
kvio_status setStagedLaunch(Executor& executor, int32_t ctaBudget,
                            int32_t warpsPerCta);  // staged_executor.cpp

namespace {

// The message `build` makes, or none when making it runs out of memory: for the failure paths
// that run after copies were queued, where an exception would leave before the stream is
// synchronised (and the pools go while the copies run).
template <class Build>
std::string messageOrNone(Build&& build) noexcept {
  try {
    return build();
  } catch (const std::bad_alloc&) {
    return {};
  }
}

// Probed once per call: drivers can appear (or a device be hidden) between calls in tests.
kvio_status cudaAvailable() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    const int runtime = CUDART_VERSION;  // the runtime kvio links statically
    return fail(KVIO_STATUS_UNAVAILABLE,
                "no usable CUDA driver or device: cudaGetDeviceCount failed with %s (kvio is "
                "built with CUDA runtime %d.%d; the driver must support it)",
                describe(error).c_str(), runtime / 1000, (runtime % 1000) / 10);
  }
  if (count == 0) {
    return fail(KVIO_STATUS_UNAVAILABLE, "no CUDA device: cudaGetDeviceCount reports 0 devices");
  }
  return KVIO_STATUS_OK;
}

kvio_status createDefault(kvio_status (*create)(const CudaExecutorConfig&,
                                                std::unique_ptr<Executor>*),
                          std::unique_ptr<Executor>* out) {
  CudaExecutorConfig config;  // device 0, kvio's own stream, default launch shape
  return create(config, out);
}

kvio_status createKernelDefault(int32_t, std::unique_ptr<Executor>* out) {
  return createDefault(createKernelExecutor, out);
}
kvio_status createDirectDefault(int32_t, std::unique_ptr<Executor>* out) {
  return createDefault(createDirectExecutor, out);
}
kvio_status createStagedDefault(int32_t, std::unique_ptr<Executor>* out) {
  return createDefault(createStagedExecutor, out);
}

// The kernel reads device-resident indices itself and has a launch shape.
const BackendOps kKernelOps{KVIO_BACKEND_KERNEL,  cudaAvailable, createKernelDefault,
                            createKernelExecutor, nullptr,       true,
                            setKernelLaunch};
const BackendOps kDirectOps{KVIO_BACKEND_DIRECT, cudaAvailable, createDirectDefault,
                            createDirectExecutor, nullptr};
const BackendOps kStagedOps{KVIO_BACKEND_STAGED,  cudaAvailable, createStagedDefault,
                            createStagedExecutor, nullptr,       false,
                            setStagedLaunch};

// A caller's stream must belong to the executor's device and to its primary context: kvio's
// events, staging and kernels live there, and an event of one device recorded on another's
// stream, or a kernel launched to a stream of a context the caller created, fails (invalid
// resource handle) at the first transfer, far from the cause. A stream being captured is left
// alone (querying its device can invalidate the capture on some drivers). Its device is asked
// where the runtime can tell (cudaStreamGetDevice: a toolkit of 12.8 or later, and a driver
// with the call), its context where the driver can (checkStreamContext), each on its own.
kvio_status checkCallerStream(cudaStream_t stream, int32_t device, const char* name) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  KVIO_CUDA_TRY(cudaStreamIsCapturing(stream, &capture),
                "checking the stream %p given to a '%s' executor on device %d",
                static_cast<void*>(stream), name, device);
  if (capture != cudaStreamCaptureStatusNone) return KVIO_STATUS_OK;
#if CUDART_VERSION >= 12080
  int streamDevice = -1;
  const cudaError_t error = cudaStreamGetDevice(stream, &streamDevice);
  if (error == cudaErrorNotSupported || error == cudaErrorCallRequiresNewerDriver) {
    cudaGetLastError();  // the device cannot be told; the context may
  } else {
    KVIO_CUDA_TRY_RESULT(error, "cudaStreamGetDevice",
                         "asking which device the stream %p given to a '%s' executor belongs to",
                         static_cast<void*>(stream), name);
    if (streamDevice != device) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "the stream %p belongs to CUDA device %d but the '%s' executor is for device "
                  "%d: pass a stream of device %d, or create the executor for device %d",
                  static_cast<void*>(stream), streamDevice, name, device, device, streamDevice);
    }
  }
#endif
  return checkStreamContext(stream, device, name);
}

}  // namespace

// ---- EventCompletion ----

// The event has completed (or was never recorded) and its transfer is closed: kept for the
// executor's next transfer, or destroyed when enough are spare.
EventCompletion::~EventCompletion() {
  pool_->give(event_);
}

// An event call refused because of a stream capture (the calling thread's capture mode forbids
// it while some thread captures, or it touched a capture): no answer about the event's work,
// which may still run. Asked again later; any other error is the transfer's.
namespace {
bool refusedForACapture(cudaError_t error) {
  return error == cudaErrorStreamCaptureUnsupported || error == cudaErrorStreamCaptureImplicit ||
         error == cudaErrorStreamCaptureInvalidated || error == cudaErrorStreamCaptureWrongThread;
}
}  // namespace

// Waiting threads query from anywhere: under a DeviceScope, so that a thread with no CUDA
// context does not get device 0's created by the runtime's lazy initialisation.
// A failure is the transfer's (error_), not the calling thread's: the thread's last error is
// cleared after it, so that the caller's next launch check does not report it as its own. A
// scope that could not make the device current is not the transfer's failure (its work may
// still run): the event is asked all the same, which an event call answers for the event's own
// context.
bool EventCompletion::query() noexcept {
  if (error_.load() != cudaSuccess) return true;
  DeviceScope scope(device_);
  const cudaError_t error = cudaEventQuery(event_);
  if (error == cudaErrorNotReady) {
    // Not an error, but a runtime that kept it as the thread's last error would have the next
    // launch's cudaGetLastError report it as that launch's failure: clear it, and only it.
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
    return false;
  }
  if (refusedForACapture(error)) {  // (a scope that failed did not relax the capture mode)
    if (cudaPeekAtLastError() == error) cudaGetLastError();
    return false;
  }
  if (error != cudaSuccess) {
    cudaGetLastError();
    int expected = cudaSuccess;
    error_.compare_exchange_strong(expected, error);
  }
  return true;
}

void EventCompletion::synchronize() noexcept {
  DeviceScope scope(device_);
  const cudaError_t error = cudaEventSynchronize(event_);
  if (refusedForACapture(error)) {
    // No answer while the capture lasts: poll until the event answers.
    if (cudaPeekAtLastError() == error) cudaGetLastError();
    auto pause = std::chrono::microseconds(5);
    while (!query()) {
      std::this_thread::sleep_for(pause);
      if (pause < std::chrono::microseconds(1000)) pause *= 2;
    }
    return;
  }
  if (error != cudaSuccess) {
    cudaGetLastError();
    int expected = cudaSuccess;
    error_.compare_exchange_strong(expected, error);
  }
}

kvio_status EventCompletion::finish(std::string* message) noexcept {
  const auto error = static_cast<cudaError_t>(error_.load());
  if (queueStatus != KVIO_STATUS_OK) {
    try {
      *message = queueMessage;
      if (error != cudaSuccess) {
        *message += "; then the stream's work before it failed: " + describe(error);
      }
    } catch (...) {  // no memory for the text: the status says it
      message->clear();
    }
    return queueStatus;
  }
  if (error != cudaSuccess) {
    try {
      *message = "the transfer's work on the CUDA stream failed: " + describe(error) +
                 " (reported by cudaEventQuery/cudaEventSynchronize)";
    } catch (...) {  // no memory for the text: the status says it
      message->clear();
    }
    return KVIO_STATUS_BACKEND_ERROR;
  }
  if (hostStatus != nullptr && hostStatus[1] > 0) {
    char text[400];
    std::snprintf(text, sizeof(text),
                  "the kernel skipped %llu index pairs with an index outside its pool; the first "
                  "is pair %llu (src_indices[%llu] valid 0 to %lld, dst_indices[%llu] valid 0 to "
                  "%lld); the other pairs were copied",
                  hostStatus[1], hostStatus[0], hostStatus[0],
                  static_cast<long long>(srcTokens - 1), hostStatus[0],
                  static_cast<long long>(dstTokens - 1));
    try {
      *message = text;
    } catch (...) {
      message->clear();
    }
    return KVIO_STATUS_OUT_OF_RANGE;
  }
  return KVIO_STATUS_OK;
}

// ---- CudaExecutor ----

// Staging slots: the smallest allocation (sizes grow by doubling) and how many an executor keeps.
constexpr uint64_t kMinStagingSlotBytes = 64 * 1024;
constexpr size_t kMaxStagingSlots = 8;

kvio_status CudaExecutor::init(const CudaExecutorConfig& config, const char* name) {
  name_ = name;
  device_ = config.device;
  int count = 0;
  KVIO_CUDA_TRY(cudaGetDeviceCount(&count), "creating a '%s' executor on device %d", name, device_);
  if (device_ >= count) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "CUDA device %d does not exist (%d devices: 0 to %d)",
                device_, count, count - 1);
  }
  DeviceScope scope(device_);
  KVIO_CUDA_TRY_SCOPE(scope, device_);
  const int32_t device = device_;
  events_ = std::make_shared<EventPool>(kPooledEvents, [device](cudaEvent_t event) {
    DeviceScope eventScope(device);
    if (cudaEventDestroy(event) != cudaSuccess) cudaGetLastError();  // as in freeSlot
  });
  const StreamArgument kind = classifyStream(config.stream);
  if (kind == StreamArgument::kOwnMarker) {
    KVIO_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                  "creating the '%s' executor's stream on device %d", name, device_);
    ownStream_ = true;
  } else {
    stream_ = reinterpret_cast<cudaStream_t>(config.stream);
    if (kind == StreamArgument::kHandle)  // the legacy default stream is every device's
      KVIO_RETURN_IF_ERROR(checkCallerStream(stream_, device_, name));
  }
  return KVIO_STATUS_OK;
}

CudaExecutor::~CudaExecutor() {
  // Subclasses drain first: no job in flight reads a slot or the stream any more.
  if (slots_.empty() && retired_.empty() && !(ownStream_ && stream_ != nullptr)) return;
  DeviceScope scope(device_);
  for (StagingSlot& slot : slots_) freeSlot(slot);
  for (StagingSlot& slot : retired_) freeSlot(slot);
  if (ownStream_ && stream_ != nullptr && cudaStreamDestroy(stream_) != cudaSuccess) {
    cudaGetLastError();  // as in freeSlot
  }
}

bool CudaExecutor::nativeHandle(NativeHandle kind, uint64_t* out) const {
  if (kind != NativeHandle::kCudaStream) return false;
  *out = reinterpret_cast<uint64_t>(stream_);
  return true;
}

kvio_status CudaExecutor::acceptMemory(MemoryPlace src, MemoryPlace dst) const {
  const MemoryPlace sides[2] = {src, dst};
  for (int i = 0; i < 2; ++i) {
    const char* side = i == 0 ? "source" : "destination";
    if (sides[i].kind == KVIO_MEMORY_HOST) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "the %s pool is pageable host memory; the '%s' io backend needs pinned host "
                  "memory: allocate it with KVIO_MEMORY_HOST_PINNED, or wrap it with "
                  "KVIO_MEMORY_HOST_PINNED (kvio registers it with cudaHostRegister)",
                  side, name_);
    }
    if (sides[i].kind != KVIO_MEMORY_HOST_PINNED && sides[i].kind != KVIO_MEMORY_CUDA_DEVICE) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "the %s pool is Ascend memory ('%s'); the '%s' io backend moves CUDA device "
                  "memory and CUDA pinned host memory only: use the 'kernel_ascend' io backend",
                  side, memoryKindName(sides[i].kind), name_);
    }
    if (sides[i].device != device_) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "the %s pool belongs to CUDA device %d but this '%s' executor runs on device "
                  "%d; create the pool (or the executor) for the same device",
                  side, sides[i].device, name_, device_);
    }
  }
  return KVIO_STATUS_OK;
}

kvio_status CudaExecutor::refuseCapture() const {
  DeviceScope scope(device_);  // the legacy stream is the current device's
  KVIO_CUDA_TRY_SCOPE(scope, device_);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  const cudaError_t queried = cudaStreamIsCapturing(stream_, &capture);
  if (queried == cudaErrorStreamCaptureImplicit) {  // the legacy stream, during a capture
    cudaGetLastError();
    return fail(KVIO_STATUS_UNSUPPORTED,
                "the '%s' executor's stream is the legacy default stream, which a stream "
                "capture on device %d makes unusable (cudaStreamIsCapturing: "
                "cudaErrorStreamCaptureImplicit); kvio transfers cannot be captured: submit it "
                "before or after the capture",
                name_, device_);
  }
  KVIO_CUDA_TRY_RESULT(queried, "cudaStreamIsCapturing",
                       "checking whether the '%s' executor's stream %p is being captured", name_,
                       static_cast<void*>(stream_));
  if (capture == cudaStreamCaptureStatusNone) return KVIO_STATUS_OK;
  return fail(KVIO_STATUS_UNSUPPORTED,
              "the '%s' executor's stream %p is %s; kvio transfers cannot be captured (kvio "
              "reuses a transfer's staging and event once it has seen the transfer complete, "
              "which a replay of the graph would still read): submit it before or after the "
              "capture",
              name_, static_cast<void*>(stream_),
              capture == cudaStreamCaptureStatusActive
                  ? "being captured into a CUDA graph"
                  : "in a CUDA graph capture that was invalidated and not yet ended");
}

kvio_status CudaExecutor::prepare(const Transfer& transfer, Job* job, Prepared* out) const {
  KVIO_RETURN_IF_ERROR(refuseCapture());
  return Executor::prepare(transfer, job, out);
}

void CudaExecutor::submit(std::shared_ptr<Job> job) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceScope scope(device_);  // reap's queries, event creation, staging allocation
  if (scope.error() != cudaSuccess) {
    job->state->complete(statusOf(scope.error()), deviceScopeMessage(scope.error(), device_));
    return;
  }
  reap();
  cudaEvent_t event = nullptr;
  cudaError_t error = cudaSuccess;
  if (!events_->take(&event)) {
    error = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (error != cudaSuccess) {
      cudaGetLastError();
      job->state->complete(statusOf(error), "cudaEventCreateWithFlags failed: " + describe(error));
      return;
    }
  }
  std::shared_ptr<EventCompletion> completion;
  try {
    completion = std::make_shared<EventCompletion>(events_, event, device_);
  } catch (const std::bad_alloc&) {  // nothing queued yet: the core reports it
    if (cudaEventDestroy(event) != cudaSuccess) cudaGetLastError();
    throw;
  }
  std::function<void()> release;  // set by enqueue once it holds a staging slot
  kvio_status status = KVIO_STATUS_OK;
  std::string message;
  try {
    status = enqueue(*job, completion.get(), &release);
    if (status != KVIO_STATUS_OK) message = lastError();
  } catch (const std::bad_alloc& e) {  // an allocation while issuing (a copy list, a batch)
    status = KVIO_STATUS_OUT_OF_MEMORY;
    message = messageOrNone([&] {
      return std::string("the '") + name_ + "' executor ran out of host memory while issuing " +
             "the transfer (" + e.what() + ")";
    });
  } catch (const std::exception& e) {
    status = KVIO_STATUS_INTERNAL;
    message = messageOrNone([&] {
      return std::string("the '") + name_ +
             "' executor failed while issuing the transfer: " + e.what();
    });
  }
  if (status != KVIO_STATUS_OK) {
    // Copies queued before the failed call may still write the destination: the transfer
    // reports its error only once the stream has finished them, so nothing changes after. The
    // event recorded after them says when, without waiting here: on a caller's stream, a wait
    // would also wait for the caller's work queued before, which may wait in turn for something
    // the caller does only after this submit returns.
    completion->queueStatus = status;
    completion->queueMessage = std::move(message);  // a move: no allocation
    error = cudaEventRecord(event, stream_);
    if (error != cudaSuccess) {  // no event: wait for the stream instead
      cudaGetLastError();
      failAfterQueuedWork(*job, status, std::move(completion->queueMessage), release);
      return;
    }
    try {
      inFlight_.push_back({completion, job, release});
      inFlightCount_.store(inFlight_.size(), std::memory_order_relaxed);
    } catch (const std::bad_alloc&) {
      failAfterQueuedWork(*job, status, std::move(completion->queueMessage), release);
      return;
    }
    job->state->attach(completion);
    return;
  }
  error = cudaEventRecord(event, stream_);
  if (error != cudaSuccess) {
    cudaGetLastError();
    failAfterQueuedWork(*job, statusOf(error),
                        messageOrNone([&] { return "cudaEventRecord failed: " + describe(error); }),
                        release);
    return;
  }
  try {
    inFlight_.push_back({completion, job, release});  // copies: ours still, should it throw
    inFlightCount_.store(inFlight_.size(), std::memory_order_relaxed);
  } catch (const std::bad_alloc& e) {  // a deque node: the one thing that can throw here
    failAfterQueuedWork(*job, KVIO_STATUS_OUT_OF_MEMORY, messageOrNone([&] {
      return std::string("the '") + name_ +
             "' executor ran out of host memory tracking the transfer (" + e.what() + ")";
    }),
                        release);
    return;
  }
  job->state->attach(completion);
}

void CudaExecutor::failAfterQueuedWork(Job& job, kvio_status status, std::string message,
                                       const std::function<void()>& release) {
  const cudaError_t error = cudaStreamSynchronize(stream_);
  if (error != cudaSuccess) {
    cudaGetLastError();
    try {
      message += "; then cudaStreamSynchronize failed: " + describe(error);
    } catch (const std::bad_alloc&) {  // the message as it was
    }
  }
  job.state->complete(status, std::move(message));
  if (release) release();  // staging of the job's indices, unused once the stream is done
}

void CudaExecutor::retire(InFlight& entry, bool wait) {
  // Reads the completion's status while its staging is intact. A drain waits until the
  // transfer is done to everyone (another thread that saw it done first may still be dropping
  // its pools); a reap never waits.
  if (wait) {
    entry.job->state->wait(-1);
  } else {
    entry.job->state->isDone();
  }
  if (entry.release) entry.release();
}

void CudaExecutor::reap() {
  while (!inFlight_.empty() && inFlight_.front().completion->query()) {
    // Kept while another thread that saw it done still drops its pools: a drain (close) waits
    // for that on the entries left here.
    if (!inFlight_.front().job->state->isDone()) break;
    retire(inFlight_.front(), false);
    inFlight_.pop_front();
    inFlightCount_.store(inFlight_.size(), std::memory_order_relaxed);
  }
}

void CudaExecutor::retireFinished() {
  if (inFlightCount_.load(std::memory_order_relaxed) == 0) return;
  // Never waits for the lock: a submit holding it can block on the device (a full set of
  // staging slots, a table upload), and reaps itself anyway.
  std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  DeviceScope scope(device_);                // for reap's queries, on whatever thread submits
  if (scope.error() != cudaSuccess) return;  // the next submit or drain reports it
  reap();
}

bool CudaExecutor::retireOldest() {
  if (inFlight_.empty()) return false;
  inFlight_.front().completion->synchronize();
  retire(inFlight_.front(), true);
  inFlight_.pop_front();
  inFlightCount_.store(inFlight_.size(), std::memory_order_relaxed);
  return true;
}

void CudaExecutor::freeSlot(StagingSlot& slot) {
  // At close only; a failure here has nobody to report to, and is not left pending for the
  // next launch's cudaGetLastError to report as its own.
  if (slot.host != nullptr && cudaFreeHost(slot.host) != cudaSuccess) cudaGetLastError();
  if (slot.device != nullptr && cudaFree(slot.device) != cudaSuccess) cudaGetLastError();
  slot = StagingSlot{};
}

kvio_status CudaExecutor::allocateSlot(uint64_t bytes, bool withDevice, StagingSlot* slot) {
  if (bytes > (uint64_t{1} << 62)) {  // no such allocation; the doubling below would wrap
    return fail(KVIO_STATUS_OUT_OF_MEMORY, "a staging slot of %llu bytes cannot be allocated",
                static_cast<unsigned long long>(bytes));
  }
  uint64_t size = kMinStagingSlotBytes;
  while (size < bytes) size *= 2;
  void* host = nullptr;
  void* device = nullptr;
  KVIO_CUDA_TRY(cudaHostAlloc(&host, size, cudaHostAllocDefault),
                "allocating a %llu-byte pinned staging buffer for the '%s' executor's uploads",
                static_cast<unsigned long long>(size), name_);
  if (withDevice) {
    const cudaError_t error = cudaMalloc(&device, size);
    if (error != cudaSuccess) {
      if (cudaFreeHost(host) != cudaSuccess) cudaGetLastError();  // as in freeSlot
      KVIO_CUDA_TRY_RESULT(
          error, "cudaMalloc",
          "allocating a %llu-byte device staging buffer for the '%s' executor's uploads",
          static_cast<unsigned long long>(size), name_);
    }
  }
  slot->host = static_cast<uint8_t*>(host);
  slot->device = static_cast<uint8_t*>(device);
  slot->bytes = size;
  slot->busy = false;
  return KVIO_STATUS_OK;
}

kvio_status CudaExecutor::acquireSlot(uint64_t bytes, bool withDevice, StagingSlot** out,
                                      std::function<void()>* release) {
  slots_.reserve(kMaxStagingSlots);
  StagingSlot* chosen = nullptr;
  while (chosen == nullptr) {
    StagingSlot* idle = nullptr;
    for (StagingSlot& slot : slots_) {
      if (slot.busy) continue;
      if (slot.bytes >= bytes && (slot.device != nullptr || !withDevice)) {
        chosen = &slot;
        break;
      }
      idle = &slot;
    }
    if (chosen != nullptr) break;
    if (idle != nullptr) {
      retired_.reserve(retired_.size() + 1);  // before allocating: the push below cannot throw
      StagingSlot grown;
      KVIO_RETURN_IF_ERROR(allocateSlot(bytes, withDevice, &grown));
      retired_.push_back(*idle);
      *idle = grown;
      chosen = idle;
    } else if (slots_.size() < kMaxStagingSlots) {
      StagingSlot fresh;
      KVIO_RETURN_IF_ERROR(allocateSlot(bytes, withDevice, &fresh));
      slots_.push_back(fresh);
      chosen = &slots_.back();
    } else if (!retireOldest()) {
      return fail(KVIO_STATUS_INTERNAL, "all %zu staging slots busy with no job in flight",
                  kMaxStagingSlots);
    }
  }
  chosen->busy = true;
  *release = [chosen] { chosen->busy = false; };
  *out = chosen;
  return KVIO_STATUS_OK;
}

void CudaExecutor::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceScope scope(device_);
  while (retireOldest()) {
  }
}

}  // namespace cuda

// The 'auto' executor on a GPU: kernel, direct and staged on one stream (the kernel executor's,
// its own or the caller's), staged and direct destroyed first. Staged allocates its staging
// buffer only when auto first gives it a transfer.
kvio_status createCudaAutoExecutor(const CudaExecutorConfig& config,
                                   std::unique_ptr<Executor>* out) {
  AutoCalibration calibration;
  bool measure = false;  // KVIO_AUTO_CALIBRATION=measure
  KVIO_RETURN_IF_ERROR(initialAutoCalibration(&calibration, &measure));
  std::array<AutoExecutor::Candidate, kAutoPicks> candidates;
  AutoExecutor::Candidate& kernel = candidates[static_cast<size_t>(AutoPick::kKernel)];
  AutoExecutor::Candidate& direct = candidates[static_cast<size_t>(AutoPick::kDirect)];
  AutoExecutor::Candidate& staged = candidates[static_cast<size_t>(AutoPick::kStaged)];
  kernel.ioBackend = KVIO_BACKEND_KERNEL;
  direct.ioBackend = KVIO_BACKEND_DIRECT;
  staged.ioBackend = KVIO_BACKEND_STAGED;
  KVIO_RETURN_IF_ERROR(asAutoCandidate(cuda::createKernelExecutor(config, &kernel.executor)));
  CudaExecutorConfig shared = config;
  kernel.executor->nativeHandle(NativeHandle::kCudaStream, &shared.stream);
  KVIO_RETURN_IF_ERROR(asAutoCandidate(cuda::createDirectExecutor(shared, &direct.executor)));
  KVIO_RETURN_IF_ERROR(asAutoCandidate(cuda::createStagedExecutor(shared, &staged.executor)));
  *out = std::make_unique<AutoExecutor>(std::move(candidates), std::move(calibration));
  if (!measure) return KVIO_STATUS_OK;
  if (config.stream != KVIO_CUDA_OWN_STREAM) {
    // Not on the caller's stream: the engine's queued work would be timed with the sweep, and a
    // stream waiting on work this thread queues later would block the creation. An auto
    // executor of kvio's own stream measures (the environment still asks for it), and this one
    // takes its calibration.
    CudaExecutorConfig own = config;
    own.stream = KVIO_CUDA_OWN_STREAM;
    std::unique_ptr<Executor> measured;
    KVIO_RETURN_IF_ERROR(createCudaAutoExecutor(own, &measured));
    static_cast<AutoExecutor*>(out->get())
        ->setCalibration(static_cast<AutoExecutor*>(measured.get())->calibration());
    return KVIO_STATUS_OK;
  }
  AutoMeasureTarget target;  // CUDA device memory and pinned host memory of this device
  target.deviceKind = KVIO_MEMORY_CUDA_DEVICE;
  target.device = config.device;
  return measureAutoCalibration(out, target);
}

const BackendOps& cudaKernelBackendOps() {
  return cuda::kKernelOps;
}
const BackendOps& cudaDirectBackendOps() {
  return cuda::kDirectOps;
}
const BackendOps& cudaStagedBackendOps() {
  return cuda::kStagedOps;
}

}  // namespace kvio

extern "C" kvio_status kvio_cuda_device_count(int32_t* count_out) {
  return kvio::countDevices(count_out, [](int32_t* out) -> kvio_status {
    int count = 0;
    KVIO_CUDA_TRY(cudaGetDeviceCount(&count), "counting CUDA devices");
    *out = count;
    return KVIO_STATUS_OK;
  });
}
