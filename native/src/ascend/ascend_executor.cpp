// The 'kernel_ascend' executor and its completion (the registry entry that creates it:
// ascend_backend.cpp; the memory it moves: ascend_memory.cpp). It mirrors the CUDA copy-engine
// backend: an executor owns (or adopts) one aclrtStream on one NPU; each transfer's plan is issued
// on it by the shared copy-engine issuer, cut at the pools' allocation boundaries
// (ascend_copies.hpp), followed by an aclrtEvent, and the transfer is done when that event is
// (aclrtQueryEventStatus / aclrtSynchronizeEvent of that event only; never a device-wide
// synchronisation). Pools stay alive until their transfers' events have completed; everything a
// submit allocates is allocated before its first copy is queued, and a failure after that is
// reported only once the stream has run the queued copies (through the transfer's event, recorded
// after them; the submit does not wait). Creation, destruction and each submit run under a
// DeviceScope (acl_device.hpp); event queries, waits and destruction need no context.
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "../core/backends.hpp"
#include "../core/error.hpp"
#include "../core/executor.hpp"
#include "../core/names.hpp"
#include "../core/pool.hpp"
#include "acl_api.hpp"
#include "acl_device.hpp"
#include "ascend_copies.hpp"
#include "ascend_runtime.hpp"

namespace kvio {
namespace ascend {
namespace {

// ---- completion ----

class AclEventCompletion final : public DeviceCompletion {
 public:
  // Event query, wait and destruction need no current context (the event carries its own).
  // Made before its event (createEvent fills event()), so that no allocation follows a
  // successful aclrtCreateEvent: the event always has an owner.
  explicit AclEventCompletion(const AclApi* api) : api_(api) {}
  ~AclEventCompletion() override {
    // Nobody to report a failure to; its text must not be blamed on a later call.
    if (event_ != nullptr && api_->destroyEvent(event_) != ACL_SUCCESS) clearAclError(*api_);
  }
  aclrtEvent* event() { return &event_; }
  bool query() noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return true;
    aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    const aclError e = api_->queryEventStatus(event_, &status);
    if (e != ACL_SUCCESS && reportsTheWork(e)) {
      failed(e, "aclrtQueryEventStatus");
    } else if (e != ACL_SUCCESS) {
      // The call failed, not the work (a parameter or resource error): it does not say that the
      // copies stopped, and a transfer seen done drops its pools (their memory may then be
      // freed). Not done, then: a later query answers, or a wait (synchronize) does.
      try {
        queryError_ = "aclrtQueryEventStatus reported " + describeAclError(*api_, e);
      } catch (...) {  // no memory for the text: the wait's answer alone will say
        clearAclError(*api_);
      }
    } else if (status == ACL_EVENT_RECORDED_STATUS_COMPLETE) {
      done_ = true;
    }
    return done_;
  }
  void synchronize() noexcept override {
    const aclError e = api_->synchronizeEvent(event_);
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) {
      if (e != ACL_SUCCESS) clearAclError(*api_);
      return;
    }
    if (e != ACL_SUCCESS) failed(e, "aclrtSynchronizeEvent", queryError_);
    done_ = true;
  }
  kvio_status finish(std::string* message) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queueStatus_ != KVIO_STATUS_OK) {
      try {
        *message = queueMessage_;
        if (failed_ && !error_.empty()) *message += "; then " + error_;
      } catch (...) {  // no memory for the text: the status says it
        message->clear();
      }
      return queueStatus_;
    }
    if (!failed_) return KVIO_STATUS_OK;
    try {
      *message = error_;
    } catch (...) {  // no memory for the text: the status says it
      message->clear();
    }
    return KVIO_STATUS_BACKEND_ERROR;
  }
  // The submit failed after queuing some of the transfer's copies: the transfer fails with this
  // once its event (recorded after them) completes. Set before the completion is attached.
  void failWhenDone(kvio_status status, std::string message) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    queueStatus_ = status;
    queueMessage_ = std::move(message);  // a move: no allocation
  }
  bool nativeHandle(NativeHandle kind, uint64_t* out) const override {
    if (kind != NativeHandle::kAclEvent) return false;
    *out = reinterpret_cast<uint64_t>(event_);
    return true;
  }

 private:
  // The error's text is read on the thread that saw it (aclGetRecentErrMsg is per thread), at
  // the failing call, not by whichever thread finishes the transfer.
  // Whether an event query's error is an answer about the transfer's work: ACL's internal and
  // device errors (5xxxxx: a copy that failed on the device, ACL_ERROR_RT_SYS_DMA 507013; a
  // context stopped on failure answers every call with it), not a parameter (1xxxxx) or
  // resource (2xxxxx) error of the call itself.
  static bool reportsTheWork(aclError e) { return e >= 500000 && e < 600000; }

  // `before`: an earlier failed call's text, if any ("aclrtQueryEventStatus reported ...").
  void failed(aclError e, const char* call, const std::string& before = std::string()) noexcept {
    failed_ = true;
    done_ = true;
    try {
      error_ = std::string("the transfer's work on the Ascend stream failed: ") + call +
               " reported " + describeAclError(*api_, e);
      if (!before.empty()) error_ += " (after " + before + ")";
    } catch (...) {  // no memory for the text: failed_ still fails the transfer
      error_.clear();
      clearAclError(*api_);
    }
  }

  const AclApi* api_;
  aclrtEvent event_ = nullptr;
  std::mutex mutex_;
  bool done_ = false;
  bool failed_ = false;
  std::string error_;       // failed_'s text (empty if it could not be made)
  std::string queryError_;  // the last query that failed without answering (reportsTheWork)
  kvio_status queueStatus_ = KVIO_STATUS_OK;  // failWhenDone's
  std::string queueMessage_;
};

// ---- executor ----

class AscendExecutor final : public Executor {
 public:
  kvio_status init(int32_t device, uint64_t stream) {
    KVIO_RETURN_IF_ERROR(runtime(&api_));
    device_ = device;
    KVIO_RETURN_IF_ERROR(checkDevice(*api_, device));
    KVIO_ACL_SCOPE(scope, *api_, device, "creating a 'kernel_ascend' executor");
    if (stream == KVIO_ASCEND_OWN_STREAM) {
      KVIO_ACL_TRY(*api_, api_->createStream(&stream_),
                   format("creating the 'kernel_ascend' executor's stream on device %lld", device));
      ownStream_ = true;
    } else {
      stream_ = reinterpret_cast<aclrtStream>(stream);
    }
    return KVIO_STATUS_OK;
  }

  ~AscendExecutor() override {
    drain();
    if (ownStream_ && stream_ != nullptr) {
      // Nobody to report a failure to: its text is cleared, not left for a later call.
      DeviceScope scope(*api_, device_);
      if (scope.error() != ACL_SUCCESS || api_->destroyStream(stream_) != ACL_SUCCESS) {
        clearAclError(*api_);
      }
    }
  }

  int32_t threads() const override { return 1; }
  bool nativeHandle(NativeHandle kind, uint64_t* out) const override {
    if (kind != NativeHandle::kAclStream) return false;
    *out = reinterpret_cast<uint64_t>(stream_);
    return true;
  }

  kvio_status acceptMemory(MemoryPlace src, MemoryPlace dst) const override {
    const MemoryPlace sides[2] = {src, dst};
    for (int i = 0; i < 2; ++i) {
      const char* side = i == 0 ? "source" : "destination";
      const int32_t kind = sides[i].kind;
      if (kind == KVIO_MEMORY_HOST) {
        return fail(KVIO_STATUS_UNSUPPORTED,
                    "the %s pool is pageable host memory; the 'kernel_ascend' io backend needs "
                    "pinned host memory: allocate it with KVIO_MEMORY_ASCEND_HOST_PINNED "
                    "(aclrtMallocHost), or wrap it as that kind where the runtime has "
                    "aclrtHostRegisterV2 (ACL_HOST_REG_PINNED)",
                    side);
      }
      if (kind != KVIO_MEMORY_ASCEND_DEVICE && kind != KVIO_MEMORY_ASCEND_HOST_PINNED) {
        return fail(KVIO_STATUS_UNSUPPORTED,
                    "the %s pool is CUDA memory ('%s'); the 'kernel_ascend' io backend moves "
                    "Ascend device memory and Ascend pinned host memory only",
                    side, memoryKindName(kind));
      }
      if (kind == KVIO_MEMORY_ASCEND_DEVICE && sides[i].device != device_) {
        return fail(KVIO_STATUS_UNSUPPORTED,
                    "the %s pool belongs to Ascend device %d but this 'kernel_ascend' executor "
                    "runs on device %d; create the pool (or the executor) for the same device",
                    side, sides[i].device, device_);
      }
      // Pinned host memory is allocated or registered in one device's context; whether the
      // runtime lets another device's copies use it is not documented, so kvio does not.
      if (kind == KVIO_MEMORY_ASCEND_HOST_PINNED && sides[i].device != device_) {
        return fail(KVIO_STATUS_UNSUPPORTED,
                    "the %s pool is pinned host memory for Ascend device %d but this "
                    "'kernel_ascend' executor runs on device %d; allocate the host memory for "
                    "device %d, or wrap a buffer for it that no pool of another device pins",
                    side, sides[i].device, device_, device_);
      }
    }
    if (src.kind == KVIO_MEMORY_ASCEND_HOST_PINNED && dst.kind == KVIO_MEMORY_ASCEND_HOST_PINNED) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "both pools are host memory; the 'kernel_ascend' io backend moves to or from "
                  "an NPU: use the 'cpu' io backend for host to host transfers");
    }
    return KVIO_STATUS_OK;
  }

  // Refused before anything is queued while the stream is being captured into a graph.
  kvio_status prepare(const Transfer& transfer, Job* job, Prepared* out) const override {
    KVIO_RETURN_IF_ERROR(refuseCapture());
    return Executor::prepare(transfer, job, out);
  }

  void submit(std::shared_ptr<Job> job) override {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceScope scope(*api_, device_);  // on whatever thread submits, before reap's queries
    if (scope.error() != ACL_SUCCESS) {
      job->state->complete(
          KVIO_STATUS_BACKEND_ERROR,
          "making Ascend device " + std::to_string(device_) +
              "'s default context current failed: " + describeScopeError(scope.error()));
      return;
    }
    reap();
    // Everything the transfer needs is allocated before its first copy is queued: the
    // completion (then its event) and its slot in inFlight_ (taken back unless it is kept).
    // Running out of memory later, with copies queued, would let the core drop the pools (free
    // or unregister their memory) under them.
    auto completion = std::make_shared<AclEventCompletion>(api_);
    inFlight_.push_back({completion, job});
    bool kept = false;
    struct SlotGuard {
      std::deque<InFlight>& inFlight;
      const bool& kept;
      ~SlotGuard() {
        if (!kept) inFlight.pop_back();
      }
    } slotGuard{inFlight_, kept};
    aclError e = api_->createEvent(completion->event());
    if (e != ACL_SUCCESS) {
      job->state->complete(KVIO_STATUS_BACKEND_ERROR,
                           "aclrtCreateEvent failed: " + describeAclError(*api_, e));
      return;
    }
    issue_.issuer.forgetQueued();  // the last transfer's: nothing of this one is queued yet
    try {
      kept = issueAndRecord(*job, completion);
    } catch (const std::exception& thrown) {
      // Whatever failed (the message of a failed call could not be allocated, say) may have
      // failed after copies were queued, which may write the destination: not a refused submit
      // (those wrote nothing) but a transfer that failed, reported once the stream has run them
      // (they read and write the pools the job holds until then), as a failed call is.
      const bool outOfMemory = dynamic_cast<const std::bad_alloc*>(&thrown) != nullptr;
      std::string message;
      try {
        message = std::string("the 'kernel_ascend' executor ") +
                  (outOfMemory ? "ran out of host memory" : "failed") +
                  " while issuing the transfer (" + thrown.what() + ")";
      } catch (const std::bad_alloc&) {  // no message then
      }
      kept = failAfterQueuedCopies(*job, completion,
                                   outOfMemory ? KVIO_STATUS_OUT_OF_MEMORY : KVIO_STATUS_INTERNAL,
                                   std::move(message));
    } catch (...) {  // not a std::exception: the same, without its text
      kept = failAfterQueuedCopies(*job, completion, KVIO_STATUS_INTERNAL, std::string());
    }
  }

  // Lets go of finished transfers (their events, plans and pools) while this executor gets no
  // submits: an 'auto' executor calls it on each submit that goes to its cpu candidate. Never
  // waits for the lock (a submit or drain holding it retires them itself).
  void retireFinished() override {
    std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
    if (lock.owns_lock()) reap();
  }

  void drain() override {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!inFlight_.empty()) {
      inFlight_.front().completion->synchronize();
      inFlight_.front().job->state->wait(-1);  // done to everyone: see CudaExecutor::retire
      inFlight_.pop_front();
    }
  }

 private:
  struct InFlight {
    std::shared_ptr<AclEventCompletion> completion;
    std::shared_ptr<Job> job;
  };
  // UNSUPPORTED while the stream is being captured into a graph (aclmdlRICaptureBegin, e.g.
  // torch_npu's NPU graphs): its copies and event would be recorded into the graph, not run, so
  // the transfer would never complete, and a replay would copy again over pools kvio may have let
  // go of. Not asked of the default stream (null), which a capture does not take. A runtime
  // without the query has no capture to refuse; one whose query fails (unsupported there, or a
  // failure the ACL reference does not describe) cannot tell, and the transfer goes ahead as it
  // did before kvio asked: a query that only guards must not stop every submit. Its error text
  // is read (cleared), so that no later call's message blames it.
  kvio_status refuseCapture() const {
    if (api_->captureGetInfo == nullptr || stream_ == nullptr) return KVIO_STATUS_OK;
    KVIO_ACL_SCOPE(scope, *api_, device_, "checking whether the executor's stream is captured");
    aclmdlRICaptureStatus status = ACL_MODEL_RI_CAPTURE_STATUS_NONE;
    aclmdlRI model = nullptr;
    if (api_->captureGetInfo(stream_, &status, &model) != ACL_SUCCESS) {
      clearAclError(*api_);
      return KVIO_STATUS_OK;
    }
    if (status == ACL_MODEL_RI_CAPTURE_STATUS_NONE) return KVIO_STATUS_OK;
    return fail(KVIO_STATUS_UNSUPPORTED,
                "the executor's Ascend stream %p is %s (aclmdlRICaptureGetInfo); kvio "
                "transfers cannot be captured (the copies and the completion event would be "
                "recorded into the graph instead of running, so the transfer would never "
                "complete): submit it before or after the capture",
                stream_,
                status == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE
                    ? "being captured into a graph"
                    : "in a graph capture that was invalidated and not yet ended");
  }

  // Queues the job's copies and its event; true when the transfer is in flight (to complete,
  // perhaps failed, with its event), false when it completed, failed.
  bool issueAndRecord(Job& job, const std::shared_ptr<AclEventCompletion>& completion) {
    IssueTarget target;
    target.api = api_;
    target.stream = stream_;
    target.device = device_;
    const bool srcDevice = job.srcPlace.kind == KVIO_MEMORY_ASCEND_DEVICE;
    const bool dstDevice = job.dstPlace.kind == KVIO_MEMORY_ASCEND_DEVICE;
    target.kind = srcDevice ? (dstDevice ? ACL_MEMCPY_DEVICE_TO_DEVICE : ACL_MEMCPY_DEVICE_TO_HOST)
                            : ACL_MEMCPY_HOST_TO_DEVICE;
    const kvio_status status = issuePlan(target, job.plan, job.srcPool->copyRegions(),
                                         job.dstPool->copyRegions(), &issue_);
    if (status != KVIO_STATUS_OK) {
      // Copies queued before the failed call may still write the destination: the transfer
      // reports its error only once the stream has finished them, so nothing changes after.
      return failAfterQueuedCopies(job, completion, status, lastError());
    }
    const aclError e = api_->recordEvent(*completion->event(), stream_);
    if (e != ACL_SUCCESS) {
      waitThenFail(job, KVIO_STATUS_BACKEND_ERROR,
                   "aclrtRecordEvent failed: " + describeAclError(*api_, e));
      return false;
    }
    job.state->attach(completion);
    return true;
  }
  // Fails a job whose copies could not all be queued once the stream has run the ones that were
  // (they read and write the job's pools, which the job keeps alive until then): through its
  // event, recorded after them, without waiting here. On a caller's stream a wait would also
  // wait, under this executor's lock, for the caller's work queued before, which may wait in
  // turn for something the caller does only after this submit returns. A job none of whose
  // copies was queued fails at once. True when the event was recorded (the transfer stays in
  // flight), false when the job was failed here: nothing queued, or no event to record, and the
  // stream waited for.
  bool failAfterQueuedCopies(Job& job, const std::shared_ptr<AclEventCompletion>& completion,
                             kvio_status status, std::string message) {
    if (!issue_.issuer.mayHaveQueued()) {
      job.state->complete(status, std::move(message));
      return false;
    }
    const aclError e = api_->recordEvent(*completion->event(), stream_);
    if (e != ACL_SUCCESS) {
      try {
        message += "; then aclrtRecordEvent failed: " + describeAclError(*api_, e);
      } catch (const std::bad_alloc&) {  // the message as it was
        clearAclError(*api_);
      }
      waitThenFail(job, status, std::move(message));
      return false;
    }
    completion->failWhenDone(status, std::move(message));
    job.state->attach(completion);
    return true;
  }
  // Completes a failed job once the stream has run everything queued on it.
  void waitThenFail(Job& job, kvio_status status, std::string message) {
    const aclError e = api_->synchronizeStream(stream_);
    if (e != ACL_SUCCESS) {
      try {
        message += "; then aclrtSynchronizeStream failed: " + describeAclError(*api_, e);
      } catch (const std::bad_alloc&) {  // the message as it was
      }
      clearAclError(*api_);
    }
    job.state->complete(status, std::move(message));
  }
  // Retires the finished transfers at the front (reading their outcome); stops at one another
  // thread that saw it done still drops the pools of (a drain waits for that on those left).
  void reap() {
    while (!inFlight_.empty() && inFlight_.front().completion->query()) {
      if (!inFlight_.front().job->state->isDone()) break;
      inFlight_.pop_front();
    }
  }

  const AclApi* api_ = nullptr;
  int32_t device_ = 0;
  aclrtStream stream_ = nullptr;
  bool ownStream_ = false;
  std::mutex mutex_;
  IssueState issue_;  // the shared issuer's state, reused across jobs
  std::deque<InFlight> inFlight_;
};

}  // namespace

kvio_status createExecutor(int32_t device, uint64_t stream, std::unique_ptr<Executor>* out) {
  auto executor = std::make_unique<AscendExecutor>();
  KVIO_RETURN_IF_ERROR(executor->init(device, stream));
  *out = std::move(executor);
  return KVIO_STATUS_OK;
}

}  // namespace ascend
}  // namespace kvio
